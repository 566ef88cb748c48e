"""T-Eval’s Weather (toolgym.mocks.apps.teval.weather) on its seeded data (real SQLite)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.mocks.apps.teval import CLOCK, call, fails, make_world
from toolgym.errors import ErrorKind
from toolgym.mocks.world import MockWorld


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
