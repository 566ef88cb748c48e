"""`toolgym serve`: run the tool server (native API, AgentLego protocol, MCP) in the foreground."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from toolgym.toolservers.server.config import ServerConfig
    from toolgym.toolservers.server.providers import ToolProvider


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


# `toolgym serve`'s own options
_HostOption = Annotated[str, typer.Option(help="address to bind; beyond loopback a --token is required")]
_PortOption = Annotated[int, typer.Option(help="port to bind")]
_ToolsOption = Annotated[
    list[str] | None,
    typer.Option("--tools", help="tools to host (comma-separated or repeated); default: all"),
]
_AppsOption = Annotated[
    list[str] | None, typer.Option("--apps", help="mock apps whose APIs to host (one shared world)")
]
_DocsOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--docs",
        help="tool documentation files (OpenAI function records, ToolBench, T-Eval, MTU, OpenAPI) "
        "whose tools to host, simulated (deterministic)",
    ),
]
_LazyOption = Annotated[
    bool, typer.Option("--lazy/--eager", help="load models on first call instead of at start")
]
_DeviceOption = Annotated[str | None, typer.Option(help="default device for every tool (cpu, cuda, cuda:1)")]
_ConfigOption = Annotated[
    Path | None, typer.Option(exists=True, dir_okay=False, help="server config (TOML or JSON); flags win")
]
_McpOption = Annotated[bool, typer.Option("--mcp/--no-mcp", help="serve MCP at /mcp")]
_AgentLegoOption = Annotated[
    bool, typer.Option("--agentlego/--no-agentlego", help="serve the AgentLego protocol")
]
_LogLevelOption = Annotated[str, typer.Option(help="uvicorn log level")]
_BackendOption = Annotated[
    str | None,
    typer.Option(help="run it in a container (docker) or a sandboxed process (process): toolservers/hosting"),
]


def serve(
    host: _HostOption = "127.0.0.1",
    port: _PortOption = 8765,
    tools: _ToolsOption = None,
    apps: _AppsOption = None,
    docs: _DocsOption = None,
    token: TokenOption = None,
    allowed_host: AllowedHostOption = None,
    lazy: _LazyOption = False,
    device: _DeviceOption = None,
    config: _ConfigOption = None,
    mcp: _McpOption = True,
    agentlego: _AgentLegoOption = True,
    log_level: _LogLevelOption = "info",
    backend: _BackendOption = None,
) -> None:
    """Serve tools over HTTP: native JSON API (/v1), AgentLego protocol (/openapi.json) and MCP (/mcp)."""
    if backend is not None:
        _refuse_with_backend(docs, allowed_host)
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

    from toolgym.http import bind_socket
    from toolgym.toolservers.server.app import serve as run_server

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
    providers = _tool_providers(names_option(apps) or [], docs or [], console)
    bind_socket(cfg.host, cfg.port).close()  # a port in use: one line, before the banner says "on"
    _announce(cfg, providers, console)
    try:
        run_server(providers, cfg, log_level=log_level)
    except (ValueError, RuntimeError) as exc:
        console.print(f"[red]cannot start the server:[/red] {exc}")
        raise typer.Exit(code=1) from None


def _refuse_with_backend(docs: list[Path] | None, allowed_host: list[str] | None) -> None:
    """The options that apply only to a server in this process, refused with --backend."""
    if docs:
        raise typer.BadParameter("--docs serves from this process; leave out --backend", param_hint="--docs")
    if allowed_host:
        raise typer.BadParameter(
            "--allowed-host applies to a server in this process; leave out --backend",
            param_hint="--allowed-host",
        )


def _tool_providers(apps: list[str], docs: list[Path], console: Console) -> list[ToolProvider]:
    """Every tool the server can host: the built-in ones, the apps' APIs and the documented
    tools; a bad doc (DocError names file and tool), or two files with one tool, exits with 2."""
    from rich.markup import escape

    from toolgym.toolservers.server.providers import catalog

    try:
        return catalog([*apps, *doc_libraries(docs)])
    except ValueError as exc:
        console.print(f"[red]cannot serve these tools:[/red] {escape(str(exc))}")
        raise typer.Exit(code=2) from None


def _announce(cfg: ServerConfig, providers: list[ToolProvider], console: Console) -> None:
    """The banner: where the server listens, its tools and faces, when models load."""
    from rich.markup import escape

    from toolgym.toolservers.mcp_sdk import mcp_problem

    served = cfg.tools or [p.name for p in providers]
    shown = f"[{cfg.host}]" if ":" in cfg.host else cfg.host
    console.print(f"toolgym server on http://{shown}:{cfg.port}  tools: {', '.join(served)}")
    no_mcp = mcp_problem() if cfg.mcp else None
    faces = (
        ["native /v1"]
        + (["AgentLego /openapi.json"] if cfg.agentlego else [])
        + (["MCP /mcp"] if cfg.mcp and no_mcp is None else [])
    )
    console.print(f"faces: {', '.join(faces)}; models load {'lazily' if cfg.load == 'lazy' else 'at start'}")
    if no_mcp is not None:
        console.print(f"no MCP at /mcp (it answers 501): {escape(no_mcp)}")
