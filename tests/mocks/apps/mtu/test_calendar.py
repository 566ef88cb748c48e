"""MTU Calendar app (toolgym.mocks.apps.mtu.calendar) on its seeded data (real SQLite)."""

from __future__ import annotations

from tests.mocks.apps.mtu import fails, make_world


def test_calendar_free_time_and_overlaps() -> None:
    world = make_world("mtu_calendar")
    events = world.call("GetEvents", event_date="2024-01-03")["events"]
    slots = world.call("GetAvailableTime", event_date="2024-01-03")["available_slots"]
    busy = {e["event_time"] for e in events}
    assert all(s["available_start_time"] not in busy for s in slots)
    start = slots[-1]["available_start_time"]
    world.call(
        "AddEvent", event_name="Dinner", event_date="2024-01-03", event_location="Home", event_time=start
    )
    fails(
        world,
        "AddEvent",
        409,
        event_name="Dinner 2",
        event_date="2024-01-03",
        event_location="Home",
        event_time=start,
    )
    fails(
        world,
        "AddEvent",
        422,
        event_name="Past",
        event_date="2023-12-01",
        event_location="Home",
        event_time="10:00",
    )
    after = world.call("GetAvailableTime", event_date="2024-01-03")["available_slots"]
    assert all(s["available_start_time"] != start for s in after)
