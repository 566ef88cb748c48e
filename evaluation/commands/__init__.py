"""The evaluation commands, one module each: `run` (run.py: configuration -> plan -> execute ->
report), `eval` (evaluate.py), `report`, `export`, `view`, `teval-subsets` / `teval-answer`
(teval.py) and `winrate`; what they share is in common.py. `register(app)` adds them to the CLI."""

from __future__ import annotations

import typer

from toolgym.evaluation.commands.evaluate import eval_command
from toolgym.evaluation.commands.export import export_command
from toolgym.evaluation.commands.report import report_command
from toolgym.evaluation.commands.run import run
from toolgym.evaluation.commands.teval import teval_answer_command, teval_subsets_command
from toolgym.evaluation.commands.view import view_command
from toolgym.evaluation.commands.winrate import winrate_command


def register(app: typer.Typer) -> None:
    app.command("run")(run)
    app.command("eval")(eval_command)
    app.command("report")(report_command)
    app.command("teval-subsets")(teval_subsets_command)
    app.command("teval-answer")(teval_answer_command)
    app.command("winrate")(winrate_command)
    app.command("export")(export_command)
    app.command("view")(view_command)
