"""MTU Trains app (toolgym.mocks.apps.mtu.trains) on its seeded data (real SQLite)."""

from __future__ import annotations

from tests.mocks.apps.mtu import fails, make_world


def test_trains() -> None:
    world = make_world("mtu_trains")
    trains = world.call(
        "SearchTrain",
        departure="Cambridge",
        destination="Norwich",
        day="Wednesday",
        leaveAt="10:00",
        return_info=["trainID", "leaveAt"],
    )["trains"]
    assert (
        trains and all(t["leaveAt"] >= "10:00" for t in trains) and set(trains[0]) == {"trainID", "leaveAt"}
    )
    made = world.call("BookTrain", people=2, trainID=trains[0]["trainID"], return_info=["all"])
    assert made["travel_date"] == "2024-01-03" and made["isSuccess"]
    fails(world, "BookTrain", 404, people=1, trainID="TR0000")
    fails(world, "BookTrain", 409, people=80, trainID=trains[0]["trainID"])
    found = world.call(
        "FindTrains", **{"from": "New York", "to": "Washington", "date_of_journey": "2024-01-08"}
    )
    first = found["trains"][0]
    ticket = world.call(
        "GetTrainTickets",
        **{
            "from": "New York",
            "to": "Washington",
            "date_of_journey": "2024-01-08",
            "journey_start_time": first["journey_start_time"],
            "number_of_adults": 2,
            "trip_protection": True,
        },
    )
    assert ticket["seats_left"] == first["seats_left"] - 2 and ticket["trip_protection"] is True
    fails(world, "FindTrains", None, from_="New York", to="Washington", date_of_journey="2024-01-08")
    fails(
        world,
        "FindTrains",
        400,
        **{"from": "New York", "to": "Washington", "date_of_journey": "2024-01-08", "class": "Cattle"},
    )
