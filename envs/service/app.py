"""The env service's ASGI app: openenv-core's `HTTPEnvServer` plus stateful HTTP sessions.

What comes from openenv-core unchanged: `/ws` (a session per connection: reset, step, state,
close messages), `/health`, `/metadata`, the session table with its capacity limit,
per-session executor threads and idle reaper. openenv's own HTTP `/reset`, `/step` and `/state`
are stateless (each request builds and closes a fresh env), which cannot hold a multi-step
toolgym episode, so the server registers openenv's routes in its "production" mode (which leaves
those three out) and serves them here with the same bodies and responses plus a `session_id`:

- `POST /reset` `{seed?, episode_id?, task_id?, config?, agent?, session_id?}`: without a
  session id it opens a session; the response is openenv's `{observation, reward, done}` and
  `observation.session_id` names the session;
- `POST /step` `{session_id, action: {text | message | action}}`, `GET /state?session_id=`,
  `POST /close {session_id}`;
- `GET /schema` (openenv's answer, with the session state's own schema), `GET /sessions`,
  `GET /catalog`, `GET /sessions/{id}/traces[/{file}]` (a session's traces,
  WebSocket sessions' included, also after the session closed).

HTTP sessions live in openenv's session table (through `_Sessions`, the one place that touches
its private methods; openenv-core is pinned below 0.4), so the capacity limit and the reaper
count both kinds. Errors are typed: `{"ok": false, "error": {"kind", "message"}}` with
`unknown_session`, `unknown_trace`, `not_found` (404), `not_reset`, `episode_over`,
`session_busy` (409), `session_closed` (410), `argument_error` (422; 413 for a body over the
limit), `capacity` (503), `infra_error` (500). Over the WebSocket, openenv's error message starts
with `[kind]`.
"""

from __future__ import annotations

import contextlib
import functools
import json
from pathlib import Path
from typing import Any

from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocketDisconnect

from toolgym.envs.service import OPENENV_MISSING
from toolgym.envs.service.catalog import Catalog, ServiceError
from toolgym.envs.service.environment import (
    SESSION_ID,
    TRACE_FILE,
    ToolgymAction,
    ToolgymEnvironment,
    ToolgymObservation,
    ToolgymState,
)
from toolgym.errors import redact_paths
from toolgym.toolservers.server.http import BearerAuth, BodyLimit, error_body, json_response

try:
    from fastapi import FastAPI
    from openenv.core.env_server.exceptions import EnvironmentFactoryError, SessionCapacityError
    from openenv.core.env_server.http_server import HTTPEnvServer
    from openenv.core.env_server.serialization import serialize_observation
    from openenv.core.env_server.types import ConcurrencyConfig, ServerMode
except ImportError as exc:
    raise ImportError(OPENENV_MISSING) from exc

PUBLIC_PATHS = frozenset({"/health", "/schema", "/metadata"})
DEFAULT_MAX_BODY_BYTES = 1024 * 1024


class _Sessions:
    """toolgym's HTTP sessions in openenv's session table (private API of HTTPEnvServer)."""

    def __init__(self, server: HTTPEnvServer) -> None:
        self.server = server
        self.http: set[str] = set()  # sessions opened over HTTP: a WebSocket's are its own
        self.busy: set[str] = set()

    async def open(self) -> ToolgymEnvironment:
        try:
            session_id, env = await self.server._create_session()
        except SessionCapacityError as exc:
            raise ServiceError("capacity", str(exc), 503) from None
        except EnvironmentFactoryError as exc:
            raise ServiceError("infra_error", str(exc), 500) from None
        assert isinstance(env, ToolgymEnvironment)
        env.session_id = session_id  # one id for the session table, the traces and the client
        env._state = env.state.model_copy(update={"session_id": session_id})
        self.http.add(session_id)
        return env

    def get(self, session_id: Any) -> ToolgymEnvironment:
        if not isinstance(session_id, str) or not session_id:
            raise ServiceError("argument_error", "session_id (a string) is required", 422)
        env = self.server._sessions.get(session_id)
        if session_id not in self.http or not isinstance(env, ToolgymEnvironment):
            self.http.discard(session_id)  # reaped, or never opened over HTTP
            raise ServiceError("unknown_session", f"no open HTTP session {session_id!r}", 404)
        return env

    async def run(self, env: ToolgymEnvironment, method: str, *args: Any, **kwargs: Any) -> Any:
        """Run `env.method` in the session's own thread, one call at a time: a second concurrent
        call is refused (409) rather than queued, so a client learns it raced itself."""
        sid = env.session_id
        if sid in self.busy:
            raise ServiceError("session_busy", f"session {sid} is running another request", 409)
        self.busy.add(sid)
        try:
            result = await self.server._run_in_session_executor(sid, getattr(env, method), *args, **kwargs)
            self.server._update_session_activity(sid, increment_step=method == "step")
            return result
        finally:
            self.busy.discard(sid)

    async def close(self, session_id: str) -> None:
        self.http.discard(session_id)
        await self.server._destroy_session(session_id)


