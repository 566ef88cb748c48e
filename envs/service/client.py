"""`RemoteToolEnv`: a `gymnasium.Env` on a session of `toolgym env-server`.

    env = RemoteToolEnv("http://127.0.0.1:8100", config={"tasks": "ctool", "protocol": "react"})
    obs, info = env.reset(seed=0, options={"task": "ctool-express-track-001"})
    obs, reward, terminated, truncated, info = env.step("Thought: ...\nAction: ...")

It speaks the service's wire protocol itself (OpenEnv's, over a WebSocket by default, or the
stateful HTTP routes with `transport="http"`), so it needs no openenv-core install, and vector
envs and RL loops take it like any env. Observations, rewards and `info` are the server-side
ToolEnv's (`info["timing"]` the server's `Timing`; `info["session_id"]` added).

A server that cannot be reached, dies, answers garbage, is full or has lost the session (reaped
when idle) is an `infra_error` observation, never an exception: reset returns it as the
observation, step returns it with `truncated=True` (the session is gone), and the next reset
opens a new session. A request the
server refuses (step after the episode ended, an unknown task) raises `RemoteEnvError`, as the
same misuse raises in-process.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import select
import socket
import threading
import time
import weakref
from collections.abc import Mapping
from typing import Any, Literal, NoReturn, SupportsFloat
from urllib.parse import urlencode, urlsplit

import gymnasium as gym
from websockets.exceptions import ConnectionClosed, WebSocketException
from websockets.sync.client import ClientConnection, connect

from toolgym.actions import AskUser, FinalAnswer, NoCall, Observation, ToolCall
from toolgym.envs.spaces import AnyText
from toolgym.envs.tool_env import MAX_OBSERVATION_CHARS, Timing
from toolgym.errors import ErrorKind
from toolgym.protocols.base import MAX_OUTPUT_CHARS

Transport = Literal["ws", "http"]
DEFAULT_LEASE_S = 15.0  # an HTTP session outlives its dead client by this much at most
_ACTION_TYPES = (ToolCall, FinalAnswer, NoCall, AskUser)


class RemoteEnvError(RuntimeError):
    """The server refused a request (`kind`: episode_over, not_reset, argument_error, ...)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


class _Unreachable(Exception):
    """The transport failed: no server, a dropped connection, a torn or non-JSON answer, a
    server that cannot take a session (full, or its env factory failed)."""


class _SessionLost(_Unreachable):
    """The server no longer has the session (reaped when idle, closed): not the agent's doing."""


# refusals that are the infrastructure's, not the caller's: an infra_error, never an exception
_LOST_KINDS = frozenset({"session_closed", "unknown_session"})
_CLOSE_WAIT_S = 5.0  # the longest close() waits for a server to end its side of a /ws session
_SERVER_KINDS = frozenset({"capacity", "capacity_reached", "factory_error", "session_error", "infra_error"})


def _ws_url(url: str) -> str:
    base = url.rstrip("/")
    for plain, ws in (("http://", "ws://"), ("https://", "wss://")):
        if base.startswith(plain):
            return ws + base[len(plain) :] + "/ws"
    return base + "/ws"


def _http_url(url: str) -> str:
    base = url.rstrip("/")
    for ws, plain in (("ws://", "http://"), ("wss://", "https://")):
        if base.startswith(ws):
            return plain + base[len(ws) :]
    return base


