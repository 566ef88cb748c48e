"""Result caches on disk: values that are pure functions of their inputs (an OCR result of an
image's bytes, a mock world's seeded template), kept across processes.

Entries live under `cache_root()/<namespace>/<key[:2]>/<key>`: `$TOOLGYM_CACHE_DIR`, else
`$XDG_CACHE_HOME/toolgym`, else `~/.cache/toolgym`. A key is the sha256 of everything the value
depends on (`cache_key`), so a changed input is a different file and never a stale hit. Each file
holds a magic, the sha256 of its payload and the payload: a truncated or corrupted file fails the
check, is removed, and the caller recomputes. Writers put the file in place with an atomic
rename, so concurrent writers of one key leave one whole file and readers never see half of one.

A namespace may have a size bound (`max_bytes`): past it, the least recently used entries are
removed. `TOOLGYM_CACHE=0` (or off/false/no) turns these caches off, in memory and on disk: every value is
computed again, as before they existed (benchmarks of the raw backends use it). Deleting the
folder clears them.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Final

from toolgym.canonical import canonical_hash
from toolgym.files import remove_stale_temps, write_atomically

if TYPE_CHECKING:
    from _hashlib import HASH

CACHE_ENV: Final = "TOOLGYM_CACHE"
CACHE_DIR_ENV: Final = "TOOLGYM_CACHE_DIR"
_MAGIC: Final = b"TGCACHE1"
_DIGEST_SIZE: Final = 32


def cache_enabled() -> bool:
    """False when `TOOLGYM_CACHE` is 0, off, false or no (read on every call)."""
    return os.environ.get(CACHE_ENV, "1").strip().lower() not in ("0", "off", "false", "no")


def cache_root() -> Path:
    """The folder of toolgym's caches (see the module docstring)."""
    given = os.environ.get(CACHE_DIR_ENV)
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "toolgym"


def cache_key(*parts: object) -> str:
    """sha256 (hex) of the canonical JSON of `parts`: everything a cached value depends on."""
    return canonical_hash(list(parts))


def hash_files(digest: HASH, root: Path, paths: Iterable[Path]) -> None:
    """Each file's path below `root` and its bytes into `digest`, in the order given: the part of
    a code digest (a cache key, a kept actor's name) that changes with the source."""
    for path in paths:
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")


class DiskCache:
    """Checked, atomically written entries of one namespace under `cache_root()`."""

    # a put prunes the namespace (a directory scan) on the first put of a process and every
    # PRUNE_EVERY-th after it, so a long run with many new keys stays near max_bytes
    PRUNE_EVERY: Final = 32

    def __init__(self, namespace: str, root: Path | None = None, max_bytes: int | None = None) -> None:
        if not namespace or "/" in namespace or namespace.startswith("."):
            raise ValueError(f"bad cache namespace: {namespace!r}")
        self.namespace = namespace
        self.max_bytes = max_bytes
        self._root = root
        self._puts = 0
        self._lock = threading.Lock()

    @property
    def directory(self) -> Path:
        # resolved per use: TOOLGYM_CACHE_DIR may change after import (tests, embedding programs)
        return (self._root if self._root is not None else cache_root()) / self.namespace

    def path_for(self, key: str) -> Path:
        if len(key) < 3 or not all(c in "0123456789abcdef" for c in key):
            raise ValueError(f"cache keys are lowercase hex digests, got {key!r}")
        return self.directory / key[:2] / key

    def get(self, key: str) -> bytes | None:
        """The payload stored under `key`; None when missing, disabled, unreadable or corrupt
        (a corrupt file is removed so that the next put replaces it)."""
        if not cache_enabled():
            return None
        path = self.path_for(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        head = len(_MAGIC) + _DIGEST_SIZE
        payload = data[head:]
        if data[: len(_MAGIC)] != _MAGIC or hashlib.sha256(payload).digest() != data[len(_MAGIC) : head]:
            self.discard(key)
            return None
        if self.max_bytes is not None:
            with contextlib.suppress(OSError):
                os.utime(path)  # recently used: pruned last
        return payload

    def put(self, key: str, payload: bytes) -> None:
        """Store `payload` under `key` (a temporary file renamed into place). A cache that cannot
        be written (read-only home, full disk) costs the next run a recomputation, nothing else."""
        if not cache_enabled():
            return
        path = self.path_for(key)
        with self._lock:
            self._puts += 1
            first = self._puts == 1
            due = self._puts % self.PRUNE_EVERY == 1
        if first:  # once a process: the temporary files of writers killed mid-write go
            remove_stale_temps(self.directory, recursive=True)
        try:
            write_atomically(path, _MAGIC + hashlib.sha256(payload).digest() + payload, mode=0o600)
        except OSError:
            return
        if self.max_bytes is not None and due:
            self.prune()

    def prune(self) -> None:
        """Remove the least recently used entries until the namespace holds at most 80% of
        `max_bytes` (nothing when it holds no more than `max_bytes`)."""
        if self.max_bytes is None:
            return
        entries: list[tuple[float, int, Path]] = []
        try:
            for sub in os.scandir(self.directory):
                if sub.is_dir(follow_symlinks=False):
                    for entry in os.scandir(sub.path):
                        if entry.is_file(follow_symlinks=False) and not entry.name.startswith("."):
                            st = entry.stat(follow_symlinks=False)
                            entries.append((st.st_mtime, st.st_size, Path(entry.path)))
        except OSError:
            return
        total = sum(size for _, size, _ in entries)
        if total <= self.max_bytes:
            return
        for _, size, path in sorted(entries, key=lambda e: e[0]):
            with contextlib.suppress(OSError):
                path.unlink()
                total -= size
            if total <= self.max_bytes * 0.8:
                return

    def discard(self, key: str) -> None:
        with contextlib.suppress(OSError):
            self.path_for(key).unlink(missing_ok=True)
