"""The env service's session table: every open session, HTTP and WebSocket, under one capacity
limit, each with its lane of worker threads (workers.py), its owner and its activity, and the
reaper that closes sessions idle for longer than the idle timeout.

A session is one `ToolgymEnvironment`. Its id names it everywhere: in the table, in its
observations and state, and as its trace folder. The table keeps each closed session's owner,
whose traces stay that client's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from toolgym.envs.service.catalog import ServiceError
from toolgym.envs.service.environment import ToolgymEnvironment
from toolgym.envs.service.traces import OUT_OF_DESCRIPTORS, out_of_descriptors
from toolgym.envs.service.wire import capacity_message
from toolgym.envs.service.workers import Lane, Workers
from toolgym.errors import redact_paths

logger = logging.getLogger(__name__)

T = TypeVar("T")
Transport = Literal["http", "ws"]
MIN_REAP_INTERVAL_S = 5.0  # the idle reaper looks every max(timeout / 4, this) seconds


class CapacityError(ServiceError):
    """The table is full: 503 `capacity` over HTTP, CAPACITY_REACHED over the WebSocket."""

    def __init__(self, active: int, most: int) -> None:
        super().__init__("capacity", capacity_message(active, most), 503)
        self.active, self.most = active, most


def typed(exc: BaseException) -> ServiceError:
    """Any error of a call as the typed error a client gets: a ServiceError as it is, a server out
    of file descriptors 503 `capacity`, anything else 500 `infra_error` (paths redacted)."""
    if isinstance(exc, ServiceError):
        return exc
    if isinstance(exc, OSError) and exc.errno in OUT_OF_DESCRIPTORS:
        return out_of_descriptors(exc)
    return ServiceError("infra_error", redact_paths(f"{type(exc).__name__}: {exc}"), 500)


@dataclass(eq=False)
class Session:
    id: str
    env: ToolgymEnvironment
    lane: Lane
    owner: str  # the client (toolgym.http.client_of) that opened it
    transport: Transport
    created_at: float = field(default_factory=time.time)  # wall clock, as /sessions shows it
    last_activity_at: float = field(default_factory=time.time)
    idle_since: float = field(default_factory=time.monotonic)  # what the idle reaper measures
    step_count: int = 0
    busy: bool = False  # a call of its client is running

    def row(self) -> dict[str, Any]:
        """The session's `/sessions` row (without its transport and lease)."""
        return {
            "session_id": self.id,
            "created_at": self.created_at,
            "last_activity_at": self.last_activity_at,
            "step_count": self.step_count,
            "environment_type": type(self.env).__name__,
        }


class SessionTable:
    """Open sessions by id, at most `max_sessions`; a session without activity for
    `idle_timeout_s` (None: never) is closed. `factory(session_id)` builds a session's env;
    `on_close(session_id)` hears of each session that leaves the table (closed or reaped)."""

    def __init__(
        self,
        factory: Callable[[str], ToolgymEnvironment],
        workers: Workers,
        *,
        max_sessions: int = 64,
        idle_timeout_s: float | None = None,
        steps_on_loop: bool = False,
        on_close: Callable[[str], None] = lambda session_id: None,
    ) -> None:
        self.factory = factory
        self.workers = workers
        self.max_sessions = max_sessions
        self.idle_timeout_s = idle_timeout_s
        self.steps_on_loop = steps_on_loop  # a session's calls run on the event loop
        self.on_close = on_close
        self.sessions: dict[str, Session] = {}
        self.owners: dict[str, str] = {}  # every session's client, kept after it closes
        self._reaper: asyncio.Task[None] | None = None

    def open(self, owner: str, transport: Transport) -> Session:
        """A new session (its env is built here, on the event loop: it holds no world until its
        first reset). Raises CapacityError when the table is full."""
        if len(self.sessions) >= self.max_sessions:
            raise CapacityError(len(self.sessions), self.max_sessions)
        session_id = str(uuid.uuid4())
        session = Session(session_id, self.factory(session_id), self.workers.lane(), owner, transport)
        self.sessions[session_id] = session
        self.owners[session_id] = owner
        self._start_reaper()
        return session

    def owned(self, session_id: str, client: str) -> bool:
        return self.owners.get(session_id) == client

    def touch(self, session_id: str, step: bool = False) -> None:
        """The session was active now (`step`: a step of it ran)."""
        session = self.sessions.get(session_id)
        if session is not None:
            session.last_activity_at, session.idle_since = time.time(), time.monotonic()
            session.step_count += step

    async def run(self, session: Session, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` on the session's lane, after its earlier calls (on the event loop with
        `steps_on_loop`); the session is busy meanwhile, which the idle reaper leaves alone. A
        session no longer in the table (closed, reaped) is refused, 410."""
        if self.sessions.get(session.id) is not session:
            raise ServiceError("session_closed", f"session {session.id} is closed", 410)
        session.busy = True
        try:
            return fn(*args) if self.steps_on_loop else await session.lane.run(fn, *args)
        finally:
            session.busy = False

    async def close(self, session_id: str) -> None:
        """The session leaves the table now; its env closes on its lane, after the call running
        there (its unfinished episode's trace ends `aborted`)."""
        session = self.sessions.pop(session_id, None)
        if session is None:
            return
        self.on_close(session_id)
        try:
            if self.steps_on_loop:
                session.env.close()
            else:
                await session.lane.run(session.env.close)
        except Exception as exc:  # a close that fails leaves nothing the table could undo
            logger.warning("closing session %s: %s", session_id, exc)

    # ---- the idle reaper: a task on the server's event loop, started by the first session ------
    def _start_reaper(self) -> None:
        if self.idle_timeout_s is not None and (self._reaper is None or self._reaper.done()):
            self._reaper = asyncio.get_running_loop().create_task(self._reap(self.idle_timeout_s))

    async def _reap(self, timeout_s: float) -> None:
        while True:
            await asyncio.sleep(max(timeout_s / 4, MIN_REAP_INTERVAL_S))
            for session_id in [s.id for s in self.sessions.values() if self._idle(s, timeout_s)]:
                session = self.sessions.get(session_id)  # active again meanwhile: kept
                if session is not None and self._idle(session, timeout_s):
                    await self.close(session_id)

    @staticmethod
    def _idle(session: Session, timeout_s: float) -> bool:
        return not session.busy and time.monotonic() - session.idle_since > timeout_s

    async def stop(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
            self._reaper = None
