"""The HTTP toolkit of every server toolgym starts (the tool server, the env service, the mock-app
service, MCP over HTTP, the trace viewer and serve-model's guard): one rule for who may reach them, applied by `secure`.

- Exposure (`Exposure`, `check_bind`): loopback by default; any other address needs a bearer token
  of at least MIN_TOKEN_CHARS characters. `Credentials` may name several clients, each with its own
  token: sessions belong to the client that opened them (`client_of`).
- Browsers (`BrowserGuard`, outermost): the `Host` must be a name the server was bound for (DNS
  rebinding, 421), requests a page of another origin sent are refused (403), and bodies need a
  JSON content type (415), so that no web page the user visits can drive a local server.
- JSON out (`json_bytes`, `json_response`) and strict JSON in (`parse_json`): a body that is not
  UTF-8, not JSON, nested past `MAX_JSON_DEPTH`, with NaN, Infinity or numbers past what Python
  converts, is a `BodyError` (a typed 4xx for the client), never a 500.
- ASGI middleware: `BearerAuth` (401), `BearerCookie` (a browser's login, for the viewer: the cookie
  holds `CookieLogins`' HMAC of the token, never the token),
  `BodyLimit` (413), `BodyTimeout` (408 for a body that arrives too slowly), and `StrictJSONRoute`,
  FastAPI's documented custom-route hook, so that FastAPI endpoints parse bodies with `parse_json`.
- Serving: `uvicorn_config` (with `header_timeout_s`: a connection that does not finish its
  request headers in time is closed; TOOLGYM_HEADER_TIMEOUT_S sets the default), `bind_socket`,
  `is_loopback`, `ServerThread`.

Each server keeps its own error envelope: an `ErrorRenderer` writes the body of each
`HttpProblem` the toolkit refuses a request for.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import math
import os
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import uvicorn
from fastapi import Request
from fastapi.routing import APIRoute
from pydantic_core import from_json
from starlette.applications import Starlette
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
    FOREIGN_HOST = "foreign_host"  # 421: a Host header this server was not bound for (DNS rebinding)
    CROSS_ORIGIN = "cross_origin"  # 403: a request a web page of another origin sent
    NOT_JSON = "not_json"  # 415: a body without a JSON content type


HTTP_PROBLEM_STATUS: dict[HttpProblem, int] = {
    HttpProblem.UNAUTHORIZED: 401,
    HttpProblem.TOO_LARGE: 413,
    HttpProblem.SLOW_BODY: 408,
    HttpProblem.MALFORMED: 422,
    HttpProblem.FOREIGN_HOST: 421,
    HttpProblem.CROSS_ORIGIN: 403,
    HttpProblem.NOT_JSON: 415,
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


LOCAL_CLIENT = "local"
"""The one client of a server that takes no token (loopback only): every caller is it."""
_CLIENT_KEY = "toolgym.client"  # where BearerAuth leaves the caller's name in the ASGI scope's state


def client_of(scope: Scope) -> str:
    """The name of the client that sent this request (`LOCAL_CLIENT` on a server without tokens).
    Sessions belong to the client that opened them: a server shows and serves a session to it only."""
    state = scope.get("state")
    return str(state.get(_CLIENT_KEY, LOCAL_CLIENT)) if isinstance(state, dict) else LOCAL_CLIENT


class Credentials:
    """The bearer tokens a server accepts, each naming the client that holds it. One `--token` is
    one client ("default"); a tokens file gives each client its own token, so that clients can
    neither see nor drive each other's sessions."""

    def __init__(self, tokens: Mapping[str, str]) -> None:
        """`tokens`: client name -> token (each at least MIN_TOKEN_CHARS characters, all distinct)."""
        if not tokens:
            raise InsecureBindError("no bearer token given")
        short = sorted(name for name, token in tokens.items() if len(token) < MIN_TOKEN_CHARS)
        if short:
            raise InsecureBindError(
                f"the bearer token must be at least {MIN_TOKEN_CHARS} characters (client {short[0]})"
            )
        if len(set(tokens.values())) != len(tokens):
            raise InsecureBindError("two clients share one bearer token: give each its own")
        self._tokens = tuple((token.encode(), name) for name, token in sorted(tokens.items()))

    @classmethod
    def of(cls, token: str | None = None, tokens_file: Path | None = None) -> Credentials | None:
        """The credentials of `--token` and `--tokens-file` (None when neither is given). The file
        holds one client per line, `NAME TOKEN`; blank lines and lines starting with # are skipped."""
        tokens: dict[str, str] = {} if token is None else {"default": token}
        if tokens_file is not None:
            tokens.update(_read_tokens_file(tokens_file, taken=set(tokens)))
        return cls(tokens) if tokens else None

    @property
    def clients(self) -> list[str]:
        return [name for _, name in self._tokens]

    def client(self, presented: bytes) -> str | None:
        """The client whose token this is, or None. Compares with every token in constant time."""
        found = None
        for expected, name in self._tokens:
            if hmac.compare_digest(presented, expected):
                found = name
        return found


