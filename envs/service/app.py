"""The env service's ASGI app: openenv-core's `HTTPEnvServer` plus stateful HTTP sessions.

What comes from openenv-core unchanged: `/health`, `/metadata`, the session table with its
capacity limit and idle reaper, the `/ws` protocol (a session per connection: reset, step,
state, close messages; its message and error types). `/ws` itself is served here
(`_Sessions.serve_websocket`) so that each answer is encoded once, and each session's calls run
on the service's own worker threads (workers.py: none on the event loop, no thread held by an
idle session). openenv's own HTTP `/reset`, `/step` and `/state` are stateless (each request builds and closes a fresh env), which cannot hold a multi-step
toolgym episode, so the server registers openenv's routes in its "production" mode (which leaves
those three out) and serves them here with the same bodies and responses plus a `session_id`:

- `POST /reset` `{seed?, episode_id?, task_id?, config?, agent?, session_id?, lease_s?}`: without
  a session id it opens a session; the response is openenv's `{observation, reward, done}` and
  `observation.session_id` names the session (`lease_s`: the session's lease, leases.py);
- `POST /step` `{session_id, action: {text | message | action}}`, `GET /state?session_id=`,
  `POST /close {session_id}`, `POST /leases {session_ids}` (a leasing client's heartbeat);
- `GET /schema` (openenv's answer, with the session state's own schema), `GET /sessions`,
  `GET /catalog`, `GET /sessions/{id}/traces[/{file}]` (a session's traces,
  WebSocket sessions' included, also after the session closed).

HTTP sessions live in openenv's session table (through `_Sessions`, the one place that touches
its private methods; openenv-core is pinned below 0.4), so the capacity limit and the reaper
count both kinds. Errors are typed: `{"ok": false, "error": {"kind", "message"}}` with
`unknown_session`, `unknown_trace`, `not_found` (404), `not_reset`, `episode_over`,
`session_busy` (409), `session_closed` (410), `argument_error` (422; 413 for a body over the
limit), `session_memory` (413: a step past the session's memory bound), `capacity` (503),
`infra_error` (500; a server out of file descriptors answers 503 `capacity`). Over the WebSocket,
openenv's error message starts with `[kind]`, and the connection goes on.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from toolgym.envs.service import OPENENV_MISSING
from toolgym.envs.service.catalog import Catalog, ServiceError
from toolgym.envs.service.environment import (
    DEFAULT_MAX_SESSION_BYTES,
    Answer,
    ToolgymAction,
    ToolgymEnvironment,
    ToolgymObservation,
    ToolgymState,
)
from toolgym.envs.service.leases import LeaseError, Leases
from toolgym.envs.service.traces import (
    DEFAULT_MAX_TRACE_BYTES,
    OUT_OF_DESCRIPTORS,
    SESSION_ID,
    TRACE_FILE,
    TraceRetention,
    out_of_descriptors,
)
from toolgym.envs.service.workers import WORKER_IDLE_S, Lane, Workers
from toolgym.errors import redact_paths
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

try:
    from fastapi import FastAPI
    from openenv.core.env_server.exceptions import EnvironmentFactoryError, SessionCapacityError
    from openenv.core.env_server.http_server import HTTPEnvServer
    from openenv.core.env_server.types import (
        ConcurrencyConfig,
        ServerMode,
        WSCloseMessage,
        WSErrorCode,
        WSErrorResponse,
        WSResetMessage,
        WSStateMessage,
        WSStateResponse,
        WSStepMessage,
    )
    from pydantic import ValidationError
except ImportError as exc:
    raise ImportError(OPENENV_MISSING) from exc

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
    """toolgym's HTTP and WebSocket sessions in openenv's session table (private API of
    HTTPEnvServer), their calls on the worker threads (workers.py), one lane per session."""

    def __init__(
        self,
        server: HTTPEnvServer,
        steps_on_loop: bool = False,
        leases: Leases | None = None,
        workers: Workers | None = None,
    ) -> None:
        self.server = server
        self.leases = leases or Leases()  # HTTP sessions whose clients must renew them
        self.leases.bind(self._expire)
        self.steps_on_loop = steps_on_loop  # run env calls inline (see create_app)
        self.workers = workers or Workers()
        # openenv's table builds each session on this executor, where it would start a thread per
        # session kept for the session's life; `create` gives each session a lane of it (openenv
        # types these ThreadPoolExecutor; it calls only `submit` and `shutdown`)
        server._shared_session_executor = self.workers  # type: ignore[assignment]
        self.http: set[str] = set()  # sessions opened over HTTP: a WebSocket's are its own
        self.busy: set[str] = set()
        # the client that opened each session (kept after it closes: its traces are that client's)
        self.owners: dict[str, str] = {}

    def owned(self, session_id: str, client: str) -> bool:
        return self.owners.get(session_id) == client

    async def create(self) -> tuple[str, ToolgymEnvironment]:
        """A new session in openenv's table, with its own lane (its calls, and openenv's close,
        one at a time in order). Raises openenv's SessionCapacityError, EnvironmentFactoryError."""
        session_id, env = await self.server._create_session()
        assert isinstance(env, ToolgymEnvironment)
        self.server._session_executors[session_id] = self.workers.lane()  # type: ignore[assignment]
        return session_id, env

    async def open(self, client: str) -> ToolgymEnvironment:
        try:
            session_id, env = await self.create()
        except SessionCapacityError as exc:
            raise ServiceError("capacity", str(exc), 503) from None
        except EnvironmentFactoryError as exc:
            raise ServiceError("infra_error", str(exc), 500) from None
        env.rename(session_id)  # one id for the session table, the traces and the client
        self.http.add(session_id)
        self.owners[session_id] = client
        return env

    def get(self, session_id: Any, client: str) -> ToolgymEnvironment:
        """The caller's open HTTP session `session_id`; another client's is as unknown as none."""
        if not isinstance(session_id, str) or not session_id:
            raise ServiceError("argument_error", "session_id (a string) is required", 422)
        env = self.server._sessions.get(session_id)
        if not self.owned(session_id, client):
            raise ServiceError("unknown_session", f"no open HTTP session {session_id!r}", 404)
        if session_id not in self.http or not isinstance(env, ToolgymEnvironment):
            self.http.discard(session_id)  # reaped, or never opened over HTTP
            self.leases.drop(session_id)
            raise ServiceError("unknown_session", f"no open HTTP session {session_id!r}", 404)
        self.renew(session_id)  # a request naming the session is a sign of life
        return env

    def renew(self, session_id: str) -> None:
        """The session's lease starts again, and it counts as active for the idle reaper."""
        self.leases.renew(session_id)
        self.server._update_session_activity(session_id)

    def grant(self, session_id: str, lease_s: Any) -> float | None:
        try:
            return self.leases.grant(session_id, lease_s)
        except LeaseError as exc:
            raise ServiceError("argument_error", str(exc), 422) from None

    async def _expire(self, session_id: str) -> None:
        """A lease ran out: the client is gone. A session mid-request is not (its lease restarts
        when the request ends)."""
        if session_id in self.busy:
            self.leases.renew(session_id)
        else:
            await self.close(session_id)

    async def run(self, env: ToolgymEnvironment, fn: Callable[..., T], *args: Any, step: bool = False) -> T:
        """`fn(*args)` on the session's lane, one call at a time: a second concurrent call is
        refused (409) rather than queued, so a client learns it raced itself. `step`: the call
        counts as a step of the session (openenv's session info)."""
        sid = env.session_id
        if sid in self.busy:
            raise ServiceError("session_busy", f"session {sid} is running another request", 409)
        self.busy.add(sid)
        try:
            result = await self._in_session(sid, fn, *args)
            self.server._update_session_activity(sid, increment_step=step)
            return result
        finally:
            self.busy.discard(sid)
            self.leases.renew(sid)  # a long step never eats the client's lease

    async def close(self, session_id: str) -> None:
        self.http.discard(session_id)
        self.leases.drop(session_id)
        await self.server._destroy_session(session_id)

    async def off_loop(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` on a worker of no session: work whose size a client chooses (parsing a
        large body, reading a trace) stays off the event loop."""
        if self.steps_on_loop:
            return fn(*args)
        return await self.workers.run(fn, *args)

    async def serve_websocket(self, websocket: WebSocket) -> None:
        """openenv's `/ws` protocol, message for message (a session per connection; reset, step,
        state and close; the same answers and error codes). Each message is parsed, run and
        answered on the session's lane, its answer encoded once from the env's wire dict:
        openenv's own handler builds an Observation, dumps it, validates the dump into a response
        model and encodes that, which costs a step about as much as the rest of the frame path.
        A message the session refuses, malformed ones included, gets its error frame and the
        connection goes on."""
        await websocket.accept()
        session_id: str | None = None
        try:
            session_id, env = await self.create()
            # the table's id, and the env's own, which names its trace folder
            self.owners[session_id] = self.owners[env.session_id] = client_of(websocket.scope)
            while True:
                frame = await self._ws_answer(session_id, env, await _receive(websocket))
                if frame is None:
                    break
                await websocket.send_text(frame)
        except WebSocketDisconnect:
            pass
        except SessionCapacityError as exc:
            await _send_quietly(
                websocket,
                _ws_error(
                    str(exc),
                    WSErrorCode.CAPACITY_REACHED,
                    active_sessions=exc.active_sessions,
                    max_sessions=exc.max_sessions,
                ),
            )
        except EnvironmentFactoryError as exc:
            await _send_quietly(
                websocket, _ws_error(str(exc), WSErrorCode.FACTORY_ERROR, factory_name=exc.factory_name)
            )
        except Exception as exc:
            await _send_quietly(websocket, _ws_error(str(typed(exc)), WSErrorCode.SESSION_ERROR))
        finally:
            if session_id is not None:
                await self.server._destroy_session(session_id)
            with contextlib.suppress(RuntimeError, WebSocketDisconnect):  # the client may be gone
                await websocket.close()

    async def _in_session(self, session_id: str, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` on the session's lane (after its earlier calls), or on the event loop with
        `steps_on_loop`. A session the table no longer has (reaped, closed) is refused."""
        if self.steps_on_loop:
            return fn(*args)
        lane = self.server._session_executors.get(session_id)
        if not isinstance(lane, Lane):
            raise ServiceError("session_closed", f"session {session_id} is closed", 410)
        return await lane.run(fn, *args)

    async def _ws_answer(self, session_id: str, env: ToolgymEnvironment, raw: str | bytes) -> str | None:
        """The frame answering one client message (None: the client closes the session)."""
        try:
            frame, kind = await self._in_session(session_id, _ws_reply, env, raw)
        except Exception as exc:  # a session gone, a server out of threads
            return _ws_error(str(typed(exc)), WSErrorCode.EXECUTION_ERROR)
        if kind in ("step", "reset"):
            self.server._update_session_activity(session_id, increment_step=kind == "step")
        return frame


def _ws_reply(env: ToolgymEnvironment, raw: str | bytes) -> tuple[str | None, str]:
    """One WebSocket message's answer frame and its type, on the session's lane: parsed as
    strictly as an HTTP body (the same typed errors), run, encoded."""
    try:
        message = parse_json(raw)
    except BodyError as exc:
        return _ws_error(f"[argument_error] {exc}", WSErrorCode.INVALID_JSON), ""
    kind = message.get("type", "") if isinstance(message, dict) else ""
    try:
        if kind == "step":
            action = ToolgymAction.model_validate(WSStepMessage(**message).data)
            return _observation_frame(env.step_answer(action)), kind
        if kind == "reset":
            return _observation_frame(env.reset_answer(**WSResetMessage(**message).data)), kind
        if kind == "state":
            WSStateMessage(**message)
            return WSStateResponse(data=env.state.model_dump()).model_dump_json(), kind
        if kind == "close":
            WSCloseMessage(**message)
            return None, kind
        return _ws_error(f"Unknown message type: {kind}", WSErrorCode.UNKNOWN_TYPE), ""
    except ValidationError as exc:  # without context: a validator's exception object is no JSON
        errors = exc.errors(include_url=False, include_context=False)
        return _ws_error("Invalid message", WSErrorCode.VALIDATION_ERROR, errors=errors), ""
    except Exception as exc:  # a ServiceError's message starts with its [kind]
        return _ws_error(str(typed(exc)), WSErrorCode.EXECUTION_ERROR), ""


def _observation_frame(answer: Answer) -> str:
    return json_bytes({"type": "observation", "data": answer}).decode()


async def _receive(websocket: WebSocket) -> str | bytes:
    """A client message: a text frame's text or a binary frame's bytes (parsed as UTF-8 JSON)."""
    message = await websocket.receive()
    if message["type"] == "websocket.disconnect":
        raise WebSocketDisconnect(message.get("code", 1000), message.get("reason"))
    text: str | None = message.get("text")
    if text is not None:
        return text
    data: bytes = message.get("bytes") or b""
    return data


def typed(exc: BaseException) -> ServiceError:
    """Any error of a call as the typed error a client gets: a ServiceError as it is, a server out
    of file descriptors 503 `capacity`, anything else 500 `infra_error` (paths redacted)."""
    if isinstance(exc, ServiceError):
        return exc
    if isinstance(exc, OSError) and exc.errno in OUT_OF_DESCRIPTORS:
        return out_of_descriptors(exc)
    return ServiceError("infra_error", redact_paths(f"{type(exc).__name__}: {exc}"), 500)


def _ws_error(message: str, code: WSErrorCode, **extra: Any) -> str:
    return WSErrorResponse(data={"message": message, "code": code, **extra}).model_dump_json()


async def _send_quietly(websocket: WebSocket, frame: str) -> None:
    with contextlib.suppress(RuntimeError, WebSocketDisconnect):
        await websocket.send_text(frame)


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
        env = sessions.get(session_id, client) if session_id is not None else await sessions.open(client)
        try:
            granted = sessions.grant(env.session_id, lease_s)
            answer = await sessions.run(env, _http_reset, env, body, granted)
        except BaseException:
            if session_id is None:  # a session opened for a failed reset is not left behind
                await sessions.close(env.session_id)
            raise
        return _json_answer(answer)

    async def step(request: Request) -> Response:
        body = await _json_body(request, sessions)
        env = sessions.get(body.pop("session_id", None), client_of(request.scope))
        for key in ("timeout_s", "request_id"):  # openenv's StepRequest fields, unused here
            body.pop(key, None)
        if set(body) != {"action"} or not isinstance(body["action"], dict):
            raise ServiceError("argument_error", "the body is {session_id, action: {...}}", 422)
        return _json_answer(await sessions.run(env, _http_step, env, body["action"], step=True))

    async def state(request: Request) -> Response:
        env = sessions.get(request.query_params.get("session_id"), client_of(request.scope))
        # off the loop, beside a step that may be running: the state is read whole (a dict
        # swapped per step), and its last diff may be large
        return _json_answer(await sessions.off_loop(_http_state, env))

    async def close(request: Request) -> Response:
        body = await _json_body(request, sessions)
        env = sessions.get(body.get("session_id"), client_of(request.scope))
        await sessions.close(env.session_id)
        return json_response({"ok": True, "session_id": env.session_id, "closed": True})

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
    """GET /sessions (a client's own), /schema and /catalog."""

    @app.get("/sessions")
    async def list_sessions(request: Request) -> Response:
        server = sessions.server
        client = client_of(request.scope)  # a client sees its own sessions only
        rows = [
            {
                **info.model_dump(mode="json"),
                "transport": "http" if sid in sessions.http else "ws",
                **sessions.leases.describe(sid),
            }
            for sid, info in list(server._session_info.items())
            if sessions.owned(sid, client)
        ]
        return json_response({"sessions": rows, "max_sessions": server.max_concurrent_envs})

    @app.get("/schema")
    async def schema() -> Response:
        # openenv's own /schema (registered after this one) gives the base State's schema
        return json_response(
            {
                "action": ToolgymAction.model_json_schema(),
                "observation": ToolgymObservation.model_json_schema(),
                "state": ToolgymState.model_json_schema(),
            }
        )

    @app.get("/catalog")
    async def get_catalog() -> Response:
        return json_response(catalog.describe())


def _add_trace_routes(app: FastAPI, sessions: _Sessions, trace_dir: Path | None) -> None:
    """A session's traces: their list, and each file (WebSocket sessions' too, also after the
    session closed)."""

    @app.get("/sessions/{session_id}/traces")
    async def list_traces(request: Request, session_id: str) -> Response:
        folder = _traces_of(trace_dir, session_id, sessions.owned(session_id, client_of(request.scope)))
        return json_response({"session_id": session_id, "traces": sorted(p.name for p in folder.iterdir())})

    @app.get("/sessions/{session_id}/traces/{name}")
    async def get_trace(request: Request, session_id: str, name: str) -> Response:
        folder = _traces_of(trace_dir, session_id, sessions.owned(session_id, client_of(request.scope)))
        # by listing, never by joining a client's string into a path
        files = {p.name: p for p in folder.iterdir()} if TRACE_FILE.match(name) else {}
        if name not in files:
            raise ServiceError("unknown_trace", f"session {session_id} has no trace {name!r}", 404)
        content = await sessions.off_loop(files[name].read_bytes)  # a trace may be megabytes
        return Response(content, media_type="application/x-ndjson")


class _QuietDisconnect:
    """openenv's `/ws` handler closes the socket after the client has gone and lets starlette's
    WebSocketDisconnect escape (it catches RuntimeError only); the session is already destroyed
    by then, so the exception is noise in the server log, not a fault."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        with contextlib.suppress(WebSocketDisconnect):
            await self.app(scope, receive, send)


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
    `idle_timeout_s` reaped (openenv's reaper checks every max(timeout/4, 5) s), request bodies
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
    server = _openenv_server(
        catalog, trace_dir, max_trace_bytes, max_session_bytes, max_sessions, idle_timeout_s
    )
    app = FastAPI(title="toolgym env service", docs_url=None, redoc_url=None)
    _add_error_handlers(app)
    leases = Leases(default_s=default_lease_s, max_s=idle_timeout_s, clock=clock)
    sessions = _Sessions(server, steps_on_loop, leases, Workers(worker_idle_s))
    app.router.on_shutdown.append(leases.stop)
    _add_session_routes(app, sessions, catalog, trace_dir)
    app.add_api_websocket_route("/ws", sessions.serve_websocket)  # before openenv's: this one serves
    server.register_routes(app, mode=ServerMode.PRODUCTION)
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
    return _QuietDisconnect(app)


def _openenv_server(
    catalog: Catalog,
    trace_dir: Path | None,
    max_trace_bytes: int | None,
    max_session_bytes: int | None,
    max_sessions: int,
    idle_timeout_s: float | None,
) -> HTTPEnvServer:
    """openenv's server, whose session table holds every session (HTTP and WebSocket): each a
    ToolgymEnvironment on `catalog`, its traces under `trace_dir` kept within `max_trace_bytes`."""
    retention = (
        TraceRetention(trace_dir, max_trace_bytes)
        if trace_dir is not None and max_trace_bytes is not None
        else None
    )
    return HTTPEnvServer(
        functools.partial(
            ToolgymEnvironment, catalog, trace_dir, retention=retention, max_bytes=max_session_bytes
        ),
        ToolgymAction,
        ToolgymObservation,
        concurrency_config=ConcurrencyConfig(
            max_concurrent_envs=max_sessions, session_timeout=idle_timeout_s
        ),
    )


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
