"""`toolgym lab ...` (build and list images, start servers, the mock service and a tool server
on a unix socket) and `toolgym serve --backend docker|process`."""

from __future__ import annotations

import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from toolgym.toolservers.commands import AllowedHostOption, TokenOption, TokensFileOption, names_option
from toolgym.toolservers.hosting.lab import LabServers, make_host

if TYPE_CHECKING:
    from toolgym.toolservers.hosting.base import ServerHandle

console = Console(stderr=True, soft_wrap=True)  # an error is one line, also when piped


# ---- commands ----------------------------------------------------------------------------------
lab_app = typer.Typer(help="Containers and lab-node hosting: images, backends, the mock service.")


@lab_app.command("mock-server")
def mock_server(
    host: Annotated[
        str, typer.Option(help="bind address; beyond loopback a token is required")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port")] = 8100,
    uds: Annotated[Path | None, typer.Option(help="listen on this unix socket instead of TCP")] = None,
    token: TokenOption = None,
    tokens_file: TokensFileOption = None,
    allowed_host: AllowedHostOption = None,
    max_sessions: Annotated[int, typer.Option(help="sessions held at once (429 beyond)")] = 256,
    idle_timeout: Annotated[
        float, typer.Option(help="seconds before the reaper closes an idle session")
    ] = 900.0,
    max_checkpoints: Annotated[int, typer.Option(help="checkpoints per session")] = 64,
    log_level: Annotated[str, typer.Option(help="uvicorn log level")] = "info",
) -> None:
    """Serve the mock apps over HTTP, one isolated world per session."""
    from toolgym.http import Credentials
    from toolgym.mocks.service import InsecureBindError, ServiceConfig, serve

    try:
        config = ServiceConfig(
            max_sessions=max_sessions,
            idle_timeout_s=idle_timeout,
            max_checkpoints=max_checkpoints,
            credentials=Credentials.of(token, tokens_file),
            allowed_hosts=tuple(allowed_host or ()),
        )
        serve(config, host=host, port=port, uds=uds, log_level=log_level)
    except InsecureBindError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(code=2) from None


@lab_app.command("tool-server")
def tool_server(
    uds: Annotated[Path, typer.Option(help="the unix socket to listen on")],
    tools: Annotated[
        list[str] | None, typer.Option("--tools", help="tools to host (comma-separated or repeated)")
    ] = None,
    apps: Annotated[list[str] | None, typer.Option("--apps", help="mock apps whose APIs to host")] = None,
    token: Annotated[
        str | None, typer.Option(envvar="TOOLGYM_TOKEN", help="bearer token clients must send")
    ] = None,
    lazy: Annotated[bool, typer.Option("--lazy/--eager", help="load models on first call")] = False,
    device: Annotated[str | None, typer.Option(help="default device for every tool")] = None,
    config: Annotated[Path | None, typer.Option(exists=True, dir_okay=False, help="server config")] = None,
    log_level: Annotated[str, typer.Option(help="uvicorn log level")] = "info",
) -> None:
    """The tool server of `toolgym serve`, listening on a unix socket only (no network needed)."""
    import uvicorn

    from toolgym.toolservers.commands import server_config
    from toolgym.toolservers.server.app import create_app, uvicorn_config
    from toolgym.toolservers.server.providers import catalog

    cfg = server_config({"token": token}, config=config, tools=tools, lazy=lazy, device=device)
    uds.unlink(missing_ok=True)
    try:
        app = create_app(catalog(names_option(apps) or ()), cfg, unix_socket=True)
    except (ValueError, RuntimeError) as exc:
        console.print(f"[red]cannot start the server:[/red] {exc}")
        raise typer.Exit(code=1) from None
    console.print(f"toolgym server on unix:{uds}")
    uvicorn.Server(uvicorn_config(app, uds=str(uds), log_level=log_level)).run()


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
    from toolgym.toolservers.hosting.base import HostingError
    from toolgym.toolservers.hosting.container import docker_client, start_dockerd
    from toolgym.toolservers.hosting.images import DEFAULT_IMAGES, ImageBuilder

    try:
        client = start_dockerd() if start_daemon else docker_client()
        builder = ImageBuilder(client, log=lambda line: console.print(line, highlight=False))
        tags = builder.ensure(images or DEFAULT_IMAGES, rebuild=rebuild)
    except HostingError as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(code=1) from None
    for name, seconds in builder.timings.items():
        console.print(f"built {name} in {seconds:.1f} s")
    print("\n".join(tags.values()))


@lab_app.command("images")
def images_status() -> None:
    """The toolgym images: present, current (built from these sources), size."""
    from rich.table import Table

    from toolgym.toolservers.hosting.container import docker_client
    from toolgym.toolservers.hosting.images import ImageBuilder

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


def _print_endpoint(handle: ServerHandle) -> None:
    where = f"unix:{handle.uds}" if handle.uds else handle.url
    print(f"{handle.spec.kind}\t{where}\ttoken={handle.token}\t{handle.backend}:{handle.ident[:12]}")


@lab_app.command("up")
def up(
    backend: Annotated[str, typer.Option(help="docker or process")] = "docker",
    tools: Annotated[
        list[str] | None,
        typer.Option("--tools", help="start a tool server with these tools ('all': every tool)"),
    ] = None,
    mocks: Annotated[bool, typer.Option("--mocks/--no-mocks", help="start a mock service")] = True,
    network: Annotated[
        bool, typer.Option("--network/--no-network", help="TCP on 127.0.0.1 instead of a unix socket")
    ] = True,
    build_images: Annotated[bool, typer.Option("--build", help="build missing images first")] = False,
) -> None:
    """Start servers through a backend, print where they answer (and their tokens), run until
    interrupted, then stop and remove them."""
    from toolgym.toolservers.hosting.base import HostingError

    names = names_option(tools)
    try:
        lab = LabServers.start(
            backend,  # type: ignore[arg-type]
            mocks=mocks,
            tools=(True if names == ["all"] else names) if names else False,
            network=network,
            build=build_images,
        )
    except (HostingError, ValueError) as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(code=1) from None
    with lab:
        for handle in lab.handles.values():
            _print_endpoint(handle)
        console.print("serving; Ctrl-C stops and removes the servers")
        _wait_for_signal()


def serve_with_backend(
    backend: str,
    *,
    host: str,
    port: int,
    token: str | None,
    config: Path | None = None,
    tools: Sequence[str] | None = None,
    apps: Sequence[str] | None = None,
    lazy: bool = False,
    device: str | None = None,
    mcp: bool = True,
    agentlego: bool = True,
    log_level: str = "info",
) -> None:
    """`toolgym serve --backend docker|process`: the same server, in a container or a sandboxed
    process, published on host:port; its logs are followed until Ctrl-C, then it is removed."""
    from toolgym.toolservers.hosting.base import HostingError, Limits, Mount, ServerSpec, new_token
    from toolgym.toolservers.server.config import is_loopback

    if not is_loopback(host) and not token:
        console.print(
            f"[red]host {host!r} is beyond loopback: set a bearer token (--token or TOOLGYM_TOKEN)[/red]"
        )
        raise typer.Exit(code=2)
    mounts: tuple[Mount, ...] = ()
    args = ["--log-level", log_level, "--mcp" if mcp else "--no-mcp"]
    args.append("--agentlego" if agentlego else "--no-agentlego")
    if tools:
        args += ["--tools", ",".join(tools)]
    if apps:
        args += ["--apps", ",".join(apps)]
    if lazy:
        args.append("--lazy")
    if device:
        args += ["--device", device]
    if config is not None:
        if backend == "docker":
            mounts = (Mount(config.resolve(), "/etc/toolgym/server-config" + config.suffix),)
            args += ["--config", mounts[0].target]
        else:
            args += ["--config", str(config.resolve())]
    spec = ServerSpec(
        name="tools",
        kind="tools",
        argv=("serve", *args),
        network=True,
        limits=Limits(memory_mb=None, cpus=None, pids=1024),
        mounts=mounts,
        token=token or new_token(),
        health_path="/v1/ready",
        publish=(host, port),
        startup_timeout_s=600.0,
    )
    try:
        runner = make_host(backend)  # type: ignore[arg-type]
        handle = runner.start(spec)
    except (HostingError, ValueError) as exc:
        console.print(f"[red]{exc}[/red]")
        raise typer.Exit(code=1) from None
    with runner:
        _print_endpoint(handle)
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        shown = ""
        while not stop.wait(1.0):
            logs = runner.logs(handle, 50)
            new = logs[len(shown) :] if logs.startswith(shown) else logs
            if new.strip():
                console.print(new.rstrip(), highlight=False, markup=False)
            shown = logs
            if not runner.alive(handle):
                console.print("[red]the server stopped[/red]")
                raise typer.Exit(code=1)


def register(app: typer.Typer) -> None:
    app.add_typer(lab_app, name="lab")
