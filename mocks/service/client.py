"""Client of the mock service: `RemoteMockWorld` is a `toolgym.world.World` whose state lives in a
session on a mock server, so ToolEnv runs mock-app tasks against a server (a container, a lab
node) exactly as against an in-process MockWorld: same observations, same hashes and diffs.

    client = MockServiceClient("http://127.0.0.1:8100", token=...)
    world = client.world(["banking"], seed=0)
    env = ToolEnv(tasks=[task], world=world)  # the default reward asks the server for the state score

Failures: a server that cannot be reached, answers 5xx or does not answer in time raises
`InfraError` (the env turns it into an `infra_error` observation: not the agent's fault). The
world keeps a journal of what changed its state since the last reset (write calls, checkpoints,
restores, diffs); when its session is lost (the server restarted, the reaper closed it) or may
have half-applied a call, the next operation rebuilds the session from that journal on a fresh
session and checks the state hash, so the episode continues where it was. Mock apps are
deterministic, which is what makes the replay exact.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import httpx

from toolgym.actions import Observation, ToolCall
from toolgym.errors import ArgumentError, InfraError, error_for_kind
from toolgym.files import FileStore
from toolgym.tasks import Task, task_use_error
from toolgym.tools import DEFAULT_CLOCK, ReturnSpec, SchemaTool, ToolContext, ToolSet

DEFAULT_TIMEOUT_S = 30.0


class MockServiceError(RuntimeError):
    """The service refused a request the caller got wrong: unknown app or checkpoint, a limit,
    a missing token. `kind` is the service's error kind, `status` the HTTP status."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(f"{kind} ({status}): {message}")
        self.status, self.kind, self.message = status, kind, message


class SessionLost(InfraError):
    """The server no longer has the session (restarted, reaped)."""


class MockServiceClient:
    """HTTP client of one mock service (keep-alive connection pool). `uds` talks over a unix
    socket instead of TCP (the process backend without a network)."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        uds: str | None = None,
    ) -> None:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        transport = httpx.HTTPTransport(uds=uds) if uds else None
        self.timeout_s = timeout_s
        self._http = httpx.Client(base_url=url, headers=headers, timeout=timeout_s, transport=transport)

    @property
    def url(self) -> str:
        return str(self._http.base_url)

    @url.setter
    def url(self, value: str) -> None:
        """Point the client elsewhere (a restarted server on a new port)."""
        self._http.base_url = httpx.URL(value)

    def request(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        try:
            response = self._http.request(method, path, json=body)
        except httpx.TimeoutException as exc:
            raise InfraError(
                f"mock service at {self.url} did not answer {method} {path} within {self.timeout_s:g} s",
                data={"reason": "timeout"},
            ) from exc
        except httpx.TransportError as exc:
            raise InfraError(
                f"mock service at {self.url} unreachable: {type(exc).__name__}: {exc}",
                data={"reason": "unreachable"},
            ) from exc
        if response.status_code >= 500:
            raise InfraError(
                f"mock service answered {response.status_code} to {method} {path}: {response.text[:500]}",
                data={"reason": "server_error", "status": response.status_code},
            )
        try:
            payload = response.json()
        except ValueError:
            raise InfraError(
                f"mock service sent a non-JSON answer ({response.status_code}) to {method} {path}",
                data={"reason": "bad_response"},
            ) from None
        if response.status_code >= 400:
            error = payload.get("error", {}) if isinstance(payload, dict) else {}
            kind, message = str(error.get("kind", "error")), str(error.get("message", response.text[:500]))
            if kind == "unknown_session":
                raise SessionLost(message, data={"reason": "session_lost"})
            raise MockServiceError(response.status_code, kind, message)
        if not isinstance(payload, dict):
            raise InfraError(
                f"mock service sent {type(payload).__name__}, not an object", data={"reason": "bad_response"}
            )
        return payload

    # ---- the service API ---------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        return self.request("GET", "/health")

    def apps(self) -> list[dict[str, Any]]:
        return list(self.request("GET", "/apps")["apps"])

    def create_session(
        self,
        apps: Sequence[str],
        *,
        seed: int = 0,
        clock: datetime = DEFAULT_CLOCK,
        prefixes: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        body = {
            "apps": list(apps),
            "seed": seed,
            "clock": clock.isoformat(),
            "prefixes": dict(prefixes or {}),
        }
        return self.request("POST", "/sessions", body)

    def sessions(self) -> list[dict[str, Any]]:
        return list(self.request("GET", "/sessions")["sessions"])

    def delete_session(self, sid: str) -> None:
        self.request("DELETE", f"/sessions/{sid}")

    def world(
        self,
        apps: Sequence[str],
        *,
        seed: int = 0,
        clock: datetime = DEFAULT_CLOCK,
        prefixes: Mapping[str, str] | None = None,
        on_infra_error: Callable[[InfraError], None] | None = None,
    ) -> RemoteMockWorld:
        return RemoteMockWorld(
            self, apps, seed=seed, clock=clock, prefixes=prefixes, on_infra_error=on_infra_error
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MockServiceClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _RemoteApiTool(SchemaTool):
    """A session's API. Arguments go to the server unvalidated: the server validates them with
    the app's own pydantic model, so errors read exactly as in-process."""

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        if not isinstance(arguments, Mapping):
            raise ArgumentError(
                f"{self.name}: arguments must be a JSON object, got {type(arguments).__name__}"
            )
        return dict(arguments)


