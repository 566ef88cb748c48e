"""What the evaluation commands share: the consoles, output helpers, the `--format` and `--mode`
options, and the tasks a trace folder is read against (run.json's task sources, `--tasks`, or
the default sets)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape  # messages quote pip extras: toolgym[ml] is no markup tag
from rich.table import Table

from toolgym.running.config import TaskFormat

if TYPE_CHECKING:
    from toolgym.evaluation.base import SuiteResult
    from toolgym.tasks import Task, TaskSet

console = Console()
err_console = Console(stderr=True, highlight=False, soft_wrap=True)

EVAL_FILE = "eval.{mode}.json"  # what `toolgym eval` writes into the trace folder; `report` reads it


class ScoreMode(StrEnum):
    compat = "compat"
    fixed = "fixed"


FormatOption = Annotated[
    TaskFormat | None,
    typer.Option(
        "--format",
        help="format of the --tasks files: toolgym JSONL, GTA dataset.json, a T-Eval file, ToolEyes "
        "queries or MTU rows; default: told by their content",
    ),
]
TasksOption = Annotated[
    list[str] | None,
    typer.Option(
        help="task set files the traces ran on (toolgym JSONL, GTA dataset.json, T-Eval files, ToolEyes "
        "queries, MTU-Eval rows) or bundled set names; default: the run's own (run.json), else the "
        "bundled sets"
    ),
]


def fail(message: str, code: int = 2) -> NoReturn:
    """Stop the command with one line on stderr (exit 2: nothing to work on, a user's mistake); a
    message of several problems (a task file's) gets a line each."""
    for line in message.splitlines() or [message]:
        err_console.print(f"error: {line}", markup=False)
    raise typer.Exit(code=code)


def given(ctx: typer.Context, name: str) -> bool:
    """Whether the option was given on the command line (not left at its default)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


@contextmanager
def human_output_to_stderr(enabled: bool) -> Iterator[None]:
    """With --json, stdout carries the JSON alone: tables and messages go to stderr."""
    if not enabled:
        yield
        return
    import sys

    saved = console.file
    console.file = sys.stderr
    try:
        yield
    finally:
        console.file = saved


def stoppable_by_signals() -> None:
    """Make SIGINT and SIGTERM raise KeyboardInterrupt in this process, as a server that says
    "Ctrl-C stops it" must: a process inherits ignored and blocked signals from whatever started
    it (a shell's background job ignores SIGINT; a parent's thread may block it), and would then
    never stop."""
    import signal

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, interrupt)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


def require_dirs(directories: Sequence[Path], hint: str) -> None:
    for directory in directories:
        if not directory.is_dir():
            raise typer.BadParameter(f"{directory} is not a directory", param_hint=hint)


def no_traces(directory: Path, incomplete: int = 0, nested: int = 0) -> NoReturn:
    """A folder with nothing to read: exit 2, one line that says what is there instead."""
    why = []
    if incomplete:
        why.append(f"{incomplete} incomplete traces (no end record)")
    if nested:
        why.append(f"{nested} other runs below it: --recursive reads them")
    more = f" ({'; '.join(why)})" if why else ""
    fail(f"{directory} holds no finished traces{more}; nothing written")


# ---- the tasks traces are read against ------------------------------------------------------------
def task_files(
    tasks: Sequence[str] | None, directories: Sequence[Path], fmt: TaskFormat | None = None
) -> list[tuple[Path, str | None]]:
    """The task files to read traces against, each with its format (None: told by content):
    `--tasks` when given, else the task sources the runs' run.json record (checked: a changed file
    stops the command in one line), else the default sets."""
    from toolgym.running.task_sources import TaskSourceError, recorded_sources, resolve

    chosen = None if fmt is None else fmt.value
    if not tasks:
        sources = recorded_sources(directories)
        if sources is not None:
            try:
                return [(s.checked_path(), s.format) for s in sources]
            except TaskSourceError as exc:
                fail(str(exc))
    try:
        return [(path, chosen) for _, path in resolve(list(tasks or []))]
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--tasks") from None


def combined_tasks(files: Sequence[tuple[Path, str | None]]) -> tuple[dict[str, Task], TaskSet]:
    """Tasks by id over the files, and as one TaskSet; a bad file stops the command in one line."""
    from toolgym.evaluation.loaders.formats import load_tasks
    from toolgym.running.trials import load_task_index
    from toolgym.tasks import TaskFileError, TaskSet

    formats = dict(files)
    try:
        index = load_task_index([path for path, _ in files], lambda p: load_tasks(p, formats[p])[1])
    except TaskFileError as exc:
        fail(str(exc))
    except (ValueError, OSError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--tasks") from None
    return index, TaskSet(index.values())


def tasks_for(
    tasks: Sequence[str] | None, directories: Sequence[Path], fmt: TaskFormat | None = None
) -> tuple[dict[str, Task], TaskSet]:
    return combined_tasks(task_files(tasks, directories, fmt))


def suite_names(suite: str) -> list[str]:
    """The `--suite` list, checked against the registry before anything is read."""
    from toolgym.evaluation.suites import SUITES

    names = [s.strip() for s in suite.split(",") if s.strip()]
    if not names:
        raise typer.BadParameter("name at least one suite", param_hint="--suite")
    unknown = [n for n in names if n not in SUITES]
    if unknown:
        raise typer.BadParameter(
            f"unknown metric suite {', '.join(unknown)}; known: {', '.join(sorted(SUITES))}",
            param_hint="--suite",
        )
    return names


# ---- printing results ---------------------------------------------------------------------------
def print_results(results: Mapping[str, SuiteResult], failures: Mapping[str, str]) -> None:
    for name, result in results.items():
        table = Table(title=f"{name} ({result.mode} mode)")
        table.add_column("metric")
        table.add_column("value", justify="right")
        for metric, value in result.metrics.items():
            table.add_row(metric, f"{value:.2f}")
        console.print(table)
        print_breakdowns(name, result)
        if result.counts:
            console.print("counts: " + ", ".join(f"{k} {v}" for k, v in result.counts.items()))
        for note in result.notes:
            console.print(f"note: {escape(note)}")
        if result.per_task_notes:
            table = Table(title=f"{name}: per task")
            table.add_column("task")
            table.add_column("")
            for task_id, said in result.per_task_notes.items():
                table.add_row(escape(task_id), escape(said))
            console.print(table)
    for name, message in failures.items():
        # one line whatever the terminal's width: it names the suite, and a plug-in's package
        console.print(f"[red]{escape(name)}: not scored[/red]: {escape(message)}", soft_wrap=True)
    if results:
        console.print("what each metric means: toolgym eval --explain")


def print_incomplete(incomplete: Sequence[str], what: str) -> None:
    """Name the traces without their end record (cut short), which eval and export leave out."""
    if incomplete:
        console.print(
            f"[red]{len(incomplete)} incomplete traces (no end record), {what}:[/red]", highlight=False
        )
    for line in incomplete:
        console.print(f"  {escape(line)}", highlight=False, soft_wrap=True)


def print_breakdowns(name: str, result: SuiteResult) -> None:
    """The result's scores per task category and its error kinds, as tables."""
    if len(result.by_category) > 1:
        keys = list(dict.fromkeys(k for row in result.by_category.values() for k in row))
        table = Table(title=f"{name}: per category (mean per-task score, % where a fraction)")
        for column in ["category", *keys]:
            table.add_column(column, justify="left" if column == "category" else "right")
        for category, scores in result.by_category.items():
            table.add_row(category, *[fmt(scores.get(k)) for k in keys])
        console.print(table)
    from toolgym.evaluation.base import error_kinds

    kinds = error_kinds(result.counts)
    if kinds:
        columns = list(dict.fromkeys(k for row in kinds.values() for k in row))
        table = Table(title=f"{name}: errors by kind")
        for column in ["", *columns]:
            table.add_column(column, justify="left" if not column else "right")
        for group, found in kinds.items():
            table.add_row(group, *[str(found.get(c, 0)) for c in columns])
        console.print(table)
