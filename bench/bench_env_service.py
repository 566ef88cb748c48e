"""Env-service benchmark, every figure measured side by side in one run.

    python bench/bench_env_service.py [--rounds N] [--quick]

Servers, each its own process on 127.0.0.1, served the same way (uvicorn, access log off, the
env service's `UVICORN_SETTINGS`: no permessage-deflate):
- `toolgym env-server`'s app, traces off (the overhead of the transport and session, not of disk),
  a second one with traces on, and a third with `steps_on_loop` (steps on the event loop);
- openenv-core's echo environment: openenv ships it only as its `openenv init` template, so this
  file carries the template's Environment (reset, step echoing a message) written with openenv's
  own interface and served with openenv's own `create_fastapi_app`.

Workload: the oracle's golden chains of the bundled mock-app set `ctool` (reads and writes
interleaved, a reset per episode), raw ReAct text per step. Every client runs in lockstep with
its own in-process env (`ToolEnv`): each step goes to both, one right after the other (which one
first alternates), so the pair sees the same load. A step's overhead is the remote minus the
in-process latency of that step; a round's figure is the median over its steps (an episode's
overhead likewise, reset included), and the figure reported is the median over rounds, with the
range of the round figures. The clients take turns within a round, in a rotating order. Echo: the
same clients against the echo server, in lockstep with `EchoEnvironment` in-process.

Clients (in this process): a raw WebSocket client (websockets' sync client, openenv's message
frames), raw HTTP (the stdlib's `http.client` on one keep-alive connection, reopened when the
server closed it idle), openenv-core's `GenericEnvClient(...).sync()`, and
toolgym's `RemoteToolEnv` (WebSocket and HTTP).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

from toolgym.toolservers.hosting.base import wait_healthy
from toolgym.toolservers.hosting.process import free_port

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
    from toolgym.envs.service.app import UVICORN_SETTINGS

    app = create_fastapi_app(EchoEnvironment, EchoAction, EchoObservation, max_concurrent_envs=8)
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False,
                **UVICORN_SETTINGS)
"""

TOOLGYM_SERVER = """
import sys, uvicorn
from pathlib import Path
from toolgym.envs.service.app import UVICORN_SETTINGS, create_app
from toolgym.envs.service.catalog import Catalog, SessionConfig

trace_dir = Path(sys.argv[2]) if sys.argv[2] != "-" else None
app = create_app(
    Catalog.build(defaults=SessionConfig(tasks="ctool")),
    trace_dir=trace_dir,
    max_sessions=16,
    steps_on_loop=sys.argv[3] == "loop",
)
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False,
            **UVICORN_SETTINGS)
"""


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


# ---- clients: reset to a task, step with model text, close --------------------------------------
Episode = tuple[str, list[Any]]  # task id, the step inputs (ReAct text)
TARGET_S = 0.0005


