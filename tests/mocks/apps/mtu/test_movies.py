"""MTU Movies app (toolgym.mocks.apps.mtu.movies) on its seeded data (real SQLite)."""

from __future__ import annotations

from tests.mocks.apps.mtu import count_rows, fails, make_world
from toolgym.mocks.world import MockWorld


def test_movie_tickets_and_streaming() -> None:
    world = make_world("mtu_movies")
    online = world.call("FindMovies", genre="Fantasy")["movies"]
    assert online and all(m["genre"] == "Fantasy" and m["available_online"] for m in online)
    showing = world.call("FindMovies", location="San Jose")["movies"]
    movie = showing[0]["title"]
    times = world.call("GetTimesForMovie", movie_name=movie, location="San Jose", show_date="2024-01-02")
    show = times["showtimes"][0]
    bought = world.call(
        "BuyMovieTickets",
        movie_name=movie,
        number_of_tickets=3,
        show_date="2024-01-02",
        location="San Jose",
        show_time=show["show_time"],
        show_type=show["show_type"],
    )
    assert bought["seats_left"] == show["seats_left"] - 3 and bought["price"] == 3 * show["price"]
    buy = {"movie_name": movie, "show_date": "2024-01-02", "location": "San Jose", "show_time": show["show_time"],
           "show_type": show["show_type"]}  # fmt: skip
    left = bought["seats_left"]
    while left:  # sell the show out
        left = world.call("BuyMovieTickets", **buy, number_of_tickets=min(left, 20))["seats_left"]
    fails(world, "BuyMovieTickets", 409, **buy, number_of_tickets=1)
    fails(
        world,
        "BuyMovieTickets",
        400,
        movie_name=movie,
        number_of_tickets=1,
        show_date="2024-01-02",
        location="San Jose",
        show_time=show["show_time"],
        show_type="4dx",
    )
    theatrical = world.rows("mtu_movies_movies", {"available_online": 0})[0]["title"]
    fails(world, "PlayMovie", 409, title=theatrical)
    streamable = online[0]
    missing = next(
        lang for lang in ("Hindi", "German", "French") if lang not in streamable["subtitle_languages"]
    )
    fails(world, "PlayMovie", 422, title=streamable["title"], subtitles=True, subtitle_language=missing)
    played = world.call("PlayMovie", title=streamable["title"], subtitles="True")
    assert played["subtitles"] is True and count_rows(world, "mtu_movies_playback") == 1
    screenings = world.call("SearchScreeningEvent", movie_type="animated movies", spatial_relation="nearest")
    events = screenings["screening_events"]
    assert all(s["genre"] == "Animation" for s in events) and len({s["theater_name"] for s in events}) <= 1


def test_theater_searches_filter_by_show_type_and_theater() -> None:
    world = make_world("mtu_movies")
    shows = world.call(
        "GetTimesForMovie", movie_name=_showing(world), location="San Jose", show_date="2024-01-02"
    )
    theater = shows["showtimes"][0]["theater_name"]
    movie = shows["showtimes"][0]["movie_name"]
    at_theater = world.call(
        "GetTimesForMovie",
        movie_name=movie,
        location="San Jose",
        show_date="2024-01-02",
        theater_name=theater.upper(),
    )["showtimes"]
    assert at_theater and all(s["theater_name"] == theater for s in at_theater)
    in_3d = world.call("FindMovies", location="San Jose", show_type="3-d")["movies"]
    assert in_3d and all(m["show_type"] == "3d" for m in in_3d)
    # only FindMovies takes the "3-d" spelling; GetTimesForMovie wants the enum's
    fails(world, "GetTimesForMovie", 400, movie_name=movie, location="San Jose", show_date="2024-01-02",
          show_type="3-d")  # fmt: skip
    regular = world.call("GetTimesForMovie", movie_name=movie, location="San Jose", show_date="2024-01-02",
                         show_type="Regular")["showtimes"]  # fmt: skip
    assert regular and all(s["show_type"] == "regular" for s in regular)


def _showing(world: MockWorld) -> str:
    title: str = world.call("FindMovies", location="San Jose")["movies"][0]["title"]
    return title
