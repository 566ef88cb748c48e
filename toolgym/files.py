"""Content-addressed file store: files travel between tasks, tools and agents as handles."""

from __future__ import annotations

import hashlib
import mimetypes
import os
import shutil
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

FileKind = Literal["image", "file"]

HANDLE_PREFIX = "file:"


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
            self._tmp: tempfile.TemporaryDirectory[str] | None = tempfile.TemporaryDirectory(
                prefix="toolgym-files-"
            )
            root = self._tmp.name
        else:
            self._tmp = None
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._handles: dict[str, FileHandle] = {}
        self._aliases: dict[str, str] = {}
        self._basenames: dict[str, str] = {}

    def _blob_path(self, sha: str) -> Path:
        return self.root / sha[:2] / sha

    def put_bytes(self, data: bytes, *, name: str | None = None, media_type: str | None = None) -> FileHandle:
        sha = hashlib.sha256(data).hexdigest()
        path = self._blob_path(sha)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            # write then rename: a reader never sees a half-written blob
            fd, tmp = tempfile.mkstemp(dir=path.parent)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, path)
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
