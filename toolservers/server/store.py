"""The tool server's own file store under the temp folder: gone when the server stops.

A server given no `files_dir` keeps uploads and produced files (generated images included) in a
folder it makes, `<temp>/toolgym-serve-files-XXXX/`. The server removes it at a clean shutdown
(SIGTERM, SIGINT, the end of its lifespan), and at interpreter exit as a fallback. A server that
was killed cannot, so each server that makes such a folder first removes those that dead servers
left. "Dead" is decided by a lock, not by a pid: the owner holds an exclusive `flock` on the
folder's `.owner.lock` for as long as it lives, the kernel drops the lock when the process dies
(however it dies), and a folder is removed only after its lock was taken. A live server's folder,
one in another pid namespace included, is never touched. A folder the user gave stays as it is.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
import tempfile
import weakref
from pathlib import Path

from toolgym.files import FileStore

PREFIX = "toolgym-serve-files-"
LOCK_NAME = ".owner.lock"


class OwnedStore:
    """A shared FileStore in a folder this process made and locked; `remove()` deletes it."""

    def __init__(self, temp_root: Path | None = None) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=PREFIX, dir=temp_root))
        self._lock_fd = _lock(self.root / LOCK_NAME, create=True)
        assert self._lock_fd is not None, "a folder just made cannot be locked by another process"
        os.write(self._lock_fd, f"{os.getpid()}\n".encode())
        self.files = FileStore(self.root, shared=True)
        # removed at interpreter exit when nobody called remove() (a server that never served)
        self._finalizer = weakref.finalize(self, _remove, self.root, self._lock_fd)

    def remove(self) -> None:
        """Delete the folder and everything in it (idempotent)."""
        self._finalizer()


def server_store(files_dir: Path | None) -> tuple[FileStore, OwnedStore | None]:
    """A server's file store: in `files_dir` when given (kept), else one of its own (removed when
    it stops). Either way the stores that dead servers left under the temp folder go first."""
    remove_stale(Path(tempfile.gettempdir()))
    if files_dir is not None:
        return FileStore(files_dir, shared=True), None
    owned = OwnedStore()
    return owned.files, owned


def _remove(root: Path, lock_fd: int) -> None:
    shutil.rmtree(root, ignore_errors=True)
    os.close(lock_fd)  # after the folder is gone: no sweeper can take a folder still in use


def _lock(path: Path, *, create: bool = False) -> int | None:
    """An fd holding an exclusive lock on `path`, or None when another process holds it (or the
    file is gone, or is not a plain file of ours)."""
    flags = os.O_RDWR | os.O_NOFOLLOW | (os.O_CREAT | os.O_EXCL if create else 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            raise BlockingIOError
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _our_folder(path: Path) -> bool:
    try:
        info = path.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid()


def remove_stale(parent: Path) -> list[Path]:
    """Remove the stores under `parent` that servers now dead left behind; returns them. A folder
    without its lock file (its server is still making it, or it is no store of ours) stays."""
    removed = []
    for folder in sorted(parent.glob(PREFIX + "*")):
        if not _our_folder(folder):
            continue
        fd = _lock(folder / LOCK_NAME)
        if fd is None:
            continue  # a live owner holds it
        try:
            shutil.rmtree(folder, ignore_errors=True)
        finally:
            os.close(fd)
        removed.append(folder)
    return removed
