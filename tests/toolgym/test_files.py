"""toolgym.files' atomic writes: on a real full disk (a small tmpfs) and after a writer killed
with SIGKILL mid-write."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from tests.writes import fill, killed_writer, small_disk, start_writer, temps
from toolgym.files import FileStore, remove_stale_temps, write_atomically


def test_a_write_to_a_full_disk_keeps_the_old_file_leaves_no_temp_and_names_the_file(
    tmp_path: Path,
) -> None:
    with small_disk(tmp_path / "disk", "256k") as disk:
        target = disk / "run.json"
        write_atomically(target, '{"episodes": []}\n')
        fill(disk, leave=16 * 1024)
        with pytest.raises(OSError) as info:
            write_atomically(target, b"x" * 64 * 1024, durable=True)
        assert info.value.errno == errno.ENOSPC and info.value.filename == str(target)
        assert target.read_text() == '{"episodes": []}\n'
        assert sorted(p.name for p in disk.iterdir()) == ["filler", "run.json"]


def test_a_file_store_on_a_full_disk_leaves_no_torn_blob(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", "256k") as disk:
        store = FileStore(disk / "store")
        small = store.put_bytes(b"small image", name="a.png")
        fill(disk, leave=16 * 1024)
        with pytest.raises(OSError) as info:
            store.put_bytes(b"\x89PNG" * 16 * 1024, name="big.png")
        assert info.value.errno == errno.ENOSPC and "store" in str(info.value.filename)
        blobs = sorted(
            p.relative_to(disk / "store").as_posix() for p in (disk / "store").rglob("*") if p.is_file()
        )
        assert blobs == [f"{small.sha256[:2]}/{small.sha256}"]


def test_temp_files_of_killed_writers_go_and_those_of_live_writers_stay(tmp_path: Path) -> None:
    (tmp_path / "trial-0").mkdir()
    killed_writer(tmp_path / "trial-0" / "t.seed0.jsonl")
    live = start_writer(tmp_path / "run.json")
    try:
        left = temps(tmp_path)
        assert len(left) == 2 and left[0].name.startswith(".run.json.")
        assert remove_stale_temps(tmp_path) == []  # not below, and the live writer's is kept
        removed = remove_stale_temps(tmp_path, recursive=True)
        assert [p.parent.name for p in removed] == ["trial-0"]
        assert removed[0].name.startswith(".t.seed0.jsonl.") and temps(tmp_path) == [left[0]]
    finally:
        live.kill()
        live.wait()
    assert remove_stale_temps(tmp_path, recursive=True) == [left[0]]  # its writer died now
    assert not (tmp_path / "run.json").exists() and temps(tmp_path) == []


def test_opening_a_file_store_removes_the_blobs_a_killed_writer_left(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    kept = store.put_bytes(b"kept")
    killed_writer(tmp_path / "ab" / ("ab" + "0" * 62))
    assert len(temps(tmp_path)) == 1
    again = FileStore(tmp_path)
    assert temps(tmp_path) == [] and again.put_bytes(b"kept") == kept
