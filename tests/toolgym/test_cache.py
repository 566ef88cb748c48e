"""toolgym.cache: checked entries on disk, atomic writes, the switch and the location."""

from __future__ import annotations

import multiprocessing
import os
import threading
from pathlib import Path

import pytest

from toolgym.cache import DiskCache, cache_enabled, cache_key, cache_root


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> DiskCache:
    monkeypatch.setenv("TOOLGYM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TOOLGYM_CACHE", raising=False)
    return DiskCache("things")


def test_put_then_get_returns_the_payload(cache: DiskCache) -> None:
    key = cache_key("thing", 1)
    assert cache.get(key) is None
    cache.put(key, b"payload \x00\xff")
    assert cache.get(key) == b"payload \x00\xff"
    assert cache.path_for(key).parent.parent == cache.directory
    assert [p.name for p in cache.directory.rglob("*") if p.is_file()] == [key]  # no temporary left


def test_keys_follow_every_part() -> None:
    assert cache_key("a", 1, {"x": [1, 2]}) == cache_key("a", 1, {"x": [1, 2]})
    keys = {
        cache_key("a", 1),
        cache_key("a", 2),
        cache_key("b", 1),
        cache_key("a", 1, None),
        cache_key(["a", 1]),
    }
    assert len(keys) == 5


def test_a_changed_input_misses(cache: DiskCache) -> None:
    cache.put(cache_key("image", "aaa"), b"A")
    assert cache.get(cache_key("image", "aab")) is None


def test_namespaces_are_apart(cache: DiskCache) -> None:
    key = cache_key("k")
    cache.put(key, b"one")
    assert DiskCache("others").get(key) is None


@pytest.mark.parametrize("value", ["0", "off", "false", "NO"])
def test_the_switch_turns_reading_and_writing_off(
    cache: DiskCache, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    key = cache_key("k")
    cache.put(key, b"stored before")
    monkeypatch.setenv("TOOLGYM_CACHE", value)
    assert not cache_enabled()
    assert cache.get(key) is None
    cache.put(cache_key("other"), b"x")
    assert not cache.path_for(cache_key("other")).exists()
    monkeypatch.setenv("TOOLGYM_CACHE", "1")
    assert cache.get(key) == b"stored before"


@pytest.mark.parametrize("damage", ["truncated", "flipped", "empty", "foreign"])
def test_a_corrupt_entry_is_ignored_and_removed(cache: DiskCache, damage: str) -> None:
    key = cache_key("k")
    cache.put(key, b"x" * 1000)
    path = cache.path_for(key)
    data = path.read_bytes()
    damaged = {
        "truncated": data[:-10],
        "flipped": data[:500] + bytes([data[500] ^ 1]) + data[501:],
        "empty": b"",
        "foreign": b"SQLite format 3\x00" + b"\x00" * 100,
    }[damage]
    path.write_bytes(damaged)
    assert cache.get(key) is None
    assert not path.exists()
    cache.put(key, b"x" * 1000)  # rebuilt
    assert cache.get(key) == b"x" * 1000


def test_an_unwritable_cache_costs_nothing_but_the_entry(cache: DiskCache, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    unwritable = DiskCache("things", root=blocker)
    unwritable.put(cache_key("k"), b"x")  # no error
    assert unwritable.get(cache_key("k")) is None


def test_bad_keys_and_namespaces_are_refused(cache: DiskCache) -> None:
    with pytest.raises(ValueError, match="hex digests"):
        cache.get("../../etc/passwd")
    with pytest.raises(ValueError, match="namespace"):
        DiskCache("../up")


def test_location(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TOOLGYM_CACHE_DIR", str(tmp_path / "given"))
    assert cache_root() == tmp_path / "given"
    monkeypatch.delenv("TOOLGYM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "toolgym"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "toolgym"


PAYLOADS = [bytes([i]) * (50_000 + 7919 * i) for i in range(6)]


def _write_many(root: str, key: str, which: int, times: int) -> None:
    cache = DiskCache("things", root=Path(root))
    for _ in range(times):
        cache.put(key, PAYLOADS[which])


def test_concurrent_writers_leave_one_whole_entry(tmp_path: Path) -> None:
    """Processes and threads writing one key with different payloads while a reader reads: every
    read is a whole payload (never a mix or a half), and one whole entry remains."""
    root = tmp_path / "cache"
    key = cache_key("shared")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_many, args=(str(root), key, i, 30)) for i in range(3)]
    threads = [threading.Thread(target=_write_many, args=(str(root), key, i, 30)) for i in range(3, 6)]
    for proc in procs:
        proc.start()
    for thread in threads:
        thread.start()
    reader = DiskCache("things", root=root)
    written = False
    while any(p.is_alive() for p in procs) or any(t.is_alive() for t in threads):
        got = reader.get(key)  # a torn entry would read as None (and be removed)
        if got is None:
            assert not written, "an entry once in place read as missing or corrupt"
        else:
            assert got in PAYLOADS
            written = True
    for p in procs:
        p.join()
        assert p.exitcode == 0
    for t in threads:
        t.join()
    final = reader.get(key)
    assert final in PAYLOADS
    assert [p.name for p in (root / "things").rglob("*") if p.is_file()] == [key]


def entry_names(root: Path) -> set[str]:
    return {p.name for p in root.rglob("*") if p.is_file()}


def test_a_bounded_namespace_drops_the_least_recently_used(tmp_path: Path) -> None:
    keys = [cache_key("entry", i) for i in range(4)]
    unbounded = DiskCache("things", root=tmp_path)
    for age, key in enumerate(keys):
        unbounded.put(key, bytes(3000))  # about 3 kB each on disk, 12 kB in all
        os.utime(unbounded.path_for(key), (1000 + age, 1000 + age))  # keys[0] the oldest
    bounded = DiskCache("things", root=tmp_path, max_bytes=10_000)
    assert bounded.get(keys[0]) == bytes(3000)  # a hit makes it the most recently used
    bounded.prune()  # down to 80%: the two least recently used go
    assert entry_names(tmp_path) == {keys[0], keys[3]}
    bounded.prune()  # under the bound: nothing more
    assert entry_names(tmp_path) == {keys[0], keys[3]}


def test_a_put_prunes_what_earlier_processes_left(tmp_path: Path) -> None:
    unbounded = DiskCache("things", root=tmp_path)
    for i in range(10):
        unbounded.put(cache_key("old", i), bytes(3000))
        os.utime(unbounded.path_for(cache_key("old", i)), (1000 + i, 1000 + i))
    bounded = DiskCache("things", root=tmp_path, max_bytes=10_000)
    bounded.put(cache_key("new"), bytes(3000))  # the first put of this cache object prunes
    names = entry_names(tmp_path)
    assert cache_key("new") in names and len(names) == 2
    assert sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file()) <= 8000
