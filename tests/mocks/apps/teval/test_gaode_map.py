"""T-Eval’s GaodeMap (toolgym.mocks.apps.teval.gaode_map) on its seeded data (real SQLite)."""

from __future__ import annotations

import math

import pytest

from tests.mocks.apps.teval import call, fails, make_world
from toolgym.mocks.seeding import haversine_km
from toolgym.mocks.world import MockWorld


@pytest.fixture(scope="module")
def gaode() -> MockWorld:
    return make_world("teval_gaode_map")


def test_gaode_coordinate_distance_route_chain(gaode: MockWorld) -> None:
    a = call(gaode, "get_coordinate", address="故宫")["coordinate"]
    b = call(gaode, "get_coordinate", address="西湖", city="杭州")["coordinate"]
    assert a == "116.397029,39.917839" and b.startswith("120.148732")
    (lon1, lat1), (lon2, lat2) = (map(float, a.split(",")), map(float, b.split(",")))
    dist = call(gaode, "get_distance", origins=a, destination=b)
    road_km = haversine_km(lat1, lon1, lat2, lon2) * 1.3
    assert dist["distance"] == round(road_km, 1)
    assert dist["duration"] == math.ceil(road_km / 80 * 60)  # highway speed beyond 20 km
    route = call(gaode, "get_route", origin=a, destination=b)["route"]
    assert route[0].startswith("从故宫博物院附近出发") and route[-1].startswith("到达西湖附近")
    assert call(gaode, "get_route", origin=b, destination=a)["route"][0].startswith("从西湖附近出发")


def test_gaode_search_nearby(gaode: MockWorld) -> None:
    here = "121.490317,31.236305"
    english = call(gaode, "search_nearby", location=here, keywords="restaurant")["places"]
    chinese = call(gaode, "search_nearby", location=here, keywords="餐厅")["places"]
    assert english == chinese and 1 <= len(english) <= 5
    for p in english:
        row = gaode.rows("teval_gaode_map_places", {"name": p["name"], "address": p["address"]})[0]
        assert row["category"] == "餐厅"
        assert haversine_km(31.236305, 121.490317, row["latitude"], row["longitude"]) <= 5.0
    assert call(gaode, "search_nearby", location=here, keywords="滑雪场")["places"] == []


def test_gaode_errors(gaode: MockWorld) -> None:
    fails(gaode, "get_coordinate", 404, address="不存在的地方")
    fails(gaode, "get_coordinate", 404, address="西湖", city="北京")
    fails(gaode, "get_distance", 400, origins="116.39", destination="116.27,39.99")
    fails(gaode, "get_distance", 422, origins="2.35,48.86", destination="116.27,39.99")  # Paris
    fails(gaode, "search_nearby", 400, location="abc", keywords="餐厅")
