"""Meeting rooms and calendars on real SQLite: overlap checks, conflicts, event/room coupling, free slots."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

import pytest

from tests.mocks.apps.ctool import expect_error, ok_call
from toolgym.errors import ErrorKind
from toolgym.mocks.apps.ctool import CalendarApp
from toolgym.mocks.world import MockWorld

DAY = "2024-01-04"
TEN, ELEVEN, NOON = f"{DAY}T10:00:00Z", f"{DAY}T11:00:00Z", f"{DAY}T12:00:00Z"


@pytest.fixture
def world() -> Iterator[MockWorld]:
    with MockWorld([CalendarApp]) as w:
        yield w


def _free_ids(world: MockWorld, start: str, end: str, **filters: object) -> list[str]:
    found = ok_call(world, "search_available_rooms", start_time=start, end_time=end, **filters)
    return [r["room_id"] for r in found["rooms"]]


def _overlap(a: tuple[str, str], b: tuple[str, str]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_search_really_checks_overlaps_and_filters(world: MockWorld) -> None:
    rooms = ok_call(
        world,
        "search_available_rooms",
        start_time=TEN,
        end_time=NOON,
        min_capacity=6,
        equipment=["projector"],
    )
    assert rooms["rooms"], "the seeded building should have a free projector room"
    for r in rooms["rooms"]:
        assert r["capacity"] >= 6 and "projector" in r["equipment"]
        for b in world.rows("calendar_bookings", {"room_id": r["room_id"], "status": "confirmed"}):
            assert not _overlap(
                (b["start_at"], b["end_at"]), ("2024-01-04T10:00:00+00:00", "2024-01-04T12:00:00+00:00")
            )
    capacities = [r["capacity"] for r in rooms["rooms"]]
    assert capacities == sorted(capacities)
    # every room that is not returned has a clash or misses a filter
    returned = {r["room_id"] for r in rooms["rooms"]}
    for r in ok_call(world, "list_rooms", min_capacity=6, equipment=["projector"])["rooms"]:
        if r["room_id"] not in returned:
            clashes = [
                b
                for b in world.rows("calendar_bookings", {"room_id": r["room_id"], "status": "confirmed"})
                if _overlap(
                    (b["start_at"], b["end_at"]), ("2024-01-04T10:00:00+00:00", "2024-01-04T12:00:00+00:00")
                )
            ]
            assert clashes


def test_booking_makes_the_room_busy_and_conflicts_are_409(world: MockWorld) -> None:
    room = _free_ids(world, TEN, ELEVEN)[0]
    booking = ok_call(world, "book_room", room_id=room, person_id="P001", start_time=TEN, end_time=ELEVEN)[
        "booking_id"
    ]
    assert room not in _free_ids(world, TEN, ELEVEN)
    assert room not in _free_ids(world, f"{DAY}T10:30:00Z", NOON)  # partial overlap
    expect_error(
        world,
        "book_room",
        code=409,
        room_id=room,
        person_id="P002",
        start_time=f"{DAY}T10:59:00Z",
        end_time=NOON,
    )
    if room in _free_ids(world, ELEVEN, NOON):  # back-to-back is fine: intervals are half-open
        ok_call(world, "book_room", room_id=room, person_id="P002", start_time=ELEVEN, end_time=NOON)
    schedule = ok_call(world, "get_room_schedule", room_id=room, date=DAY)["bookings"]
    assert booking in [b["booking_id"] for b in schedule]
    expect_error(world, "cancel_room_booking", code=403, booking_id=booking, person_id="P002")
    ok_call(world, "cancel_room_booking", booking_id=booking, person_id="P001")
    assert room in _free_ids(world, TEN, ELEVEN)
    expect_error(world, "cancel_room_booking", code=409, booking_id=booking, person_id="P001")


def test_booking_rules(world: MockWorld) -> None:
    small = ok_call(world, "list_rooms")["rooms"][0]
    assert small["capacity"] == min(r["capacity"] for r in ok_call(world, "list_rooms")["rooms"])
    args = {"room_id": small["room_id"], "person_id": "P001"}
    expect_error(
        world,
        "book_room",
        code=422,
        start_time=TEN,
        end_time=ELEVEN,
        attendee_count=small["capacity"] + 1,
        **args,
    )
    expect_error(
        world,
        "book_room",
        code=422,
        start_time="2023-12-29T10:00:00Z",
        end_time="2023-12-29T11:00:00Z",
        **args,
    )
    expect_error(world, "book_room", code=400, start_time=ELEVEN, end_time=TEN, **args)
    expect_error(world, "book_room", code=400, start_time="tomorrow at ten", end_time=ELEVEN, **args)
    expect_error(
        world, "book_room", code=400, start_time=f"{DAY}T00:00:00Z", end_time="2024-01-05T00:00:00Z", **args
    )
    expect_error(
        world, "book_room", code=404, room_id="Z-999", person_id="P001", start_time=TEN, end_time=ELEVEN
    )
    expect_error(world, "list_rooms", code=400, building="Tower Z")
    expect_error(world, "list_rooms", code=400, equipment=["hologram"])
    expect_error(
        world, "book_room", kind=ErrorKind.ARGUMENT_ERROR, room_id=small["room_id"], person_id="P001"
    )


def test_event_with_room_moves_and_frees_it(world: MockWorld) -> None:
    room = _free_ids(world, TEN, ELEVEN, min_capacity=4)[0]
    made = ok_call(
        world,
        "create_event",
        organizer_id="P010",
        title="Review",
        start_time=TEN,
        end_time=ELEVEN,
        attendee_ids=["P011", "P012"],
        room_id=room,
    )
    event_id, booking_id = made["event_id"], made["booking_id"]
    assert booking_id is not None and room not in _free_ids(world, TEN, ELEVEN)
    ok_call(world, "respond_to_event", event_id=event_id, person_id="P011", response="accepted")
    # a clashing event with the same room creates nothing at all
    expect_error(
        world,
        "create_event",
        code=409,
        organizer_id="P013",
        title="Clash",
        start_time=TEN,
        end_time=ELEVEN,
        room_id=room,
    )
    moved = ok_call(
        world, "update_event", event_id=event_id, start_time=f"{DAY}T15:00:00Z", end_time=f"{DAY}T16:00:00Z"
    )
    answers = {a["person_id"]: a["response"] for a in moved["event"]["attendees"]}
    assert answers == {"P010": "accepted", "P011": "needs_action", "P012": "needs_action"}
    booking = world.rows("calendar_bookings", {"booking_id": booking_id})[0]
    assert booking["start_at"] == f"{DAY}T15:00:00+00:00"
    assert room in _free_ids(world, TEN, ELEVEN)
    ok_call(world, "delete_event", event_id=event_id)
    assert world.rows("calendar_bookings", {"booking_id": booking_id})[0]["status"] == "cancelled"
    assert world.rows("calendar_events", {"event_id": event_id}) == []
    assert world.rows("calendar_attendees", {"event_id": event_id}) == []
    expect_error(world, "get_event", code=404, event_id=event_id)


def test_update_event_into_a_booked_slot_is_refused(world: MockWorld) -> None:
    room = _free_ids(world, TEN, NOON)[0]
    first = ok_call(
        world, "create_event", organizer_id="P020", title="A", start_time=TEN, end_time=ELEVEN, room_id=room
    )
    ok_call(
        world, "create_event", organizer_id="P021", title="B", start_time=ELEVEN, end_time=NOON, room_id=room
    )
    expect_error(world, "update_event", code=409, event_id=first["event_id"], end_time=f"{DAY}T11:30:00Z")
    expect_error(world, "update_event", code=422, event_id=first["event_id"], remove_attendee_ids=["P020"])
    expect_error(
        world, "respond_to_event", code=403, event_id=first["event_id"], person_id="P022", response="accepted"
    )
    expect_error(
        world, "respond_to_event", code=400, event_id=first["event_id"], person_id="P020", response="maybe"
    )


def test_list_events_covers_the_range_in_order(world: MockWorld) -> None:
    listed = ok_call(
        world,
        "list_events",
        person_id="P001",
        start_time="2024-01-01T00:00:00Z",
        end_time="2024-01-08T00:00:00Z",
    )
    starts = [e["start_time"] for e in listed["events"]]
    assert starts == sorted(starts) and listed["total"] == len(starts) > 0
    for e in listed["events"]:
        assert e["start_time"] < "2024-01-08T00:00:00+00:00" and e["end_time"] > "2024-01-01T00:00:00+00:00"
    mine = {a["event_id"] for a in world.rows("calendar_attendees", {"person_id": "P001"})} & {
        e["event_id"]
        for e in world.rows("calendar_events")
        if "2024-01-01" <= e["start_at"][:10] < "2024-01-08"
    }
    assert {e["event_id"] for e in listed["events"]} == mine
    expect_error(
        world,
        "list_events",
        code=400,
        person_id="P001",
        start_time="2024-01-01T00:00:00Z",
        end_time="2024-06-01T00:00:00Z",
    )


def test_common_free_slot_avoids_everyones_events(world: MockWorld) -> None:
    people = ["P001", "P002", "P003"]
    found = ok_call(world, "find_common_free_slot", person_ids=people, date="2024-01-02", duration_minutes=60)
    slot = found["earliest_slot"]
    assert slot is not None
    for pid in people:
        events = ok_call(
            world, "list_events", person_id=pid, start_time=slot["start_time"], end_time=slot["end_time"]
        )
        assert all(e["response"] == "declined" for e in events["events"]), (pid, events)
    windows = found["free_windows"]
    assert all(w["start_time"] < w["end_time"] for w in windows)
    # every window before the slot is too short for the meeting
    hour = datetime.fromisoformat(slot["end_time"]) - datetime.fromisoformat(slot["start_time"])
    for w in windows:
        if w["end_time"] <= slot["start_time"]:
            assert datetime.fromisoformat(w["end_time"]) - datetime.fromisoformat(w["start_time"]) < hour
    # taking that slot moves the earliest slot later
    ok_call(
        world,
        "create_event",
        organizer_id="P001",
        title="Hold",
        start_time=slot["start_time"],
        end_time=slot["end_time"],
    )
    again = ok_call(world, "find_common_free_slot", person_ids=people, date="2024-01-02", duration_minutes=60)
    assert again["earliest_slot"] is None or again["earliest_slot"]["start_time"] >= slot["end_time"]
    expect_error(
        world, "find_common_free_slot", code=400, person_ids=people, date="2024-01-02", duration_minutes=5
    )
    expect_error(
        world, "find_common_free_slot", code=404, person_ids=["P999"], date="2024-01-02", duration_minutes=30
    )
    expect_error(
        world, "find_common_free_slot", code=400, person_ids=people, date="02/01/2024", duration_minutes=30
    )
