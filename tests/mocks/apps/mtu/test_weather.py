"""MTU Weather app (toolgym.mocks.apps.mtu.weather) on its seeded data (real SQLite)."""

from __future__ import annotations

from tests.mocks.apps.mtu import fails, make_world


def test_weather() -> None:
    world = make_world("mtu_weather")
    ny = world.call("GetWeather", city="New York", date="2024-01-04")
    row = world.store.conn.execute(
        "SELECT d.temp_high_f FROM mtu_weather_days d JOIN mtu_weather_places p USING (place_id)"
        " WHERE p.name = 'New York' AND d.date = '2024-01-04'"
    ).fetchone()
    assert ny["temperature"] == row[0]
    here = world.call("GetWeather")
    assert here["city"] == "San Francisco" and here["date"] == "2024-01-01"
    park = world.call("GetWeather", geographic_poi="custer national forest", condition_temperature="freezing")
    assert park["condition_temperature_holds"] == (park["temperature_low"] <= 32)
    assert world.call("GetWeather", state="nebraska")["city"] == "Omaha"
    fails(world, "GetWeather", 404, city="Seattle", date="2024-06-01")
    fails(world, "GetWeather", 404, city="Gotham")
    fails(world, "GetWeather", 400, city="Seattle", condition_temperature="spicy")
