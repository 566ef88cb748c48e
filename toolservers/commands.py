"""`toolgym serve`: run the tool server (native API, AgentLego protocol, MCP) in the foreground."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from toolgym.toolservers.server.config import ServerConfig


# the options every toolgym server takes alike (toolgym.http.Exposure is the rule behind them)
TokenOption = Annotated[
    str | None,
    typer.Option(
        envvar="TOOLGYM_TOKEN",
        help="bearer token clients must send (16+ characters); required beyond loopback",
        show_default=False,
    ),
]
TokensFileOption = Annotated[
    Path | None,
    typer.Option(
        exists=True,
        dir_okay=False,
        help="one client per line, `NAME TOKEN` (16+ characters each): each client sees and drives "
        "only the sessions it opened",
    ),
]
AllowedHostOption = Annotated[
    list[str] | None,
    typer.Option(
        "--allowed-host",
        help="another Host name clients reach this server by (a proxy's, a DNS name of this machine); "
        "requests naming any other host are refused (DNS rebinding)",
    ),
]


def names_option(values: list[str] | None) -> list[str] | None:
    """Repeated options and comma-separated lists alike: --tools OCR,Calculator --tools DrawBox."""
    if not values:
        return None
    return [n.strip() for v in values for n in v.split(",") if n.strip()]


def server_config(
    overrides: dict[str, object],
    *,
    config: Path | None,
    tools: list[str] | None,
    lazy: bool,
    device: str | None,
) -> ServerConfig:
    """The server configuration from a config file and command-line options; on bad values it
    prints why and exits with code 2 (shared by `toolgym serve` and `toolgym lab tool-server`)."""
    from pydantic import ValidationError
    from rich.console import Console
    from rich.markup import escape

    from toolgym.toolservers.server.config import ServerConfig, ToolConfig

    overrides = dict(overrides)
    if names_option(tools) is not None:
        overrides["tools"] = names_option(tools)
    if lazy:
        overrides["load"] = "lazy"
    try:
        cfg = (
            ServerConfig.load_file(config, **overrides) if config else ServerConfig.model_validate(overrides)
        )
        if device is not None:
            cfg = cfg.model_copy(update={"defaults": cfg.defaults.model_copy(update={"device": device})})
            ToolConfig.model_validate(cfg.defaults.model_dump())
    except ValidationError as exc:  # one line per problem, never pydantic's multi-line dump
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'config'}: {e['msg'].removeprefix('Value error, ')}"
            if e["loc"]
            else e["msg"].removeprefix("Value error, ")
            for e in exc.errors(include_url=False)
        )
        Console(stderr=True, soft_wrap=True).print(f"[red]bad server configuration:[/red] {escape(problems)}")
        raise typer.Exit(code=2) from None
    except (ValueError, OSError) as exc:
        Console(stderr=True, soft_wrap=True).print(f"[red]bad server configuration:[/red] {escape(str(exc))}")
        raise typer.Exit(code=2) from None
    return cfg


def doc_libraries(paths: Sequence[Path]) -> list[str]:
    """Each documentation file as a simulated library of this process; their app names."""
    from toolgym.mocks.simulated.app import register_library
    from toolgym.mocks.simulated.docs import load_docs

    names = []
    for n, path in enumerate(paths):
        library = f"docs/{n}/{path.name}"
        register_library(library, load_docs(path))
        names.append(f"simulated:{library}")
    return names


def serve(
    host: Annotated[
        str, typer.Option(help="address to bind; beyond loopback a --token is required")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to bind")] = 8765,
    tools: Annotated[
        list[str] | None,
        typer.Option("--tools", help="tools to host (comma-separated or repeated); default: all"),
    ] = None,
    apps: Annotated[
        list[str] | None, typer.Option("--apps", help="mock apps whose APIs to host (one shared world)")
    ] = None,
    docs: Annotated[
        list[Path] | None,
        typer.Option(
            "--docs",
            help="tool documentation files (OpenAI function records, ToolBench, T-Eval, MTU, OpenAPI) "
            "whose tools to host, simulated (deterministic)",
        ),
    ] = None,
    token: TokenOption = None,
    allowed_host: AllowedHostOption = None,
    lazy: Annotated[
        bool, typer.Option("--lazy/--eager", help="load models on first call instead of at start")
    ] = False,
    device: Annotated[
        str | None, typer.Option(help="default device for every tool (cpu, cuda, cuda:1)")
    ] = None,
    config: Annotated[
        Path | None, typer.Option(exists=True, dir_okay=False, help="server config (TOML or JSON); flags win")
    ] = None,
    mcp: Annotated[bool, typer.Option("--mcp/--no-mcp", help="serve MCP at /mcp")] = True,
    agentlego: Annotated[
        bool, typer.Option("--agentlego/--no-agentlego", help="serve the AgentLego protocol")
    ] = True,
    log_level: Annotated[str, typer.Option(help="uvicorn log level")] = "info",
    backend: Annotated[
        str | None,
        typer.Option(
            help="run it in a container (docker) or a sandboxed process (process): toolservers/hosting"
        ),
    ] = None,
) -> None:
    """Serve tools over HTTP: native JSON API (/v1), AgentLego protocol (/openapi.json) and MCP (/mcp)."""
    if docs and backend is not None:
        raise typer.BadParameter("--docs serves from this process; leave out --backend", param_hint="--docs")
    if allowed_host and backend is not None:
        raise typer.BadParameter(
            "--allowed-host applies to a server in this process; leave out --backend",
            param_hint="--allowed-host",
        )
    if backend is not None:
        from toolgym.toolservers.hosting.commands import serve_with_backend

        serve_with_backend(
            backend,
            host=host,
            port=port,
            token=token,
            config=config,
            tools=names_option(tools),
            apps=names_option(apps),
            lazy=lazy,
            device=device,
            mcp=mcp,
            agentlego=agentlego,
            log_level=log_level,
        )
        return
    from rich.console import Console
    from rich.markup import escape

    from toolgym.http import bind_socket
    from toolgym.toolservers.server.app import serve as run_server
    from toolgym.toolservers.server.providers import catalog

    console = Console(stderr=True, soft_wrap=True)  # an error is one line, also when piped
    overrides: dict[str, object] = {
        "host": host,
        "port": port,
        "token": token,
        "allowed_hosts": allowed_host or [],
        "mcp": mcp,
        "agentlego": agentlego,
    }
    cfg = server_config(overrides, config=config, tools=tools, lazy=lazy, device=device)
    try:
        providers = catalog([*(names_option(apps) or ()), *doc_libraries(docs or [])])
    except ValueError as exc:  # a bad doc (DocError names file and tool), or two files with one tool
        console.print(f"[red]cannot serve these tools:[/red] {escape(str(exc))}")
        raise typer.Exit(code=2) from None
    bind_socket(cfg.host, cfg.port).close()  # a port in use: one line, before the banner says "on"
    served = cfg.tools or [p.name for p in providers]
    shown = f"[{cfg.host}]" if ":" in cfg.host else cfg.host
    console.print(f"toolgym server on http://{shown}:{cfg.port}  tools: {', '.join(served)}")
    faces = (
        ["native /v1"]
        + (["AgentLego /openapi.json"] if cfg.agentlego else [])
        + (["MCP /mcp"] if cfg.mcp else [])
    )
    console.print(f"faces: {', '.join(faces)}; models load {'lazily' if cfg.load == 'lazy' else 'at start'}")
    try:
        run_server(providers, cfg, log_level=log_level)
    except (ValueError, RuntimeError) as exc:
        console.print(f"[red]cannot start the server:[/red] {exc}")
        raise typer.Exit(code=1) from None
