"""T-Eval FilmTMDB: a film database of ~400 synthetic movies with genres, keywords and reviews.

Semantics: search_movie matches the title, the original title or an alternative title (exact,
then whole-phrase, then all words), the most popular first; no match is a 404. Similar movies
share genres (2 points each) and keywords (1 point each), ties broken by popularity. Now playing:
released within the 35 days up to the simulated clock; top rated: released, at least 200 votes,
by vote average; popular: by popularity. Lists hold 10 films. Unknown ids are 404s.
"""

from __future__ import annotations

import random
import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import read
from toolgym.mocks.apps.teval.common import TevalApp, norm
from toolgym.mocks.responses import bad_request, not_found, ok
from toolgym.mocks.seeding import insert_rows
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

N_MOVIES: Final = 400
LIST_SIZE: Final = 10
NOW_PLAYING_DAYS: Final = 35
MIN_VOTES_TOP: Final = 200

GENRES: Final = (
    (28, "Action"),
    (12, "Adventure"),
    (16, "Animation"),
    (35, "Comedy"),
    (80, "Crime"),
    (99, "Documentary"),
    (18, "Drama"),
    (10751, "Family"),
    (14, "Fantasy"),
    (36, "History"),
    (27, "Horror"),
    (10402, "Music"),
    (9648, "Mystery"),
    (10749, "Romance"),
    (878, "Science Fiction"),
    (53, "Thriller"),
    (10752, "War"),
    (37, "Western"),
)
KEYWORDS: Final = (
    "heist",
    "time travel",
    "robot",
    "small town",
    "revenge",
    "space",
    "friendship",
    "detective",
    "dystopia",
    "road trip",
    "haunted house",
    "coming of age",
    "artificial intelligence",
    "dragon",
    "survival",
    "wedding",
    "sports",
    "high school",
    "treasure",
    "pandemic",
    "island",
    "spy",
    "music band",
    "ocean",
    "mountain",
    "family secret",
    "alien invasion",
    "courtroom",
)
ADJECTIVES: Final = (
    "Silent",
    "Last",
    "Hidden",
    "Broken",
    "Golden",
    "Endless",
    "Crimson",
    "Lost",
    "Wild",
    "Frozen",
    "Electric",
    "Secret",
    "Burning",
    "Midnight",
    "Distant",
    "Forgotten",
    "Iron",
    "Velvet",
)
NOUNS: Final = (
    "Horizon",
    "River",
    "Kingdom",
    "Signal",
    "Garden",
    "Empire",
    "Shadow",
    "Harbor",
    "Frontier",
    "Orchard",
    "Machine",
    "Symphony",
    "Voyage",
    "Lighthouse",
    "Circuit",
    "Canyon",
    "Witness",
    "Summer",
)
PLACES: Final = (
    "Avalon",
    "the North",
    "Mars",
    "Brooklyn",
    "the Deep",
    "Tomorrow",
    "Paris",
    "the Valley",
    "Sand",
)
# original-language titles of foreign films, with their English release titles
FOREIGN: Final = (
    ("fr", "La Nuit Blanche", "The White Night"),
    ("fr", "Le Dernier Train", "The Last Train"),
    ("es", "El Jardin Secreto", "The Secret Garden of Seville"),
    ("es", "La Casa del Mar", "The House by the Sea"),
    ("ja", "Kaze no Michi", "Path of the Wind"),
    ("ja", "Hoshi no Uta", "Song of the Stars"),
    ("ko", "Bam-ui Yeoljung", "Night Fever"),
    ("it", "La Strada Lunga", "The Long Road"),
    ("de", "Die Stille Stadt", "The Quiet City"),
    ("zh", "Chang An Yi Meng", "A Dream of Chang'an"),
)
HEROES: Final = (
    "a loner",
    "a young pilot",
    "a retired cop",
    "an inventor",
    "a teenager",
    "a single mother",
    "a disgraced chef",
    "a small-town lawyer",
)
USERS: Final = (
    "cinephile42",
    "reelwatcher",
    "popcornqueen",
    "nightowl_films",
    "the_critic",
    "movie_mike",
    "celluloid_sam",
    "framebyframe",
    "indiefan",
    "blockbuster_bob",
)
VERDICTS: Final = (
    (9, "A masterpiece. The {kw} storyline kept me hooked and the {genre} elements are handled perfectly."),
    (8, "Really strong {genre} film; the {kw} angle felt fresh."),
    (7, "Solid entertainment. Not every {genre} beat lands, but the {kw} plot works."),
    (6, "Decent, though the {kw} idea deserved a braver script."),
    (4, "Disappointing. A {genre} film that wastes a good {kw} premise."),
)


