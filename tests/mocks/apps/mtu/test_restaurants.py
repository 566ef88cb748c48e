"""MTU Restaurants app (toolgym.mocks.apps.mtu.restaurants) on its seeded data (real SQLite)."""

from __future__ import annotations

from typing import Any

from tests.mocks.apps.mtu import count_rows, fails, make_world


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
