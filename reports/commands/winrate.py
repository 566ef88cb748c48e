"""`toolgym winrate`: the end-to-end win rate of a run against a reference run, judged pairwise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from toolgym.files import write_atomically
from toolgym.running.commands.common import TasksOption, console, require_dirs, tasks_for


def winrate_command(
    directory: Annotated[Path, typer.Argument(help="the candidate run's trace folder")],
    reference: Annotated[Path, typer.Option(help="the reference run's trace folder")],
    tasks: TasksOption = None,
    out: Annotated[Path | None, typer.Option(help="results JSON; default: DIR/winrate.json")] = None,
) -> None:
    """End-to-end win rate of a run against a reference run, judged pairwise (both orders) by the
    judge the environment configures (TOOLGYM_JUDGE_BASE_URL, TOOLGYM_JUDGE_MODEL; with
    TOOLGYM_JUDGE_CASSETTE its questions are recorded, or replayed with no LLM)."""
    from toolgym.evaluation.base import EvaluationError
    from toolgym.evaluation.metrics.judge import judge_from_env
    from toolgym.evaluation.metrics.winrate import win_rate
    from toolgym.running.trials import load_traces

    require_dirs([directory], "DIRECTORY")
    require_dirs([reference], "--reference")
    _, task_set = tasks_for(tasks, [directory, reference])
    try:
        judge = judge_from_env()
    except EvaluationError as exc:
        raise typer.BadParameter(str(exc)) from None
    if judge is None:
        raise typer.BadParameter(
            "the win rate needs a judge: set TOOLGYM_JUDGE_BASE_URL and TOOLGYM_JUDGE_MODEL"
        )
    try:
        candidate = [t.trace for t in load_traces(directory)[0]]
        baseline = [t.trace for t in load_traces(reference)[0]]
        result = win_rate(candidate, baseline, task_set, judge)
    except EvaluationError as exc:
        console.print(f"[red]winrate: not scored[/red]: {escape(str(exc))}")
        raise typer.Exit(code=1) from None
    finally:
        judge.close()
    for metric, value in result.metrics.items():
        console.print(f"{metric}: {value:.2f}")
    console.print("counts: " + ", ".join(f"{k} {v}" for k, v in result.counts.items()))
    for note in result.notes:
        console.print(f"note: {escape(note)}")
    target = out or directory / "winrate.json"
    write_atomically(target, json.dumps(result.model_dump(mode="json"), indent=2) + "\n")
    console.print(f"results written to {target}")
