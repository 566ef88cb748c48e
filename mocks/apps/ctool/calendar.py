"""Meeting rooms and calendars: rooms with capacity and equipment, bookings, events, free slots.

Semantics: a room holds at most one confirmed booking at any moment (intervals are half-open, so
a 10:00-11:00 booking and an 11:00-12:00 one do not clash), is never booked for more people than
it seats, and never in the past. An event may book a room; moving the event moves its booking
(re-checked for conflicts) and resets the attendees' answers; deleting it frees the room. Free
slots for a set of people are the gaps in the working window that none of their events (those
they have not declined) covers. All times are UTC.
"""

from __future__ import annotations

import random
from datetime import datetime, time, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Volatile, format_id, placeholders, read, set_counter, write
from toolgym.mocks.apps.ctool._common import FIRST_NAMES, LAST_NAMES, app_now, iso, parse_time, utc
from toolgym.mocks.responses import (
    AppError,
    bad_request,
    check_range,
    conflict,
    not_found,
    ok,
    parse_date,
    unprocessable,
)
from toolgym.mocks.seeding import insert_rows, pick_name
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

BUILDINGS: Final = ("Tower A", "Tower B", "Tower C")
EQUIPMENT: Final = ("projector", "whiteboard", "video_conference", "tv_screen", "phone")
DEPARTMENTS: Final = ("Engineering", "Design", "Marketing", "Sales", "Finance", "HR", "Legal")
RESPONSES: Final = ("accepted", "declined", "tentative")
BOOKING_STATUSES: Final = ("confirmed", "cancelled")
ROOM_NAMES: Final = (
    "Lotus",
    "Bamboo",
    "Peony",
    "Orchid",
    "Jade",
    "Pearl",
    "Crane",
    "Willow",
    "Lantern",
    "Summit",
)
MEETING_TITLES: Final = (
    "Weekly sync",
    "Design review",
    "Sprint planning",
    "Budget check-in",
    "Customer call",
    "1:1",
    "Hiring debrief",
    "Roadmap review",
    "Retrospective",
    "Launch prep",
    "Contract review",
    "Brainstorm",
)
MAX_BOOKING: Final = timedelta(hours=12)
MAX_RANGE: Final = timedelta(days=62)
SLOT_STEP: Final = timedelta(minutes=30)

N_PEOPLE: Final = 60
N_EVENTS: Final = 450
N_PLAIN_BOOKINGS: Final = 80


def _overlaps(a_start: datetime, a_end: datetime, b_start: datetime, b_end: datetime) -> bool:
    return a_start < b_end and b_start < a_end


def _window(start_time: str, end_time: str) -> tuple[datetime, datetime]:
    start, end = parse_time("start_time", start_time), parse_time("end_time", end_time)
    if end <= start:
        raise bad_request("end_time must be after start_time")
    return start, end


def _clock_time(param: str, value: str) -> time:
    try:
        return time.fromisoformat(value)
    except (TypeError, ValueError):
        raise bad_request(f"{param!r} must be a time of day HH:MM, got {value!r}") from None


