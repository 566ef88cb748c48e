"""The simulated clock of a mock world. Apps read the time from it, never from the wall clock.

The current time lives in the world's database (`_tg_meta`, key "clock"), so it is part of the
state: it rolls back with reset/restore, is copied by fork, and is the same in every world built
from one (apps, seed, clock) template. It stands still unless something advances it (a task
script, a test, an app API that models waiting); it is part of the state hash, as the id counters
are: two worlds whose clocks differ answer the next call differently.
"""

from __future__ import annotations

import sqlite3
from datetime import date, datetime, timedelta
from typing import Final

from toolgym.mocks.store import META_TABLE, Store

CLOCK_KEY: Final = "clock"


def format_time(when: datetime) -> str:
    """How timestamps are stored and returned: ISO 8601 (microseconds only when non-zero)."""
    return when.isoformat()


def init_clock(conn: sqlite3.Connection, start: datetime) -> None:
    """Write the start time into a database being seeded."""
    conn.execute(
        f"INSERT OR REPLACE INTO {META_TABLE}(key, value) VALUES(?, ?)", (CLOCK_KEY, format_time(start))
    )


class SimClock:
    """now() for one world. Cached in Python; the cache is dropped whenever the store rolls back."""

    __slots__ = ("_epoch", "_iso", "_now", "_store")

    def __init__(self, store: Store) -> None:
        self._store = store
        self._epoch = -1
        self._now = datetime.min
        self._iso: str | None = None  # format_time(_now), made when first asked for

    def now(self) -> datetime:
        if self._epoch != self._store.epoch:
            raw = self._store.get_meta(CLOCK_KEY)
            if raw is None:
                raise RuntimeError("this database was not seeded with a clock (init_clock)")
            self._now = datetime.fromisoformat(str(raw))
            self._iso = None
            self._epoch = self._store.epoch
        return self._now

    def now_iso(self) -> str:
        """format_time(now()), formatted once per time (writes stamp rows with it)."""
        now = self.now()
        if self._iso is None:
            self._iso = format_time(now)
        return self._iso

    def today(self) -> date:
        return self.now().date()

    def set(self, when: datetime) -> None:
        self._store.set_meta(CLOCK_KEY, format_time(when))
        self._now, self._iso, self._epoch = when, None, self._store.epoch

    def advance(self, delta: timedelta | float) -> datetime:
        """Move time forward (seconds or a timedelta) and return the new time."""
        step = delta if isinstance(delta, timedelta) else timedelta(seconds=delta)
        if step < timedelta(0):
            raise ValueError("the simulated clock only moves forward")
        when = self.now() + step
        self.set(when)
        return when

    def __repr__(self) -> str:
        return f"SimClock({self.now_iso()})"
