"""T-Eval ReserveMeeting: meeting rooms 101, 102 and 103, booked for today.

Semantics: bookings are stored per room and date as [start, end) minute ranges. A room is empty
for a slot when no booking of today overlaps it; reserving an overlapping slot is a 409, a slot
that has already started (by the simulated clock) a 422, an unknown room a 404, and a malformed
or empty time range a 400. Seeded: 60 days of past bookings and today's existing bookings.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import Volatile, read, write
from toolgym.mocks.apps.teval.common import TevalApp, format_hhmm, parse_hhmm
from toolgym.mocks.clock import format_time
from toolgym.mocks.responses import bad_request, conflict, not_found, ok, unprocessable
from toolgym.mocks.seeding import insert_rows
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

ROOMS: Final = (("101", 6, 1), ("102", 10, 1), ("103", 20, 1))  # id, seats, floor
TEAMS: Final = ("sales", "design", "engineering", "marketing", "finance", "support", "hr", "legal")
HISTORY_DAYS: Final = 60


class ReserveMeeting(TevalApp):
    name = "teval_meeting"
    teval_tool: ClassVar[str] = "ReserveMeeting"
    description = "plugin for booking meeting, with rooms 101, 102, 103"
    schema = """
    CREATE TABLE teval_meeting_rooms (room_id TEXT PRIMARY KEY, seats INTEGER NOT NULL,
                                      floor INTEGER NOT NULL);
    CREATE TABLE teval_meeting_bookings (
        room_id TEXT NOT NULL,
        date TEXT NOT NULL,
        start_minute INTEGER NOT NULL,
        end_minute INTEGER NOT NULL CHECK (end_minute > start_minute),
        start_time TEXT NOT NULL,
        end_time TEXT NOT NULL,
        booked_by TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (room_id, date, start_minute)
    );
    """
    # a booking is keyed by room, day and start: the same reservations give the same state
    volatile: ClassVar[Volatile] = {"teval_meeting_bookings": ["created_at"]}

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        insert_rows(db, "teval_meeting_rooms", [{"room_id": r, "seats": s, "floor": f} for r, s, f in ROOMS])
        rows: list[dict[str, Any]] = []
        today = clock.date()
        for back in range(HISTORY_DAYS, -1, -1):
            day = today - timedelta(days=back)
            if back and day.weekday() >= 5:  # nobody books the office on past weekends
                continue
            for room, _, _ in ROOMS:
                # a few non-overlapping slots per room between 08:00 and 19:00, half-hour grid
                minute = 8 * 60 + 30 * rng.randint(0, 4)
                for _ in range(rng.randint(1, 4) if back else rng.randint(1, 2)):
                    length = 30 * rng.randint(1, 4)
                    if minute + length > 19 * 60:
                        break
                    created = datetime.combine(day, datetime.min.time(), clock.tzinfo) - timedelta(
                        days=rng.randint(1, 10)
                    )
                    rows.append(
                        {
                            "room_id": room,
                            "date": day.isoformat(),
                            "start_minute": minute,
                            "end_minute": minute + length,
                            "start_time": format_hhmm(minute),
                            "end_time": format_hhmm(minute + length),
                            "booked_by": rng.choice(TEAMS),
                            "created_at": format_time(created),
                        }
                    )
                    minute += length + 30 * rng.randint(1, 6)
        insert_rows(db, "teval_meeting_bookings", rows)

    # ---- helpers --------------------------------------------------------------------------------
    def _slot(self, start_time: str, end_time: str) -> tuple[int, int]:
        start, end = parse_hhmm("start_time", start_time), parse_hhmm("end_time", end_time)
        if end <= start:
            raise bad_request(f"end_time {end_time} must be later than start_time {start_time}")
        return start, end

    def _busy_rooms(self, start: int, end: int) -> set[str]:
        rows = self.rows(
            "SELECT DISTINCT room_id FROM teval_meeting_bookings"
            " WHERE date = ? AND start_minute < ? AND end_minute > ?",
            (self.now().date().isoformat(), end, start),
        )
        return {r["room_id"] for r in rows}

    # ---- APIs -----------------------------------------------------------------------------------
    @read
    def get_room_status(self) -> dict[str, Any]:
        """get the room booking status: today's bookings of every room"""
        today = self.now().date().isoformat()
        rooms = []
        for room in self.rows("SELECT room_id, seats FROM teval_meeting_rooms ORDER BY room_id"):
            booked = self.rows(
                "SELECT start_time, end_time FROM teval_meeting_bookings WHERE room_id = ? AND date = ?"
                " ORDER BY start_minute",
                (room["room_id"], today),
            )
            rooms.append({"room_id": room["room_id"], "seats": room["seats"], "booked": booked})
        return ok(rooms=rooms)

    @read
    def get_empty_room_with_time(
        self,
        start_time: Annotated[str, Param("the start booked time, must be in 24 hour format, e.g. 13:15")],
        end_time: Annotated[str, Param("the end booked time, must be in 24 hour format, e.g. 22:21")],
    ) -> dict[str, Any]:
        """if they are any rooms available in the provided time (today)"""
        start, end = self._slot(start_time, end_time)
        busy = self._busy_rooms(start, end)
        rooms = [r for r, _, _ in ROOMS if r not in busy]
        return ok(rooms=rooms)

    @write
    def reserve(
        self,
        room_id: Annotated[str, Param("the room you want to book")],
        start_time: Annotated[str, Param("the start booked time, must be in 24 hour format, e.g. 13:15")],
        end_time: Annotated[str, Param("the end booked time, must be in 24 hour format, e.g. 22:21")],
    ) -> dict[str, Any]:
        """Book the meeting room today using the room id provided by `check_empty`"""
        room_id = room_id.strip()
        if self.row("SELECT room_id FROM teval_meeting_rooms WHERE room_id = ?", (room_id,)) is None:
            raise not_found("room", room_id)
        start, end = self._slot(start_time, end_time)
        now = self.now()
        if start < now.hour * 60 + now.minute:
            raise unprocessable(f"{start_time} has already passed today (it is {now:%H:%M})")
        if room_id in self._busy_rooms(start, end):
            clash = self.rows(
                "SELECT start_time, end_time FROM teval_meeting_bookings WHERE room_id = ? AND date = ?"
                " AND start_minute < ? AND end_minute > ? ORDER BY start_minute",
                (room_id, now.date().isoformat(), end, start),
            )
            raise conflict(f"room {room_id} is already booked in that time", bookings=clash)
        self.execute(
            "INSERT INTO teval_meeting_bookings(room_id, date, start_minute, end_minute,"
            " start_time, end_time, booked_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                room_id,
                now.date().isoformat(),
                start,
                end,
                format_hhmm(start),
                format_hhmm(end),
                "agent",
                self.now_iso(),
            ),
        )
        return ok(state=f"room {room_id} booked today from {format_hhmm(start)} to {format_hhmm(end)}")
