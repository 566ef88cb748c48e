"""`toolgym env-server`: serve ToolEnv sessions over HTTP and WebSocket (OpenEnv's wire protocol)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def env_server(
    host: Annotated[
        str, typer.Option(help="address to bind; beyond loopback a --token is required")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to bind")] = 8100,
    token: Annotated[
        str | None, typer.Option(envvar="TOOLGYM_TOKEN", help="bearer token clients must send")
    ] = None,
    tasks: Annotated[
        list[Path] | None,
        typer.Option(
            "--tasks",
            exists=True,
            dir_okay=False,
            help="task set files clients may pick (by file stem), "
            "besides the bundled demo, ctool, mtu and teval",
        ),
    ] = None,
    tools: Annotated[
        list[str] | None, typer.Option("--tools", help="local tools offered (comma-separated); default: all")
    ] = None,
    tool_server: Annotated[
        list[str] | None,
        typer.Option("--tool-server", help="URL of a toolgym tool server whose tools to add"),
    ] = None,
    default_tasks: Annotated[str, typer.Option(help="task set of a session that names none")] = "demo",
    protocol: Annotated[str, typer.Option(help="default action protocol: react, json, openai")] = "react",
    reward: Annotated[str, typer.Option(help="default reward: task, answer, state")] = "task",
    trace_dir: Annotated[Path, typer.Option(help="where each session's traces are written")] = Path(
        "runs/env-service"
    ),
    max_sessions: Annotated[int, typer.Option(min=1, help="open sessions at most (HTTP and WebSocket)")] = 64,
    idle_timeout: Annotated[
        float, typer.Option(min=1, help="seconds before an idle session is closed")
    ] = 600.0,
    max_body_bytes: Annotated[
        int, typer.Option(min=1024, help="largest request body or WebSocket message")
    ] = 1 << 20,
    log_level: Annotated[str, typer.Option(help="uvicorn log level")] = "info",
) -> None:
    """Serve ToolEnv sessions: OpenEnv's /reset, /step, /state, /schema and /ws (GenericEnvClient works
    unchanged), server-side traces; needs toolgym's `service` extra (openenv-core)."""
    from rich.console import Console
    from rich.markup import escape

    from toolgym.envs.service.catalog import Catalog, ServiceError, SessionConfig
    from toolgym.errors import ToolgymError
    from toolgym.http import InsecureBindError, check_bind
    from toolgym.toolservers.commands import names_option

    console = Console(stderr=True)
    try:
        check_bind(host, token)

        catalog = Catalog.build(
            task_files=tasks or (),
            tool_names=names_option(tools),
            tool_servers=tool_server or (),
            token=token,
            defaults=SessionConfig(tasks=default_tasks, protocol=protocol, reward=reward),
        )
        from toolgym.envs.service.app import create_app  # openenv-core: an ImportError names the extra
    except (InsecureBindError, ImportError, ServiceError, ToolgymError, ValueError, OSError) as exc:
        console.print(f"[red]cannot start the env service:[/red] {escape(str(exc))}")
        raise typer.Exit(code=2) from None
    import uvicorn

    app = create_app(
        catalog,
        trace_dir=trace_dir,
        token=token,
        max_sessions=max_sessions,
        idle_timeout_s=idle_timeout,
        max_body_bytes=max_body_bytes,
    )
    shown = f"[{host}]" if ":" in host else host
    console.print(
        f"toolgym env service on http://{shown}:{port}  task sets: {', '.join(sorted(catalog.task_paths))}; "
        f"traces in {trace_dir}/"
    )
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        ws_max_size=max_body_bytes,
        timeout_graceful_shutdown=5,
    )