class KeepAliveHttp:
    """One keep-alive HTTP/1.1 connection to the server (the stdlib's: a request costs a fraction
    of a pooled client's, which matters at a request per step), reopened when the server has
    closed it (its keep-alive timeout) or a request failed."""

    def __init__(
        self, url: str, headers: Mapping[str, str], timeout_s: float, connect_timeout_s: float
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the server's URL is http(s)://host[:port], not {url!r}")
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port
        self.prefix = parts.path.rstrip("/")
        self.headers = {**headers, "Content-Type": "application/json"}
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self._conn: http.client.HTTPConnection | None = None

    def request(
        self, method: str, path: str, body: Any = None, params: Mapping[str, str] | None = None
    ) -> tuple[int, bytes]:
        """(status, body) of one request; OSError or http.client.HTTPException when it failed."""
        target = self.prefix + path + (f"?{urlencode(params)}" if params else "")
        data = json.dumps(body).encode() if body is not None else None
        conn = self._connection()
        try:
            conn.request(method, target, data, self.headers)
            response = conn.getresponse()
            content = response.read()
        except BaseException:
            self.close()
            raise
        if response.will_close:
            self.close()
        return response.status, content

    def _connection(self) -> http.client.HTTPConnection:
        conn = self._conn
        if conn is not None and conn.sock is not None and not _readable(conn.sock):
            return conn
        self.close()
        kind = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        conn = kind(self.host, self.port, timeout=self.connect_timeout_s)
        conn.connect()
        assert conn.sock is not None
        conn.sock.settimeout(self.timeout_s)
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._conn = conn
        return conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _readable(sock: socket.socket) -> bool:
    """Between requests a kept-alive socket has nothing to read: readable means the server closed
    it. poll where there is one: select refuses descriptors past 1024, which a busy process has."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([sock], [], [], 0)[0])


class _LeaseKeeper:
    """One thread per process renews the leases of every RemoteToolEnv's HTTP session, one
    `POST /leases` per server and credentials each round, every third of the shortest lease, for
    as long as the env lives and is open: a live client keeps its sessions however slowly it
    steps, and a dead one's are closed by the server a lease later. The thread ends when no env
    holds a lease; a forked child starts its own (the parent's sessions are the parent's)."""

    def __init__(self) -> None:
        self._after_fork()
        os.register_at_fork(after_in_child=self._after_fork)

    def _after_fork(self) -> None:
        self._lock = threading.Lock()
        self._envs: weakref.WeakSet[RemoteToolEnv] = weakref.WeakSet()
        self._thread: threading.Thread | None = None

    def hold(self, env: RemoteToolEnv) -> None:
        with self._lock:
            self._envs.add(env)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="toolgym-leases", daemon=True)
                self._thread.start()

    def release(self, env: RemoteToolEnv) -> None:
        with self._lock:
            self._envs.discard(env)

    def _round(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], tuple[list[str], float]] | None:
        """The session ids to renew by (server, credentials), with the shortest lease among them;
        None (and the thread ends) when no env holds a lease."""
        with self._lock:
            groups: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[list[str], float]] = {}
            for env in list(self._envs):
                sid, lease = env.session_id, env._lease_s
                if sid is None or lease is None:
                    continue
                key = (env.url, tuple(sorted(env._headers.items())))
                ids, shortest = groups.get(key, ([], lease))
                groups[key] = ([*ids, sid], min(shortest, lease))
            if not groups:
                self._thread = None
                return None
            return groups

    def _run(self) -> None:
        connections: dict[tuple[str, tuple[tuple[str, str], ...]], KeepAliveHttp] = {}
        try:
            while (groups := self._round()) is not None:
                interval = min(lease for _, lease in groups.values()) / 3
                for key in set(connections) - set(groups):
                    connections.pop(key).close()
                for key, (ids, _) in groups.items():
                    http = connections.get(key) or KeepAliveHttp(key[0], dict(key[1]), interval, interval)
                    connections[key] = http
                    with contextlib.suppress(*_HTTP_ERRORS):  # a dead server: the next step says so
                        http.request("POST", "/leases", {"session_ids": ids})
                time.sleep(interval)
        finally:
            for http in connections.values():
                http.close()


_HTTP_ERRORS = (OSError, http.client.HTTPException)
_LEASES = _LeaseKeeper()


def step_body(action: Any) -> dict[str, Any]:
    """The wire form of a step's input: raw text, an OpenAI-style message, or action(s)."""
    if isinstance(action, str):
        return {"text": action}
    if isinstance(action, _ACTION_TYPES):
        return {"action": action.model_dump(mode="json")}
    if isinstance(action, list) and action and all(isinstance(a, _ACTION_TYPES) for a in action):
        return {"action": [a.model_dump(mode="json") for a in action]}
    if isinstance(action, Mapping):
        return {"message": dict(action)}
    raise TypeError(f"expected model output text, a message or toolgym actions, got {type(action).__name__}")


class RemoteToolEnv(gym.Env[str, Any]):
    """A ToolEnv session on a server, as a Gymnasium env (see the module docstring)."""

    metadata = {"render_modes": []}  # noqa: RUF012 - gymnasium's convention

    def __init__(
        self,
        url: str,
        *,
        config: Mapping[str, Any] | None = None,
        token: str | None = None,
        transport: Transport = "ws",
        agent: str = "remote",
        timeout_s: float = 60.0,
        connect_timeout_s: float = 5.0,
        lease_s: float | None = DEFAULT_LEASE_S,
    ) -> None:
        """`config`: the session's `SessionConfig` fields (tasks, tools, protocol, reward, seed,
        max_steps), sent with every reset; `agent` names the agent in the server-side traces.
        `lease_s` (HTTP): the server closes the session this long after this process stops
        renewing it, which a background thread does while the env is open (None: no lease; the
        server's idle timeout alone frees the session of a client that died)."""
        if transport not in ("ws", "http"):
            raise ValueError(f"transport is 'ws' or 'http', not {transport!r}")
        self.url = _http_url(url)
        self.config = dict(config) if config is not None else None
        self.transport = transport
        self.agent = agent
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.observation_space = AnyText(MAX_OBSERVATION_CHARS)
        self.action_space = AnyText(MAX_OUTPUT_CHARS)
        self.session_id: str | None = None
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = KeepAliveHttp(self.url, self._headers, timeout_s, connect_timeout_s)
        self._ws: ClientConnection | None = None
        self._connections = contextlib.ExitStack()
        self._live = False  # a session holds an episode the server will step
        self.lease_s = lease_s
        self._lease_s: float | None = None  # the lease the server granted the session

    # ---- gymnasium ---------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        task = (options or {}).get("task")
        if task is not None and not isinstance(task, str):
            raise TypeError("a remote env takes options['task'] as a task id of the server's task set")
        data: dict[str, Any] = {"agent": self.agent}
        if seed is not None:
            data["seed"] = seed
        if task is not None:
            data["task_id"] = task
        if self.config is not None:
            data["config"] = self.config
        try:
            try:
                payload = self._call("reset", data)
            except _SessionLost:
                self._live = False  # the server reaped or closed the session: open a new one
                payload = self._call("reset", data)
        except _Unreachable as exc:
            self._live = False
            text, info = self._infra(exc)
            return text, info
        self._live = True
        observation = payload.get("observation", {})
        self.session_id = observation.get("session_id") or self.session_id
        granted = payload.get("lease_s")
        if isinstance(granted, int | float) and granted > 0:
            self._lease_s = float(granted)
            _LEASES.hold(self)
        return str(observation.get("text", "")), self._info(observation)

    def step(self, action: Any) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        body = step_body(action)
        if not self._live:
            text, info = self._infra(_Unreachable("no live session: the last reset met an infra error"))
            return text, 0.0, False, True, info
        try:
            payload = self._call("step", body)
        except _Unreachable as exc:
            self._live = False
            text, info = self._infra(exc)
            return text, 0.0, False, True, info
        observation = payload.get("observation", {})
        reward = payload.get("reward")
        return (
            str(observation.get("text", "")),
            float(reward) if reward is not None else 0.0,
            bool(observation.get("terminated", False)),
            bool(observation.get("truncated", False)),
            self._info(observation),
        )

    def close(self) -> None:
        _LEASES.release(self)
        self._lease_s = None
        if self.transport == "http" and self.session_id is not None:
            with contextlib.suppress(*_HTTP_ERRORS):  # a dead server took the session with it
                self._http.request("POST", "/close", {"session_id": self.session_id})
            self.session_id = None
        self._disconnect()
        self._http.close()
        super().close()

    # ---- beyond gymnasium -----------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The session's state: task, step index, state hash and diff, error counts, trace name."""
        try:
            if self.transport == "ws":
                return dict(self._ws_call({"type": "state"}))
            return dict(self._http_call("GET", "/state", params={"session_id": self.session_id or ""}))
        except _Unreachable as exc:
            raise RemoteEnvError(ErrorKind.INFRA_ERROR.value, str(exc)) from None

    def trace(self, name: str | None = None) -> bytes:
        """A trace file of this session from the server (default: the current episode's)."""
        name = name or self.state().get("trace")
        if not name or not self.session_id:
            raise RemoteEnvError("unknown_trace", "this session has no trace")
        try:
            status, content = self._http.request("GET", f"/sessions/{self.session_id}/traces/{name}")
        except _HTTP_ERRORS as exc:
            raise RemoteEnvError(ErrorKind.INFRA_ERROR.value, str(exc)) from None
        if status != 200:
            raise RemoteEnvError(*_error_of(status, content))
        return content

    # ---- transport ------------------------------------------------------------------------------
    def _call(self, kind: Literal["reset", "step"], data: dict[str, Any]) -> dict[str, Any]:
        if self.transport == "ws":
            return self._ws_call({"type": kind, "data": data})
        if kind == "reset" and self.lease_s is not None:
            data = {**data, "lease_s": self.lease_s}
        if kind == "reset" and self.session_id is not None:
            if self._live:
                data = {**data, "session_id": self.session_id}
            else:  # an episode lost to the infrastructure: leave nothing behind on the server
                with contextlib.suppress(*_HTTP_ERRORS):
                    self._http.request("POST", "/close", {"session_id": self.session_id})
                self.session_id = None
        elif kind == "step":
            data = {"session_id": self.session_id, "action": data}
        return self._http_call("POST", f"/{kind}", data)

    def _ws_call(self, message: dict[str, Any]) -> dict[str, Any]:
        try:
            if self._ws is None:
                # entered as a context manager: the only form websockets >= 17.1 keeps undeprecated
                self._ws = self._connections.enter_context(
                    connect(
                        _ws_url(self.url),
                        additional_headers=self._headers,
                        open_timeout=self.connect_timeout_s,
                        max_size=None,
                        compression=None,  # deflating each ~1.4 kB answer costs more than it saves on a LAN
                    )
                )
            # a server that refuses a session says why, then closes: a failed send reads it below
            with contextlib.suppress(ConnectionClosed):
                self._ws.send(json.dumps(message))
            raw = self._ws.recv(timeout=self.timeout_s)
            reply = json.loads(raw)
        except (OSError, TimeoutError, WebSocketException, ValueError) as exc:
            self._disconnect()
            raise _Unreachable(f"{type(exc).__name__}: {exc}") from None
        if not isinstance(reply, dict):
            self._disconnect()
            raise _Unreachable(f"the server answered {type(reply).__name__}, not an object")
        data = reply.get("data", {})
        if not isinstance(data, dict):
            raise _Unreachable("the server's answer has no data object")
        if reply.get("type") == "error":
            said = str(data.get("message", "unknown error"))
            kind, _, text = said.partition("] ")
            if kind.startswith("[") and text:
                kind = kind[1:]
            else:
                kind, text = str(data.get("code", "error")).lower(), said
            self._refused(kind, text)
        return data

    def _refused(self, kind: str, message: str) -> NoReturn:
        """A refusal: the infrastructure's (lost session, full server) or the caller's."""
        if kind in _LOST_KINDS or kind in _SERVER_KINDS:
            self._disconnect()  # a WebSocket's session is its connection: the next call opens another
            raise (_SessionLost if kind in _LOST_KINDS else _Unreachable)(f"{kind}: {message}")
        raise RemoteEnvError(kind, message)

    def _http_call(
        self, method: str, path: str, body: Any = None, params: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        try:
            status, content = self._http.request(method, path, body, params)
            answer = json.loads(content)
        except (*_HTTP_ERRORS, ValueError) as exc:
            raise _Unreachable(f"{type(exc).__name__}: {exc}") from None
        if status >= 500 or not isinstance(answer, dict):
            raise _Unreachable(f"HTTP {status}: {_text(content)}")
        if status != 200:
            self._refused(*_error_of(status, content))
        return answer

    def _disconnect(self) -> None:
        if self._ws is not None:
            # a dead connection has nothing to close
            with contextlib.suppress(OSError, TimeoutError, WebSocketException):
                self._ws.send(json.dumps({"type": "close"}))
                # the server ends the session, then closes the connection: waiting for that close
                # (not only our own handshake, which its protocol layer answers at once) means the
                # slot is free when close() returns, so a reset right after it is not refused
                while True:
                    self._ws.recv(timeout=min(self.timeout_s, _CLOSE_WAIT_S))
            with contextlib.suppress(OSError, WebSocketException):
                self._connections.close()
            self._ws = None

    def _info(self, observation: Mapping[str, Any]) -> dict[str, Any]:
        info = dict(observation.get("info") or {})
        timing = info.get("timing")
        if isinstance(timing, Mapping):  # ToolEnv's own type: equal infos compare equal, as in-process
            info["timing"] = Timing(
                latency_s=float(timing.get("latency_s", 0.0)),
                tool_latency_s=float(timing.get("tool_latency_s", 0.0)),
            )
        info["session_id"] = observation.get("session_id")
        return info

    def _infra(self, exc: Exception) -> tuple[str, dict[str, Any]]:
        obs = Observation.from_error(ErrorKind.INFRA_ERROR, f"env server {self.url}: {exc}")
        kind = ErrorKind.INFRA_ERROR.value
        info = {
            "observations": [obs.model_dump(mode="json")],
            "actions": [],
            "error_kind": kind,
            "error_kinds": [kind],
            "session_id": self.session_id,
        }
        return obs.text, info


def _text(content: bytes) -> str:
    return content[:200].decode("utf-8", "replace")


def _error_of(status: int, content: bytes) -> tuple[str, str]:
    try:
        error = json.loads(content).get("error", {})
        return str(error.get("kind", "error")), str(error.get("message", _text(content)))
    except (ValueError, AttributeError):
        return "error", f"HTTP {status}: {_text(content)}"