class RawWS:
    """openenv's frames over a bare websocket: what any trainer's client costs at least."""

    def __init__(self, url: str, echo: bool = False, config: dict[str, Any] | None = None) -> None:
        self.ws = connect(url.replace("http://", "ws://") + "/ws", max_size=None).__enter__()
        self.echo, self.config = echo, config or {"tasks": TASK_SET}

    def call(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        self.ws.send(json.dumps({"type": kind, "data": data}))
        reply: dict[str, Any] = json.loads(self.ws.recv())
        if reply["type"] == "error":
            raise RuntimeError(reply)
        return reply

    def reset(self, task_id: str) -> Any:
        return self.call("reset", {} if self.echo else {"task_id": task_id, "seed": 0, "config": self.config})

    def step(self, text: str) -> Any:
        return self.call("step", {"message": text} if self.echo else {"text": text})

    def close(self) -> None:
        self.ws.close()


class RawHTTP:
    """toolgym's session routes, or openenv's stateless `/step` (echo), with the cheapest client:
    the stdlib's on one keep-alive connection (RemoteToolEnv's `KeepAliveHttp`), for both."""

    def __init__(self, url: str, echo: bool = False) -> None:
        from toolgym.envs.service.client import KeepAliveHttp

        self.http = KeepAliveHttp(url, {}, timeout_s=60, connect_timeout_s=5)
        self.echo = echo
        self.session: str | None = None

    def call(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        status, raw = self.http.request("POST", f"/{kind}", data)
        if status != 200:
            raise RuntimeError(f"HTTP {status}: {raw[:200]!r}")
        body: dict[str, Any] = json.loads(raw)
        return body

    def reset(self, task_id: str) -> Any:
        if self.echo:
            return self.call("reset", {})
        data: dict[str, Any] = {"task_id": task_id, "seed": 0, "config": {"tasks": TASK_SET}}
        body = self.call("reset", {**data, "session_id": self.session} if self.session else data)
        self.session = body["observation"]["session_id"]
        return body

    def step(self, text: str) -> Any:
        if self.echo:
            return self.call("step", {"action": {"message": text}})
        return self.call("step", {"action": {"text": text}, "session_id": self.session})

    def close(self) -> None:
        self.http.close()


class Generic:
    """openenv-core's own client, over its WebSocket."""

    def __init__(self, url: str, echo: bool = False) -> None:
        from openenv.core.generic_client import GenericEnvClient

        self.client = GenericEnvClient(base_url=url).sync()
        self.client.connect()
        self.echo = echo

    def reset(self, task_id: str) -> Any:
        if self.echo:
            return self.client.reset()
        return self.client.reset(task_id=task_id, seed=0, config={"tasks": TASK_SET})

    def step(self, text: str) -> Any:
        return self.client.step({"message": text} if self.echo else {"text": text})

    def close(self) -> None:
        self.client.close()


class _GymClient:
    """A gymnasium env driven as the bench drives every client: reset by task id, step by text."""

    env: Any

    def reset(self, task_id: str) -> Any:
        return self.env.reset(seed=0, options={"task": task_id})

    def step(self, text: str) -> Any:
        return self.env.step(text)

    def close(self) -> None:
        self.env.close()


class Remote(_GymClient):
    """toolgym's RemoteToolEnv (a gymnasium.Env)."""

    def __init__(self, url: str, transport: str, info: str = "full") -> None:
        from toolgym.envs.service.client import RemoteToolEnv

        config = {"tasks": TASK_SET, "info": info}
        self.env = RemoteToolEnv(url, config=config, transport=transport)  # type: ignore[arg-type]


class LocalTool(_GymClient):
    """The in-process baseline: ToolEnv itself."""

    def __init__(self) -> None:
        from toolgym.envs.tool_env import ToolEnv

        catalog = _catalog()
        self.env = ToolEnv(catalog.tools, catalog.task_set(TASK_SET), protocol="react")


class LocalEcho:
    """The echo's in-process baseline: the class the echo server runs."""

    def __init__(self) -> None:
        namespace: dict[str, Any] = {"__name__": "echo"}
        exec(compile(ECHO_SERVER, "echo", "exec"), namespace)  # our own bench file's text, no model's
        self.env, self.action = namespace["EchoEnvironment"](), namespace["EchoAction"]

    def reset(self, task_id: str) -> Any:
        return self.env.reset()

    def step(self, text: str) -> Any:
        return self.env.step(self.action(message=text))

    def close(self) -> None:
        return None


def timed(fn: Any, *args: Any) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


Round = tuple[float, float, float, float]  # step overhead, episode overhead, remote step, local step


def lockstep(client: Any, local: Any, episodes: list[Episode]) -> Round:
    """One round: every episode on the client and in-process, step by step; medians of the round."""
    steps, eps, remote_lat, local_lat = [], [], [], []
    for n, (task_id, texts) in enumerate(episodes):
        local_ep = timed(local.reset, task_id)
        remote_ep = timed(client.reset, task_id)
        for i, text in enumerate(texts):
            if (n + i) % 2:
                lt = timed(local.step, text)
                rt = timed(client.step, text)
            else:
                rt = timed(client.step, text)
                lt = timed(local.step, text)
            steps.append(rt - lt)
            remote_lat.append(rt)
            local_lat.append(lt)
            local_ep, remote_ep = local_ep + lt, remote_ep + rt
        eps.append(remote_ep - local_ep)
    med = statistics.median
    return med(steps), med(eps), med(remote_lat), med(local_lat)


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
    return [(t.id, [str(protocol.format_action(g.action)) for g in t.golden]) for t in tasks]


# ---- figures -------------------------------------------------------------------------------------
def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f}"


def table(title: str, rows: dict[str, list[Round]]) -> list[str]:
    lines = [
        f"| {title} | step, in-process (ms) | step, remote (ms) | step overhead (ms): median over rounds "
        "| range over rounds | episode overhead (ms) |",
        "|---|---|---|---|---|---|",
    ]
    for name, rounds in rows.items():
        over, eps, remote, local = (statistics.median(r[i] for r in rounds) for i in range(4))
        lo, hi = min(r[0] for r in rounds), max(r[0] for r in rounds)
        lines.append(
            f"| {name} | {ms(local)} | {ms(remote)} | +{ms(over)} | +{ms(lo)} .. +{ms(hi)} | +{ms(eps)} |"
        )
    return lines


def overhead(rounds: list[Round]) -> float:
    return statistics.median(r[0] for r in rounds)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="two rounds over a few episodes")
    args = parser.parse_args()
    episodes = golden_episodes()
    rounds = args.rounds
    if args.quick:
        episodes, rounds = episodes[:4], 2
    n_steps = sum(len(s) for _, s in episodes)
    loads = [os.getloadavg()[0]]
    print(
        f"{platform.node()}: {os.cpu_count()} cores, load {loads[0]:.1f}; python {platform.python_version()}"
    )
    print(f"workload: {len(episodes)} ctool episodes, {n_steps} steps per round, {rounds} rounds")
    with (
        tempfile.TemporaryDirectory() as traces,
        server(TOOLGYM_SERVER, "-", "thread") as url,
        server(TOOLGYM_SERVER, traces, "thread") as traced_url,
        server(TOOLGYM_SERVER, "-", "loop") as loop_url,
        server(ECHO_SERVER) as echo_url,
    ):
        ours = our_clients(url, traced_url, loop_url)
        echo: dict[str, Any] = {
            "raw WebSocket": RawWS(echo_url, echo=True),
            "GenericEnvClient (sync, WebSocket)": Generic(echo_url, echo=True),
            "raw HTTP (openenv's stateless /step)": RawHTTP(echo_url, echo=True),
        }
        plan: list[tuple[str, str, Any, Any]] = [("ours", name, c, LocalTool()) for name, c in ours.items()]
        plan += [("echo", name, c, LocalEcho()) for name, c in echo.items()]
        results = run_rounds(plan, episodes, rounds, loads)
    report(
        {name: results["ours"][name] for name in ours},
        {name: results["echo"][name] for name in echo},
        loads,
    )


