"""A task set's one name, where it came from, and the digest of its bytes.

A set has one name in every command and everything they write (run folders, tables, run.json's
`task_sources`, golden.json, exports): its registered name (`toolgym tasks`, a `toolgym.tasks`
entry point), or, for a file given by path that no one registered, the file's stem. A source
names a registered set by that name, so what records it (run.json, golden.json) is read back in
any environment where the same set is registered, and the digest says whether it is still the
same file."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict

from toolgym.envs.demo import bundled_task_sets, default_task_paths


class TaskSourceError(ValueError):
    """A recorded task set that is gone or changed; one line."""


class NamedTaskFile(NamedTuple):
    """A task file and the set's one name; `registered` is that name when the set is registered."""

    name: str
    path: Path
    registered: str | None


def registered_name(path: Path, bundled: Mapping[str, Path] | None = None) -> str | None:
    """The name under which the file is registered (the first, toolgym's own first), or None."""
    target = path.resolve()
    for name, registered in (bundled_task_sets() if bundled is None else bundled).items():
        if registered.resolve() == target:
            return name
    return None


def named_file(path: Path, bundled: Mapping[str, Path] | None = None) -> NamedTaskFile:
    """The file with the set's one name: its registered name, else the file's stem."""
    registered = registered_name(path, bundled)
    return NamedTaskFile(registered or path.stem, path, registered)


def set_name_of(path: Path, bundled: Mapping[str, Path] | None = None) -> str:
    return named_file(path, bundled).name


def named_task_files(given: Sequence[str] | None) -> list[NamedTaskFile]:
    """`--tasks` values as named task files: a registered set's name, unless a file of that name
    exists, or a file (default: toolgym's default sets). A file of a registered set is that set.
    ValueError names a value that is neither."""
    bundled = bundled_task_sets()
    if not given:
        paths = default_task_paths()
    else:
        paths = []
        for value in given:
            path = Path(value)
            if value in bundled and not path.exists():
                paths.append(bundled[value])
            elif path.is_file():
                paths.append(path)
            else:
                raise ValueError(
                    f"no such task set file or bundled set: {value} (bundled: {', '.join(bundled)}; "
                    "`toolgym tasks` lists them)"
                )
    return [named_file(path, bundled) for path in paths]


class TaskSource(BaseModel):
    """One set as run.json (`task_sources`) and golden.json record it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str  # the set's one name (its trace folder)
    # a registered set's name (`mtu`, a plug-in's `pantry`), or the file's path: absolute in
    # run.json, relative to the golden folder in golden.json
    source: str
    registered: bool = False
    format: str = "toolgym"
    digest: str  # sha256 of the file's bytes when it was read

    def path(self, base: Path | None = None, *, by: str = "the run") -> Path:
        """The file: the registered set's, or the path (relative ones below `base`)."""
        if not self.registered:
            return base / self.source if base is not None else Path(self.source)
        found = bundled_task_sets().get(self.source)
        if found is None:
            raise TaskSourceError(
                f"{by}'s task set {self.source!r} is no longer registered (`toolgym tasks`): install "
                "the package that has it, or give its file with --tasks"
            )
        return found

    def checked_path(
        self,
        base: Path | None = None,
        *,
        by: str = "the run",
        advice: str = "scores would not be the run's; give --tasks to use it anyway",
    ) -> Path:
        """The file, when it still holds the bytes `by` (the run, the golden recording) read;
        TaskSourceError, one line naming the set and both digests, otherwise."""
        path = self.path(base, by=by)
        try:
            digest = file_digest(path)
        except OSError as exc:
            raise TaskSourceError(
                f"{by}'s task file {path} cannot be read ({exc.strerror or exc}); give it with --tasks"
            ) from None
        if digest != self.digest:
            what = f"task set {self.source!r} ({path})" if self.registered else f"task file {path}"
            raise TaskSourceError(
                f"{by}'s {what} changed since {by} (sha256 {self.digest[:12]} then, {digest[:12]} "
                f"now): {advice}"
            )
        return path


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def source_of(named: NamedTaskFile, fmt: str = "toolgym", relative_to: Path | None = None) -> TaskSource:
    """The source of a named file: a registered set by name; else the file's absolute path, or
    its path relative to `relative_to` (a golden folder, which may move with its task files)."""
    if named.registered is not None:
        source = named.registered
    elif relative_to is not None:
        source = os.path.relpath(named.path.absolute(), relative_to.absolute())
    else:
        source = str(named.path.absolute())
    return TaskSource(
        name=named.name,
        source=source,
        registered=named.registered is not None,
        format=fmt,
        digest=file_digest(named.path),
    )
