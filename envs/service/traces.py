"""A bound on the env service's trace folder: the oldest finished traces go first.

The server writes each episode's trace under `trace_dir/<session id>/`. With `max_bytes`, the
finished traces (those of earlier server runs included, found at start) add up to at most that:
when a trace finishes and the sum is over, the oldest finished traces are deleted, oldest first,
whichever session they belong to, and a session folder left empty goes once its session has
closed. The trace an episode is writing (`.partial`) is never deleted and counts once it ends.
"""

from __future__ import annotations

import contextlib
import threading
from collections import Counter, OrderedDict
from pathlib import Path

from toolgym.envs.service.environment import SESSION_ID, TRACE_FILE

DEFAULT_MAX_TRACE_BYTES = 1 << 30  # 1 GiB: about 200k traces of a typical episode


class TraceRetention:
    """The finished traces under `root`, oldest first, kept to at most `max_bytes` in all.
    Sessions call it from their own threads."""

    def __init__(self, root: Path, max_bytes: int) -> None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, not {max_bytes}")
        self.root = root
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._files: OrderedDict[Path, int] = OrderedDict()
        self._bytes = 0
        self._open: Counter[Path] = Counter()  # session folders a live session may write into
        with self._lock:
            for path, size in _existing(root):
                self._files[path] = size
                self._bytes += size
            self._trim()

    @property
    def total_bytes(self) -> int:
        return self._bytes

    def opened(self, folder: Path) -> None:
        """A live session writes into `folder`: it stays, even when empty, until `closed`."""
        with self._lock:
            self._open[folder] += 1

    def closed(self, folder: Path) -> None:
        with self._lock:
            self._open[folder] -= 1
            if self._open[folder] <= 0:
                del self._open[folder]
                _rmdir_if_empty(folder)

    def finished(self, path: Path) -> None:
        """`path` is a finished trace: count it, then delete the oldest until within the bound."""
        try:
            size = path.stat().st_size
        except OSError:
            return
        with self._lock:
            self._bytes += size - self._files.pop(path, 0)
            self._files[path] = size
            self._trim()

    def _trim(self) -> None:
        while self._bytes > self.max_bytes and self._files:
            path, size = self._files.popitem(last=False)
            self._bytes -= size
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            if path.parent not in self._open:
                _rmdir_if_empty(path.parent)


def _existing(root: Path) -> list[tuple[Path, int]]:
    """The trace files under `root/<session id>/`, oldest first (by modification time)."""
    found: list[tuple[float, Path, int]] = []
    with contextlib.suppress(OSError):
        for folder in root.iterdir():
            if not SESSION_ID.match(folder.name) or folder.is_symlink() or not folder.is_dir():
                continue
            for path in folder.iterdir():
                with contextlib.suppress(OSError):
                    info = path.lstat()
                    if TRACE_FILE.match(path.name) and path.is_file() and not path.is_symlink():
                        found.append((info.st_mtime, path, info.st_size))
    found.sort(key=lambda item: (item[0], str(item[1])))
    return [(path, size) for _, path, size in found]


def _rmdir_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not empty, or gone
        folder.rmdir()