def our_clients(url: str, traced_url: str, loop_url: str) -> dict[str, Any]:
    """Every client of the env service measured, by name: raw and toolgym's, WebSocket and HTTP,
    full and slim info, steps on threads or the event loop, server-side traces on."""
    slim = {"tasks": TASK_SET, "info": "slim"}
    return {
        "raw WebSocket": RawWS(url),
        "GenericEnvClient (sync, WebSocket)": Generic(url),
        "RemoteToolEnv (WebSocket)": Remote(url, "ws"),
        "raw HTTP (session routes)": RawHTTP(url),
        "RemoteToolEnv (HTTP)": Remote(url, "http"),
        "raw WebSocket, info slim": RawWS(url, config=slim),
        "RemoteToolEnv (WebSocket), info slim": Remote(url, "ws", "slim"),
        "RemoteToolEnv (HTTP), info slim": Remote(url, "http", "slim"),
        "raw WebSocket, steps on the event loop": RawWS(loop_url),
        "RemoteToolEnv (WebSocket), steps on the event loop": Remote(loop_url, "ws"),
        "RemoteToolEnv (HTTP), steps on the event loop": Remote(loop_url, "http"),
        "raw WebSocket, server-side traces on": RawWS(traced_url),
    }


def run_rounds(
    plan: list[tuple[str, str, Any, Any]], episodes: list[Episode], rounds: int, loads: list[float]
) -> dict[str, dict[str, list[Round]]]:
    """A warm-up, then `rounds` rounds of every client in a rotating order; the clients closed."""
    for _, _, client, local in plan:  # warm-up: imports, worlds built, connections open
        lockstep(client, local, episodes)
    results: dict[str, dict[str, list[Round]]] = {"ours": {}, "echo": {}}
    for r in range(rounds):
        turn = plan[r % len(plan) :] + plan[: r % len(plan)]  # a rotating order
        for group, name, client, local in turn:
            results[group].setdefault(name, []).append(lockstep(client, local, episodes))
        loads.append(os.getloadavg()[0])
        print(f"round {r + 1}/{rounds} done, load {loads[-1]:.1f}", file=sys.stderr)
    for _, _, client, local in plan:
        client.close()
        local.close()
    return results


def report(ours_rows: dict[str, list[Round]], echo_rows: dict[str, list[Round]], loads: list[float]) -> None:
    """Both tables, the load, and each protocol's verdict on the per-step target."""
    print()
    print("\n".join(table("toolgym env service, ctool mock-app episodes", ours_rows)))
    print()
    print("\n".join(table("openenv-core echo env, same clients", echo_rows)))
    print()
    print(f"load average (1 min) over the run: {min(loads):.1f} .. {max(loads):.1f}")
    echo_ws = overhead(echo_rows["raw WebSocket"])
    for label, names in (
        ("WebSocket", ["raw WebSocket", "GenericEnvClient (sync, WebSocket)", "RemoteToolEnv (WebSocket)"]),
        ("HTTP", ["raw HTTP (session routes)", "RemoteToolEnv (HTTP)"]),
    ):
        worst = max(overhead(ours_rows[n]) for n in names)
        verdict = "met" if worst <= TARGET_S else "NOT met"
        print(
            f"target +0.5 ms per step over {label} (default server, full info, every client): {verdict} "
            f"(worst client +{ms(worst)} ms)"
        )
    print(
        f"openenv echo over raw WebSocket: +{ms(echo_ws)} ms; toolgym raw WebSocket / echo: "
        f"{overhead(ours_rows['raw WebSocket']) / echo_ws:.2f}"
    )


if __name__ == "__main__":
    main()
