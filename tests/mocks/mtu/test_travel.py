"""MTU travel apps on their seeded data: restaurants, flights, hotels, buses, trains, rides, cars."""

from __future__ import annotations

from typing import Any

from tests.mocks.mtu import count_rows, fails, make_world
from toolgym.mocks.app import validate_app
from toolgym.mocks.apps.mtu import MTU_APPS


def test_every_app_is_well_formed() -> None:
    names = [cls.name for cls in MTU_APPS]
    assert len(names) == len(set(names)) and all(n.startswith("mtu_") for n in names)
    for cls in MTU_APPS:
        assert validate_app(cls) == [], cls.name


# ---- restaurants --------------------------------------------------------------------------------
def test_find_restaurants_filters_and_sorts() -> None:
    world = make_world("mtu_restaurants")
    found = world.call("FindRestaurants", cuisine="Italian", city="San Francisco")["restaurants"]
    assert found and all(r["cuisine"] == "Italian" and r["city"] == "San Francisco" for r in found)
    ratings = [r["rating"] for r in found]
    assert ratings == sorted(ratings, reverse=True)
    # the SGD variant's names (category/location) and a boolean filter given as JSON true
    alcohol = world.call("FindRestaurants", category="italian", location="SF", serves_alcohol=True)
    assert {r["restaurant_name"] for r in alcohol["restaurants"]} <= {r["restaurant_name"] for r in found}
    assert all(r["serves_alcohol"] for r in alcohol["restaurants"])
    moderate = world.call("FindRestaurants", cuisine="Italian", city="San Francisco", price_range="moderate")
    assert all(r["price_range"] == "moderate" for r in moderate["restaurants"])
    fails(world, "FindRestaurants", 400, cuisine="Italian", city="San Francisco", price_range="bogus")
    fails(world, "FindRestaurants", 400, cuisine="Italian", city="San Francisco", has_live_music="maybe")
    fails(world, "FindRestaurants", 400, cuisine="Italian")  # no city in any spelling


def test_reservation_takes_seats_until_full() -> None:
    world = make_world("mtu_restaurants")
    venue = world.rows("mtu_restaurants_venues", {"city": "Boston"})[0]
    args: dict[str, Any] = {
        "restaurant_name": venue["restaurant_name"],
        "city": "Boston",
        "date": "2024-01-20",
    }
    at = "20:00" if venue["closes"] != "21:30" else "19:00"
    booked = world.call("ReserveRestaurant", **args, time=at, party_size=2)
    assert booked["party_size"] == 2 and booked["reservation_id"].startswith("RES-")
    assert count_rows(world, "mtu_restaurants_reservations", reservation_id=booked["reservation_id"]) == 1
    # fill the room, then one more seat is a conflict that changes nothing
    taken = sum(
        r["party_size"]
        for r in world.rows("mtu_restaurants_reservations", {"restaurant_id": venue["restaurant_id"]})
        if r["date"] == "2024-01-20"
        and abs(int(r["time"][:2]) * 60 + int(r["time"][3:]) - int(at[:2]) * 60) < 120
    )
    left = venue["capacity"] - taken
    if left:
        world.call("ReserveRestaurant", **args, time=at, number_of_seats=left)
    fails(world, "ReserveRestaurant", 409, **args, time=at, party_size=1)
    fails(world, "ReserveRestaurant", 422, **args, time="03:00")  # closed
    fails(world, "ReserveRestaurant", 422, **{**args, "date": "2023-12-01"}, time=at)  # past
    fails(world, "ReserveRestaurant", 404, restaurant_name="No Such Place", city="Boston", time=at)
    fails(world, "ReserveRestaurant", None, restaurant_name="x", city="Boston")  # no time


def test_multiwoz_and_snips_restaurant_apis() -> None:
    world = make_world("mtu_restaurants")
    centre = world.call("SearchRestaurant", area="centre", return_info=["name", "phone"])
    assert centre["count"] > 0 and set(centre["restaurants"][0]) == {"name", "phone"}
    cheap = world.call("SearchRestaurant", area="Cambridge", priceRange="cheap")
    assert all(r["pricerange"] == "cheap" and r["city"] == "Cambridge" for r in cheap["restaurants"])
    fails(world, "SearchRestaurant", 400, area="centre", return_info=["colour"])
    before = count_rows(world, "mtu_restaurants_reservations")
    made = world.call(
        "BookRestaurant",
        city="Seattle",
        party_size_description="me and my 3 kids",
        timeRange="saturday at 7 pm",
    )
    assert made["restaurant_details"]["people"] == 4 and made["restaurant_details"]["time"] == "19:00"
    assert made["restaurant_details"]["day"] == "2024-01-06"
    assert count_rows(world, "mtu_restaurants_reservations") == before + 1
    fails(world, "BookRestaurant", 400)  # neither a name nor a place
    fails(world, "BookRestaurant", 404, city="Nowhere Town")


# ---- flights ------------------------------------------------------------------------------------
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
    details = world.call("SearchFlights", fromloc="boston", toloc="denver", depart_time="after 12:00")
    assert all(d["departure_time"] >= "12:00" for d in details["flight_details"])


