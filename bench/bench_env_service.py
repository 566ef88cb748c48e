"""Env-service benchmark, every figure measured side by side in one run.

    python bench/bench_env_service.py [--rounds N] [--quick]

Two servers, each its own process on 127.0.0.1, served the same way (uvicorn, access log off,
openenv-core's `HTTPEnvServer` underneath):
- `toolgym env-server`'s app, traces off (the overhead of the transport and session, not of disk),
  and a second one with traces on;
- openenv-core's echo environment: openenv ships it only as its `openenv init` template, so this
  file carries the template's Environment (reset, step echoing a message) written with openenv's
  own interface and served with openenv's own `create_fastapi_app`.

Workload: the oracle's golden chains of the bundled mock-app set `ctool` (reads and writes
interleaved, a reset per episode), raw ReAct text per step. Each round runs the same episodes
in-process (`ToolEnv.step`) and through every client, interleaved, so load drifts hit all alike.
A step's overhead is remote minus in-process latency of the same step in the same round (median
over steps); an episode's overhead likewise, reset included. Echo: the same clients against the
echo server, against `EchoEnvironment.step` in-process.

Clients (in this process): a raw WebSocket client (websockets' sync client, openenv's message
frames), raw HTTP (httpx, keep-alive), openenv-core's `GenericEnvClient(...).sync()`, and
toolgym's `RemoteToolEnv` (WebSocket and HTTP).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from websockets.sync.client import connect

from toolgym.toolservers.hosting.base import wait_healthy

ROOT = Path(__file__).resolve().parent.parent
TASK_SET = "ctool"

# ---- openenv's echo environment (the `openenv init` template), for the side-by-side ----------
ECHO_SERVER = """
import sys, uvicorn
from pydantic import Field
from openenv.core.env_server.http_server import create_fastapi_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State

class EchoAction(Action):
    message: str = Field(..., description="Message to echo back")

class EchoObservation(Observation):
    echoed_message: str = ""
    message_length: int = 0

class EchoEnvironment(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self):
        super().__init__()
        self._state = State(episode_id="e", step_count=0)

    def reset(self, seed=None, episode_id=None, **kwargs):
        self._state = State(episode_id=episode_id or "e", step_count=0)
        return EchoObservation(echoed_message="Echo environment ready!", done=False, reward=0.0)

    def step(self, action, timeout_s=None, **kwargs):
        self._state.step_count += 1
        message = action.message
        return EchoObservation(echoed_message=message, message_length=len(message), done=False,
                               reward=len(message) * 0.1, metadata={"step": self._state.step_count})

    @property
    def state(self):
        return self._state

if __name__ == "__main__":
    app = create_fastapi_app(EchoEnvironment, EchoAction, EchoObservation, max_concurrent_envs=8)
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
"""

TOOLGYM_SERVER = """
import sys, uvicorn
from pathlib import Path
from toolgym.envs.service.app import create_app
from toolgym.envs.service.catalog import Catalog, SessionConfig

