"""MTU Events and attractions app (toolgym.mocks.apps.mtu.events) on its seeded data (real SQLite)."""

from __future__ import annotations

from tests.mocks.apps.mtu import fails, make_world


def test_events_filter_and_sell_out() -> None:
    world = make_world("mtu_events")
    events = world.call("FindEvents", event_type="concert", city="New York")["events"]
    assert events and all(e["event_type"] == "Music" and e["city"] == "New York" for e in events)
    assert [(e["date"], e["time"]) for e in events] == sorted((e["date"], e["time"]) for e in events)
    plays = world.call("FindEvents", event_type="Shakespearean play", city="Chicago")["events"]
    assert all(e["event_type"] == "Theater" for e in plays)
    e = min(events, key=lambda e: e["tickets_left"])
    dates = world.call("GetEventDates", event_name=e["event_name"], city="NYC")["dates"]
    assert e["date"] in [d["date"] for d in dates]
    args = {"event_name": e["event_name"], "date": e["date"], "city": "New York"}
    left = e["tickets_left"]
    while left > 0:
        n = min(left, 20)
        bought = world.call("BuyEventTickets", **args, number_of_tickets=n)
        left -= n
        assert bought["tickets_left"] == left
    fails(world, "BuyEventTickets", 409, **args, number_of_tickets=1)
    fails(world, "BuyEventTickets", 404, **{**args, "date": "2024-12-30"}, number_of_tickets=1)
    fails(world, "FindEvents", 400, event_type="knitting", city="New York")
    fails(world, "FindEvents", 404, event_type="concert", city="Atlantis")


def test_attractions() -> None:
    world = make_world("mtu_events")
    free = world.call("FindAttractions", location="Chicago", free_entry=True, good_for_kids="True")[
        "attractions"
    ]
    assert all(a["free_entry"] and a["good_for_kids"] for a in free)
    museums = world.call("FindAttractions", location="Chicago", category="Museum")["attractions"]
    assert all(a["category"] == "Museum" for a in museums)
    fails(world, "FindAttractions", 400, location="Chicago", category="Volcano")
    colleges = world.call("searchAttraction", type="colleges", return_info=["name", "entrance fee"])[
        "attractions"
    ]
    assert colleges and all(set(c) == {"name", "entrance_fee"} for c in colleges)