# ---- hotels -------------------------------------------------------------------------------------
def test_hotel_rooms_run_out() -> None:
    world = make_world("mtu_hotels")
    small = min(world.rows("mtu_hotels_hotels", {"city": "Cambridge"}), key=lambda h: h["rooms"])
    args = {"hotel_name": small["hotel_name"], "location": "Cambridge", "check_in_date": "2024-02-20"}
    booked = world.call("ReserveHotel", **args, number_of_days="2", number_of_rooms=str(small["rooms"]))
    assert booked["stay_length"] == 2 and booked["check_out_date"] == "2024-02-22"
    fails(world, "ReserveHotel", 409, **args, check_out_date="2024-02-21")
    fails(world, "ReserveHotel", 400, **args, check_out_date="2024-02-19")
    fails(world, "ReserveHotel", 404, hotel_name="Hotel Nowhere", check_in_date="2024-02-20", stay_length=1)
    found = world.call("SearchHotel", location="New York", star_rating="4", has_wifi="True")["hotels"]
    assert all(h["star_rating"] >= 4 and h["has_wifi"] for h in found)
    guesthouses = world.call("searchHotel", type="guest house", parking=True, return_info=["name", "type"])
    assert all(h["type"] == "guesthouse" for h in guesthouses["hotels"])
    name = guesthouses["hotels"][0]["name"]
    made = world.call("bookHotel", name=name, day="2024-02-01", stay="2", people=3)
    assert made["rooms"] == 2 and made["reference"].startswith("HB-")
    fails(world, "bookHotel", 400, name=name)


def test_houses_cannot_be_double_booked() -> None:
    world = make_world("mtu_hotels")
    houses = world.call("SearchHouse", where_to="Seattle", number_of_adults=2)["houses"]
    address = houses[0]["address"]
    args = {"where_to": address, "number_of_adults": 2, "check_in_date": "2024-03-01"}
    world.call("BookHouse", **args, check_out_date="2024-03-04")
    fails(world, "BookHouse", 409, **{**args, "check_in_date": "2024-03-03"}, check_out_date="2024-03-05")
    fails(world, "BookHouse", 422, **{**args, "number_of_adults": 12}, check_out_date="2024-03-10")


# ---- buses and trains ---------------------------------------------------------------------------
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


def test_trains() -> None:
    world = make_world("mtu_trains")
    trains = world.call(
        "SearchTrain",
        departure="Cambridge",
        destination="Norwich",
        day="Wednesday",
        leaveAt="10:00",
        return_info=["trainID", "leaveAt"],
    )["trains"]
    assert (
        trains and all(t["leaveAt"] >= "10:00" for t in trains) and set(trains[0]) == {"trainID", "leaveAt"}
    )
    made = world.call("BookTrain", people=2, trainID=trains[0]["trainID"], return_info=["all"])
    assert made["travel_date"] == "2024-01-03" and made["isSuccess"]
    fails(world, "BookTrain", 404, people=1, trainID="TR0000")
    fails(world, "BookTrain", 409, people=80, trainID=trains[0]["trainID"])
    found = world.call(
        "FindTrains", **{"from": "New York", "to": "Washington", "date_of_journey": "2024-01-08"}
    )
    first = found["trains"][0]
    ticket = world.call(
        "GetTrainTickets",
        **{
            "from": "New York",
            "to": "Washington",
            "date_of_journey": "2024-01-08",
            "journey_start_time": first["journey_start_time"],
            "number_of_adults": 2,
            "trip_protection": True,
        },
    )
    assert ticket["seats_left"] == first["seats_left"] - 2 and ticket["trip_protection"] is True
    fails(world, "FindTrains", None, from_="New York", to="Washington", date_of_journey="2024-01-08")
    fails(
        world,
        "FindTrains",
        400,
        **{"from": "New York", "to": "Washington", "date_of_journey": "2024-01-08", "class": "Cattle"},
    )


# ---- rides and cars -----------------------------------------------------------------------------
def test_rides_use_up_the_fleet() -> None:
    world = make_world("mtu_rides")
    luxury = count_rows(world, "mtu_rides_vehicles", ride_type="Luxury", status="available")
    for _ in range(luxury):
        ride = world.call("GetRide", destination="1069 B Street", number_of_seats=1, ride_type="Luxury")
        assert ride["ride_fare"] > 0
    fails(world, "GetRide", 409, destination="1069 B Street", number_of_seats=1, ride_type="Luxury")
    fails(world, "GetRide", 400, destination="1069 B Street", number_of_seats=1, ride_type="Rocket")
    taxis = world.call(
        "searchTaxi", departure="a", destination="b", leaveAt="10:00", return_info=["license_plate"]
    )
    plate = taxis["taxis"][0]["license_plate"]
    world.call("BookTaxi", people=1, license_plate=plate)
    fails(world, "BookTaxi", 409, people=1, license_plate=plate)
    fails(world, "BookTaxi", 404, people=1, license_plate="NOPE")
    fails(world, "searchTaxi", 400, departure="a", destination="b", return_info=["all"])


def test_rental_cars_run_out() -> None:
    world = make_world("mtu_cars")
    args = {"pickup_date": "2024-02-10", "dropoff_date": "2024-02-12", "pickup_time": "10:00"}
    cars = world.call("GetCarsAvailable", pickup_city="Phoenix", **args, type="SUV")["cars"]
    assert cars and all(c["type"] == "SUV" for c in cars)
    prices = [c["price_per_day"] for c in cars]
    assert prices == sorted(prices)
    for _ in cars:
        world.call("ReserveCar", pickup_location="Phoenix", **args, type="SUV", add_insurance=False)
    assert world.call("GetCarsAvailable", pickup_city="Phoenix", **args, type="SUV")["cars"] == []
    fails(world, "ReserveCar", 409, pickup_location="Phoenix", **args, type="SUV")
    fails(world, "ReserveCar", 400, pickup_location="Phoenix", **args, type="Spaceship")
    fails(world, "ReserveCar", 404, pickup_location="Atlantis Harbor", **args, type="SUV")
