"""The HTTP toolkit both servers share (the tool server and the mock-app service).

- JSON out (`json_bytes`, `json_response`) and strict JSON in (`parse_json`): a body that is not
  UTF-8, not JSON, nested past `MAX_JSON_DEPTH`, with NaN, Infinity or numbers past what Python
  converts, is a `BodyError` (a typed 4xx for the client), never a 500.
- ASGI middleware: `BearerAuth` (401), `BodyLimit` (413), `BodyTimeout` (408 for a body that
  arrives too slowly), and `StrictJSONRoute`, FastAPI's documented custom-route hook, so that
  FastAPI endpoints parse bodies with `parse_json` too.
- Serving: `uvicorn_config` (with `header_timeout_s`: a connection that does not finish its
  request headers in time is closed), `bind_socket`, `is_loopback`, `ServerThread`.

Each server keeps its own error envelope: an `ErrorRenderer` writes the body of each
`HttpProblem` the toolkit refuses a request for.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import math
import re
import socket
import threading
import time
from collections.abc import Callable, Coroutine, Iterable
from enum import StrEnum
from typing import Any

import uvicorn
from fastapi import Request
from fastapi.routing import APIRoute
from pydantic_core import from_json
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# deeper JSON is refused: it has no use in a tool call, and recursive code downstream (validation,
# canonical JSON, the encoder) must never meet a RecursionError
MAX_JSON_DEPTH = 64
DEFAULT_HEADER_TIMEOUT_S = 15.0
DEFAULT_BODY_TIMEOUT_S = 120.0


class HttpProblem(StrEnum):
    """Why the toolkit refused a request; each server names it in its own error envelope."""

    UNAUTHORIZED = "unauthorized"  # 401
    TOO_LARGE = "too_large"  # 413
    SLOW_BODY = "slow_body"  # 408
    MALFORMED = "malformed"  # 400/422: not strict JSON


HTTP_PROBLEM_STATUS: dict[HttpProblem, int] = {
    HttpProblem.UNAUTHORIZED: 401,
    HttpProblem.TOO_LARGE: 413,
    HttpProblem.SLOW_BODY: 408,
    HttpProblem.MALFORMED: 422,
}

ErrorRenderer = Callable[[HttpProblem, str], dict[str, Any]]
"""(problem, message) -> the server's JSON error body"""


class BodyError(ValueError):
    """A request body that is not the strict JSON the servers accept; `str(exc)` says why."""


# ---- JSON out and in -------------------------------------------------------------------------------
def json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def json_response(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json_bytes(value), status_code=status, media_type="application/json", headers=headers)


# a number literal that may overflow a float to inf: an exponent of 3+ digits, or 309+ digits
_MAY_OVERFLOW = re.compile(rb"[0-9][eE]\+?[0-9]{3}|[0-9]{309}")


def parse_json(body: bytes | str) -> Any:
    """`body` as JSON, strictly: UTF-8, no NaN or Infinity (nor numbers that overflow to them),
    no integer past Python's digit limit, at most MAX_JSON_DEPTH levels. Raises BodyError."""
    try:
        # pydantic-core's parser: no recursion of its own to blow, and it refuses invalid UTF-8,
        # lone surrogates and the NaN/Infinity words
        value = from_json(body, allow_inf_nan=False)
    except ValueError as exc:
        raise BodyError(f"request body is not JSON: {exc}") from None
    raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    if _MAY_OVERFLOW.search(raw) or raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH:
        _check_tree(value)
    return value


def _check_tree(value: Any) -> None:
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise BodyError("request body is not JSON: a number out of range")
        if isinstance(item, (dict, list)):
            if depth >= MAX_JSON_DEPTH:
                raise BodyError(f"request body nests deeper than {MAX_JSON_DEPTH} levels")
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)


async def read_body(request: Request, limit: int) -> bytes | None:
    """The request body, or None when it is larger than `limit` (checked against the declared
    length first, so an oversized upload is refused before it is read)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


class _StrictRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            try:
                self._json = parse_json(body)
            except BodyError as exc:
                # FastAPI answers a JSONDecodeError with its validation error (the server's 422)
                raise json.JSONDecodeError(str(exc), body.decode("utf-8", "replace"), 0) from None
        return self._json


class StrictJSONRoute(APIRoute):
    """FastAPI endpoints whose JSON bodies go through `parse_json` (`APIRouter(route_class=...)`
    or `app.router.route_class = StrictJSONRoute` before the routes are declared)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(_StrictRequest(request.scope, request.receive))

        return strict


