"""What every server backend shares: the spec of a server to run, the handle of a running one,
the `ServerHost` interface (start -> healthy handle, stop, restart, logs) and the health wait.

A server is a `toolgym` command line (`toolgym lab mock-server`, `toolgym serve ...`) run by a
backend: a Docker container (`ContainerHost`) or a sandboxed local process (`ProcessHost`).
A server whose tools need no network gets none: it listens on a unix socket in a directory the
backend shares with it. One that needs the network listens on TCP, published on 127.0.0.1 only.
"""

from __future__ import annotations

import importlib.util
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import httpx

ServerKind = Literal["mocks", "tools"]
TOKEN_ENV = "TOOLGYM_TOKEN"
SOCKET_NAME = "server.sock"
UDS_BASE_URL = "http://toolgym.sock"  # the host part is ignored over a unix socket


class HostingError(RuntimeError):
    """A backend could not do what was asked (no Docker daemon, an image missing, ...)."""


class ServerStartError(HostingError):
    """A server did not become healthy; the message ends with its last log lines."""


@dataclass(frozen=True)
class Mount:
    """A host directory inside the server, read-only unless said otherwise (model directories)."""

    source: Path
    target: str
    read_only: bool = True


@dataclass(frozen=True)
class Limits:
    """Resource limits; None leaves one unlimited. Containers get all of them (cgroups); the
    process backend maps memory and pids onto rlimits and cannot cap CPUs."""

    memory_mb: int | None = 2048
    cpus: float | None = 2.0
    pids: int | None = 256
    tmp_mb: int = 256  # the writable temp directory (tmpfs in containers)


@dataclass(frozen=True)
class ServerSpec:
    """A server to run: `argv` is the `toolgym` command line without the bind options (the
    backend adds `--host/--port` or `--uds` and passes the token in TOOLGYM_TOKEN)."""

    name: str
    kind: ServerKind
    argv: tuple[str, ...]
    network: bool = False  # the tools need the network: TCP on 127.0.0.1; else no network + unix socket
    limits: Limits = field(default_factory=Limits)
    env: Mapping[str, str] = field(default_factory=dict)
    mounts: tuple[Mount, ...] = ()
    gpus: tuple[str, ...] = ()  # device ids, containers only
    image: str | None = None  # containers: default per kind (toolgym/mockserver, toolgym/toolserver)
    token: str | None = None  # default: a fresh random token per server
    startup_timeout_s: float = 60.0
    health_path: str = "/health"  # answers 200 once the server can take calls
    publish: tuple[str, int] | None = None  # TCP only: host address and port (default 127.0.0.1, any port)

    @property
    def transport(self) -> Literal["tcp", "uds"]:
        return "tcp" if self.network else "uds"


def mock_server_spec(
    name: str = "mocks",
    *,
    max_sessions: int = 256,
    idle_timeout_s: float = 900.0,
    network: bool = False,
    limits: Limits | None = None,
    image: str | None = None,
) -> ServerSpec:
    """The mock-app session service (`toolgym lab mock-server`) as a server spec."""
    argv = ["lab", "mock-server", "--max-sessions", str(max_sessions)]
    argv += ["--idle-timeout", f"{idle_timeout_s:g}"]
    return ServerSpec(
        name=name, kind="mocks", argv=tuple(argv), network=network, limits=limits or Limits(), image=image
    )


def tool_server_spec(
    name: str = "tools",
    *,
    tools: Sequence[str] | None = None,
    apps: Sequence[str] = (),
    device: str | None = None,
    lazy: bool = False,
    network: bool = False,
    gpus: Sequence[str] = (),
    mounts: Sequence[Mount] = (),
    env: Mapping[str, str] | None = None,
    limits: Limits | None = None,
    image: str | None = None,
    publish: tuple[str, int] | None = None,
) -> ServerSpec:
    """The tool server as a server spec: `toolgym serve` on TCP when the tools need the network,
    else `toolgym lab tool-server` (the same server) on a unix socket."""
    argv = ["serve"] if network else ["lab", "tool-server"]
    if tools:
        argv += ["--tools", ",".join(tools)]
    if apps:
        argv += ["--apps", ",".join(apps)]
    if device:
        argv += ["--device", device]
    if lazy:
        argv.append("--lazy")
    return ServerSpec(
        name=name,
        kind="tools",
        argv=tuple(argv),
        network=network,
        limits=limits or Limits(),
        env=dict(env or {}),
        mounts=tuple(mounts),
        gpus=tuple(gpus),
        image=image,
        health_path="/v1/ready",  # 200 once every eagerly loaded tool is ready
        publish=publish,
    )


