"""T-Eval’s BINGMap (toolgym.mocks.apps.teval.bing_map) on its seeded data (real SQLite)."""

from __future__ import annotations

import pytest

from tests.mocks.apps.teval import call, fails, make_world
from toolgym.mocks.seeding import haversine_km
from toolgym.mocks.world import MockWorld


@pytest.fixture(scope="module")
def bing() -> MockWorld:
    return make_world("teval_bing_map")


def test_bing_distance_route_and_coordinates_agree(bing: MockWorld) -> None:
    sea = call(bing, "get_coordinates", location="Seattle, WA")
    pdx = call(bing, "get_coordinates", location="portland")
    km = haversine_km(sea["latitude"], sea["longitude"], pdx["latitude"], pdx["longitude"])
    assert call(bing, "get_distance", start="Seattle", end="Portland")["distance"] == round(km * 1.2, 1)
    assert call(bing, "get_distance", start="Portland", end="Seattle")["distance"] == round(km * 1.2, 1)
    route = call(bing, "get_route", start="Seattle", end="Portland")["route"]
    assert route[0].startswith("Head south from Seattle") and "I-5 south" in route[1]
    assert route[-1].endswith(f"Total distance: {round(km * 1.2, 1)} km.")
    across = call(bing, "get_route", start="Boston", end="Chicago")["route"]
    assert any("west" in step for step in across)


def test_bing_search_nearby_filters_by_category_and_radius(bing: MockWorld) -> None:
    places = call(bing, "search_nearby", search_term="coffee", places="Space Needle", radius=3000)["places"]
    center = bing.rows("teval_bing_map_locations", {"name": "Space Needle"})[0]
    assert 1 <= len(places) <= 5
    dists = []
    for p in places:
        row = bing.rows("teval_bing_map_places", {"name": p["name"], "address": p["address"]})[0]
        assert row["category"] == "coffee shop"
        dists.append(haversine_km(center["latitude"], center["longitude"], row["latitude"], row["longitude"]))
    assert dists == sorted(dists) and max(dists) <= 3.0
    # the location can also come at the end of the search term, or as coordinates
    same = call(bing, "search_nearby", search_term="coffee near Space Needle", radius=3000)["places"]
    assert same == places
    by_coords = call(bing, "search_nearby", search_term="coffee", latitude=center["latitude"],
                     longitude=center["longitude"], radius=3000)["places"]  # fmt: skip
    assert by_coords == places
    assert call(bing, "search_nearby", search_term="coffee", places="Space Needle", radius=1)["places"] == []


def test_bing_errors(bing: MockWorld) -> None:
    fails(bing, "get_coordinates", 404, location="Atlantis")
    fails(bing, "get_distance", 404, start="Seattle", end="Atlantis")
    fails(bing, "search_nearby", 400, search_term="coffee")
    fails(bing, "search_nearby", 400, search_term="coffee", places="Seattle", radius=-5)
    fails(bing, "search_nearby", 400, search_term="coffee", latitude=47.6)
