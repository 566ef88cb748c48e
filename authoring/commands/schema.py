"""`toolgym schema task`: the JSON Schema of the task format (docs/task-schema.json, docs/tasks.md);
`toolgym schema trace`: the trace format's (docs/trace-schema.json)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer


class SchemaKind(StrEnum):
    task = "task"
    trace = "trace"


def schema_command(
    kind: Annotated[
        SchemaKind,
        typer.Argument(help="the format: task (a line of a task file) or trace (a trace's lines)"),
    ] = SchemaKind.task,
) -> None:
    """Print a format's JSON Schema: `task` (a task file's lines, strict: no unknown key; written
    out in docs/tasks.md) or `trace` (a trace file's header, step and end lines)."""
    from toolgym.tasks import task_schema_text
    from toolgym.trace import trace_schema_text

    typer.echo(task_schema_text() if kind is SchemaKind.task else trace_schema_text(), nl=False)
