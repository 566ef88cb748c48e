"""MTU leisure apps on their seeded data: events and attractions, movies, music, creative works."""

from __future__ import annotations

from tests.mocks.mtu import count_rows, fails, make_world


# ---- events -------------------------------------------------------------------------------------
def test_events_filter_and_sell_out() -> None:
    world = make_world("mtu_events")
    events = world.call("FindEvents", event_type="concert", city="New York")["events"]
    assert events and all(e["event_type"] == "Music" and e["city"] == "New York" for e in events)
    assert [(e["date"], e["time"]) for e in events] == sorted((e["date"], e["time"]) for e in events)
    plays = world.call("FindEvents", event_type="Shakespearean play", city="Chicago")["events"]
    assert all(e["event_type"] == "Theater" for e in plays)
    e = min(events, key=lambda e: e["tickets_left"])
    dates = world.call("GetEventDates", event_name=e["event_name"], city="NYC")["dates"]
    assert e["date"] in [d["date"] for d in dates]
    args = {"event_name": e["event_name"], "date": e["date"], "city": "New York"}
    left = e["tickets_left"]
    while left > 0:
        n = min(left, 20)
        bought = world.call("BuyEventTickets", **args, number_of_tickets=n)
        left -= n
        assert bought["tickets_left"] == left
    fails(world, "BuyEventTickets", 409, **args, number_of_tickets=1)
    fails(world, "BuyEventTickets", 404, **{**args, "date": "2024-12-30"}, number_of_tickets=1)
    fails(world, "FindEvents", 400, event_type="knitting", city="New York")
    fails(world, "FindEvents", 404, event_type="concert", city="Atlantis")


def test_attractions() -> None:
    world = make_world("mtu_events")
    free = world.call("FindAttractions", location="Chicago", free_entry=True, good_for_kids="True")[
        "attractions"
    ]
    assert all(a["free_entry"] and a["good_for_kids"] for a in free)
    museums = world.call("FindAttractions", location="Chicago", category="Museum")["attractions"]
    assert all(a["category"] == "Museum" for a in museums)
    fails(world, "FindAttractions", 400, location="Chicago", category="Volcano")
    colleges = world.call("searchAttraction", type="colleges", return_info=["name", "entrance fee"])[
        "attractions"
    ]
    assert colleges and all(set(c) == {"name", "entrance_fee"} for c in colleges)


# ---- movies -------------------------------------------------------------------------------------
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


# ---- music --------------------------------------------------------------------------------------
def test_music_lookup_play_and_playlists() -> None:
    world = make_world("mtu_music")
    rock = world.call("LookupSong", genre="Rock")["songs"]
    assert rock and all(s["genre"] == "Rock" for s in rock)
    song = rock[0]
    world.call(
        "PlaySong", song_name=song["song_name"], artist=song["artist"], playback_device="kitchen speaker"
    )
    playing = world.rows("mtu_music_playback", {"device": "kitchen speaker"})[0]
    assert playing["song_id"] is not None and playing["started_at"] is not None
    fails(world, "PlaySong", 404, song_name="No Such Song")
    fails(world, "PlaySong", 400, song_name=song["song_name"], playback_device="toaster")
    # "this song" is the one just started
    added = world.call("AddToPlaylist", playlist="country 2016")
    assert added["added"][0]["song_name"] == song["song_name"]
    assert added["playlist_content"][-1] == song["song_name"]
    fails(world, "AddToPlaylist", 409, playlist="country 2016")
    fails(world, "AddToPlaylist", 404, playlist="no such playlist", entity_name=song["song_name"])
    queue = world.call("PlayMusic", genre="jazz", sort="newest", service="spotify")["playlist"]
    assert queue and [q["year"] for q in queue] == sorted((q["year"] for q in queue), reverse=True)
    fails(world, "PlayMusic", 400, genre="jazz", service="myspace")
    fails(world, "PlayMusic", 404, artist="Nobody At All")


# ---- creative works -----------------------------------------------------------------------------
def test_search_and_rate_books() -> None:
    world = make_world("mtu_creative")
    found = world.call("SearchCreativeWork", object_name="switched", object_type="tv show")[
        "creative_work_info"
    ]
    assert [w["title"] for w in found] == ["Switched"]
    assert world.call("SearchCreativeWork", object_name="zzz")["creative_work_info"] == []
    work = world.rows("mtu_creative_works", {"title": "The Adventures of Augie March"})[0]
    rated = world.call(
        "RateBook", rating_value="one", object_name="the adventures of augie march", best_rating="6"
    )
    assert rated["rating_count"] == work["rating_count"] + 1
    again = world.call("RateBook", rating_value="5", object_name="The Adventures of Augie March")
    assert again["rating_count"] == rated["rating_count"]  # a new rating replaces the old one
    assert world.rows("mtu_creative_ratings", {"work_id": work["work_id"]})[0]["rating_value"] == 5
    fails(world, "RateBook", 400, rating_value="9", object_name="Moby Dick")
    fails(world, "RateBook", 400, rating_value="3", object_name="Switched", object_type="tv show")
    fails(world, "RateBook", 404, rating_value="3", object_name="Unwritten Book")
    current = world.call(
        "RateBook", rating_value="four", object_select="this textbook", object_type="textbook"
    )
    assert current["object_type"] == "textbook"
