"""MTU movies: FindMovies (five SGD variants: an online catalogue, or what is showing in a city),
PlayMovie, GetTimesForMovie, BuyMovieTickets (SGD) and SearchScreeningEvent (SNIPS).

Theaters show movies at daily show times; each show has 120 seats per date, so tickets run out
(409). Streaming plays only titles available online, with a subtitle language the title has.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Volatile, format_id, read, set_counter, write
from toolgym.mocks.apps.mtu._common import (
    CITIES,
    DONTCARE,
    FIRST_NAMES,
    LAST_NAMES,
    STREETS,
    Count,
    Flag,
    canon,
    choice,
    city_name,
    count,
    earlier_booking,
    finalize_tools,
    flag,
    minutes,
    parse_clock,
    parse_day,
    require_city,
    street_address,
    time_window,
    words_in,
)
from toolgym.mocks.responses import bad_request, conflict, from_cents, not_found, ok, unprocessable
from toolgym.mocks.seeding import insert_rows, name_grid
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

GENRES: Final = (
    "Action",
    "Adventure",
    "Animation",
    "Comedy",
    "Drama",
    "Fantasy",
    "Horror",
    "Mystery",
    "Romance",
    "Sci-fi",
    "Thriller",
    "Documentary",
    "Family",
)
GENRE_WORDS: Final = {
    "animated": "Animation",
    "cartoon": "Animation",
    "scary": "Horror",
    "funny": "Comedy",
    "comedies": "Comedy",
    "science fiction": "Sci-fi",
    "scifi": "Sci-fi",
    "romantic": "Romance",
    "suspense": "Thriller",
    "documentaries": "Documentary",
    "kids": "Family",
}
TITLE_WORDS: Final = (
    ("The Last", "Silent", "Broken", "Hidden", "Midnight", "Frozen", "Golden", "Lost", "Electric", "Crimson"),
    ("Harbor", "Orbit", "Kingdom", "Signal", "Horizon", "Garden", "Empire", "Voyage", "Promise", "Shadow"),
)
SHOW_TYPES: Final = ("regular", "3d", "imax")
LOCATION_TYPES: Final = ("movie theater", "cinema", "movie house", "drive-in")
CHAINS: Final = ("AMC", "Regal", "Cinemark", "Century", "Alamo Drafthouse", "Landmark", "Loews Cineplex")
LANGUAGES: Final = ("English", "Spanish", "French", "German", "Hindi", "Japanese", "Chinese")
SEATS_PER_SHOW: Final = 120
HOME_CITY: Final = "San Francisco"  # where "near me" is for the SNIPS screening search


def genre_of(value: str) -> str | None:
    text = canon(value)
    for g in GENRES:
        if canon(g) in text or canon(g).rstrip("y") in text:
            return g
    for word, g in GENRE_WORDS.items():
        if word in text:
            return g
    return None


class MoviesApp(App):
    name = "mtu_movies"
    description = "Movies: a streaming catalogue, theater show times and tickets (MTU-Bench)."
    version = "1"
    schema = """
    CREATE TABLE mtu_movies_movies (
        movie_id TEXT PRIMARY KEY,
        title TEXT NOT NULL UNIQUE,
        genre TEXT NOT NULL,
        directed_by TEXT NOT NULL,
        starring TEXT NOT NULL,
        year INTEGER NOT NULL,
        aggregate_rating REAL NOT NULL,
        percent_rating INTEGER NOT NULL,
        available_online INTEGER NOT NULL,
        subtitle_languages TEXT NOT NULL
    );
    CREATE TABLE mtu_movies_theaters (
        theater_id TEXT PRIMARY KEY,
        theater_name TEXT NOT NULL,
        city TEXT NOT NULL,
        street_address TEXT NOT NULL,
        location_type TEXT NOT NULL,
        distance_km REAL NOT NULL
    );
    CREATE TABLE mtu_movies_showtimes (
        showtime_id TEXT PRIMARY KEY,
        theater_id TEXT NOT NULL REFERENCES mtu_movies_theaters(theater_id),
        movie_id TEXT NOT NULL REFERENCES mtu_movies_movies(movie_id),
        show_type TEXT NOT NULL,
        show_time TEXT NOT NULL,
        price_cents INTEGER NOT NULL
    );
    CREATE INDEX mtu_movies_showtimes_theater ON mtu_movies_showtimes(theater_id, movie_id);
    CREATE TABLE mtu_movies_tickets (
        ticket_id TEXT PRIMARY KEY,
        showtime_id TEXT NOT NULL REFERENCES mtu_movies_showtimes(showtime_id),
        show_date TEXT NOT NULL,
        number_of_tickets INTEGER NOT NULL CHECK (number_of_tickets > 0),
        total_cents INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('confirmed', 'cancelled')),
        created_at TEXT NOT NULL
    );
    CREATE INDEX mtu_movies_tickets_show ON mtu_movies_tickets(showtime_id, show_date);
    CREATE TABLE mtu_movies_playback (
        session_id TEXT PRIMARY KEY,
        movie_id TEXT NOT NULL REFERENCES mtu_movies_movies(movie_id),
        subtitles INTEGER NOT NULL,
        subtitle_language TEXT NOT NULL,
        started_at TEXT NOT NULL
    );
    """
    volatile: ClassVar[Volatile] = {
        "mtu_movies_tickets": ["created_at"],
        "mtu_movies_playback": ["started_at"],
    }

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        people = name_grid(FIRST_NAMES, LAST_NAMES)
        movies: list[dict[str, Any]] = []
        titles = sorted({f"{a} {b}" for a in TITLE_WORDS[0] for b in TITLE_WORDS[1]})
        for title in rng.sample(titles, 90):
            langs = ["English", *rng.sample(LANGUAGES[1:], rng.randint(0, 3))]
            rating = round(rng.uniform(4.0, 9.0), 1)
            movies.append(
                {
                    "movie_id": format_id("MOV", len(movies) + 1, 4),
                    "title": title,
                    "genre": rng.choice(GENRES),
                    "directed_by": rng.choice(people),
                    "starring": ", ".join(rng.sample(people, 3)),
                    "year": rng.randint(1995, clock.year),
                    "aggregate_rating": rating,
                    "percent_rating": int(rating * 10 + rng.randint(-8, 8)),
                    "available_online": int(rng.random() < 0.6),
                    "subtitle_languages": ",".join(langs),
                }
            )
        insert_rows(db, "mtu_movies_movies", movies)
        in_theaters = [m for m in movies if m["year"] >= clock.year - 1] or movies[:20]
        theaters: list[dict[str, Any]] = []
        showtimes: list[dict[str, Any]] = []
        for city in CITIES:
            for chain in rng.sample(CHAINS, 3):
                theater_id = format_id("THR", len(theaters) + 1, 4)
                theaters.append(
                    {
                        "theater_id": theater_id,
                        "theater_name": f"{chain} {rng.choice(STREETS).split()[0]} {rng.choice((8, 10, 12, 16))}",
                        "city": city.name,
                        "street_address": street_address(rng),
                        "location_type": rng.choices(LOCATION_TYPES, weights=(5, 3, 1, 1))[0],
                        "distance_km": round(rng.uniform(0.5, 25.0), 1),
                    }
                )
                for movie in rng.sample(in_theaters, min(6, len(in_theaters))):
                    kind = rng.choices(SHOW_TYPES, weights=(6, 2, 1))[0]
                    for at in sorted(rng.sample(("11:30", "14:00", "16:45", "19:00", "21:30"), 3)):
                        showtimes.append(
                            {
                                "showtime_id": format_id("SHOW", len(showtimes) + 1, 5),
                                "theater_id": theater_id,
                                "movie_id": movie["movie_id"],
                                "show_type": kind,
                                "show_time": at,
                                "price_cents": {"regular": 1250, "3d": 1550, "imax": 1850}[kind],
                            }
                        )
        insert_rows(db, "mtu_movies_theaters", theaters)
        insert_rows(db, "mtu_movies_showtimes", showtimes)
        tickets = []
        today = clock.date()
        for i in range(1, 701):
            s = rng.choice(showtimes)
            n = SEATS_PER_SHOW if rng.random() < 0.02 else rng.randint(1, 5)
            row = {
                "ticket_id": format_id("MT", i),
                "showtime_id": s["showtime_id"],
                "show_date": (today + timedelta(days=rng.randint(0, 7))).isoformat(),
                "number_of_tickets": n,
                "total_cents": n * s["price_cents"],
            }
            tickets.append(earlier_booking(row, rng, clock, days_ago=(0, 5)))
        insert_rows(db, "mtu_movies_tickets", tickets)
        set_counter(db, "MT", len(tickets))
        set_counter(db, "PLAY", 0)

    # ---- helpers -------------------------------------------------------------------------------
    def _movie(self, title: str) -> dict[str, Any]:
        found = self.row("SELECT * FROM mtu_movies_movies WHERE lower(title) = ?", (canon(title),))
        if found is None:
            raise not_found("movie", title)
        return found

    @staticmethod
    def _movie_view(m: dict[str, Any]) -> dict[str, Any]:
        return {
            "title": m["title"],
            "movie_name": m["title"],
            "movie_title": m["title"],
            "genre": m["genre"],
            "directed_by": m["directed_by"],
            "director": m["directed_by"],
            "starring": m["starring"],
            "cast": m["starring"],
            "aggregate_rating": m["aggregate_rating"],
            "percent_rating": m["percent_rating"],
            "year": m["year"],
            "available_online": bool(m["available_online"]),
            "subtitle_languages": m["subtitle_languages"].split(","),
        }

    def _seats_left(self, showtime_id: str, day: date) -> int:
        sold = self.scalar(
            "SELECT coalesce(sum(number_of_tickets), 0) FROM mtu_movies_tickets"
            " WHERE showtime_id = ? AND show_date = ? AND status = 'confirmed'",
            (showtime_id, day.isoformat()),
        )
        return SEATS_PER_SHOW - int(sold)

    def _shows(self, where: str, params: list[Any]) -> list[dict[str, Any]]:
        return self.rows(
            "SELECT s.*, t.theater_name, t.city, t.street_address, t.location_type, t.distance_km,"
            " m.title, m.genre FROM mtu_movies_showtimes s"
            " JOIN mtu_movies_theaters t USING (theater_id) JOIN mtu_movies_movies m USING (movie_id)"
            f" WHERE {where} ORDER BY s.show_time, t.theater_name, s.showtime_id",
            params,
        )

    def _theater_shows(
        self,
        where: str,
        params: list[Any],
        show_type: str,
        theater_name: str,
        show_type_synonyms: Mapping[str, str] | None = None,
    ) -> list[dict[str, Any]]:
        """`_shows` narrowed by the optional show type and theater ("dontcare": any) that both
        theater searches take; only FindMovies publishes spellings like "3-d" for a show type."""
        if canon(show_type) != DONTCARE:
            where += " AND s.show_type = ?"
            params = [*params, choice("show_type", show_type, SHOW_TYPES, show_type_synonyms)]
        if canon(theater_name) != DONTCARE:
            where += " AND lower(t.theater_name) = ?"
            params = [*params, canon(theater_name)]
        return self._shows(where, params)

    def _show_view(self, s: dict[str, Any], day: date) -> dict[str, Any]:
        return {
            "movie_name": s["title"],
            "genre": s["genre"],
            "theater_name": s["theater_name"],
            "street_address": s["street_address"],
            "location": s["city"],
            "show_date": day.isoformat(),
            "show_time": s["show_time"],
            "show_type": s["show_type"],
            "price": from_cents(s["price_cents"]),
            "seats_left": self._seats_left(s["showtime_id"], day),
        }

    # ---- catalogue and streaming -------------------------------------------------------------
    @read(name="FindMovies")
    def find_movies(
        self,
        genre: Annotated[str, Param("genre, or dontcare")] = DONTCARE,
        location: Annotated[str | None, Param("city: only movies showing in its theaters")] = None,
        starring: Annotated[str, Param("an actor, or dontcare")] = DONTCARE,
        director: Annotated[str, Param("the director, or dontcare")] = DONTCARE,
        directed_by: Annotated[str, Param("the director, or dontcare")] = DONTCARE,
        show_type: Annotated[str, Param("regular, 3d, imax or dontcare")] = DONTCARE,
        theater_name: Annotated[str, Param("a theater, or dontcare")] = DONTCARE,
        cast: Annotated[str, Param("an actor, or dontcare")] = DONTCARE,
    ) -> dict[str, Any]:
        """Find movies by genre, director and actors, online or (with location) in theaters."""
        movies = self.rows("SELECT * FROM mtu_movies_movies ORDER BY aggregate_rating DESC, movie_id")
        if canon(genre) != DONTCARE:
            wanted = genre_of(genre)
            if wanted is None:
                raise bad_request(f"invalid genre {genre!r}; expected one of {list(GENRES)}")
            movies = [m for m in movies if m["genre"] == wanted]
        for actor in (starring, cast):
            if canon(actor) != DONTCARE:
                movies = [m for m in movies if words_in(actor, m["starring"])]
        for who in (director, directed_by):
            if canon(who) != DONTCARE:
                movies = [m for m in movies if words_in(who, m["directed_by"])]
        if location is None:
            online = [self._movie_view(m) for m in movies if m["available_online"]]
            return ok(count=len(online), movies=online[:10])
        in_town = self._theater_shows(
            "t.city = ?",
            [require_city("location", location)],
            show_type,
            theater_name,
            show_type_synonyms={"3-d": "3d", "imax 3d": "imax"},
        )
        showing: dict[str, dict[str, Any]] = {}
        for s in in_town:
            showing.setdefault(s["movie_id"], s)
        results = [
            {**self._movie_view(m), "theater_name": showing[m["movie_id"]]["theater_name"],
             "street_address": showing[m["movie_id"]]["street_address"], "location": location,
             "show_type": showing[m["movie_id"]]["show_type"]}
            for m in movies
            if m["movie_id"] in showing
        ]  # fmt: skip
        return ok(count=len(results), movies=results[:10])

    @write(name="PlayMovie")
    def play_movie(
        self,
        title: Annotated[str, Param("the movie's title")],
        subtitle_language: Annotated[str, Param("subtitle language")] = "English",
        subtitles: Annotated[Flag, Param("True to show subtitles")] = "False",
    ) -> dict[str, Any]:
        """Watch a movie instantly online, with subtitles if asked."""
        m = self._movie(title)
        if not m["available_online"]:
            raise conflict(f"{m['title']} is only in theaters; it cannot be streamed")
        languages = m["subtitle_languages"].split(",")
        language = choice("subtitle_language", subtitle_language, LANGUAGES)
        on = bool(flag("subtitles", subtitles)) or canon(subtitle_language) != "english"
        if on and language not in languages:
            raise unprocessable(f"{m['title']} has subtitles in {languages}, not {language}")
        session = self.next_id("PLAY")
        self.execute(
            "INSERT INTO mtu_movies_playback VALUES (?, ?, ?, ?, ?)",
            (session, m["movie_id"], int(on), language, self.now_iso()),
        )
        view = self._movie_view(m)
        return ok(session_id=session, **view, subtitles=on, subtitle_language=language)

    # ---- theaters --------------------------------------------------------------------------------
    @read(name="GetTimesForMovie")
    def get_times_for_movie(
        self,
        movie_name: Annotated[str, Param("the movie")],
        location: Annotated[str, Param("city")],
        show_date: Annotated[str, Param("date YYYY-MM-DD")],
        show_type: Annotated[str, Param("regular, 3d, imax or dontcare")] = DONTCARE,
        theater_name: Annotated[str, Param("a theater, or dontcare")] = DONTCARE,
    ) -> dict[str, Any]:
        """Get show times for a movie at a location on a given date."""
        m = self._movie(movie_name)
        day = parse_day("show_date", show_date, self.now().date())
        found = self._theater_shows(
            "t.city = ? AND s.movie_id = ?",
            [require_city("location", location), m["movie_id"]],
            show_type,
            theater_name,
        )
        shows = [self._show_view(s, day) for s in found]
        return ok(count=len(shows), showtimes=shows)

    @write(name="BuyMovieTickets")
    def buy_movie_tickets(
        self,
        movie_name: Annotated[str, Param("the movie")],
        number_of_tickets: Annotated[Count, Param("tickets to buy")],
        show_date: Annotated[str, Param("date YYYY-MM-DD")],
        location: Annotated[str, Param("city")],
        show_time: Annotated[str, Param("time of the show, HH:MM")],
        show_type: Annotated[str, Param("regular, 3d or imax", enum=SHOW_TYPES)],
    ) -> dict[str, Any]:
        """Buy movie tickets for a particular show."""
        m = self._movie(movie_name)
        n = count("number_of_tickets", number_of_tickets, hi=20)
        day = parse_day("show_date", show_date, self.now().date())
        at = parse_clock("show_time", show_time)
        now = self.now()
        if (day, at) < (now.date(), f"{now.hour:02d}:{now.minute:02d}"):
            raise unprocessable(f"the {at} show on {day.isoformat()} has started")
        shows = self._shows(
            "t.city = ? AND s.movie_id = ? AND s.show_time = ? AND s.show_type = ?",
            [require_city("location", location), m["movie_id"], at, show_type],
        )
        roomy = [s for s in shows if self._seats_left(s["showtime_id"], day) >= n]
        if not shows:
            raise not_found("show", f"{m['title']} ({show_type}) at {at} in {location}")
        if not roomy:
            raise conflict(
                f"the {at} show of {m['title']} on {day.isoformat()} has fewer than {n} seats left"
            )
        s = roomy[0]
        ticket_id = self.next_id("MT")
        total = n * int(s["price_cents"])
        self.execute(
            "INSERT INTO mtu_movies_tickets VALUES (?, ?, ?, ?, ?, 'confirmed', ?)",
            (ticket_id, s["showtime_id"], day.isoformat(), n, total, self.now_iso()),
        )
        view = {
            **self._show_view(s, day),
            "price": from_cents(total),
            "price_per_ticket": from_cents(s["price_cents"]),
        }
        return ok(ticket_id=ticket_id, **view, number_of_tickets=n)

    @read(name="SearchScreeningEvent")
    def search_screening_event(
        self,
        object_location_type: Annotated[
            str | None, Param("kind of place: movie theater, cinema, ...")
        ] = None,
        movie_name: Annotated[str | None, Param("the movie")] = None,
        location_name: Annotated[str | None, Param("a theater or a city")] = None,
        object_type: Annotated[str | None, Param("what is wanted: movie schedule, movie times, ...")] = None,
        timeRange: Annotated[str | None, Param("when: a date, 'tomorrow', 'tonight', '7 pm'")] = None,
        spatial_relation: Annotated[str | None, Param("e.g. nearest, closest, nearby")] = None,
        movie_type: Annotated[str | None, Param("kind of movie, e.g. animated movies")] = None,
    ) -> dict[str, Any]:
        """Search screenings: which movies show where and when."""
        today = self.now().date()
        day, window = today, None
        if timeRange:
            try:
                day = parse_day("timeRange", timeRange, today)
                if any(w in canon(timeRange) for w in ("tonight", "evening")):
                    window = time_window("timeRange", "evening")
            except Exception:
                window = time_window("timeRange", timeRange)
        # without a place, "near me": the user's home city
        town = city_name(location_name) if location_name else HOME_CITY
        shows = self._shows("1", [])
        if movie_name:
            shows = [s for s in shows if words_in(movie_name, s["title"])]
        if location_name or town:
            shows = [
                s
                for s in shows
                if (town is not None and s["city"] == town)
                or (location_name is not None and words_in(location_name, s["theater_name"]))
            ]
        if object_location_type:
            kind = canon(object_location_type).replace("theatre", "theater")
            shows = [s for s in shows if s["location_type"] in kind or kind in s["location_type"]]
        if movie_type:
            genre = genre_of(movie_type)
            if genre is None:
                raise bad_request(f"unknown movie_type {movie_type!r}; try a genre like {list(GENRES[:4])}")
            shows = [s for s in shows if s["genre"] == genre]
        if window is not None:
            shows = [s for s in shows if window[0] <= minutes(s["show_time"]) <= window[1]]
        if shows and spatial_relation and any(w in canon(spatial_relation) for w in ("near", "close")):
            nearest = min(s["distance_km"] for s in shows)
            shows = [s for s in shows if s["distance_km"] == nearest]
        shows.sort(key=lambda s: (s["distance_km"], s["show_time"], s["showtime_id"]))
        events = [{**self._show_view(s, day), "distance_km": s["distance_km"]} for s in shows]
        return ok(
            count=len(events), screening_events=events[:10], object_type=object_type or "movie schedule"
        )


finalize_tools(MoviesApp)
