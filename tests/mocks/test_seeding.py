"""The seeding helpers every app group shares (toolgym.mocks.seeding): rows, names, distances,
number words. Each draws from the rng in a fixed order, which the seeded data depends on."""

from __future__ import annotations

import random
import sqlite3

import pytest
from sqlite_utils import Database

from toolgym.mocks.seeding import (
    NUMBER_WORDS,
    haversine_km,
    insert_rows,
    leading_number,
    name_grid,
    offset_point,
    person_name,
    pick_name,
    point_near,
)

FIRST = ("Ann", "Bo", "Cy")
LAST = ("Dee", "Eng")


def test_insert_rows_takes_the_keys_of_the_first_row_and_quotes_names() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute('CREATE TABLE "odd table" ("key" TEXT PRIMARY KEY, "order" INTEGER)')
    rows = ({"key": f"k{i}", "order": i} for i in range(3))  # any iterable, not only a list
    assert insert_rows(Database(conn), "odd table", rows) == 3
    assert conn.execute('SELECT "key", "order" FROM "odd table" ORDER BY rowid').fetchall() == [
        ("k0", 0),
        ("k1", 1),
        ("k2", 2),
    ]
    assert insert_rows(conn, "odd table", []) == 0
    with pytest.raises(KeyError):  # a later row lacking a key of the first one
        insert_rows(conn, "odd table", [{"key": "x", "order": 1}, {"key": "y"}])


def test_names_draw_in_a_fixed_order() -> None:
    expected = random.Random(5)
    first, last = expected.choice(FIRST), expected.choice(LAST)
    assert pick_name(random.Random(5), FIRST, LAST) == (first, last)
    assert person_name(random.Random(5), FIRST, LAST) == f"{first} {last}"
    expected = random.Random(5)
    family = expected.choice(LAST)  # family first: drawn first, written first
    assert (
        person_name(random.Random(5), FIRST, LAST, family_first=True) == f"{family} {expected.choice(FIRST)}"
    )
    assert name_grid(FIRST, LAST) == ["Ann Dee", "Ann Eng", "Bo Dee", "Bo Eng", "Cy Dee", "Cy Eng"]


def test_distances() -> None:
    assert haversine_km(39.9042, 116.4074, 31.2304, 121.4737) == pytest.approx(
        1068, abs=5
    )  # Beijing-Shanghai
    assert haversine_km(31.2, 121.4, 31.2, 121.4) == 0
    lat, lon = offset_point(40.0, -75.0, 3.0, 4.0)
    assert haversine_km(40.0, -75.0, lat, lon) == pytest.approx(5.0, rel=0.01)
    # another degree length moves the point less far
    assert offset_point(40.0, -75.0, 3.0, 0.0, 111.32)[0] < lat
    rng = random.Random(1)
    points = [point_near(rng, 47.6, -122.3, 4.0) for _ in range(300)]
    assert all(haversine_km(47.6, -122.3, a, b) <= 4.0 * 1.01 for a, b in points)
    assert max(haversine_km(47.6, -122.3, a, b) for a, b in points) > 3.0  # spread over the disc
    again = random.Random(1)
    assert [point_near(again, 47.6, -122.3, 4.0) for _ in range(300)] == points


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3", 3),
        ("12 people", 12),
        ("three", 3),
        ("a couple of friends", 2),
        ("an hour", 1),
        ("twelve", 12),
        ("threes", None),
        ("many", None),
        ("", None),
    ],
)
def test_leading_number(text: str, expected: int | None) -> None:
    assert leading_number(text) == expected


def test_number_words_cover_zero_to_twelve() -> None:
    assert [NUMBER_WORDS[w] for w in ("zero", "one", "five", "twelve")] == [0, 1, 5, 12]
