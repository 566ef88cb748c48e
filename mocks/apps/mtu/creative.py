"""MTU creative works: SearchCreativeWork and RateBook (SNIPS).

A catalogue of books, novels, albums, songs, TV shows, movies, games and sagas with their
ratings. Searching matches the words of a title; rating a work stores the user's rating (a new
rating replaces the old one) and updates the work's average. "This book" / "the current novel"
is the work the user is reading.
"""

from __future__ import annotations

import random
import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Volatile, format_id, read, write
from toolgym.mocks.apps.mtu._common import FIRST_NAMES, LAST_NAMES, canon, finalize_tools, words_in
from toolgym.mocks.responses import bad_request, conflict, not_found, ok
from toolgym.mocks.seeding import NUMBER_WORDS, insert_rows, person_name
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

TYPES: Final = (
    "book",
    "novel",
    "textbook",
    "album",
    "song",
    "tv show",
    "movie",
    "video game",
    "saga",
    "picture",
)
TYPE_WORDS: Final = {
    "tv series": "tv show",
    "show": "tv show",
    "television show": "tv show",
    "series": "tv show",
    "film": "movie",
    "game": "video game",
    "videogame": "video game",
    "record": "album",
    "track": "song",
    "tune": "song",
    "photograph": "picture",
    "painting": "picture",
    "chronicle": "saga",
    "essay": "book",
    "poem": "book",
}
BOOKISH: Final = ("book", "novel", "textbook", "saga")
TITLE_WORDS: Final = (
    (
        "The",
        "A",
        "Baby",
        "Lost",
        "Silent",
        "Broken",
        "Golden",
        "Switched",
        "Hidden",
        "Dark",
        "Bright",
        "Last",
    ),
    (
        "Blue",
        "Garden",
        "Kingdom",
        "River",
        "Mountain",
        "Empire",
        "Storm",
        "Voyage",
        "Mirror",
        "Crown",
        "City",
        "Song",
    ),
)
CLASSICS: Final = (
    ("The Adventures of Augie March", "novel"),
    ("Pride and Prejudice", "novel"),
    ("Moby Dick", "novel"),
    ("The Odyssey", "book"),
    ("Principles of Economics", "textbook"),
    ("Introduction to Algorithms", "textbook"),
    ("The Forsyte Saga", "saga"),
    ("To Lose My Life", "album"),
    ("Baby Blue", "song"),
    ("Switched", "tv show"),
)
PLATFORMS: Final = {
    "book": "bookstores, library, e-book",
    "novel": "bookstores, library, e-book",
    "textbook": "bookstores, e-book",
    "saga": "bookstores, library",
    "album": "streaming, vinyl, CD",
    "song": "streaming",
    "tv show": "streaming, cable",
    "movie": "streaming, theaters, Blu-ray",
    "video game": "PC, console",
    "picture": "gallery",
}
GENRES: Final = ("drama", "comedy", "mystery", "fantasy", "science fiction", "history", "romance", "thriller")
RATING_UNITS: Final = ("stars", "star", "points", "point")
DEFAULT_BEST: Final = 5


def parse_rating(param: str, value: str) -> float:
    """3, "3.5", "four", "three and a half" -> a number."""
    text = canon(value).replace("-", " ")
    half = 0.5 if "half" in text else 0.0
    text = re.sub(r"\s*and a half|\s*half", "", text).strip()
    try:
        return float(text) + half
    except ValueError:
        pass
    if text in NUMBER_WORDS:
        return NUMBER_WORDS[text] + half
    raise bad_request(f"{param!r} must be a number, got {value!r}")


