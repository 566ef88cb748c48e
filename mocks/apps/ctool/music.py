"""Music streaming: a catalogue of artists, albums and tracks, playlists, likes, a play queue.

Semantics: search filters and sorts the seeded catalogue; playlists belong to a user, hold a track
at most once and keep gap-free 1-based positions through adds, removals and moves; playing a track
makes it the user's now-playing track, adds it to the recently-played history and counts a play;
skipping plays the head of the user's queue and removes it from the queue. Only a playlist's owner
may change it. API names avoid MTU's music APIs (PlaySong, AddToPlaylist, play_music, LookupSong,
PlayMusic) so both can share a world.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Volatile, format_id, read, set_counter, write
from toolgym.mocks.apps.ctool._common import FIRST_NAMES, LAST_NAMES, app_now, iso, utc
from toolgym.mocks.responses import AppError, bad_request, check_range, conflict, not_found, ok, paginate
from toolgym.mocks.seeding import insert_rows, person_name
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

GENRES: Final = (
    "pop",
    "rock",
    "hip_hop",
    "electronic",
    "jazz",
    "classical",
    "folk",
    "r_and_b",
    "mandopop",
    "cantopop",
)
LANGUAGES: Final = ("Mandarin", "Cantonese", "English", "Instrumental")
SORT_KEYS: Final = ("relevance", "popularity", "newest", "title", "duration")
ADJECTIVES: Final = (
    "Midnight",
    "Golden",
    "Silent",
    "Electric",
    "Paper",
    "Neon",
    "Distant",
    "Crimson",
    "Gentle",
    "Wild",
    "Hidden",
    "Falling",
    "Endless",
    "Summer",
    "Winter",
    "Broken",
    "Lucky",
    "Velvet",
)
NOUNS: Final = (
    "River",
    "Heart",
    "City",
    "Dream",
    "Moon",
    "Road",
    "Rain",
    "Fire",
    "Letter",
    "Garden",
    "Mountain",
    "Ocean",
    "Light",
    "Shadow",
    "Train",
    "Echo",
    "Bird",
    "Sky",
)
COUNTRIES: Final = ("China", "Taiwan", "Hong Kong", "Singapore", "UK", "USA", "Japan", "Korea")
MAX_PLAYLIST: Final = 500
MAX_QUEUE: Final = 200

N_ARTISTS: Final = 120
N_ALBUMS: Final = 300
N_USERS: Final = 50


def plural(noun: str) -> str:
    if noun.endswith("y"):
        return noun[:-1] + "ies"
    return noun + ("es" if noun.endswith("o") else "s")


def _relevance(terms: list[str], track: dict[str, Any]) -> int:
    """Whole words count, not substrings ("rain" is not in "Train"): an exact title scores most,
    then title words, then artist words."""
    title = track["title"].lower()
    title_words, artist_words = set(title.split()), set(track["artist_name"].lower().split())
    exact = 10 if title == " ".join(terms) else 0
    return exact + sum(2 * (t in title_words) + (t in artist_words) for t in terms)


class MusicApp(App):
    name = "music"
    description = (
        "A music streaming app: search tracks, artists and albums, manage playlists, like tracks, "
        "play music with a play queue and see what was played recently."
    )
    version = "1"
    schema = """
    CREATE TABLE music_artists (
        artist_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        genre TEXT NOT NULL,
        country TEXT NOT NULL,
        followers INTEGER NOT NULL
    );
    CREATE TABLE music_albums (
        album_id TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        artist_id TEXT NOT NULL,
        release_year INTEGER NOT NULL,
        genre TEXT NOT NULL
    );
    CREATE TABLE music_tracks (
        track_id TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        artist_id TEXT NOT NULL,
        album_id TEXT NOT NULL,
        track_number INTEGER NOT NULL,
        genre TEXT NOT NULL,
        language TEXT NOT NULL,
        duration_s INTEGER NOT NULL CHECK (duration_s > 0),
        release_year INTEGER NOT NULL,
        explicit INTEGER NOT NULL,
        play_count INTEGER NOT NULL CHECK (play_count >= 0)
    );
    CREATE INDEX music_tracks_artist ON music_tracks(artist_id);
    CREATE TABLE music_users (
        user_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        premium INTEGER NOT NULL
    );
    CREATE TABLE music_playlists (
        playlist_id TEXT PRIMARY KEY,
        owner_id TEXT NOT NULL,
        name TEXT NOT NULL,
        description TEXT NOT NULL,
        is_public INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (owner_id, name)
    );
    CREATE TABLE music_playlist_tracks (
        playlist_id TEXT NOT NULL,
        track_id TEXT NOT NULL,
        position INTEGER NOT NULL CHECK (position >= 1),
        added_at TEXT NOT NULL,
        PRIMARY KEY (playlist_id, track_id)
    );
    CREATE TABLE music_likes (
        user_id TEXT NOT NULL,
        track_id TEXT NOT NULL,
        liked_at TEXT NOT NULL,
        PRIMARY KEY (user_id, track_id)
    );
    CREATE TABLE music_queue (
        entry_id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL,
        track_id TEXT NOT NULL,
        position INTEGER NOT NULL CHECK (position >= 1)
    );
    CREATE TABLE music_history (
        play_id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL,
        track_id TEXT NOT NULL,
        played_at TEXT NOT NULL
    );
    CREATE INDEX music_history_user ON music_history(user_id, played_at);
    CREATE TABLE music_now_playing (
        user_id TEXT PRIMARY KEY,
        track_id TEXT NOT NULL,
        started_at TEXT NOT NULL
    );
    """
    volatile: ClassVar[Volatile] = {
        "music_playlists": ["created_at", "updated_at"],
        "music_playlist_tracks": ["added_at"],
        "music_likes": ["liked_at"],
        "music_history": ["played_at"],
        "music_now_playing": ["started_at"],
    }

    # ---- seed data ---------------------------------------------------------------------------
    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        now = utc(clock)

        def title() -> str:
            return f"{rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}"

        artists: list[dict[str, Any]] = []
        names: set[str] = set()
        while len(artists) < N_ARTISTS:
            if rng.random() < 0.4:
                name = f"The {rng.choice(ADJECTIVES)} {plural(rng.choice(NOUNS))}"
            else:
                name = person_name(rng, FIRST_NAMES, LAST_NAMES)
            if name in names:
                continue
            names.add(name)
            artists.append(
                {
                    "artist_id": format_id("AR", len(artists) + 1, 4),
                    "name": name,
                    "genre": rng.choice(GENRES),
                    "country": rng.choice(COUNTRIES),
                    "followers": int(rng.paretovariate(1.2) * 2000),
                }
            )
        insert_rows(db, "music_artists", artists)

        albums: list[dict[str, Any]] = []
        tracks: list[dict[str, Any]] = []
        for i in range(1, N_ALBUMS + 1):
            artist = artists[(i - 1) % N_ARTISTS] if i <= N_ARTISTS else rng.choice(artists)
            album_id = format_id("AL", i, 5)
            year = rng.randint(1995, now.year)
            genre = artist["genre"] if rng.random() < 0.85 else rng.choice(GENRES)
            albums.append(
                {
                    "album_id": album_id,
                    "title": title(),
                    "artist_id": artist["artist_id"],
                    "release_year": year,
                    "genre": genre,
                }
            )
            if genre == "classical":
                language = "Instrumental"
            elif genre == "cantopop":
                language = "Cantonese"
            elif genre == "mandopop":
                language = "Mandarin"
            else:
                language = rng.choice(LANGUAGES[:3])
            for n in range(1, rng.randint(5, 10) + 1):
                tracks.append(
                    {
                        "track_id": format_id("TR", len(tracks) + 1),
                        "title": title() + (" (Live)" if rng.random() < 0.05 else ""),
                        "artist_id": artist["artist_id"],
                        "album_id": album_id,
                        "track_number": n,
                        "genre": genre,
                        "language": language,
                        "duration_s": rng.randint(130, 600 if genre == "classical" else 330),
                        "release_year": year,
                        "explicit": int(genre == "hip_hop" and rng.random() < 0.5),
                        "play_count": int(rng.paretovariate(1.1) * 1000),
                    }
                )
        insert_rows(db, "music_albums", albums)
        insert_rows(db, "music_tracks", tracks)

        users = [
            {
                "user_id": f"LN{i:03d}",
                "name": person_name(rng, FIRST_NAMES, LAST_NAMES),
                "premium": int(rng.random() < 0.4),
            }
            for i in range(1, N_USERS + 1)
        ]
        insert_rows(db, "music_users", users)

        playlists: list[dict[str, Any]] = []
        entries: list[dict[str, Any]] = []
        likes: list[dict[str, Any]] = []
        history: list[dict[str, Any]] = []
        for u in users:
            # each listener has a taste: two genres most of their music comes from
            taste = rng.sample(GENRES, 2)
            favourites = [t for t in tracks if t["genre"] in taste]
            for name in rng.sample(
                ("Chill", "Workout", "Road Trip", "Focus", "Favourites", "Party"), rng.randint(0, 3)
            ):
                playlist_id = format_id("PLY", len(playlists) + 1, 5)
                created = now - timedelta(days=rng.randint(5, 600))
                playlists.append(
                    {
                        "playlist_id": playlist_id,
                        "owner_id": u["user_id"],
                        "name": name,
                        "description": "",
                        "is_public": int(rng.random() < 0.6),
                        "created_at": iso(created),
                        "updated_at": iso(created),
                    }
                )
                for pos, t in enumerate(rng.sample(favourites, rng.randint(4, 20)), 1):
                    entries.append(
                        {
                            "playlist_id": playlist_id,
                            "track_id": t["track_id"],
                            "position": pos,
                            "added_at": iso(created),
                        }
                    )
            for t in rng.sample(favourites, rng.randint(5, 30)):
                likes.append(
                    {
                        "user_id": u["user_id"],
                        "track_id": t["track_id"],
                        "liked_at": iso(now - timedelta(days=rng.randint(1, 400))),
                    }
                )
            for _ in range(rng.randint(10, 50)):
                t = rng.choice(favourites) if rng.random() < 0.8 else rng.choice(tracks)
                history.append(
                    {
                        "play_id": "",
                        "user_id": u["user_id"],
                        "track_id": t["track_id"],
                        "played_at": iso(now - timedelta(minutes=rng.randint(5, 30 * 24 * 60))),
                    }
                )
        # play ids in time order, as they were recorded
        history.sort(key=lambda h: (h["played_at"], h["user_id"]))
        for n, h in enumerate(history, 1):
            h["play_id"] = format_id("PLAY", n, 7)
        insert_rows(db, "music_playlists", playlists)
        insert_rows(db, "music_playlist_tracks", entries)
        insert_rows(db, "music_likes", likes)
        insert_rows(db, "music_history", history)
        set_counter(db, "PLY", len(playlists))
        set_counter(db, "PLAY", len(history))

    # ---- helpers -----------------------------------------------------------------------------
    def _user(self, user_id: str) -> dict[str, Any]:
        return self.get_or_404("music_users", "user_id", user_id, what="user")

    def _track(self, track_id: str) -> dict[str, Any]:
        return self.get_or_404("music_tracks", "track_id", track_id, what="track")

    def _own_playlist(self, user_id: str, playlist_id: str) -> dict[str, Any]:
        self._user(user_id)
        p = self.get_or_404("music_playlists", "playlist_id", playlist_id, what="playlist")
        if p["owner_id"] != user_id:
            raise AppError(403, f"playlist {playlist_id} belongs to {p['owner_id']}")
        return p

    def _track_rows(self, where: str, params: list[Any], order: str) -> list[dict[str, Any]]:
        return self.rows(
            "SELECT t.*, a.name AS artist_name, al.title AS album_title FROM music_tracks t"
            " JOIN music_artists a USING (artist_id) JOIN music_albums al USING (album_id)"
            f" WHERE {where} ORDER BY {order}",
            params,
        )

    @staticmethod
    def _track_view(t: dict[str, Any]) -> dict[str, Any]:
        return {
            "track_id": t["track_id"],
            "title": t["title"],
            "artist_id": t["artist_id"],
            "artist": t["artist_name"],
            "album_id": t["album_id"],
            "album": t["album_title"],
            "genre": t["genre"],
            "language": t["language"],
            "duration_s": t["duration_s"],
            "release_year": t["release_year"],
            "explicit": bool(t["explicit"]),
            "play_count": t["play_count"],
        }

    def _touch(self, playlist_id: str) -> None:
        self.execute(
            "UPDATE music_playlists SET updated_at = ? WHERE playlist_id = ?",
            (iso(app_now(self)), playlist_id),
        )

    def _position_in_playlist(self, playlist_id: str, track_id: str) -> int:
        """Where the track stands in the playlist (1-based); 404 when it is not in it."""
        position = self.scalar(
            "SELECT position FROM music_playlist_tracks WHERE playlist_id = ? AND track_id = ?",
            (playlist_id, track_id),
        )
        if position is None:
            raise not_found("track in playlist", track_id)
        return int(position)

    def _playlist_size(self, playlist_id: str) -> int:
        return int(
            self.scalar("SELECT count(*) FROM music_playlist_tracks WHERE playlist_id = ?", (playlist_id,))
        )

    def _start(self, user_id: str, track: dict[str, Any]) -> dict[str, Any]:
        now = iso(app_now(self))
        self.execute(
            "INSERT INTO music_now_playing VALUES (?, ?, ?) ON CONFLICT(user_id) DO UPDATE SET"
            " track_id = excluded.track_id, started_at = excluded.started_at",
            (user_id, track["track_id"], now),
        )
        self.execute(
            "INSERT INTO music_history VALUES (?, ?, ?, ?)",
            (self.next_id("PLAY", 7), user_id, track["track_id"], now),
        )
        self.execute(
            "UPDATE music_tracks SET play_count = play_count + 1 WHERE track_id = ?", (track["track_id"],)
        )
        view = self._track_view(self._track_rows("t.track_id = ?", [track["track_id"]], "t.track_id")[0])
        return {"track": view, "started_at": now}

    # ---- catalogue -----------------------------------------------------------------------------
    @read
    def search_tracks(
        self,
        query: Annotated[str, Param("words in the title, artist or album; empty = all")] = "",
        genre: Annotated[str | None, Param("only this genre", enum=GENRES)] = None,
        artist_id: Annotated[str | None, Param("only this artist")] = None,
        language: Annotated[str | None, Param("only this language", enum=LANGUAGES)] = None,
        year_from: Annotated[int | None, Param("released in or after this year")] = None,
        year_to: Annotated[int | None, Param("released in or before this year")] = None,
        max_duration_s: Annotated[int | None, Param("at most this long, in seconds")] = None,
        exclude_explicit: Annotated[bool, Param("hide explicit tracks")] = False,
        sort_by: Annotated[str, Param("sort key", enum=SORT_KEYS)] = "relevance",
        page: Annotated[int, Param("1-based page")] = 1,
        page_size: Annotated[int, Param("results per page, 1-50")] = 10,
    ) -> dict[str, Any]:
        """Search the catalogue with filters; relevance ranks title matches above artist and album ones."""
        where: list[str] = ["1"]
        params: list[Any] = []
        terms = [t.lower() for t in query.split()]
        for t in terms:
            where.append("instr(lower(t.title || ' ' || a.name || ' ' || al.title), ?) > 0")
            params.append(t)
        for clause, value in (
            ("t.genre = ?", genre),
            ("t.artist_id = ?", artist_id),
            ("t.language = ?", language),
            ("t.release_year >= ?", year_from),
            ("t.release_year <= ?", year_to),
            ("t.duration_s <= ?", max_duration_s),
        ):
            if value is not None:
                where.append(clause)
                params.append(value)
        if year_from is not None and year_to is not None and year_from > year_to:
            raise bad_request("year_from is after year_to")
        if exclude_explicit:
            where.append("t.explicit = 0")
        order = {
            "relevance": "t.play_count DESC",
            "popularity": "t.play_count DESC",
            "newest": "t.release_year DESC, t.play_count DESC",
            "title": "t.title ASC",
            "duration": "t.duration_s ASC",
        }[sort_by]
        rows = self._track_rows(" AND ".join(where), params, order + ", t.track_id")
        if sort_by == "relevance" and terms:
            # stable sort: within equal scores the popularity order stays
            rows.sort(key=lambda r: -_relevance(terms, r))
        return ok(
            total=len(rows),
            page=page,
            tracks=[self._track_view(r) for r in paginate(rows, page, page_size, max_page_size=50)],
        )

    @read
    def get_track(self, track_id: Annotated[str, Param("track id, e.g. TR-000123")]) -> dict[str, Any]:
        """One track's details."""
        self._track(track_id)
        return ok(track=self._track_view(self._track_rows("t.track_id = ?", [track_id], "t.track_id")[0]))

    @read
    def search_artists(
        self,
        query: Annotated[str, Param("part of the artist name")] = "",
        genre: Annotated[str | None, Param("only this genre", enum=GENRES)] = None,
        limit: Annotated[int, Param("most results, 1-50")] = 10,
    ) -> dict[str, Any]:
        """Find artists by name and genre, most followed first."""
        check_range("limit", limit, 1, 50)
        sql, params = "SELECT * FROM music_artists WHERE instr(lower(name), ?) > 0", [query.strip().lower()]
        if genre is not None:
            sql += " AND genre = ?"
            params.append(genre)
        rows = self.rows(sql + " ORDER BY followers DESC, artist_id", params)
        return ok(total=len(rows), artists=rows[:limit])

    @read
    def get_artist(self, artist_id: Annotated[str, Param("artist id, e.g. AR-0007")]) -> dict[str, Any]:
        """An artist with their albums and five most played tracks."""
        artist = self.get_or_404("music_artists", "artist_id", artist_id, what="artist")
        albums = self.rows(
            "SELECT album_id, title, release_year FROM music_albums WHERE artist_id = ?"
            " ORDER BY release_year DESC, album_id",
            (artist_id,),
        )
        top = self._track_rows("t.artist_id = ?", [artist_id], "t.play_count DESC, t.track_id")[:5]
        return ok(artist=artist, albums=albums, top_tracks=[self._track_view(t) for t in top])

    @read
    def get_album(self, album_id: Annotated[str, Param("album id, e.g. AL-00012")]) -> dict[str, Any]:
        """An album and its tracks in order."""
        album = self.get_or_404("music_albums", "album_id", album_id, what="album")
        tracks = self._track_rows("t.album_id = ?", [album_id], "t.track_number")
        return ok(
            album=album,
            total_duration_s=sum(t["duration_s"] for t in tracks),
            tracks=[self._track_view(t) for t in tracks],
        )

    # ---- playlists -----------------------------------------------------------------------------
    @write
    def create_playlist(
        self,
        user_id: Annotated[str, Param("owner's user id, e.g. LN001")],
        name: Annotated[str, Param("playlist name, unique per user")],
        description: Annotated[str, Param("a short description")] = "",
        is_public: Annotated[bool, Param("visible to other users")] = True,
    ) -> dict[str, Any]:
        """Create an empty playlist."""
        self._user(user_id)
        if not name.strip():
            raise bad_request("name must not be empty")
        clash = self.scalar(
            "SELECT playlist_id FROM music_playlists WHERE owner_id = ? AND name = ?", (user_id, name.strip())
        )
        if clash is not None:
            raise conflict(f"{user_id} already has a playlist named {name.strip()!r}", playlist_id=clash)
        playlist_id, now = self.next_id("PLY", 5), iso(app_now(self))
        self.execute(
            "INSERT INTO music_playlists VALUES (?, ?, ?, ?, ?, ?, ?)",
            (playlist_id, user_id, name.strip(), description, int(is_public), now, now),
        )
        return ok(playlist_id=playlist_id, name=name.strip())

    @read
    def get_playlist(
        self, playlist_id: Annotated[str, Param("playlist id, e.g. PLY-00003")]
    ) -> dict[str, Any]:
        """A playlist and its tracks in order."""
        p = self.get_or_404("music_playlists", "playlist_id", playlist_id, what="playlist")
        rows = self.rows(
            "SELECT pt.position, t.*, a.name AS artist_name, al.title AS album_title"
            " FROM music_playlist_tracks pt"
            " JOIN music_tracks t USING (track_id) JOIN music_artists a ON a.artist_id = t.artist_id"
            " JOIN music_albums al ON al.album_id = t.album_id WHERE pt.playlist_id = ? ORDER BY pt.position",
            (playlist_id,),
        )
        return ok(
            playlist={
                "playlist_id": playlist_id,
                "owner_id": p["owner_id"],
                "name": p["name"],
                "description": p["description"],
                "is_public": bool(p["is_public"]),
                "track_count": len(rows),
                "total_duration_s": sum(r["duration_s"] for r in rows),
            },
            tracks=[{"position": r["position"], **self._track_view(r)} for r in rows],
        )

    @read
    def list_user_playlists(self, user_id: Annotated[str, Param("user id")]) -> dict[str, Any]:
        """A user's playlists with their track counts."""
        self._user(user_id)
        rows = self.rows(
            "SELECT p.playlist_id, p.name, p.is_public, (SELECT count(*) FROM music_playlist_tracks x"
            " WHERE x.playlist_id = p.playlist_id) AS track_count FROM music_playlists p WHERE p.owner_id = ?"
            " ORDER BY p.playlist_id",
            (user_id,),
        )
        return ok(user_id=user_id, playlists=[{**r, "is_public": bool(r["is_public"])} for r in rows])

    @write
    def add_track_to_playlist(
        self,
        user_id: Annotated[str, Param("the playlist's owner")],
        playlist_id: Annotated[str, Param("playlist id")],
        track_id: Annotated[str, Param("track id")],
        position: Annotated[int | None, Param("1-based position; default: at the end")] = None,
    ) -> dict[str, Any]:
        """Add a track to one of your playlists (a playlist holds each track once)."""
        self._own_playlist(user_id, playlist_id)
        self._track(track_id)
        size = self._playlist_size(playlist_id)
        if self.scalar(
            "SELECT 1 FROM music_playlist_tracks WHERE playlist_id = ? AND track_id = ?",
            (playlist_id, track_id),
        ):
            raise conflict(f"track {track_id} is already in playlist {playlist_id}")
        if size >= MAX_PLAYLIST:
            raise conflict(f"playlist {playlist_id} is full ({MAX_PLAYLIST} tracks)")
        if position is None:
            position = size + 1
        check_range("position", position, 1, size + 1)
        self.execute(
            "UPDATE music_playlist_tracks SET position = position + 1"
            " WHERE playlist_id = ? AND position >= ?",
            (playlist_id, position),
        )
        self.execute(
            "INSERT INTO music_playlist_tracks VALUES (?, ?, ?, ?)",
            (playlist_id, track_id, position, iso(app_now(self))),
        )
        self._touch(playlist_id)
        return ok(playlist_id=playlist_id, track_id=track_id, position=position, track_count=size + 1)

    @write
    def remove_track_from_playlist(
        self,
        user_id: Annotated[str, Param("the playlist's owner")],
        playlist_id: Annotated[str, Param("playlist id")],
        track_id: Annotated[str, Param("track id")],
    ) -> dict[str, Any]:
        """Remove a track from one of your playlists; later tracks move up."""
        self._own_playlist(user_id, playlist_id)
        position = self._position_in_playlist(playlist_id, track_id)
        self.execute(
            "DELETE FROM music_playlist_tracks WHERE playlist_id = ? AND track_id = ?",
            (playlist_id, track_id),
        )
        self.execute(
            "UPDATE music_playlist_tracks SET position = position - 1 WHERE playlist_id = ? AND position > ?",
            (playlist_id, position),
        )
        self._touch(playlist_id)
        return ok(playlist_id=playlist_id, track_id=track_id, track_count=self._playlist_size(playlist_id))

    @write
    def move_playlist_track(
        self,
        user_id: Annotated[str, Param("the playlist's owner")],
        playlist_id: Annotated[str, Param("playlist id")],
        track_id: Annotated[str, Param("track id")],
        new_position: Annotated[int, Param("1-based position to move it to")],
    ) -> dict[str, Any]:
        """Reorder a playlist: move one track to a new position; the others shift around it."""
        self._own_playlist(user_id, playlist_id)
        old = self._position_in_playlist(playlist_id, track_id)
        check_range("new_position", new_position, 1, self._playlist_size(playlist_id))
        if new_position < old:
            self.execute(
                "UPDATE music_playlist_tracks SET position = position + 1 WHERE playlist_id = ?"
                " AND position >= ? AND position < ?",
                (playlist_id, new_position, old),
            )
        elif new_position > old:
            self.execute(
                "UPDATE music_playlist_tracks SET position = position - 1 WHERE playlist_id = ?"
                " AND position > ? AND position <= ?",
                (playlist_id, old, new_position),
            )
        self.execute(
            "UPDATE music_playlist_tracks SET position = ? WHERE playlist_id = ? AND track_id = ?",
            (new_position, playlist_id, track_id),
        )
        self._touch(playlist_id)
        order = self.rows(
            "SELECT track_id FROM music_playlist_tracks WHERE playlist_id = ? ORDER BY position",
            (playlist_id,),
        )
        return ok(playlist_id=playlist_id, track_ids=[r["track_id"] for r in order])

    @write
    def delete_playlist(
        self,
        user_id: Annotated[str, Param("the playlist's owner")],
        playlist_id: Annotated[str, Param("playlist id")],
    ) -> dict[str, Any]:
        """Delete one of your playlists."""
        self._own_playlist(user_id, playlist_id)
        self.execute("DELETE FROM music_playlist_tracks WHERE playlist_id = ?", (playlist_id,))
        self.execute("DELETE FROM music_playlists WHERE playlist_id = ?", (playlist_id,))
        return ok(playlist_id=playlist_id, deleted=True)

    # ---- likes -----------------------------------------------------------------------------------
    @write
    def like_track(
        self,
        user_id: Annotated[str, Param("user id")],
        track_id: Annotated[str, Param("track id")],
    ) -> dict[str, Any]:
        """Add a track to the user's liked songs."""
        self._user(user_id)
        self._track(track_id)
        if self.scalar("SELECT 1 FROM music_likes WHERE user_id = ? AND track_id = ?", (user_id, track_id)):
            raise conflict(f"{user_id} already likes {track_id}")
        self.execute("INSERT INTO music_likes VALUES (?, ?, ?)", (user_id, track_id, iso(app_now(self))))
        return ok(user_id=user_id, track_id=track_id, liked=True)

    @write
    def unlike_track(
        self,
        user_id: Annotated[str, Param("user id")],
        track_id: Annotated[str, Param("track id")],
    ) -> dict[str, Any]:
        """Remove a track from the user's liked songs."""
        self._user(user_id)
        cur = self.execute("DELETE FROM music_likes WHERE user_id = ? AND track_id = ?", (user_id, track_id))
        if cur.rowcount == 0:
            raise not_found("liked track", track_id)
        return ok(user_id=user_id, track_id=track_id, liked=False)

    @read
    def list_liked_tracks(
        self,
        user_id: Annotated[str, Param("user id")],
        page: Annotated[int, Param("1-based page")] = 1,
        page_size: Annotated[int, Param("results per page, 1-50")] = 20,
    ) -> dict[str, Any]:
        """The user's liked songs, most recently liked first."""
        self._user(user_id)
        rows = self.rows(
            "SELECT l.liked_at, t.*, a.name AS artist_name, al.title AS album_title FROM music_likes l"
            " JOIN music_tracks t USING (track_id) JOIN music_artists a ON a.artist_id = t.artist_id"
            " JOIN music_albums al ON al.album_id = t.album_id WHERE l.user_id = ?"
            " ORDER BY l.liked_at DESC, t.track_id",
            (user_id,),
        )
        return ok(
            total=len(rows),
            page=page,
            tracks=[
                {**self._track_view(r), "liked_at": r["liked_at"]}
                for r in paginate(rows, page, page_size, max_page_size=50)
            ],
        )

    # ---- playback ----------------------------------------------------------------------------------
    @write
    def play_track(
        self,
        user_id: Annotated[str, Param("user id")],
        track_id: Annotated[str, Param("track id")],
    ) -> dict[str, Any]:
        """Start playing a track now (the queue is kept for afterwards)."""
        self._user(user_id)
        track = self._track(track_id)
        return ok(now_playing=self._start(user_id, track))

    @write
    def add_to_play_queue(
        self,
        user_id: Annotated[str, Param("user id")],
        track_id: Annotated[str, Param("track id")],
        play_next: Annotated[bool, Param("put it first in the queue instead of last")] = False,
    ) -> dict[str, Any]:
        """Queue a track to play after the current one."""
        self._user(user_id)
        self._track(track_id)
        size = int(self.scalar("SELECT count(*) FROM music_queue WHERE user_id = ?", (user_id,)))
        if size >= MAX_QUEUE:
            raise conflict(f"the queue is full ({MAX_QUEUE} tracks)")
        position = 1 if play_next else size + 1
        if play_next:
            self.execute("UPDATE music_queue SET position = position + 1 WHERE user_id = ?", (user_id,))
        entry_id = self.next_id("Q")
        self.execute("INSERT INTO music_queue VALUES (?, ?, ?, ?)", (entry_id, user_id, track_id, position))
        return ok(entry_id=entry_id, track_id=track_id, position=position, queue_length=size + 1)

    @read
    def get_play_queue(self, user_id: Annotated[str, Param("user id")]) -> dict[str, Any]:
        """What is playing now and what is queued, in order."""
        self._user(user_id)
        current = self.row("SELECT * FROM music_now_playing WHERE user_id = ?", (user_id,))
        now_playing = None
        if current is not None:
            t = self._track_rows("t.track_id = ?", [current["track_id"]], "t.track_id")[0]
            now_playing = {"track": self._track_view(t), "started_at": current["started_at"]}
        rows = self.rows(
            "SELECT q.entry_id, q.position, t.*, a.name AS artist_name, al.title AS album_title"
            " FROM music_queue q"
            " JOIN music_tracks t USING (track_id) JOIN music_artists a ON a.artist_id = t.artist_id"
            " JOIN music_albums al ON al.album_id = t.album_id WHERE q.user_id = ? ORDER BY q.position",
            (user_id,),
        )
        return ok(
            now_playing=now_playing,
            queue=[
                {"entry_id": r["entry_id"], "position": r["position"], **self._track_view(r)} for r in rows
            ],
        )

    @write
    def skip_to_next(self, user_id: Annotated[str, Param("user id")]) -> dict[str, Any]:
        """Play the first queued track now; it leaves the queue."""
        self._user(user_id)
        head = self.row("SELECT * FROM music_queue WHERE user_id = ? ORDER BY position LIMIT 1", (user_id,))
        if head is None:
            raise conflict("the play queue is empty")
        self.execute("DELETE FROM music_queue WHERE entry_id = ?", (head["entry_id"],))
        self.execute("UPDATE music_queue SET position = position - 1 WHERE user_id = ?", (user_id,))
        left = int(self.scalar("SELECT count(*) FROM music_queue WHERE user_id = ?", (user_id,)))
        return ok(now_playing=self._start(user_id, self._track(head["track_id"])), queue_length=left)

    @read
    def get_recently_played(
        self,
        user_id: Annotated[str, Param("user id")],
        limit: Annotated[int, Param("most plays to return, 1-50")] = 20,
    ) -> dict[str, Any]:
        """The user's listening history, newest first."""
        self._user(user_id)
        check_range("limit", limit, 1, 50)
        rows = self.rows(
            "SELECT h.play_id, h.played_at, t.*, a.name AS artist_name, al.title AS album_title"
            " FROM music_history h"
            " JOIN music_tracks t USING (track_id) JOIN music_artists a ON a.artist_id = t.artist_id"
            " JOIN music_albums al ON al.album_id = t.album_id WHERE h.user_id = ?"
            " ORDER BY h.play_id DESC LIMIT ?",
            (user_id, limit),
        )
        return ok(
            plays=[
                {"play_id": r["play_id"], "played_at": r["played_at"], **self._track_view(r)} for r in rows
            ]
        )
