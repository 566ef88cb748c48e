"""MTU appointments: FindProvider and BookAppointment (SGD dentists, doctors, hair stylists and
therapists: one API each, in four variants) and the user's schedule: get_user_appointments,
set_appointment_reminder, delete_appointment, change_appointment (generated APIs).

Providers work Monday to Saturday in half-hour slots between their opening hours; a slot holds
one appointment (409 when taken, 422 outside hours or in the past). A booking lands in the
user's schedule, where it can be found, moved (its provider's slot must be free) or cancelled;
reminders fire a given time before an appointment and go with it when it is cancelled.
"""

from __future__ import annotations

import random
import re
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Volatile, format_id, read, set_counter, write
from toolgym.mocks.apps.mtu._common import (
    CITIES,
    DONTCARE,
    FIRST_NAMES,
    LAST_NAMES,
    PARTS_OF_DAY,
    STREETS,
    Flag,
    canon,
    finalize_tools,
    flag,
    minutes,
    one_of,
    parse_clock,
    parse_day,
    phone,
    require_city,
    street_address,
    words_in,
)
from toolgym.mocks.responses import bad_request, conflict, not_found, ok, unprocessable
from toolgym.mocks.seeding import insert_rows, person_name
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

SPECIALTIES: Final = {
    "doctor": (
        "General Practitioner",
        "Cardiologist",
        "Dermatologist",
        "Gynecologist",
        "Pediatrician",
        "Ophthalmologist",
        "ENT Specialist",
        "Orthopedist",
    ),
    "therapist": ("Psychologist", "Psychiatrist", "Family Counselor"),
    "dentist": ("Dentist",),
    "stylist": ("Hair Stylist",),
}
KIND_WORDS: Final = {
    "doctor": "doctor",
    "physician": "doctor",
    "medical": "doctor",
    "therapist": "therapist",
    "therapy": "therapist",
    "counselor": "therapist",
    "dentist": "dentist",
    "dental": "dentist",
    "stylist": "stylist",
    "hair stylist": "stylist",
    "hairdresser": "stylist",
    "salon": "stylist",
    "barber": "stylist",
}
NAME_FIELD: Final = {
    "doctor": "doctor_name",
    "therapist": "therapist_name",
    "dentist": "dentist_name",
    "stylist": "stylist_name",
}
SALON_WORDS: Final = ("Atelier", "Bespoke", "Shear", "Mane", "Urban", "Velvet", "Willow", "Crown")
SALON_KINDS: Final = ("Salon", "Hair Studio", "Barber Shop", "Hair Lounge")
APPOINTMENT_NAMES: Final = (
    ("Team meeting", "work meeting"),
    ("Annual Conference", "work meeting"),
    ("Business Trip to San Francisco", "travel"),
    ("Go to swim", "personal"),
    ("Car service", "personal"),
    ("Parent-teacher meeting", "personal"),
    ("Yoga class", "personal"),
    ("Project review", "work meeting"),
)
BEFORE: Final = re.compile(
    r"^(\d+|an?|one|two|three|half an?)\s*(minute|min|hour|day)s?\s+(before|earlier|prior)$"
)


