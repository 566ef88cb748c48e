"""MTU Buses app (toolgym.mocks.apps.mtu.buses) on its seeded data (real SQLite)."""

from __future__ import annotations

from tests.mocks.apps.mtu import fails, make_world


def test_bus_tickets() -> None:
    world = make_world("mtu_buses")
    buses = world.call(
        "FindBus",
        origin="Sacramento",
        destination="San Diego",
        departure_date="2024-01-10",
        category="dontcare",
    )["buses"]
    assert buses and [b["departure_time"] for b in buses] == sorted(b["departure_time"] for b in buses)
    bus = buses[0]
    ticket = world.call(
        "BuyBusTicket",
        from_location="Sacramento",
        to_location="San Diego",
        leaving_date="2024-01-10",
        leaving_time=bus["departure_time"],
        travelers=5,
    )
    assert ticket["seats_left"] == bus["seats_left"] - 5
    fails(
        world,
        "BuyBusTicket",
        404,
        origin="Sacramento",
        destination="San Diego",
        departure_date="2024-01-10",
        departure_time="03:03",
        group_size=1,
    )
    fails(
        world,
        "BuyBusTicket",
        409,
        origin="Sacramento",
        destination="San Diego",
        departure_date="2024-01-10",
        departure_time=bus["departure_time"],
        group_size=46,
    )
    fails(
        world,
        "FindBus",
        400,
        origin="Sacramento",
        destination="San Diego",
        departure_date="2024-01-10",
        category="nonstop",
    )
