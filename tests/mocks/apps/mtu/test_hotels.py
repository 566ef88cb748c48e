"""MTU Hotels app (toolgym.mocks.apps.mtu.hotels) on its seeded data (real SQLite)."""

from __future__ import annotations

from tests.mocks.apps.mtu import fails, make_world


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