@dataclass
class ServerHandle:
    """A running server. `url` (and `uds` for a unix socket) is where clients reach it; both
    may change on restart (a new published port), so clients ask the handle again."""

    spec: ServerSpec
    backend: str
    url: str
    token: str
    ident: str  # container id or process id
    uds: str | None = None
    restarts: int = 0
    started_s: float = 0.0  # seconds from start() to healthy
    extra: dict[str, Any] = field(default_factory=dict)

    def http_client(self, timeout_s: float = 10.0) -> httpx.Client:
        transport = httpx.HTTPTransport(uds=self.uds) if self.uds else None
        return httpx.Client(
            base_url=self.url,
            headers={"authorization": f"Bearer {self.token}"},
            timeout=timeout_s,
            transport=transport,
        )


def new_token() -> str:
    return secrets.token_urlsafe(24)


def probe_health(
    url: str, *, uds: str | None = None, path: str = "/health", timeout_s: float = 2.0
) -> dict[str, Any] | None:
    """GET the health path once: its JSON answer when it is 200, else None."""
    transport = httpx.HTTPTransport(uds=uds) if uds else None
    try:
        with httpx.Client(base_url=url, timeout=timeout_s, transport=transport) as client:
            response = client.get(path)
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def wait_healthy(
    url: str,
    *,
    uds: str | None = None,
    path: str = "/health",
    timeout_s: float,
    alive: Callable[[], bool],
    logs: Callable[[], str],
    what: str,
    interval_s: float = 0.05,
) -> dict[str, Any]:
    """Poll the health path until it answers 200; fail early when the server dies, with its logs."""
    deadline = time.monotonic() + timeout_s
    while True:
        body = probe_health(url, uds=uds, path=path, timeout_s=min(2.0, timeout_s))
        if body is not None:
            return body
        if not alive():
            raise ServerStartError(f"{what} exited before it was healthy; last log lines:\n{logs()}")
        if time.monotonic() > deadline:
            raise ServerStartError(f"{what} not healthy after {timeout_s:g} s; last log lines:\n{logs()}")
        time.sleep(interval_s)


class ServerHost(ABC):
    """Runs servers. `start` returns once the server answers /health; `restart` brings a dead or
    hung server back (same handle, possibly a new url) and waits for health again."""

    name: str

    def __init__(self) -> None:
        self._handles: dict[str, ServerHandle] = {}

    @abstractmethod
    def start(self, spec: ServerSpec) -> ServerHandle: ...

    @abstractmethod
    def stop(self, handle: ServerHandle) -> None:
        """Stop the server and remove what start() made (container, socket dir)."""

    @abstractmethod
    def restart(self, handle: ServerHandle) -> ServerHandle: ...

    @abstractmethod
    def logs(self, handle: ServerHandle, tail: int = 200) -> str: ...

    @abstractmethod
    def kill(self, handle: ServerHandle) -> None:
        """Fault injection: kill the server abruptly; `restart` brings it back."""

    @abstractmethod
    def alive(self, handle: ServerHandle) -> bool:
        """Whether the server process or container is running (not whether it answers)."""

    def healthy(self, handle: ServerHandle, timeout_s: float = 2.0) -> bool:
        path = handle.spec.health_path
        return probe_health(handle.url, uds=handle.uds, path=path, timeout_s=timeout_s) is not None

    @property
    def handles(self) -> list[ServerHandle]:
        return list(self._handles.values())

    def close(self) -> None:
        """Stop every server this backend started."""
        for handle in list(self._handles.values()):
            self.stop(handle)

    def __enter__(self) -> ServerHost:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def toolgym_root() -> Path:
    """The directory holding the toolgym package: a source checkout (editable install) or
    site-packages. Found without importing the package face, which sits above this layer."""
    spec = importlib.util.find_spec("toolgym")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).resolve().parent.parent
