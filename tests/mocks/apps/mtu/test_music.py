"""MTU Music app (toolgym.mocks.apps.mtu.music) on its seeded data (real SQLite)."""

from __future__ import annotations

from tests.mocks.apps.mtu import fails, make_world


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
