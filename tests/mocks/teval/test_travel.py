"""AirbnbSearch, BINGMap, GaodeMap and Weather on their seeded data (real SQLite)."""

from __future__ import annotations

import math
from datetime import date, timedelta

import pytest

from tests.mocks.teval import CLOCK, call, fails, make_world
from toolgym.errors import ErrorKind
from toolgym.mocks.seeding import haversine_km
from toolgym.mocks.world import MockWorld


# ---- AirbnbSearch -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def airbnb() -> MockWorld:
    return make_world("teval_airbnb")


def _booked(world: MockWorld, property_id: int) -> set[date]:
    nights = set()
    for r in world.rows("teval_airbnb_reservations", {"property_id": property_id}):
        d = date.fromisoformat(r["check_in"])
        while d < date.fromisoformat(r["check_out"]):
            nights.add(d)
            d += timedelta(days=1)
    return nights


def test_airbnb_search_filters_and_ranks(airbnb: MockWorld) -> None:
    found = call(airbnb, "search_property_by_place", place="tokyo")["property"]
    assert 1 <= len(found) <= 3
    assert all(p["address"].endswith("Tokyo, Japan") for p in found)
    ratings = [airbnb.rows("teval_airbnb_properties", {"property_id": p["id"]})[0]["rating"] for p in found]
    assert ratings == sorted(ratings, reverse=True)
    best = max(r["rating"] for r in airbnb.rows("teval_airbnb_properties", {"city": "Tokyo"}))
    assert ratings[0] == best
    hood = call(airbnb, "search_property_by_place", place="Shinjuku, Tokyo")["property"]
    assert hood and all(p["address"].startswith("Shinjuku") for p in hood)
    assert call(airbnb, "search_property_by_place", place="Atlantis")["property"] == []


def test_airbnb_rating_is_the_mean_of_the_reviews(airbnb: MockWorld) -> None:
    prop = airbnb.rows("teval_airbnb_properties")[7]
    stars = [r["rating"] for r in airbnb.rows("teval_airbnb_reviews", {"property_id": prop["property_id"]})]
    details = call(airbnb, "get_property_details", propertyId=prop["property_id"])
    assert details["rating"] == round(sum(stars) / len(stars), 2)
    reviews = call(airbnb, "get_property_reviews", propertyId=prop["property_id"])["reviews"]
    assert len(reviews) == min(3, len(stars))
    assert [r["date"] for r in reviews] == sorted((r["date"] for r in reviews), reverse=True)


def test_airbnb_availability_follows_the_reservations(airbnb: MockWorld) -> None:
    prop = next(
        p["property_id"]
        for p in airbnb.rows("teval_airbnb_properties")
        if any(d < CLOCK.date() + timedelta(days=10) for d in _booked(airbnb, p["property_id"]))
    )
    booked = _booked(airbnb, prop)
    window = call(airbnb, "check_availability", propertyId=prop)["availability"]
    assert len(window) == 10 and window[0]["date"] == CLOCK.date().isoformat()
    for day in window:
        assert day["available"] == (date.fromisoformat(day["date"]) not in booked)
    night = min(d for d in booked if d >= CLOCK.date())
    assert call(airbnb, "check_availability", propertyId=prop, date=night.isoformat())["availability"] == [
        {"date": night.isoformat(), "available": False}
    ]
    # a stay over a booked night cannot be priced
    fails(airbnb, "get_property_checkout_price", 409, propertyId=prop, checkIn=night.isoformat(),
          checkOut=(night + timedelta(days=3)).isoformat())  # fmt: skip


def test_airbnb_checkout_price_adds_nights_weekend_uplift_and_cleaning(airbnb: MockWorld) -> None:
    first = date(2024, 9, 6)  # a Friday, past the seeded reservations
    prop = next(p for p in airbnb.rows("teval_airbnb_properties") if p["min_nights"] <= 3)
    cost = call(airbnb, "get_property_checkout_price", propertyId=prop["property_id"],
                checkIn=first.isoformat(), checkOut=(first + timedelta(days=3)).isoformat())  # fmt: skip
    rate = prop["nightly_price_cents"]
    cents = 2 * round(rate * 1.15) + rate + prop["cleaning_fee_cents"]  # Fri, Sat, Sun nights
    assert cost["accommodationCost"] == round(cents / 100, 2)