# ---- middleware ------------------------------------------------------------------------------------
async def send_error(
    send: Send,
    render: ErrorRenderer,
    problem: HttpProblem,
    message: str,
    headers: Iterable[tuple[bytes, bytes]] = (),
) -> None:
    payload = json_bytes(render(problem, message))
    await send(
        {
            "type": "http.response.start",
            "status": HTTP_PROBLEM_STATUS[problem],
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


class BearerAuth:
    """Every request and WebSocket handshake needs `Authorization: Bearer <token>` (the scheme in
    any case) except the public paths."""

    def __init__(self, app: ASGIApp, token: str, public_paths: frozenset[str], render: ErrorRenderer) -> None:
        self.app = app
        self.expected = token.encode()
        self.public_paths = public_paths
        self.render = render

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in self.public_paths:
            await self.app(scope, receive, send)
            return
        given = next((v for k, v in scope["headers"] if k == b"authorization"), b"")
        scheme, _, value = given.partition(b" ")
        authorized = scheme.lower() == b"bearer" and hmac.compare_digest(value.strip(), self.expected)
        if not authorized and scope["type"] == "websocket":
            # refused before the app accepts the handshake (the client sees HTTP 403)
            await send({"type": "websocket.close", "code": 1008, "reason": "missing or wrong bearer token"})
            return
        if not authorized:
            await send_error(
                send,
                self.render,
                HttpProblem.UNAUTHORIZED,
                "missing or wrong bearer token",
                [(b"www-authenticate", b"Bearer")],
            )
            return
        await self.app(scope, receive, send)


class _Refused(BaseException):
    """Raised from inside the app's body read. A BaseException, so that the app's own handlers
    (FastAPI turns any Exception while parsing a body into a 400) let it through to the
    middleware that raised it."""

    def __init__(self, problem: HttpProblem, message: str) -> None:
        super().__init__(message)
        self.problem, self.message = problem, message


def _refusal(exc: BaseException) -> _Refused | None:
    """The refusal behind `exc`, also when a task group wrapped it."""
    if isinstance(exc, _Refused):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _refusal(inner)
            if found is not None:
                return found
    return None


async def _guarded(
    app: ASGIApp, scope: Scope, receive: Receive, send: Send, render: ErrorRenderer, close: bool
) -> None:
    """Run `app`; a `_Refused` raised by a receive wrapper becomes the typed error response (when
    no response has started; otherwise the connection is simply dropped)."""
    started = False

    async def tracking_send(message: Message) -> None:
        nonlocal started
        if message["type"] == "http.response.start":
            started = True
        await send(message)

    try:
        await app(scope, receive, tracking_send)
    except BaseException as exc:
        refused = _refusal(exc)
        if refused is None:
            raise
        if not started:
            # the body was not read to its end: the connection cannot carry another request
            headers = [(b"connection", b"close")] if close else []
            await send_error(send, render, refused.problem, refused.message, headers)


class BodyLimit:
    """Refuse request bodies over `limit` bytes with 413: by Content-Length before reading, and
    while reading for bodies sent without one."""

    def __init__(self, app: ASGIApp, limit: int, render: ErrorRenderer) -> None:
        self.app = app
        self.limit = limit
        self.render = render

    @property
    def message(self) -> str:
        return f"request body larger than {self.limit} bytes"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = next((v for k, v in scope["headers"] if k == b"content-length"), None)
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await send_error(send, self.render, HttpProblem.TOO_LARGE, self.message)
            return
        received = 0

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise _Refused(HttpProblem.TOO_LARGE, self.message)
            return message

        await _guarded(self.app, scope, counting_receive, send, self.render, close=False)


class BodyTimeout:
    """A request's body must arrive within `timeout_s` of its headers; a slower one is refused with
    408 and its connection closed. (Headers that arrive too slowly never reach the app:
    `uvicorn_config`'s header timeout closes those connections.)"""

    def __init__(self, app: ASGIApp, timeout_s: float, render: ErrorRenderer) -> None:
        self.app = app
        self.timeout_s = timeout_s
        self.render = render

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        deadline = asyncio.get_running_loop().time() + self.timeout_s
        body_done = False

        async def timed_receive() -> Message:
            nonlocal body_done
            if body_done:  # after the body the app only waits for a disconnect: no deadline
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                raise _Refused(
                    HttpProblem.SLOW_BODY, f"request body not received within {self.timeout_s:g} s"
                ) from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        await _guarded(self.app, scope, timed_receive, send, self.render, close=True)


# ---- serving ---------------------------------------------------------------------------------------
def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere


MIN_TOKEN_CHARS = 16


class InsecureBindError(ValueError):
    """A server asked to listen beyond loopback without a (long enough) bearer token."""


def check_bind(host: str, token: str | None) -> None:
    """Servers bind 127.0.0.1 by default; an address beyond loopback needs a bearer token of at
    least MIN_TOKEN_CHARS characters (every toolgym server applies this one rule)."""
    if not is_loopback(host) and not token:
        raise InsecureBindError(
            f"{host} is beyond loopback: refusing to serve without a token; set a bearer token "
            "(--token or TOOLGYM_TOKEN), loopback addresses need none"
        )
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise InsecureBindError(f"the bearer token must be at least {MIN_TOKEN_CHARS} characters")


def bind_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto must say TCP: asyncio only sets TCP_NODELAY on such sockets, and without it every
    # keep-alive response waits ~40 ms for a delayed ACK
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:  # say which address: "Address already in use" alone names no port
        sock.close()
        raise OSError(exc.errno, f"cannot bind {host}:{port}: {exc.strerror}") from None
    sock.set_inheritable(True)
    return sock


def _http_protocol(header_timeout_s: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (httptools when installed, as uvicorn's "auto" picks, else h11)
    with a deadline for request headers, which uvicorn lacks: a connection that opens, or starts
    its next request, and has not completed the request's headers `header_timeout_s` later is
    closed. Idle keep-alive connections stay under uvicorn's own keep-alive timeout."""
    base: Any
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as base
    except ImportError:  # pragma: no cover - uvicorn[standard] installs httptools
        from uvicorn.protocols.http.h11_impl import H11Protocol as base

    class HeaderDeadlineProtocol(base):  # type: ignore[misc]
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:
            super().connection_made(transport)
            self._arm_header_timer()

        def data_received(self, data: bytes) -> None:
            # the first bytes of the next request on a kept-alive connection start its deadline
            if self._header_timer is None and (self.cycle is None or self.cycle.response_complete):
                self._arm_header_timer()
            super().data_received(data)

        def connection_lost(self, exc: Exception | None) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None
            super().connection_lost(exc)

        def _arm_header_timer(self) -> None:
            waiting_after = self.cycle  # the request before the one whose headers are awaited

            def expire() -> None:
                self._header_timer = None
                # a new cycle means the headers completed in time
                if self.cycle is waiting_after and not self.transport.is_closing():
                    self.transport.close()

            self._header_timer = self.loop.call_later(header_timeout_s, expire)

    return HeaderDeadlineProtocol


def uvicorn_config(
    app: ASGIApp, *, header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S, **kwargs: Any
) -> uvicorn.Config:
    """uvicorn settings of both servers: quiet logs, the lifespan on, keep-alive, and the header
    deadline of `_http_protocol`."""
    return uvicorn.Config(
        app,
        log_level=kwargs.pop("log_level", "warning"),
        access_log=False,
        lifespan="on",
        timeout_keep_alive=kwargs.pop("timeout_keep_alive", 30),
        http=kwargs.pop("http", None) or _http_protocol(header_timeout_s),
        **kwargs,
    )


class ServerThread:
    """Run an app with uvicorn in a background thread (tests, benchmarks, embedding a server in a
    process). Binds `host:port` (port 0: an ephemeral one) before starting; `url` is known as
    soon as the object exists and the server answers once `start()` returns."""

    what = "server"  # named in the error when it does not start

    def __init__(
        self,
        app: ASGIApp,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        startup_timeout_s: float = 60,
        **uvicorn_kwargs: Any,
    ) -> None:
        self.app = app
        self.host = host
        self.sock = bind_socket(host, port)
        self.port: int = self.sock.getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{self.port}"
        self.startup_timeout_s = startup_timeout_s
        self.server = uvicorn.Server(uvicorn_config(app, **uvicorn_kwargs))
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def _run(self) -> None:
        try:
            self.server.run(sockets=[self.sock])  # uvloop when installed, as `serve` gets
        except BaseException as exc:  # reported to the thread that waits in start()
            self._error = exc

    def failure(self) -> str:
        """Why the server did not start (subclasses know more about their app)."""
        return str(self._error or "startup timed out")

    def start(self, timeout_s: float | None = None) -> str:
        self._thread = threading.Thread(target=self._run, name=f"toolgym-server-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + (self.startup_timeout_s if timeout_s is None else timeout_s)
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                reason = self.failure()
                self.stop()
                raise RuntimeError(f"{self.what} did not start: {reason}")
            time.sleep(0.005)
        return self.url

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        self.sock.close()

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
