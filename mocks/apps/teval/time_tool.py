"""T-Eval TimeTool: the current time and weekday, read from the world's simulated clock.

The only state is the system's time-zone setting (UTC offset in minutes); both APIs show the
simulated clock in that zone, so advancing the clock really changes the answers.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from toolgym.mocks.app import read
from toolgym.mocks.apps.teval.common import WEEKDAYS, TevalApp
from toolgym.mocks.responses import ok
from toolgym.mocks.seeding import insert_rows

if TYPE_CHECKING:
    from sqlite_utils import Database


class TimeTool(TevalApp):
    name = "teval_time"
    teval_tool: ClassVar[str] = "TimeTool"
    description = "get time information from system"
    schema = """
    CREATE TABLE teval_time_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    """

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        # the simulated machine runs on UTC, like the task clocks
        insert_rows(
            db,
            "teval_time_settings",
            [{"key": "timezone", "value": "UTC"}, {"key": "utc_offset_minutes", "value": "0"}],
        )

    def _local_now(self) -> datetime:
        offset = int(self.scalar("SELECT value FROM teval_time_settings WHERE key = 'utc_offset_minutes'"))
        return self.now() + timedelta(minutes=offset)

    @read
    def get_curr_time(self) -> dict[str, Any]:
        """get current time (in the format YYYY-MM-DD HH:MM)"""
        return ok(time=self._local_now().strftime("%Y-%m-%d %H:%M"))

    @read
    def get_weekday(self) -> dict[str, Any]:
        """get the weekday today"""
        return ok(weekday=WEEKDAYS[self._local_now().weekday()])