def test_airbnb_errors(airbnb: MockWorld) -> None:
    fails(airbnb, "get_property_details", 404, propertyId=1)
    fails(airbnb, "get_property_details", kind=ErrorKind.ARGUMENT_ERROR, propertyId="abc")
    pid = airbnb.rows("teval_airbnb_properties")[0]["property_id"]
    fails(airbnb, "check_availability", 400, propertyId=pid, date="01/02/2024")
    fails(airbnb, "check_availability", 422, propertyId=pid, date="2023-12-31")
    fails(
        airbnb,
        "get_property_checkout_price",
        400,
        propertyId=pid,
        checkIn="2024-05-03",
        checkOut="2024-05-01",
    )
    fails(
        airbnb,
        "get_property_checkout_price",
        422,
        propertyId=pid,
        checkIn="2023-05-01",
        checkOut="2023-05-03",
    )
    strict = next(p for p in airbnb.rows("teval_airbnb_properties") if p["min_nights"] == 3)
    fails(airbnb, "get_property_checkout_price", 422, propertyId=strict["property_id"], checkIn="2024-09-02",
          checkOut="2024-09-03")  # fmt: skip


# ---- BINGMap ----------------------------------------------------------------------------------
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


# ---- GaodeMap ---------------------------------------------------------------------------------
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


# ---- Weather ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def weather() -> MockWorld:
    return make_world("teval_weather")


def test_weather_today_and_forecast_come_from_the_daily_rows(weather: MockWorld) -> None:
    city = weather.rows("teval_weather_cities", {"name": "Shanghai"})[0]
    days = {r["date"]: r for r in weather.rows("teval_weather_daily", {"city_id": city["city_id"]})}
    today = call(weather, "get_weather_today", location="上海")
    row = days[CLOCK.date().isoformat()]
    assert today["overall"] == row["overall"] and today["avg temperature"] == row["avg_temperature"]
    forecast = call(weather, "forecast_weather", location="shanghai, china", days=3)["results"]
    expected = [(CLOCK.date() + timedelta(days=i)).isoformat() for i in (1, 2, 3)]
    assert [f["date"] for f in forecast] == expected
    assert [f["temperature"] for f in forecast] == [days[d]["avg_temperature"] for d in expected]
    assert len(call(weather, "forecast_weather", location="Shanghai", days=1)["results"]) == 1


def test_weather_has_seasons_and_snow_only_when_cold(weather: MockWorld) -> None:
    def mean(name: str) -> float:
        cid = weather.rows("teval_weather_cities", {"name": name})[0]["city_id"]
        temps = [r["avg_temperature"] for r in weather.rows("teval_weather_daily", {"city_id": cid})]
        return float(sum(temps) / len(temps))

    assert mean("Sydney") > mean("Moscow") + 15  # January: summer in the south
    assert mean("Singapore") > 20
    for r in weather.rows("teval_weather_daily"):
        if "snow" in r["overall"].lower():
            assert r["avg_temperature"] < 1.0


def test_weather_follows_the_clock(weather: MockWorld) -> None:
    world = weather.fork()
    world.advance_clock(timedelta(days=2))
    city = world.rows("teval_weather_cities", {"name": "Paris"})[0]["city_id"]
    day = (CLOCK.date() + timedelta(days=2)).isoformat()
    row = world.rows("teval_weather_daily", {"city_id": city, "date": day})[0]
    assert call(world, "get_weather_today", location="Paris")["avg temperature"] == row["avg_temperature"]
    world.advance_clock(timedelta(days=20))
    fails(world, "get_weather_today", 422, location="Paris")


def test_weather_errors(weather: MockWorld) -> None:
    fails(weather, "get_weather_today", 404, location="Atlantis")
    fails(weather, "forecast_weather", 400, location="Paris", days=4)
    fails(weather, "forecast_weather", 400, location="Paris", days=0)
    fails(weather, "forecast_weather", kind=ErrorKind.ARGUMENT_ERROR, location="Paris")
