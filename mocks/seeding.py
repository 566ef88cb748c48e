"""Helpers that every group of mock apps uses to seed its tables and read loose values: bulk row
insertion, people's names, great-circle distances and number words.

They hold no data of any app: each app passes its own name pools, so its seeded rows stay its own.
Everything that draws from `rng` draws in a documented order, because the same seed must give the
same rows byte for byte (the golden tasks' state hashes depend on it).
"""

from __future__ import annotations

import math
import random
import re
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from toolgym.mocks.store import quote_ident

if TYPE_CHECKING:
    from sqlite_utils import Database

EARTH_RADIUS_KM: Final = 6371.0088


# ---- rows ------------------------------------------------------------------------------------------
def seed_connection(db: Database | sqlite3.Connection) -> sqlite3.Connection:
    """The connection under what seed() was given (a sqlite-utils Database, or a connection),
    told apart by type so that sqlite-utils need not be imported."""
    return db if isinstance(db, sqlite3.Connection) else db.conn


def insert_rows(db: Database | sqlite3.Connection, table: str, rows: Iterable[Mapping[str, Any]]) -> int:
    """Bulk insert for seed(): one executemany (several times faster than sqlite-utils'
    insert_all). Every row must have the keys of the first one. Returns the number of rows."""
    conn = seed_connection(db)
    it = iter(rows)
    first = next(it, None)
    if first is None:
        return 0
    cols = list(first)
    sql = (
        f"INSERT INTO {quote_ident(table)} ({', '.join(quote_ident(c) for c in cols)})"
        f" VALUES ({', '.join('?' for _ in cols)})"
    )
    values = [tuple(first[c] for c in cols)]
    values.extend(tuple(r[c] for c in cols) for r in it)
    conn.executemany(sql, values)
    return len(values)


# ---- names -----------------------------------------------------------------------------------------
def pick_name(rng: random.Random, first_names: Sequence[str], last_names: Sequence[str]) -> tuple[str, str]:
    """A (first, last) pair: the first name is drawn before the last one."""
    first = rng.choice(first_names)
    return first, rng.choice(last_names)


def person_name(
    rng: random.Random, first_names: Sequence[str], last_names: Sequence[str], *, family_first: bool = False
) -> str:
    """ "First Last", or "Last First" with `family_first` (Chinese order): the family name is then
    drawn first, as it is written."""
    if family_first:
        last = rng.choice(last_names)
        return f"{last} {rng.choice(first_names)}"
    first, last = pick_name(rng, first_names, last_names)
    return f"{first} {last}"


def name_grid(first_names: Iterable[str], last_names: Sequence[str]) -> list[str]:
    """Every "First Last" combination, first names major: a pool to sample distinct people from."""
    return [f"{first} {last}" for first in first_names for last in last_names]


# ---- distances -------------------------------------------------------------------------------------
def haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance in kilometres."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(a)))


def offset_point(
    lat: float, lon: float, north_km: float, east_km: float, km_per_degree: float = 111.0
) -> tuple[float, float]:
    """The point `north_km` north and `east_km` east of (lat, lon) (flat-earth: fine at city scale;
    `km_per_degree` is the length of a degree of latitude each app has always used)."""
    return (
        lat + north_km / km_per_degree,
        lon + east_km / (km_per_degree * math.cos(math.radians(lat))),
    )


def point_near(rng: random.Random, lat: float, lon: float, radius_km: float) -> tuple[float, float]:
    """A point uniformly spread over the disc of `radius_km` around (lat, lon): the distance is
    drawn before the direction."""
    dist_km, angle = radius_km * math.sqrt(rng.random()), rng.uniform(0, 2 * math.pi)
    return offset_point(lat, lon, dist_km * math.cos(angle), dist_km * math.sin(angle))


# ---- number words ----------------------------------------------------------------------------------
NUMBER_WORDS: Final[dict[str, int]] = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple": 2,
    "a": 1,
    "an": 1,
    "single": 1,
    "couple": 2,
}
# longest first, so that "a couple" wins over "a"
_WORDS_LONGEST_FIRST: Final = sorted(NUMBER_WORDS, key=len, reverse=True)


def leading_number(text: str) -> int | None:
    """The count a lower-cased text starts with: digits ("3 people") or a word ("three", "a
    couple of"); None when it starts with neither."""
    found = re.match(r"^(\d+)", text)
    if found:
        return int(found.group(1))
    for word in _WORDS_LONGEST_FIRST:
        if text == word or text.startswith(word + " "):
            return NUMBER_WORDS[word]
    return None
