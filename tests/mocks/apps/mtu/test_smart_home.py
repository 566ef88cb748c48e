"""MTU Smart home app (toolgym.mocks.apps.mtu.smart_home) on its seeded data (real SQLite)."""

from __future__ import annotations

from tests.mocks.apps.mtu import fails, make_world


def test_smart_home() -> None:
    world = make_world("mtu_smart_home")
    world.call("adjust_room_temperature", temperature=72, location="the bedroom")
    assert world.call("get_current_temperature", location="bedroom")["temperature"] == 72
    fails(world, "adjust_room_temperature", 400, temperature=120, location="bedroom")
    fails(world, "adjust_room_temperature", 422, temperature=70, location="outside")
    fails(world, "get_current_temperature", 404, location="attic")
    open_doors = world.rows("mtu_smart_home_doors", {"is_open": 1})
    for d in open_doors:
        fails(world, "lock_door", 409, door_name=d["door"])
    world.call("lock_door", door_name="front")
    assert world.call("check_door_status", door_location="front door")["door_status"] == "locked"
    world.call("adjust_lighting", location="kitchen", action="turn off")
    assert world.rows("mtu_smart_home_rooms", {"location": "kitchen"})[0]["light_on"] == 0
    fails(world, "adjust_lighting", 400, location="kitchen", action="sparkle")
    fails(world, "adjust_music_volume", 409, volume=40)
    schema = world.tools.get("play_music").parameters_schema()
    assert "song/playlist" in schema["required"]
    world.call("play_music", **{"song/playlist": "Jazz classics", "location": "kitchen"})
    assert world.call("adjust_music_volume", volume=40)["volume"] == 40
    fails(world, "play_music", None, song_playlist="x")  # the Python name is not published
