"""`toolgym generate`: N verified tasks from the apps' own APIs and seeded worlds (authoring/generate.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

console = Console(highlight=False)


def holdout_path(out: Path) -> Path:
    """Where the held-out part goes: FILE-stem.holdout.jsonl beside FILE."""
    return out.with_name(f"{out.stem}.holdout.jsonl")


def generate_command(
    apps: Annotated[
        str,
        typer.Option(
            help="apps or app groups, comma-separated: banking, shopping, mtu, ctool, ctool_zh, teval, ..."
        ),
    ],
    out: Annotated[Path, typer.Option(help="the JSONL file to write")],
    n: Annotated[int, typer.Option("--n", help="how many tasks")] = 100,
    seed: Annotated[int, typer.Option(help="the run's seed: same arguments, same file")] = 0,
    holdout: Annotated[
        float,
        typer.Option(help="fraction of templates kept apart, written to FILE-stem.holdout.jsonl"),
    ] = 0.0,
    jobs: Annotated[
        int | None,
        typer.Option(help="worker processes (default: one per CPU); the output does not depend on it"),
    ] = None,
) -> None:
    """Generate tasks whose golden chains are drafted on seeded worlds and verified: reads, writes
    with expected_state, chains across apps, questions the agent must ask, and requests it must
    refuse. Deterministic: the same arguments write the same bytes."""
    from toolgym.authoring.generate import dump, generate, summary
    from toolgym.files import write_atomically

    names = [a.strip() for a in apps.split(",") if a.strip()]
    if not names:
        raise typer.BadParameter("name at least one app or group", param_hint="--apps")
    try:
        result = generate(names, n, seed, holdout=holdout, jobs=jobs)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(out, dump(result.tasks))
    for line in summary(result):
        console.print(escape(line))
    console.print(f"wrote {len(result.tasks)} tasks to {escape(str(out))}")
    if result.held_out_templates:
        held = holdout_path(out)
        write_atomically(held, dump(result.holdout))
        console.print(f"wrote {len(result.holdout)} held-out tasks to {escape(str(held))}")
