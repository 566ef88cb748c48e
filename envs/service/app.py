"""The env service's ASGI app: ToolEnv sessions in OpenEnv's wire protocol, over HTTP and the
WebSocket, served by toolgym's own code (no openenv import: wire.py says why).

What an OpenEnv client finds, as openenv-core 0.3's `HTTPEnvServer` serves it: `/health`,
`/metadata`, `/schema`, the `/ws` protocol (a session per connection: reset, step, state, close
messages; the same answers and error codes, websocket.py), `/mcp`'s JSON-RPC answers for an
environment without MCP tools, and one session table with a capacity limit and an idle reaper
(sessions.py). OpenEnv's own HTTP `/reset`, `/step` and `/state` are stateless (each request
builds and closes a fresh env), which cannot hold a multi-step toolgym episode, so the service's
take the same bodies and give the same responses plus a `session_id`:

- `POST /reset` `{seed?, episode_id?, task_id?, config?, agent?, session_id?, lease_s?}`: without
  a session id it opens a session; the response is OpenEnv's `{observation, reward, done}` and
  `observation.session_id` names the session (`lease_s`: the session's lease, leases.py);
- `POST /step` `{session_id, action: {text | message | action}}`, `GET /state?session_id=`,
  `POST /close {session_id}`, `POST /leases {session_ids}` (a leasing client's heartbeat);
- `GET /schema` (the action's, observation's and state's JSON schemas), `GET /sessions`,
  `GET /catalog`, `GET /sessions/{id}/traces[/{file}]` (a session's traces,
  WebSocket sessions' included, also after the session closed).

HTTP and WebSocket sessions share the table, so the capacity limit and the reaper count both
kinds. Errors are typed: `{"ok": false, "error": {"kind", "message"}}` with
`unknown_session`, `unknown_trace`, `not_found` (404), `not_reset`, `episode_over`,
`session_busy` (409), `session_closed` (410), `argument_error` (422; 413 for a body over the
limit), `session_memory` (413: a step past the session's memory bound), `capacity` (503),
`infra_error` (500; a server out of file descriptors answers 503 `capacity`). Over the WebSocket,
the error frame's message starts with `[kind]`, and the connection goes on.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from fastapi import FastAPI
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp

from toolgym.envs.service.catalog import Catalog, ServiceError
from toolgym.envs.service.environment import (
    DEFAULT_MAX_SESSION_BYTES,
    ToolgymAction,
    ToolgymEnvironment,
    ToolgymObservation,
    ToolgymState,
    metadata,
)
from toolgym.envs.service.leases import LeaseError, Leases
from toolgym.envs.service.sessions import Session, SessionTable, typed
from toolgym.envs.service.traces import (
    DEFAULT_MAX_TRACE_BYTES,
    SESSION_ID,
    TRACE_FILE,
    TraceRetention,
)
from toolgym.envs.service.websocket import serve_mcp, serve_session
from toolgym.envs.service.wire import HEALTHY, mcp_refusal
from toolgym.envs.service.workers import WORKER_IDLE_S, Workers
from toolgym.http import (
    DEFAULT_BODY_TIMEOUT_S,
    BodyError,
    Credentials,
    Exposure,
    client_of,
    json_bytes,
    parse_json,
    secure,
)
from toolgym.toolservers.server.http import error_body, json_response, render_error

PUBLIC_PATHS = frozenset({"/health", "/schema", "/metadata"})
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
MAX_RENEW = 4096  # session ids one heartbeat may renew
# uvicorn settings the service runs under: no permessage-deflate on /ws (uvicorn offers it by
# default; compressing and inflating each ~1.4 kB answer cost more per step than the bytes it
# saves on loopback or a LAN)
UVICORN_SETTINGS: dict[str, Any] = {"ws_per_message_deflate": False}
# an HTTP body up to this size is parsed on the event loop (at most ~2 ms, nested lists included,
# on a loaded 2-core VM); a larger one on a worker, as the strict parser's depth walk of a 1 MiB
# body takes up to a second
LOOP_PARSE_MAX_BYTES = 4096

T = TypeVar("T")


class _Sessions:
    """The HTTP routes' view of the session table: a client's own HTTP sessions by id, their
    leases, and one call of a session at a time (a second one is refused, not queued)."""

    def __init__(self, table: SessionTable, leases: Leases) -> None:
        self.table = table
        self.leases = leases  # HTTP sessions whose clients must renew them
        self.leases.bind(self._expire)

    def open(self, client: str) -> Session:
        return self.table.open(client, "http")  # a full table: 503 capacity

    def get(self, session_id: Any, client: str) -> Session:
        """The caller's open HTTP session `session_id`; another client's is as unknown as none."""
        if not isinstance(session_id, str) or not session_id:
            raise ServiceError("argument_error", "session_id (a string) is required", 422)
        session = self.table.sessions.get(session_id)
        if session is None or session.owner != client or session.transport != "http":
            raise ServiceError("unknown_session", f"no open HTTP session {session_id!r}", 404)
        self.renew(session_id)  # a request naming the session is a sign of life
        return session

    def renew(self, session_id: str) -> None:
        """The session's lease starts again, and it counts as active for the idle reaper."""
        self.leases.renew(session_id)
        self.table.touch(session_id)

    def grant(self, session_id: str, lease_s: Any) -> float | None:
        try:
            return self.leases.grant(session_id, lease_s)
        except LeaseError as exc:
            raise ServiceError("argument_error", str(exc), 422) from None

    async def _expire(self, session_id: str) -> None:
        """A lease ran out: the client is gone. A session mid-request is not (its lease restarts
        when the request ends)."""
        session = self.table.sessions.get(session_id)
        if session is not None and session.busy:
            self.leases.renew(session_id)
        else:
            await self.close(session_id)

    async def run(self, session: Session, fn: Callable[..., T], *args: Any, step: bool = False) -> T:
        """`fn(*args)` on the session's lane: a second concurrent call is refused (409) rather
        than queued, so a client learns it raced itself. `step`: the call counts as a step of
        the session (its `/sessions` row)."""
        if session.busy:
            raise ServiceError("session_busy", f"session {session.id} is running another request", 409)
        try:
            result = await self.table.run(session, fn, *args)
            self.table.touch(session.id, step=step)
            return result
        finally:
            self.leases.renew(session.id)  # a long step never eats the client's lease

    async def close(self, session_id: str) -> None:
        await self.table.close(session_id)  # its lease goes with it (the table's on_close)

    async def off_loop(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` on a worker of no session: work whose size a client chooses (parsing a
        large body, reading a trace) stays off the event loop."""
        if self.table.steps_on_loop:
            return fn(*args)
        return await self.table.workers.run(fn, *args)


def _parse_body(raw: bytes) -> dict[str, Any]:
    try:  # strictly, as every toolgym server: deep nesting is a 422, never a RecursionError
        body = parse_json(raw)
    except BodyError as exc:
        raise ServiceError("argument_error", str(exc), 422) from None
    if not isinstance(body, dict):
        raise ServiceError("argument_error", "the body must be a JSON object", 422)
    return body


async def _json_body(request: Request, sessions: _Sessions) -> dict[str, Any]:
    """The request's JSON object; a body over LOOP_PARSE_MAX_BYTES is parsed off the loop."""
    raw = await request.body()
    if not raw:
        return {}
    if len(raw) <= LOOP_PARSE_MAX_BYTES:
        return _parse_body(raw)
    return await sessions.off_loop(_parse_body, raw)


def _json_answer(raw: bytes) -> Response:
    return Response(raw, media_type="application/json")


def _http_reset(env: ToolgymEnvironment, body: dict[str, Any], granted: float | None) -> bytes:
    answer = env.reset_answer(**body)
    return json_bytes(answer if granted is None else {**answer, "lease_s": granted})


def _http_step(env: ToolgymEnvironment, data: dict[str, Any]) -> bytes:
    try:
        action = ToolgymAction.model_validate(data)
    except ValueError as exc:
        raise ServiceError("argument_error", f"bad action: {exc}", 422) from None
    return json_bytes(env.step_answer(action))


def _http_state(env: ToolgymEnvironment) -> bytes:
    return json_bytes(env.state.model_dump(mode="json"))


def _traces_of(trace_dir: Path | None, session_id: str, owned: bool) -> Path:
    if trace_dir is None:
        raise ServiceError("unknown_session", "this server writes no traces", 404)
    if not owned or not SESSION_ID.match(session_id) or not (trace_dir / session_id).is_dir():
        raise ServiceError("unknown_session", f"no traces for session {session_id!r}", 404)
    return trace_dir / session_id


def _add_session_routes(app: FastAPI, sessions: _Sessions, catalog: Catalog, trace_dir: Path | None) -> None:
    """The stateful session routes, in the order they are matched: the episode's calls, the
    leases' heartbeat, the listings, then a session's traces."""
    _add_episode_routes(app, sessions)
    _add_lease_route(app, sessions)
    _add_listing_routes(app, sessions, catalog)
    _add_trace_routes(app, sessions, trace_dir)


def _add_episode_routes(app: FastAPI, sessions: _Sessions) -> None:
    """/reset, /step, /state and /close. They are plain Starlette routes: FastAPI's dependency
    solving around an endpoint that reads its body itself costs a step tens of µs for nothing.
    Each call runs, and its answer is encoded, on the session's lane; the loop reads, hands over
    and sends."""

    async def reset(request: Request) -> Response:
        body = await _json_body(request, sessions)
        session_id = body.pop("session_id", None)
        lease_s = body.pop("lease_s", None)
        client = client_of(request.scope)
        session = sessions.get(session_id, client) if session_id is not None else sessions.open(client)
        try:
            granted = sessions.grant(session.id, lease_s)
            answer = await sessions.run(session, _http_reset, session.env, body, granted)
        except BaseException:
            if session_id is None:  # a session opened for a failed reset is not left behind
                await sessions.close(session.id)
            raise
        return _json_answer(answer)

    async def step(request: Request) -> Response:
        body = await _json_body(request, sessions)
        session = sessions.get(body.pop("session_id", None), client_of(request.scope))
        for key in ("timeout_s", "request_id"):  # OpenEnv's step request fields, unused here
            body.pop(key, None)
        if set(body) != {"action"} or not isinstance(body["action"], dict):
            raise ServiceError("argument_error", "the body is {session_id, action: {...}}", 422)
        answer = await sessions.run(session, _http_step, session.env, body["action"], step=True)
        return _json_answer(answer)

    async def state(request: Request) -> Response:
        session = sessions.get(request.query_params.get("session_id"), client_of(request.scope))
        # off the loop, beside a step that may be running: the state is read whole (a dict
        # swapped per step), and its last diff may be large
        return _json_answer(await sessions.off_loop(_http_state, session.env))

    async def close(request: Request) -> Response:
        body = await _json_body(request, sessions)
        session = sessions.get(body.get("session_id"), client_of(request.scope))
        await sessions.close(session.id)
        return json_response({"ok": True, "session_id": session.id, "closed": True})

    app.add_route("/reset", reset, methods=["POST"])
    app.add_route("/step", step, methods=["POST"])
    app.add_route("/state", state, methods=["GET"])
    app.add_route("/close", close, methods=["POST"])


def _add_lease_route(app: FastAPI, sessions: _Sessions) -> None:
    """POST /leases, the heartbeat of a leasing client (leases.py)."""

    @app.post("/leases")
    async def renew_leases(request: Request) -> Response:
        """The heartbeat of a client holding leased sessions: renews those that are still its
        open sessions, names the others `lost`."""
        ids = (await _json_body(request, sessions)).get("session_ids")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids) or len(ids) > MAX_RENEW:
            raise ServiceError(
                "argument_error", f"the body is {{session_ids: [at most {MAX_RENEW} ids]}}", 422
            )
        client = client_of(request.scope)
        renewed, lost = [], []
        for sid in dict.fromkeys(ids):
            try:
                sessions.get(sid, client)  # renews it
                renewed.append(sid)
            except ServiceError:
                lost.append(sid)
        return json_response({"ok": True, "renewed": renewed, "lost": lost})


def _add_listing_routes(app: FastAPI, sessions: _Sessions, catalog: Catalog) -> None:
    """GET /sessions (a client's own), /catalog, and OpenEnv's /health, /metadata and /schema."""
    table = sessions.table
    # what never changes while the server runs, encoded once
    about = {
        "/health": json_bytes(HEALTHY),
        "/metadata": json_bytes(metadata().model_dump(mode="json")),
        "/schema": json_bytes(
            {
                "action": ToolgymAction.model_json_schema(),
                "observation": ToolgymObservation.model_json_schema(),
                "state": ToolgymState.model_json_schema(),
            }
        ),
    }
    for path, answer in about.items():
        app.add_route(path, functools.partial(_constant, answer), methods=["GET"])

    @app.get("/sessions")
    async def list_sessions(request: Request) -> Response:
        client = client_of(request.scope)  # a client sees its own sessions only
        rows = [
            {**session.row(), "transport": session.transport, **sessions.leases.describe(session.id)}
            for session in list(table.sessions.values())
            if session.owner == client
        ]
        return json_response({"sessions": rows, "max_sessions": table.max_sessions})

    @app.get("/catalog")
    async def get_catalog() -> Response:
        return json_response(catalog.describe())


def _add_trace_routes(app: FastAPI, sessions: _Sessions, trace_dir: Path | None) -> None:
    """A session's traces: their list, and each file (WebSocket sessions' too, also after the
    session closed)."""
    table = sessions.table

    @app.get("/sessions/{session_id}/traces")
    async def list_traces(request: Request, session_id: str) -> Response:
        folder = _traces_of(trace_dir, session_id, table.owned(session_id, client_of(request.scope)))
        return json_response({"session_id": session_id, "traces": sorted(p.name for p in folder.iterdir())})

    @app.get("/sessions/{session_id}/traces/{name}")
    async def get_trace(request: Request, session_id: str, name: str) -> Response:
        folder = _traces_of(trace_dir, session_id, table.owned(session_id, client_of(request.scope)))
        # by listing, never by joining a client's string into a path
        files = {p.name: p for p in folder.iterdir()} if TRACE_FILE.match(name) else {}
        if name not in files:
            raise ServiceError("unknown_trace", f"session {session_id} has no trace {name!r}", 404)
        content = await sessions.off_loop(files[name].read_bytes)  # a trace may be megabytes
        return Response(content, media_type="application/x-ndjson")


async def _constant(answer: bytes, request: Request) -> Response:
    return _json_answer(answer)


def _add_mcp_routes(app: FastAPI) -> None:
    """/mcp, over HTTP and the WebSocket: OpenEnv's JSON-RPC answers for an environment without
    MCP tools (websocket.py; no session is opened for them)."""

    async def mcp(request: Request) -> Response:
        return json_response(mcp_refusal(await request.body()))

    app.add_route("/mcp", mcp, methods=["POST"])
    app.router.add_websocket_route("/mcp", serve_mcp)


def create_app(
    catalog: Catalog,
    *,
    trace_dir: Path | None = None,
    token: str | Credentials | None = None,
    max_sessions: int = 64,
    idle_timeout_s: float | None = 600.0,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    steps_on_loop: bool = False,
    host: str = "127.0.0.1",
    allowed_hosts: tuple[str, ...] = (),
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S,
    max_trace_bytes: int | None = DEFAULT_MAX_TRACE_BYTES,
    default_lease_s: float | None = None,
    max_session_bytes: int | None = DEFAULT_MAX_SESSION_BYTES,
    clock: Callable[[], float] = time.monotonic,
    worker_idle_s: float = WORKER_IDLE_S,
) -> ASGIApp:
    """The service: sessions built from `catalog`, traces under `trace_dir/<session id>/`,
    at most `max_sessions` open (HTTP and WebSocket together), sessions idle for
    `idle_timeout_s` reaped (the reaper looks every max(timeout/4, 5) s), request bodies
    over `max_body_bytes` refused (413), bodies slower than `body_timeout_s` too (408). With
    `token` (one client's token, or `Credentials` naming each client's), everything but health,
    schema and metadata needs `Authorization: Bearer <token>`, WebSocket handshakes included, and
    each client sees and drives only the sessions it opened. `host` is where the server is bound:
    requests naming another `Host` (DNS rebinding), requests from web pages and bodies that are
    not JSON are refused (`toolgym.http.BrowserGuard`).
    Sessions' calls run on worker threads, one call of a session at a time; a worker idle for
    `worker_idle_s` ends (workers.py). `steps_on_loop`: sessions' calls run on the event loop
    instead (a thread hop less per call, but one slow or expensive step stalls every session).
    `max_trace_bytes`: the finished traces under `trace_dir` add up to at most this, the oldest
    deleted first (None: no bound; see traces.py). An HTTP session whose client asks for a lease
    (`lease_s` in a reset; `default_lease_s` for those that ask for none) is closed when its
    client stops renewing it, on `clock` (see leases.py). `max_session_bytes`: each session's
    memory bound (None: none; environment.py, `_check_bound`)."""
    retention = (
        TraceRetention(trace_dir, max_trace_bytes)
        if trace_dir is not None and max_trace_bytes is not None
        else None
    )
    factory = functools.partial(
        ToolgymEnvironment, catalog, trace_dir, retention=retention, max_bytes=max_session_bytes
    )
    leases = Leases(default_s=default_lease_s, max_s=idle_timeout_s, clock=clock)
    workers = Workers(worker_idle_s)
    table = SessionTable(
        factory,  # with the session's id
        workers,
        max_sessions=max_sessions,
        idle_timeout_s=idle_timeout_s,
        steps_on_loop=steps_on_loop,
        on_close=leases.drop,
    )
    sessions = _Sessions(table, leases)
    app = FastAPI(title="toolgym env service", docs_url=None, redoc_url=None)
    _add_error_handlers(app)
    # idle workers end at shutdown, busy ones after their call
    app.router.on_shutdown.extend([leases.stop, table.stop, workers.shutdown])
    _add_session_routes(app, sessions, catalog, trace_dir)
    app.router.add_websocket_route("/ws", functools.partial(serve_session, table))
    _add_mcp_routes(app)
    credentials = Credentials.of(token) if isinstance(token, str) else token
    exposure = Exposure(
        host=host,
        credentials=credentials,
        allowed_hosts=allowed_hosts,
        public_paths=PUBLIC_PATHS,
        max_body_bytes=max_body_bytes,
        body_timeout_s=body_timeout_s,
    )
    secure(app, exposure, render_error)
    return app


def _add_error_handlers(app: FastAPI) -> None:
    """Every error answers the typed body `{"ok": false, "error": {"kind", "message"}}`."""

    @app.exception_handler(ServiceError)
    async def typed_error(request: Request, exc: ServiceError) -> Response:
        return json_response(error_body(exc.kind, exc.message), exc.status)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        kind = "not_found" if exc.status_code == 404 else "argument_error"
        return json_response(error_body(kind, str(exc.detail)), exc.status_code, dict(exc.headers or {}))

    @app.exception_handler(Exception)
    async def server_fault(request: Request, exc: Exception) -> Response:
        error = typed(exc)
        return json_response(error_body(error.kind, error.message), error.status)
