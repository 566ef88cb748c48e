"""`toolgym lab`: servers in containers or sandboxed processes, for a run or for a lab node.

* `toolgym lab build [IMAGE ...]`: build the images (base from mmdebstrap, host-built wheels)
* `toolgym lab images`: the toolgym images and whether they are current
* `toolgym lab mock-server`: run the mock-app session service (what the mockserver image runs)
* `toolgym lab up --backend docker|process`: start servers, print their endpoints, wait
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

lab_app = typer.Typer(help="Containers and lab-node hosting: images, backends, the mock service.")
console = Console(stderr=True)


@lab_app.command("mock-server")
def mock_server(
    host: Annotated[
        str, typer.Option(help="bind address; beyond loopback a token is required")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port")] = 8100,
    uds: Annotated[Path | None, typer.Option(help="listen on this unix socket instead of TCP")] = None,
    token: Annotated[
        str | None,
        typer.Option(envvar="TOOLGYM_TOKEN", help="bearer token clients must send", show_default=False),
    ] = None,
    max_sessions: Annotated[int, typer.Option(help="sessions held at once (429 beyond)")] = 256,
    idle_timeout: Annotated[
        float, typer.Option(help="seconds before the reaper closes an idle session")
    ] = 900.0,
    max_checkpoints: Annotated[int, typer.Option(help="checkpoints per session")] = 64,
    log_level: Annotated[str, typer.Option(help="uvicorn log level")] = "info",
) -> None:
    """Serve the mock apps over HTTP, one isolated world per session."""
    from toolgym.mocks.service import InsecureBindError, ServiceConfig, serve

    config = ServiceConfig(
        max_sessions=max_sessions, idle_timeout_s=idle_timeout, max_checkpoints=max_checkpoints, token=token
    )
    try:
        serve(config, host=host, port=port, uds=uds, log_level=log_level)
    except InsecureBindError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(code=2) from None


@lab_app.command("build")
def build(
    images: Annotated[
        list[str] | None,
        typer.Argument(help="base, toolserver, mockserver, toolserver-gpu (default: toolserver mockserver)"),
    ] = None,
    rebuild: Annotated[bool, typer.Option(help="build even when the image is current")] = False,
    start_daemon: Annotated[bool, typer.Option(help="start dockerd if none answers (root)")] = False,
) -> None:
    """Build the images offline: base from mmdebstrap, toolgym from host-built wheels."""
    from toolgym.toolservers.backends.base import BackendError
    from toolgym.toolservers.backends.container import docker_client, start_dockerd
    from toolgym.toolservers.backends.images import DEFAULT_IMAGES, ImageBuilder

    try:
        client = start_dockerd() if start_daemon else docker_client()
        builder = ImageBuilder(client, log=lambda line: console.print(line, highlight=False))
        tags = builder.ensure(images or DEFAULT_IMAGES, rebuild=rebuild)
    except BackendError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(code=1) from None
    for name, seconds in builder.timings.items():
        console.print(f"built {name} in {seconds:.1f} s")
    print("\n".join(tags.values()))


@lab_app.command("images")
def images_status() -> None:
    """The toolgym images: present, current (built from these sources), size."""
    from rich.table import Table

    from toolgym.toolservers.backends.container import docker_client
    from toolgym.toolservers.backends.images import ImageBuilder

    table = Table(title="toolgym images")
    for column in ("image", "tag", "present", "current", "MB"):
        table.add_column(column)
    for row in ImageBuilder(docker_client(), log=lambda _: None).status():
        table.add_row(
            row["name"], row["tag"], str(row["present"]), str(row["current"]), str(row["size_mb"] or "-")
        )
    Console().print(table)


def _wait_for_signal() -> None:
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()


def register(app: typer.Typer) -> None:
    app.add_typer(lab_app, name="lab")


if __name__ == "__main__":
    lab_app()
