"""MTU Flights app (toolgym.mocks.apps.mtu.flights) on its seeded data (real SQLite)."""

from __future__ import annotations

from tests.mocks.apps.mtu import count_rows, fails, make_world


def test_flight_search_and_booking_reduce_seats() -> None:
    world = make_world("mtu_flights")
    found = world.call(
        "SearchOnewayFlight",
        origin_city="New York",
        destination_city="San Francisco",
        departure_date="2024-01-10",
    )["flights"]
    assert found and all(
        f["origin_city"] == "New York" and f["destination_city"] == "San Francisco" for f in found
    )
    prices = [f["price"] for f in found]
    assert prices == sorted(prices)
    by_airport = world.call(
        "SearchOnewayFlight", origin_airport="JFK", destination_airport="SFO", departure_date="2024-01-10"
    )["flights"]
    assert all(f["origin_airport"] == "JFK" for f in by_airport)
    first = found[0]
    booked = world.call(
        "ReserveOnewayFlight",
        origin_city="New York",
        destination_city="San Francisco",
        airlines=first["airlines"],
        departure_date="2024-01-10",
        passengers="3",
    )
    assert booked["passengers"] == 3 and booked["price"] > 0
    again = world.call(
        "SearchOnewayFlight",
        origin_city="New York",
        destination_city="San Francisco",
        departure_date="2024-01-10",
    )["flights"]
    flight = next(f for f in again if f["flight_number"] == booked["flight_number"])
    assert (
        flight["seats_left"]
        == next(f for f in found if f["flight_number"] == booked["flight_number"])["seats_left"] - 3
    )
    fails(
        world,
        "SearchOnewayFlight",
        404,
        origin_city="Atlantis",
        destination_city="LA",
        departure_date="2024-01-10",
    )
    fails(
        world,
        "SearchOnewayFlight",
        400,
        origin_city="SF",
        destination_city="LA",
        departure_date="2024-01-10",
        seating_class="Cheap",
    )
    fails(
        world,
        "ReserveOnewayFlight",
        422,
        origin_city="New York",
        destination_city="San Francisco",
        airlines=first["airlines"],
        departure_date="2023-12-01",
    )


def test_roundtrip_flights() -> None:
    world = make_world("mtu_flights")
    trips = world.call(
        "SearchRoundtripFlights",
        origin_city="Atlanta",
        destination_city="Seattle",
        departure_date="2024-01-07",
        return_date="2024-01-09",
    )["flights"]
    assert trips and all(t["return_date"] == "2024-01-09" for t in trips)
    t = trips[0]
    before = count_rows(world, "mtu_flights_bookings")
    booked = world.call(
        "ReserveRoundtripFlights",
        origin_city="Atlanta",
        destination_city="Seattle",
        airlines=t["airlines"],
        departure_date="2024-01-07",
        return_date="2024-01-09",
        outbound_departure_time=t["outbound_departure_time"],
        inbound_departure_time=t["inbound_departure_time"],
    )
    assert booked["price"] == t["price"]
    assert count_rows(world, "mtu_flights_bookings") == before + 2
    fails(
        world,
        "SearchRoundtripFlights",
        400,
        origin_city="Atlanta",
        destination_city="Seattle",
        departure_date="2024-01-09",
        return_date="2024-01-07",
    )
    reserve = {"origin_city": "Atlanta", "destination_city": "Seattle", "airlines": t["airlines"],
               "outbound_departure_time": t["outbound_departure_time"],
               "inbound_departure_time": t["inbound_departure_time"]}  # fmt: skip
    fails(
        world,
        "ReserveRoundtripFlights",
        400,
        **reserve,
        departure_date="2024-01-09",
        return_date="2024-01-07",
    )
    fails(
        world,
        "ReserveRoundtripFlights",
        422,
        **reserve,
        departure_date="2024-01-07",
        return_date="2023-12-30",
    )
    details = world.call("SearchFlights", fromloc="boston", toloc="denver", depart_time="after 12:00")
    assert all(d["departure_time"] >= "12:00" for d in details["flight_details"])