def _title(rng: random.Random) -> str:
    adjective, noun = rng.choice(ADJECTIVES), rng.choice(NOUNS)
    shape = rng.randrange(5)
    if shape == 0:
        return f"The {adjective} {noun}"
    if shape == 1:
        return f"{noun} of {rng.choice(PLACES)}"
    if shape == 2:
        return f"{adjective} {noun}"
    if shape == 3:
        return f"The {noun}"
    return f"{adjective} {noun} {rng.choice(('II', 'Returns', 'Rising'))}"


def _overview(rng: random.Random, genre: str, kws: list[str]) -> str:
    kind = genre.lower()
    article = "An" if kind[0] in "aeiou" else "A"
    hero = rng.choice(HEROES)
    return (
        f"{article} {kind} story about {kws[0]} and {kws[1]}. When {hero} is drawn into a tale of {kws[0]},"
        " nothing stays the same."
    )


def _summary(r: dict[str, Any]) -> dict[str, Any]:
    """A movie as TMDB's lists show it."""
    return {
        "id": r["movie_id"],
        "title": r["title"],
        "release_date": r["release_date"],
        "popularity": r["popularity"],
        "vote_average": r["vote_average"],
    }


class FilmTMDB(TevalApp):
    name = "teval_tmdb"
    teval_tool: ClassVar[str] = "FilmTMDB"
    description = "Plugin for look up films at TMDB"
    schema = """
    CREATE TABLE teval_tmdb_movies (
        movie_id INTEGER PRIMARY KEY,
        title TEXT NOT NULL,
        original_title TEXT NOT NULL,
        original_language TEXT NOT NULL,
        release_date TEXT NOT NULL,
        runtime INTEGER NOT NULL,
        overview TEXT NOT NULL,
        vote_average REAL NOT NULL,
        vote_count INTEGER NOT NULL,
        popularity REAL NOT NULL
    );
    CREATE TABLE teval_tmdb_alt_titles (movie_id INTEGER NOT NULL, title TEXT NOT NULL,
                                        PRIMARY KEY (movie_id, title));
    CREATE TABLE teval_tmdb_movie_genres (movie_id INTEGER NOT NULL, genre_id INTEGER NOT NULL,
                                          PRIMARY KEY (movie_id, genre_id));
    CREATE TABLE teval_tmdb_genres (genre_id INTEGER PRIMARY KEY, name TEXT NOT NULL);
    CREATE TABLE teval_tmdb_movie_keywords (movie_id INTEGER NOT NULL, keyword TEXT NOT NULL,
                                            PRIMARY KEY (movie_id, keyword));
    CREATE TABLE teval_tmdb_reviews (
        review_id TEXT PRIMARY KEY,
        movie_id INTEGER NOT NULL,
        author TEXT NOT NULL,
        rating INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 10),
        content TEXT NOT NULL
    );
    CREATE INDEX teval_tmdb_reviews_movie ON teval_tmdb_reviews(movie_id);
    """

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        today = clock.date()
        movies: list[dict[str, Any]] = []
        alts: list[dict[str, Any]] = []
        genres: list[dict[str, Any]] = []
        keywords: list[dict[str, Any]] = []
        reviews: list[dict[str, Any]] = []
        titles: set[str] = set()
        foreign = list(FOREIGN)
        while len(movies) < N_MOVIES:
            movie_id = 100 + len(movies) * 2591 + rng.randint(0, 2000)
            language, original = "en", ""
            if foreign and rng.random() < 0.05:
                language, original, title = foreign.pop(0)
            else:
                title = _title(rng)
            if title in titles:
                continue
            titles.add(title)
            # most films are older; a few are new or announced
            age = rng.choice(
                (rng.randint(-60, 0), rng.randint(1, 60), rng.randint(61, 12000), rng.randint(61, 12000))
            )
            released = today - timedelta(days=age)
            mine = rng.sample(GENRES, rng.randint(1, 3))
            kws = rng.sample(KEYWORDS, rng.randint(2, 4))
            votes = 0 if age < 0 else int(rng.paretovariate(1.1) * 80) + min(age, 4000) // 10
            quality = rng.gauss(6.4, 1.0)
            # new releases are the most talked about, announced films somewhat less
            buzz = 80.0 if age < 0 else 300 / (1 + age / 20)
            popularity = round(rng.uniform(5, 60) + buzz + votes / 200, 3)
            movies.append(
                {
                    "movie_id": movie_id,
                    "title": title,
                    "original_title": original or title,
                    "original_language": language,
                    "release_date": released.isoformat(),
                    "runtime": rng.randint(82, 170),
                    "overview": _overview(rng, mine[0][1], kws),
                    "vote_average": 0.0 if votes == 0 else round(min(9.4, max(2.0, quality)), 1),
                    "vote_count": votes,
                    "popularity": popularity,
                }
            )
            if rng.random() < 0.08:
                alts.append({"movie_id": movie_id, "title": f"{title}: The Movie"})
            genres.extend({"movie_id": movie_id, "genre_id": g} for g, _ in mine)
            keywords.extend({"movie_id": movie_id, "keyword": k} for k in kws)
            if votes:
                for _ in range(rng.randint(0, 5)):
                    base = rng.choices(VERDICTS, (2, 4, 4, 2, 1))[0]
                    reviews.append(
                        {
                            "review_id": f"{movie_id:x}{len(reviews):05x}",
                            "movie_id": movie_id,
                            "author": rng.choice(USERS),
                            "rating": base[0],
                            "content": base[1].format(kw=rng.choice(kws), genre=rng.choice(mine)[1].lower()),
                        }
                    )
        insert_rows(db, "teval_tmdb_genres", [{"genre_id": g, "name": n} for g, n in GENRES])
        insert_rows(db, "teval_tmdb_movies", movies)
        insert_rows(db, "teval_tmdb_alt_titles", alts)
        insert_rows(db, "teval_tmdb_movie_genres", genres)
        insert_rows(db, "teval_tmdb_movie_keywords", keywords)
        insert_rows(db, "teval_tmdb_reviews", reviews)

    # ---- helpers --------------------------------------------------------------------------------
    def _movie(self, movie_id: int) -> dict[str, Any]:
        return self.get_or_404("teval_tmdb_movies", "movie_id", movie_id, what="movie")

    def _list(self, where: str, order: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        rows = self.rows(
            f"SELECT movie_id, title, release_date, popularity, vote_average FROM teval_tmdb_movies"
            f" WHERE {where} ORDER BY {order}, movie_id LIMIT {LIST_SIZE}",
            params,
        )
        return [_summary(r) for r in rows]

    # ---- APIs -----------------------------------------------------------------------------------
    @read
    def search_movie(self, query: Annotated[str, Param("the title of the movie")]) -> dict[str, Any]:
        """Search for movies by their original, translated and alternative titles (the best match)"""
        key = norm(query)
        if not key:
            raise bad_request("query must not be empty")
        rows = self.rows(
            "SELECT m.movie_id, m.title, m.popularity, m.title AS name FROM teval_tmdb_movies m"
            " UNION ALL SELECT m.movie_id, m.title, m.popularity, m.original_title FROM teval_tmdb_movies m"
            " UNION ALL SELECT m.movie_id, m.title, m.popularity, a.title FROM teval_tmdb_alt_titles a"
            " JOIN teval_tmdb_movies m USING (movie_id) ORDER BY popularity DESC, movie_id"
        )
        parts = re.findall(r"[0-9a-z']+", key)

        def rank(r: dict[str, Any]) -> int:
            name = r["name"].lower()
            if name == key:
                return 0
            if re.search(rf"\b{re.escape(key)}\b", name):
                return 1
            return 2 if all(p in re.findall(r"[0-9a-z']+", name) for p in parts) else 3

        best = min(rows, key=rank)
        if rank(best) == 3:
            raise not_found("movie", query)
        return ok(id=best["movie_id"], title=best["title"])

    @read
    def get_movie_details(self, movie_id: Annotated[int, Param("the movie's ID")]) -> dict[str, Any]:
        """Get the top level details of a movie by ID"""
        m = self._movie(movie_id)
        genres = self.rows(
            "SELECT g.genre_id AS id, g.name FROM teval_tmdb_movie_genres mg JOIN teval_tmdb_genres g USING (genre_id)"
            " WHERE mg.movie_id = ? ORDER BY mg.rowid",
            (movie_id,),
        )
        return ok(
            genres=[g["name"] for g in genres],
            id=m["movie_id"],
            release_date=m["release_date"],
            runtime=m["runtime"],
            title=m["title"],
            overview=m["overview"],
            vote_average=m["vote_average"],
            popularity=m["popularity"],
        )

    @read
    def get_similar_movies(self, movie_id: Annotated[int, Param("the movie's ID")]) -> dict[str, Any]:
        """Get the similar movies based on genres and keywords"""
        self._movie(movie_id)
        rows = self.rows(
            "SELECT m.movie_id, m.title, m.release_date, m.popularity, m.vote_average,"
            " 2 * (SELECT count(*) FROM teval_tmdb_movie_genres g WHERE g.movie_id = m.movie_id AND g.genre_id IN"
            "      (SELECT genre_id FROM teval_tmdb_movie_genres WHERE movie_id = :id))"
            " + (SELECT count(*) FROM teval_tmdb_movie_keywords k WHERE k.movie_id = m.movie_id AND k.keyword IN"
            "      (SELECT keyword FROM teval_tmdb_movie_keywords WHERE movie_id = :id)) AS score"
            " FROM teval_tmdb_movies m WHERE m.movie_id != :id AND score > 0"
            " ORDER BY score DESC, m.popularity DESC, m.movie_id LIMIT 5",
            {"id": movie_id},
        )
        return ok(films=[_summary(r) for r in rows])

    @read
    def get_movie_reviews(self, movie_id: Annotated[int, Param("the movie's ID")]) -> dict[str, Any]:
        """Get the user reviews for a movie"""
        self._movie(movie_id)
        rows = self.rows(
            "SELECT author, rating, content FROM teval_tmdb_reviews WHERE movie_id = ? ORDER BY review_id",
            (movie_id,),
        )
        return ok(reviews=rows)

    @read
    def get_now_playing(self) -> dict[str, Any]:
        """Get a list of movies that are currently in theatres"""
        today = self.now().date()
        since = (today - timedelta(days=NOW_PLAYING_DAYS)).isoformat()
        return ok(
            films=self._list(
                "release_date > ? AND release_date <= ?", "popularity DESC", (since, today.isoformat())
            )
        )

    @read
    def get_top_rated_movies(self) -> dict[str, Any]:
        """Get a list of movies ordered by rating"""
        today = self.now().date().isoformat()
        return ok(
            films=self._list(
                f"release_date <= ? AND vote_count >= {MIN_VOTES_TOP}",
                "vote_average DESC, vote_count DESC",
                (today,),
            )
        )

    @read
    def get_popular_movies(self) -> dict[str, Any]:
        """Get a list of movies ordered by popularity"""
        return ok(films=self._list("1", "popularity DESC"))