class AppointmentsApp(App):
    name = "mtu_appointments"
    description = (
        "Find doctors, dentists, stylists and therapists, book them, and manage the user's appointments."
    )
    version = "1"
    schema = """
    CREATE TABLE mtu_appointments_providers (
        provider_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('doctor', 'therapist', 'dentist', 'stylist')),
        specialty TEXT NOT NULL,
        city TEXT NOT NULL,
        street_address TEXT NOT NULL,
        phone_number TEXT NOT NULL,
        average_rating REAL NOT NULL,
        offers_cosmetic_services INTEGER,
        is_unisex INTEGER,
        opens TEXT NOT NULL,
        closes TEXT NOT NULL
    );
    CREATE INDEX mtu_appointments_providers_city ON mtu_appointments_providers(city, kind);
    CREATE TABLE mtu_appointments_appointments (
        appointment_id TEXT PRIMARY KEY,
        owner TEXT NOT NULL CHECK (owner IN ('user', 'other')),
        provider_id TEXT REFERENCES mtu_appointments_providers(provider_id),
        appointment_name TEXT NOT NULL,
        appointment_type TEXT NOT NULL,
        appointment_date TEXT NOT NULL,
        appointment_time TEXT NOT NULL,
        appointment_address TEXT NOT NULL,
        information TEXT,
        status TEXT NOT NULL CHECK (status IN ('scheduled', 'cancelled'))
    );
    CREATE INDEX mtu_appointments_slot ON mtu_appointments_appointments(provider_id, appointment_date);
    CREATE TABLE mtu_appointments_reminders (
        reminder_id TEXT PRIMARY KEY,
        appointment_id TEXT REFERENCES mtu_appointments_appointments(appointment_id),
        appointment_name TEXT NOT NULL,
        appointment_date TEXT NOT NULL,
        appointment_time TEXT NOT NULL,
        appointment_address TEXT NOT NULL,
        reminder_time TEXT NOT NULL,
        offset_minutes INTEGER,
        remind_at TEXT NOT NULL,
        information TEXT
    );
    """
    volatile: ClassVar[Volatile] = {}

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        providers: list[dict[str, Any]] = []
        names: set[str] = set()
        for city in CITIES:
            for kind, specialties in sorted(SPECIALTIES.items()):
                for specialty in specialties:
                    for _ in range(
                        rng.randint(2, 4) if kind in ("dentist", "stylist") else rng.randint(0, 2)
                    ):
                        for _ in range(10):  # a few tries for a name nobody else has
                            if kind == "stylist":
                                name = f"{rng.choice(SALON_WORDS)} {rng.choice(SALON_KINDS)} {rng.choice(STREETS).split()[0]}"
                            else:
                                name = "Dr. " + person_name(rng, FIRST_NAMES, LAST_NAMES)
                            if name not in names:
                                break
                        if name in names:
                            continue
                        names.add(name)
                        providers.append(
                            {
                                "provider_id": format_id("PRV", len(providers) + 1, 4),
                                "name": name,
                                "kind": kind,
                                "specialty": specialty,
                                "city": city.name,
                                "street_address": f"{street_address(rng)}, {city.name}",
                                "phone_number": phone(rng),
                                "average_rating": round(rng.uniform(3.0, 5.0), 1),
                                "offers_cosmetic_services": int(rng.random() < 0.5)
                                if kind == "dentist"
                                else None,
                                "is_unisex": int(rng.random() < 0.6) if kind == "stylist" else None,
                                "opens": rng.choice(("08:00", "09:00", "10:00")),
                                "closes": rng.choice(("16:00", "17:00", "18:00", "19:00")),
                            }
                        )
        insert_rows(db, "mtu_appointments_providers", providers)
        today = clock.date()
        appointments: list[dict[str, Any]] = []
        taken: set[tuple[str, str, str]] = set()
        for _ in range(1500):  # other patients and clients fill some slots
            p = rng.choice(providers)
            day = today + timedelta(days=rng.randint(0, 30))
            slot = minutes(p["opens"]) + 30 * rng.randint(
                0, (minutes(p["closes"]) - minutes(p["opens"])) // 30 - 1
            )
            at = f"{slot // 60:02d}:{slot % 60:02d}"
            if day.weekday() == 6 or (p["provider_id"], day.isoformat(), at) in taken:
                continue
            taken.add((p["provider_id"], day.isoformat(), at))
            appointments.append(self._seed_row(len(appointments) + 1, "other", p, day, at))
        for _ in range(12):  # the user's own bookings with providers
            p = rng.choice(providers)
            day = today + timedelta(days=rng.randint(1, 40))
            at = f"{rng.randint(minutes(p['opens']) // 60, minutes(p['closes']) // 60 - 1):02d}:00"
            if day.weekday() == 6 or (p["provider_id"], day.isoformat(), at) in taken:
                continue
            taken.add((p["provider_id"], day.isoformat(), at))
            appointments.append(self._seed_row(len(appointments) + 1, "user", p, day, at))
        for name, kind in APPOINTMENT_NAMES:  # and things that are not with a provider
            for _ in range(rng.randint(1, 3)):
                day = today + timedelta(days=rng.randint(0, 45))
                appointments.append(
                    {
                        "appointment_id": format_id("APT", len(appointments) + 1),
                        "owner": "user",
                        "provider_id": None,
                        "appointment_name": name,
                        "appointment_type": kind,
                        "appointment_date": day.isoformat(),
                        "appointment_time": f"{rng.randint(8, 19):02d}:{rng.choice(('00', '30'))}",
                        "appointment_address": f"{street_address(rng)}, {rng.choice(CITIES).name}",
                        "information": None,
                        "status": "scheduled",
                    }
                )
        insert_rows(db, "mtu_appointments_appointments", appointments)
        set_counter(db, "APT", len(appointments))
        set_counter(db, "REM", 0)

    @staticmethod
    def _seed_row(n: int, owner: str, p: dict[str, Any], day: date, at: str) -> dict[str, Any]:
        return {
            "appointment_id": format_id("APT", n),
            "owner": owner,
            "provider_id": p["provider_id"],
            "appointment_name": f"{p['specialty']} appointment with {p['name']}",
            "appointment_type": p["kind"],
            "appointment_date": day.isoformat(),
            "appointment_time": at,
            "appointment_address": p["street_address"],
            "information": None,
            "status": "scheduled",
        }

    # ---- providers -----------------------------------------------------------------------------
    @staticmethod
    def _provider_view(p: dict[str, Any]) -> dict[str, Any]:
        out = {
            NAME_FIELD[p["kind"]]: p["name"],
            "provider_name": p["name"],
            "type": p["specialty"],
            "city": p["city"],
            "street_address": p["street_address"],
            "address": p["street_address"],
            "phone_number": p["phone_number"],
            "average_rating": p["average_rating"],
            "opening_hours": f"{p['opens']}-{p['closes']}, Monday to Saturday",
        }
        if p["offers_cosmetic_services"] is not None:
            out["offers_cosmetic_services"] = bool(p["offers_cosmetic_services"])
        if p["is_unisex"] is not None:
            out["is_unisex"] = bool(p["is_unisex"])
        return out

    @staticmethod
    def _type_matches(wanted: str, p: dict[str, Any]) -> bool:
        key = canon(wanted)
        kind = KIND_WORDS.get(key) or KIND_WORDS.get(key.rstrip("s"))
        if kind is not None:
            return bool(p["kind"] == kind)
        # "Cardiology" finds a Cardiologist, "dermatologist" a Dermatologist
        return canon(p["specialty"])[:6] == key[:6] and len(key) >= 6

    @read(name="FindProvider")
    def find_provider(
        self,
        city: Annotated[str, Param("city")],
        type: Annotated[
            str | None, Param("kind or specialty: dentist, hair stylist, cardiologist, psychologist")
        ] = None,
        offers_cosmetic_services: Annotated[Flag, Param("dentists: True, False or dontcare")] = DONTCARE,
        is_unisex: Annotated[Flag, Param("hair stylists: True, False or dontcare")] = DONTCARE,
    ) -> dict[str, Any]:
        """Find a dentist, doctor, hair stylist or therapist in a city; best rated first."""
        town = require_city("city", city)
        rows = self.rows(
            "SELECT * FROM mtu_appointments_providers WHERE city = ? ORDER BY average_rating DESC, provider_id",
            (town,),
        )
        if type is not None and canon(type) != DONTCARE:
            rows = [r for r in rows if self._type_matches(type, r)]
        cosmetic = flag("offers_cosmetic_services", offers_cosmetic_services)
        if cosmetic is not None:
            rows = [
                r for r in rows if r["kind"] == "dentist" and bool(r["offers_cosmetic_services"]) == cosmetic
            ]
        unisex = flag("is_unisex", is_unisex)
        if unisex is not None:
            rows = [r for r in rows if r["kind"] == "stylist" and bool(r["is_unisex"]) == unisex]
        found = [self._provider_view(r) for r in rows]
        return ok(count=len(found), providers=found[:10])

    def _slot_free(self, provider_id: str, day: str, at: str, ignore: str | None = None) -> bool:
        clash = self.scalar(
            "SELECT count(*) FROM mtu_appointments_appointments WHERE provider_id = ? AND appointment_date = ?"
            " AND appointment_time = ? AND status = 'scheduled' AND appointment_id IS NOT ?",
            (provider_id, day, at, ignore),
        )
        return int(clash) == 0

    def _check_slot(self, p: dict[str, Any], day: date, at: str, ignore: str | None = None) -> None:
        now = self.now()
        if (day.isoformat(), at) < (now.date().isoformat(), f"{now.hour:02d}:{now.minute:02d}"):
            raise unprocessable(f"{day.isoformat()} {at} is in the past")
        if day.weekday() == 6:
            raise unprocessable(f"{p['name']} is closed on Sundays")
        if not minutes(p["opens"]) <= minutes(at) < minutes(p["closes"]) or minutes(at) % 30:
            raise unprocessable(
                f"{p['name']} sees people on the hour and half hour from {p['opens']} to {p['closes']}"
            )
        if not self._slot_free(p["provider_id"], day.isoformat(), at, ignore):
            raise conflict(f"{p['name']} is already booked on {day.isoformat()} at {at}")

    @write(name="BookAppointment")
    def book_appointment(
        self,
        appointment_date: Annotated[str, Param("date YYYY-MM-DD")],
        appointment_time: Annotated[str, Param("time HH:MM")],
        doctor_name: Annotated[
            str | None, Param("the doctor (or dentist_name, stylist_name, therapist_name)")
        ] = None,
        stylist_name: Annotated[str | None, Param("the hair stylist")] = None,
        therapist_name: Annotated[str | None, Param("the therapist")] = None,
        dentist_name: Annotated[str | None, Param("the dentist")] = None,
    ) -> dict[str, Any]:
        """Book an appointment with a doctor, dentist, hair stylist or therapist."""
        field, who = one_of(
            {
                "doctor_name": doctor_name,
                "dentist_name": dentist_name,
                "stylist_name": stylist_name,
                "therapist_name": therapist_name,
            },
            "BookAppointment: who with",
        )
        kind = field.removesuffix("_name")
        p = self.row(
            "SELECT * FROM mtu_appointments_providers WHERE lower(name) = ? AND kind = ? ORDER BY provider_id",
            (canon(str(who)), kind),
        )
        if p is None:
            raise not_found(kind, who)
        day = parse_day("appointment_date", appointment_date, self.now().date())
        at = parse_clock("appointment_time", appointment_time)
        self._check_slot(p, day, at)
        appointment_id = self.next_id("APT")
        name = f"{p['specialty']} appointment with {p['name']}"
        self.execute(
            "INSERT INTO mtu_appointments_appointments VALUES (?, 'user', ?, ?, ?, ?, ?, ?, NULL, 'scheduled')",
            (appointment_id, p["provider_id"], name, kind, day.isoformat(), at, p["street_address"]),
        )
        return ok(
            appointment_id=appointment_id,
            appointment_name=name,
            appointment_date=day.isoformat(),
            appointment_time=at,
            **self._provider_view(p),
        )

    # ---- the user's schedule -----------------------------------------------------------------------
    @staticmethod
    def _view(a: dict[str, Any]) -> dict[str, Any]:
        return {
            "appointment_id": a["appointment_id"],
            "appointment_name": a["appointment_name"],
            "appointment_type": a["appointment_type"],
            "appointment_date": a["appointment_date"],
            "appointment_time": a["appointment_time"],
            "appointment_address": a["appointment_address"],
            "appointment_information": a["information"],
        }

    def _mine(self, name: str | None, day: str | None, at: str | None) -> list[dict[str, Any]]:
        rows = self.rows(
            "SELECT * FROM mtu_appointments_appointments WHERE owner = 'user' AND status = 'scheduled'"
            " ORDER BY appointment_date, appointment_time, appointment_id"
        )
        if name:
            rows = [
                r
                for r in rows
                if words_in(name, r["appointment_name"]) or words_in(name, r["appointment_type"])
            ]
        if day:
            iso = parse_day("appointment_date", day, self.now().date()).isoformat()
            rows = [r for r in rows if r["appointment_date"] == iso]
        if at:
            clock_time = parse_clock("appointment_time", at)
            rows = [r for r in rows if r["appointment_time"] == clock_time]
        return rows

    def _only(self, name: str | None, day: str | None, at: str | None) -> dict[str, Any]:
        if not (name or day or at):
            raise bad_request("say which appointment: its name, date or time")
        rows = self._mine(name, day, at)
        if not rows:
            raise not_found("appointment", {"name": name, "date": day, "time": at})
        if len(rows) > 1:
            raise conflict(
                f"{len(rows)} appointments match; say which one", appointments=[self._view(r) for r in rows]
            )
        return rows[0]

    @read(name="get_user_appointments")
    def get_user_appointments(
        self,
        date: Annotated[str | None, Param("only this date, YYYY-MM-DD")] = None,
        name: Annotated[str | None, Param("words in the appointment's name")] = None,
        type: Annotated[str | None, Param("kind: dentist, doctor, work meeting, ...")] = None,
        time_range: Annotated[str | None, Param("morning, afternoon or evening")] = None,
    ) -> dict[str, Any]:
        """The user's scheduled appointments, soonest first, filtered by date, name, type and time of day."""
        rows = self._mine(name, date, None)
        if type:
            rows = [
                r
                for r in rows
                if canon(type) in (canon(r["appointment_type"]), *canon(r["appointment_name"]).split(" "))
            ]
        if time_range:
            part = canon(time_range)
            if part not in PARTS_OF_DAY:
                raise bad_request(f"time_range must be one of {list(PARTS_OF_DAY)}, got {time_range!r}")
            lo, hi = PARTS_OF_DAY[part]
            rows = [r for r in rows if lo <= minutes(r["appointment_time"]) < hi]
        views = [self._view(r) for r in rows]
        first = {k: v for k, v in views[0].items() if k != "appointment_id"} if views else {}
        return ok(count=len(views), appointments=views, **first)

    def _remind_at(self, reminder_time: str, day: str, at: str) -> tuple[datetime, int | None]:
        start = datetime.fromisoformat(f"{day}T{at}:00").replace(tzinfo=self.now().tzinfo)
        text = canon(reminder_time)
        if text in ("the day before", "a day before", "day before"):
            return start - timedelta(days=1), 24 * 60
        found = BEFORE.match(text)
        if found:
            amount = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3}.get(found.group(1))
            unit = {"minute": 1, "min": 1, "hour": 60, "day": 24 * 60}[found.group(2)]
            offset = 30 if found.group(1).startswith("half") else (amount or int(found.group(1))) * unit
            return start - timedelta(minutes=offset), offset
        clock_time = parse_clock("reminder_time", reminder_time)
        return datetime.fromisoformat(f"{day}T{clock_time}:00").replace(tzinfo=self.now().tzinfo), None

    @write(name="set_appointment_reminder")
    def set_appointment_reminder(
        self,
        appointment_name: Annotated[str, Param("what the appointment is")],
        appointment_date: Annotated[str, Param("date YYYY-MM-DD")],
        appointment_time: Annotated[str, Param("time HH:MM")],
        appointment_address: Annotated[str, Param("where it is")],
        reminder_time: Annotated[str, Param("when to remind: '2 hours before', '1 day before' or HH:MM")],
        appointment_information: Annotated[str | None, Param("notes for the reminder")] = None,
    ) -> dict[str, Any]:
        """Create a reminder for an appointment."""
        day = parse_day("appointment_date", appointment_date, self.now().date()).isoformat()
        at = parse_clock("appointment_time", appointment_time)
        remind_at, offset = self._remind_at(reminder_time, day, at)
        start = datetime.fromisoformat(f"{day}T{at}:00").replace(tzinfo=self.now().tzinfo)
        if remind_at > start:
            raise unprocessable("the reminder would fire after the appointment starts")
        if remind_at <= self.now():
            raise unprocessable(f"the reminder time {remind_at.isoformat()} has already passed")
        linked = self.row(
            "SELECT appointment_id FROM mtu_appointments_appointments WHERE owner = 'user' AND status = 'scheduled'"
            " AND appointment_date = ? AND appointment_time = ? ORDER BY appointment_id",
            (day, at),
        )
        appointment_id = linked["appointment_id"] if linked else None
        dup = self.row(
            "SELECT reminder_id FROM mtu_appointments_reminders WHERE appointment_date = ? AND appointment_time = ?"
            " AND remind_at = ? AND lower(appointment_name) = ?",
            (day, at, remind_at.isoformat(), canon(appointment_name)),
        )
        if dup is not None:
            raise conflict(f"that reminder exists already ({dup['reminder_id']})")
        reminder_id = self.next_id("REM")
        self.execute(
            "INSERT INTO mtu_appointments_reminders VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                reminder_id,
                appointment_id,
                appointment_name,
                day,
                at,
                appointment_address,
                reminder_time,
                offset,
                remind_at.isoformat(),
                appointment_information,
            ),
        )
        return ok(
            reminder_id=reminder_id,
            appointment_id=appointment_id,
            appointment_name=appointment_name,
            appointment_date=day,
            appointment_time=at,
            appointment_address=appointment_address,
            remind_at=remind_at.isoformat(),
        )

    @write(name="delete_appointment")
    def delete_appointment(
        self,
        appointment_name: Annotated[str | None, Param("what the appointment is")] = None,
        appointment_date: Annotated[str | None, Param("its date, YYYY-MM-DD")] = None,
        appointment_time: Annotated[str | None, Param("its time, HH:MM")] = None,
    ) -> dict[str, Any]:
        """Cancel one appointment from the user's schedule (its reminders go with it)."""
        a = self._only(appointment_name, appointment_date, appointment_time)
        self.execute(
            "UPDATE mtu_appointments_appointments SET status = 'cancelled' WHERE appointment_id = ?",
            (a["appointment_id"],),
        )
        self.execute(
            "DELETE FROM mtu_appointments_reminders WHERE appointment_id = ?", (a["appointment_id"],)
        )
        return ok(
            deletion_status=f"cancelled {a['appointment_name']} on {a['appointment_date']} at {a['appointment_time']}",
            **self._view(a),
        )

    @write(name="change_appointment")
    def change_appointment(
        self,
        appointment_name: Annotated[str | None, Param("what the appointment is")] = None,
        appointment_date: Annotated[str | None, Param("its date, YYYY-MM-DD")] = None,
        appointment_time: Annotated[str | None, Param("its time, HH:MM")] = None,
        new_appointment_name: Annotated[str | None, Param("new name")] = None,
        new_appointment_date: Annotated[str | None, Param("new date, YYYY-MM-DD")] = None,
        new_appointment_time: Annotated[str | None, Param("new time, HH:MM")] = None,
        new_appointment_location: Annotated[str | None, Param("new address")] = None,
        new_appointment_information: Annotated[str | None, Param("new notes")] = None,
    ) -> dict[str, Any]:
        """Change an appointment's name, date, time, place or notes."""
        news = (
            new_appointment_name,
            new_appointment_date,
            new_appointment_time,
            new_appointment_location,
            new_appointment_information,
        )
        if not any(news):
            raise bad_request("change_appointment needs at least one new_appointment_* value")
        a = self._only(appointment_name, appointment_date, appointment_time)
        day = (
            parse_day("new_appointment_date", new_appointment_date, self.now().date())
            if new_appointment_date
            else date.fromisoformat(a["appointment_date"])
        )
        at = (
            parse_clock("new_appointment_time", new_appointment_time)
            if new_appointment_time
            else a["appointment_time"]
        )
        if a["provider_id"] is not None and (new_appointment_date or new_appointment_time):
            if new_appointment_location:
                raise unprocessable("an appointment with a provider is at the provider's address")
            p = self.get_or_404(
                "mtu_appointments_providers", "provider_id", a["provider_id"], what="provider"
            )
            self._check_slot(p, day, at, ignore=a["appointment_id"])
        elif (day.isoformat(), at) < (self.now().date().isoformat(), self.now().strftime("%H:%M")):
            raise unprocessable(f"{day.isoformat()} {at} is in the past")
        self.execute(
            "UPDATE mtu_appointments_appointments SET appointment_name = ?, appointment_date = ?, appointment_time = ?,"
            " appointment_address = ?, information = ? WHERE appointment_id = ?",
            (
                new_appointment_name or a["appointment_name"],
                day.isoformat(),
                at,
                new_appointment_location or a["appointment_address"],
                new_appointment_information or a["information"],
                a["appointment_id"],
            ),
        )
        # reminders set "N before" move with the appointment
        for r in self.rows(
            "SELECT * FROM mtu_appointments_reminders WHERE appointment_id = ? ORDER BY reminder_id",
            (a["appointment_id"],),
        ):
            start = datetime.fromisoformat(f"{day.isoformat()}T{at}:00").replace(tzinfo=self.now().tzinfo)
            remind_at = (
                start - timedelta(minutes=r["offset_minutes"]) if r["offset_minutes"] is not None else start
            )
            self.execute(
                "UPDATE mtu_appointments_reminders SET appointment_date = ?, appointment_time = ?, remind_at = ? WHERE reminder_id = ?",
                (day.isoformat(), at, remind_at.isoformat(), r["reminder_id"]),
            )
        updated = self.get_or_404("mtu_appointments_appointments", "appointment_id", a["appointment_id"])
        return ok(update_status=f"updated {updated['appointment_name']}", **self._view(updated))


finalize_tools(AppointmentsApp)
