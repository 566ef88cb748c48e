"""What the mtu templates share, and the group as registered: days and times as people say them,
ties refused, and `toolgym generate --apps mtu` finding an mtu template for every mtu app."""

from __future__ import annotations

import random
from datetime import date

import pytest

from toolgym.authoring.generate import Draft, Skip, resolve_apps, templates_for
from toolgym.authoring.templates import TEMPLATES, mtu_cross, mtu_home, mtu_leisure, mtu_travel
from toolgym.authoring.templates.mtu_shared import bare_day, plural, spoken_day, spoken_time, unique_first
from toolgym.mocks.world import MockWorld

MODULES = (mtu_home, mtu_travel, mtu_leisure, mtu_cross)


@pytest.fixture(scope="module")
def world() -> MockWorld:
    return MockWorld(["mtu_weather"], seed=0)


def draft(world: MockWorld, seed: int) -> Draft:
    return Draft(mtu_home.TEMPLATES[0], world, random.Random(seed))


def test_days_are_said_as_people_say_them(world: MockWorld) -> None:
    # the world's clock says 2024-01-01, a Monday
    assert spoken_day(draft(world, 0), date(2024, 1, 1)) == "today"
    assert spoken_day(draft(world, 0), date(2024, 1, 2)) == "tomorrow"
    seen = {spoken_day(draft(world, i), date(2024, 1, 5)) for i in range(40)}
    assert seen == {"on Friday, January 5", "on January 5", "on 2024-01-05"}
    assert {bare_day(draft(world, i), date(2024, 1, 5)) for i in range(40)} == {
        "Friday, January 5",
        "January 5",
        "2024-01-05",
    }


def test_times_are_said_on_either_clock(world: MockWorld) -> None:
    assert {spoken_time(draft(world, i), "19:30") for i in range(40)} == {"19:30", "7:30 pm"}
    assert {spoken_time(draft(world, i), "07:00") for i in range(40)} == {"07:00", "7 am"}
    assert {spoken_time(draft(world, i), "12:00") for i in range(40)} == {"12:00", "12 pm"}


def test_a_tie_for_first_place_is_no_answer() -> None:
    assert unique_first([{"price": 1}, {"price": 2}], "price", "flight") == {"price": 1}
    with pytest.raises(Skip, match="tie"):
        unique_first([{"price": 1}, {"price": 1}], "price", "flight")
    with pytest.raises(Skip, match="no flight"):
        unique_first([], "price", "flight")
    assert plural(1, "night") == "1 night"
    assert plural(3, "night") == "3 nights"


def test_the_mtu_group_finds_a_template_for_every_mtu_app() -> None:
    ours = {t.name for m in MODULES for t in m.TEMPLATES}
    assert ours <= set(TEMPLATES)
    found = {t.name for t in templates_for(resolve_apps(["mtu"]))}
    assert ours <= found
    # every mtu app has templates written for it: none falls back to the generic ones
    assert not any(".generic." in name for name in found)
    covered = {app for m in MODULES for t in m.TEMPLATES for app in t.apps}
    assert covered == set(resolve_apps(["mtu"]))
    names = [t.name for m in MODULES for t in m.TEMPLATES]
    assert len(names) == len(set(names))
