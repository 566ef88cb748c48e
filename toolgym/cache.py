"""Result caches on disk: values that are pure functions of their inputs (an OCR result of an
image's bytes, a mock world's seeded template), kept across processes.

Entries live under `cache_root()/<namespace>/<key[:2]>/<key>`: `$TOOLGYM_CACHE_DIR`, else
`$XDG_CACHE_HOME/toolgym`, else `~/.cache/toolgym`. A key is the sha256 of everything the value
depends on (`cache_key`), so a changed input is a different file and never a stale hit. Each file
holds a magic, the sha256 of its payload and the payload: a truncated or corrupted file fails the
check, is removed, and the caller recomputes. Writers put the file in place with an atomic
rename, so concurrent writers of one key leave one whole file and readers never see half of one.

`TOOLGYM_CACHE=0` (or off/false/no) turns these caches off, in memory and on disk: every value is
computed again, as before they existed (benchmarks of the raw backends use it). Deleting the
folder clears them.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Final

from toolgym.canonical import canonical_hash

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


class DiskCache:
    """Checked, atomically written entries of one namespace under `cache_root()`."""

    def __init__(self, namespace: str, root: Path | None = None) -> None:
        if not namespace or "/" in namespace or namespace.startswith("."):
            raise ValueError(f"bad cache namespace: {namespace!r}")
        self.namespace = namespace
        self._root = root

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
        return payload

    def put(self, key: str, payload: bytes) -> None:
        """Store `payload` under `key` (a temporary file renamed into place). A cache that cannot
        be written (read-only home, full disk) costs the next run a recomputation, nothing else."""
        if not cache_enabled():
            return
        path = self.path_for(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{key[:16]}.", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(_MAGIC + hashlib.sha256(payload).digest() + payload)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            return

    def discard(self, key: str) -> None:
        with contextlib.suppress(OSError):
            self.path_for(key).unlink(missing_ok=True)
