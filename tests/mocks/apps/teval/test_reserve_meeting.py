"""T-Eval’s ReserveMeeting (toolgym.mocks.apps.teval.reserve_meeting) on its seeded data (real SQLite)."""

from __future__ import annotations

from datetime import timedelta

from tests.mocks.apps.teval import CLOCK, call, fails, make_world
from toolgym.errors import ErrorKind
from toolgym.mocks.world import MockWorld


def _today_bookings(world: MockWorld, room: str) -> list[tuple[int, int]]:
    rows = world.rows("teval_meeting_bookings", {"room_id": room, "date": CLOCK.date().isoformat()})
    return [(r["start_minute"], r["end_minute"]) for r in rows]


def test_empty_rooms_are_the_ones_without_overlap() -> None:
    world = make_world("teval_meeting")
    for start, end in (("09:00", "10:00"), ("10:15", "10:45"), ("13:00", "16:00"), ("20:00", "21:00")):
        s = int(start[:2]) * 60 + int(start[3:])
        e = int(end[:2]) * 60 + int(end[3:])
        rooms = call(world, "get_empty_room_with_time", start_time=start, end_time=end)["rooms"]
        for room in ("101", "102", "103"):
            clash = any(a < e and b > s for a, b in _today_bookings(world, room))
            assert (room in rooms) == (not clash), (room, start, end)
    status = call(world, "get_room_status")["rooms"]
    assert [r["room_id"] for r in status] == ["101", "102", "103"]
    assert all(len(r["booked"]) == len(_today_bookings(world, r["room_id"])) for r in status)


def test_reserving_takes_the_room_and_double_booking_conflicts() -> None:
    world = make_world("teval_meeting")
    assert "101" in call(world, "get_empty_room_with_time", start_time="18:00", end_time="19:00")["rooms"]
    assert "101" in call(world, "reserve", room_id="101", start_time="18:00", end_time="19:00")["state"]
    assert "101" not in call(world, "get_empty_room_with_time", start_time="18:30", end_time="18:45")["rooms"]
    assert "101" in call(world, "get_empty_room_with_time", start_time="19:00", end_time="19:30")["rooms"]
    fails(world, "reserve", 409, room_id="101", start_time="18:30", end_time="20:00")
    call(world, "reserve", room_id="101", start_time="19:00", end_time="19:30")  # back to back is fine


def test_meeting_errors_change_nothing() -> None:
    world = make_world("teval_meeting")
    fails(world, "reserve", 404, room_id="104", start_time="18:00", end_time="19:00")
    fails(world, "reserve", 400, room_id="101", start_time="19:00", end_time="18:00")
    fails(world, "reserve", 400, room_id="101", start_time="7pm", end_time="8pm")
    fails(world, "get_empty_room_with_time", 400, start_time="25:00", end_time="26:00")
    fails(world, "reserve", kind=ErrorKind.ARGUMENT_ERROR, room_id=101, start_time="18:00", end_time="19:00")
    world.advance_clock(timedelta(hours=12))  # noon: the morning has passed
    fails(world, "reserve", 422, room_id="101", start_time="11:00", end_time="11:30")
