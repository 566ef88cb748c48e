"""ArxivSearch, GoogleScholar, GoogleSearch, FilmDouban, FilmTMDB and PolygonFinance: searching,
filtering and sorting the seeded rows (real SQLite)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from tests.mocks.teval import CLOCK, call, fails, make_world
from toolgym.errors import ErrorKind
from toolgym.mocks.apps.teval.google_search import easter
from toolgym.mocks.world import MockWorld


@pytest.fixture(scope="module")
def world() -> MockWorld:
    return make_world(
        "teval_arxiv", "teval_scholar", "teval_google_search", "teval_douban", "teval_tmdb", "teval_polygon"
    )


# ---- ArxivSearch ------------------------------------------------------------------------------
def test_arxiv_search_matches_the_query(world: MockWorld) -> None:
    papers = call(world, "get_arxiv_article_information", query="quantum error correction")["content"]
    assert len(papers) == 3
    for p in papers:
        assert "quantum error correction" in (p["title"] + " " + p["summary"]).lower()
        assert set(p) == {"published", "title", "authors", "summary"}
    assert call(world, "get_arxiv_article_information", query="zzzz qqqq")["content"] == []
    one = world.rows("teval_arxiv_papers")[42]
    by_id = call(world, "get_arxiv_article_information", query=f"arXiv:{one['arxiv_id']}")["content"]
    assert [p["title"] for p in by_id] == [one["title"]]
    fails(world, "get_arxiv_article_information", 400, query="  ")


# ---- GoogleScholar ----------------------------------------------------------------------------
def test_scholar_search_author_and_citation_chain(world: MockWorld) -> None:
    found = call(world, "search_google_scholar", query="option pricing")
    assert 1 <= len(found["title"]) <= 5
    assert (
        len(found["cited_by"]) == len(found["organic_id"]) == len(found["snipets"]) == len(found["pub_info"])
    )
    assert all(
        "option pricing" in (t + s).lower() for t, s in zip(found["title"], found["snipets"], strict=True)
    )
    paper = world.rows("teval_scholar_papers", {"organic_id": found["organic_id"][0]})[0]
    citation = call(world, "get_citation_format", q=paper["organic_id"])["citation"]
    assert (
        f'"{paper["title"]}."' in citation and f"{paper['year']}" in citation and paper["venue"] in citation
    )
    lead = world.rows("teval_scholar_authorship", {"organic_id": paper["organic_id"], "position": 0})[0]
    name = world.rows("teval_scholar_authors", {"author_id": lead["author_id"]})[0]["name"]
    assert citation.startswith(f"{name.split()[1]}, {name.split()[0]}")
    author_id = call(world, "get_author_id", mauthors=name.upper())["author_id"]
    assert author_id == lead["author_id"]
    info = call(world, "get_author_information", author_id=author_id)
    assert info["name"] == name and len(info["articles"]) <= 3
    cites = [a["cited_by"] for a in info["articles"]]
    assert cites == sorted(cites, reverse=True)
    fails(world, "get_author_id", 404, mauthors="Nobody Atall")
    fails(world, "get_author_information", 404, author_id="xxxxxxxxxxxx")
    fails(world, "get_citation_format", 404, q="nope")


# ---- GoogleSearch -----------------------------------------------------------------------------
def test_google_search_ranks_relevant_pages(world: MockWorld) -> None:
    top = call(world, "serper_search", query="What is the capital of Australia?")["content"]
    assert len(top) == 3 and "Canberra" in top[0]["snippet"]
    assert set(top[0]) == {"title", "link", "snippet"}
    easter_2024 = call(world, "serper_search", query="When is Easter Sunday 2024")["content"][0]["snippet"]
    assert "March 31, 2024" in easter_2024
    assert call(world, "serper_search", query="xylophone zebra quasar")["content"] == []
    fails(world, "serper_search", 400, query="the of")


def test_easter_dates() -> None:
    assert [easter(y) for y in (2023, 2024, 2025)] == [date(2023, 4, 9), date(2024, 3, 31), date(2025, 4, 20)]


# ---- FilmDouban -------------------------------------------------------------------------------
def test_douban_coming_and_playing_filter_and_sort(world: MockWorld) -> None:
    today = CLOCK.date().isoformat()
    coming = call(world, "coming_out_filter", region="中国大陆", outNum=10)["film"]
    assert 1 <= len(coming) <= 10
    assert all(f["region"] == "中国大陆" and f["date"] > today for f in coming)
    assert [f["date"] for f in coming] == sorted(f["date"] for f in coming)
    comedies = call(world, "coming_out_filter", cate="喜剧", outNum=50)["film"]
    assert comedies and all("喜剧" in f["cate"].split("/") for f in comedies)
    playing = call(world, "now_playing_out_filter", outNum=50)["film"]
    assert all(f["date"] <= today for f in playing)
    want = [f["wantWatchPeopleNum"] for f in playing]
    assert want == sorted(want, reverse=True)
    assert len(call(world, "now_playing_out_filter")["film"]) == 5  # the default outNum
    detail = call(world, "print_detail", film_name=f"《{playing[0]['title']}》")["description"]
    assert detail.startswith(playing[0]["title"]) and playing[0]["date"] in detail


def test_douban_errors(world: MockWorld) -> None:
    fails(world, "coming_out_filter", 400, region="USA")
    fails(world, "coming_out_filter", 400, cate="comedy")
    fails(world, "now_playing_out_filter", 400, outNum=0)
    fails(world, "print_detail", 404, film_name="不存在的电影")
    fails(world, "print_detail", 409, film_name="长安")  # a part of several titles
    fails(world, "coming_out_filter", kind=ErrorKind.ARGUMENT_ERROR, outNum="many")


# ---- FilmTMDB ---------------------------------------------------------------------------------
def test_tmdb_search_details_and_similar(world: MockWorld) -> None:
    translated = call(world, "search_movie", query="la nuit blanche")
    assert translated["title"] == "The White Night"
    movie_id = translated["id"]
    details = call(world, "get_movie_details", movie_id=movie_id)
    assert details["id"] == movie_id and details["genres"]
    mine = {r["genre_id"] for r in world.rows("teval_tmdb_movie_genres", {"movie_id": movie_id})}
    kws = {r["keyword"] for r in world.rows("teval_tmdb_movie_keywords", {"movie_id": movie_id})}
    similar = call(world, "get_similar_movies", movie_id=movie_id)["films"]
    assert 1 <= len(similar) <= 5 and movie_id not in {f["id"] for f in similar}
    for f in similar:
        theirs = {r["genre_id"] for r in world.rows("teval_tmdb_movie_genres", {"movie_id": f["id"]})}
        their_kws = {r["keyword"] for r in world.rows("teval_tmdb_movie_keywords", {"movie_id": f["id"]})}
        assert theirs & mine or their_kws & kws
    reviews = call(world, "get_movie_reviews", movie_id=movie_id)["reviews"]
    assert len(reviews) == len(world.rows("teval_tmdb_reviews", {"movie_id": movie_id}))


def test_tmdb_lists_are_sorted_and_filtered(world: MockWorld) -> None:
    today = CLOCK.date()
    playing = call(world, "get_now_playing")["films"]
    assert playing and all(
        today - timedelta(days=35) < date.fromisoformat(f["release_date"]) <= today for f in playing
    )
    top = call(world, "get_top_rated_movies")["films"]
    assert len(top) == 10 and [f["vote_average"] for f in top] == sorted(
        (f["vote_average"] for f in top), reverse=True
    )
    for f in top:
        assert world.rows("teval_tmdb_movies", {"movie_id": f["id"]})[0]["vote_count"] >= 200
    popular = [f["popularity"] for f in call(world, "get_popular_movies")["films"]]
    best = max(r["popularity"] for r in world.rows("teval_tmdb_movies"))
    assert popular == sorted(popular, reverse=True) and popular[0] == best


def test_tmdb_errors(world: MockWorld) -> None:
    fails(world, "search_movie", 404, query="qwertyuiop")
    fails(world, "get_movie_details", 404, movie_id=1)
    fails(world, "get_similar_movies", 404, movie_id=1)
    fails(world, "get_movie_details", kind=ErrorKind.ARGUMENT_ERROR, movie_id="abc")


# ---- PolygonFinance ---------------------------------------------------------------------------
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