def _read_tokens_file(path: Path, taken: set[str]) -> dict[str, str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InsecureBindError(f"cannot read the tokens file {path}: {exc}") from None
    tokens: dict[str, str] = {}
    for number, line in enumerate(lines, start=1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) != 2:
            raise InsecureBindError(f"{path}:{number}: a client line is `NAME TOKEN`")
        name, token = fields
        if name in taken or name in tokens:
            raise InsecureBindError(f"{path}:{number}: client {name!r} is named twice")
        tokens[name] = token
    return tokens


class BearerAuth:
    """Every request and WebSocket handshake needs `Authorization: Bearer <token>` (the scheme in
    any case) except the public paths; the token's client is left in the scope (`client_of`)."""

    def __init__(
        self, app: ASGIApp, token: str | Credentials, public_paths: frozenset[str], render: ErrorRenderer
    ) -> None:
        self.app = app
        self.credentials = token if isinstance(token, Credentials) else Credentials({"default": token})
        self.public_paths = public_paths
        self.render = render

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope["path"] in self.public_paths:
            await self.app(scope, receive, send)
            return
        given = next((v for k, v in scope["headers"] if k == b"authorization"), b"")
        scheme, _, value = given.partition(b" ")
        client = self.credentials.client(value.strip()) if scheme.lower() == b"bearer" else None
        if client is None and scope["type"] == "websocket":
            # refused before the app accepts the handshake (the client sees HTTP 403)
            await send({"type": "websocket.close", "code": 1008, "reason": "missing or wrong bearer token"})
            return
        if client is None:
            await send_error(
                send,
                self.render,
                HttpProblem.UNAUTHORIZED,
                "missing or wrong bearer token",
                [(b"www-authenticate", b"Bearer")],
            )
            return
        scope.setdefault("state", {})[_CLIENT_KEY] = client
        await self.app(scope, receive, send)


class CookieLogins:
    """What a browser's login cookie holds: never the bearer token, but an HMAC of it under a
    secret this object draws (one per server process: a restart logs browsers out). The cookie
    authenticates to this server only, and neither it nor a copy of it gives the token away."""

    def __init__(self, credentials: Credentials, secret: bytes | None = None) -> None:
        self._secret = secret if secret is not None else secrets.token_bytes(32)
        # the derived value -> the token it stands for, kept in this process only
        self._tokens = tuple((self.cookie_for(token).encode(), token) for token, _ in credentials._tokens)

    def cookie_for(self, token: bytes) -> str:
        """The cookie value of a login with `token` (check the token first: `Credentials.client`)."""
        return hmac.new(self._secret, b"toolgym-login\0" + token, "sha256").hexdigest()

    def token_for(self, cookie: bytes) -> bytes | None:
        """The token a cookie value stands for, or None (a forged, stale or raw-token cookie).
        Compares with every value in constant time."""
        found = None
        for value, token in self._tokens:
            if hmac.compare_digest(cookie, value):
                found = token
        return found


class BearerCookie:
    """A browser's login from a cookie (a page cannot send the header on a navigation): with no
    Authorization header, the token the named cookie's value stands for (`CookieLogins`) is
    passed on as one, to BearerAuth; any other cookie value is ignored (BearerAuth then answers
    401). Pair it with a same-site-only cookie, so that no other site's page sends it."""

    def __init__(self, app: ASGIApp, cookie: str, logins: CookieLogins) -> None:
        self.app = app
        self.prefix = f"{cookie}=".encode()
        self.logins = logins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = scope.get("headers") or []
        if scope["type"] == "http" and not any(k == b"authorization" for k, _ in headers):
            cookies = (c.strip() for k, v in headers if k == b"cookie" for c in v.split(b";"))
            value = next((c[len(self.prefix) :] for c in cookies if c.startswith(self.prefix)), None)
            token = self.logins.token_for(value) if value else None
            if token is not None:
                scope = {**scope, "headers": [*headers, (b"authorization", b"Bearer " + token)]}
        await self.app(scope, receive, send)


# ---- browsers: Host, Origin, content type ----------------------------------------------------------
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_WILDCARDS = frozenset({"0.0.0.0", "::", ""})
_JSON_TYPES = ("application/json",)
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True)
class HostRule:
    """The `Host` names a server answers to: the names it was bound for. A page that a DNS
    rebinding points at 127.0.0.1 still sends its own name, and is refused."""

    names: frozenset[str]
    any_ip: bool = False  # a wildcard bind: any IP literal (a browser at an IP is that IP's origin)
    any_host: bool = False  # a unix socket: no browser reaches it

    @classmethod
    def for_bind(cls, host: str | None, extra: Iterable[str] = ()) -> HostRule:
        """The rule for a server bound to `host` (None: a unix socket); `extra`: more names it is
        reached by (a reverse proxy's, a DNS name of this machine)."""
        if host is None:
            return cls(frozenset(), any_host=True)
        bound = host.strip("[]").lower()
        names = set(_LOOPBACK_NAMES) | {bound} | {_host_name(name) for name in extra}
        if not is_loopback(bound):
            names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
        return cls(frozenset(names), any_ip=bound in _WILDCARDS)

    def allows(self, host_header: str) -> bool:
        if self.any_host:
            return True
        name = _host_name(host_header)
        if name in self.names:
            return True
        if not self.any_ip:
            return False
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True