class CalendarApp(App):
    name = "calendar"
    description = (
        "Meeting rooms and calendars: find free rooms and book them, create, update and delete "
        "events with attendees, list a person's events, find a slot when everyone is free."
    )
    version = "1"
    schema = f"""
    CREATE TABLE calendar_people (
        person_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        email TEXT NOT NULL UNIQUE,
        department TEXT NOT NULL
    );
    CREATE TABLE calendar_rooms (
        room_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        building TEXT NOT NULL,
        floor INTEGER NOT NULL,
        capacity INTEGER NOT NULL CHECK (capacity > 0),
        equipment TEXT NOT NULL
    );
    CREATE TABLE calendar_bookings (
        booking_id TEXT PRIMARY KEY,
        room_id TEXT NOT NULL,
        booked_by TEXT NOT NULL,
        title TEXT NOT NULL,
        start_at TEXT NOT NULL,
        end_at TEXT NOT NULL,
        attendee_count INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ({", ".join(f"'{s}'" for s in BOOKING_STATUSES)})),
        event_id TEXT,
        created_at TEXT NOT NULL,
        CHECK (end_at > start_at)
    );
    CREATE INDEX calendar_bookings_room ON calendar_bookings(room_id, start_at);
    CREATE TABLE calendar_events (
        event_id TEXT PRIMARY KEY,
        organizer_id TEXT NOT NULL,
        title TEXT NOT NULL,
        description TEXT NOT NULL,
        start_at TEXT NOT NULL,
        end_at TEXT NOT NULL,
        location TEXT NOT NULL,
        booking_id TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        CHECK (end_at > start_at)
    );
    CREATE INDEX calendar_events_start ON calendar_events(start_at);
    CREATE TABLE calendar_attendees (
        event_id TEXT NOT NULL,
        person_id TEXT NOT NULL,
        response TEXT NOT NULL CHECK (response IN ('needs_action', 'accepted', 'declined', 'tentative')),
        PRIMARY KEY (event_id, person_id)
    );
    CREATE INDEX calendar_attendees_person ON calendar_attendees(person_id);
    """
    volatile: ClassVar[Volatile] = {
        "calendar_bookings": ["created_at"],
        "calendar_events": ["created_at", "updated_at"],
    }

    # ---- seed data ---------------------------------------------------------------------------
    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        now = utc(clock)
        people: list[dict[str, Any]] = []
        for i in range(1, N_PEOPLE + 1):
            first, last = pick_name(rng, FIRST_NAMES, LAST_NAMES)
            people.append(
                {
                    "person_id": f"P{i:03d}",
                    "name": f"{first} {last}",
                    "email": f"{first.lower()}.{last.lower()}{i}@corp.example",
                    "department": rng.choice(DEPARTMENTS),
                }
            )
        insert_rows(db, "calendar_people", people)
        ids = [p["person_id"] for p in people]

        rooms: list[dict[str, Any]] = []
        for b, building in enumerate(BUILDINGS):
            for k in range(10):
                floor = 1 + k // 2
                capacity = rng.choice((4, 6, 8, 10, 12, 16, 20, 30))
                kit = sorted(e for e in EQUIPMENT if rng.random() < (0.35 + capacity / 60))
                rooms.append(
                    {
                        "room_id": f"{building[-1]}-{floor}{k % 2 + 1:02d}",
                        "name": f"{ROOM_NAMES[(k + 3 * b) % len(ROOM_NAMES)]} {building[-1]}{floor}",
                        "building": building,
                        "floor": floor,
                        "capacity": capacity,
                        "equipment": ",".join(kit),
                    }
                )
        insert_rows(db, "calendar_rooms", rooms)

        day0 = datetime.combine(now.date(), time(9), tzinfo=now.tzinfo) - timedelta(days=7)
        workdays = [d for d in (day0 + timedelta(days=n) for n in range(29)) if d.weekday() < 5]
        taken: dict[str, list[tuple[datetime, datetime]]] = {r["room_id"]: [] for r in rooms}

        def slot() -> tuple[datetime, datetime]:
            start = rng.choice(workdays) + SLOT_STEP * rng.randint(0, 16)
            return start, start + SLOT_STEP * rng.choice((1, 2, 2, 3, 4))

        def free_room(start: datetime, end: datetime, size: int) -> dict[str, Any] | None:
            fits = [
                r
                for r in rooms
                if r["capacity"] >= size
                and not any(_overlaps(start, end, s, e) for s, e in taken[r["room_id"]])
            ]
            if not fits:
                return None
            room = rng.choice(fits)
            taken[room["room_id"]].append((start, end))
            return room

        events: list[dict[str, Any]] = []
        attendees: list[dict[str, Any]] = []
        bookings: list[dict[str, Any]] = []
        for i in range(1, N_EVENTS + 1):
            event_id = format_id("EVT", i)
            start, end = slot()
            organizer = rng.choice(ids)
            guests = rng.sample([p for p in ids if p != organizer], rng.choice((0, 1, 2, 3, 4, 6)))
            room = free_room(start, end, len(guests) + 1) if guests and rng.random() < 0.6 else None
            booking_id = None
            created = min(start, now) - timedelta(days=rng.randint(1, 10))
            if room is not None:
                booking_id = format_id("BKG", len(bookings) + 1)
                bookings.append(
                    {
                        "booking_id": booking_id,
                        "room_id": room["room_id"],
                        "booked_by": organizer,
                        "title": "",
                        "start_at": iso(start),
                        "end_at": iso(end),
                        "attendee_count": len(guests) + 1,
                        "status": "confirmed",
                        "event_id": event_id,
                        "created_at": iso(created),
                    }
                )
            title = rng.choice(MEETING_TITLES)
            if booking_id is not None:
                bookings[-1]["title"] = title
            events.append(
                {
                    "event_id": event_id,
                    "organizer_id": organizer,
                    "title": title,
                    "description": "",
                    "start_at": iso(start),
                    "end_at": iso(end),
                    "location": room["name"] if room is not None else rng.choice(("", "Online", "Desk")),
                    "booking_id": booking_id,
                    "created_at": iso(created),
                    "updated_at": iso(created),
                }
            )
            attendees.append({"event_id": event_id, "person_id": organizer, "response": "accepted"})
            for g in guests:
                response = rng.choices(("accepted", "needs_action", "tentative", "declined"), (6, 2, 1, 1))[0]
                attendees.append({"event_id": event_id, "person_id": g, "response": response})
        for _ in range(N_PLAIN_BOOKINGS):
            start, end = slot()
            size = rng.randint(1, 8)
            room = free_room(start, end, size)
            if room is None:
                continue
            cancelled = rng.random() < 0.15
            bookings.append(
                {
                    "booking_id": format_id("BKG", len(bookings) + 1),
                    "room_id": room["room_id"],
                    "booked_by": rng.choice(ids),
                    "title": rng.choice(("Interview", "Focus time", "Training", "Vendor visit")),
                    "start_at": iso(start),
                    "end_at": iso(end),
                    "attendee_count": size,
                    "status": "cancelled" if cancelled else "confirmed",
                    "event_id": None,
                    "created_at": iso(min(start, now) - timedelta(days=2)),
                }
            )
            if cancelled:
                taken[room["room_id"]].remove((start, end))
        insert_rows(db, "calendar_events", events)
        insert_rows(db, "calendar_attendees", attendees)
        insert_rows(db, "calendar_bookings", bookings)
        set_counter(db, "EVT", len(events))
        set_counter(db, "BKG", len(bookings))

    # ---- helpers -----------------------------------------------------------------------------
    def _person(self, person_id: str) -> dict[str, Any]:
        return self.get_or_404("calendar_people", "person_id", person_id, what="person")

    def _room(self, room_id: str) -> dict[str, Any]:
        return self.get_or_404("calendar_rooms", "room_id", room_id, what="room")

    def _event(self, event_id: str) -> dict[str, Any]:
        return self.get_or_404("calendar_events", "event_id", event_id, what="event")

    @staticmethod
    def _room_view(r: dict[str, Any]) -> dict[str, Any]:
        return {**r, "equipment": [e for e in r["equipment"].split(",") if e]}

    def _room_conflict(
        self, room_id: str, start: datetime, end: datetime, ignore_booking: str | None = None
    ) -> dict[str, Any] | None:
        return self.row(
            "SELECT booking_id, start_at, end_at FROM calendar_bookings WHERE room_id = ?"
            " AND status = 'confirmed' AND start_at < ? AND end_at > ? AND booking_id IS NOT ?"
            " ORDER BY start_at LIMIT 1",
            (room_id, iso(end), iso(start), ignore_booking),
        )

    def _check_bookable(
        self,
        room: dict[str, Any],
        start: datetime,
        end: datetime,
        people: int,
        ignore_booking: str | None = None,
    ) -> None:
        if end - start > MAX_BOOKING:
            raise bad_request("a room can be booked for at most 12 hours")
        if start < app_now(self):
            raise unprocessable(f"cannot book a room in the past (now is {iso(app_now(self))})")
        if people > room["capacity"]:
            raise unprocessable(
                f"room {room['room_id']} seats {room['capacity']}, not {people}", capacity=room["capacity"]
            )
        clash = self._room_conflict(room["room_id"], start, end, ignore_booking)
        if clash is not None:
            raise conflict(
                f"room {room['room_id']} is already booked {clash['start_at']} - {clash['end_at']}"
                f" ({clash['booking_id']})",
                booking_id=clash["booking_id"],
            )

    def _insert_booking(
        self,
        room_id: str,
        person_id: str,
        title: str,
        start: datetime,
        end: datetime,
        people: int,
        event_id: str | None,
    ) -> str:
        booking_id = self.next_id("BKG")
        self.execute(
            "INSERT INTO calendar_bookings VALUES (?, ?, ?, ?, ?, ?, ?, 'confirmed', ?, ?)",
            (
                booking_id,
                room_id,
                person_id,
                title,
                iso(start),
                iso(end),
                people,
                event_id,
                iso(app_now(self)),
            ),
        )
        return booking_id

    def _event_view(self, e: dict[str, Any]) -> dict[str, Any]:
        people = self.rows(
            "SELECT a.person_id, p.name, a.response FROM calendar_attendees a JOIN calendar_people p"
            " USING (person_id) WHERE a.event_id = ? ORDER BY a.rowid",
            (e["event_id"],),
        )
        room_id = None
        if e["booking_id"] is not None:
            room_id = self.scalar(
                "SELECT room_id FROM calendar_bookings WHERE booking_id = ?", (e["booking_id"],)
            )
        return {
            "event_id": e["event_id"],
            "title": e["title"],
            "description": e["description"],
            "organizer_id": e["organizer_id"],
            "start_time": e["start_at"],
            "end_time": e["end_at"],
            "location": e["location"],
            "room_id": room_id,
            "booking_id": e["booking_id"],
            "attendees": people,
        }

    def _busy(self, person_ids: list[str], start: datetime, end: datetime) -> list[tuple[datetime, datetime]]:
        rows = self.rows(
            "SELECT DISTINCT e.event_id, e.start_at, e.end_at FROM calendar_events e"
            " JOIN calendar_attendees a USING (event_id)"
            f" WHERE a.person_id IN ({placeholders(person_ids)}) AND a.response != 'declined'"
            " AND e.start_at < ? AND e.end_at > ? ORDER BY e.start_at, e.event_id",
            [*person_ids, iso(end), iso(start)],
        )
        return [(datetime.fromisoformat(r["start_at"]), datetime.fromisoformat(r["end_at"])) for r in rows]

    # ---- people and rooms ------------------------------------------------------------------------
    @read
    def search_people(
        self,
        name: Annotated[str | None, Param("part of the person's name")] = None,
        department: Annotated[str | None, Param("department", enum=DEPARTMENTS)] = None,
    ) -> dict[str, Any]:
        """Look up colleagues by name and/or department (their person ids are needed to invite them)."""
        sql, params = "SELECT * FROM calendar_people WHERE 1", []
        if name:
            sql += " AND instr(lower(name), ?) > 0"
            params.append(name.strip().lower())
        if department:
            sql += " AND department = ?"
            params.append(department)
        return ok(people=self.rows(sql + " ORDER BY person_id", params))

    @read
    def list_rooms(
        self,
        building: Annotated[str | None, Param("only this building", enum=BUILDINGS)] = None,
        min_capacity: Annotated[int | None, Param("seats at least this many people")] = None,
        equipment: Annotated[
            list[str] | None, Param(f"must have all of these: {', '.join(EQUIPMENT)}")
        ] = None,
    ) -> dict[str, Any]:
        """Meeting rooms with capacity and equipment, by building and room id."""
        rooms = self._filter_rooms(building, min_capacity, equipment)
        return ok(total=len(rooms), rooms=rooms)

    def _filter_rooms(
        self, building: str | None, min_capacity: int | None, equipment: list[str] | None
    ) -> list[dict[str, Any]]:
        wanted = set(equipment or [])
        unknown = sorted(wanted - set(EQUIPMENT))
        if unknown:
            raise bad_request(f"unknown equipment {unknown}; expected some of {list(EQUIPMENT)}")
        if min_capacity is not None:
            check_range("min_capacity", min_capacity, 1)
        sql = "SELECT * FROM calendar_rooms WHERE capacity >= ?"
        params: list[Any] = [min_capacity or 1]
        if building is not None:
            sql += " AND building = ?"
            params.append(building)
        rows = [self._room_view(r) for r in self.rows(sql + " ORDER BY capacity, room_id", params)]
        return [r for r in rows if wanted <= set(r["equipment"])]

    @read
    def get_room(self, room_id: Annotated[str, Param("room id, e.g. A-301")]) -> dict[str, Any]:
        """One meeting room's details."""
        return ok(room=self._room_view(self._room(room_id)))

    @read
    def search_available_rooms(
        self,
        start_time: Annotated[str, Param("ISO 8601 start, e.g. 2024-01-03T10:00:00Z")],
        end_time: Annotated[str, Param("ISO 8601 end")],
        min_capacity: Annotated[int, Param("seats at least this many people")] = 1,
        equipment: Annotated[list[str] | None, Param("must have all of these")] = None,
        building: Annotated[str | None, Param("only this building", enum=BUILDINGS)] = None,
    ) -> dict[str, Any]:
        """Rooms with no booking overlapping the time window, smallest first."""
        start, end = _window(start_time, end_time)
        rooms = self._filter_rooms(building, min_capacity, equipment)
        free = [r for r in rooms if self._room_conflict(r["room_id"], start, end) is None]
        return ok(start_time=iso(start), end_time=iso(end), total=len(free), rooms=free)

    @read
    def get_room_schedule(
        self,
        room_id: Annotated[str, Param("room id")],
        date: Annotated[str, Param("day, YYYY-MM-DD")],
    ) -> dict[str, Any]:
        """The confirmed bookings of a room on one day."""
        self._room(room_id)
        day = parse_date("date", date)
        rows = self.rows(
            "SELECT booking_id, title, booked_by, start_at, end_at FROM calendar_bookings WHERE room_id = ?"
            " AND status = 'confirmed' AND start_at < ? AND end_at > ? ORDER BY start_at, booking_id",
            (
                room_id,
                iso(datetime.combine(day + timedelta(days=1), time())),
                iso(datetime.combine(day, time())),
            ),
        )
        return ok(room_id=room_id, date=day.isoformat(), bookings=rows)

    # ---- bookings --------------------------------------------------------------------------------
    @write
    def book_room(
        self,
        room_id: Annotated[str, Param("room id")],
        person_id: Annotated[str, Param("who books it")],
        start_time: Annotated[str, Param("ISO 8601 start")],
        end_time: Annotated[str, Param("ISO 8601 end")],
        title: Annotated[str, Param("what the room is for")] = "Meeting",
        attendee_count: Annotated[int, Param("how many people will use it")] = 1,
    ) -> dict[str, Any]:
        """Book a meeting room; fails with 409 if it is already booked in that window."""
        room = self._room(room_id)
        self._person(person_id)
        start, end = _window(start_time, end_time)
        check_range("attendee_count", attendee_count, 1)
        self._check_bookable(room, start, end, attendee_count)
        booking_id = self._insert_booking(room_id, person_id, title, start, end, attendee_count, None)
        return ok(
            booking_id=booking_id,
            room_id=room_id,
            room_name=room["name"],
            start_time=iso(start),
            end_time=iso(end),
            booking_status="confirmed",
        )

    @write
    def cancel_room_booking(
        self,
        booking_id: Annotated[str, Param("booking id, e.g. BKG-000123")],
        person_id: Annotated[str, Param("who cancels it; must be the person who booked it")],
    ) -> dict[str, Any]:
        """Cancel a room booking that has not ended yet; the room becomes free again."""
        b = self.get_or_404("calendar_bookings", "booking_id", booking_id, what="booking")
        self._person(person_id)
        if b["booked_by"] != person_id:
            raise AppError(403, f"booking {booking_id} was made by {b['booked_by']}")
        if b["status"] == "cancelled":
            raise conflict(f"booking {booking_id} is already cancelled")
        if datetime.fromisoformat(b["end_at"]) <= app_now(self):
            raise conflict(f"booking {booking_id} is over and cannot be cancelled")
        self.execute("UPDATE calendar_bookings SET status = 'cancelled' WHERE booking_id = ?", (booking_id,))
        if b["event_id"] is not None:
            # the event stays on the calendar without a room
            self.execute(
                "UPDATE calendar_events SET booking_id = NULL, location = '', updated_at = ?"
                " WHERE event_id = ?",
                (iso(app_now(self)), b["event_id"]),
            )
        return ok(booking_id=booking_id, booking_status="cancelled")

    @read
    def list_my_bookings(
        self,
        person_id: Annotated[str, Param("person id")],
        status: Annotated[str | None, Param("only this status", enum=BOOKING_STATUSES)] = "confirmed",
        include_past: Annotated[bool, Param("also bookings that have ended")] = False,
    ) -> dict[str, Any]:
        """Room bookings made by a person, soonest first."""
        self._person(person_id)
        sql, params = "SELECT * FROM calendar_bookings WHERE booked_by = ?", [person_id]
        if status is not None:
            sql += " AND status = ?"
            params.append(status)
        if not include_past:
            sql += " AND end_at > ?"
            params.append(iso(app_now(self)))
        return ok(bookings=self.rows(sql + " ORDER BY start_at, booking_id", params))

    # ---- events ------------------------------------------------------------------------------------
    @write
    def create_event(
        self,
        organizer_id: Annotated[str, Param("person id of the organizer")],
        title: Annotated[str, Param("event title")],
        start_time: Annotated[str, Param("ISO 8601 start")],
        end_time: Annotated[str, Param("ISO 8601 end")],
        attendee_ids: Annotated[list[str] | None, Param("person ids to invite")] = None,
        room_id: Annotated[str | None, Param("a room to book for the event (checked for conflicts)")] = None,
        location: Annotated[str, Param("free-text location; default: the room's name")] = "",
        description: Annotated[str, Param("agenda or notes")] = "",
    ) -> dict[str, Any]:
        """Create a calendar event, invite attendees and optionally book a room for it."""
        self._person(organizer_id)
        if not title.strip():
            raise bad_request("title must not be empty")
        start, end = _window(start_time, end_time)
        guests = list(dict.fromkeys(a for a in attendee_ids or [] if a != organizer_id))
        for g in guests:
            self._person(g)
        event_id, now = self.next_id("EVT"), iso(app_now(self))
        booking_id = None
        if room_id is not None:
            room = self._room(room_id)
            self._check_bookable(room, start, end, len(guests) + 1)
            booking_id = self._insert_booking(
                room_id, organizer_id, title, start, end, len(guests) + 1, event_id
            )
            location = location or room["name"]
        self.execute(
            "INSERT INTO calendar_events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                event_id,
                organizer_id,
                title,
                description,
                iso(start),
                iso(end),
                location,
                booking_id,
                now,
                now,
            ),
        )
        self.execute("INSERT INTO calendar_attendees VALUES (?, ?, 'accepted')", (event_id, organizer_id))
        for g in guests:
            self.execute("INSERT INTO calendar_attendees VALUES (?, ?, 'needs_action')", (event_id, g))
        return ok(event_id=event_id, booking_id=booking_id, event=self._event_view(self._event(event_id)))

    @read
    def get_event(self, event_id: Annotated[str, Param("event id, e.g. EVT-000042")]) -> dict[str, Any]:
        """An event with its attendees and their answers."""
        return ok(event=self._event_view(self._event(event_id)))

    @write
    def update_event(
        self,
        event_id: Annotated[str, Param("event id")],
        title: Annotated[str | None, Param("new title")] = None,
        start_time: Annotated[str | None, Param("new ISO 8601 start")] = None,
        end_time: Annotated[str | None, Param("new ISO 8601 end")] = None,
        location: Annotated[str | None, Param("new location")] = None,
        description: Annotated[str | None, Param("new description")] = None,
        add_attendee_ids: Annotated[list[str] | None, Param("people to invite")] = None,
        remove_attendee_ids: Annotated[list[str] | None, Param("people to uninvite")] = None,
    ) -> dict[str, Any]:
        """Change an event. A new time moves its room booking too (409 if the room is taken then)."""
        e = self._event(event_id)
        start = parse_time("start_time", start_time) if start_time else datetime.fromisoformat(e["start_at"])
        end = parse_time("end_time", end_time) if end_time else datetime.fromisoformat(e["end_at"])
        if end <= start:
            raise bad_request("end_time must be after start_time")
        if title is not None and not title.strip():
            raise bad_request("title must not be empty")
        moved = iso(start) != e["start_at"] or iso(end) != e["end_at"]
        for pid in add_attendee_ids or []:
            self._person(pid)
        removing = set(remove_attendee_ids or [])
        if e["organizer_id"] in removing:
            raise unprocessable("the organizer cannot be removed from their own event")
        for pid in sorted(removing):
            if (
                self.scalar(
                    "SELECT 1 FROM calendar_attendees WHERE event_id = ? AND person_id = ?", (event_id, pid)
                )
                is None
            ):
                raise not_found("attendee", pid)
            self.execute(
                "DELETE FROM calendar_attendees WHERE event_id = ? AND person_id = ?", (event_id, pid)
            )
        for pid in add_attendee_ids or []:
            self.execute(
                "INSERT OR IGNORE INTO calendar_attendees VALUES (?, ?, 'needs_action')", (event_id, pid)
            )
        if moved:
            # a new time is a new question: everyone but the organizer answers again
            self.execute(
                "UPDATE calendar_attendees SET response = 'needs_action'"
                " WHERE event_id = ? AND person_id != ?",
                (event_id, e["organizer_id"]),
            )
        if e["booking_id"] is not None:
            b = self.get_or_404("calendar_bookings", "booking_id", e["booking_id"], what="booking")
            people = int(
                self.scalar("SELECT count(*) FROM calendar_attendees WHERE event_id = ?", (event_id,))
            )
            if moved or people != b["attendee_count"]:
                self._check_bookable(
                    self._room(b["room_id"]), start, end, people, ignore_booking=b["booking_id"]
                )
                self.execute(
                    "UPDATE calendar_bookings SET start_at = ?, end_at = ?, attendee_count = ?, title = ?"
                    " WHERE booking_id = ?",
                    (iso(start), iso(end), people, title or e["title"], b["booking_id"]),
                )
        self.execute(
            "UPDATE calendar_events SET title = ?, description = ?, location = ?, start_at = ?, end_at = ?,"
            " updated_at = ? WHERE event_id = ?",
            (
                title if title is not None else e["title"],
                description if description is not None else e["description"],
                location if location is not None else e["location"],
                iso(start),
                iso(end),
                iso(app_now(self)),
                event_id,
            ),
        )
        return ok(event=self._event_view(self._event(event_id)))

    @write
    def delete_event(self, event_id: Annotated[str, Param("event id")]) -> dict[str, Any]:
        """Delete an event for everyone; its room booking is cancelled."""
        e = self._event(event_id)
        if e["booking_id"] is not None:
            self.execute(
                "UPDATE calendar_bookings SET status = 'cancelled' WHERE booking_id = ?", (e["booking_id"],)
            )
        self.execute("DELETE FROM calendar_attendees WHERE event_id = ?", (event_id,))
        self.execute("DELETE FROM calendar_events WHERE event_id = ?", (event_id,))
        return ok(event_id=event_id, deleted=True, cancelled_booking_id=e["booking_id"])

    @write
    def respond_to_event(
        self,
        event_id: Annotated[str, Param("event id")],
        person_id: Annotated[str, Param("the invited person")],
        response: Annotated[str, Param("the answer", enum=RESPONSES)],
    ) -> dict[str, Any]:
        """Accept, decline or tentatively accept an invitation."""
        e = self._event(event_id)
        self._person(person_id)
        if person_id == e["organizer_id"]:
            raise unprocessable("the organizer does not answer their own invitation")
        if (
            self.scalar(
                "SELECT 1 FROM calendar_attendees WHERE event_id = ? AND person_id = ?", (event_id, person_id)
            )
            is None
        ):
            raise AppError(403, f"{person_id} is not invited to {event_id}")
        self.execute(
            "UPDATE calendar_attendees SET response = ? WHERE event_id = ? AND person_id = ?",
            (response, event_id, person_id),
        )
        return ok(event_id=event_id, person_id=person_id, response=response)

    @read
    def list_events(
        self,
        person_id: Annotated[str, Param("whose calendar")],
        start_time: Annotated[str, Param("range start, ISO 8601")],
        end_time: Annotated[str, Param("range end, ISO 8601 (at most 62 days after the start)")],
    ) -> dict[str, Any]:
        """Events a person organizes or is invited to that overlap the range, in time order."""
        self._person(person_id)
        start, end = _window(start_time, end_time)
        if end - start > MAX_RANGE:
            raise bad_request("the range may span at most 62 days")
        rows = self.rows(
            "SELECT e.event_id, e.title, e.start_at AS start_time, e.end_at AS end_time, e.location,"
            " e.organizer_id, a.response FROM calendar_events e JOIN calendar_attendees a USING (event_id)"
            " WHERE a.person_id = ? AND e.start_at < ? AND e.end_at > ? ORDER BY e.start_at, e.event_id",
            (person_id, iso(end), iso(start)),
        )
        return ok(person_id=person_id, total=len(rows), events=rows)

    @read
    def find_common_free_slot(
        self,
        person_ids: Annotated[list[str], Param("everyone who must attend")],
        date: Annotated[str, Param("day, YYYY-MM-DD")],
        duration_minutes: Annotated[int, Param("length of the meeting, 15-480")],
        day_start: Annotated[str, Param("start of the working window, HH:MM (UTC)")] = "09:00",
        day_end: Annotated[str, Param("end of the working window, HH:MM (UTC)")] = "18:00",
    ) -> dict[str, Any]:
        """The free windows on a day when none of the people has an event they have not declined,
        and the earliest slot of the requested length (null if there is none)."""
        if not person_ids:
            raise bad_request("person_ids must not be empty")
        for pid in person_ids:
            self._person(pid)
        check_range("duration_minutes", duration_minutes, 15, 480)
        day = parse_date("date", date)
        lo = utc(datetime.combine(day, _clock_time("day_start", day_start)))
        hi = utc(datetime.combine(day, _clock_time("day_end", day_end)))
        if hi <= lo:
            raise bad_request("day_end must be after day_start")
        lo = max(lo, app_now(self))  # no slots in the past
        need = timedelta(minutes=duration_minutes)
        windows: list[tuple[datetime, datetime]] = []
        cursor = lo
        for s, e in self._busy(list(dict.fromkeys(person_ids)), lo, hi):
            if s > cursor:
                windows.append((cursor, min(s, hi)))
            cursor = max(cursor, e)
        if cursor < hi:
            windows.append((cursor, hi))
        fitting = [(s, e) for s, e in windows if e - s >= need]
        earliest = (
            None if not fitting else {"start_time": iso(fitting[0][0]), "end_time": iso(fitting[0][0] + need)}
        )
        return ok(
            date=day.isoformat(),
            person_ids=person_ids,
            duration_minutes=duration_minutes,
            free_windows=[{"start_time": iso(s), "end_time": iso(e)} for s, e in windows if e > s],
            earliest_slot=earliest,
        )
