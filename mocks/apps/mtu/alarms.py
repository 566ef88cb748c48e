"""MTU alarms: set_alarm, get_alarm, cancel_alarm, cancel_all_alarms, change_alarm_name,
change_alarm_time, change_alarm_sound, copy_alarm (generated APIs) and GetAlarms / AddAlarm (SGD).

The user's alarms: a time, a label, a recurrence (weekday names, "weekdays", "weekends",
"everyday" or dates; "today"/"tomorrow" become dates), a sound and a vibration level. An alarm is
found by any of time, label and recurrence (a "today" filter finds a Monday alarm on a Monday);
changes need exactly one match (several are a 409), and two alarms never share time and
recurrence (409).
"""

from __future__ import annotations

import json
import random
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Volatile, format_id, read, set_counter, write
from toolgym.mocks.apps.mtu._common import WEEKDAYS, canon, finalize_tools, parse_clock, parse_day
from toolgym.mocks.responses import bad_request, check_range, conflict, not_found, ok
from toolgym.mocks.seeding import insert_rows
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

DEFAULT_LABEL: Final = "My alarm"
SOUNDS: Final = ("Radar", "Chimes", "Birdsong", "Waves", "Beacon", "Classic Bell", "Sunrise")
GROUPS: Final = {
    "everyday": WEEKDAYS,
    "weekdays": WEEKDAYS[:5],
    "weekends": WEEKDAYS[5:],
}
GROUP_WORDS: Final = {
    "everyday": "everyday",
    "every day": "everyday",
    "daily": "everyday",
    "weekdays": "weekdays",
    "weekday": "weekdays",
    "workdays": "weekdays",
    "weekends": "weekends",
    "weekend": "weekends",
}
SEEDED: Final = (
    ("06:30", "Wake up", ["weekdays"]),
    ("07:00", DEFAULT_LABEL, ["everyday"]),
    ("07:30", "Gym", ["Monday", "Wednesday", "Friday"]),
    ("08:00", "Morning Workout", ["weekends"]),
    ("12:30", "Lunch", ["weekdays"]),
    ("15:00", "Pick up kids", ["Tuesday", "Thursday"]),
    ("19:00", "Take medicine", ["everyday"]),
    ("22:30", "Bedtime", ["everyday"]),
)


def _days(token: str) -> set[str]:
    """The weekdays a recurrence token covers (a date covers its own weekday)."""
    if token in GROUPS:
        return set(GROUPS[token])
    if token.lower() in WEEKDAYS:
        return {token.lower()}
    return {WEEKDAYS[date.fromisoformat(token).weekday()]}


def _token_order(token: str) -> tuple[int, str]:
    if token.lower() in WEEKDAYS:
        return 0, str(WEEKDAYS.index(token.lower()))
    return (1, token) if token in GROUPS else (2, token)


def _overlap(wanted: list[str], have: list[str]) -> bool:
    """Does an alarm with recurrence `have` ring on some day a filter `wanted` names?"""
    for w in wanted:
        for h in have:
            w_date, h_date = w[:1].isdigit(), h[:1].isdigit()
            if w_date and h_date:
                if w == h:
                    return True
            elif w_date:
                if WEEKDAYS[date.fromisoformat(w).weekday()] in _days(h):
                    return True
            elif h_date:
                if WEEKDAYS[date.fromisoformat(h).weekday()] in _days(w):
                    return True
            elif _days(w) & _days(h):
                return True
    return False