def _host_name(netloc: str) -> str:
    """`Host`/`Origin` authority -> the bare, lower-case name: [::1]:80 -> ::1, a.b.:80 -> a.b"""
    netloc = netloc.strip().lower()
    if netloc.startswith("["):
        return netloc[1 : netloc.find("]")] if "]" in netloc else netloc
    return netloc.rsplit(":", 1)[0].rstrip(".") if netloc.count(":") == 1 else netloc.rstrip(".")


def _header(scope: Scope, name: bytes) -> str | None:
    value = next((v for k, v in scope["headers"] if k == name), None)
    return None if value is None else value.decode("latin-1")


class BrowserGuard:
    """What keeps web pages out of a local server (outermost: checked before anything else).

    - `Host` must be a name the server was bound for (421): DNS rebinding cannot read replies.
    - A request a page of another origin sent is refused (403): an `Origin` that is not this
      server's own (`null` included), or `Sec-Fetch-Site: cross-site|same-site` on anything but a
      top-level navigation. WebSocket handshakes included: browsers open those cross-origin freely.
    - A body goes with a JSON content type only (415): a page can POST `text/plain` or a form
      without a preflight. `upload_paths` names the paths that take other bodies (forms on the
      AgentLego wire, file uploads): there the Origin check alone keeps pages out.
    Programs (curl, httpx, SDK clients) send no Origin and a JSON content type, and pass."""

    def __init__(
        self,
        app: ASGIApp,
        hosts: HostRule,
        render: ErrorRenderer,
        upload_paths: Callable[[str], bool] | None = None,
    ) -> None:
        self.app = app
        self.hosts = hosts
        self.render = render
        self.upload_paths = upload_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None and scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": refusal[1]})
            return
        if refusal is not None:
            await send_error(send, self.render, *refusal)
            return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> tuple[HttpProblem, str] | None:
        host = _header(scope, b"host")
        if host is not None and not self.hosts.allows(host):
            return HttpProblem.FOREIGN_HOST, f"this server does not answer to the host {host!r}"
        origin = _header(scope, b"origin")
        if origin is not None and (host is None or _origin_authority(origin) != host.strip().lower()):
            return HttpProblem.CROSS_ORIGIN, f"requests from the web origin {origin!r} are refused"
        site = _header(scope, b"sec-fetch-site")
        if site in ("cross-site", "same-site") and _header(scope, b"sec-fetch-mode") != "navigate":
            return HttpProblem.CROSS_ORIGIN, "requests from another site's pages are refused"
        if scope["type"] == "http" and scope["method"] in _BODY_METHODS:
            return self._content_refusal(scope)
        return None

    def _content_refusal(self, scope: Scope) -> tuple[HttpProblem, str] | None:
        content_type = _header(scope, b"content-type")
        length = _header(scope, b"content-length")
        has_body = content_type is not None or _header(scope, b"transfer-encoding") is not None
        if not has_body and length in (None, "0"):
            return None
        media = (content_type or "").split(";", 1)[0].strip().lower()
        if media in _JSON_TYPES or (media.startswith("application/") and media.endswith("+json")):
            return None
        if self.upload_paths is not None and self.upload_paths(scope["path"]):
            return None
        return (
            HttpProblem.NOT_JSON,
            f"a request body must be JSON with content-type application/json, not {media or 'none'!r}",
        )