class CreativeApp(App):
    name = "mtu_creative"
    description = "Creative works: search books, albums, shows, movies and games; rate books (MTU-Bench)."
    version = "1"
    schema = """
    CREATE TABLE mtu_creative_works (
        work_id TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        object_type TEXT NOT NULL,
        creator TEXT NOT NULL,
        year INTEGER NOT NULL,
        genre TEXT NOT NULL,
        platforms TEXT NOT NULL,
        rating_sum REAL NOT NULL,
        rating_count INTEGER NOT NULL,
        is_current INTEGER NOT NULL
    );
    CREATE TABLE mtu_creative_ratings (
        work_id TEXT PRIMARY KEY REFERENCES mtu_creative_works(work_id),
        rating_value REAL NOT NULL,
        best_rating INTEGER NOT NULL,
        rated_at TEXT NOT NULL
    );
    """
    volatile: ClassVar[Volatile] = {"mtu_creative_ratings": ["rated_at"]}

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        titles = [(t, k) for t, k in CLASSICS]
        combos = sorted({f"{a} {b}" for a in TITLE_WORDS[0] for b in TITLE_WORDS[1]})
        for title in rng.sample(combos, 110):
            titles.append((title, rng.choice(TYPES)))
        works: list[dict[str, Any]] = []
        for i, (title, kind) in enumerate(titles, 1):
            n = rng.randint(3, 400)
            works.append(
                {
                    "work_id": format_id("WRK", i, 4),
                    "title": title,
                    "object_type": kind,
                    "creator": person_name(rng, FIRST_NAMES, LAST_NAMES),
                    "year": rng.randint(1850 if kind in BOOKISH else 1960, clock.year),
                    "genre": rng.choice(GENRES),
                    "platforms": PLATFORMS[kind],
                    # stored normalised to a 5 point scale
                    "rating_sum": round(n * rng.uniform(2.5, 4.8), 1),
                    "rating_count": n,
                    "is_current": 0,
                }
            )
        # the user is reading one book, one novel and one textbook right now
        for kind in ("book", "novel", "textbook"):
            first = next((w for w in works if w["object_type"] == kind), None)
            if first is not None:
                first["is_current"] = 1
        insert_rows(db, "mtu_creative_works", works)
        rated = rng.sample(works, 10)
        insert_rows(
            db,
            "mtu_creative_ratings",
            [
                {
                    "work_id": w["work_id"],
                    "rating_value": rng.randint(1, 5),
                    "best_rating": 5,
                    "rated_at": (clock - timedelta(days=rng.randint(1, 200))).isoformat(),
                }
                for w in sorted(rated, key=lambda w: w["work_id"])
            ],
        )

    @staticmethod
    def _type(value: str) -> str:
        key = canon(value).removesuffix("s") if canon(value) not in TYPES else canon(value)
        if key in TYPES:
            return key
        if key in TYPE_WORDS:
            return TYPE_WORDS[key]
        raise bad_request(f"invalid object_type {value!r}; expected one of {list(TYPES)}")

    @staticmethod
    def _view(w: dict[str, Any]) -> dict[str, Any]:
        return {
            "title": w["title"],
            "object_type": w["object_type"],
            "creator": w["creator"],
            "year": w["year"],
            "genre": w["genre"],
            "platforms": w["platforms"],
            "average_rating": round(w["rating_sum"] / w["rating_count"], 2) if w["rating_count"] else None,
            "rating_count": w["rating_count"],
        }

    @read(name="SearchCreativeWork")
    def search_creative_work(
        self,
        object_name: Annotated[str, Param("the title, or words of it")],
        object_type: Annotated[
            str | None, Param("book, album, song, tv show, movie, video game, ...")
        ] = None,
    ) -> dict[str, Any]:
        """Search creative works by title and type: availability, platforms, genre, ratings."""
        rows = self.rows("SELECT * FROM mtu_creative_works ORDER BY title, work_id")
        if object_type:
            kind = self._type(object_type)
            kinds = BOOKISH if kind == "book" else (kind,)
            rows = [r for r in rows if r["object_type"] in kinds]
        exact = [r for r in rows if canon(r["title"]) == canon(object_name)]
        found = exact or [r for r in rows if words_in(object_name, r["title"])]
        return ok(count=len(found), creative_work_info=[self._view(r) for r in found[:10]])

    @write(name="RateBook")
    def rate_book(
        self,
        rating_value: Annotated[str, Param("the rating, e.g. 4 or four")],
        object_name: Annotated[str | None, Param("the title")] = None,
        object_select: Annotated[
            str | None, Param("'this book', 'the current novel' instead of a title")
        ] = None,
        object_type: Annotated[str | None, Param("book, novel, textbook, saga")] = None,
        rating_unit: Annotated[str | None, Param("stars or points")] = None,
        best_rating: Annotated[str | None, Param("the top of the scale, default 5")] = None,
        object_part_of_series_type: Annotated[str | None, Param("series, saga or chronicle")] = None,
    ) -> dict[str, Any]:
        """Rate a book (or another literary work); a new rating replaces the user's old one."""
        kind = self._type(object_type) if object_type else None
        if kind is not None and kind not in BOOKISH:
            raise bad_request(f"RateBook rates books, not a {kind}")
        if rating_unit and canon(rating_unit) not in RATING_UNITS:
            raise bad_request(f"rating_unit must be stars or points, got {rating_unit!r}")
        best = int(parse_rating("best_rating", best_rating)) if best_rating else DEFAULT_BEST
        value = parse_rating("rating_value", rating_value)
        if not 0 <= value <= best or best < 1:
            raise bad_request(f"rating_value must be between 0 and {best}, got {value:g}")
        kinds = (kind,) if kind else BOOKISH
        candidates = [
            r
            for r in self.rows("SELECT * FROM mtu_creative_works ORDER BY work_id")
            if r["object_type"] in kinds
        ]
        if object_part_of_series_type:
            candidates = [r for r in candidates if r["object_type"] == "saga"]
        if object_name:
            found = [r for r in candidates if canon(r["title"]) == canon(object_name)] or [
                r for r in candidates if words_in(object_name, r["title"])
            ]
            if not found:
                raise not_found("book", object_name)
            if len(found) > 1:
                raise conflict(
                    f"{len(found)} books match {object_name!r}", titles=[r["title"] for r in found]
                )
        elif object_select:
            found = [r for r in candidates if r["is_current"]]
            if not found:
                raise not_found("book being read", object_select)
        else:
            raise bad_request("RateBook needs object_name or object_select")
        work = found[0]
        scaled = value * 5 / best  # averages are kept on a 5 point scale
        old = self.row("SELECT * FROM mtu_creative_ratings WHERE work_id = ?", (work["work_id"],))
        rating_sum, rating_count = work["rating_sum"] + scaled, work["rating_count"] + 1
        if old is not None:
            rating_sum -= old["rating_value"] * 5 / old["best_rating"]
            rating_count -= 1
        self.execute(
            "INSERT INTO mtu_creative_ratings VALUES (?, ?, ?, ?) ON CONFLICT(work_id) DO UPDATE SET"
            " rating_value = excluded.rating_value, best_rating = excluded.best_rating, rated_at = excluded.rated_at",
            (work["work_id"], value, best, self.now_iso()),
        )
        self.execute(
            "UPDATE mtu_creative_works SET rating_sum = ?, rating_count = ? WHERE work_id = ?",
            (round(rating_sum, 4), rating_count, work["work_id"]),
        )
        unit = rating_unit or "stars"
        updated = self.get_or_404("mtu_creative_works", "work_id", work["work_id"])
        return ok(
            user_review=f"{work['title']}: {value:g} out of {best} {unit}"
            + (" (replaces your earlier rating)" if old else ""),
            **self._view(updated),
        )


finalize_tools(CreativeApp)
