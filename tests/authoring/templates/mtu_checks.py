"""What the tests of the mtu templates share: generate a module's templates through the real engine
(each task checked by `toolgym check`'s checker where it is drafted, then the whole file again from
scratch) and hold the tasks to what a generated task promises."""

from __future__ import annotations

import re
from collections import Counter

from toolgym.authoring.check import check_tasks
from toolgym.authoring.generate import Generated, Template, dump, generate
from toolgym.mocks.world import MockWorld

# ids a seeded world made that no user knows: a query naming one leaks what only a tool can say
SECRET_COLUMNS = (
    ("mtu_alarms_alarms", "alarm_id"),
    ("mtu_appointments_appointments", "appointment_id"),
    ("mtu_appointments_providers", "provider_id"),
    ("mtu_buses_departures", "departure_id"),
    ("mtu_calendar_events", "event_id"),
    ("mtu_cars_cars", "car_id"),
    ("mtu_contacts_contacts", "contact_id"),
    ("mtu_creative_works", "work_id"),
    ("mtu_events_events", "event_id"),
    ("mtu_flights_schedules", "flight_number"),
    ("mtu_homes_properties", "property_id"),
    ("mtu_hotels_hotels", "hotel_id"),
    ("mtu_library_books", "book_id"),
    ("mtu_movies_movies", "movie_id"),
    ("mtu_music_songs", "song_id"),
    ("mtu_music_playlists", "playlist_id"),
    ("mtu_restaurants_venues", "restaurant_id"),
    ("mtu_rides_vehicles", "license_plate"),
    ("mtu_trains_intercity", "train_id"),
    ("mtu_trains_timetable", "trainID"),
)


def generated(templates: list[Template], per_template: int, seed: int = 0, jobs: int = 1) -> Generated:
    return generate(["mtu"], per_template * len(templates), seed, templates=templates, jobs=jobs)


def assert_every_template_passes(templates: list[Template], per_template: int = 2) -> Generated:
    """Each template gives tasks, none dropped by the check, the tasks pass `toolgym check` again
    from scratch, and each keeps the promises of its shape."""
    result = generated(templates, per_template)
    assert not result.dropped, result.dropped
    made = Counter(t.metadata["template"] for t in result.all_tasks)
    assert set(made) == {t.name for t in templates}, sorted({t.name for t in templates} - set(made))
    tasks = result.all_tasks
    assert len({t.query for t in tasks}) == len(tasks)
    problems = check_tasks(tasks)
    assert problems == [], problems[:5]
    for task in tasks:
        meta = task.metadata
        assert meta["template"].startswith("mtu.")
        assert all(app.startswith("mtu_") for app in meta["apps"])
        if meta["shape"] == "write":
            assert task.expected_state
        if meta["shape"] == "ask":
            assert task.user is not None and task.user.known
            assert task.user.must_not_volunteer == list(task.user.known)
        if meta["shape"] == "refuse":
            assert len(task.golden) == 1 and task.golden[0].action.type == "final_answer"
    return result


def secret_ids(result: Generated) -> set[str]:
    """The ids of the tasks' worlds that a query must never name."""
    found: set[str] = set()
    for apps, seed in {(tuple(t.apps or ()), t.seed) for t in result.all_tasks}:
        world = MockWorld(list(apps), seed=seed)
        try:
            for table, column in SECRET_COLUMNS:
                if table in world.table_names:
                    found.update(
                        str(r[0]) for r in world.store.conn.execute(f'SELECT "{column}" FROM "{table}"')
                    )
        finally:
            world.close()
    return found


def assert_no_secret_ids(result: Generated) -> None:
    secrets = secret_ids(result)
    assert secrets
    for task in result.all_tasks:
        words = set(re.findall(r"[\w-]+", task.query))
        assert not words & secrets, (task.query, words & secrets)


def assert_deterministic(templates: list[Template]) -> None:
    """The same arguments give byte-identical tasks, in one process or two."""
    one = dump(generated(templates, 1, seed=5, jobs=1).all_tasks)
    two = dump(generated(templates, 1, seed=5, jobs=2).all_tasks)
    assert one == two
    assert len(one.splitlines()) == len(templates)
