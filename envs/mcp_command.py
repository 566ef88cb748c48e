"""`toolgym mcp`: the command only. The MCP server (`toolgym.envs.mcp_server`, with the mcp SDK and
its 0.6 s of imports) is imported when the command runs, not when `toolgym` starts; without the
SDK (the `mcp` extra), or with a 1.x, the command says so in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from toolgym.toolservers.commands import AllowedHostOption, TokenOption


def mcp_command(
    apps: Annotated[
        str | None, typer.Option(help="mock apps of the world, comma-separated (e.g. banking,shopping)")
    ] = None,
    tasks: Annotated[
        str | None,
        typer.Option(help="task set: a task file or a bundled set (demo, mtu, teval, ctool, multiturn)"),
    ] = None,
    task: Annotated[str | None, typer.Option(help="the task of a session's first episode")] = None,
    seed: Annotated[int | None, typer.Option(help="episode seed; default: each task's own")] = None,
    max_steps: Annotated[int, typer.Option(min=1, help="steps per episode at most")] = 50,
    trace_dir: Annotated[Path | None, typer.Option(help="write each episode's trace here")] = None,
    strict_arguments: Annotated[
        bool,
        typer.Option(
            "--strict-arguments",
            help="arguments of their declared types only: no coercion of a JSON number or boolean "
            "into a string parameter (MTU's apps coerce by default)",
        ),
    ] = False,
    notifications: Annotated[
        str,
        typer.Option(
            help="which events of a task with events notify the client: none; low (the important "
            "ones); medium (those with a notification text); high (every event)"
        ),
    ] = "medium",
    http: Annotated[bool, typer.Option(help="serve streamable HTTP at /mcp instead of stdio")] = False,
    host: Annotated[
        str, typer.Option(help="address to bind with --http; beyond loopback a --token is required")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to bind with --http")] = 8765,
    token: TokenOption = None,
    allowed_host: AllowedHostOption = None,
) -> None:
    """Serve a seeded mock world (--apps, --tasks, --seed) or the built-in tools over MCP: stdio by
    default, streamable HTTP with --http. Each MCP session gets its own world; prompts are the
    task queries, resources the world's tables, state hash and files."""
    from toolgym.toolservers.mcp_sdk import mcp_problem

    problem = mcp_problem()  # no SDK, or a 1.x: one line naming the extra, before any import fails
    if problem is not None:
        typer.echo(f"cannot start the MCP server: {problem}", err=True)
        raise typer.Exit(code=2)
    import anyio

    from toolgym.envs.mcp_server import McpSetupError, http_app, make_config, serve_stdio
    from toolgym.http import Credentials, Exposure, InsecureBindError, uvicorn_config

    try:
        config = make_config(
            apps=[a.strip() for a in (apps or "").split(",") if a.strip()],
            tasks=tasks,
            task=task,
            seed=seed,
            max_steps=max_steps,
            trace_dir=trace_dir,
            strict_arguments=strict_arguments,
            notifications=notifications,
        )
    except (McpSetupError, ValueError, OSError) as exc:
        typer.echo(f"cannot start the MCP server: {exc}", err=True)
        raise typer.Exit(code=2) from None
    if not http:
        anyio.run(serve_stdio, config)
        return
    exposure = Exposure(host=host, credentials=Credentials.of(token), allowed_hosts=tuple(allowed_host or ()))
    try:
        exposure.check()
    except InsecureBindError as exc:
        typer.echo(f"cannot start the MCP server: {exc}", err=True)
        raise typer.Exit(code=2) from None
    import uvicorn

    app, close_all = http_app(config, exposure)
    shown = f"[{host}]" if ":" in host else host
    typer.echo(f"toolgym MCP server on http://{shown}:{port}/mcp", err=True)
    try:
        server_config = uvicorn_config(
            app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=5
        )
        uvicorn.Server(server_config).run()
    finally:
        close_all()
