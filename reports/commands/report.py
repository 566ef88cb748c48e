"""`toolgym report`: a self-contained HTML report (plots inline) of a run directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from toolgym.running.commands.common import (
    ScoreMode,
    TasksOption,
    console,
    no_traces,
    require_dirs,
    suite_names,
    tasks_for,
)


def report_command(
    directory: Annotated[
        Path, typer.Argument(help="a trace folder (a run directory, or any folder of traces)")
    ],
    out: Annotated[Path | None, typer.Option(help="the HTML file; default: DIR/report.html")] = None,
    suite: Annotated[
        str | None,
        typer.Option(help="also score these suites now (comma-separated); eval.*.json files are read"),
    ] = None,
    mode: Annotated[ScoreMode, typer.Option(help="scoring mode for --suite")] = ScoreMode.fixed,
    tasks: TasksOption = None,
    title: Annotated[str | None, typer.Option(help="report title")] = None,
) -> None:
    """Write a self-contained HTML report (plots inline) for a run directory. Results of
    `toolgym eval` on other traces than the ones there now are flagged stale, never shown. A folder
    with neither traces nor a run's episodes is an error (exit 2)."""
    from toolgym.reports.report import collect_report_data, write_report
    from toolgym.reports.scoring import score_suites

    require_dirs([directory], "DIRECTORY")
    names = suite_names(suite) if suite else []
    index, task_set = tasks_for(tasks, [directory])
    data = collect_report_data(directory, index, title=title)
    if not data.traces and not data.episodes:
        no_traces(directory)
    if names:
        results, failures = score_suites(directory, names, mode.value, index, task_set, loaded=data.traces)
        data.add_suite_results(mode.value, results, failures)
    target = out or directory / "report.html"
    write_report(data, target)
    for name, message in data.suite_failures.items():
        console.print(f"[yellow]{escape(name)} not in the report[/yellow]: {escape(message)}")
    for problem in data.problems:
        console.print(f"[yellow]note[/yellow]: {escape(problem)}", highlight=False)
    console.print(f"{data.episode_count} episodes; report written to {target}")
