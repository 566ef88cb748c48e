"""The mock apps as an HTTP service: many isolated sessions, one MockWorld each, on one server.

    GET    /health                        liveness, session count (no token needed)
    GET    /apps                          the apps this server knows
    POST   /sessions                      {apps, seed, clock, prefixes} -> a new session
    GET    /sessions                      the caller's live sessions
    GET    /sessions/{sid}                one session
    DELETE /sessions/{sid}                close it
    GET    /sessions/{sid}/tools          the session's APIs as tool schemas
    POST   /sessions/{sid}/call           {name, arguments, call_id} -> {observation, state_hash}
    POST   /sessions/{sid}/reset          {seed?, clock?} -> back to the seeded state
    POST   /sessions/{sid}/checkpoint     {name}
    POST   /sessions/{sid}/restore        {name}
    POST   /sessions/{sid}/fork           -> a new, independent session with the same state
    GET    /sessions/{sid}/state_hash
    POST   /sessions/{sid}/diff           rows changed since the previous diff (it moves the baseline)
    POST   /sessions/{sid}/rows           {table, where} -> rows
    POST   /sessions/{sid}/score          {apps?, seed?, clock?, golden, expected_state} -> state scores

An API's own failure (a 404 from the app, bad arguments) is a normal 200 answer whose observation
carries the typed error, exactly as in-process. Service failures are HTTP errors with a typed body
`{"error": {"kind": ..., "message": ...}}`: unknown session (404 `unknown_session`), bad request
(400/422 `bad_request`, any body that is not strict JSON included), too many sessions (429
`too_many_sessions`), token (401 `unauthorized`), body too large (413 `too_large`), body too slow
(408 `timeout`), no such route (404 `not_found`, 405 `method_not_allowed`), a foreign `Host`
(421 `foreign_host`), a web page's request (403 `cross_origin`), a body that is not JSON (415
`bad_request`). The HTTP plumbing is the shared toolkit of `toolgym.http` (`secure`).

Sessions belong to the client that opened them (its token's name in the server's credentials;
every caller of a server without tokens is one client): another client's session is unknown to
it (404), and `GET /sessions` lists the caller's own.

Endpoints are `async` and run the (sub-millisecond) SQLite work inline on the event loop: one
session is never touched by two requests at once, and no thread hop is paid per call.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.exceptions import HTTPException
from starlette.routing import Route

from toolgym.actions import ToolCall
from toolgym.errors import redact_paths
from toolgym.http import (
    DEFAULT_BODY_TIMEOUT_S,
    DEFAULT_HEADER_TIMEOUT_S,
    LOCAL_CLIENT,
    BodyError,
    Credentials,
    Exposure,
    HttpProblem,
    StrictJSONRoute,
    client_of,
    parse_json,
    secure,
)
from toolgym.mocks.world import MockWorld
from toolgym.tasks import GoldenStep, validation_lines
from toolgym.tools import DEFAULT_CLOCK, BaseTool

SERVICE_NAME = "toolgym-mocks"
API_VERSION = "1"

PUBLIC_PATHS = frozenset({"/health"})


@dataclass(frozen=True)
class ServiceConfig:
    """Limits of one mock service. `token` None means no auth (only for loopback binds)."""

    max_sessions: int = 256
    idle_timeout_s: float = 900.0  # a session unused this long is closed by the reaper
    reap_interval_s: float | None = None  # default: a quarter of the idle timeout, at most 30 s
    max_apps_per_session: int = 16
    max_checkpoints: int = 64  # per session
    max_body_bytes: int = 1 << 20
    token: str | None = None  # one client's token ("default")
    credentials: Credentials | None = None  # each client's token (the token's client added)
    host: str | None = "127.0.0.1"  # where the server is bound (None: a unix socket)
    allowed_hosts: tuple[str, ...] = ()  # more Host names it answers to
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S  # to send a request's headers, else closed
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S  # to send a body after its headers, else 408

    def __post_init__(self) -> None:
        if self.token is not None and self.credentials is None:
            object.__setattr__(self, "credentials", Credentials.of(self.token))

    @property
    def reap_every_s(self) -> float:
        if self.reap_interval_s is not None:
            return self.reap_interval_s
        return max(0.01, min(self.idle_timeout_s / 4, 30.0))


class ServiceError(Exception):
    """A service-level failure, answered as `{"error": {"kind", "message"}}` with `status`."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


