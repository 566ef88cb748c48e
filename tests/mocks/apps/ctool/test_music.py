"""Music on real SQLite: catalogue search, playlist ownership and ordering, likes, playback queue."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.mocks.apps.ctool import expect_error, ok_call
from toolgym.errors import ErrorKind
from toolgym.mocks.apps.ctool import MusicApp
from toolgym.mocks.world import MockWorld

ME = "LN010"


@pytest.fixture
def world() -> Iterator[MockWorld]:
    with MockWorld([MusicApp]) as w:
        yield w


def _positions(world: MockWorld, playlist_id: str) -> list[str]:
    return [t["track_id"] for t in ok_call(world, "get_playlist", playlist_id=playlist_id)["tracks"]]


def test_search_filters_and_sorts(world: MockWorld) -> None:
    jazz = ok_call(world, "search_tracks", genre="jazz", year_from=2010, year_to=2020, page_size=50)
    assert jazz["total"] > 0
    assert all(t["genre"] == "jazz" and 2010 <= t["release_year"] <= 2020 for t in jazz["tracks"])
    short = ok_call(world, "search_tracks", max_duration_s=150, sort_by="duration", page_size=50)["tracks"]
    durations = [t["duration_s"] for t in short]
    assert durations == sorted(durations) and max(durations) <= 150
    popular = [
        t["play_count"] for t in ok_call(world, "search_tracks", sort_by="popularity", page_size=20)["tracks"]
    ]
    assert popular == sorted(popular, reverse=True)
    clean = ok_call(world, "search_tracks", genre="hip_hop", exclude_explicit=True, page_size=50)["tracks"]
    assert clean and not any(t["explicit"] for t in clean)
    exact = ok_call(world, "search_tracks", query="falling rain")["tracks"]
    assert exact[0]["title"] == "Falling Rain"  # whole words: "Falling Train" does not win
    everything = ok_call(world, "search_tracks", page_size=1)["total"]
    assert everything == len(world.rows("music_tracks"))
    page1 = ok_call(world, "search_tracks", genre="rock", page=1, page_size=5)["tracks"]
    page2 = ok_call(world, "search_tracks", genre="rock", page=2, page_size=5)["tracks"]
    assert not {t["track_id"] for t in page1} & {t["track_id"] for t in page2}
    expect_error(world, "search_tracks", code=400, genre="polka")
    expect_error(world, "search_tracks", code=400, year_from=2020, year_to=2010)


def test_artist_and_album_views(world: MockWorld) -> None:
    artist = ok_call(world, "search_artists", query="", limit=1)["artists"][0]
    assert artist["followers"] == max(a["followers"] for a in world.rows("music_artists"))
    view = ok_call(world, "get_artist", artist_id=artist["artist_id"])
    plays = [t["play_count"] for t in view["top_tracks"]]
    assert plays == sorted(plays, reverse=True) and all(
        t["artist_id"] == artist["artist_id"] for t in view["top_tracks"]
    )
    album = ok_call(world, "get_album", album_id=view["albums"][0]["album_id"])
    assert [t["track_id"] for t in album["tracks"]] and album["total_duration_s"] == sum(
        t["duration_s"] for t in album["tracks"]
    )
    expect_error(world, "get_artist", code=404, artist_id="AR-9999")


def test_playlist_positions_stay_gap_free(world: MockWorld) -> None:
    pid = ok_call(world, "create_playlist", user_id=ME, name="Test mix")["playlist_id"]
    tracks = [f"TR-{n:06d}" for n in (11, 22, 33, 44)]
    for t in tracks:
        ok_call(world, "add_track_to_playlist", user_id=ME, playlist_id=pid, track_id=t)
    assert _positions(world, pid) == tracks
    ok_call(world, "add_track_to_playlist", user_id=ME, playlist_id=pid, track_id="TR-000055", position=2)
    assert _positions(world, pid) == ["TR-000011", "TR-000055", "TR-000022", "TR-000033", "TR-000044"]
    moved = ok_call(
        world, "move_playlist_track", user_id=ME, playlist_id=pid, track_id="TR-000011", new_position=5
    )
    assert moved["track_ids"] == ["TR-000055", "TR-000022", "TR-000033", "TR-000044", "TR-000011"]
    ok_call(world, "move_playlist_track", user_id=ME, playlist_id=pid, track_id="TR-000044", new_position=1)
    ok_call(world, "remove_track_from_playlist", user_id=ME, playlist_id=pid, track_id="TR-000022")
    assert _positions(world, pid) == ["TR-000044", "TR-000055", "TR-000033", "TR-000011"]
    rows = world.rows("music_playlist_tracks", {"playlist_id": pid})
    assert sorted(r["position"] for r in rows) == [1, 2, 3, 4]
    expect_error(world, "add_track_to_playlist", code=409, user_id=ME, playlist_id=pid, track_id="TR-000033")
    expect_error(
        world,
        "add_track_to_playlist",
        code=400,
        user_id=ME,
        playlist_id=pid,
        track_id="TR-000066",
        position=9,
    )
    expect_error(
        world,
        "move_playlist_track",
        code=400,
        user_id=ME,
        playlist_id=pid,
        track_id="TR-000033",
        new_position=0,
    )
    expect_error(
        world, "remove_track_from_playlist", code=404, user_id=ME, playlist_id=pid, track_id="TR-000022"
    )
    expect_error(world, "add_track_to_playlist", code=404, user_id=ME, playlist_id=pid, track_id="TR-999999")


def test_only_the_owner_changes_a_playlist(world: MockWorld) -> None:
    pid = ok_call(world, "create_playlist", user_id=ME, name="Mine", is_public=False)["playlist_id"]
    expect_error(world, "create_playlist", code=409, user_id=ME, name="Mine")
    expect_error(
        world, "add_track_to_playlist", code=403, user_id="LN011", playlist_id=pid, track_id="TR-000001"
    )
    expect_error(world, "delete_playlist", code=403, user_id="LN011", playlist_id=pid)
    assert pid in [p["playlist_id"] for p in ok_call(world, "list_user_playlists", user_id=ME)["playlists"]]
    ok_call(world, "delete_playlist", user_id=ME, playlist_id=pid)
    expect_error(world, "get_playlist", code=404, playlist_id=pid)


def test_likes(world: MockWorld) -> None:
    liked = {t["track_id"] for t in ok_call(world, "list_liked_tracks", user_id=ME, page_size=50)["tracks"]}
    track = next(r["track_id"] for r in world.rows("music_tracks") if r["track_id"] not in liked)
    ok_call(world, "like_track", user_id=ME, track_id=track)
    assert ok_call(world, "list_liked_tracks", user_id=ME)["total"] == len(liked) + 1
    expect_error(world, "like_track", code=409, user_id=ME, track_id=track)
    ok_call(world, "unlike_track", user_id=ME, track_id=track)
    expect_error(world, "unlike_track", code=404, user_id=ME, track_id=track)


def test_playback_queue_and_history(world: MockWorld) -> None:
    plays = world.rows("music_tracks", {"track_id": "TR-000100"})[0]["play_count"]
    ok_call(world, "play_track", user_id=ME, track_id="TR-000100")
    assert world.rows("music_tracks", {"track_id": "TR-000100"})[0]["play_count"] == plays + 1
    ok_call(world, "add_to_play_queue", user_id=ME, track_id="TR-000200")
    ok_call(world, "add_to_play_queue", user_id=ME, track_id="TR-000300")
    ok_call(world, "add_to_play_queue", user_id=ME, track_id="TR-000400", play_next=True)
    queue = ok_call(world, "get_play_queue", user_id=ME)
    assert queue["now_playing"]["track"]["track_id"] == "TR-000100"
    assert [q["track_id"] for q in queue["queue"]] == ["TR-000400", "TR-000200", "TR-000300"]
    assert ok_call(world, "skip_to_next", user_id=ME)["now_playing"]["track"]["track_id"] == "TR-000400"
    assert [q["position"] for q in ok_call(world, "get_play_queue", user_id=ME)["queue"]] == [1, 2]
    ok_call(world, "skip_to_next", user_id=ME)
    ok_call(world, "skip_to_next", user_id=ME)
    expect_error(world, "skip_to_next", code=409, user_id=ME)
    recent = ok_call(world, "get_recently_played", user_id=ME, limit=4)["plays"]
    assert [p["track_id"] for p in recent] == ["TR-000300", "TR-000200", "TR-000400", "TR-000100"]
    expect_error(world, "play_track", code=404, user_id=ME, track_id="TR-999999")
    expect_error(world, "play_track", kind=ErrorKind.ARGUMENT_ERROR, user_id=ME)
