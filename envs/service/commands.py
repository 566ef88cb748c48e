"""`toolgym env-server`: serve ToolEnv sessions over HTTP and WebSocket (OpenEnv's wire protocol)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from toolgym.envs.user_options import (
    UserApiKeyEnvOption,
    UserLLMOpener,
    UserModelOption,
    wants_user_llm,
)
from toolgym.toolservers.commands import AllowedHostOption, TokenOption, TokensFileOption

if TYPE_CHECKING:
    from rich.console import Console
    from starlette.types import ASGIApp

    from toolgym.envs.service.catalog import Catalog, SessionConfig
    from toolgym.envs.users import UserLLM

# (base URL, model, API key environment variable) -> a live user LLM with a `close()`; raises
# ValueError for a key variable that is not set. The chat client lives above envs, so the
# `toolgym` command hands it in (`register(app, user_llm=...)`).
_user_llm_opener: UserLLMOpener | None = None


# `toolgym env-server`'s own options
_HostOption = Annotated[str, typer.Option(help="address to bind; beyond loopback a --token is required")]
_PortOption = Annotated[int, typer.Option(help="port to bind")]
_TasksOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--tasks",
        exists=True,
        dir_okay=False,
        help="task set files clients may pick (by file stem), besides the bundled demo, ctool, mtu and teval",
    ),
]
_ToolsOption = Annotated[
    list[str] | None, typer.Option("--tools", help="local tools offered (comma-separated); default: all")
]
_ToolServerOption = Annotated[
    list[str] | None,
    typer.Option("--tool-server", help="URL of a toolgym tool server whose tools to add"),
]
_DefaultTasksOption = Annotated[str, typer.Option(help="task set of a session that names none")]
_StrictArgumentsOption = Annotated[
    bool,
    typer.Option(
        "--strict-arguments",
        help="sessions' app tools take arguments of their declared types only: no coercion of a "
        "JSON number or boolean into a string parameter (MTU's apps coerce by default); a "
        "session's config.strict_arguments chooses for itself",
    ),
]
_ProtocolOption = Annotated[str, typer.Option(help="default action protocol: react, json, openai")]
_RewardOption = Annotated[str, typer.Option(help="default reward: task, answer, state")]
_TraceDirOption = Annotated[Path, typer.Option(help="where each session's traces are written")]
_TracesOption = Annotated[
    bool, typer.Option("--traces/--no-traces", help="write each episode's trace (--no-traces: keep none)")
]
_MaxTraceBytesOption = Annotated[
    int,
    typer.Option(
        min=0,
        help="the finished traces in --trace-dir add up to at most this many bytes: the oldest "
        "are deleted first (earlier runs' included)",
    ),
]
_MaxSessionsOption = Annotated[int, typer.Option(min=1, help="open sessions at most (HTTP and WebSocket)")]
_IdleTimeoutOption = Annotated[float, typer.Option(min=1, help="seconds before an idle session is closed")]
_DefaultLeaseOption = Annotated[
    float | None,
    typer.Option(
        min=1,
        help="lease every HTTP session whose client asks for none (RemoteToolEnv asks for its "
        "own): one its client has not renewed (any request naming it, or POST /leases) for this "
        "many seconds is closed; default: such sessions wait for --idle-timeout",
    ),
]
_MaxBodyBytesOption = Annotated[int, typer.Option(min=1024, help="largest request body or WebSocket message")]
_MaxSessionBytesOption = Annotated[
    int,
    typer.Option(
        min=1 << 20,
        help="each session's memory bound: half for the mock-app databases it keeps (a write "
        "past it is a tool_error), half for its episode's inputs and observations (a step past "
        "it is refused, 413 session_memory, until a reset)",
    ),
]
_LogLevelOption = Annotated[str, typer.Option(help="uvicorn log level")]
_StepsOnLoopOption = Annotated[
    bool,
    typer.Option(
        help="run every session's reset and step on the server's event loop instead of a "
        "worker thread: a thread hop less per call, but a slow tool (a remote tool server, an "
        "LLM user) or an expensive step of any client stalls every other session meanwhile; "
        "for trusted clients and fast tools"
    ),
]
_UserBaseUrlOption = Annotated[
    str | None,
    typer.Option(
        help="OpenAI-compatible base URL of a user LLM that sessions may choose (config user: "
        "llm) to play the user of tasks with a user scenario; needs --user-model"
    ),
]


def env_server(
    host: _HostOption = "127.0.0.1",
    port: _PortOption = 8100,
    token: TokenOption = None,
    tokens_file: TokensFileOption = None,
    allowed_host: AllowedHostOption = None,
    tasks: _TasksOption = None,
    tools: _ToolsOption = None,
    tool_server: _ToolServerOption = None,
    default_tasks: _DefaultTasksOption = "demo",
    strict_arguments: _StrictArgumentsOption = False,
    protocol: _ProtocolOption = "react",
    reward: _RewardOption = "task",
    trace_dir: _TraceDirOption = Path("runs/env-service"),
    traces: _TracesOption = True,
    max_trace_bytes: _MaxTraceBytesOption = 1 << 30,
    max_sessions: _MaxSessionsOption = 64,
    idle_timeout: _IdleTimeoutOption = 600.0,
    default_lease: _DefaultLeaseOption = None,
    max_body_bytes: _MaxBodyBytesOption = 1 << 20,
    max_session_bytes: _MaxSessionBytesOption = 64 << 20,
    log_level: _LogLevelOption = "info",
    steps_on_loop: _StepsOnLoopOption = False,
    user_base_url: _UserBaseUrlOption = None,
    user_model: UserModelOption = None,
    user_api_key_env: UserApiKeyEnvOption = None,
) -> None:
    """Serve ToolEnv sessions: OpenEnv's /reset, /step, /state, /schema and /ws (GenericEnvClient works
    unchanged), server-side traces."""
    from rich.console import Console

    from toolgym.envs.service.catalog import ServiceError, SessionConfig
    from toolgym.errors import ToolgymError
    from toolgym.http import Credentials, InsecureBindError, bind_socket, check_bind

    console = Console(stderr=True, soft_wrap=True)  # an error is one line, also when piped
    user_llm = None
    try:
        credentials = Credentials.of(token, tokens_file)
        check_bind(host, credentials)
        user_llm = _open_user_llm(user_base_url, user_model, user_api_key_env)
        defaults = SessionConfig(
            tasks=default_tasks,
            protocol=protocol,
            reward=reward,
            strict_arguments=strict_arguments or None,  # None: a session's default, coercion
        )
        catalog = _catalog(tasks, tools, tool_server, token, defaults, user_llm)
        from toolgym.envs.service.app import create_app  # the server's modules load when it starts

        bind_socket(host, port).close()  # a port in use: one line now, not uvicorn's log after start-up
    except (InsecureBindError, ImportError, ServiceError, ToolgymError, ValueError, OSError) as exc:
        _refuse_start(console, exc, user_llm)
    raise_file_limit()
    app = create_app(
        catalog,
        trace_dir=trace_dir if traces else None,
        max_trace_bytes=max_trace_bytes,
        default_lease_s=default_lease,
        token=credentials,
        max_sessions=max_sessions,
        idle_timeout_s=idle_timeout,
        max_body_bytes=max_body_bytes,
        max_session_bytes=max_session_bytes,
        steps_on_loop=steps_on_loop,
        host=host,
        allowed_hosts=tuple(allowed_host or ()),
    )
    _announce(console, host, port, catalog, trace_dir if traces else None, max_trace_bytes)
    _serve(app, host, port, log_level, max_body_bytes, user_llm)


def _catalog(
    tasks: list[Path] | None,
    tools: list[str] | None,
    tool_server: list[str] | None,
    token: str | None,
    defaults: SessionConfig,
    user_llm: UserLLM | None,
) -> Catalog:
    """The sessions' catalog: the bundled task sets and `--tasks`, local and remote tools."""
    from toolgym.envs.service.catalog import Catalog
    from toolgym.toolservers.commands import names_option

    return Catalog.build(
        task_files=tasks or (),
        tool_names=names_option(tools),
        tool_servers=tool_server or (),
        token=token,
        defaults=defaults,
        user_llm=user_llm,
    )