# ---- sessions ----------------------------------------------------------------------------------
@dataclass
class Session:
    sid: str
    world: MockWorld
    apps: tuple[str, ...]
    prefixes: dict[str, str]
    created: float
    last_used: float
    owner: str = LOCAL_CLIENT  # the client that opened it: the only one that sees and drives it
    calls: int = 0
    checkpoints: list[str] = field(default_factory=list)

    def info(self, now: float) -> dict[str, Any]:
        return {
            "session_id": self.sid,
            "apps": list(self.apps),
            "prefixes": self.prefixes,
            "seed": self.world.seed,
            "clock": self.world.start.isoformat(),
            "state_hash": self.world.state_hash(),
            "checkpoints": self.world.store.checkpoints,
            "calls": self.calls,
            "idle_s": round(now - self.last_used, 3),
        }


class SessionManager:
    """The live sessions, their limits and the idle reaper's bookkeeping. Not thread-safe: the
    app calls it from the event loop only."""

    def __init__(self, config: ServiceConfig, *, now: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self._now = now
        self._sessions: dict[str, Session] = {}
        self.created_total = 0
        self.reaped_total = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def _new_id(self) -> str:
        return secrets.token_hex(8)

    def _admit(self) -> None:
        if len(self._sessions) >= self.config.max_sessions:
            raise ServiceError(
                429,
                "too_many_sessions",
                f"this server holds at most {self.config.max_sessions} sessions; delete idle ones",
            )

    def create(
        self,
        apps: list[str],
        seed: int,
        clock: datetime,
        prefixes: dict[str, str] | None = None,
        owner: str = LOCAL_CLIENT,
    ) -> Session:
        self._admit()
        if not apps:
            raise ServiceError(400, "bad_request", "a session needs at least one app")
        if len(apps) > self.config.max_apps_per_session:
            raise ServiceError(
                400, "bad_request", f"at most {self.config.max_apps_per_session} apps per session"
            )
        try:
            world = MockWorld(apps, seed=seed, clock=clock, prefixes=prefixes)
        except (KeyError, ValueError) as exc:
            raise ServiceError(400, "bad_request", str(exc).strip("\"'")) from None
        return self._add(world, tuple(apps), dict(prefixes or {}), owner)

    def _add(self, world: MockWorld, apps: tuple[str, ...], prefixes: dict[str, str], owner: str) -> Session:
        now = self._now()
        session = Session(self._new_id(), world, apps, prefixes, created=now, last_used=now, owner=owner)
        self._sessions[session.sid] = session
        self.created_total += 1
        return session

    def get(self, sid: str, owner: str = LOCAL_CLIENT) -> Session:
        """`owner`'s session `sid`: another client's session is as unknown as a deleted one."""
        session = self._sessions.get(sid)
        if session is None or session.owner != owner:
            raise ServiceError(404, "unknown_session", f"no session {sid!r} (deleted, reaped or never made)")
        session.last_used = self._now()
        return session

    def fork(self, sid: str, owner: str = LOCAL_CLIENT) -> Session:
        parent = self.get(sid, owner)
        self._admit()
        return self._add(parent.world.fork(), parent.apps, dict(parent.prefixes), owner)

    def delete(self, sid: str, owner: str = LOCAL_CLIENT) -> None:
        self.get(sid, owner)
        self._sessions.pop(sid).world.close()

    def reap(self, now: float | None = None) -> list[str]:
        """Close the sessions idle longer than the idle timeout; their ids."""
        now = self._now() if now is None else now
        limit = self.config.idle_timeout_s
        stale = [sid for sid, s in self._sessions.items() if now - s.last_used > limit]
        for sid in stale:
            self._sessions.pop(sid).world.close()
        self.reaped_total += len(stale)
        return stale

    def list(self, owner: str | None = None) -> list[Session]:
        """The live sessions (`owner`'s only, when given)."""
        return [s for s in self._sessions.values() if owner is None or s.owner == owner]

    def close_all(self) -> None:
        for session in self._sessions.values():
            session.world.close()
        self._sessions.clear()

    def now(self) -> float:
        return self._now()


# ---- request bodies ----------------------------------------------------------------------------
class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateSession(_Body):
    apps: list[str] = Field(min_length=1)
    seed: int = 0
    clock: datetime = DEFAULT_CLOCK
    prefixes: dict[str, str] = Field(default_factory=dict)


class CallBody(_Body):
    name: str = Field(min_length=1, max_length=256)
    arguments: dict[str, Any] = Field(default_factory=dict)
    call_id: str | None = None


class ResetBody(_Body):
    seed: int | None = None
    clock: datetime | None = None


class NameBody(_Body):
    name: str = Field(min_length=1, max_length=128)


class RowsBody(_Body):
    table: str
    where: dict[str, Any] = Field(default_factory=dict)


class ScoreBody(_Body):
    """What `toolgym.envs.rewards.state_scores` needs from a task; apps, seed and clock default
    to the session's."""

    apps: list[str] | None = None
    seed: int | None = None
    clock: datetime | None = None
    golden: list[GoldenStep] = Field(default_factory=list)
    expected_state: list[dict[str, Any]] = Field(default_factory=list)


def tool_schema(t: BaseTool) -> dict[str, Any]:
    """What a client needs to rebuild a tool: the same fields the exporters use."""
    return {
        "name": t.name,
        "description": t.description,
        "parameters": t.parameters_schema(),
        "returns": [r.model_dump(mode="json") for r in t.returns],
        "category": t.category,
        "mutates_state": t.mutates_state,
        "version": t.version,
        "backend": t.backend,
    }


# ---- the ASGI app ------------------------------------------------------------------------------
# the service's kind for each request the HTTP toolkit refuses
_PROBLEM_KINDS: dict[HttpProblem, str] = {
    HttpProblem.UNAUTHORIZED: "unauthorized",
    HttpProblem.TOO_LARGE: "too_large",
    HttpProblem.SLOW_BODY: "timeout",
    HttpProblem.MALFORMED: "bad_request",
    HttpProblem.FOREIGN_HOST: "foreign_host",
    HttpProblem.CROSS_ORIGIN: "cross_origin",
    HttpProblem.NOT_JSON: "bad_request",
}
# the kind of an HTTP error the framework raises itself (no such route, wrong method)
_STATUS_KINDS: dict[int, str] = {404: "not_found", 405: "method_not_allowed"}


def _caller(request: Request) -> str:
    return client_of(request.scope)


Caller = Annotated[str, Depends(_caller)]
"""The client that sent the request (its token's name): sessions are its own."""


def render_error(problem: HttpProblem, message: str) -> dict[str, Any]:
    return {"error": {"kind": _PROBLEM_KINDS[problem], "message": message}}


def _error_response(exc: ServiceError) -> JSONResponse:
    message = redact_paths(exc.message)  # never a server path in what a client reads
    return JSONResponse({"error": {"kind": exc.kind, "message": message}}, status_code=exc.status)


def _problems(errors: Any, skip: int) -> str:
    """Validation errors as one line: `field.path: message; ...` (never the input's values)."""
    parts = []
    for err in errors:
        if err.get("type") == "json_invalid":
            parts.append(str(err.get("ctx", {}).get("error") or err["msg"]))
            continue
        where = ".".join(str(p) for p in err["loc"][skip:]) or "(body)"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def create_app(config: ServiceConfig | None = None, *, now: Callable[[], float] = time.monotonic) -> FastAPI:
    """The service app. `app.state.sessions` is its SessionManager."""
    config = config or ServiceConfig()
    manager = SessionManager(config, now=now)
    app = FastAPI(title="toolgym mock apps", version=API_VERSION, lifespan=_lifespan(config, manager))
    app.router.route_class = StrictJSONRoute  # JSON bodies parse strictly: a typed 422, never a 500
    app.state.sessions = manager
    app.state.config = config
    _add_error_handlers(app)
    _add_service_routes(app, manager, config)
    _add_session_routes(app, manager)
    _add_call_routes(app, manager)
    _add_checkpoint_routes(app, manager, config)
    _add_state_routes(app, manager)
    # the toolkit's guards, outermost first: Host and web origins, the token (checked before any
    # read), the body's size and time limits, so even a request the router would refuse is cut off early
    exposure = Exposure(
        host=config.host,
        credentials=config.credentials,
        allowed_hosts=config.allowed_hosts,
        public_paths=PUBLIC_PATHS,
        max_body_bytes=config.max_body_bytes,
        body_timeout_s=config.body_timeout_s,
    )
    secure(app, exposure, render_error)
    return app


def _lifespan(
    config: ServiceConfig, manager: SessionManager
) -> Callable[[FastAPI], contextlib.AbstractAsyncContextManager[None]]:
    """The app's lifespan: the idle reaper runs while it serves; every session closes at the end."""

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async def reaper() -> None:
            while True:
                await asyncio.sleep(config.reap_every_s)
                manager.reap()

        task = asyncio.create_task(reaper())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            manager.close_all()

    return lifespan


def _add_error_handlers(app: FastAPI) -> None:
    """Service errors, invalid bodies and the framework's own HTTP errors, all as typed bodies."""

    @app.exception_handler(ServiceError)
    async def _service_error(_: Request, exc: ServiceError) -> JSONResponse:
        return _error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _error_response(ServiceError(422, "bad_request", _problems(exc.errors(), 1)))

    @app.exception_handler(HTTPException)
    async def _http_error(_: Request, exc: HTTPException) -> JSONResponse:
        kind = _STATUS_KINDS.get(exc.status_code, "bad_request")
        return _error_response(ServiceError(exc.status_code, kind, str(exc.detail)))


def _add_service_routes(app: FastAPI, manager: SessionManager, config: ServiceConfig) -> None:
    """/health and /apps."""

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {
            "status": "ok",
            "service": SERVICE_NAME,
            "api_version": API_VERSION,
            "sessions": len(manager),
            "max_sessions": config.max_sessions,
        }

    @app.get("/apps")
    async def apps() -> dict[str, Any]:
        from toolgym.mocks.apps import ALL_APPS

        return {
            "apps": [
                {"name": name, "description": cls.description, "version": cls.version}
                for name, cls in ALL_APPS.items()
            ]
        }


def _add_session_routes(app: FastAPI, manager: SessionManager) -> None:
    """Opening, listing, reading and closing the caller's sessions, and a session's tools."""

    @app.post("/sessions", status_code=201)
    async def create_session(body: CreateSession, caller: Caller) -> dict[str, Any]:
        session = manager.create(body.apps, body.seed, body.clock, body.prefixes, owner=caller)
        return session.info(manager.now())

    @app.get("/sessions")
    async def list_sessions(caller: Caller) -> dict[str, Any]:
        now = manager.now()
        return {"sessions": [s.info(now) for s in manager.list(caller)]}

    @app.get("/sessions/{sid}")
    async def get_session(sid: str, caller: Caller) -> dict[str, Any]:
        return manager.get(sid, caller).info(manager.now())

    @app.delete("/sessions/{sid}")
    async def delete_session(sid: str, caller: Caller) -> dict[str, Any]:
        manager.delete(sid, caller)
        return {"deleted": sid}

    @app.get("/sessions/{sid}/tools")
    async def tools(sid: str, caller: Caller) -> dict[str, Any]:
        return {"tools": [tool_schema(t) for t in manager.get(sid, caller).world.tools]}


def _run_call(manager: SessionManager, sid: str, caller: str, body: CallBody) -> str:
    """One API call on the session's world: the response body, JSON."""
    session = manager.get(sid, caller)
    obs = session.world.step(ToolCall(name=body.name, arguments=body.arguments, call_id=body.call_id))
    session.calls += 1
    return f'{{"observation":{obs.model_dump_json()},"state_hash":"{session.world.state_hash()}"}}'


def _add_call_routes(app: FastAPI, manager: SessionManager) -> None:
    """POST /sessions/{sid}/call, served by a plain Starlette route in front of FastAPI's (which
    stays for the OpenAPI schema)."""

    @app.post("/sessions/{sid}/call")
    async def call(sid: str, caller: Caller, body: CallBody) -> Response:
        return Response(_run_call(manager, sid, caller, body), media_type="application/json")

    async def fast_call(request: Request) -> Response:
        """The same endpoint as a plain Starlette route: the per-call path skips FastAPI's
        dependency and response machinery (about a third of a call's server time)."""
        try:
            body = CallBody.model_validate(parse_json(await request.body()))
        except BodyError as exc:
            raise ServiceError(422, "bad_request", str(exc)) from None
        except ValidationError as exc:
            raise ServiceError(422, "bad_request", _problems(exc.errors(), 0)) from None
        caller = client_of(request.scope)
        return Response(
            _run_call(manager, request.path_params["sid"], caller, body), media_type="application/json"
        )

    app.router.routes.insert(0, Route("/sessions/{sid}/call", fast_call, methods=["POST"]))


def _add_checkpoint_routes(app: FastAPI, manager: SessionManager, config: ServiceConfig) -> None:
    """Moving a session's world back: reset, checkpoint and restore; and forking it."""

    @app.post("/sessions/{sid}/reset")
    async def reset(sid: str, caller: Caller, body: ResetBody | None = None) -> dict[str, Any]:
        session = manager.get(sid, caller)
        world = session.world
        body = body or ResetBody()
        world.reset(
            seed=world.seed if body.seed is None else body.seed,
            clock=world.start if body.clock is None else body.clock,
        )
        return {"state_hash": world.state_hash()}

    @app.post("/sessions/{sid}/checkpoint")
    async def checkpoint(sid: str, caller: Caller, body: NameBody) -> dict[str, Any]:
        world = manager.get(sid, caller).world
        held = world.store.checkpoints
        if body.name not in held and len(held) >= config.max_checkpoints:
            raise ServiceError(
                400, "bad_request", f"at most {config.max_checkpoints} checkpoints per session"
            )
        world.checkpoint(body.name)
        return {"checkpoint": body.name, "state_hash": world.state_hash()}

    @app.post("/sessions/{sid}/restore")
    async def restore(sid: str, caller: Caller, body: NameBody) -> dict[str, Any]:
        world = manager.get(sid, caller).world
        try:
            world.restore(body.name)
        except KeyError as exc:
            raise ServiceError(404, "unknown_checkpoint", str(exc).strip("\"'")) from None
        return {"state_hash": world.state_hash()}

    @app.post("/sessions/{sid}/fork", status_code=201)
    async def fork(sid: str, caller: Caller) -> dict[str, Any]:
        return manager.fork(sid, caller).info(manager.now())


def _add_state_routes(app: FastAPI, manager: SessionManager) -> None:
    """Reading a session's world: its state hash, diff, rows and state scores."""

    @app.get("/sessions/{sid}/state_hash")
    async def state_hash(sid: str, caller: Caller) -> dict[str, Any]:
        return {"state_hash": manager.get(sid, caller).world.state_hash()}

    @app.post("/sessions/{sid}/diff")
    async def diff(sid: str, caller: Caller) -> dict[str, Any]:
        return {"diff": manager.get(sid, caller).world.take_diff()}

    @app.post("/sessions/{sid}/rows")
    async def rows(sid: str, caller: Caller, body: RowsBody) -> dict[str, Any]:
        world = manager.get(sid, caller).world
        try:
            found = world.rows(body.table, body.where)
        except KeyError as exc:
            raise ServiceError(400, "bad_request", str(exc).strip("\"'")) from None
        from toolgym.mocks.store import jsonable

        return {"rows": [{k: jsonable(v) for k, v in r.items()} for r in found]}

    @app.post("/sessions/{sid}/score")
    async def score(sid: str, caller: Caller, body: ScoreBody) -> dict[str, Any]:
        return {"scores": _state_scores(manager.get(sid, caller), body)}


def _state_scores(session: Session, body: ScoreBody) -> dict[str, float]:
    """`toolgym.envs.rewards.state_scores` on the session's world: the golden chain replayed on a
    fresh world must reach the same hash (each call doing what its step says: succeeding, or
    failing with its `expect_error`), and the assertions must hold."""
    from toolgym.mocks.rewards import STATE_ASSERTIONS, GoldenReplayError, check_assertions, replay_golden

    world = session.world
    try:
        assertions = STATE_ASSERTIONS.validate_python(body.expected_state)
    except ValidationError as exc:  # short lines, as a task file's problems read
        problems = "; ".join(validation_lines(exc.errors(), within=("expected_state",)))
        raise ServiceError(400, "bad_request", f"score: {problems}") from None
    try:
        golden = replay_golden(
            body.apps or session.apps,
            world.seed if body.seed is None else body.seed,
            world.start if body.clock is None else body.clock,
            body.golden,
            prefixes=session.prefixes,
        )
    except GoldenReplayError:
        return {"golden_error": 1.0, "state_match": 0.0, "assertions": 0.0, "state": 0.0}
    except (KeyError, ValueError) as exc:
        raise ServiceError(400, "bad_request", f"score: {exc}") from None
    try:
        same_state = golden.state_hash() == world.state_hash()
    finally:
        golden.close()
    try:
        report = check_assertions(world, assertions)
    except ValueError as exc:
        raise ServiceError(400, "bad_request", f"score: {exc}") from None
    return {
        "state_match": float(same_state),
        "assertions": report.score,
        "state": float(same_state and report.passed),
    }
