"""MTU Homes app (toolgym.mocks.apps.mtu.homes) on its seeded data (real SQLite)."""

from __future__ import annotations

from tests.mocks.apps.mtu import fails, make_world


def test_homes_and_visits() -> None:
    world = make_world("mtu_homes")
    homes = world.call("FindHomeByArea", area="Seattle", intent="rent", number_of_beds="2", number_of_baths=1)
    found = homes["properties"]
    assert found and all(h["number_of_beds"] == 2 and h["intent"] == "rent" for h in found)
    assert [h["price"] for h in found] == sorted(h["price"] for h in found)
    garage = world.call(
        "FindHomeByArea",
        area="Seattle",
        intent="rent",
        number_of_beds=2,
        number_of_baths=1,
        has_garage="true",
    )["properties"]
    assert all(h["has_garage"] for h in garage)
    fails(world, "FindHomeByArea", 400, area="Seattle", intent="lease", number_of_beds=2, number_of_baths=1)
    name = found[0]["property_name"]
    world.call("ScheduleVisit", property_name=name, visit_date="2024-01-05")
    fails(world, "ScheduleVisit", 409, property_name=name, visit_date="2024-01-05")
    fails(world, "ScheduleVisit", 422, property_name=name, visit_date="2023-12-05")
    fails(world, "ScheduleVisit", 404, property_name="Castle Nowhere", visit_date="2024-01-05")
    pets = world.call("FindApartment", area="San Francisco", number_of_beds=2, pets_allowed=True)[
        "apartments"
    ]
    assert all(a["pets_allowed"] and a["intent"] == "rent" for a in pets)