trace_dir = Path(sys.argv[2]) if sys.argv[2] != "-" else None
app = create_app(Catalog.build(defaults=SessionConfig(tasks="ctool")), trace_dir=trace_dir, max_sessions=8)
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def server(code: str, *args: str) -> Iterator[str]:
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
    }
    proc = subprocess.Popen([sys.executable, "-c", code, str(port), *args], env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(
            url, timeout_s=120, alive=lambda: proc.poll() is None, logs=lambda: "", what=code.splitlines()[1]
        )
        yield url
    finally:
        proc.terminate()
        proc.wait(30)


# ---- clients: each runs one episode (reset, steps) and returns per-call latencies -------------
Episode = tuple[str, list[Any]]  # task id, the step inputs
Timings = tuple[float, list[float]]  # reset latency, step latencies


class RawWS:
    """openenv's frames over a bare websocket: what any trainer's client costs at least."""

    name = "raw WebSocket"

    def __init__(self, url: str) -> None:
        self.ws = connect(url.replace("http://", "ws://") + "/ws", max_size=None).__enter__()

    def call(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        self.ws.send(json.dumps({"type": kind, "data": data}))
        reply: dict[str, Any] = json.loads(self.ws.recv())
        if reply["type"] == "error":
            raise RuntimeError(reply)
        return reply

    def close(self) -> None:
        self.ws.close()


class RawHTTP:
    name = "raw HTTP"

    def __init__(self, url: str) -> None:
        self.http = httpx.Client(base_url=url)
        self.session: str | None = None

    def call(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        if kind == "step":
            data = {"action": data, **({"session_id": self.session} if self.session else {})}
        elif self.session:
            data = {**data, "session_id": self.session}
        response = self.http.post(f"/{kind}", json=data)
        response.raise_for_status()
        body: dict[str, Any] = response.json()
        self.session = body["observation"].get("session_id", self.session)
        return body

    def close(self) -> None:
        self.http.close()


class Generic:
    name = "GenericEnvClient (sync)"

    def __init__(self, url: str) -> None:
        from openenv.core.generic_client import GenericEnvClient

        self.client = GenericEnvClient(base_url=url).sync()
        self.client.connect()

    def call(self, kind: str, data: dict[str, Any]) -> Any:
        return self.client.reset(**data) if kind == "reset" else self.client.step(data)

    def close(self) -> None:
        self.client.close()


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run_client(client: Any, episodes: list[Episode], echo: bool) -> list[Timings]:
    out = []
    for task_id, steps in episodes:
        reset = {} if echo else {"task_id": task_id, "seed": 0}
        r = timed(lambda reset=reset: client.call("reset", reset))  # type: ignore[misc]
        lat = [
            timed(lambda s=s: client.call("step", {"message": s} if echo else {"text": s}))  # type: ignore[misc]
            for s in steps
        ]
        out.append((r, lat))
    return out


def run_remote_env(url: str, episodes: list[Episode], transport: str) -> list[Timings]:
    from toolgym.envs.service.client import RemoteToolEnv

    env = RemoteToolEnv(url, config={"tasks": TASK_SET}, transport=transport)  # type: ignore[arg-type]
    out = []
    try:
        for task_id, steps in episodes:
            r = timed(lambda task_id=task_id: env.reset(seed=0, options={"task": task_id}))  # type: ignore[misc]
            out.append((r, [timed(lambda s=s: env.step(s)) for s in steps]))  # type: ignore[misc]
    finally:
        env.close()
    return out


def run_local(episodes: list[Episode]) -> list[Timings]:
    from toolgym.envs.tool_env import ToolEnv

    catalog = _catalog()
    env = ToolEnv(catalog.tools, catalog.task_set(TASK_SET), protocol="react")
    out = []
    for task_id, steps in episodes:
        r = timed(lambda task_id=task_id: env.reset(seed=0, options={"task": task_id}))  # type: ignore[misc]
        out.append((r, [timed(lambda s=s: env.step(s)) for s in steps]))  # type: ignore[misc]
    env.close()
    return out


def run_local_echo(episodes: list[Episode]) -> list[Timings]:
    namespace: dict[str, Any] = {"__name__": "echo"}
    exec(compile(ECHO_SERVER, "echo", "exec"), namespace)  # the same class the echo server runs
    env, action = namespace["EchoEnvironment"](), namespace["EchoAction"]
    out = []
    for _, steps in episodes:
        r = timed(env.reset)
        out.append((r, [timed(lambda s=s: env.step(action(message=s))) for s in steps]))  # type: ignore[misc]
    return out


_CATALOG: Any = None


def _catalog() -> Any:
    global _CATALOG
    if _CATALOG is None:
        from toolgym.envs.service.catalog import Catalog

        _CATALOG = Catalog.build()
    return _CATALOG


def golden_episodes() -> list[Episode]:
    from toolgym.protocols import get_protocol

    protocol = get_protocol("react")
    tasks = _catalog().task_set(TASK_SET)
    return [(t.id, [protocol.format_action(g.action) for g in t.golden]) for t in tasks]


# ---- figures -------------------------------------------------------------------------------------
def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"


def steps_of(runs: list[list[Timings]]) -> list[float]:
    return [s for run in runs for _, lat in run for s in lat]


def paired(remote: list[list[Timings]], local: list[list[Timings]]) -> tuple[float, float]:
    """Median per-step and per-episode overhead: remote minus in-process, same step, same round."""
    steps, episodes = [], []
    for r_run, l_run in zip(remote, local, strict=True):
        for (r_reset, r_lat), (l_reset, l_lat) in zip(r_run, l_run, strict=True):
            steps += [a - b for a, b in zip(r_lat, l_lat, strict=True)]
            episodes.append(r_reset + sum(r_lat) - l_reset - sum(l_lat))
    return statistics.median(steps), statistics.median(episodes)


def table(title: str, rows: dict[str, list[list[Timings]]], base: str) -> list[str]:
    lines = [
        f"| {title} | step median | step p90 | step overhead vs in-process (median, paired) | episode overhead |",
        "|---|---|---|---|---|",
    ]
    for name, runs in rows.items():
        lat = sorted(steps_of(runs))
        p90 = lat[int(0.9 * (len(lat) - 1))]
        if name == base:
            lines.append(f"| {name} | {ms(statistics.median(lat))} | {ms(p90)} | base | base |")
        else:
            step, episode = paired(runs, rows[base])
            lines.append(
                f"| {name} | {ms(statistics.median(lat))} | {ms(p90)} | +{ms(step)} | +{ms(episode)} |"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="one round over a few episodes")
    args = parser.parse_args()
    episodes = golden_episodes()
    rounds = args.rounds
    if args.quick:
        episodes, rounds = episodes[:4], 1
    n_steps = sum(len(s) for _, s in episodes)
    print(
        f"{platform.node()}: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; python {platform.python_version()}"
    )
    print(f"workload: {len(episodes)} ctool episodes, {n_steps} steps per round, {rounds} rounds")
    with (
        tempfile.TemporaryDirectory() as traces,
        server(TOOLGYM_SERVER, "-") as toolgym_url,
        server(TOOLGYM_SERVER, traces) as traced_url,
        server(ECHO_SERVER) as echo_url,
    ):
        ours: dict[str, list[list[Timings]]] = {}
        echo: dict[str, list[list[Timings]]] = {}
        ws, http, generic = RawWS(toolgym_url), RawHTTP(toolgym_url), Generic(toolgym_url)
        traced_ws = RawWS(traced_url)
        ews, ehttp, egeneric = RawWS(echo_url), RawHTTP(echo_url), Generic(echo_url)
        for c in (ws, http, generic, traced_ws):
            c.call("reset", {"config": {"tasks": TASK_SET}})
        plan: list[tuple[dict[str, list[list[Timings]]], str, Callable[[], list[Timings]]]] = [
            (ours, "in-process ToolEnv.step", lambda: run_local(episodes)),
            (ours, "raw WebSocket", lambda: run_client(ws, episodes, False)),
            (ours, "raw HTTP (session routes)", lambda: run_client(http, episodes, False)),
            (ours, "GenericEnvClient (sync, WebSocket)", lambda: run_client(generic, episodes, False)),
            (ours, "RemoteToolEnv (WebSocket)", lambda: run_remote_env(toolgym_url, episodes, "ws")),
            (ours, "RemoteToolEnv (HTTP)", lambda: run_remote_env(toolgym_url, episodes, "http")),
            (ours, "raw WebSocket, traces on", lambda: run_client(traced_ws, episodes, False)),
            (echo, "in-process EchoEnvironment.step", lambda: run_local_echo(episodes)),
            (echo, "raw WebSocket", lambda: run_client(ews, episodes, True)),
            (echo, "raw HTTP (openenv's stateless /step)", lambda: run_client(ehttp, episodes, True)),
            (echo, "GenericEnvClient (sync, WebSocket)", lambda: run_client(egeneric, episodes, True)),
        ]
        for fn in (p[2] for p in plan):  # warm-up: imports, worlds built, connections open
            fn()
        for r in range(rounds):
            for rows, name, fn in plan:
                rows.setdefault(name, []).append(fn())
            print(f"round {r + 1}/{rounds} done, load {os.getloadavg()[0]:.1f}", file=sys.stderr)
        for c in (ws, http, generic, traced_ws, ews, ehttp, egeneric):
            c.close()
    print()
    print("\n".join(table("toolgym env service, ctool mock-app episodes", ours, "in-process ToolEnv.step")))
    print()
    print("\n".join(table("openenv-core echo env, same clients", echo, "in-process EchoEnvironment.step")))
    ours_ws, _ = paired(ours["raw WebSocket"], ours["in-process ToolEnv.step"])
    echo_ws, _ = paired(echo["raw WebSocket"], echo["in-process EchoEnvironment.step"])
    print()
    print(
        f"per-step overhead over WebSocket: toolgym +{ms(ours_ws)}, openenv echo +{ms(echo_ws)} "
        f"(ratio {ours_ws / echo_ws:.2f}); target: toolgym <= +0.5 ms"
    )


if __name__ == "__main__":
    main()
