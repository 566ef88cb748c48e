"""Running the mock service: `serve` blocks (the container and process backends run it through
`toolgym lab mock-server`); `ThreadedServer` runs it inside this process on an ephemeral
loopback port (tests, benchmarks, notebooks)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import uvicorn

from toolgym.http import DEFAULT_HEADER_TIMEOUT_S, ServerThread, uvicorn_config

# their home was here
from toolgym.http import InsecureBindError as InsecureBindError
from toolgym.http import is_loopback as is_loopback
from toolgym.mocks.service.app import ServiceConfig, create_app

TOKEN_ENV = "TOOLGYM_TOKEN"


def serve(
    config: ServiceConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    uds: Path | None = None,
    log_level: str = "info",
) -> None:
    """Serve until interrupted. With `uds` the server listens on that unix socket only."""
    # the app's guards refuse a bind beyond loopback without a token (InsecureBindError)
    app = create_app(dataclasses.replace(config, host=None if uds is not None else host))
    kwargs: dict[str, Any] = {"uds": str(uds)} if uds is not None else {"host": host, "port": port}
    server_config = uvicorn_config(
        app,
        header_timeout_s=config.header_timeout_s,
        log_level=log_level,
        timeout_graceful_shutdown=5,
        **kwargs,
    )
    uvicorn.Server(server_config).run()


class ThreadedServer(ServerThread):
    """`with ThreadedServer(create_app()) as url:` a real uvicorn server on 127.0.0.1 (an
    ephemeral port) in a background thread; stopped and joined on exit."""

    what = "the threaded mock service"

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 0) -> None:
        if not is_loopback(host):
            raise InsecureBindError("ThreadedServer binds loopback addresses only")
        config = getattr(getattr(app, "state", None), "config", None)
        header_timeout_s = getattr(config, "header_timeout_s", DEFAULT_HEADER_TIMEOUT_S)
        super().__init__(
            app,
            host,
            port,
            startup_timeout_s=10.0,
            header_timeout_s=header_timeout_s,
            timeout_graceful_shutdown=2,
        )
