"""MTU smart home: get_current_temperature, check_door_status, lock_door, adjust_room_temperature,
adjust_lighting, adjust_music_volume and play_music (published parameter "song/playlist").

Rooms with a temperature sensor, a thermostat and lights; doors with smart locks; one audio
system. Setting a thermostat moves the room to that temperature (50-90 F); an open door cannot be
locked (409); the volume can only change while music plays (409).
"""

from __future__ import annotations

import random
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Volatile, read, write
from toolgym.mocks.apps.mtu._common import canon, finalize_tools
from toolgym.mocks.responses import bad_request, check_range, conflict, not_found, ok, unprocessable
from toolgym.mocks.seeding import insert_rows
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

ROOMS: Final = (
    "living room",
    "bedroom",
    "master bedroom",
    "kids room",
    "kitchen",
    "dining room",
    "bathroom",
    "office",
    "hallway",
    "basement",
    "garage",
)
OUTDOOR: Final = ("outside", "backyard", "patio")
DOORS: Final = ("front door", "back door", "garage door", "patio door", "side door", "basement door")
LIGHT_ACTIONS: Final = {
    "on": "on",
    "turn on": "on",
    "switch on": "on",
    "off": "off",
    "turn off": "off",
    "switch off": "off",
    "dim": "dim",
    "dim the lights": "dim",
    "brighten": "brighten",
    "set": "set",
    "set brightness": "set",
}
MIN_F, MAX_F = 50, 90
STEP: Final = 30  # how much one "dim" or "brighten" changes the brightness


