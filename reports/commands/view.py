"""`toolgym view`: the trace viewer, served on a local page or written as one HTML file."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from toolgym.running.commands.common import (
    TasksOption,
    console,
    no_traces,
    require_dirs,
    stoppable_by_signals,
    tasks_for,
)
from toolgym.toolservers.commands import TokenOption

if TYPE_CHECKING:
    from toolgym.http import Credentials
    from toolgym.tasks import Task


def view_command(
    directories: Annotated[
        list[Path],
        typer.Argument(
            help="trace folders: a run directory, or two (golden vs replay, two agents) side by side"
        ),
    ],
    export: Annotated[
        Path | None, typer.Option(help="write a self-contained HTML copy to this file instead of serving")
    ] = None,
    port: Annotated[int, typer.Option(min=0, max=65535, help="port to serve on (0: any free one)")] = 0,
    host: Annotated[
        str, typer.Option(help="address to bind; beyond loopback a --token is required")
    ] = "127.0.0.1",
    token: TokenOption = None,
    tasks: TasksOption = None,
    title: Annotated[str | None, typer.Option(help="page title")] = None,
) -> None:
    """Open traces in the trace viewer: episodes with filters, one episode step by step (the
    request sent to the model, its output and latency, actions, observations with images, state
    diffs, rewards) and two episodes side by side. Serves a local page until Ctrl-C, or --export.
    A folder without traces is an error (exit 2)."""
    from toolgym.http import Credentials, InsecureBindError, check_bind
    from toolgym.reports.viewer import collect_view_data, write_viewer
    from toolgym.running.trials import find_traces

    require_dirs(directories, "DIRECTORIES")
    index, _ = tasks_for(tasks, directories)
    for directory in directories:
        if not find_traces(directory, partial=True):
            no_traces(directory)
    if export is not None:
        payload = collect_view_data(directories, index, title=title)
        write_viewer(payload, export)
        console.print(f"{len(payload['episodes'])} episodes; viewer written to {export}")
        return
    credentials = Credentials.of(token)
    try:
        check_bind(host, credentials)
    except InsecureBindError as exc:
        raise typer.BadParameter(str(exc), param_hint="--host") from None
    _serve(directories, index, host, port, title, credentials)


def _serve(
    directories: list[Path],
    index: Mapping[str, Task],
    host: str,
    port: int,
    title: str | None,
    credentials: Credentials | None,
) -> None:
    import time

    from toolgym.reports.viewer import serve_viewer

    stoppable_by_signals()
    try:
        with serve_viewer(
            directories, index, host=host, port=port, title=title, credentials=credentials
        ) as url:
            login = f" (a browser opens it once at {url}login?token=...)" if credentials else ""
            console.print(f"trace viewer on {url}{login} (Ctrl-C stops it)", highlight=False)
            while True:
                time.sleep(3600)
    except (OSError, RuntimeError) as exc:  # the port is taken, the address is not this machine's
        raise typer.BadParameter(f"cannot serve on {host}:{port}: {exc}", param_hint="--port") from None
    except KeyboardInterrupt:
        console.print("viewer stopped")
