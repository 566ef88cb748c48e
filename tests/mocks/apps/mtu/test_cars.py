"""MTU Rental cars app (toolgym.mocks.apps.mtu.cars) on its seeded data (real SQLite)."""

from __future__ import annotations

from tests.mocks.apps.mtu import fails, make_world


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
