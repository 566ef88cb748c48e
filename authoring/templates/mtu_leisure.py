"""Templates of the going-out and at-home `mtu` apps: restaurants, movies, music, events, creative
works, the library, homes and appointments.

A user knows places, titles, names, dates and their own library number; never a reservation,
ticket or appointment id.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from toolgym.authoring.generate import Draft, Skip, Template
from toolgym.authoring.templates.common import money, plain
from toolgym.authoring.templates.mtu_shared import (
    NUMBER_WORDS,
    PROVIDER_WORDS,
    bare_day,
    book_appointment,
    buy_movie_tickets,
    event_kind,
    find_showtimes,
    first_show_from,
    future_day,
    next_event,
    one,
    people,
    plural,
    provider_hour,
    provider_kind,
    reserve_table,
    showing,
    spoken_day,
    spoken_time,
    today,
    top_provider,
    top_provider_on_workday,
    unique_first,
    workday,
)

RESTAURANTS = ("mtu_restaurants",)
MOVIES = ("mtu_movies",)
MUSIC = ("mtu_music",)
EVENTS = ("mtu_events",)
CREATIVE = ("mtu_creative",)
LIBRARY = ("mtu_library",)
HOMES = ("mtu_homes",)
APPOINTMENTS = ("mtu_appointments",)
PRICE_WORDS = {1: "cheap", 2: "moderately priced", 3: "pricey", 4: "very expensive"}


# ---- restaurants --------------------------------------------------------------------------------
def _cuisine_city(d: Draft) -> dict[str, Any]:
    return d.pick(
        "SELECT DISTINCT cuisine, city FROM mtu_restaurants_venues WHERE city != 'Cambridge' ORDER BY city, cuisine"
    )


def best_restaurant(d: Draft) -> None:
    row = _cuisine_city(d)
    extra = d.choice(
        [
            ("", {}),
            (" with outdoor seating", {"has_seating_outdoors": "True"}),
            (" with vegetarian options", {"has_vegetarian_options": "True"}),
            (" that serves alcohol", {"serves_alcohol": "True"}),
            (" with live music", {"has_live_music": "True"}),
        ]
    )
    d.query(
        [
            "What's the best {c} restaurant in {t}{x}?",
            "Recommend a top-rated {c} place in {t}{x}.",
            "I'm craving {c} food in {t}. Which restaurant{x} has the best rating?",
        ],
        c=row["cuisine"],
        t=row["city"],
        x=extra[0],
    )
    found = d.call("FindRestaurants", cuisine=row["cuisine"], city=row["city"], **extra[1])["restaurants"]
    r = unique_first(found, "rating", "restaurant")
    d.answer(
        f"{r['restaurant_name']} at {r['address']}, rated {r['rating']} ({r['price_range']}).",
        str(r["restaurant_name"]),
    )


def _table_time(d: Draft, opens: str, closes: str) -> str:
    first, last = int(opens[:2]) + 1, int(closes[:2]) - 2
    if last < first:
        raise Skip("short opening hours")
    return f"{d.rng.randint(first, last):02d}:{d.choice(['00', '30'])}"


def reserve_best(d: Draft) -> None:
    row = _cuisine_city(d)
    day = future_day(d, 1, 30)
    n, said = people(d)
    r = unique_first(
        d.call("FindRestaurants", cuisine=row["cuisine"], city=row["city"])["restaurants"],
        "rating",
        "restaurant",
    )
    venue = d.rows(
        "SELECT opens, closes FROM mtu_restaurants_venues WHERE restaurant_name = ? AND city = ?",
        r["restaurant_name"],
        row["city"],
    )[0]
    at = _table_time(d, venue["opens"], venue["closes"])
    # the query is phrased once the time fits the winner's opening hours (a query may come last)
    d.query(
        [
            "Book a table for {n} at the best-rated {c} restaurant in {t} {w} at {h}.",
            "Find the top {c} restaurant in {t} and reserve it for {n} people {w}, {h}.",
            "We're {n} and want {c} food in {t} {w}. Reserve the highest-rated place for {h}.",
        ],
        n=said,
        c=row["cuisine"],
        t=row["city"],
        w=spoken_day(d, day),
        h=spoken_time(d, at),
    )
    reserve_table(d, r["restaurant_name"], row["city"], day, at, str(n))
    d.answer(
        f"Reserved {r['restaurant_name']} for {n} on {day.isoformat()} at {at}.", str(r["restaurant_name"])
    )


def reserve_named(d: Draft) -> None:
    venue = d.pick("SELECT * FROM mtu_restaurants_venues WHERE city != 'Cambridge' ORDER BY restaurant_id")
    day = future_day(d, 1, 30)
    at = _table_time(d, venue["opens"], venue["closes"])
    n, said = people(d)
    d.query(
        [
            "Reserve a table at {r} in {t} for {n} {w} at {h}.",
            "Can you book {r} ({t}) {w}, {h}, party of {n}?",
            "I'd like a table for {n} at {r} in {t}, {w} at {h}.",
        ],
        r=venue["restaurant_name"],
        t=venue["city"],
        n=said,
        w=spoken_day(d, day),
        h=spoken_time(d, at),
    )
    reserve_table(d, venue["restaurant_name"], venue["city"], day, at, str(n))
    d.answer(
        f"Your table for {n} at {venue['restaurant_name']} is booked for {day.isoformat()} at {at}.",
        str(venue["restaurant_name"]),
    )


def reserve_ask_time(d: Draft) -> None:
    venue = d.pick("SELECT * FROM mtu_restaurants_venues WHERE city != 'Cambridge' ORDER BY restaurant_id")
    day = future_day(d, 1, 30)
    at = _table_time(d, venue["opens"], venue["closes"])
    d.query(
        ["Book a table for two at {r} in {t} {w}.", "Reserve {r} in {t} for two people {w}, please."],
        r=venue["restaurant_name"],
        t=venue["city"],
        w=spoken_day(d, day),
    )
    said = d.ask("time", at, "What time would you like the table?", keywords=["what time", "when"])
    reserve_table(d, venue["restaurant_name"], venue["city"], day, said, "2")
    d.answer(
        f"Booked {venue['restaurant_name']} for two on {day.isoformat()} at {at}.",
        str(venue["restaurant_name"]),
    )


CAMBRIDGE_AREAS = {
    "centre": "in the centre",
    "north": "in the north",
    "east": "in the east",
    "west": "in the west",
    "south": "in the south",
}


def cambridge_food(d: Draft) -> None:
    row = d.pick(
        "SELECT DISTINCT area, cuisine FROM mtu_restaurants_venues WHERE city = 'Cambridge' ORDER BY 1, 2"
    )
    d.query(
        [
            "Is there {n} restaurant {a} of Cambridge?",
            "I want {f} food {a} of town. Any suggestions, with the address?",
            "Find me somewhere serving {f} food {a}.",
        ],
        f=row["cuisine"],
        n=f"{'an' if row['cuisine'][0] in 'AEIOU' else 'a'} {row['cuisine']}",
        a=CAMBRIDGE_AREAS[row["area"]],
    )
    found = d.call("SearchRestaurant", area=row["area"], food=row["cuisine"].lower())["restaurants"]
    r = one(found, "restaurant")
    d.answer(
        f"{r['name']} serves {row['cuisine']} food at {r['address']} ({r['pricerange']}).",
        str(r["name"]),
    )


def cambridge_book(d: Draft) -> None:
    venue = d.pick("SELECT * FROM mtu_restaurants_venues WHERE city = 'Cambridge' ORDER BY restaurant_id")
    weekday = d.choice(["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"])
    at = _table_time(d, venue["opens"], venue["closes"])
    n, said = people(d)
    d.query(
        [
            "Book {r} for {n} people on {w} at {h}.",
            "I need a table at {r} on {w}, {h}, for {n}.",
        ],
        r=venue["restaurant_name"],
        n=said,
        w=weekday,
        h=spoken_time(d, at),
    )
    booked = d.call(
        "BookRestaurant",
        name=venue["restaurant_name"],
        day=weekday.lower(),
        time=at,
        people=str(n),
        city="Cambridge",
    )
    ref = booked.get("reference") or booked.get("reservation_id") or ""
    d.answer(
        f"Booked {venue['restaurant_name']} on {weekday} at {at} for {n}. Reference {ref}.",
        str(venue["restaurant_name"]),
    )


def refuse_cancel_table(d: Draft) -> None:
    venue = d.pick("SELECT restaurant_name, city FROM mtu_restaurants_venues ORDER BY restaurant_id")
    d.query(
        ["Cancel my reservation at {r}.", "We can't make it to {r} in {t}; cancel the booking."],
        r=venue["restaurant_name"],
        t=venue["city"],
    )
    d.refuse(
        (),
        f"I'm sorry, I can't cancel the reservation at {venue['restaurant_name']}: none of my tools cancels one.",
    )


# ---- movies -------------------------------------------------------------------------------------
def top_online_movie(d: Draft) -> None:
    genre = d.pick("SELECT DISTINCT genre FROM mtu_movies_movies WHERE available_online = 1 ORDER BY genre")[
        "genre"
    ]
    d.query(
        [
            "Which {g} movies can I stream right now?",
            "Suggest some {g} films I can watch online.",
            "What {g} movies are available to watch at home?",
        ],
        g=genre.lower(),
    )
    movies = d.call("FindMovies", genre=genre)["movies"]
    online = [m for m in movies if m["available_online"]]
    if not online:
        raise Skip("none online")
    titles = ", ".join(str(m["title"]) for m in online[:5])
    d.answer(f"You can stream: {titles}.", str(online[0]["title"]))


def movie_director(d: Draft) -> None:
    movie = d.pick("SELECT * FROM mtu_movies_movies WHERE available_online = 1 ORDER BY movie_id")
    d.query(
        [
            "Who directed {t}, and who's in it?",
            "Tell me about the movie {t}: director and cast.",
            "Who is the director of {t}?",
        ],
        t=movie["title"],
    )
    found = d.call("FindMovies", genre=movie["genre"])["movies"]
    m = next((x for x in found if x["title"] == movie["title"]), None)
    if m is None:
        raise Skip("not listed")
    d.answer(
        f"{m['title']} ({m['year']}) is directed by {m['directed_by']} and stars {m['starring']}.",
        str(m["directed_by"]),
    )


def play_with_subtitles(d: Draft) -> None:
    movie = d.pick(
        "SELECT * FROM mtu_movies_movies WHERE available_online = 1 AND subtitle_languages LIKE '%,%' ORDER BY movie_id"
    )
    language = d.choice([x for x in movie["subtitle_languages"].split(",") if x != "English"])
    d.query(
        [
            "Play {t} with {l} subtitles.",
            "I want to watch {t} now, {l} subtitles on.",
            "Start the movie {t} and turn on subtitles in {l}.",
        ],
        t=movie["title"],
        l=language,
    )
    d.call("PlayMovie", title=movie["title"], subtitles="True", subtitle_language=language)
    d.answer(f"{movie['title']} is playing with {language} subtitles.", language)


def showtimes(d: Draft) -> None:
    row, day = showing(d), future_day(d, 0, 14)
    d.query(
        [
            "When is {m} showing in {c} {w}?",
            "What are the showtimes for {m} in {c} {w}?",
            "I want to see {m} in {c} {w}. What times are there?",
        ],
        m=row["title"],
        c=row["city"],
        w=spoken_day(d, day),
    )
    shows = find_showtimes(d, row, day)
    first = one(shows, "show")
    times = ", ".join(f"{s['show_time']} ({s['theater_name']}, {s['show_type']})" for s in shows[:6])
    d.answer(f"{row['title']} in {row['city']} on {day.isoformat()}: {times}.", str(first["show_time"]))


def buy_first_show(d: Draft) -> None:
    row, day = showing(d), future_day(d, 0, 14)
    n, said = people(d)
    after = d.choice([12, 15, 17, 18, 19])
    d.query(
        [
            "Get {n} tickets for the first showing of {m} in {c} after {a} {w}.",
            "Buy {n} tickets to {m} in {c} {w}, the earliest show after {a}.",
        ],
        n=said,
        m=row["title"],
        c=row["city"],
        w=spoken_day(d, day),
        a=spoken_time(d, f"{after:02d}:00"),
    )
    shows = find_showtimes(d, row, day)
    s = first_show_from(shows, f"{after:02d}:00", "show")
    booked = buy_movie_tickets(d, row, day, s, n)
    d.answer(
        f"Bought {n} tickets for {row['title']} at {s['show_time']} at {booked['theater_name']}: ${money(booked['price'])}.",
        str(s["show_time"]),
    )


def theater_today(d: Draft) -> None:
    theater = d.pick("SELECT theater_name, city FROM mtu_movies_theaters ORDER BY theater_id")
    d.query(
        ["What's playing at {t} today?", "Which movies are on at {t} in {c}?"],
        t=theater["theater_name"],
        c=theater["city"],
    )
    shows = d.call("SearchScreeningEvent", location_name=theater["theater_name"])["screening_events"]
    titles = sorted({str(s["movie_name"]) for s in shows})
    if not titles:
        raise Skip("nothing on")
    d.answer(f"{theater['theater_name']} shows {', '.join(titles)}.", titles[0])


def refuse_rent_movie(d: Draft) -> None:
    movie = d.pick("SELECT title FROM mtu_movies_movies ORDER BY movie_id")["title"]
    d.query(["Download {t} so I can watch it offline.", "Buy a digital copy of {t} for me."], t=movie)
    d.refuse(
        (),
        f"I'm sorry, I can't download or buy {movie}: my movie tools only stream, search and sell cinema tickets.",
    )


# ---- music --------------------------------------------------------------------------------------
def _artist(d: Draft) -> str:
    return str(d.pick("SELECT DISTINCT artist FROM mtu_music_songs ORDER BY artist")["artist"])


def top_song(d: Draft) -> None:
    artist = _artist(d)
    d.query(
        [
            "What's the most popular song by {a}?",
            "Which {a} song is the biggest hit?",
            "Find me {o} top track.",
        ],
        a=artist,
        o=possessive(artist),
    )
    s = one(d.call("LookupSong", artist=artist)["songs"], "song")
    d.answer(f"{a_song(s)} is {possessive(artist)} most popular song.", str(s["song_name"]))


def possessive(name: str) -> str:
    """ "Paper Echo" -> "Paper Echo's"; "Wild Foxes" -> "Wild Foxes'"."""
    return f"{name}'" if name.endswith("s") else f"{name}'s"


def a_song(s: dict[str, Any]) -> str:
    return f'"{s["song_name"]}" (from {s["album"]}, {s["year"]})'


# the music app's devices, and how a person names each
DEVICES = {
    "TV": "on the TV",
    "kitchen speaker": "on the kitchen speaker",
    "bedroom speaker": "on the bedroom speaker",
    "Living room": "in the living room",
    "Kitchen": "in the kitchen",
    "Patio": "out on the patio",
    "Phone": "on my phone",
}


def play_top_song(d: Draft) -> None:
    artist, device = _artist(d), d.choice(sorted(DEVICES))
    d.query(
        [
            "Play the most popular {a} song {v}.",
            "Put on {o} biggest hit {v}.",
            "Find {o} top song and play it {v}.",
        ],
        a=artist,
        o=possessive(artist),
        v=DEVICES[device],
    )
    s = one(d.call("LookupSong", artist=artist)["songs"], "song")
    d.call("PlaySong", song_name=s["song_name"], artist=artist, playback_device=device)
    d.answer(f"Playing {a_song(s)} by {artist} {DEVICES[device]}.", str(s["song_name"]))


def add_song_to_playlist(d: Draft) -> None:
    song = d.pick(
        "SELECT s.song_name, s.artist FROM mtu_music_songs s WHERE (SELECT count(*) FROM mtu_music_songs o"
        " WHERE o.song_name = s.song_name) = 1 ORDER BY s.song_id"
    )
    playlist = d.pick(
        "SELECT p.name, p.playlist_id FROM mtu_music_playlists p WHERE p.owner = 'me' ORDER BY p.playlist_id"
    )
    d.query(
        [
            "Add {s} by {a} to my {p} playlist.",
            "Put the song {s} ({a}) on my playlist {p}.",
            "Save {o} {s} to {p}.",
        ],
        s=song["song_name"],
        a=song["artist"],
        o=possessive(song["artist"]),
        p=playlist["name"],
    )
    d.call("AddToPlaylist", playlist=playlist["name"], entity_name=song["song_name"], artist=song["artist"])
    d.answer(f"Added {song['song_name']} to {playlist['name']}.", str(song["song_name"]))


def add_top_song_to_playlist(d: Draft) -> None:
    artist = _artist(d)
    playlist = d.pick("SELECT name FROM mtu_music_playlists WHERE owner = 'me' ORDER BY playlist_id")["name"]
    d.query(
        [
            "Find the most popular song by {a} and add it to my {p} playlist.",
            "Put {o} top track on {p}.",
        ],
        a=artist,
        o=possessive(artist),
        p=playlist,
    )
    s = one(d.call("LookupSong", artist=artist)["songs"], "song")
    d.call("AddToPlaylist", playlist=playlist, entity_name=s["song_name"], artist=artist)
    d.answer(f"Added {a_song(s)} to {playlist}.", str(s["song_name"]))


def play_genre(d: Draft) -> None:
    row = d.pick("SELECT DISTINCT genre, year FROM mtu_music_songs ORDER BY genre, year")
    genre, year = row["genre"], d.choice(["", str(row["year"])])
    d.query(
        ["Play some {g} music{y}.", "I'm in the mood for {g}{y}; put something on.", "Start a {g} mix{y}."],
        g=genre,
        y=f" from {year}" if year else "",
    )
    args = {"genre": genre} | ({"year": year} if year else {})
    queue = d.call("PlayMusic", **args)["playlist"]
    first = one(queue, "song")
    d.answer(
        f'Playing {genre}, starting with "{first["song_name"]}" by {first["artist"]}.',
        str(first["song_name"]),
    )


def songs_of_year(d: Draft) -> None:
    row = d.pick("SELECT DISTINCT genre, year FROM mtu_music_songs ORDER BY 1, 2")
    d.query(
        ["Find {g} songs from {y}.", "Which {g} tracks came out in {y}?"],
        g=row["genre"],
        y=row["year"],
    )
    songs = d.call("LookupMusic", genre=row["genre"], year=str(row["year"]))["songs"]
    s = one(songs, "song")
    names = ", ".join(f"{x['song_name']} ({x['artist']})" for x in songs[:5])
    d.answer(f"{plural(len(songs), 'song')}: {names}.", str(s["song_name"]))


def refuse_delete_playlist(d: Draft) -> None:
    playlist = d.pick("SELECT name FROM mtu_music_playlists WHERE owner = 'me' ORDER BY playlist_id")["name"]
    d.query(["Delete my {p} playlist.", "Remove the whole {p} playlist from my library."], p=playlist)
    d.refuse(
        (), f"I'm sorry, I can't delete the {playlist} playlist: my music tools cannot remove playlists."
    )


# ---- events and attractions ---------------------------------------------------------------------
EVENT_WORDS = {"Music": "concerts", "Sports": "sports games", "Theater": "plays and shows"}


def next_events(d: Draft) -> None:
    row = d.pick(
        "SELECT DISTINCT city, event_type FROM mtu_events_events WHERE date >= ? ORDER BY 1, 2",
        today(d).isoformat(),
    )
    d.query(
        ["What {k} are coming up in {c}?", "Are there any {k} in {c} soon?", "Find me {k} happening in {c}."],
        k=EVENT_WORDS[row["event_type"]],
        c=row["city"],
    )
    events = d.call("FindEvents", event_type=row["event_type"], city=row["city"])["events"]
    e = one(events, "event")
    d.answer(
        f"The next is {e['event_name']} on {e['date']} at {e['time']}, {e['venue']}; {plural(len(events), 'event')} in all.",
        str(e["event_name"]),
    )


def event_dates(d: Draft) -> None:
    row = d.pick(
        "SELECT DISTINCT event_name, city FROM mtu_events_events WHERE date >= ? ORDER BY 1, 2",
        today(d).isoformat(),
    )
    d.query(
        ["When is {e} playing in {c}?", "On which dates can I see {e} in {c}?"],
        e=row["event_name"],
        c=row["city"],
    )
    dates = d.call("GetEventDates", event_name=row["event_name"], city=row["city"])["dates"]
    first = one(dates, "date")
    said = ", ".join(f"{x['date']} {x['time']}" for x in dates)
    d.answer(f"{row['event_name']} in {row['city']}: {said}.", str(first["date"]))


def buy_event_tickets(d: Draft) -> None:
    row = event_kind(d)
    n, said = people(d)
    d.query(
        [
            "Buy {n} tickets for the next {g} {k} in {c}.",
            "Get me {n} tickets to the soonest {g} {k} in {c}.",
        ],
        n=said,
        g=row["category"].lower() if row["category"] != "Hip Hop" else "hip hop",
        k={"Music": "concert", "Sports": "game", "Theater": "show"}[row["event_type"]],
        c=row["city"],
    )
    e = next_event(d, row)
    bought = d.call(
        "BuyEventTickets",
        event_name=e["event_name"],
        number_of_tickets=str(n),
        date=e["date"],
        city=row["city"],
    )
    d.answer(
        f"Bought {n} tickets for {e['event_name']} on {e['date']} at {e['venue']}: ${money(bought['total_price'])}.",
        str(e["event_name"]),
    )


def buy_tickets_ask_count(d: Draft) -> None:
    row = d.pick("SELECT * FROM mtu_events_events WHERE date >= ? ORDER BY event_id", today(d).isoformat())
    n = d.choice([2, 3, 4, 5, 6])
    day = date.fromisoformat(row["date"])
    d.query(
        ["I want tickets for {e} in {c} {w}.", "Book tickets to {e} ({c}) {w}, please."],
        e=row["event_name"],
        c=row["city"],
        w=spoken_day(d, day),
    )
    said = d.ask("number_of_tickets", NUMBER_WORDS[n], "How many tickets do you need?", keywords=["how many"])
    bought = d.call(
        "BuyEventTickets",
        event_name=row["event_name"],
        number_of_tickets=said,
        date=row["date"],
        city=row["city"],
    )
    d.answer(
        f"Bought {n} tickets for {row['event_name']}: ${money(bought['total_price'])}.",
        plain(bought["total_price"]),
    )


def free_attractions(d: Draft) -> None:
    city = d.pick("SELECT DISTINCT city FROM mtu_events_attractions ORDER BY city")["city"]
    kids = d.rng.random() < 0.5
    d.query(
        [
            "What free attractions are there in {c}{k}?",
            "List some things to see in {c} that cost nothing{k}.",
        ],
        c=city,
        k=" for kids" if kids else "",
    )
    args = {"location": city, "free_entry": "True"} | ({"good_for_kids": "True"} if kids else {})
    found = d.call("FindAttractions", **args)["attractions"]
    a = one(found, "attraction")
    names = ", ".join(str(x["attraction_name"]) for x in found[:5])
    d.answer(f"Free in {city}: {names}.", str(a["attraction_name"]))


# MultiWOZ's attraction types as a person says them
ATTRACTION_WORDS = {
    "museum": "museum",
    "multiple sports": "sports centre",
    "park": "park",
    "theatre": "theatre",
    "boat": "boat tour",
    "entertainment": "place for entertainment",
    "college": "college to visit",
    "nightclub": "nightclub",
    "architecture": "building worth seeing for its architecture",
    "cinema": "cinema",
    "concerthall": "concert hall",
    "swimmingpool": "swimming pool",
}


def cambridge_attraction(d: Draft) -> None:
    row = d.pick(
        "SELECT DISTINCT type, area FROM mtu_events_attractions WHERE city = 'Cambridge' ORDER BY 1, 2"
    )
    if row["type"] not in ATTRACTION_WORDS:
        raise Skip(f"no words for {row['type']}")
    d.query(
        ["Is there a {t} {a} of Cambridge? What's the address?", "Find a {t} {a} of town for me."],
        t=ATTRACTION_WORDS[row["type"]],
        a=CAMBRIDGE_AREAS.get(row["area"], f"in the {row['area']}"),
    )
    found = d.call("searchAttraction", type=row["type"], area=row["area"], return_info=["all"])["attractions"]
    a = one(found, "attraction")
    name = a.get("name") or a.get("attraction_name")
    d.answer(f"{name} at {a.get('address')}.", str(name))


def refuse_resell(d: Draft) -> None:
    row = d.pick("SELECT event_name, city FROM mtu_events_events ORDER BY event_id")
    d.query(
        ["Sell my tickets for {e} in {c}.", "I can't go to {e}; refund my tickets."],
        e=row["event_name"],
        c=row["city"],
    )
    d.refuse(
        (),
        f"I'm sorry, I can't refund or resell tickets for {row['event_name']}: my event tools only find events and buy tickets.",
    )


# ---- creative works -----------------------------------------------------------------------------
def work_info(d: Draft) -> None:
    work = d.pick(
        "SELECT * FROM mtu_creative_works w WHERE (SELECT count(*) FROM mtu_creative_works o WHERE o.title = w.title) = 1"
        " ORDER BY work_id"
    )
    d.query(
        [
            "Who created the {k} {t}, and how is it rated?",
            "Tell me about the {k} {t}.",
            "Where can I find the {k} {t}?",
        ],
        k=work["object_type"],
        t=work["title"],
    )
    w = one(
        d.call("SearchCreativeWork", object_name=work["title"], object_type=work["object_type"])[
            "creative_work_info"
        ],
        "work",
    )
    d.answer(
        f"{w['title']} ({w['object_type']}, {w['year']}) by {w['creator']}, rated {w['average_rating']}; on {w['platforms']}.",
        str(w["creator"]),
    )


def rate_work(d: Draft) -> None:
    work = d.pick(
        "SELECT * FROM mtu_creative_works w WHERE object_type IN ('book', 'novel', 'saga', 'textbook') AND"
        " (SELECT count(*) FROM mtu_creative_works o WHERE o.title = w.title) = 1 ORDER BY work_id"
    )
    stars = d.choice([1, 2, 3, 4, 5])
    d.query(
        [
            "Give the {k} {t} {s} out of 5.",
            "Rate {t} {s} stars.",
            "I'd rate the {k} {t} a {s}/5.",
        ],
        k=work["object_type"],
        t=work["title"],
        s=stars,
    )
    d.call(
        "RateBook",
        rating_value=str(stars),
        object_name=work["title"],
        object_type=work["object_type"],
        best_rating="5",
    )
    d.answer(f"Rated {work['title']} {stars} out of 5.", work["title"])


# ---- library ------------------------------------------------------------------------------------
def book_status(d: Draft) -> None:
    title = d.pick("SELECT title FROM mtu_library_books ORDER BY book_id")["title"]
    d.query(
        [
            "Is {t} available at the library?",
            "Can I borrow {t} right now?",
            "Does the library have {t} in stock?",
        ],
        t=title,
    )
    s = d.call("get_book_status", book_title=title)
    formats = ", ".join(str(f) for f in s["available_formats"]) or "none"
    d.answer(
        f"{title} is {s['book_status']} ({s['copies_available']} of {s['copies_total']} copies free; formats: {formats}).",
        str(s["book_status"]),
    )


def _member_with_fees(d: Draft) -> int:
    return int(
        d.pick(
            "SELECT library_number FROM mtu_library_fees GROUP BY library_number"
            " HAVING sum(amount_cents - paid_cents) > 0 ORDER BY library_number"
        )["library_number"]
    )


def late_fees(d: Draft) -> None:
    member = _member_with_fees(d)
    d.query(
        [
            "How much do I owe the library? My card number is {m}.",
            "What are my late fees? Library number {m}.",
            "Do I have any fines on library account {m}?",
        ],
        m=member,
    )
    f = d.call("get_late_fees", library_ID=member)
    d.answer(f"You owe ${money(f['total_owed'])}.", plain(f["total_owed"]))


def pay_fees(d: Draft) -> None:
    member = _member_with_fees(d)
    method = d.choice(["credit card", "debit card", "cash"])
    d.query(
        [
            "Pay off everything I owe the library with my {p}. My library number is {m}.",
            "Check my library fees (card {m}) and pay them all by {p}.",
        ],
        m=member,
        p=method,
    )
    owed = d.call("get_late_fees", library_ID=member)["total_owed"]
    if not owed:
        raise Skip("nothing owed")
    d.call("make_payment", account_number=str(member), payment_amount=float(owed), payment_method=method)
    d.answer(f"You owed ${money(owed)}; I paid it all by {method}.", plain(owed))


def _loan(d: Draft) -> dict[str, Any]:
    return d.pick(
        "SELECT l.library_number, b.title FROM mtu_library_loans l JOIN mtu_library_copies c USING (copy_id)"
        " JOIN mtu_library_books b USING (book_id) WHERE l.returned_at IS NULL AND l.renewals < 2"
        " AND NOT EXISTS (SELECT 1 FROM mtu_library_reservations r WHERE r.book_id = b.book_id AND r.status = 'waiting')"
        " ORDER BY l.loan_id"
    )


def renew(d: Draft) -> None:
    loan = _loan(d)
    d.query(
        [
            "Renew {t} on my library card {m}.",
            "I need more time with {t}; please renew it. Library number {m}.",
            "Extend my loan of {t}, card {m}.",
        ],
        t=loan["title"],
        m=loan["library_number"],
    )
    r = d.call("renew_books", library_number=int(loan["library_number"]), book_names=loan["title"])
    d.answer(f"Renewed {loan['title']}. {r.get('message', '')}".strip(), str(loan["title"]))


def reserve(d: Draft) -> None:
    book = d.pick(
        "SELECT b.title FROM mtu_library_books b WHERE EXISTS (SELECT 1 FROM mtu_library_copies c WHERE c.book_id = b.book_id)"
        " AND NOT EXISTS (SELECT 1 FROM mtu_library_copies c WHERE c.book_id = b.book_id AND NOT EXISTS"
        " (SELECT 1 FROM mtu_library_loans l WHERE l.copy_id = c.copy_id AND l.returned_at IS NULL)) ORDER BY b.book_id"
    )
    member = d.pick("SELECT library_number FROM mtu_library_members ORDER BY library_number")[
        "library_number"
    ]
    d.query(
        [
            "Put a hold on {t} for me, card number {m}.",
            "{t} is checked out; reserve it for me. My library card is {m}.",
        ],
        t=book["title"],
        m=member,
    )
    d.call("reserve_book", book_title=book["title"], card_number=int(member))
    d.answer(f"You're on the waiting list for {book['title']}.", str(book["title"]))


CITIES = ("New York", "Boston", "Chicago", "Seattle", "Denver", "Austin", "Portland", "Miami")


def join_library(d: Draft) -> None:
    city = d.choice(CITIES)
    d.query(
        [
            "I live in {c}. Sign me up for a library card.",
            "Apply for a library membership for me; I'm a {c} resident.",
            "How much would a library membership cost me? I live in {c}. Please apply.",
        ],
        c=city,
    )
    m = d.call("apply_for_membership", city_of_residence=city)
    d.answer(
        f"Approved: your library number is {m['library_number']}, fee ${money(m['membership_fee'])} a month.",
        plain(m["membership_fee"]),
    )


def renew_ask_card(d: Draft) -> None:
    loan = _loan(d)
    d.query(["Please renew {t} for me.", "Can you extend my loan of {t}?"], t=loan["title"])
    said = d.ask(
        "library_number",
        str(loan["library_number"]),
        "What's your library card number?",
        keywords=["card", "number"],
    )
    d.call("renew_books", library_number=int(said), book_names=loan["title"])
    d.answer(f"Renewed {loan['title']}.", str(loan["title"]))


def refuse_return(d: Draft) -> None:
    loan = _loan(d)
    d.query(
        ["Return {t} to the library for me.", "Mark {t} as returned, card {m}."],
        t=loan["title"],
        m=loan["library_number"],
    )
    d.refuse((), f"I'm sorry, I can't return {loan['title']}: none of my library tools records a return.")


# ---- homes --------------------------------------------------------------------------------------
def cheapest_home(d: Draft) -> None:
    row = d.pick(
        "SELECT DISTINCT area, intent, number_of_beds, number_of_baths FROM mtu_homes_properties ORDER BY 1, 2, 3, 4"
    )
    d.query(
        [
            "What's the cheapest {b}-bedroom, {t}-bath place to {i} in {a}?",
            "Find me a home to {i} in {a} with {B} and {T}, lowest price first.",
        ],
        b=row["number_of_beds"],
        t=row["number_of_baths"],
        B=plural(int(row["number_of_beds"]), "bedroom"),
        T=plural(int(row["number_of_baths"]), "bathroom"),
        i=row["intent"],
        a=row["area"],
    )
    homes = d.call(
        "FindHomeByArea",
        area=row["area"],
        intent=row["intent"],
        number_of_beds=str(row["number_of_beds"]),
        number_of_baths=str(row["number_of_baths"]),
    )["properties"]
    h = unique_first(homes, "price", "home")
    d.answer(f"{h['property_name']} at {h['address']}, ${money(h['price'])}.", str(h["property_name"]))


def visit_cheapest(d: Draft) -> None:
    row = d.pick(
        "SELECT DISTINCT area, number_of_beds FROM mtu_homes_properties WHERE intent = 'rent' ORDER BY 1, 2"
    )
    day = future_day(d, 1, 20)
    pets = d.rng.random() < 0.3
    d.query(
        [
            "Find the cheapest {b}-bedroom apartment for rent in {a}{p} and book me a viewing {w}.",
            "I want to see the least expensive {b}-bed rental in {a}{p}. Schedule a visit {w}.",
        ],
        b=row["number_of_beds"],
        a=row["area"],
        p=" that allows pets" if pets else "",
        w=spoken_day(d, day),
    )
    args = {"area": row["area"], "number_of_beds": str(row["number_of_beds"])} | (
        {"pets_allowed": "True"} if pets else {}
    )
    flat = unique_first(d.call("FindApartment", **args)["apartments"], "price", "apartment")
    d.call("ScheduleVisit", property_name=flat["property_name"], visit_date=day.isoformat())
    d.answer(
        f"Booked a viewing of {flat['property_name']} ({flat['address']}, ${money(flat['price'])} a month) on {day.isoformat()}.",
        str(flat["property_name"]),
    )


def visit_ask_date(d: Draft) -> None:
    home = d.pick(
        "SELECT property_name FROM mtu_homes_properties p WHERE (SELECT count(*) FROM mtu_homes_properties o"
        " WHERE o.property_name = p.property_name) = 1 ORDER BY property_id"
    )["property_name"]
    day = future_day(d, 1, 20)
    d.query(["I'd like to visit {p}. Can you set that up?", "Schedule a viewing of {p} for me."], p=home)
    said = d.ask(
        "visit_date", day.isoformat(), "Which day would you like to visit?", keywords=["day", "date", "when"]
    )
    d.call("ScheduleVisit", property_name=home, visit_date=said)
    d.answer(f"Your visit to {home} is booked for {said}.", home)


def refuse_make_offer(d: Draft) -> None:
    home = d.pick(
        "SELECT property_name, area FROM mtu_homes_properties WHERE intent = 'buy' ORDER BY property_id"
    )
    d.query(
        ["Make an offer on {p} in {a}.", "Submit a bid for {p} ({a}) at the asking price."],
        p=home["property_name"],
        a=home["area"],
    )
    d.refuse(
        (),
        f"I'm sorry, I can't make an offer on {home['property_name']}: I can only search homes and schedule visits.",
    )


# ---- appointments -------------------------------------------------------------------------------
def best_provider(d: Draft) -> None:
    row = provider_kind(d)
    d.query(
        [
            "Who's the best-rated {k} in {c}?",
            "Find me a highly rated {k} in {c}, with the phone number.",
            "I need a good {k} in {c}.",
        ],
        k=PROVIDER_WORDS[row["kind"]],
        c=row["city"],
    )
    p = top_provider(d, row)
    d.answer(
        f"{p['provider_name']} ({p['average_rating']}), {p['address']}, phone {p['phone_number']}.",
        str(p["provider_name"]),
    )


def book_best_provider(d: Draft) -> None:
    row, day, p = top_provider_on_workday(d)
    at = f"{provider_hour(d, p):02d}:{d.choice(['00', '30'])}"
    d.query(
        [
            "Book me with the best-rated {k} in {c} {w} at {h}.",
            "Find the top {k} in {c} and make an appointment {w}, {h}.",
        ],
        k=PROVIDER_WORDS[row["kind"]],
        c=row["city"],
        w=spoken_day(d, day),
        h=spoken_time(d, at),
    )
    booked = book_appointment(d, day, at, row["kind"], p["provider_name"])
    d.answer(
        f"Booked with {p['provider_name']} on {day.isoformat()} at {at}, {booked['address']}.",
        str(p["provider_name"]),
    )


def _mine(d: Draft) -> dict[str, Any]:
    return d.pick(
        "SELECT * FROM mtu_appointments_appointments a WHERE owner = 'user' AND status = 'scheduled'"
        " AND appointment_date >= ? AND (SELECT count(*) FROM mtu_appointments_appointments o WHERE o.owner = 'user'"
        " AND o.status = 'scheduled' AND o.appointment_name = a.appointment_name) = 1 ORDER BY appointment_id",
        today(d).isoformat(),
    )


def appointments_on(d: Draft) -> None:
    mine = _mine(d)
    day = date.fromisoformat(mine["appointment_date"])
    d.query(
        [
            "Do I have any appointments {w}?",
            "What appointments are on my schedule {w}?",
            "Check my appointments {w}.",
        ],
        w=spoken_day(d, day),
    )
    found = d.call("get_user_appointments", date=day.isoformat())["appointments"]
    a = one(found, "appointment")
    said = "; ".join(f"{x['appointment_time']} {x['appointment_name']}" for x in found)
    d.answer(f"On {day.isoformat()}: {said}.", str(a["appointment_time"]))


def move_appointment(d: Draft) -> None:
    mine = _mine(d)
    hour = int(mine["appointment_time"][:2])
    new = f"{max(9, min(16, hour + d.choice([-2, -1, 1, 2]))):02d}:{d.choice(['00', '30'])}"
    if new == mine["appointment_time"]:
        raise Skip("same time")
    d.query(
        [
            "Move my {n} to {t}, same day.",
            "Can you reschedule the {n} to {t}?",
            "Change the time of my {n} to {t}.",
        ],
        n=mine["appointment_name"],
        t=spoken_time(d, new),
    )
    d.call("change_appointment", appointment_name=mine["appointment_name"], new_appointment_time=new)
    d.answer(f"Your {mine['appointment_name']} is now at {new} on {mine['appointment_date']}.", new)


def cancel_appointment(d: Draft) -> None:
    mine = _mine(d)
    d.query(
        [
            "Cancel my {n}.",
            "I can't make the {n} on {w}; please delete it.",
            "Remove the {n} from my schedule.",
        ],
        n=mine["appointment_name"],
        w=bare_day(d, date.fromisoformat(mine["appointment_date"])),
    )
    d.call("delete_appointment", appointment_name=mine["appointment_name"])
    d.answer(f"Your {mine['appointment_name']} on {mine['appointment_date']} is cancelled.", "cancelled")


def remind_me(d: Draft) -> None:
    mine = _mine(d)
    before = d.choice(["30 minutes before", "1 hour before", "2 hours before", "1 day before"])
    d.query(
        [
            "Remind me about my {n}, {b}.",
            "Set a reminder {b} my {n}.",
            "I keep forgetting: put a reminder {b} my {n}.",
        ],
        n=mine["appointment_name"],
        b=before,
    )
    a = one(d.call("get_user_appointments", name=mine["appointment_name"])["appointments"], "appointment")
    r = d.call(
        "set_appointment_reminder",
        appointment_name=a["appointment_name"],
        appointment_date=a["appointment_date"],
        appointment_time=a["appointment_time"],
        appointment_address=a["appointment_address"],
        reminder_time=before,
    )
    d.answer(
        f"I'll remind you at {str(r['remind_at'])[:16].replace('T', ' ')} about your {a['appointment_name']}.",
        str(r["remind_at"])[11:16],
    )


def book_ask_time(d: Draft) -> None:
    p = d.pick(
        "SELECT * FROM mtu_appointments_providers p WHERE (SELECT count(*) FROM mtu_appointments_providers o WHERE o.name = p.name) = 1 ORDER BY provider_id"
    )
    day = workday(d)
    at = f"{d.rng.randint(int(p['opens'][:2]), int(p['closes'][:2]) - 1):02d}:00"
    d.query(
        ["Book an appointment with {n} {w}.", "I'd like to see {n} {w}; please book it."],
        n=p["name"],
        w=spoken_day(d, day),
    )
    said = d.ask("appointment_time", at, "What time works for you?", keywords=["what time", "time"])
    book_appointment(d, day, said, p["kind"], p["name"])
    d.answer(f"Booked with {p['name']} on {day.isoformat()} at {at}.", str(p["name"]))


def refuse_book_appointment(d: Draft) -> None:
    p = d.pick("SELECT name FROM mtu_appointments_providers ORDER BY provider_id")
    day = workday(d)
    d.query(
        ["Book me an appointment with {n} {w} at 10 am.", "Make an appointment with {n} {w}, 10:00."],
        n=p["name"],
        w=spoken_day(d, day),
    )
    d.refuse(
        ["BookAppointment"], f"I'm sorry, I cannot book with {p['name']}: no booking tool is available to me."
    )


TEMPLATES = [
    Template("mtu.restaurants.best", RESTAURANTS, best_restaurant),
    Template("mtu.restaurants.reserve_best", RESTAURANTS, reserve_best),
    Template("mtu.restaurants.reserve_named", RESTAURANTS, reserve_named),
    Template("mtu.restaurants.ask_time", RESTAURANTS, reserve_ask_time),
    Template("mtu.restaurants.cambridge_search", RESTAURANTS, cambridge_food),
    Template("mtu.restaurants.cambridge_book", RESTAURANTS, cambridge_book),
    Template("mtu.restaurants.refuse_cancel", RESTAURANTS, refuse_cancel_table),
    Template("mtu.movies.stream_genre", MOVIES, top_online_movie),
    Template("mtu.movies.director", MOVIES, movie_director),
    Template("mtu.movies.play_subtitles", MOVIES, play_with_subtitles),
    Template("mtu.movies.showtimes", MOVIES, showtimes),
    Template("mtu.movies.buy_first_show", MOVIES, buy_first_show),
    Template("mtu.movies.theater_listing", MOVIES, theater_today),
    Template("mtu.movies.refuse_download", MOVIES, refuse_rent_movie),
    Template("mtu.music.top_song", MUSIC, top_song),
    Template("mtu.music.play_top_song", MUSIC, play_top_song),
    Template("mtu.music.add_to_playlist", MUSIC, add_song_to_playlist),
    Template("mtu.music.add_top_song", MUSIC, add_top_song_to_playlist),
    Template("mtu.music.play_genre", MUSIC, play_genre),
    Template("mtu.music.songs_of_year", MUSIC, songs_of_year),
    Template("mtu.music.refuse_delete_playlist", MUSIC, refuse_delete_playlist),
    Template("mtu.events.upcoming", EVENTS, next_events),
    Template("mtu.events.dates", EVENTS, event_dates),
    Template("mtu.events.buy_next", EVENTS, buy_event_tickets),
    Template("mtu.events.ask_tickets", EVENTS, buy_tickets_ask_count),
    Template("mtu.events.free_attractions", EVENTS, free_attractions),
    Template("mtu.events.cambridge_attraction", EVENTS, cambridge_attraction),
    Template("mtu.events.refuse_refund", EVENTS, refuse_resell),
    Template("mtu.creative.info", CREATIVE, work_info),
    Template("mtu.creative.rate", CREATIVE, rate_work),
    Template("mtu.library.book_status", LIBRARY, book_status),
    Template("mtu.library.late_fees", LIBRARY, late_fees),
    Template("mtu.library.pay_fees", LIBRARY, pay_fees),
    Template("mtu.library.renew", LIBRARY, renew),
    Template("mtu.library.reserve", LIBRARY, reserve),
    Template("mtu.library.join", LIBRARY, join_library),
    Template("mtu.library.ask_card", LIBRARY, renew_ask_card),
    Template("mtu.library.refuse_return", LIBRARY, refuse_return),
    Template("mtu.homes.cheapest", HOMES, cheapest_home),
    Template("mtu.homes.visit_cheapest", HOMES, visit_cheapest),
    Template("mtu.homes.ask_date", HOMES, visit_ask_date),
    Template("mtu.homes.refuse_offer", HOMES, refuse_make_offer),
    Template("mtu.appointments.best_provider", APPOINTMENTS, best_provider),
    Template("mtu.appointments.book_best", APPOINTMENTS, book_best_provider),
    Template("mtu.appointments.on_day", APPOINTMENTS, appointments_on),
    Template("mtu.appointments.move", APPOINTMENTS, move_appointment),
    Template("mtu.appointments.cancel", APPOINTMENTS, cancel_appointment),
    Template("mtu.appointments.remind", APPOINTMENTS, remind_me),
    Template("mtu.appointments.ask_time", APPOINTMENTS, book_ask_time),
    Template("mtu.appointments.refuse_book", APPOINTMENTS, refuse_book_appointment),
]
