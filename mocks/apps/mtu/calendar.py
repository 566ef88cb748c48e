"""MTU calendar: GetEvents, GetAvailableTime and AddEvent (SGD).

The user's calendar: events of one hour each. Free time is what the day's events leave of 08:00
to 22:00; adding an event that overlaps another is a 409, one in the past a 422.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Volatile, format_id, read, set_counter, write
from toolgym.mocks.apps.mtu._common import (
    clock_of,
    finalize_tools,
    minutes,
    parse_clock,
    parse_day,
    street_address,
)
from toolgym.mocks.responses import bad_request, conflict, ok, unprocessable
from toolgym.mocks.seeding import insert_rows
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

DAY_START: Final = 8 * 60
DAY_END: Final = 22 * 60
EVENT_MINUTES: Final = 60
EVENT_NAMES: Final = (
    "Team meeting",
    "Lunch with Alex",
    "Dentist",
    "Gym",
    "Call with Mom",
    "Project review",
    "Book club",
    "Piano lesson",
    "Coffee with Sara",
    "Doctor's appointment",
    "Grocery shopping",
    "Movie night",
)


class CalendarApp(App):
    name = "mtu_calendar"
    description = "The user's calendar: events per day, free time, adding events (MTU-Bench)."
    version = "1"
    schema = """
    CREATE TABLE mtu_calendar_events (
        event_id TEXT PRIMARY KEY,
        event_name TEXT NOT NULL,
        event_date TEXT NOT NULL,
        event_time TEXT NOT NULL,
        event_location TEXT NOT NULL,
        created_at TEXT NOT NULL
    );
    CREATE INDEX mtu_calendar_events_date ON mtu_calendar_events(event_date, event_time);
    """
    volatile: ClassVar[Volatile] = {"mtu_calendar_events": ["created_at"]}

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        events: list[dict[str, Any]] = []
        busy: set[tuple[str, int]] = set()
        today = clock.date()
        for _ in range(260):
            day = (today + timedelta(days=rng.randint(-7, 60))).isoformat()
            hour = rng.randint(DAY_START // 60, DAY_END // 60 - 1)
            if (day, hour) in busy:
                continue  # events never overlap
            busy.add((day, hour))
            events.append(
                {
                    "event_id": format_id("CAL", len(events) + 1),
                    "event_name": rng.choice(EVENT_NAMES),
                    "event_date": day,
                    "event_time": f"{hour:02d}:00",
                    "event_location": street_address(rng),
                    "created_at": (clock - timedelta(days=rng.randint(1, 30))).isoformat(),
                }
            )
        insert_rows(db, "mtu_calendar_events", events)
        set_counter(db, "CAL", len(events))

    def _day_events(self, day: str) -> list[dict[str, Any]]:
        return self.rows(
            "SELECT * FROM mtu_calendar_events WHERE event_date = ? ORDER BY event_time, event_id", (day,)
        )

    @read(name="GetEvents")
    def get_events(self, event_date: Annotated[str, Param("the day, YYYY-MM-DD")]) -> dict[str, Any]:
        """List the user's calendar events on a day."""
        day = parse_day("event_date", event_date, self.now().date()).isoformat()
        events = [
            {k: r[k] for k in ("event_name", "event_date", "event_time", "event_location")}
            for r in self._day_events(day)
        ]
        return ok(count=len(events), events=events)

    @read(name="GetAvailableTime")
    def get_available_time(self, event_date: Annotated[str, Param("the day, YYYY-MM-DD")]) -> dict[str, Any]:
        """The user's free time slots on a day (between 08:00 and 22:00)."""
        day = parse_day("event_date", event_date, self.now().date()).isoformat()
        free = []
        cursor = DAY_START
        for e in self._day_events(day):
            start = minutes(e["event_time"])
            if start > cursor:
                free.append(
                    {
                        "event_date": day,
                        "available_start_time": clock_of(cursor),
                        "available_end_time": clock_of(start),
                    }
                )
            cursor = max(cursor, start + EVENT_MINUTES)
        if cursor < DAY_END:
            free.append(
                {
                    "event_date": day,
                    "available_start_time": clock_of(cursor),
                    "available_end_time": clock_of(DAY_END),
                }
            )
        return ok(count=len(free), available_slots=free)

    @write(name="AddEvent")
    def add_event(
        self,
        event_name: Annotated[str, Param("what the event is")],
        event_date: Annotated[str, Param("the day, YYYY-MM-DD")],
        event_location: Annotated[str, Param("where it is")],
        event_time: Annotated[str, Param("start time, HH:MM")],
    ) -> dict[str, Any]:
        """Add a one-hour event to the user's calendar."""
        if not event_name.strip():
            raise bad_request("event_name is empty")
        day = parse_day("event_date", event_date, self.now().date())
        at = parse_clock("event_time", event_time)
        now = self.now()
        if (day.isoformat(), at) < (now.date().isoformat(), f"{now.hour:02d}:{now.minute:02d}"):
            raise unprocessable(f"{day.isoformat()} {at} is in the past")
        for e in self._day_events(day.isoformat()):
            if abs(minutes(e["event_time"]) - minutes(at)) < EVENT_MINUTES:
                raise conflict(f"it overlaps {e['event_name']} at {e['event_time']}", event=e["event_name"])
        event_id = self.next_id("CAL")
        self.execute(
            "INSERT INTO mtu_calendar_events VALUES (?, ?, ?, ?, ?, ?)",
            (event_id, event_name.strip(), day.isoformat(), at, event_location, self.now_iso()),
        )
        return ok(
            event_id=event_id,
            event_name=event_name.strip(),
            event_date=day.isoformat(),
            event_time=at,
            event_location=event_location,
        )


finalize_tools(CalendarApp)
