"""Query (toolgym.mocks.app): the optional-filter SELECT the search APIs build, on real SQLite."""

from __future__ import annotations

from datetime import UTC, datetime

from toolgym.mocks.app import Query, placeholders
from toolgym.mocks.apps.mtu.hotels import HotelsApp
from toolgym.mocks.world import MockWorld


def test_filters_add_clauses_and_values_in_order() -> None:
    q = Query("SELECT * FROM t WHERE city = ?", "Boston")
    q.where("stars >= ?", 3).where_in("price", [1, 2]).flags({"wifi": True, "pool": None}, pets=False)
    assert (
        q.sql == "SELECT * FROM t WHERE city = ? AND stars >= ? AND price IN (?, ?) AND wifi = ? AND pets = ?"
    )
    assert q.params == ["Boston", 3, 1, 2, 1, 0]
    assert placeholders([]) == "" and placeholders("ab") == "?, ?"
    untouched = Query("SELECT 1 WHERE 1").flags(a=None)  # a filter left out adds nothing
    assert untouched.sql == "SELECT 1 WHERE 1" and untouched.params == []


def test_rows_run_the_query_on_the_apps_database() -> None:
    world = MockWorld([HotelsApp], seed=0, clock=datetime(2024, 1, 1, tzinfo=UTC))
    app = world.apps["mtu_hotels"]
    found = Query("SELECT * FROM mtu_hotels_hotels WHERE city = ?", "Boston").flags(has_wifi=True)
    rows = found.rows(app, "average_rating DESC, hotel_id")
    assert rows and all(r["city"] == "Boston" and r["has_wifi"] == 1 for r in rows)
    assert [r["average_rating"] for r in rows] == sorted((r["average_rating"] for r in rows), reverse=True)
    everything = world.rows("mtu_hotels_hotels", {"city": "Boston"})
    assert {r["hotel_id"] for r in rows} == {r["hotel_id"] for r in everything if r["has_wifi"]}
