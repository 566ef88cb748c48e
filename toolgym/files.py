"""Content-addressed file store: files travel between tasks, tools and agents as handles; and the
one atomic write that every file toolgym rewrites in place goes through (`atomic_file`).

An atomic write goes to a hidden temporary file beside its target, named after the target and
its writer (`.run.json.<pid>-<host>-<random>.tmp`), then is renamed over the target: a reader
sees the old file or the new one, never half of one. A failed write (a full disk, a kill) removes
its temporary file, and its OSError names the target. A temporary file whose writer died before
it could clean up (kill -9, power loss) is removed by `remove_stale_temps`, which runs, resumes
and file stores call on the folders they open. Temporary folders (an episode's file store, a
rollout worker's staging folder) are named after their process in the same way
(`owned_prefix`), so that those of a process killed before it removed them go with the next run
(`remove_orphaned_dirs`).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import mimetypes
import os
import re
import secrets
import shutil
import socket
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Literal

from pydantic import BaseModel, ConfigDict

FileKind = Literal["image", "file"]

HANDLE_PREFIX = "file:"


# ---- atomic writes ----------------------------------------------------------------------------
# the writer's host in temp names: a folder shared between machines (NFS, a Ray cluster's disk)
# may hold another host's write in progress, whose pid says nothing here
_HOST = hashlib.sha256(socket.gethostname().encode()).hexdigest()[:6]
# .<target>.<pid>-<host>-<random>.tmp; also .<target>.<pid>.tmp, the name of earlier versions
_TEMP_RE = re.compile(r"^\..+\.(\d+)(?:-([0-9a-f]{6})-[0-9a-f]{8})?\.tmp$")


def temp_path(path: Path) -> Path:
    """The temporary file a write of `path` goes through: hidden, beside it, naming its writer."""
    return path.with_name(f".{path.name[:200]}.{os.getpid()}-{_HOST}-{secrets.token_hex(4)}.tmp")


def with_filename(exc: OSError, path: Path) -> OSError:
    """The error with `path` as its file name when it names none (a write's ENOSPC does not)."""
    if exc.filename is not None or exc.errno is None:
        return exc
    return OSError(exc.errno, exc.strerror, str(path))


@contextlib.contextmanager
def atomic_file(path: Path | str, *, durable: bool = False, mode: int = 0o666) -> Iterator[BinaryIO]:
    """A binary file to write `path`'s new content to; it replaces `path` when the block ends
    without an error. On any error the temporary file is removed and `path` is left as it was; an
    OSError names `path`. `durable`: fsync before the rename, so a power loss leaves the old or
    the new file, not an empty one (checkpoints; not recomputable caches). `mode`: the new file's
    permissions (before the umask)."""
    path = Path(path)
    tmp = temp_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    except OSError as exc:
        raise with_filename(exc, path) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError):
            raise with_filename(exc, path) from None
        raise


def write_atomically(
    path: Path | str, data: bytes | str, *, durable: bool = False, mode: int = 0o666
) -> None:
    """`path` holds `data` (str: as UTF-8) whole, or keeps what it held (`atomic_file`)."""
    with atomic_file(path, durable=durable, mode=mode) as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: another user's process, alive
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """A process that has exited and waits for its parent to reap it (on Linux; where the init
    of a container never reaps, for good): dead, whatever signal 0 says."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    return stat_line.rpartition(")")[2].split()[:1] == ["Z"]  # the state, after "(command name)"


def is_stale_temp(name: str) -> bool:
    """Whether `name` is an atomic write's temporary file whose writer (on this host) is dead."""
    match = _TEMP_RE.match(name)
    if match is None or (match[2] is not None and match[2] != _HOST):
        return False
    return not _alive(int(match[1]))


def remove_stale_temps(folder: Path | str, *, recursive: bool = False) -> list[Path]:
    """Remove the temporary files that writers killed mid-write left in `folder` (and below it,
    with `recursive`); writes in progress are left alone. Returns what was removed."""
    folder = Path(folder)
    removed: list[Path] = []
    if not folder.is_dir():
        return removed
    for tmp in sorted(folder.glob("**/.*.tmp" if recursive else ".*.tmp")):
        if is_stale_temp(tmp.name) and tmp.is_file():
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
                removed.append(tmp)
    return removed