def _refuse_start(console: Console, exc: BaseException, user_llm: object) -> NoReturn:
    """The one line that says why the service does not start; exit code 2."""
    from rich.markup import escape

    console.print(f"[red]cannot start the env service:[/red] {escape(str(exc))}")
    _close(user_llm)
    raise typer.Exit(code=2) from None


def _announce(
    console: Console, host: str, port: int, catalog: Catalog, trace_dir: Path | None, max_trace_bytes: int
) -> None:
    """The banner: where the service listens, its task sets, where its traces go."""
    shown = f"[{host}]" if ":" in host else host
    console.print(
        f"toolgym env service on http://{shown}:{port}  task sets: {', '.join(sorted(catalog.task_paths))}; "
        + (
            f"traces in {trace_dir}/ (at most {max_trace_bytes} bytes)"
            if trace_dir is not None
            else "no traces"
        )
    )


def _serve(app: ASGIApp, host: str, port: int, log_level: str, max_body_bytes: int, user_llm: object) -> None:
    """Run the app until stopped, under the service's uvicorn settings; the user LLM is closed after."""
    import uvicorn

    from toolgym.envs.service.app import UVICORN_SETTINGS
    from toolgym.http import uvicorn_config

    try:  # the toolkit's uvicorn settings: a connection whose headers trickle in is closed
        config = uvicorn_config(
            app,
            host=host,
            port=port,
            log_level=log_level,
            ws_max_size=max_body_bytes,
            timeout_graceful_shutdown=5,
            **UVICORN_SETTINGS,
        )
        uvicorn.Server(config).run()
    finally:
        _close(user_llm)


def raise_file_limit() -> int | None:
    """The process's soft limit on open files raised to its hard limit, where the OS lets it (a
    session's connection and, while a call writes it, its trace each take a descriptor; a shell's
    `ulimit -n 1024` would refuse the server's 1000th connection). Returns the soft limit now
    (None where there is no such limit to read)."""
    try:
        import resource
    except ImportError:  # not a POSIX system
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # an unlimited hard limit: as many as macOS takes for the soft one (Linux's hard is finite)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 16)
    if soft != resource.RLIM_INFINITY and soft < target:
        with contextlib.suppress(ValueError, OSError):  # the OS refuses: keep what there is
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def _open_user_llm(base_url: str | None, model: str | None, api_key_env: str | None) -> UserLLM | None:
    """The operator's user LLM, or None; a half-given or unusable one is a ValueError (the server
    does not start)."""
    if not wants_user_llm(base_url, model, api_key_env):  # a UserOptionsError is a ValueError
        return None
    assert base_url is not None and model is not None
    if _user_llm_opener is None:
        raise ValueError("no user LLM client is registered with this command")
    return _user_llm_opener(base_url, model, api_key_env)


def _close(user_llm: object) -> None:
    close = getattr(user_llm, "close", None)
    if callable(close):
        close()


def register(app: typer.Typer, *, user_llm: UserLLMOpener | None = None) -> None:
    """Add env-server to the toolgym CLI; `user_llm` opens the live user LLM of
    `--user-base-url ... --user-model ...`."""
    global _user_llm_opener
    _user_llm_opener = user_llm
    app.command(name="env-server")(env_server)
