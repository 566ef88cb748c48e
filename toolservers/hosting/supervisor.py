"""Keeping a server alive for an episode: when a client meets an infra failure (the container was
killed, the server hangs), the supervisor checks the server and restarts it through its backend.

The failing step still shows `infra_error` (the call's outcome is unknown); the next step finds
the server back. Mock worlds rebuild their session from their journal (RemoteMockWorld); remote
tools are stateless and re-upload files the server lost.

    sup = Supervisor(backend, handle)
    tools = sup.wrap(RemoteToolSet(...))             # InfraError -> sup.recover() -> re-raised
    world = client.world(apps, on_infra_error=sup.recover)
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from toolgym.errors import InfraError
from toolgym.tools import BaseTool, ToolContext, ToolSet, WrappedTool
from toolgym.toolservers.hosting.base import ServerHandle, ServerHost

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RestartEvent:
    server: str
    reason: str  # "dead" (not running) or "unresponsive" (running, /health unanswered)
    error: str  # the client's error that led to the check
    restart_s: float  # from the decision to healthy again


class Supervisor:
    """Restarts one server when it is dead or unresponsive. Safe to call from several threads:
    concurrent failures of one outage lead to one restart."""

    def __init__(
        self,
        backend: ServerHost,
        handle: ServerHandle,
        *,
        probe_timeout_s: float = 2.0,
        max_restarts: int = 10,
        on_restart: Callable[[ServerHandle], None] | None = None,
    ) -> None:
        self.backend, self.handle = backend, handle
        self.probe_timeout_s = probe_timeout_s
        self.max_restarts = max_restarts
        self.on_restart = on_restart
        self.events: list[RestartEvent] = []
        self._lock = threading.Lock()

    def check(self) -> str | None:
        """None when the server runs and answers /health; else why not."""
        if not self.backend.alive(self.handle):
            return "dead"
        if not self.backend.healthy(self.handle, timeout_s=self.probe_timeout_s):
            return "unresponsive"
        return None

    def recover(self, exc: BaseException | None = None) -> bool:
        """Restart the server if it needs it; True when it was restarted (now or by a concurrent
        caller during this call)."""
        seen = self.handle.restarts
        with self._lock:
            if self.handle.restarts != seen:
                return True  # another caller restarted it while we waited
            reason = self.check()
            if reason is None:
                return False  # a transient failure: the server is fine
            if len(self.events) >= self.max_restarts:
                log.error(
                    "server %s is %s; not restarting (%d restarts already)",
                    self.handle.spec.name,
                    reason,
                    len(self.events),
                )
                return False
            log.warning("server %s is %s after %s; restarting", self.handle.spec.name, reason, exc)
            started = time.monotonic()
            self.backend.restart(self.handle)
            self.events.append(
                RestartEvent(
                    self.handle.spec.name, reason, f"{exc}" if exc else "", time.monotonic() - started
                )
            )
        if self.on_restart is not None:
            self.on_restart(self.handle)
        return True

    def wrap(self, tools: ToolSet) -> ToolSet:
        """The same tools; an InfraError from one makes the supervisor check the server."""
        return ToolSet(SupervisedTool(t, self) for t in tools)


class SupervisedTool(WrappedTool):
    """A tool whose infra failures trigger its server's supervisor (then propagate unchanged)."""

    def __init__(self, inner: BaseTool, supervisor: Supervisor) -> None:
        super().__init__(inner)
        self.supervisor = supervisor

    def invoke(self, arguments: Mapping[str, Any], ctx: ToolContext) -> Any:
        try:
            return self.inner.invoke(arguments, ctx)
        except InfraError as exc:
            self.supervisor.recover(exc)
            raise
