"""toolgym.files' atomic writes: on a real full disk (a small tmpfs) and after a writer killed
with SIGKILL mid-write; temporary folders of dead processes; room kept for a last write."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.writes import fill, killed_writer, small_disk, start_writer, temps
from toolgym.files import (
    FileStore,
    SpaceReserve,
    owned_prefix,
    remove_orphaned_dirs,
    remove_stale_temps,
    write_atomically,
)


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


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", ""])
    proc.wait()
    return proc.pid


def test_orphaned_temp_folders_of_dead_processes_go_and_the_others_stay(tmp_path: Path) -> None:
    prefix = "toolgym-test-"
    mine = Path(tempfile.mkdtemp(prefix=owned_prefix(prefix), dir=tmp_path))  # a live process's
    host = mine.name.removeprefix(prefix).split("-")[1]
    dead = tmp_path / f"{prefix}{dead_pid()}-{host}-x1"
    (dead / "sub").mkdir(parents=True)
    (dead / "sub" / "image.png").write_bytes(b"drawn")
    kept = [
        tmp_path / f"{prefix}{dead_pid()}-000000-x2",  # another host's: its pids say nothing here
        tmp_path / f"{prefix}x3",  # named without its process (an older version's)
        tmp_path / f"other-{dead_pid()}-{host}-x4",  # another prefix
    ]
    for folder in kept:
        folder.mkdir()
    target = tmp_path / "target"
    target.mkdir()
    link = tmp_path / f"{prefix}{dead_pid()}-{host}-x5"
    link.symlink_to(target)  # a link is never followed nor removed
    assert remove_orphaned_dirs(prefix, tmp_path) == [dead]
    assert not dead.exists() and mine.is_dir() and all(folder.is_dir() for folder in kept)
    assert link.is_symlink() and target.is_dir()
    assert remove_orphaned_dirs(prefix, tmp_path / "missing") == []


def test_a_space_reserve_holds_room_until_released_and_keeps_it_on_a_full_disk(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", "1m") as disk:

        def free() -> int:
            stat = os.statvfs(disk)
            return stat.f_bavail * stat.f_frsize

        reserve = SpaceReserve(disk / "run.json", minimum=64 * 1024)
        before = free()
        reserve.cover(1000)  # the minimum
        assert before - free() >= 64 * 1024 and temps(disk) == [reserve.file]
        reserve.cover(100 * 1024)  # twice what it covers
        assert before - free() >= 200 * 1024
        filler = fill(disk, leave=0)
        with pytest.raises(OSError) as info:
            reserve.cover(600 * 1024)
        assert info.value.errno == errno.ENOSPC and info.value.filename == str(disk / "run.json")
        assert reserve.file.stat().st_size == 200 * 1024  # the room it held, still held
        reserve.release()
        assert temps(disk) == [] and free() >= 200 * 1024
        write_atomically(disk / "run.json", b"x" * 150 * 1024)  # the last write gets the room
        filler.unlink()
