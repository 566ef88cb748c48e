"""Helpers shared by the T-Eval mock apps: bearings, text matching, time parsing, stable hashes and a
way to publish a parameter whose name is a Python keyword (PolygonFinance's `from`)."""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections.abc import Callable, Collection, Iterable
from datetime import date
from typing import Any, ClassVar, Final, TypeVar

from toolgym.mocks.app import App
from toolgym.mocks.responses import bad_request
from toolgym.mocks.seeding import haversine_km

F = TypeVar("F", bound=Callable[..., Any])

STOPWORDS: Final = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "me",
        "of",
        "on",
        "or",
        "please",
        "show",
        "tell",
        "the",
        "to",
        "what",
        "when",
        "where",
        "which",
        "who",
        "with",
        "about",
        "find",
        "search",
        "get",
        "give",
        "list",
    ]
)
COMPASS_EN: Final = ("north", "northeast", "east", "southeast", "south", "southwest", "west", "northwest")
COMPASS_ZH: Final = ("北", "东北", "东", "东南", "南", "西南", "西", "西北")
WEEKDAYS: Final = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


class TevalApp(App):
    """An app standing for one T-Eval tool; `teval_tool` is the tool's name in api_descrip.json."""

    teval_tool: ClassVar[str] = ""


def stable_int(*parts: object) -> int:
    """A deterministic integer from values (not Python's salted hash): for derived, unstored data."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


# ---- geography -----------------------------------------------------------------------------------
def bearing_deg(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dl = math.radians(lon2 - lon1)
    x = math.sin(dl) * math.cos(p2)
    y = math.cos(p1) * math.sin(p2) - math.sin(p1) * math.cos(p2) * math.cos(dl)
    return (math.degrees(math.atan2(x, y)) + 360) % 360


def compass_index(bearing: float) -> int:
    return round(bearing / 45) % 8


def places_near(
    app: App,
    table: str,
    center: tuple[float, float],
    radius: float,
    categories: Collection[str],
    term: str,
    limit: int,
    *,
    per_km: float = 1.0,
) -> list[dict[str, Any]]:
    """The map search both map apps publish: the places of `table` within `radius` of the (lat,
    lon) `center` whose category is one of `categories` or whose name contains `term`, nearest
    first (then by name, address), as {"name", "address"}. `per_km` is the radius unit per km
    (1000: metres), so that each app compares and sorts distances in its own unit, as it always has.
    """
    lat, lon = center
    # a box prefilter in SQL, the exact distance in Python
    dlat = radius / per_km / 111.0
    dlon = dlat / max(0.01, math.cos(math.radians(lat)))
    rows = app.rows(
        f"SELECT name, category, address, latitude, longitude FROM {table}"
        " WHERE latitude BETWEEN ? AND ? AND longitude BETWEEN ? AND ?",
        (lat - dlat, lat + dlat, lon - dlon, lon + dlon),
    )
    hits = []
    for r in rows:
        if r["category"] not in categories and term not in r["name"].lower():
            continue
        distance = haversine_km(lat, lon, r["latitude"], r["longitude"]) * per_km
        if distance <= radius:
            hits.append((distance, r["name"], r["address"]))
    hits.sort()
    return [{"name": n, "address": a} for _, n, a in hits[:limit]]


# ---- text ----------------------------------------------------------------------------------------
def words(text: str) -> list[str]:
    """Lower-cased alphanumeric words, stopwords dropped."""
    return [w for w in re.findall(r"[0-9a-z]+", text.lower()) if w not in STOPWORDS]


def word_hits(terms: Iterable[str], text: str) -> int:
    """How many of the query terms occur as words of `text` (a crude but honest relevance signal)."""
    have = _word_set(text)
    return sum(1 for t in terms if t in have)


@functools.lru_cache(maxsize=1 << 16)
def _word_set(text: str) -> frozenset[str]:
    # the searches score every paper's title, authors and summary per call (~130 ms a search
    # before); the texts are the seeded rows, the same in every world, so each is split once
    return frozenset(re.findall(r"[0-9a-z]+", text.lower()))


def norm(text: str) -> str:
    return " ".join(text.lower().split())


# ---- dates and times -----------------------------------------------------------------------------
def parse_day(param: str, value: str) -> date:
    """A strict YYYY-MM-DD date or a 400 (date.fromisoformat also takes other ISO forms)."""
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value.strip()):
        raise bad_request(f"{param!r} must be a date in the format YYYY-MM-DD, got {value!r}")
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        raise bad_request(f"{param!r} is not a valid date: {value!r}") from None


def parse_hhmm(param: str, value: str) -> int:
    """A 24-hour HH:MM time as minutes after midnight, or a 400. 24:00 means the end of the day."""
    found = re.fullmatch(r"(\d{1,2}):(\d{2})", value.strip())
    if not found:
        raise bad_request(f"{param!r} must be a 24-hour time HH:MM, e.g. 13:15, got {value!r}")
    hours, minutes = int(found.group(1)), int(found.group(2))
    if minutes > 59 or hours > 24 or (hours == 24 and minutes):
        raise bad_request(f"{param!r} is not a valid time: {value!r}")
    return hours * 60 + minutes


def format_hhmm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


# ---- publishing a keyword-named parameter ---------------------------------------------------------