def _origin_authority(origin: str) -> str | None:
    """`http://127.0.0.1:8765` -> `127.0.0.1:8765`; None for `null` and anything not a web origin."""
    parts = urlsplit(origin.strip().lower())
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
        return None
    return parts.netloc


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


def check_bind(host: str, token: str | Credentials | None) -> None:
    """Servers bind 127.0.0.1 by default; an address beyond loopback needs a bearer token of at
    least MIN_TOKEN_CHARS characters (every toolgym server applies this one rule)."""
    if not is_loopback(host) and not token:
        raise InsecureBindError(
            f"{host} is beyond loopback: refusing to serve without a token; set a bearer token "
            "(--token or TOOLGYM_TOKEN), loopback addresses need none"
        )
    if isinstance(token, str) and len(token) < MIN_TOKEN_CHARS:
        raise InsecureBindError(f"the bearer token must be at least {MIN_TOKEN_CHARS} characters")


@dataclass(frozen=True)
class Exposure:
    """Who may reach a server and how: the one rule of every server toolgym starts (tool server,
    env service, mock service, MCP over HTTP, trace viewer, serve-model)."""

    host: str | None = "127.0.0.1"  # where it is bound; None: a unix socket
    credentials: Credentials | None = None  # None: no token (loopback and unix sockets only)
    allowed_hosts: tuple[str, ...] = ()  # more `Host` names it answers to (a proxy's, a DNS name)
    public_paths: frozenset[str] = frozenset()  # answered without a token (health, schemas)
    upload_paths: Callable[[str], bool] | None = None  # the paths that take non-JSON bodies
    max_body_bytes: int | None = None
    body_timeout_s: float | None = DEFAULT_BODY_TIMEOUT_S

    def check(self) -> None:
        """Refuse a bind beyond loopback without a token (InsecureBindError)."""
        if self.host is not None:
            check_bind(self.host, self.credentials)


def problem_body(problem: HttpProblem, message: str) -> dict[str, Any]:
    """The error body of servers without an envelope of their own."""
    return {"ok": False, "error": {"kind": problem.value, "message": message}}


def secure(app: Starlette, exposure: Exposure, render: ErrorRenderer = problem_body) -> None:
    """Put the toolkit's guards on `app`, innermost first: the body deadline, the body size limit,
    the bearer token, and outermost the browser guard (Host, Origin, content type)."""
    exposure.check()
    if exposure.body_timeout_s is not None:
        app.add_middleware(BodyTimeout, timeout_s=exposure.body_timeout_s, render=render)
    if exposure.max_body_bytes is not None:
        app.add_middleware(BodyLimit, limit=exposure.max_body_bytes, render=render)
    if exposure.credentials is not None:
        app.add_middleware(
            BearerAuth, token=exposure.credentials, public_paths=exposure.public_paths, render=render
        )
    hosts = HostRule.for_bind(exposure.host, exposure.allowed_hosts)
    app.add_middleware(BrowserGuard, hosts=hosts, render=render, upload_paths=exposure.upload_paths)


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
                if self.transport.get_protocol() is not self:
                    return  # upgraded to a WebSocket, whose protocol owns the connection now
                # a new cycle means the headers completed in time
                if self.cycle is waiting_after and not self.transport.is_closing():
                    self.transport.close()

            self._header_timer = self.loop.call_later(header_timeout_s, expire)

    return HeaderDeadlineProtocol


HEADER_TIMEOUT_ENV = "TOOLGYM_HEADER_TIMEOUT_S"


def default_header_timeout_s() -> float:
    """The header deadline of servers that take no setting of their own: TOOLGYM_HEADER_TIMEOUT_S
    (seconds) when set, else DEFAULT_HEADER_TIMEOUT_S."""
    raw = os.environ.get(HEADER_TIMEOUT_ENV, "").strip()
    try:
        value = float(raw) if raw else DEFAULT_HEADER_TIMEOUT_S
    except ValueError:
        raise ValueError(f"{HEADER_TIMEOUT_ENV}={raw!r} is not a number of seconds") from None
    if not 0 < value <= 3600:
        raise ValueError(f"{HEADER_TIMEOUT_ENV}={raw!r} must be in (0, 3600] seconds")
    return value


def uvicorn_config(app: ASGIApp, *, header_timeout_s: float | None = None, **kwargs: Any) -> uvicorn.Config:
    """uvicorn settings of every toolgym server: quiet logs, the lifespan on, keep-alive, and the
    header deadline of `_http_protocol` (`default_header_timeout_s()` when not given)."""
    if header_timeout_s is None:
        header_timeout_s = default_header_timeout_s()
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
