"""The tool server: one FastAPI app, three faces over one `ToolRuntime`.

    app = create_app(default_toolset(), ServerConfig(tools=["Calculator", "OCR"]))
    with ServerThread(app) as url:          # uvicorn on 127.0.0.1, ephemeral port, background thread
        ...                                 # native API at url/v1, AgentLego at url/, MCP at url/mcp

`serve(config)` runs it in the foreground (what `toolgym serve` does).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

import uvicorn
from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp

from toolgym import http
from toolgym.errors import ErrorKind
from toolgym.tools import BaseTool, ToolSet
from toolgym.toolservers.mcp_sdk import mcp_problem

from .agentlego import agentlego_router, agentlego_routes
from .config import ServerConfig, is_loopback
from .http import error_body, json_response, render_error
from .native import call_route, native_router, toolgym_version
from .providers import ToolProvider, from_toolset
from .runtime import ToolRuntime

logger = logging.getLogger(__name__)

PUBLIC_PATHS = frozenset({"/v1/health", "/v1/ready", "/v1/version", "/", "/openapi.json"})
# the request body limit beyond any tool's own (multipart framing, JSON envelope)
BODY_SLACK = 64 * 1024


def _providers(tools: ToolSet | Iterable[BaseTool] | Sequence[ToolProvider]) -> list[ToolProvider]:
    items = list(tools)
    if all(isinstance(i, ToolProvider) for i in items):
        return items  # type: ignore[return-value]
    if any(isinstance(i, ToolProvider) for i in items):
        raise TypeError("pass tools or providers, not a mix")
    return from_toolset(items)  # type: ignore[arg-type]


async def _http_error(_: Request, exc: HTTPException) -> Response:
    """Errors the framework raises itself (no such route, a broken multipart body) in the native
    envelope, with FastAPI's `detail` kept for clients that read it."""
    kind = ErrorKind.ARGUMENT_ERROR if exc.status_code < 500 else ErrorKind.INFRA_ERROR
    detail = str(exc.detail)
    headers = dict(exc.headers) if exc.headers else None
    return json_response({**error_body(kind.value, detail), "detail": detail}, exc.status_code, headers)


