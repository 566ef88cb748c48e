"""T-Eval’s PolygonFinance (toolgym.mocks.apps.teval.polygon_finance) on its seeded data (real SQLite)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tests.mocks.apps.teval import call, fails
from toolgym.errors import ErrorKind
from toolgym.mocks.world import MockWorld


def test_polygon_ticker_detail_and_daily_bars(world: MockWorld) -> None:
    assert call(world, "search_stock_ticker", search="nvidia") == {
        "status": "success",
        "ticker": "NVDA",
        "name": "NVIDIA Corporation",
    }
    detail = call(world, "get_ticker_detail", ticker="msft")
    assert detail["name"] == "Microsoft Corporation" and detail["list_date"] == "1986-03-13"
    bar = world.rows("teval_polygon_daily", {"ticker": "MSFT", "date": "2023-12-28"})[0]
    day = call(world, "get_daliy_open_close", ticker="MSFT", date="2023-12-28")
    assert (day["open"], day["close"], day["afterHours"]) == (bar["open"], bar["close"], bar["after_hours"])
    # no bars on weekends, market holidays or days not yet traded
    for closed in ("2023-12-30", "2023-12-25", "2024-01-02"):
        fails(world, "get_daliy_open_close", 404, ticker="MSFT", date=closed)


def test_polygon_aggregates_group_the_bars(world: MockWorld) -> None:
    bars = [
        r
        for r in world.rows("teval_polygon_daily", {"ticker": "AAPL"})
        if "2023-12-01" <= r["date"] <= "2023-12-29"
    ]
    weeks = call(world, "aggregate_stock_with_time", ticker="AAPL", multiplier=1, timespan="week",
                 **{"from": "2023-12-01", "to": "2023-12-29"})["results"]  # fmt: skip
    assert weeks[0]["o"] == bars[0]["open"] and weeks[-1]["c"] == bars[-1]["close"]
    assert sum(w["v"] for w in weeks) == sum(b["volume"] for b in bars)
    starts = [datetime.fromtimestamp(w["t"] / 1000, UTC).date() for w in weeks]
    assert all(s.weekday() == 6 for s in starts)  # weeks start on Sunday
    days = call(world, "aggregate_stock_with_time", ticker="AAPL", multiplier=1, timespan="day",
                **{"from": "2023-12-01", "to": "2023-12-29"})["results"]  # fmt: skip
    assert [d["c"] for d in days] == [b["close"] for b in bars]
    hours = call(world, "aggregate_stock_with_time", ticker="AAPL", multiplier=1, timespan="hour",
                 **{"from": "2023-12-29", "to": "2023-12-29"})["results"]  # fmt: skip
    last = bars[-1]
    assert len(hours) == 7 and hours[0]["o"] == last["open"] and hours[-1]["c"] == last["close"]
    assert all(last["low"] <= h["l"] <= h["h"] <= last["high"] for h in hours)


def test_polygon_news_is_recent_first(world: MockWorld) -> None:
    news = call(world, "get_ticker_news", ticker="TSLA")["results"]
    stored = world.rows("teval_polygon_news", {"ticker": "TSLA"})
    assert len(news) == 5 and set(news[0]) == {"title", "summary", "author"}
    newest = sorted(stored, key=lambda n: n["published"], reverse=True)[:5]
    assert [n["title"] for n in news] == [n["title"] for n in newest]
    assert len(call(world, "get_ticker_news")["results"]) == 5


def test_polygon_errors(world: MockWorld) -> None:
    fails(world, "get_ticker_detail", 404, ticker="ZZZZ")
    fails(world, "search_stock_ticker", 404, search="no such company")
    fails(world, "get_daliy_open_close", 400, ticker="AAPL", date="29/12/2023")
    args: dict[str, Any] = {"ticker": "AAPL", "multiplier": 1, "from": "2023-12-01", "to": "2023-12-29"}
    fails(world, "aggregate_stock_with_time", 400, timespan="minute", **args)
    fails(world, "aggregate_stock_with_time", 400, timespan="day", **{**args, "multiplier": 0})
    fails(world, "aggregate_stock_with_time", 400, timespan="day", **{**args, "to": "2023-11-01"})
    fails(world, "aggregate_stock_with_time", kind=ErrorKind.ARGUMENT_ERROR, timespan="day", ticker="AAPL",
          multiplier=1, to="2023-12-29")  # fmt: skip