class SpaceReserve:
    """Room kept on a disk for one last write when the disk fills up: a hidden file beside `path`,
    named as a temporary file of an atomic write of `path` (so that one a killed process left goes
    with `remove_stale_temps`). `cover(n)` keeps room for a write of `path` of up to n bytes (twice
    n, at least `minimum`); `release()` gives the room back, just before that write: a run's
    run.json then says why the run stopped, even on a disk that a trace or an image filled."""

    def __init__(self, path: Path | str, *, minimum: int = 64 * 1024) -> None:
        self.path = Path(path)
        self.file = temp_path(self.path)
        self.minimum = minimum
        self.size = 0  # bytes held

    def cover(self, needed: int) -> None:
        """Hold room for a write of `needed` bytes; an OSError naming `path` (ENOSPC) when the
        disk has no room for it, the room held before kept."""
        want = max(self.minimum, 2 * needed)
        if want <= self.size:
            return
        try:
            fd = os.open(self.file, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise with_filename(exc, self.path) from None
        try:
            _allocate(fd, self.size, want - self.size)
        except OSError as exc:
            with contextlib.suppress(OSError):  # what was held stays held, and no more
                os.ftruncate(fd, self.size)
            if self.size == 0:
                self.release()
            raise with_filename(exc, self.path) from None
        finally:
            os.close(fd)
        self.size = want

    def release(self) -> None:
        """Give the room back (remove the file)."""
        with contextlib.suppress(FileNotFoundError):
            self.file.unlink()
        self.size = 0


def _allocate(fd: int, offset: int, length: int) -> None:
    """Blocks of the disk for bytes offset .. offset+length of the file: fallocate where the
    file system has it, else bytes written (not zeros, which a compressing file system stores in
    nothing)."""
    try:
        os.posix_fallocate(fd, offset, length)
        return
    except AttributeError:  # no posix_fallocate (macOS)
        pass
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise
    chunk = memoryview(secrets.token_bytes(64 * 1024))
    os.lseek(fd, offset, os.SEEK_SET)
    while length > 0:
        length -= os.write(fd, chunk[: min(len(chunk), length)])
    os.fsync(fd)


# ---- temporary folders named after their process ----------------------------------------------
FILES_PREFIX = "toolgym-files-"  # a file store of its own (an episode's: images tools drew)
# <prefix><pid>-<host>-<random>: a folder whose process died without removing it (kill -9, out of
# memory) is known by its name, and the next run removes it (`remove_orphaned_dirs`)
_OWNED_RE = re.compile(r"^(\d+)-([0-9a-f]{6})-[^/]+$")


def owned_prefix(prefix: str) -> str:
    """The `prefix` of a temporary folder (`tempfile.mkdtemp(prefix=...)`) that names the process
    and host making it: `<prefix><pid>-<host>-`, then mkdtemp's random part."""
    return f"{prefix}{os.getpid()}-{_HOST}-"


def remove_orphaned_dirs(prefix: str, dir: str | Path | None = None) -> list[Path]:
    """Remove the temporary folders in `dir` named with `owned_prefix(prefix)` whose process is
    gone (on this host; those of live processes, of other hosts and of other users stay, and so
    does a link). `dir`: the system's temporary folder when None. Returns what was removed."""
    folder = Path(dir if dir is not None else tempfile.gettempdir())
    removed: list[Path] = []
    try:
        names = sorted(n for n in os.listdir(folder) if n.startswith(prefix))
    except OSError:
        return removed
    for name in names:
        match = _OWNED_RE.match(name[len(prefix) :])
        if match is None or match[2] != _HOST or _alive(int(match[1])):
            continue
        path = folder / name
        try:  # lstat: a link is never followed, a folder of another user is not ours to remove
            info = path.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            removed.append(path)
    return removed


class FileHandle(BaseModel):
    """A reference to bytes in a FileStore; its identity is the sha256 of the content."""

    model_config = ConfigDict(frozen=True)

    sha256: str
    media_type: str
    name: str | None = None

    @property
    def ref(self) -> str:
        """The string an agent passes as a file argument."""
        return f"{HANDLE_PREFIX}{self.sha256}"


class UnknownFileError(LookupError):
    """A file argument names no file that this store holds."""


class StoredFile:
    """A file in the store, as tools see it: its handle and a read-only path on local disk."""

    __slots__ = ("handle", "path")

    def __init__(self, handle: FileHandle, path: Path) -> None:
        self.handle = handle
        self.path = path

    def read_bytes(self) -> bytes:
        return self.path.read_bytes()

    def __repr__(self) -> str:
        return f"StoredFile({self.handle.ref}, {self.handle.media_type})"


def _media_type(name: str | None, default: str = "application/octet-stream") -> str:
    if name:
        guessed, _ = mimetypes.guess_type(name)
        if guessed:
            return guessed
    return default


class FileStore:
    """Files keyed by sha256 under one directory, plus aliases (task file names such as
    `image/astronaut.jpg`) so agents can name files the way the task announced them.

    A store private to one episode is lenient: a name matches by its basename too, and a miss
    lists the files it knows. A store shared by several clients (`shared=True`, the tool server's)
    takes handles and exact names only, and a miss names nothing but the reference it was given."""

    def __init__(self, root: Path | str | None = None, *, shared: bool = False) -> None:
        self.shared = shared
        if root is None:
            # named after this process: a run killed before it could remove the folder leaves
            # it to the next run (`remove_orphaned_dirs(FILES_PREFIX)`)
            self._tmp: tempfile.TemporaryDirectory[str] | None = tempfile.TemporaryDirectory(
                prefix=owned_prefix(FILES_PREFIX)
            )
            root = self._tmp.name
        else:
            self._tmp = None
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        if self._tmp is None:  # a folder that outlives its stores: blobs a killed writer left half-written
            remove_stale_temps(self.root, recursive=True)
        self._handles: dict[str, FileHandle] = {}
        self._aliases: dict[str, str] = {}
        self._basenames: dict[str, str] = {}

    def _blob_path(self, sha: str) -> Path:
        return self.root / sha[:2] / sha

    def put_bytes(self, data: bytes, *, name: str | None = None, media_type: str | None = None) -> FileHandle:
        sha = hashlib.sha256(data).hexdigest()
        path = self._blob_path(sha)
        if not path.exists():
            # write then rename: a reader never sees a half-written blob (private, as mkstemp's were)
            write_atomically(path, data, mode=0o600)
        handle = FileHandle(sha256=sha, media_type=media_type or _media_type(name), name=name)
        self._handles.setdefault(sha, handle)
        if name:
            self.alias(name, handle)
        return handle

    def put_path(self, path: Path | str, *, name: str | None = None) -> FileHandle:
        path = Path(path)
        return self.put_bytes(path.read_bytes(), name=name or path.name, media_type=_media_type(path.name))

    def forget_all(self) -> None:
        """Resolve nothing stored so far (no handle, name or basename), as a new store: in memory
        only, the blobs stay on disk and a file stored again reuses its blob."""
        self._handles.clear()
        self._aliases.clear()
        self._basenames.clear()

    def alias(self, name: str, handle: FileHandle) -> None:
        self._aliases[name] = handle.sha256
        self._basenames[Path(name).name] = handle.sha256

    def resolve(self, ref: str) -> StoredFile:
        """Accepts `file:<sha256>`, a bare sha256, or an alias; anything else is UnknownFileError."""
        key = ref.strip()
        sha = key[len(HANDLE_PREFIX) :] if key.startswith(HANDLE_PREFIX) else key
        if sha not in self._handles:
            sha = self._aliases.get(key, "")
            if not sha and not self.shared:
                # agents often echo a file with another directory (GTA announces absolute paths)
                sha = self._basenames.get(Path(key).name, "")
        handle = self._handles.get(sha)
        if handle is None:
            if self.shared:
                shown = key if len(key) <= 80 else key[:77] + "..."
                raise UnknownFileError(
                    f"no file {shown!r} on this server: pass the handle (file:<sha256>) of a file uploaded to it"
                )
            known = sorted(self._aliases)[:10]
            raise UnknownFileError(f"no file {ref!r} in the file store; known files: {known}")
        return StoredFile(handle, self._blob_path(sha))

    def get(self, handle: FileHandle) -> StoredFile:
        return self.resolve(handle.ref)

    def __contains__(self, ref: object) -> bool:
        if not isinstance(ref, str):
            return False
        try:
            self.resolve(ref)
        except UnknownFileError:
            return False
        return True

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def copy_to(self, handle: FileHandle, dest: Path) -> Path:
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(self._blob_path(handle.sha256), dest)
        return dest
