"""The commands of what a run becomes, one module each: `eval` (evaluate.py), `report`, `export`,
`view` and `winrate`. `toolgym/cli.py` registers them by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolgym.reports.commands.evaluate import eval_command
from toolgym.reports.commands.export import export_command
from toolgym.reports.commands.report import report_command
from toolgym.reports.commands.view import view_command
from toolgym.reports.commands.winrate import winrate_command

COMMANDS: dict[str, Callable[..., Any]] = {
    "eval": eval_command,
    "report": report_command,
    "winrate": winrate_command,
    "export": export_command,
    "view": view_command,
}
