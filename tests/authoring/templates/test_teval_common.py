"""What the teval templates share, and the group as registered: dates and landmarks as people write
them, and `toolgym generate --apps teval` finding every teval template by its entry point."""

from __future__ import annotations

import random
from datetime import date

from toolgym.authoring.generate import Draft, resolve_apps, templates_for
from toolgym.authoring.templates import TEMPLATES, teval_info, teval_office, teval_places
from toolgym.authoring.templates.teval_common import human_dates, the
from toolgym.mocks.world import MockWorld


def test_dates_of_one_query_share_a_style() -> None:
    world = MockWorld(["teval_time"], seed=0)
    try:
        seen = set()
        for i in range(30):
            d = Draft(teval_places.TEMPLATES[0], world, random.Random(i))
            a, b = human_dates(d, date(2024, 3, 5), date(2024, 3, 9))
            assert (a[:4] == "2024") == (b[:4] == "2024")
            seen.add(a)
        assert seen == {"2024-03-05", "March 5, 2024", "Mar 5, 2024"}
    finally:
        world.close()


def test_landmarks_take_the_article_cities_do_not() -> None:
    assert the("White House") == "the White House"
    assert the("Golden Gate Bridge") == "the Golden Gate Bridge"
    assert the("The Alamo") == "The Alamo"
    assert the("Las Vegas") == "Las Vegas"
    assert the("Las Vegas Strip") == "the Las Vegas Strip"
    assert the("MIT") == "MIT"


def test_the_teval_group_finds_every_teval_template() -> None:
    ours = {t.name for m in (teval_places, teval_info, teval_office) for t in m.TEMPLATES}
    assert ours <= set(TEMPLATES)
    assert all(TEMPLATES.owner(name).value.startswith("toolgym.authoring.templates.teval_") for name in ours)
    found = {t.name for t in templates_for(resolve_apps(["teval"]))}
    assert ours <= found
    # every teval app has a template written for it: none falls back to the generic ones
    assert not any(".generic." in name for name in found)
    covered = {app for m in (teval_places, teval_info, teval_office) for t in m.TEMPLATES for app in t.apps}
    assert covered == set(resolve_apps(["teval"]))
    assert len(ours) == len(teval_places.TEMPLATES) + len(teval_info.TEMPLATES) + len(teval_office.TEMPLATES)
