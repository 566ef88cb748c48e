"""Where a run's task sets came from: each set's source (a registered set's name, or a file) and
the digest of the file's bytes. run.json records them (`task_sources`), so `toolgym eval RUN`,
`report`, `export` and `view` find a run's tasks without `--tasks`, ToolEyes' and a task file's
alike, and refuse, in one line, a task file that changed since the run."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from toolgym.envs.demo import bundled_task_sets, default_task_paths


class TaskSourceError(ValueError):
    """A recorded task set that is gone or changed; one line."""


class TaskSource(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str  # the set's name in the run (its trace folder)
    source: str  # a registered set's name (`mtu`), or the file's absolute path
    registered: bool = False
    format: str = "toolgym"
    digest: str  # sha256 of the file's bytes when the run read it

    def path(self) -> Path:
        if not self.registered:
            return Path(self.source)
        found = bundled_task_sets().get(self.source)
        if found is None:
            raise TaskSourceError(
                f"the run's task set {self.source!r} is no longer registered (`toolgym tasks`); "
                "give its file with --tasks"
            )
        return found

    def checked_path(self) -> Path:
        """The file, when it still holds the bytes the run read; TaskSourceError otherwise."""
        path = self.path()
        try:
            digest = file_digest(path)
        except OSError as exc:
            raise TaskSourceError(
                f"the run's task file {path} cannot be read ({exc.strerror or exc}); give it with --tasks"
            ) from None
        if digest != self.digest:
            what = f"task set {self.source!r} ({path})" if self.registered else f"task file {path}"
            raise TaskSourceError(
                f"the run's {what} changed since the run (sha256 {self.digest[:12]} then, {digest[:12]} "
                "now): scores would not be the run's; give --tasks to use it anyway"
            )
        return path


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def resolve(given: Sequence[str]) -> list[tuple[str | None, Path]]:
    """`--tasks` values as (registered name or None, file): a registered set's name, unless a
    file of that name exists, or a file (default: toolgym's default sets). ValueError names a
    value that is neither."""
    bundled = bundled_task_sets()
    if not given:
        by_path = {path: name for name, path in bundled.items()}
        return [(by_path.get(path), path) for path in default_task_paths()]
    found: list[tuple[str | None, Path]] = []
    for value in given:
        path = Path(value)
        if value in bundled and not path.exists():
            found.append((value, bundled[value]))
        elif path.is_file():
            found.append((None, path))
        else:
            raise ValueError(
                f"no such task set file or bundled set: {value} (bundled: {', '.join(bundled)}; "
                "`toolgym tasks` lists them)"
            )
    return found


def source_of(name: str, registered: str | None, path: Path, fmt: str) -> TaskSource:
    return TaskSource(
        name=name,
        source=registered if registered is not None else str(path.absolute()),
        registered=registered is not None,
        format=fmt,
        digest=file_digest(path),
    )


def recorded_sources(run_dirs: Iterable[Path]) -> list[TaskSource] | None:
    """The task sources the runs' run.json files record, each once; None when no run records
    any (trace folders of no run, runs of an older toolgym)."""
    from toolgym.running.trials import read_run_summary

    sources: dict[tuple[str, str], TaskSource] = {}
    recorded = False
    for directory in run_dirs:
        summary, _ = read_run_summary(directory)
        if summary is None or not summary.task_sources:
            continue
        recorded = True
        for data in summary.task_sources:
            source = TaskSource.model_validate(data)
            sources.setdefault((source.source, source.digest), source)
    return list(sources.values()) if recorded else None
