"""MTU Rides app (toolgym.mocks.apps.mtu.rides) on its seeded data (real SQLite)."""

from __future__ import annotations

from tests.mocks.apps.mtu import count_rows, fails, make_world


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
