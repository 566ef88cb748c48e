"""Where a run's servers live: a mock service and a tool server started through a host
(containers or sandboxed processes) and supervised, or attached to on a lab node.

    from toolgym.toolservers.hosting.lab import LabServers

    with LabServers.start("process", tools=["Calculator"]) as servers:
        tools = servers.toolset()           # RemoteToolSet, restarted on failure
        world = servers.world(["banking"])  # a RemoteMockWorld in a session of the mock service

`toolgym.envs.lab.Lab` is the same with `env()`: a ToolEnv on these servers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Literal, Self

from toolgym.errors import InfraError
from toolgym.tools import DEFAULT_CLOCK, ToolSet

if TYPE_CHECKING:
    from toolgym.mocks.service.client import MockServiceClient, RemoteMockWorld
    from toolgym.toolservers.hosting.base import Limits, ServerHandle, ServerHost, ServerSpec
    from toolgym.toolservers.hosting.supervisor import Supervisor

HostKind = Literal["docker", "process"]


def make_host(backend: HostKind | ServerHost, *, build: bool = False) -> ServerHost:
    """A server host by name: "docker" (containers; `build` builds missing images first) or
    "process" (sandboxed local processes)."""
    from toolgym.toolservers.hosting.base import ServerHost

    if isinstance(backend, ServerHost):
        return backend
    if backend == "docker":
        from toolgym.toolservers.hosting.container import ContainerHost

        return ContainerHost(build=build)
    if backend == "process":
        from toolgym.toolservers.hosting.process import ProcessHost

        return ProcessHost()
    raise ValueError(f"unknown backend {backend!r}: docker or process")


@dataclass(frozen=True)
class Endpoint:
    """Where a server answers: a URL, its token, and a unix socket path if it has no TCP port."""

    url: str
    token: str | None = None
    uds: str | None = None


@dataclass
class LabServers:
    """The servers of a run: started through a host (`start`, stopped by `close`) or attached to
    (`attach`). `toolgym.envs.lab.Lab` adds the env on top."""

    mocks: Endpoint | None = None
    tools: Endpoint | None = None
    backend: ServerHost | None = None
    handles: dict[str, ServerHandle] = field(default_factory=dict)
    supervisors: dict[str, Supervisor] = field(default_factory=dict)
    request_timeout_s: float = 30.0
    tool_call_timeout_s: float | None = None
    _mock_client: MockServiceClient | None = None

    @classmethod
    def start(
        cls,
        backend: HostKind | ServerHost = "docker",
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
    ) -> Self:
        """Start a mock service (`mocks`) and a tool server (`tools`: True for every tool, or
        names) and wait until both are healthy. `network=False` gives them no network at all
        (unix sockets); `tool_call_timeout_s` is how long a tool call may hang before it is an
        infra failure (default: the tool's own timeout plus a margin)."""
        from toolgym.toolservers.hosting.base import mock_server_spec, tool_server_spec

        specs: list[ServerSpec] = []
        if mocks:
            specs.append(mock_server_spec(network=network, limits=limits, idle_timeout_s=mock_idle_timeout_s))
        if tools:
            names = None if tools is True else list(tools)
            specs.append(tool_server_spec(tools=names, apps=tool_apps, network=network, limits=limits))
        runner = make_host(backend, build=build)
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
        from toolgym.toolservers.hosting.supervisor import Supervisor

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
    ) -> Self:
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

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
