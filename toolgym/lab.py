"""Servers in containers or sandboxed processes, for one run or for a lab node.

Python API:

    from toolgym.lab import Lab, InfraRetry

    with Lab.start("docker", tools=["Calculator", "OCR"]) as lab:   # or "process"; or Lab.attach(...)
        env = lab.env(tasks)                # ToolEnv: remote tools, mock apps in server sessions
        result = run_episode(env, InfraRetry(OracleAgent(env.protocol)), task)

`Lab.start` runs a mock service (and a tool server when `tools` is given) through a backend,
waits for health and supervises them: a server that dies or hangs during an episode is
restarted, the step that met it shows `infra_error`, and the episode goes on. `Lab.attach`
uses servers someone else runs (a lab node's compose stack).

Commands (`toolgym lab ...`):

* `build [IMAGE ...]`: build the images (base from mmdebstrap, host-built wheels, offline)
* `images`: the toolgym images and whether they are current
* `up --backend docker|process`: start a mock service and a tool server, print their endpoints
* `mock-server`: the mock-app session service (what the mockserver image runs)
* `tool-server --uds PATH`: the tool server on a unix socket (servers without a network)

`toolgym serve --backend docker|process` runs `toolgym serve` through a backend
(`serve_with_backend`).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.console import Console

from toolgym.actions import Action
from toolgym.envs.rewards import Episode, RewardFn
from toolgym.envs.tool_env import ToolEnv
from toolgym.errors import ErrorKind, InfraError
from toolgym.protocols.base import RawOutput
from toolgym.tasks import Task, TaskSet
from toolgym.tools import DEFAULT_CLOCK, ToolSet
from toolgym.toolservers.commands import names_option
from toolgym.world import World

if TYPE_CHECKING:
    from toolgym.agents import Agent
    from toolgym.mocks.service.client import MockServiceClient, RemoteMockWorld
    from toolgym.toolservers.backends.base import Limits, ServerBackend, ServerHandle, ServerSpec
    from toolgym.toolservers.backends.supervisor import Supervisor

BackendName = Literal["docker", "process"]
console = Console(stderr=True)


# ---- Python API --------------------------------------------------------------------------------
def make_backend(backend: BackendName | ServerBackend, *, build: bool = False) -> ServerBackend:
    """A backend by name: "docker" (containers; `build` builds missing images first) or
    "process" (sandboxed local processes)."""
    from toolgym.toolservers.backends.base import ServerBackend

    if isinstance(backend, ServerBackend):
        return backend
    if backend == "docker":
        from toolgym.toolservers.backends.container import ContainerBackend

        return ContainerBackend(build=build)
    if backend == "process":
        from toolgym.toolservers.backends.process import ProcessBackend

        return ProcessBackend()
    raise ValueError(f"unknown backend {backend!r}: docker or process")


@dataclass(frozen=True)
class Endpoint:
    """Where a server answers: a URL, its token, and a unix socket path if it has no TCP port."""

    url: str
    token: str | None = None
    uds: str | None = None


def infra_error_count(episode: Episode) -> int:
    return sum(1 for s in episode.steps for o in s.observations if o.error_kind is ErrorKind.INFRA_ERROR)


def infra_aware(reward_fn: RewardFn) -> RewardFn:
    """`reward_fn` plus `infra_errors` (the steps lost to the infrastructure) among the scores when
    there were any: the reward itself never counts them, evaluations can tell such episodes apart."""

    def reward(task: Task, episode: Episode) -> float | Mapping[str, float]:
        result = reward_fn(task, episode)
        lost = infra_error_count(episode)
        if not lost:
            return result
        scores = dict(result) if isinstance(result, Mapping) else {"reward": float(result)}
        scores["infra_errors"] = float(lost)
        return scores

    return reward


class LabEnv(ToolEnv):
    """A ToolEnv whose mock-app tasks run in sessions of a mock service (one RemoteMockWorld per
    app set, reset per episode) and whose default reward scores their state on the server."""

    def __init__(
        self,
        tools: ToolSet | None = None,
        tasks: TaskSet | Sequence[Task] | None = None,
        *,
        mock_client: MockServiceClient | None = None,
        on_infra_error: Callable[[InfraError], None] | None = None,
        reward_fn: RewardFn | None = None,
        **kwargs: Any,
    ) -> None:
        from toolgym.mocks.service.client import remote_task_scores

        super().__init__(tools, tasks, reward_fn=infra_aware(reward_fn or remote_task_scores), **kwargs)
        self.mock_client = mock_client
        self.on_infra_error = on_infra_error

    def _world_for(self, task: Task) -> World | None:
        if self.mock_client is None or not task.apps or getattr(self, "_fixed_world", False):
            return super()._world_for(task)
        key = tuple(task.apps)
        if key not in self._worlds:
            self._worlds[key] = self.mock_client.world(
                key, seed=task.seed, clock=task.clock, on_infra_error=self.on_infra_error
            )
        return self._worlds[key]


class InfraRetry:
    """Wraps an agent: after a step that met an infra failure, the same output is sent again
    (up to `max_retries` times in a row) without asking the agent, so the agent's episode is the
    one it would have had without the failure. The failed step stays in the trace."""

    def __init__(self, agent: Agent, *, max_retries: int = 2) -> None:
        self.agent = agent
        self.name = agent.name
        self.max_retries = max_retries
        self._last: RawOutput | Action | None = None
        self._retries = 0

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        self._last, self._retries = None, 0
        self.agent.start(task, observation, info)

    def act(self, observation: str, info: dict[str, Any]) -> RawOutput | Action:
        infra = ErrorKind.INFRA_ERROR.value in (info.get("error_kinds") or [])
        if infra and self._last is not None and self._retries < self.max_retries:
            self._retries += 1
            return self._last
        self._retries = 0
        self._last = self.agent.act(observation, info)
        return self._last


@dataclass
class Lab:
    """The servers of a run: started through a backend (`Lab.start`, stopped by `close`) or
    attached to (`Lab.attach`)."""

    mocks: Endpoint | None = None
    tools: Endpoint | None = None
    backend: ServerBackend | None = None
    handles: dict[str, ServerHandle] = field(default_factory=dict)
    supervisors: dict[str, Supervisor] = field(default_factory=dict)
    request_timeout_s: float = 30.0
    tool_call_timeout_s: float | None = None
    _mock_client: MockServiceClient | None = None

    @classmethod
    def start(
        cls,
        backend: BackendName | ServerBackend = "docker",
        *,
        mocks: bool = True,
        tools: Sequence[str] | bool = False,
        tool_apps: Sequence[str] = (),
        network: bool = False,
        limits: Limits | None = None,
        build: bool = False,
        mock_idle_timeout_s: float = 900.0,
        request_timeout_s: float = 30.0,
        tool_call_timeout_s: float | None = None,
    ) -> Lab:
        """Start a mock service (`mocks`) and a tool server (`tools`: True for every tool, or
        names) and wait until both are healthy. `network=False` gives them no network at all
        (unix sockets); `tool_call_timeout_s` is how long a tool call may hang before it is an
        infra failure (default: the tool's own timeout plus a margin)."""
        from toolgym.toolservers.backends.base import mock_server_spec, tool_server_spec

        specs: list[ServerSpec] = []
        if mocks:
            specs.append(mock_server_spec(network=network, limits=limits, idle_timeout_s=mock_idle_timeout_s))
        if tools:
            names = None if tools is True else list(tools)
            specs.append(tool_server_spec(tools=names, apps=tool_apps, network=network, limits=limits))
        runner = make_backend(backend, build=build)
        lab = cls(
            backend=runner, request_timeout_s=request_timeout_s, tool_call_timeout_s=tool_call_timeout_s
        )
        try:
            for spec in specs:
                lab._launch(spec)
        except BaseException:
            lab.close()
            raise
        return lab

    def _launch(self, spec: ServerSpec) -> None:
        from toolgym.toolservers.backends.supervisor import Supervisor

        assert self.backend is not None
        handle = self.backend.start(spec)
        self.handles[spec.kind] = handle
        endpoint = Endpoint(handle.url, handle.token, handle.uds)
        if spec.kind == "mocks":
            self.mocks = endpoint
        else:
            self.tools = endpoint
        self.supervisors[spec.kind] = Supervisor(self.backend, handle, on_restart=self._moved)

    def _moved(self, handle: ServerHandle) -> None:
        """After a restart: clients follow the server if its address changed."""
        if handle.spec.kind == "mocks":
            self.mocks = Endpoint(handle.url, handle.token, handle.uds)
            if self._mock_client is not None and self._mock_client.url.rstrip("/") != handle.url.rstrip("/"):
                self._mock_client.url = handle.url
        else:
            self.tools = Endpoint(handle.url, handle.token, handle.uds)

    @classmethod
    def attach(
        cls,
        *,
        mocks_url: str | None = None,
        tools_url: str | None = None,
        token: str | None = None,
        mocks_token: str | None = None,
        tools_token: str | None = None,
        request_timeout_s: float = 30.0,
        tool_call_timeout_s: float | None = None,
    ) -> Lab:
        """Servers that run elsewhere (a lab node): nothing is started or stopped here."""
        return cls(
            mocks=Endpoint(mocks_url, mocks_token or token) if mocks_url else None,
            tools=Endpoint(tools_url, tools_token or token) if tools_url else None,
            request_timeout_s=request_timeout_s,
            tool_call_timeout_s=tool_call_timeout_s,
        )

    # ---- clients ------------------------------------------------------------------------------
    def recovery_hook(self, kind: str) -> Callable[[InfraError], None] | None:
        """What a client calls on an infra failure of the `kind` server ("mocks", "tools"): its
        supervisor's check-and-restart (None for attached servers: nothing to restart here)."""
        sup = self.supervisors.get(kind)
        if sup is None:
            return None

        def recover(exc: InfraError) -> None:
            sup.recover(exc)

        return recover

    @property
    def mock_client(self) -> MockServiceClient:
        from toolgym.mocks.service.client import MockServiceClient

        if self.mocks is None:
            raise RuntimeError("this lab has no mock service")
        if self._mock_client is None:
            self._mock_client = MockServiceClient(
                self.mocks.url, token=self.mocks.token, uds=self.mocks.uds, timeout_s=self.request_timeout_s
            )
        return self._mock_client

    def world(
        self, apps: Sequence[str], *, seed: int = 0, clock: datetime = DEFAULT_CLOCK
    ) -> RemoteMockWorld:
        """A mock world in a new session of the lab's mock service."""
        return self.mock_client.world(
            apps, seed=seed, clock=clock, on_infra_error=self.recovery_hook("mocks")
        )

    def toolset(self, names: Sequence[str] | None = None) -> ToolSet:
        """The tool server's tools (all, or `names`) as a ToolSet, supervised when started here."""
        import httpx

        from toolgym.toolservers.clients.remote import RemoteToolSet

        if self.tools is None:
            raise RuntimeError("this lab has no tool server")
        client = None
        if self.tools.uds:
            client = httpx.Client(
                base_url=self.tools.url,
                headers={"Authorization": f"Bearer {self.tools.token}"} if self.tools.token else {},
                timeout=httpx.Timeout(60.0, connect=5.0),
                transport=httpx.HTTPTransport(uds=self.tools.uds),
            )
        remote = RemoteToolSet(
            self.tools.url,
            token=self.tools.token,
            tools=names,
            call_timeout_s=self.tool_call_timeout_s,
            client=client,
        )
        sup = self.supervisors.get("tools")
        return sup.wrap(remote) if sup is not None else remote

    def env(
        self,
        tasks: TaskSet | Sequence[Task] | None = None,
        *,
        tools: ToolSet | None = None,
        **kwargs: Any,
    ) -> LabEnv:
        """A ToolEnv on this lab: `tools` default to the tool server's (if any), mock-app tasks
        get sessions of the mock service."""
        if tools is None and self.tools is not None:
            tools = self.toolset()
        return LabEnv(
            tools,
            tasks,
            mock_client=self.mock_client if self.mocks is not None else None,
            on_infra_error=self.recovery_hook("mocks"),
            **kwargs,
        )

    # ---- lifecycle ----------------------------------------------------------------------------
    def restarts(self) -> dict[str, int]:
        return {kind: len(sup.events) for kind, sup in self.supervisors.items()}

    def close(self) -> None:
        if self._mock_client is not None:
            self._mock_client.close()
            self._mock_client = None
        if self.backend is not None:
            for handle in self.handles.values():
                self.backend.stop(handle)
            self.handles.clear()

    def __enter__(self) -> Lab:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


# ---- commands ----------------------------------------------------------------------------------
lab_app = typer.Typer(help="Containers and lab-node hosting: images, backends, the mock service.")


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
        app = create_app(catalog(names_option(apps) or ()), cfg)
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
    from toolgym.toolservers.backends.base import BackendError

    names = names_option(tools)
    try:
        lab = Lab.start(
            backend,  # type: ignore[arg-type]
            mocks=mocks,
            tools=(True if names == ["all"] else names) if names else False,
            network=network,
            build=build_images,
        )
    except (BackendError, ValueError) as exc:
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
    from toolgym.toolservers.backends.base import BackendError, Limits, Mount, ServerSpec, new_token
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
        runner = make_backend(backend)  # type: ignore[arg-type]
        handle = runner.start(spec)
    except (BackendError, ValueError) as exc:
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
