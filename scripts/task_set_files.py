"""What the scripts that write bundled task sets from specs share (make_category_tasks,
make_dynamic_tasks): one JSONL file per set, and a `main` that writes every set into a folder."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from toolgym.tasks import Task

S = TypeVar("S")


def write_set(path: Path, specs: Sequence[S], build: Callable[[S, int], Task]) -> Path:
    """The set's tasks, built from `specs` in order (numbered from 1), one JSON line each."""
    tasks = [build(spec, n) for n, spec in enumerate(specs, 1)]
    path.write_text("".join(t.model_dump_json(exclude_none=True) + "\n" for t in tasks), encoding="utf-8")
    return path


def write_sets(
    description: str,
    default_out: Path,
    sets: Mapping[str, tuple[Callable[[], list[S]], Callable[[S, int], Task]]],
    argv: Sequence[str] | None = None,
) -> None:
    """The command: `--out FOLDER` (default `default_out`); each file name in `sets` written there
    from its specs and builder, with a line saying how many tasks it holds."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", type=Path, default=default_out, help="folder of the files")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for file_name, (make, build) in sets.items():
        specs = make()
        path = write_set(args.out / file_name, specs, build)
        print(f"{path}: {len(specs)} tasks")