def create_app(
    tools: ToolSet | Iterable[BaseTool] | Sequence[ToolProvider],
    config: ServerConfig | None = None,
    *,
    runtime: ToolRuntime | None = None,
    unix_socket: bool = False,
) -> FastAPI:
    """The server app for `tools` (tools, a ToolSet, or providers that build tools per device);
    `unix_socket`: it listens on a unix socket, which no browser reaches (any Host is answered)."""
    config = config or ServerConfig()
    runtime = runtime or ToolRuntime(_providers(tools), config)
    mcp_endpoint: Callable[..., Any] | None = None
    mcp_lifespan: AbstractAsyncContextManager[None] | None = None
    if config.mcp:
        mcp_endpoint, mcp_lifespan = _mcp_face(runtime, config.title)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if mcp_lifespan is not None:
                await stack.enter_async_context(mcp_lifespan)
            stack.push_async_callback(runtime.aclose)
            try:
                await runtime.start()
            except Exception as exc:  # kept for ServerThread's error message; uvicorn logs it too
                runtime.startup_error = f"{type(exc).__name__}: {exc}"
                raise
            yield

    app = FastAPI(
        title=f"{config.title} native API",
        version=toolgym_version(),
        # /openapi.json belongs to the AgentLego face; FastAPI's own spec of /v1 lives beside it
        openapi_url="/v1/openapi.json",
        docs_url="/v1/docs",
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.runtime = runtime
    app.add_exception_handler(HTTPException, _http_error)  # type: ignore[arg-type]
    # the call endpoints first: routing is a linear scan and calls are the traffic
    app.router.routes.append(call_route(runtime))
    if config.agentlego:
        app.router.routes.extend(agentlego_routes(runtime))
    app.include_router(native_router(runtime))
    if mcp_endpoint is not None:
        app.router.routes.append(Route("/mcp", endpoint=mcp_endpoint, methods=["GET", "POST", "DELETE"]))
    if config.agentlego:
        app.include_router(agentlego_router(runtime, config.title))
    limit = max((e.config.max_request_bytes for e in runtime.entries.values()), default=1 << 20)
    token = None if config.token is None else config.token.get_secret_value()
    exposure = http.Exposure(
        host=None if unix_socket else config.host,
        credentials=http.Credentials.of(token),
        allowed_hosts=tuple(config.allowed_hosts),
        public_paths=PUBLIC_PATHS,
        upload_paths=_upload_path if config.agentlego else _file_upload_path,
        max_body_bytes=limit + BODY_SLACK,
        body_timeout_s=config.body_timeout_s,
    )
    http.secure(app, exposure, render_error)
    return app


def _mcp_face(
    runtime: ToolRuntime, title: str
) -> tuple[Callable[..., Any], AbstractAsyncContextManager[None] | None]:
    """The /mcp endpoint and the context its lifespan enters. Without a usable MCP SDK (the `mcp`
    extra; a 1.x beside OpenEnv 0.10) the endpoint answers 501 with the reason, and the other
    faces serve as before."""
    problem = mcp_problem()
    if problem is None:
        from .mcp_face import build_mcp  # the SDK's imports: only for a server that serves MCP

        return build_mcp(runtime, title)
    logger.warning("no MCP at /mcp: %s", problem)

    async def unavailable(request: Request) -> Response:
        return json_response({**error_body(ErrorKind.INFRA_ERROR.value, problem), "detail": problem}, 501)

    return unavailable, None


def _file_upload_path(path: str) -> bool:
    return path == "/v1/files" or path.startswith("/v1/files/")


def _upload_path(path: str) -> bool:
    """Bodies other than JSON: file uploads, and the forms AgentLego's RemoteTool posts to /{Tool}."""
    return _file_upload_path(path) or not path.startswith(("/v1/", "/mcp"))


def _header_timeout(app: ASGIApp) -> float:
    """The app's own header deadline when it is a tool server app, else the toolkit's."""
    config = getattr(getattr(getattr(app, "state", None), "runtime", None), "config", None)
    return float(getattr(config, "header_timeout_s", http.DEFAULT_HEADER_TIMEOUT_S))


def uvicorn_config(app: ASGIApp, **kwargs: Any) -> uvicorn.Config:
    """The toolkit's uvicorn settings (the header deadline included) for a tool server app."""
    kwargs.setdefault("header_timeout_s", _header_timeout(app))
    return http.uvicorn_config(app, **kwargs)


class ServerThread(http.ServerThread):
    """Run an app with uvicorn in a background thread (tests, benchmarks, embedding a server in a
    process). Binds `host:port` (port 0: an ephemeral one) before starting; `url` is known as
    soon as the object exists and the server answers once `start()` returns."""

    what = "tool server"

    def __init__(
        self, app: ASGIApp, host: str = "127.0.0.1", port: int = 0, *, startup_timeout_s: float = 60
    ) -> None:
        super().__init__(
            app, host, port, startup_timeout_s=startup_timeout_s, header_timeout_s=_header_timeout(app)
        )

    def failure(self) -> str:
        runtime = getattr(getattr(self.app, "state", None), "runtime", None)
        return getattr(runtime, "startup_error", None) or super().failure()


def serve(
    tools: ToolSet | Iterable[BaseTool] | Sequence[ToolProvider], config: ServerConfig, **uvicorn_kwargs: Any
) -> None:
    """Run the server in the foreground until interrupted."""
    if not is_loopback(config.host) and config.token is None:  # ServerConfig checks too; never skip it
        raise ValueError("a server bound beyond loopback needs a bearer token")
    app = create_app(tools, config)
    sock = http.bind_socket(config.host, config.port)
    uvicorn.Server(uvicorn_config(app, **uvicorn_kwargs)).run(sockets=[sock])
