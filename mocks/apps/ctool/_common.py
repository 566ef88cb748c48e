"""Helpers shared by the CToolEval-style apps: UTC time handling, distances, fast seeding, names.

Every timestamp these apps store is UTC ISO 8601 without microseconds ("2024-01-01T09:30:00+00:00"),
so SQL can compare them as strings; times given by agents are parsed and normalised to that form.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from sqlite_utils import Database

from toolgym.mocks.app import App
from toolgym.mocks.clock import format_time
from toolgym.mocks.responses import bad_request

EARTH_RADIUS_KM: Final = 6371.0088

FIRST_NAMES: Final = (
    "Wei",
    "Fang",
    "Lei",
    "Min",
    "Jing",
    "Tao",
    "Yan",
    "Hui",
    "Jun",
    "Li",
    "Ning",
    "Qiang",
    "Xin",
    "Yu",
    "Zhen",
    "Mei",
    "Hao",
    "Lan",
    "Bo",
    "Chen",
)
LAST_NAMES: Final = (
    "Wang",
    "Li",
    "Zhang",
    "Liu",
    "Chen",
    "Yang",
    "Zhao",
    "Huang",
    "Zhou",
    "Wu",
    "Xu",
    "Sun",
    "Ma",
    "Zhu",
    "Hu",
    "Guo",
)


def utc(when: datetime) -> datetime:
    """`when` in UTC, whole seconds; a naive datetime is taken to be UTC already."""
    when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    return when.replace(microsecond=0)


def iso(when: datetime) -> str:
    """The one stored timestamp layout (see the module docstring)."""
    return format_time(utc(when))


def parse_time(param: str, value: str) -> datetime:
    """An ISO 8601 date-time from an agent ("2024-01-02T09:00", "...Z", "...+08:00"), in UTC, or 400."""
    try:
        return utc(datetime.fromisoformat(value.strip()))
    except (AttributeError, TypeError, ValueError):
        raise bad_request(
            f"{param!r} must be an ISO 8601 date-time like 2024-01-02T09:00:00Z, got {value!r}"
        ) from None


def app_now(app: App) -> datetime:
    """The world's simulated time in UTC (whole seconds)."""
    return utc(app.now())


def haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance in kilometres."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(a)))


def insert_rows(db: Database, table: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """Bulk insert for seeders: one executemany (sqlite-utils' insert_all is slower per row)."""
    if not rows:
        return
    columns = list(rows[0])
    sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    db.conn.executemany(sql, [tuple(r[c] for c in columns) for r in rows])


def placeholders(values: Iterable[Any]) -> str:
    """ "?, ?, ?" for an IN (...) clause."""
    return ", ".join("?" for _ in values)
