"""MTU music: LookupSong, PlaySong, LookupMusic, PlayMedia (SGD), PlayMusic and AddToPlaylist
(SNIPS).

A song catalogue, the user's playlists and what each playback device is playing. Playing a song
sets the device's now-playing row; adding to a playlist appends songs that are not in it yet (a
song already there is a 409); "this song" means the song playing most recently.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Volatile, format_id, read, write
from toolgym.mocks.apps.mtu._common import (
    DONTCARE,
    FIRST_NAMES,
    canon,
    choice,
    finalize_tools,
    words_in,
)
from toolgym.mocks.clock import format_time
from toolgym.mocks.responses import bad_request, conflict, not_found, ok
from toolgym.mocks.seeding import insert_rows
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

GENRES: Final = (
    "Pop",
    "Rock",
    "Jazz",
    "Hip Hop",
    "Country",
    "Electronic",
    "Metal",
    "Classical",
    "Reggae",
    "Blues",
    "R&B",
    "Folk",
    "Indie",
)
ARTIST_WORDS: Final = (
    ("The", "Neon", "Velvet", "Paper", "Silver", "Midnight", "Electric", "Golden", "Wild", "Crystal"),
    ("Lanterns", "Foxes", "Tides", "Pilots", "Ravens", "Echo", "Harbor", "Comets", "Parade", "Avenue"),
)
SONG_WORDS: Final = (
    ("Summer", "Broken", "Golden", "Lonely", "Electric", "Paper", "Burning", "Falling", "Midnight", "Dancing",
     "Silent", "Wild", "Blue", "Neon", "Sweet", "Shallow", "Endless", "Velvet", "Hollow", "Crazy"),
    ("Heart", "Rain", "Road", "Dreams", "Fire", "Lights", "Sky", "River", "Love", "Night",
     "Echoes", "Hearts", "Roses", "Train", "Waves", "Skyline", "Shadows", "Wings", "Stars", "Thunder"),
)  # fmt: skip
DEVICES: Final = ("TV", "kitchen speaker", "bedroom speaker", "Living room", "Kitchen", "Patio", "Phone")
SERVICES: Final = (
    "spotify",
    "deezer",
    "youtube",
    "zvooq",
    "pandora",
    "itunes",
    "google music",
    "groove shark",
    "last fm",
    "iheartradio",
    "slacker",
    "napster",
    "vimeo",
    "soundcloud",
    "netflix",
)
MTU_PLAYLISTS: Final = ("country 2016", "popular", "masters of metal", "might and myth power metal")
PLAYLIST_NAMES: Final = (
    "hits",
    "workout",
    "chill",
    "road trip",
    "party",
    "throwback",
    "focus",
    "sunday morning",
)


class MusicApp(App):
    name = "mtu_music"
    description = "Music: a song catalogue, playlists and playback on the user's devices (MTU-Bench)."
    version = "1"
    schema = """
    CREATE TABLE mtu_music_songs (
        song_id TEXT PRIMARY KEY,
        song_name TEXT NOT NULL,
        artist TEXT NOT NULL,
        album TEXT NOT NULL,
        genre TEXT NOT NULL,
        year INTEGER NOT NULL,
        popularity INTEGER NOT NULL
    );
    CREATE INDEX mtu_music_songs_artist ON mtu_music_songs(artist);
    CREATE TABLE mtu_music_playlists (
        playlist_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        owner TEXT NOT NULL,
        UNIQUE (name, owner)
    );
    CREATE TABLE mtu_music_playlist_items (
        playlist_id TEXT NOT NULL REFERENCES mtu_music_playlists(playlist_id),
        song_id TEXT NOT NULL REFERENCES mtu_music_songs(song_id),
        position INTEGER NOT NULL,
        added_at TEXT NOT NULL,
        PRIMARY KEY (playlist_id, song_id)
    );
    CREATE TABLE mtu_music_playback (
        device TEXT PRIMARY KEY,
        song_id TEXT REFERENCES mtu_music_songs(song_id),
        service TEXT,
        queue TEXT NOT NULL DEFAULT '',
        started_at TEXT
    );
    """
    volatile: ClassVar[Volatile] = {"mtu_music_playlist_items": ["added_at"]}

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        artists = sorted({f"{a} {b}" for a in ARTIST_WORDS[0] for b in ARTIST_WORDS[1]})
        titles = sorted({f"{a} {b}" for a in SONG_WORDS[0] for b in SONG_WORDS[1]})
        rng.shuffle(titles)
        songs: list[dict[str, Any]] = []
        for artist in rng.sample(artists, 60):
            genre = rng.choice(GENRES)
            for _ in range(rng.randint(1, 3)):
                album = f"{rng.choice(SONG_WORDS[0])} {rng.choice(SONG_WORDS[1])}"
                year = rng.randint(1975, clock.year)
                for _ in range(rng.randint(3, 5)):
                    songs.append(
                        {
                            "song_id": format_id("SONG", len(songs) + 1, 5),
                            # titles repeat across artists now and then, as they do
                            "song_name": titles[len(songs) % len(titles)],
                            "artist": artist,
                            "album": album,
                            "genre": genre,
                            "year": year,
                            "popularity": rng.randint(1, 100),
                        }
                    )
        insert_rows(db, "mtu_music_songs", songs)
        playlists = [
            {"playlist_id": format_id("PL", i + 1, 4), "name": n, "owner": "me"}
            for i, n in enumerate(MTU_PLAYLISTS)
        ]
        for genre in GENRES:
            for word in rng.sample(PLAYLIST_NAMES, 2):
                playlists.append(
                    {
                        "playlist_id": format_id("PL", len(playlists) + 1, 4),
                        "name": f"{genre.lower()} {word}",
                        "owner": "me",
                    }
                )
        for name in rng.sample(FIRST_NAMES, 6):
            playlists.append(
                {
                    "playlist_id": format_id("PL", len(playlists) + 1, 4),
                    "name": f"{name.lower()}'s party on fridays",
                    "owner": name,
                }
            )
        insert_rows(db, "mtu_music_playlists", playlists)
        items = []
        for p in playlists:
            pool = [s for s in songs if s["genre"].lower() in p["name"]] or songs
            for pos, s in enumerate(rng.sample(pool, min(len(pool), rng.randint(5, 15))), 1):
                items.append(
                    {
                        "playlist_id": p["playlist_id"],
                        "song_id": s["song_id"],
                        "position": pos,
                        "added_at": format_time(clock - timedelta(days=rng.randint(1, 400))),
                    }
                )
        insert_rows(db, "mtu_music_playlist_items", items)
        playing = rng.choice(songs)
        insert_rows(
            db,
            "mtu_music_playback",
            [
                {
                    "device": d,
                    "song_id": playing["song_id"] if d == "Phone" else None,
                    "service": "spotify" if d == "Phone" else None,
                    "queue": playing["song_id"] if d == "Phone" else "",
                    "started_at": format_time(clock - timedelta(minutes=2)) if d == "Phone" else None,
                }
                for d in DEVICES
            ],
        )

    # ---- helpers -------------------------------------------------------------------------------
    @staticmethod
    def _song_view(s: dict[str, Any]) -> dict[str, Any]:
        return {
            "song_name": s["song_name"],
            "track": s["song_name"],
            "artist": s["artist"],
            "album": s["album"],
            "genre": s["genre"],
            "year": s["year"],
        }

    def _filter(
        self, genre: str | None, artist: str | None, album: str | None, year: str | None
    ) -> list[dict[str, Any]]:
        sql, params = "SELECT * FROM mtu_music_songs WHERE 1", list[Any]()
        for column, value in (("genre", genre), ("artist", artist), ("album", album)):
            if value is not None and canon(value) != DONTCARE:
                sql += f" AND lower({column}) = ?"
                params.append(canon(value))
        if year is not None and canon(year) != DONTCARE:
            if not year.strip().isdigit():
                raise bad_request(f"year must be a year like 2019, got {year!r}")
            sql += " AND year = ?"
            params.append(int(year))
        return self.rows(sql + " ORDER BY popularity DESC, song_id", params)

    def _song(self, name: str, artist: str | None, album: str | None = None) -> dict[str, Any]:
        songs = self._filter(None, artist, album, None)
        found = [s for s in songs if canon(s["song_name"]) == canon(name)]
        if not found:
            raise not_found(
                "song", name if not artist or canon(artist) == DONTCARE else f"{name} by {artist}"
            )
        return found[0]  # the most popular of same-named songs

    def _play(self, device: str, songs: list[dict[str, Any]], service: str | None) -> None:
        self.execute(
            "UPDATE mtu_music_playback SET song_id = ?, service = ?, queue = ?, started_at = ? WHERE device = ?",
            (songs[0]["song_id"], service, ",".join(s["song_id"] for s in songs), self.now_iso(), device),
        )

    # ---- SGD -------------------------------------------------------------------------------------
    @read(name="LookupSong")
    def lookup_song(
        self,
        genre: Annotated[str, Param("genre, or dontcare")] = DONTCARE,
        artist: Annotated[str, Param("artist, or dontcare")] = DONTCARE,
        album: Annotated[str, Param("album, or dontcare")] = DONTCARE,
        year: Annotated[str, Param("release year, or dontcare")] = DONTCARE,
    ) -> dict[str, Any]:
        """Search for a song; most popular first."""
        songs = [self._song_view(s) for s in self._filter(genre, artist, album, year)]
        return ok(count=len(songs), songs=songs[:10])

    @read(name="LookupMusic")
    def lookup_music(
        self,
        artist: Annotated[str, Param("artist, or dontcare")] = DONTCARE,
        album: Annotated[str, Param("album, or dontcare")] = DONTCARE,
        genre: Annotated[str, Param("genre, or dontcare")] = DONTCARE,
        year: Annotated[str, Param("release year, or dontcare")] = DONTCARE,
    ) -> dict[str, Any]:
        """Discover songs matching your taste; most popular first."""
        songs = [self._song_view(s) for s in self._filter(genre, artist, album, year)]
        return ok(count=len(songs), songs=songs[:10])

    @write(name="PlaySong")
    def play_song(
        self,
        song_name: Annotated[str, Param("the song")],
        artist: Annotated[str, Param("artist, or dontcare")] = DONTCARE,
        playback_device: Annotated[str, Param("TV, kitchen speaker or bedroom speaker")] = "TV",
    ) -> dict[str, Any]:
        """Play the selected song on the device."""
        device = choice("playback_device", playback_device, DEVICES)
        song = self._song(song_name, artist)
        self._play(device, [song], None)
        return ok(**self._song_view(song), playback_device=device)

    @write(name="PlayMedia")
    def play_media(
        self,
        track: Annotated[str | None, Param("the song (or song_name)")] = None,
        song_name: Annotated[str | None, Param("the song, same as track")] = None,
        artist: Annotated[str, Param("artist, or dontcare")] = DONTCARE,
        device: Annotated[str, Param("Living room, Kitchen or Patio")] = "Living room",
        album: Annotated[str, Param("album, or dontcare")] = DONTCARE,
        playback_device: Annotated[str, Param("TV, kitchen speaker or bedroom speaker")] = "TV",
    ) -> dict[str, Any]:
        """Play a song by its name (and optionally artist and album) on a device."""
        name = track or song_name
        if not name:
            raise bad_request("PlayMedia: give track or song_name")
        # the song_name variant plays on playback_device, the track variant on device
        where = choice("device", playback_device if song_name and not track else device, DEVICES)
        song = self._song(name, artist, album)
        self._play(where, [song], None)
        return ok(**self._song_view(song), device=where, playback_device=where)

    # ---- SNIPS -----------------------------------------------------------------------------------
    @write(name="PlayMusic")
    def play_music(
        self,
        artist: Annotated[str | None, Param("artist")] = None,
        album: Annotated[str | None, Param("album")] = None,
        music_item: Annotated[str | None, Param("song, album, artist, playlist, track, ...")] = None,
        track: Annotated[str | None, Param("a song title")] = None,
        year: Annotated[str | None, Param("release year or decade, e.g. 2013 or sixties")] = None,
        genre: Annotated[str | None, Param("genre")] = None,
        service: Annotated[str | None, Param("streaming service, e.g. spotify")] = None,
        sort: Annotated[str | None, Param("popular, newest, oldest, ...")] = None,
        playlist: Annotated[str | None, Param("a playlist to play")] = None,
    ) -> dict[str, Any]:
        """Play music matching the preferences; returns the queue that starts playing."""
        if service is not None:
            service = choice("service", service, SERVICES, {"youtube music": "youtube", "lastfm": "last fm"})
        if playlist:
            p = self._playlist(playlist, None)
            songs = self.rows(
                "SELECT s.* FROM mtu_music_playlist_items i JOIN mtu_music_songs s USING (song_id)"
                " WHERE i.playlist_id = ? ORDER BY i.position, s.song_id",
                (p["playlist_id"],),
            )
        else:
            songs = self.rows("SELECT * FROM mtu_music_songs ORDER BY popularity DESC, song_id")
            if artist:
                songs = [s for s in songs if words_in(artist, s["artist"])]
            if album:
                songs = [s for s in songs if words_in(album, s["album"])]
            if track:
                songs = [s for s in songs if words_in(track, s["song_name"])]
            if genre:
                songs = [s for s in songs if canon(s["genre"]) == canon(genre).replace("-", " ")]
            if year:
                songs = [s for s in songs if self._year_matches(year, s["year"])]
        if sort:
            key = canon(sort)
            if "new" in key or "latest" in key or "recent" in key:
                songs.sort(key=lambda s: (-s["year"], -s["popularity"], s["song_id"]))
            elif "old" in key:
                songs.sort(key=lambda s: (s["year"], -s["popularity"], s["song_id"]))
        if not songs:
            raise not_found(
                "music matching",
                {
                    k: v
                    for k, v in (
                        ("artist", artist),
                        ("album", album),
                        ("track", track),
                        ("genre", genre),
                        ("year", year),
                    )
                    if v
                },
            )
        if music_item and canon(music_item) in ("song", "track", "tune", "sound track", "soundtrack"):
            songs = songs[:1]
        queue = songs[:20]
        self._play("Phone", queue, service)
        return ok(
            playlist=[self._song_view(s) for s in queue], service=service, now_playing=queue[0]["song_name"]
        )

    @staticmethod
    def _year_matches(text: str, year: int) -> bool:
        t = canon(text).removeprefix("the ")
        decades = {"sixties": 1960, "seventies": 1970, "eighties": 1980, "nineties": 1990, "fifties": 1950}
        if t in decades:
            return decades[t] <= year < decades[t] + 10
        if t.endswith("s") and t[:-1].isdigit():
            start = int(t[:-1]) + (1900 if len(t) == 3 else 0)
            return start <= year < start + 10
        if t.isdigit():
            return year == int(t)
        raise bad_request(f"year must be a year or a decade, got {text!r}")

    def _playlist(self, name: str, owner: str | None) -> dict[str, Any]:
        rows = self.rows("SELECT * FROM mtu_music_playlists ORDER BY playlist_id")
        key = canon(name).removeprefix("my ").removesuffix(" playlist")
        found = [r for r in rows if canon(r["name"]) == key]
        if owner is not None and canon(owner) not in ("me", "my", "i"):
            found = [r for r in found if canon(r["owner"]) == canon(owner)]
        if not found:
            raise not_found("playlist", name)
        return found[0]

    @write(name="AddToPlaylist")
    def add_to_playlist(
        self,
        playlist: Annotated[str, Param("the playlist to add to")],
        entity_name: Annotated[
            str | None, Param("the song (or album/artist, see music_item); none: this song")
        ] = None,
        artist: Annotated[str | None, Param("artist of the song")] = None,
        music_item: Annotated[str | None, Param("song, track, album or artist")] = None,
        playlist_owner: Annotated[str | None, Param("whose playlist")] = None,
    ) -> dict[str, Any]:
        """Add a song (or an album, or an artist's top songs) to a playlist."""
        p = self._playlist(playlist, playlist_owner)
        item = canon(music_item or "song")
        if entity_name is None or canon(entity_name) in ("this song", "this track", "this", "this tune"):
            current = self.row(
                "SELECT s.* FROM mtu_music_playback b JOIN mtu_music_songs s USING (song_id)"
                " WHERE b.started_at IS NOT NULL ORDER BY b.started_at DESC, b.device LIMIT 1"
            )
            if current is None:
                raise not_found("song playing now", "this song")
            songs = [current]
        elif item == "album":
            songs = [
                s for s in self._filter(None, artist, None, None) if canon(s["album"]) == canon(entity_name)
            ]
            songs.sort(key=lambda s: s["song_id"])
        elif item == "artist":
            songs = self._filter(None, entity_name, None, None)[:5]
        else:
            songs = [self._song(entity_name, artist)]
        if not songs:
            raise not_found(item, entity_name)
        present = {
            r["song_id"]
            for r in self.rows(
                "SELECT song_id FROM mtu_music_playlist_items WHERE playlist_id = ? ORDER BY song_id",
                (p["playlist_id"],),
            )
        }
        new = [s for s in songs if s["song_id"] not in present]
        if not new:
            raise conflict(f"already in {p['name']}: {[s['song_name'] for s in songs]}")
        last = int(
            self.scalar(
                "SELECT coalesce(max(position), 0) FROM mtu_music_playlist_items WHERE playlist_id = ?",
                (p["playlist_id"],),
            )
        )
        for offset, s in enumerate(new, 1):
            self.execute(
                "INSERT INTO mtu_music_playlist_items VALUES (?, ?, ?, ?)",
                (p["playlist_id"], s["song_id"], last + offset, self.now_iso()),
            )
        content = self.rows(
            "SELECT s.song_name FROM mtu_music_playlist_items i JOIN mtu_music_songs s USING (song_id)"
            " WHERE i.playlist_id = ? ORDER BY i.position, s.song_id",
            (p["playlist_id"],),
        )
        return ok(
            confirmation_message=f"Added {', '.join(s['song_name'] for s in new)} to {p['name']}",
            added=[self._song_view(s) for s in new],
            playlist_content=[c["song_name"] for c in content],
        )


finalize_tools(MusicApp)
