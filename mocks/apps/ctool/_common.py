"""Helpers shared by the CToolEval-style apps: UTC time handling and name pools (row insertion and
distances are toolgym.mocks.seeding's).

Every timestamp these apps store is UTC ISO 8601 without microseconds ("2024-01-01T09:30:00+00:00"),
so SQL can compare them as strings; times given by agents are parsed and normalised to that form.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

from toolgym.mocks.app import App
from toolgym.mocks.clock import format_time
from toolgym.mocks.responses import bad_request

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
