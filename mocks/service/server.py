"""Running the mock service: `serve` blocks (the container and process backends run it through
`toolgym lab mock-server`); `ThreadedServer` runs it inside this process on an ephemeral
loopback port (tests, benchmarks, notebooks)."""

from __future__ import annotations

import ipaddress
import os
import socket
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import uvicorn

from toolgym.mocks.service.app import ServiceConfig, create_app

TOKEN_ENV = "TOOLGYM_TOKEN"


class InsecureBindError(ValueError):
    """A bind address other than loopback without a token."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Servers bind 127.0.0.1 by default; anything reachable from outside needs a token."""
    if not is_loopback(host) and not token:
        raise InsecureBindError(
            f"refusing to serve on {host} without a token: set {TOKEN_ENV} or pass --token "
            "(loopback addresses need none)"
        )


def serve(
    config: ServiceConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    uds: Path | None = None,
    log_level: str = "info",
) -> None:
    """Serve until interrupted. With `uds` the server listens on that unix socket only."""
    if uds is None:
        check_bind(host, config.token)
    app = create_app(config)
    kwargs: dict[str, Any] = {"uds": str(uds)} if uds is not None else {"host": host, "port": port}
    uvicorn.run(app, log_level=log_level, access_log=False, timeout_graceful_shutdown=5, **kwargs)


class ThreadedServer:
    """`with ThreadedServer(create_app()) as url:` a real uvicorn server on 127.0.0.1 (an
    ephemeral port) in a background thread; stopped and joined on exit."""

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 0) -> None:
        if not is_loopback(host):
            raise InsecureBindError("ThreadedServer binds loopback addresses only")
        self._sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, port))
        self.host, self.port = host, self._sock.getsockname()[1]
        self.server = uvicorn.Server(
            uvicorn.Config(
                app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=2
            )
        )
        self._thread = threading.Thread(target=self._run, name=f"uvicorn:{self.port}", daemon=True)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def _run(self) -> None:
        self.server.run(sockets=[self._sock])

    def start(self, timeout_s: float = 10.0) -> str:
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the threaded uvicorn server did not start")
            time.sleep(0.005)
        return self.url

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self._sock.close()

    def __enter__(self) -> str:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def token_from_env() -> str | None:
    return os.environ.get(TOKEN_ENV) or None