async def _json_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw:
        return {}
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise ServiceError("argument_error", f"the body is not JSON: {exc}", 422) from None
    if not isinstance(body, dict):
        raise ServiceError("argument_error", "the body must be a JSON object", 422)
    return body


def _result(obs: ToolgymObservation) -> Response:
    return json_response(serialize_observation(obs))


def _traces_of(trace_dir: Path | None, session_id: str) -> Path:
    if trace_dir is None:
        raise ServiceError("unknown_session", "this server writes no traces", 404)
    if not SESSION_ID.match(session_id) or not (trace_dir / session_id).is_dir():
        raise ServiceError("unknown_session", f"no traces for session {session_id!r}", 404)
    return trace_dir / session_id


def _add_session_routes(app: FastAPI, sessions: _Sessions, catalog: Catalog, trace_dir: Path | None) -> None:
    @app.post("/reset")
    async def reset(request: Request) -> Response:
        body = await _json_body(request)
        session_id = body.pop("session_id", None)
        env = sessions.get(session_id) if session_id is not None else await sessions.open()
        try:
            obs = await sessions.run(env, "reset", **body)
        except BaseException:
            if session_id is None:  # a session opened for a failed reset is not left behind
                await sessions.close(env.session_id)
            raise
        return _result(obs)

    @app.post("/step")
    async def step(request: Request) -> Response:
        body = await _json_body(request)
        env = sessions.get(body.pop("session_id", None))
        for key in ("timeout_s", "request_id"):  # openenv's StepRequest fields, unused here
            body.pop(key, None)
        if set(body) != {"action"} or not isinstance(body["action"], dict):
            raise ServiceError("argument_error", "the body is {session_id, action: {...}}", 422)
        try:
            action = ToolgymAction.model_validate(body["action"])
        except ValueError as exc:
            raise ServiceError("argument_error", f"bad action: {exc}", 422) from None
        return _result(await sessions.run(env, "step", action))

    @app.get("/state")
    async def state(session_id: str | None = None) -> Response:
        return json_response(sessions.get(session_id).state.model_dump(mode="json"))

    @app.post("/close")
    async def close(request: Request) -> Response:
        body = await _json_body(request)
        env = sessions.get(body.get("session_id"))
        await sessions.close(env.session_id)
        return json_response({"ok": True, "session_id": env.session_id, "closed": True})

    @app.get("/sessions")
    async def list_sessions() -> Response:
        server = sessions.server
        rows = [
            {**info.model_dump(mode="json"), "transport": "http" if sid in sessions.http else "ws"}
            for sid, info in list(server._session_info.items())
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

    @app.get("/sessions/{session_id}/traces")
    async def list_traces(session_id: str) -> Response:
        folder = _traces_of(trace_dir, session_id)
        return json_response({"session_id": session_id, "traces": sorted(p.name for p in folder.iterdir())})

    @app.get("/sessions/{session_id}/traces/{name}")
    async def get_trace(session_id: str, name: str) -> Response:
        folder = _traces_of(trace_dir, session_id)
        # by listing, never by joining a client's string into a path
        files = {p.name: p for p in folder.iterdir()} if TRACE_FILE.match(name) else {}
        if name not in files:
            raise ServiceError("unknown_trace", f"session {session_id} has no trace {name!r}", 404)
        return Response(files[name].read_bytes(), media_type="application/x-ndjson")


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
    token: str | None = None,
    max_sessions: int = 64,
    idle_timeout_s: float | None = 600.0,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> ASGIApp:
    """The service: sessions built from `catalog`, traces under `trace_dir/<session id>/`,
    at most `max_sessions` open (HTTP and WebSocket together), sessions idle for
    `idle_timeout_s` reaped (openenv's reaper checks every max(timeout/4, 5) s), request bodies
    over `max_body_bytes` refused (413). With `token`, everything but health, schema and
    metadata needs `Authorization: Bearer <token>`, WebSocket handshakes included."""
    server = HTTPEnvServer(
        functools.partial(ToolgymEnvironment, catalog, trace_dir),
        ToolgymAction,
        ToolgymObservation,
        concurrency_config=ConcurrencyConfig(
            max_concurrent_envs=max_sessions, session_timeout=idle_timeout_s
        ),
    )
    app = FastAPI(title="toolgym env service", docs_url=None, redoc_url=None)

    @app.exception_handler(ServiceError)
    async def typed_error(request: Request, exc: ServiceError) -> Response:
        return json_response(error_body(exc.kind, exc.message), exc.status)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        kind = "not_found" if exc.status_code == 404 else "argument_error"
        return json_response(error_body(kind, str(exc.detail)), exc.status_code, dict(exc.headers or {}))

    @app.exception_handler(Exception)
    async def server_fault(request: Request, exc: Exception) -> Response:
        return json_response(error_body("infra_error", redact_paths(f"{type(exc).__name__}: {exc}")), 500)

    _add_session_routes(app, _Sessions(server), catalog, trace_dir)
    server.register_routes(app, mode=ServerMode.PRODUCTION)
    wrapped: ASGIApp = BodyLimit(_QuietDisconnect(app), max_body_bytes)
    if token:
        wrapped = BearerAuth(wrapped, token, PUBLIC_PATHS)
    return wrapped