OpKind = Literal["call", "checkpoint", "restore", "diff"]


@dataclass(frozen=True)
class JournalEntry:
    op: OpKind
    name: str = ""
    arguments: Mapping[str, Any] | None = None


class RemoteMockWorld:
    """A mock world in a server session; implements `toolgym.world.World`.

    `on_infra_error` is called when the server fails (unreachable, timed out, 5xx) before the
    InfraError propagates: a supervisor restarts the server there. `recoveries` counts the
    sessions rebuilt from the journal."""

    def __init__(
        self,
        client: MockServiceClient,
        apps: Sequence[str],
        *,
        seed: int = 0,
        clock: datetime = DEFAULT_CLOCK,
        prefixes: Mapping[str, str] | None = None,
        on_infra_error: Callable[[InfraError], None] | None = None,
        _session: dict[str, Any] | None = None,
    ) -> None:
        self.client = client
        self.apps = tuple(apps)
        self.prefixes = dict(prefixes or {})
        self.on_infra_error = on_infra_error
        self.seed, self.start = seed, clock
        self.recoveries = 0
        self._journal: list[JournalEntry] = []
        self._suspect = False
        self._closed = False
        info = _session or self._guarded(
            lambda: client.create_session(self.apps, seed=seed, clock=clock, prefixes=self.prefixes)
        )
        self.session_id: str = info["session_id"]
        self._hash: str = info["state_hash"]
        self._tools = self._build_tools()

    # ---- plumbing ----------------------------------------------------------------------------
    def _guarded(self, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Run a request; on a server failure mark the session suspect and tell the supervisor."""
        try:
            return fn()
        except SessionLost:
            raise
        except InfraError as exc:
            self._suspect = True
            if self.on_infra_error is not None:
                self.on_infra_error(exc)
            raise

    def _session_request(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        if self._closed:
            raise RuntimeError("this RemoteMockWorld is closed")
        if self._suspect:
            self._recover()

        def send() -> dict[str, Any]:
            return self.client.request(method, f"/sessions/{self.session_id}{path}", body)

        try:
            return self._guarded(send)
        except SessionLost:
            # the session was gone before this request ran: nothing of it happened, so rebuild
            # the session and send it again
            self._recover()
            return self._guarded(send)

    def _recover(self) -> None:
        """A fresh session with the state this world must have: reset values, then the journal
        replayed; the state hash must come out as last seen."""
        expected = self._hash
        info = self._guarded(
            lambda: self.client.create_session(
                self.apps, seed=self.seed, clock=self.start, prefixes=self.prefixes
            )
        )
        old, self.session_id = self.session_id, info["session_id"]
        self._suspect = False
        try:
            for entry in self._journal:
                self._replay(entry)
            got = self._guarded(
                lambda: self.client.request("GET", f"/sessions/{self.session_id}/state_hash")
            )["state_hash"]
        except MockServiceError as exc:
            raise InfraError(f"could not rebuild the session from its journal: {exc}") from exc
        if got != expected:
            raise InfraError(
                f"rebuilt session {self.session_id} has state {got[:12]}, expected {expected[:12]}",
                data={"reason": "recovery_mismatch"},
            )
        self._hash = got
        self.recoveries += 1
        # the old session may still exist (a call timed out but the server lived)
        with contextlib.suppress(InfraError, MockServiceError):
            self.client.delete_session(old)

    def _replay(self, entry: JournalEntry) -> None:
        path = f"/sessions/{self.session_id}"
        if entry.op == "call":
            body = {"name": entry.name, "arguments": dict(entry.arguments or {})}
            self._guarded(lambda: self.client.request("POST", path + "/call", body))
        elif entry.op == "diff":
            self._guarded(lambda: self.client.request("POST", path + "/diff"))
        else:
            self._guarded(lambda: self.client.request("POST", f"{path}/{entry.op}", {"name": entry.name}))

    def _build_tools(self) -> ToolSet:
        schemas = self._session_request("GET", "/tools")["tools"]
        tools = []
        for s in schemas:
            tools.append(
                _RemoteApiTool(
                    s["name"],
                    s["parameters"],
                    self._call_fn(s["name"], bool(s["mutates_state"])),
                    description=s["description"],
                    returns=[ReturnSpec.model_validate(r) for r in s["returns"]],
                    category=s["category"],
                    mutates_state=bool(s["mutates_state"]),
                    version=s["version"],
                    backend="mock-service",
                )
            )
        return ToolSet(tools)

    def _call_fn(self, name: str, mutates: bool) -> Callable[[dict[str, Any], ToolContext], Any]:
        def run(arguments: dict[str, Any], ctx: ToolContext) -> Any:
            return self._call(name, arguments, mutates)

        return run

    def _call(
        self, name: str, arguments: Mapping[str, Any], mutates: bool, call_id: str | None = None
    ) -> Any:
        body = {"name": name, "arguments": dict(arguments), "call_id": call_id}
        try:
            answer = self._session_request("POST", "/call", body)
        except MockServiceError as exc:  # e.g. arguments that are not JSON objects
            raise ArgumentError(f"{name}: {exc.message}") from None
        if mutates:  # failed writes change nothing, so replaying them is harmless and exact
            self._journal.append(JournalEntry("call", name, dict(arguments)))
        self._hash = answer["state_hash"]
        obs = Observation.model_validate(answer["observation"])
        if obs.error is not None:
            raise error_for_kind(obs.error.kind, obs.error.message, data=obs.content)
        return obs.content

    # ---- the World protocol ------------------------------------------------------------------
    def reset(self, *, seed: int, clock: datetime) -> None:
        self.seed, self.start = seed, clock
        self._journal.clear()
        if self._suspect:  # a fresh session at the new seed is the reset
            self._recover()
            return
        answer = self._session_request("POST", "/reset", {"seed": seed, "clock": clock.isoformat()})
        self._hash = answer["state_hash"]

    @property
    def tools(self) -> ToolSet:
        return self._tools

    def state_hash(self) -> str:
        # every state change goes through this object, and each answer carries the new hash
        if self._suspect:
            self._recover()
        return self._hash

    def take_diff(self) -> dict[str, Any]:
        diff: dict[str, Any] = self._session_request("POST", "/diff")["diff"]
        self._journal.append(JournalEntry("diff"))
        return diff

    def checkpoint(self, name: str) -> None:
        self._session_request("POST", "/checkpoint", {"name": name})
        self._journal.append(JournalEntry("checkpoint", name))

    def restore(self, name: str) -> None:
        try:
            answer = self._session_request("POST", "/restore", {"name": name})
        except MockServiceError as exc:
            if exc.kind == "unknown_checkpoint":
                raise KeyError(exc.message) from None
            raise
        self._journal.append(JournalEntry("restore", name))
        self._hash = answer["state_hash"]

    def fork(self) -> RemoteMockWorld:
        info = self._session_request("POST", "/fork")
        other = RemoteMockWorld(
            self.client,
            self.apps,
            seed=self.seed,
            clock=self.start,
            prefixes=self.prefixes,
            on_infra_error=self.on_infra_error,
            _session=info,
        )
        other._journal = list(self._journal)
        return other

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # the server may be gone or have forgotten the session: then nothing is left to free
        with contextlib.suppress(InfraError, MockServiceError):
            self.client.delete_session(self.session_id)

    # ---- conveniences ------------------------------------------------------------------------
    def step(self, call: ToolCall) -> Observation:
        """One call as ToolEnv would run it: failures become typed error observations."""
        return self._tools.call(call, ToolContext(files=_no_files()))

    def call(self, name: str, /, **arguments: Any) -> Any:
        """Run an API; raises the typed error on failure."""
        return self._tools.get(name).invoke(arguments, ToolContext(files=_no_files()))

    def rows(self, table: str, where: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        try:
            answer = self._session_request("POST", "/rows", {"table": table, "where": dict(where or {})})
        except MockServiceError as exc:
            raise KeyError(exc.message) from None
        return list(answer["rows"])

    def state_scores(self, task: Task) -> dict[str, float]:
        """The server-side `state_scores`: golden replay hash and the task's state assertions."""
        body = {
            "apps": list(task.apps or self.apps),
            "seed": task.seed,
            "clock": task.clock.isoformat(),
            "golden": [g.model_dump(mode="json") for g in task.golden],
            "expected_state": task.expected_state,
        }
        try:
            return dict(self._session_request("POST", "/score", body)["scores"])
        except MockServiceError as exc:
            if exc.status != 400:
                raise
            # the task is wrong (a table or column its expected_state names, a bad assertion), not
            # the service: said at the task's file and line, as an in-process world says it
            raise task_use_error(task, ValueError(exc.message.removeprefix("score: "))) from None

    def __enter__(self) -> RemoteMockWorld:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RemoteMockWorld({list(self.apps)}, session={self.session_id}, url={self.client.url})"


def session_worlds(
    client: MockServiceClient, on_infra_error: Callable[[InfraError], None] | None = None
) -> Callable[[Task], RemoteMockWorld | None]:
    """A world factory (`ToolEnv(world_factory=...)`): a task with apps gets a session of the
    client's service."""

    def world(task: Task) -> RemoteMockWorld | None:
        if not task.apps:
            return None
        return client.world(task.apps, seed=task.seed, clock=task.clock, on_infra_error=on_infra_error)

    return world


class ServiceWorlds:
    """The world builder of rollout workers whose mock-app tasks run in sessions of a mock service
    (`WorldSpec("toolgym.mocks.service.client:ServiceWorlds", {"url": ..., "token": ...})`): one
    client per worker, shared by the worlds of its envs."""

    def __init__(self, url: str, token: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.client = MockServiceClient(url, token=token, timeout_s=timeout_s)

    def __call__(self) -> Callable[[Task], RemoteMockWorld | None]:
        return session_worlds(self.client)

    def close(self) -> None:
        self.client.close()


_FILES: FileStore | None = None


def _no_files() -> FileStore:
    # mock APIs take no files; one lazily made store serves every context
    global _FILES
    if _FILES is None:
        from toolgym.files import FileStore

        _FILES = FileStore()
    return _FILES