class SmartHomeApp(App):
    name = "mtu_smart_home"
    description = (
        "A smart home: room temperatures and thermostats, lights, door locks, the audio system (MTU-Bench)."
    )
    version = "1"
    schema = """
    CREATE TABLE mtu_smart_home_rooms (
        location TEXT PRIMARY KEY,
        outdoor INTEGER NOT NULL,
        temperature INTEGER NOT NULL,
        target_temperature INTEGER,
        light_on INTEGER NOT NULL,
        light_intensity INTEGER NOT NULL CHECK (light_intensity BETWEEN 0 AND 100)
    );
    CREATE TABLE mtu_smart_home_doors (
        door TEXT PRIMARY KEY,
        lock_status TEXT NOT NULL CHECK (lock_status IN ('locked', 'unlocked')),
        is_open INTEGER NOT NULL
    );
    CREATE TABLE mtu_smart_home_audio (
        system TEXT PRIMARY KEY,
        status TEXT NOT NULL CHECK (status IN ('playing', 'stopped')),
        item TEXT,
        music_service TEXT,
        music_genre TEXT,
        location TEXT,
        volume REAL NOT NULL CHECK (volume BETWEEN 0 AND 100),
        started_at TEXT
    );
    """
    volatile: ClassVar[Volatile] = {"mtu_smart_home_audio": ["started_at"]}

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        winter = clock.month in (11, 12, 1, 2, 3)
        rooms = [
            {
                "location": r,
                "outdoor": 0,
                "temperature": rng.randint(64, 70) if winter else rng.randint(70, 78),
                "target_temperature": None,
                "light_on": int(rng.random() < 0.3),
                "light_intensity": rng.choice((40, 60, 80, 100)),
            }
            for r in ROOMS
        ] + [
            {
                "location": r,
                "outdoor": 1,
                "temperature": rng.randint(30, 48) if winter else rng.randint(65, 90),
                "target_temperature": None,
                "light_on": 0,
                "light_intensity": 100,
            }
            for r in OUTDOOR
        ]
        insert_rows(db, "mtu_smart_home_rooms", rooms)
        insert_rows(
            db,
            "mtu_smart_home_doors",
            [
                {
                    "door": d,
                    "lock_status": "locked" if rng.random() < 0.5 else "unlocked",
                    "is_open": int(d in ("patio door",) and rng.random() < 0.7),
                }
                for d in DOORS
            ],
        )
        insert_rows(
            db,
            "mtu_smart_home_audio",
            [{"system": "main", "status": "stopped", "item": None, "music_service": None, "music_genre": None,
              "location": "living room", "volume": 30.0, "started_at": None}],
        )  # fmt: skip

    # ---- helpers -------------------------------------------------------------------------------
    def _room(self, value: str) -> dict[str, Any]:
        key = canon(value).removeprefix("the ").removeprefix("my ")
        key = {"outdoors": "outside", "outdoor": "outside", "lounge": "living room", "study": "office"}.get(
            key, key
        )
        found = self.row("SELECT * FROM mtu_smart_home_rooms WHERE location = ?", (key,))
        if found is None:
            raise not_found("room or sensor", value)
        return found

    def _door(self, value: str) -> dict[str, Any]:
        key = canon(value).removeprefix("the ").removeprefix("my ")
        if not key.endswith("door"):
            key += " door"
        found = self.row("SELECT * FROM mtu_smart_home_doors WHERE door = ?", (key,))
        if found is None:
            raise not_found("door", value)
        return found

    # ---- APIs --------------------------------------------------------------------------------------
    @read(name="get_current_temperature")
    def get_current_temperature(
        self, location: Annotated[str, Param("a room (living room, bedroom, ...) or outside")]
    ) -> dict[str, Any]:
        """The current temperature (Fahrenheit) in a room or outside."""
        room = self._room(location)
        return ok(temperature=room["temperature"], location=room["location"], unit="F")

    @read(name="check_door_status")
    def check_door_status(
        self, door_location: Annotated[str, Param("which door: front, back, garage, ...")]
    ) -> dict[str, Any]:
        """Whether a door is locked, and whether it is open."""
        door = self._door(door_location)
        return ok(door_status=door["lock_status"], door=door["door"], is_open=bool(door["is_open"]))

    @write(name="lock_door")
    def lock_door(self, door_name: Annotated[str, Param("which door to lock")]) -> dict[str, Any]:
        """Lock a door with its smart lock."""
        door = self._door(door_name)
        if door["is_open"]:
            raise conflict(f"the {door['door']} is open; close it before locking")
        self.execute("UPDATE mtu_smart_home_doors SET lock_status = 'locked' WHERE door = ?", (door["door"],))
        return ok(lock_status="locked", door=door["door"], was=door["lock_status"])

    @write(name="adjust_room_temperature")
    def adjust_room_temperature(
        self,
        temperature: Annotated[int, Param("target temperature in Fahrenheit, 50-90")],
        location: Annotated[str, Param("the room")],
    ) -> dict[str, Any]:
        """Set a room's thermostat; the room reaches the temperature."""
        room = self._room(location)
        if room["outdoor"]:
            raise unprocessable(f"there is no thermostat {room['location']}")
        check_range("temperature", temperature, MIN_F, MAX_F)
        self.execute(
            "UPDATE mtu_smart_home_rooms SET target_temperature = ?, temperature = ? WHERE location = ?",
            (temperature, temperature, room["location"]),
        )
        return ok(
            confirmation=f"{room['location']} set to {temperature} F (was {room['temperature']} F)",
            location=room["location"],
            temperature=temperature,
        )

    @write(name="adjust_lighting")
    def adjust_lighting(
        self,
        location: Annotated[str, Param("the room")],
        action: Annotated[str, Param("turn on, turn off, dim, brighten or set")],
        intensity: Annotated[float | None, Param("brightness 0-100 (for set, dim, brighten)")] = None,
    ) -> dict[str, Any]:
        """Turn a room's lights on or off, dim or brighten them."""
        room = self._room(location)
        kind = LIGHT_ACTIONS.get(canon(action))
        if kind is None:
            raise bad_request(
                f"invalid action {action!r}; expected one of {sorted(set(LIGHT_ACTIONS.values()))}"
            )
        if intensity is not None:
            check_range("intensity", intensity, 0, 100)
        level = int(room["light_intensity"])
        if kind == "set" and intensity is None:
            raise bad_request("action 'set' needs an intensity")
        if kind == "dim":
            level = int(intensity) if intensity is not None else max(10, level - STEP)
        elif kind == "brighten":
            level = int(intensity) if intensity is not None else min(100, level + STEP)
        elif kind in ("set", "on") and intensity is not None:
            level = int(intensity)
        on = kind != "off" and level > 0
        self.execute(
            "UPDATE mtu_smart_home_rooms SET light_on = ?, light_intensity = ? WHERE location = ?",
            (int(on), level, room["location"]),
        )
        state = f"on at {level}%" if on else "off"
        return ok(status=f"lights in the {room['location']} are {state}", light_on=on, intensity=level)

    @write(name="adjust_music_volume")
    def adjust_music_volume(self, volume: Annotated[float, Param("volume 0-100")]) -> dict[str, Any]:
        """Change the volume of the music playing."""
        check_range("volume", volume, 0, 100)
        audio = self.get_or_404("mtu_smart_home_audio", "system", "main", what="audio system")
        if audio["status"] != "playing":
            raise conflict("no music is playing")
        self.execute("UPDATE mtu_smart_home_audio SET volume = ? WHERE system = 'main'", (volume,))
        return ok(confirmation=f"volume changed from {audio['volume']:g} to {volume:g}", volume=volume)

    @write(name="play_music")
    def play_music(
        self,
        song_playlist: Annotated[str, Param("the song or playlist to play")],
        volume: Annotated[float | None, Param("volume 0-100")] = None,
        music_service: Annotated[str | None, Param("streaming service, e.g. Spotify")] = None,
        location: Annotated[str | None, Param("the room to play in")] = None,
        music_genre: Annotated[str | None, Param("genre")] = None,
    ) -> dict[str, Any]:
        """Play a song or playlist on the home audio system."""
        if not song_playlist.strip():
            raise bad_request("song/playlist is empty")
        audio = self.get_or_404("mtu_smart_home_audio", "system", "main", what="audio system")
        room = self._room(location)["location"] if location else audio["location"]
        if volume is not None:
            check_range("volume", volume, 0, 100)
        level = audio["volume"] if volume is None else volume
        self.execute(
            "UPDATE mtu_smart_home_audio SET status = 'playing', item = ?, music_service = ?, music_genre = ?,"
            " location = ?, volume = ?, started_at = ? WHERE system = 'main'",
            (song_playlist.strip(), music_service, music_genre, room, level, self.now_iso()),
        )
        return ok(
            confirmation=f"playing {song_playlist.strip()} in the {room} at volume {level:g}"
            + (f" on {music_service}" if music_service else ""),
            location=room,
            volume=level,
        )


finalize_tools(SmartHomeApp, {"play_music": {"song_playlist": "song/playlist"}})
