"""T-Eval’s FilmTMDB (toolgym.mocks.apps.teval.film_tmdb) on its seeded data (real SQLite)."""

from __future__ import annotations

from datetime import date, timedelta

from tests.mocks.apps.teval import CLOCK, call, fails
from toolgym.errors import ErrorKind
from toolgym.mocks.world import MockWorld


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
