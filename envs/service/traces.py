"""The env service's trace files: each episode's trace, written with its file open only while a
call writes it, and a bound on the trace folder, the oldest finished traces going first.

The server writes each episode's trace under `trace_dir/<session id>/`. With `max_bytes`, the
finished traces (those of earlier server runs included, found at start) add up to at most that:
when a trace finishes and the sum is over, the oldest finished traces are deleted, oldest first,
whichever session they belong to, and a session folder left empty goes once its session has
closed. The trace an episode is writing (`.partial`) is never deleted and counts once it ends.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from toolgym.envs.service.catalog import ServiceError
from toolgym.files import with_filename
from toolgym.trace import TraceEnd, TraceHeader, record_json, step_json

SESSION_ID = re.compile(r"^[A-Za-z0-9-]{8,64}$")
TRACE_FILE = re.compile(r"^[A-Za-z0-9._-]{1,255}$")
DEFAULT_MAX_TRACE_BYTES = 1 << 30  # 1 GiB: about 200k traces of a typical episode


# the errors of a process (or a system) out of file descriptors
OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE})
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC


def out_of_descriptors(exc: OSError) -> ServiceError:
    """The refusal of a call that found no file descriptor free (503: the server is full for
    now; the call ran nothing)."""
    return ServiceError(
        "capacity", f"the server is out of file descriptors ({exc.strerror}); try again later", 503
    )


class TraceFile:
    """One episode's trace: the lines `toolgym.trace.TraceWriter` writes (header, steps, end;
    the same bytes), to `<name>.partial` as each comes, renamed to `<name>` at the end. The file
    is open only inside `held()`, so a session between calls holds no descriptor; a call takes
    it before it runs anything, and a server out of descriptors refuses the call (503) instead of
    running it and losing its trace line."""

    def __init__(self, path: Path, header: TraceHeader) -> None:
        self.path = path
        self.partial_path = path.with_name(path.name + ".partial")
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = None
        fd = _open(self.partial_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC)
        try:
            self._write_fd(fd, record_json(header))
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """The file open for the writes inside (ServiceError 503 when no descriptor is free)."""
        assert self._fd is None, "the trace is held already"
        self._fd = _open(self.partial_path, _APPEND)
        try:
            yield
        finally:
            fd, self._fd = self._fd, None
            if fd is not None:
                os.close(fd)

    def step(self, fields: Mapping[str, Any]) -> None:
        """One step line, from its fields (`step_json`), inside `held()`."""
        self._write(step_json(fields))

    def finish(self, end: TraceEnd) -> Path:
        """The end line, synced, and the file renamed into place; inside `held()`."""
        self._write(record_json(end))
        fd, self._fd = self._fd, None
        assert fd is not None
        try:
            os.fsync(fd)
        except OSError as exc:
            raise with_filename(exc, self.path) from None
        finally:
            os.close(fd)
        try:
            os.replace(self.partial_path, self.path)
        except OSError as exc:
            raise with_filename(exc, self.path) from None
        return self.path

    def _write(self, line: str) -> None:
        assert self._fd is not None, "a trace is written inside held()"
        self._write_fd(self._fd, line)

    def _write_fd(self, fd: int, line: str) -> None:
        data = memoryview((line + "\n").encode("utf-8"))
        try:
            while data:  # a write may take only part of it
                data = data[os.write(fd, data) :]
        except OSError as exc:  # a full disk: say which file
            raise with_filename(exc, self.partial_path) from None


class _Spare:
    """A descriptor held until the call that needs one gives it back (`release`) to take it."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd

    def release(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)


@contextlib.contextmanager
def spare_descriptor(needed: bool = True) -> Iterator[_Spare]:
    """A descriptor taken before a call changes anything, for the file it opens after (a reset's
    new trace): no descriptor free is a 503 with nothing changed. Released at the end of the
    block, or by `release()` just before the file is opened (another thread may take it in
    between: then that open is refused)."""
    spare = _Spare(_open(Path(os.devnull), os.O_RDONLY | os.O_CLOEXEC) if needed else None)
    try:
        yield spare
    finally:
        spare.release()


def _open(path: Path, flags: int) -> int:
    try:
        return os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno in OUT_OF_DESCRIPTORS:
            raise out_of_descriptors(exc) from None
        raise


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
