"""Maps on real SQLite: geocoding round trips, haversine routes per mode, nearby search by distance,
favourites and reviews."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.mocks.apps.ctool import expect_error, ok_call
from toolgym.errors import ErrorKind
from toolgym.mocks.apps.ctool import MapsApp
from toolgym.mocks.seeding import haversine_km
from toolgym.mocks.world import MockWorld


@pytest.fixture
def world() -> Iterator[MockWorld]:
    with MockWorld([MapsApp]) as w:
        yield w


def test_haversine_known_distance() -> None:
    # Beijing to Shanghai city centers: about 1068 km great-circle
    assert haversine_km(39.9042, 116.4074, 31.2304, 121.4737) == pytest.approx(1068, abs=5)
    assert haversine_km(31.2, 121.4, 31.2, 121.4) == 0


def test_geocode_and_reverse_geocode_round_trip(world: MockWorld) -> None:
    for street in world.rows("maps_streets")[:12]:
        address = f"{street['max_number'] // 2} {street['name']}, {street['city']}"
        hit = ok_call(world, "geocode", address=address)["results"][0]
        assert hit["match_type"] == "street_address" and hit["city"] == street["city"]
        back = ok_call(world, "reverse_geocode", lat=hit["lat"], lon=hit["lon"])
        assert back["formatted_address"] == hit["formatted_address"]
        assert back["distance_m"] == 0


def test_geocode_places_cities_and_misses(world: MockWorld) -> None:
    place = world.rows("maps_places")[0]
    hit = ok_call(world, "geocode", address=place["name"], city=place["city"])["results"][0]
    assert (hit["match_type"], hit["place_id"], hit["lat"]) == ("place", place["place_id"], place["lat"])
    assert ok_call(world, "geocode", address="Hangzhou")["results"][0]["match_type"] == "city"
    expect_error(world, "geocode", code=404, address="1 Nowhere Lane, Atlantis")
    street = world.rows("maps_streets")[0]
    expect_error(world, "geocode", code=404, address=f"9999 {street['name']}, {street['city']}")
    expect_error(world, "geocode", code=400, address="Beijing", city="Paris")


def test_nearby_search_is_sorted_by_real_distance(world: MockWorld) -> None:
    center = world.rows("maps_places", {"category": "subway_station"})[0]
    found = ok_call(
        world, "search_nearby_places", lat=center["lat"], lon=center["lon"], radius_m=3000, limit=50
    )
    distances = [p["distance_m"] for p in found["places"]]
    assert distances == sorted(distances) and distances[0] == 0
    assert all(d <= 3000 for d in distances)
    # nothing within the radius is missed
    inside = [
        p
        for p in world.rows("maps_places")
        if haversine_km(center["lat"], center["lon"], p["lat"], p["lon"]) * 1000 <= 3000
    ]
    assert found["total"] == len(inside)
    cafes = ok_call(
        world, "search_nearby_places", lat=center["lat"], lon=center["lon"], radius_m=5000, category="cafe"
    )
    assert all(p["category"] == "cafe" for p in cafes["places"])
    good = ok_call(
        world, "search_nearby_places", lat=center["lat"], lon=center["lon"], radius_m=5000, min_rating=4.5
    )
    assert all(p["rating"] >= 4.5 for p in good["places"])


def test_routes_per_mode(world: MockWorld) -> None:
    a, b = (31.2304, 121.4737), (31.2500, 121.5000)
    routes = {
        mode: ok_call(
            world,
            "plan_route",
            origin_lat=a[0],
            origin_lon=a[1],
            destination_lat=b[0],
            destination_lon=b[1],
            mode=mode,
        )
        for mode in ("walking", "cycling", "transit", "driving")
    }
    straight = haversine_km(*a, *b)
    for r in routes.values():
        assert r["straight_line_km"] == pytest.approx(straight, abs=0.01)
        assert r["distance_km"] > r["straight_line_km"]
    assert (
        routes["walking"]["duration_minutes"]
        > routes["cycling"]["duration_minutes"]
        > routes["driving"]["duration_minutes"]
    )
    assert routes["walking"]["duration_minutes"] == round(straight * 1.25 / 5 * 60)
    back = ok_call(
        world,
        "plan_route",
        origin_lat=b[0],
        origin_lon=b[1],
        destination_lat=a[0],
        destination_lon=a[1],
        mode="walking",
    )
    assert back["distance_km"] == routes["walking"]["distance_km"]
    # Shanghai to Hangzhou: drivable, not walkable
    far: dict[str, Any] = {
        "origin_lat": 31.2304,
        "origin_lon": 121.4737,
        "destination_lat": 30.2741,
        "destination_lon": 120.1551,
    }
    assert ok_call(world, "plan_route", mode="driving", **far)["distance_km"] > 150
    expect_error(world, "plan_route", code=422, mode="walking", **far)
    expect_error(world, "plan_route", code=400, mode="teleport", **far)
    expect_error(world, "plan_route", code=400, mode="driving", **(far | {"origin_lat": 123.0}))


def test_search_places_filters_and_sorts(world: MockWorld) -> None:
    found = ok_call(world, "search_places", city="Beijing", category="restaurant", sort_by="rating", limit=50)
    assert found["places"] and all(
        p["city"] == "Beijing" and p["category"] == "restaurant" for p in found["places"]
    )
    ratings = [p["rating"] for p in found["places"]]
    assert ratings == sorted(ratings, reverse=True)
    hotpot = ok_call(world, "search_places", query="hotpot")["places"]
    assert hotpot and all("hotpot" in p["name"].lower() for p in hotpot)
    expect_error(world, "search_places", code=400, category="volcano")


def test_favourites_and_reviews(world: MockWorld) -> None:
    user = "MU001"
    saved = {p["place_id"] for p in ok_call(world, "list_saved_places", user_id=user)["places"]}
    place = next(p for p in world.rows("maps_places") if p["place_id"] not in saved)
    ok_call(world, "save_place", user_id=user, place_id=place["place_id"], label="Want to go")
    assert place["place_id"] in {
        p["place_id"] for p in ok_call(world, "list_saved_places", user_id=user)["places"]
    }
    expect_error(world, "save_place", code=409, user_id=user, place_id=place["place_id"])
    ok_call(world, "remove_saved_place", user_id=user, place_id=place["place_id"])
    expect_error(world, "remove_saved_place", code=404, user_id=user, place_id=place["place_id"])

    reviewed = ok_call(
        world, "add_place_review", user_id=user, place_id=place["place_id"], rating=1, text="Closed."
    )
    n = place["review_count"]
    assert reviewed["review_count"] == n + 1
    assert reviewed["rating"] == pytest.approx(round((place["rating"] * n + 1) / (n + 1), 2))
    details = ok_call(world, "get_place_details", place_id=place["place_id"])["place"]
    assert details["latest_reviews"][0]["review_id"] == reviewed["review_id"]
    expect_error(world, "add_place_review", code=409, user_id=user, place_id=place["place_id"], rating=5)
    expect_error(world, "add_place_review", code=400, user_id="MU002", place_id=place["place_id"], rating=6)
    expect_error(world, "add_place_review", code=404, user_id="MU999", place_id=place["place_id"], rating=3)
    expect_error(world, "get_place_details", code=404, place_id="PL-99999")
    expect_error(
        world,
        "add_place_review",
        kind=ErrorKind.ARGUMENT_ERROR,
        user_id=user,
        place_id="PL-00001",
        rating="great",
    )