class AlarmsApp(App):
    name = "mtu_alarms"
    description = "The user's alarms: set, find, rename, retime, resound, copy and cancel (MTU-Bench)."
    version = "1"
    schema = """
    CREATE TABLE mtu_alarms_alarms (
        alarm_id TEXT PRIMARY KEY,
        time TEXT NOT NULL,
        label TEXT NOT NULL,
        recurrence TEXT NOT NULL,
        sound TEXT NOT NULL,
        vibrate INTEGER NOT NULL CHECK (vibrate BETWEEN 0 AND 10),
        created_at TEXT NOT NULL,
        UNIQUE (time, recurrence)
    );
    """
    volatile: ClassVar[Volatile] = {"mtu_alarms_alarms": ["created_at"]}

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        rows = [
            {
                "alarm_id": format_id("ALM", i, 4),
                "time": at,
                "label": label,
                "recurrence": json.dumps(recurrence),
                "sound": rng.choice(SOUNDS),
                "vibrate": rng.choice((0, 0, 3, 5)),
                "created_at": (clock - timedelta(days=rng.randint(5, 300))).isoformat(),
            }
            for i, (at, label, recurrence) in enumerate(SEEDED, 1)
        ]
        insert_rows(db, "mtu_alarms_alarms", rows)
        set_counter(db, "ALM", len(rows))

    # ---- helpers -------------------------------------------------------------------------------
    def _recurrence(self, param: str, values: tuple[str, ...] | None) -> list[str] | None:
        """Canonical tokens: weekday names capitalised, group words, and ISO dates."""
        if values is None:
            return None
        today = self.now().date()
        out: list[str] = []
        for v in values:
            key = canon(v)
            stem = key.removeprefix("every ").rstrip("s")
            weekday = next((d for d in WEEKDAYS if stem in (d, d[:3])), None)
            if key in GROUP_WORDS:
                token = GROUP_WORDS[key]
            elif weekday is not None:
                token = weekday.capitalize()
            else:
                token = parse_day(param, v, today).isoformat()
            if token not in out:
                out.append(token)
        if not out:
            raise bad_request(f"{param} must name at least one day")
        # one spelling per set of days, so that equal recurrences compare equal
        return sorted(out, key=_token_order)

    def _next_date(self, at: str) -> str:
        """A one-off alarm rings at its next occurrence: today if the time is still ahead."""
        now = self.now()
        day = now.date() if at > f"{now.hour:02d}:{now.minute:02d}" else now.date() + timedelta(days=1)
        return day.isoformat()

    def _find(self, at: str | None, label: str | None, recurrence: list[str] | None) -> list[dict[str, Any]]:
        rows = self.rows("SELECT * FROM mtu_alarms_alarms ORDER BY time, alarm_id")
        if at is not None:
            rows = [r for r in rows if r["time"] == at]
        if label is not None:
            rows = [r for r in rows if canon(r["label"]) == canon(label)]
        if recurrence is not None:
            rows = [r for r in rows if _overlap(recurrence, json.loads(r["recurrence"]))]
        return rows

    def _one(self, at: str | None, label: str | None, recurrence: list[str] | None) -> dict[str, Any]:
        if at is None and label is None and recurrence is None:
            raise bad_request("say which alarm: its time, label or recurrence")
        rows = self._find(at, label, recurrence)
        if not rows:
            raise not_found("alarm", {"time": at, "label": label, "recurrence": recurrence})
        if len(rows) > 1:
            raise conflict(f"{len(rows)} alarms match; say which one", alarms=[self._view(r) for r in rows])
        return rows[0]

    @staticmethod
    def _view(r: dict[str, Any]) -> dict[str, Any]:
        return {
            "alarm_id": r["alarm_id"],
            "time": r["time"],
            "label": r["label"],
            "recurrence": json.loads(r["recurrence"]),
            "sound": r["sound"],
            "vibrate": r["vibrate"],
        }

    def _clash(self, at: str, recurrence: list[str], ignore: str | None = None) -> None:
        found = self.row(
            "SELECT alarm_id, label FROM mtu_alarms_alarms WHERE time = ? AND recurrence = ? AND alarm_id IS NOT ?",
            (at, json.dumps(recurrence), ignore),
        )
        if found is not None:
            raise conflict(f"an alarm at {at} on {recurrence} exists already ({found['label']})")

    def _insert(self, at: str, label: str, recurrence: list[str], sound: str, vibrate: int) -> dict[str, Any]:
        check_range("vibrate", vibrate, 0, 10)
        self._clash(at, recurrence)
        alarm_id = self.next_id("ALM", 4)
        self.execute(
            "INSERT INTO mtu_alarms_alarms VALUES (?, ?, ?, ?, ?, ?, ?)",
            (alarm_id, at, label, json.dumps(recurrence), sound, vibrate, self.now_iso()),
        )
        return self._view(self.get_or_404("mtu_alarms_alarms", "alarm_id", alarm_id))

    # ---- generated APIs ------------------------------------------------------------------------
    @write(name="set_alarm")
    def set_alarm(
        self,
        time: Annotated[str, Param("when the alarm rings, HH:MM")],
        label: Annotated[str, Param("the alarm's name")] = DEFAULT_LABEL,
        recurrence: Annotated[
            tuple[str, ...] | None,
            Param("days: weekday names, everyday, weekdays, weekends, dates; none: once"),
        ] = None,
        sound: Annotated[str | None, Param("the sound to ring with")] = None,
        vibrate: Annotated[int, Param("vibration 0 (off) to 10")] = 0,
    ) -> dict[str, Any]:
        """Set a new alarm with a time, label, recurrence, sound and vibration."""
        at = parse_clock("time", time)
        days = self._recurrence("recurrence", recurrence) or [self._next_date(at)]
        alarm = self._insert(at, label, days, sound or SOUNDS[0], vibrate)
        return ok(**alarm)

    @read(name="get_alarm")
    def get_alarm(
        self,
        time: Annotated[str | None, Param("the alarm's time, HH:MM")] = None,
        label: Annotated[str | None, Param("the alarm's name")] = None,
        recurrence: Annotated[tuple[str, ...] | None, Param("days it rings on")] = None,
    ) -> dict[str, Any]:
        """The user's alarms matching time, label and recurrence (all alarms when none is given)."""
        rows = self._find(
            parse_clock("time", time) if time else None, label, self._recurrence("recurrence", recurrence)
        )
        details = [self._view(r) for r in rows]
        first = {k: details[0][k] for k in ("time", "label", "sound", "vibrate")} if details else {}
        return ok(count=len(details), alarm_details=details, **first)

    @write(name="cancel_all_alarms")
    def cancel_all_alarms(self) -> dict[str, Any]:
        """Cancel every alarm."""
        n = int(self.scalar("SELECT count(*) FROM mtu_alarms_alarms"))
        self.execute("DELETE FROM mtu_alarms_alarms")
        return ok(cancelled=n)

    @write(name="cancel_alarm")
    def cancel_alarm(
        self,
        recurrence: Annotated[tuple[str, ...], Param("days whose alarms to cancel")] = ("today",),
        time: Annotated[str | None, Param("the alarm's time, HH:MM")] = None,
        label: Annotated[str, Param("the alarm's name")] = DEFAULT_LABEL,
    ) -> dict[str, Any]:
        """Cancel the alarms that ring at a time on the given days."""
        # the default label names no particular alarm: only a label the user gave filters
        rows = self._find(
            parse_clock("time", time) if time else None,
            None if label == DEFAULT_LABEL else label,
            self._recurrence("recurrence", recurrence),
        )
        if not rows:
            raise not_found("alarm", {"time": time, "label": label, "recurrence": list(recurrence)})
        for r in rows:
            self.execute("DELETE FROM mtu_alarms_alarms WHERE alarm_id = ?", (r["alarm_id"],))
        return ok(cancelled=len(rows), alarms=[self._view(r) for r in rows])

    @write(name="change_alarm_name")
    def change_alarm_name(
        self,
        time: Annotated[str | None, Param("the alarm's time, HH:MM")] = None,
        current_name: Annotated[str | None, Param("the alarm's current name")] = None,
        new_name: Annotated[str | None, Param("the new name")] = None,
        recurrence: Annotated[tuple[str, ...] | None, Param("days it rings on")] = None,
    ) -> dict[str, Any]:
        """Rename an alarm."""
        if not new_name:
            raise bad_request("change_alarm_name needs new_name")
        alarm = self._one(
            parse_clock("time", time) if time else None,
            current_name,
            self._recurrence("recurrence", recurrence),
        )
        self.execute(
            "UPDATE mtu_alarms_alarms SET label = ? WHERE alarm_id = ?", (new_name, alarm["alarm_id"])
        )
        return ok(**self._view({**alarm, "label": new_name}), previous_name=alarm["label"])

    @write(name="change_alarm_time")
    def change_alarm_time(
        self,
        label: Annotated[str | None, Param("the alarm's name")] = None,
        current_time: Annotated[str | None, Param("the alarm's time now, HH:MM")] = None,
        new_time: Annotated[str | None, Param("the new time, HH:MM")] = None,
        current_recurrence: Annotated[tuple[str, ...] | None, Param("days it rings on now")] = None,
        new_recurrence: Annotated[tuple[str, ...] | None, Param("the new days")] = None,
    ) -> dict[str, Any]:
        """Move an alarm to a new time (and/or new days)."""
        if not new_time and new_recurrence is None:
            raise bad_request("change_alarm_time needs new_time or new_recurrence")
        alarm = self._one(
            parse_clock("current_time", current_time) if current_time else None,
            label,
            self._recurrence("current_recurrence", current_recurrence),
        )
        at = parse_clock("new_time", new_time) if new_time else alarm["time"]
        days = self._recurrence("new_recurrence", new_recurrence) or json.loads(alarm["recurrence"])
        self._clash(at, days, ignore=alarm["alarm_id"])
        self.execute(
            "UPDATE mtu_alarms_alarms SET time = ?, recurrence = ? WHERE alarm_id = ?",
            (at, json.dumps(days), alarm["alarm_id"]),
        )
        return ok(
            **self._view({**alarm, "time": at, "recurrence": json.dumps(days)}), previous_time=alarm["time"]
        )

    @write(name="change_alarm_sound")
    def change_alarm_sound(
        self,
        label: Annotated[str | None, Param("the alarm's name")] = None,
        time: Annotated[str | None, Param("the alarm's time, HH:MM")] = None,
        sound: Annotated[str | None, Param("the new sound")] = None,
        vibrate: Annotated[int, Param("vibration 0 (off) to 10")] = 0,
        recurrence: Annotated[tuple[str, ...] | None, Param("days it rings on")] = None,
    ) -> dict[str, Any]:
        """Change an alarm's sound and vibration."""
        check_range("vibrate", vibrate, 0, 10)
        alarm = self._one(
            parse_clock("time", time) if time else None, label, self._recurrence("recurrence", recurrence)
        )
        new_sound = sound or alarm["sound"]
        self.execute(
            "UPDATE mtu_alarms_alarms SET sound = ?, vibrate = ? WHERE alarm_id = ?",
            (new_sound, vibrate, alarm["alarm_id"]),
        )
        return ok(**self._view({**alarm, "sound": new_sound, "vibrate": vibrate}))

    @write(name="copy_alarm")
    def copy_alarm(
        self,
        source_time: Annotated[str, Param("time of the alarm to copy, HH:MM")],
        source_recurrence: Annotated[tuple[str, ...], Param("days of the alarm to copy")],
        target_recurrence: Annotated[tuple[str, ...], Param("days of the copy")],
        label: Annotated[str | None, Param("name of the copy (default: the source's)")] = None,
        target_time: Annotated[str | None, Param("time of the copy (default: the source's)")] = None,
    ) -> dict[str, Any]:
        """Copy an alarm to new days (and optionally a new time and label)."""
        src = self._one(
            parse_clock("source_time", source_time),
            None,
            self._recurrence("source_recurrence", source_recurrence),
        )
        days = self._recurrence("target_recurrence", target_recurrence) or []
        at = parse_clock("target_time", target_time) if target_time else src["time"]
        copy = self._insert(at, label or src["label"], days, src["sound"], src["vibrate"])
        return ok(**copy, source_alarm_id=src["alarm_id"])

    # ---- SGD -------------------------------------------------------------------------------------
    @read(name="GetAlarms")
    def get_alarms(self) -> dict[str, Any]:
        """Get the alarms the user has set."""
        rows = self.rows("SELECT * FROM mtu_alarms_alarms ORDER BY time, alarm_id")
        return ok(
            count=len(rows),
            alarms=[
                {"alarm_time": r["time"], "alarm_name": r["label"], "recurrence": json.loads(r["recurrence"])}
                for r in rows
            ],
        )

    @write(name="AddAlarm")
    def add_alarm(
        self,
        new_alarm_time: Annotated[str, Param("time of the alarm, HH:MM")],
        new_alarm_name: Annotated[str, Param("name of the alarm")] = "New alarm",
    ) -> dict[str, Any]:
        """Set a new alarm (it rings once, at the next occurrence of the time)."""
        at = parse_clock("new_alarm_time", new_alarm_time)
        alarm = self._insert(at, new_alarm_name, [self._next_date(at)], SOUNDS[0], 0)
        return ok(new_alarm_time=alarm["time"], new_alarm_name=alarm["label"], alarm_id=alarm["alarm_id"])


finalize_tools(AlarmsApp)
