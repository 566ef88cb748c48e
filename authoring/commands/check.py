"""`toolgym check TASKS...`: every problem of some task sets, one line each (`file:line: task_id:
problem`), then a summary; exit 1 when there is any problem, 0 when there is none (docs/tasks.md)."""

from __future__ import annotations

from typing import Annotated

import typer


def check_command(
    tasks: Annotated[
        list[str],
        typer.Argument(
            help="task files (JSONL), registered set names (`toolgym tasks`), or installed packages' "
            "names (every set the package registers)",
            metavar="TASKS",
            show_default=False,
        ),
    ],
    oracle: Annotated[
        bool,
        typer.Option(
            "--oracle/--no-oracle",
            help="run the oracle's episode of every task (as `toolgym run --agent oracle` does)",
        ),
    ] = True,
) -> None:
    """Check task sets: the schema; every app, tool, file, table and column a task names; the golden
    chain replayed twice on fresh worlds (no unexpected error, one end state); every expected_state
    assertion true after the chain and false before it; the answer against the golden final answer;
    the oracle's reward; check_app for every app used. One line per problem; exit 1 on any."""
    from toolgym.authoring.check import check_sets, resolve_targets

    checked = check_sets(resolve_targets(tasks), oracle=oracle)
    problems = 0
    for result in checked:
        for problem in result.problems:
            typer.echo(str(problem))
        for note in result.notes:
            typer.echo(f"{result.path}: note: {note}")
        problems += len(result.problems)
    total = sum(r.tasks for r in checked)
    typer.echo(
        f"toolgym check: {len(checked)} set{'s' * (len(checked) != 1)}, {total} task{'s' * (total != 1)}, "
        f"{problems} problem{'s' * (problems != 1)}"
    )
    if problems:
        raise typer.Exit(code=1)
