"""The MTU app group as a whole: every app in MTU_APPS is well formed, and the group's shared checks."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from tests.mocks.apps.mtu import CLOCK, fails, make_world
from toolgym.mocks.app import validate_app
from toolgym.mocks.apps.mtu import MTU_APPS
from toolgym.mocks.apps.mtu._common import earlier_booking
from toolgym.mocks.clock import format_time


def test_every_app_is_well_formed() -> None:
    names = [cls.name for cls in MTU_APPS]
    assert len(names) == len(set(names)) and all(n.startswith("mtu_") for n in names)
    for cls in MTU_APPS:
        assert validate_app(cls) == [], cls.name


def test_a_past_booking_date_is_a_422_naming_the_day_as_each_app_always_has() -> None:
    # one shared check (upcoming_day) serves these APIs; each message stays as it was published
    calls: list[tuple[str, str, dict[str, Any], str]] = [
        (
            "mtu_flights",
            "SearchOnewayFlight",
            {"departure_date": "2023-12-01", "origin_city": "Seattle", "destination_city": "Boston"},
            "departure_date 2023-12-01 is in the past",
        ),
        (
            "mtu_buses",
            "FindBus",
            {"from_city": "Seattle", "to_city": "Portland", "departure_date": "2023-12-01"},
            "departure_date 2023-12-01 is in the past",
        ),
        (
            "mtu_trains",
            "FindTrains",
            {"from": "Seattle", "to": "Portland", "date_of_journey": "2023-12-01"},
            "date_of_journey 2023-12-01 is in the past",
        ),
        (
            "mtu_homes",
            "ScheduleVisit",
            {"property_name": "Willow Heights", "visit_date": "2023-12-01"},
            "2023-12-01 is in the past",
        ),
        (
            "mtu_hotels",
            "ReserveHotel",
            {
                "check_in_date": "2023-12-01",
                "hotel_name": "Hilton Seattle",
                "location": "Seattle",
                "stay_length": "2",
            },
            "check-in date 2023-12-01 is in the past",
        ),
    ]
    for app, api, arguments, message in calls:
        obs = fails(make_world(app), api, 422, **arguments)
        assert isinstance(obs.content, dict) and obs.content["message"] == message, (api, obs.content)


def test_earlier_booking_is_confirmed_and_made_days_before_the_clock() -> None:
    rng = random.Random(3)
    booking = earlier_booking({"booking_id": "B-1"}, rng, CLOCK, days_ago=(2, 9))
    expected_days = random.Random(3).randint(2, 9)  # the only draw, so seeded rows stay as they were
    assert booking == {
        "booking_id": "B-1",
        "status": "confirmed",
        "created_at": format_time(CLOCK - timedelta(days=expected_days)),
    }
