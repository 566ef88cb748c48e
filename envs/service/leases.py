"""Leases of the env service's HTTP sessions: a session whose client stops renewing it is closed.

A WebSocket session lives as long as its connection, so a client that dies frees its slot at
once. An HTTP session has no connection to die with, so without a lease it waits for the idle
reaper (`idle_timeout_s`, 600 s by default). A client that asks for a lease (`lease_s` in the body
of the reset that opens the session, or any later reset) promises to renew it: any request that
names the session renews it, and so does `POST /leases {"session_ids": [...]}`, the heartbeat
`RemoteToolEnv` sends from a background thread while it holds a session. A lease that runs out
closes the session (its episode's trace ends `aborted`) within a tick, a quarter of the shortest
lease. A session in the middle of a request never runs out: its lease starts again when the
request ends. A renewed session also counts as active for the idle reaper, so a live client
that thinks for an hour between steps keeps its session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

MIN_LEASE_S = 1.0  # shorter leases would close the sessions of live clients on a loaded machine
MAX_TICK_S = 5.0


class LeaseError(ValueError):
    """A lease request that is not a number of seconds."""


@dataclass
class _Lease:
    seconds: float
    deadline: float


class Leases:
    """The leased sessions by id, on `clock` (monotonic seconds; tests drive their own)."""

    def __init__(
        self,
        *,
        default_s: float | None = None,
        max_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.default_s = default_s
        self.max_s = max_s
        self.clock = clock
        self._leases: dict[str, _Lease] = {}
        self._reaper: asyncio.Task[None] | None = None
        self._expire: Callable[[str], Awaitable[None]] = self._forget

    def grant(self, session_id: str, requested: Any) -> float | None:
        """Lease `session_id` for `requested` seconds (clamped to [MIN_LEASE_S, max_s]); with None,
        a session that has no lease gets the server's default, one that has keeps it. Returns the
        lease in force (None: the session is not leased)."""
        if requested is None:
            lease = self._leases.get(session_id)
            if lease is not None:
                return lease.seconds
            requested = self.default_s
            if requested is None:
                return None
        if isinstance(requested, bool) or not isinstance(requested, int | float) or not requested > 0:
            raise LeaseError(f"lease_s is a number of seconds > 0, not {requested!r}")
        seconds = max(MIN_LEASE_S, float(requested))
        if self.max_s is not None:
            seconds = min(seconds, self.max_s)
        if not math.isfinite(seconds):
            raise LeaseError("lease_s must be finite")
        self._leases[session_id] = _Lease(seconds, self.clock() + seconds)
        self._start_reaper()
        return seconds

    def renew(self, session_id: str) -> None:
        lease = self._leases.get(session_id)
        if lease is not None:
            lease.deadline = self.clock() + lease.seconds

    def drop(self, session_id: str) -> None:
        self._leases.pop(session_id, None)

    def describe(self, session_id: str) -> dict[str, float]:
        """The `/sessions` row fields of a leased session: its lease and the seconds left of it."""
        lease = self._leases.get(session_id)
        if lease is None:
            return {}
        return {"lease_s": lease.seconds, "lease_left_s": round(max(0.0, lease.deadline - self.clock()), 3)}

    def expired(self) -> list[str]:
        now = self.clock()
        return [sid for sid, lease in self._leases.items() if lease.deadline < now]

    def tick_s(self) -> float:
        shortest = min((lease.seconds for lease in self._leases.values()), default=4 * MAX_TICK_S)
        return min(MAX_TICK_S, shortest / 4)

    # ---- the reaper: a task on the server's event loop, started by the first lease ------------
    def bind(self, expire: Callable[[str], Awaitable[None]]) -> None:
        """`expire(session_id)` closes a session whose lease ran out (or renews a busy one)."""
        self._expire = expire

    def _start_reaper(self) -> None:
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.get_running_loop().create_task(self._reap())

    async def _forget(self, session_id: str) -> None:
        self.drop(session_id)

    async def _reap(self) -> None:
        while True:
            await asyncio.sleep(self.tick_s())
            for session_id in self.expired():
                lease = self._leases.get(session_id)
                if lease is None or lease.deadline >= self.clock():  # renewed meanwhile
                    continue
                try:
                    await self._expire(session_id)
                except Exception as exc:  # one session's failed close never stops the reaper
                    logger.warning("closing session %s, whose lease ran out: %s", session_id, exc)
                    self.drop(session_id)

    async def stop(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
            self._reaper = None
