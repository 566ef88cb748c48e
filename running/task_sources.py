"""Where a run's task sets came from: each set's one name, its source (a registered set's name,
or a file) and the digest of the file's bytes (`toolgym.envs.task_sets`). run.json records them
(`task_sources`), so `toolgym eval RUN`, `report`, `export` and `view` find a run's tasks without
`--tasks`, ToolEyes' and a task file's alike, and refuse, in one line, a task file that changed
since the run."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from toolgym.envs.task_sets import (
    NamedTaskFile,
    TaskSource,
    TaskSourceError,
    file_digest,
    named_task_files,
    source_of,
)


def resolve(given: Sequence[str]) -> list[tuple[str | None, Path]]:
    """`--tasks` values as (registered name or None, file) (`named_task_files`)."""
    return [(named.registered, named.path) for named in named_task_files(given)]


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


__all__ = [
    "NamedTaskFile",
    "TaskSource",
    "TaskSourceError",
    "file_digest",
    "named_task_files",
    "recorded_sources",
    "resolve",
    "source_of",
]
