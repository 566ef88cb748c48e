"""The commands of task authoring, one module each (`schema`, `check`, `generate`). `toolgym/cli.py`
registers them by name from `COMMANDS`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolgym.authoring.commands.check import check_command
from toolgym.authoring.commands.generate import generate_command
from toolgym.authoring.commands.schema import schema_command

COMMANDS: dict[str, Callable[..., Any]] = {
    "schema": schema_command,
    "check": check_command,
    "generate": generate_command,
}
