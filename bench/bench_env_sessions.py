"""Env-service sessions: server memory per session, server CPU per step, many active clients.

    python bench/bench_env_sessions.py [--quick] [--only memory,cpu,active]

Every figure is read from the server process itself, each server its own process on 127.0.0.1
(`toolgym env-server`'s app, traces off unless said, uvicorn with the service's settings):

- **memory**: the server's RSS (`/proc/<pid>/status`) with 0, 100 and 1000 idle sessions, each
  opened by a reset to a ctool task (mock-app world built, episode started), once over HTTP and
  once over WebSocket (one connection per session, asyncio clients in this process), each
  transport on a fresh server; then the same sessions after each ran one full golden episode;
- **cpu**: the server pinned to one core and this process to the other; the ctool golden
  episodes (reset, then raw ReAct text per step) run in rounds, each episode in-process
  (`ToolEnv`, this thread's CPU clock; on the client's core, or the server's with
  `--baseline-core server`) and then over the wire (the server process's CPU clock, all its
  threads), episode by episode; the ratio server CPU / in-process CPU per round, the median over
  rounds reported with its range;
- **active**: 50 clients at once (asyncio WebSocket clients; and 50 threads on HTTP keep-alive
  connections) run golden episodes for a while; errors (must be 0), episodes/s, the server's RSS;
- **stall**: one client (a WebSocket session running golden episodes) alone, then while an
  attacker process opens a fresh session for each expensive step (issue 34: 100 `search_tracks`
  calls paging 50 tracks, an input of 8098 characters, a ~3 MB answer), on a default server and
  on one with `steps_on_loop`: the victim's step latency (p50, p99, max) and steps/s during the
  attack steps, and the attack step's own time.

The load average is printed with every figure: the machine is shared, and CPU seconds move with it
less than wall seconds do, but they still move.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from toolgym.toolservers.hosting.base import wait_healthy
from toolgym.toolservers.hosting.process import free_port

ROOT = Path(__file__).resolve().parent.parent
TASK_SET = "ctool"
TARGET_CPU_RATIO = 2.0
TARGET_IDLE_BYTES = 2 << 30  # 1000 idle sessions in at most 2 GiB

SERVER = """
import os, sys, uvicorn
from pathlib import Path
from toolgym.envs.service.app import UVICORN_SETTINGS, create_app
from toolgym.envs.service.catalog import Catalog, SessionConfig

if os.environ.get("BENCH_PROFILE"):  # the event loop's thread, from SIGUSR1 to SIGTERM
    import cProfile, signal
    profiler = cProfile.Profile()
    signal.signal(signal.SIGUSR1, lambda *_: profiler.enable())
    def dump(*_):
        profiler.disable()
        profiler.dump_stats(os.environ["BENCH_PROFILE"])
        sys.exit(0)
    signal.signal(signal.SIGTERM, dump)
trace_dir = Path(sys.argv[2]) if sys.argv[2] != "-" else None
app = create_app(
    Catalog.build(defaults=SessionConfig(tasks="ctool")),
    trace_dir=trace_dir,
    max_sessions=int(sys.argv[3]),
    steps_on_loop=sys.argv[4] == "loop",
)
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False,
            ws_max_size=1 << 20, **UVICORN_SETTINGS)
"""


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


class Server:
    def __init__(self, proc: subprocess.Popen[bytes], url: str) -> None:
        self.proc, self.url = proc, url

    def rss(self) -> int:
        """Resident bytes of the server process."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS")

    def cpu_s(self) -> float:
        """CPU seconds of the server process (all its threads, exited ones included), read from
        its process CPU clock: nanoseconds, where /proc/<pid>/stat's utime + stime count 10 ms
        ticks (a round's ~0.1 s of server CPU would be 10-12 ticks)."""
        try:  # Linux's clock id of another process's CPU clock: MAKE_PROCESS_CPUCLOCK(pid, SCHED)
            return time.clock_gettime(((~self.proc.pid) << 3) | 2)
        except OSError:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def threads(self) -> int:
        return len(os.listdir(f"/proc/{self.proc.pid}/task"))


@contextmanager
def server(
    *,
    traces: Path | None = None,
    max_sessions: int = 64,
    loop: bool = False,
    cpu: int | None = None,
    profile: Path | None = None,
) -> Iterator[Server]:
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
    }
    if profile is not None:
        env["BENCH_PROFILE"] = str(profile)
    args = [str(port), str(traces) if traces else "-", str(max_sessions), "loop" if loop else "thread"]
    proc = subprocess.Popen([sys.executable, "-c", SERVER, *args], env=env)
    if cpu is not None:
        os.sched_setaffinity(proc.pid, {cpu})
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(
            url, timeout_s=120, alive=lambda: proc.poll() is None, logs=lambda: "", what="env server"
        )
        yield Server(proc, url)
    finally:
        proc.terminate()
        proc.wait(30)


# ---- the workload ------------------------------------------------------------------------------
Episode = tuple[str, list[str]]  # task id, the oracle's ReAct texts


def golden_episodes() -> list[Episode]:
    from toolgym.envs.service.catalog import Catalog
    from toolgym.protocols import get_protocol

    protocol = get_protocol("react")
    tasks = Catalog.build().task_set(TASK_SET)
    return [(t.id, [str(protocol.format_action(g.action)) for g in t.golden]) for t in tasks]


RESET_CONFIG = {"tasks": TASK_SET}


class WSSession:
    """One session over openenv's /ws frames (asyncio websockets)."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws

    @classmethod
    async def open(cls, url: str) -> WSSession:
        from websockets.asyncio.client import connect

        ws = await connect(url.replace("http://", "ws://") + "/ws", max_size=None, compression=None)
        return cls(ws)

    async def call(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        await self.ws.send(json.dumps({"type": kind, "data": data}))
        reply: dict[str, Any] = json.loads(await self.ws.recv())
        if reply["type"] == "error":
            raise RuntimeError(str(reply)[:300])
        return reply

    async def episode(self, task_id: str, texts: list[str]) -> None:
        await self.call("reset", {"task_id": task_id, "seed": 0, "config": RESET_CONFIG})
        for text in texts:
            await self.call("step", {"text": text})

    async def close(self) -> None:
        await self.ws.close()


class HTTPSession:
    """One session over the stateful HTTP routes, on one keep-alive connection."""

    def __init__(self, url: str) -> None:
        from toolgym.envs.service.client import KeepAliveHttp

        self.http = KeepAliveHttp(url, {}, timeout_s=120, connect_timeout_s=10)
        self.session: str | None = None

    def call(self, route: str, data: dict[str, Any]) -> dict[str, Any]:
        status, raw = self.http.request("POST", route, data)
        if status != 200:
            raise RuntimeError(f"HTTP {status}: {raw[:300]!r}")
        body: dict[str, Any] = json.loads(raw)
        return body

    def episode(self, task_id: str, texts: list[str]) -> None:
        data: dict[str, Any] = {"task_id": task_id, "seed": 0, "config": RESET_CONFIG}
        if self.session is not None:
            data["session_id"] = self.session
        self.session = self.call("/reset", data)["observation"]["session_id"]
        for text in texts:
            self.call("/step", {"session_id": self.session, "action": {"text": text}})

    def reset(self, task_id: str) -> None:
        data: dict[str, Any] = {"task_id": task_id, "seed": 0, "config": RESET_CONFIG}
        self.session = self.call("/reset", data)["observation"]["session_id"]

    def close(self) -> None:
        if self.session is not None:
            self.call("/close", {"session_id": self.session})
        self.http.close()


# ---- memory ------------------------------------------------------------------------------------
MB = 1 << 20


def memory(episodes: list[Episode], counts: list[int]) -> list[str]:
    lines = [
        "| transport | sessions | server RSS (MB) | RSS over 0 sessions, per session (kB) | threads | load |",
        "|---|---|---|---|---|---|",
    ]
    verdicts = []
    for transport in ("http", "ws"):
        with server(max_sessions=max(counts) + 8) as srv:
            time.sleep(0.5)
            base = srv.rss()
            lines.append(f"| {transport} | 0 | {base / MB:.1f} | | {srv.threads()} | {load()} |")
            opener = _open_http if transport == "http" else _open_ws
            rows, finish = opener(srv.url, episodes, counts, srv, base)
            lines += rows
            if max(counts) >= 1000:
                total = srv_rss_at = rows[-2].split("|")[3].strip()
                verdicts.append(f"{transport}: {total} MB with {max(counts)} idle sessions")
                del srv_rss_at
            finish()
    lines.append("")
    lines.append(
        "target: 1000 idle sessions in <= 2048 MB of server RSS: " + "; ".join(verdicts)
        if verdicts
        else "(fewer than 1000 sessions in this run: no verdict)"
    )
    return lines


def _row(transport: str, n: int, srv: Server, base: int, note: str = "") -> str:
    rss = srv.rss()
    per = (rss - base) / n / 1024 if n else 0.0
    return f"| {transport}{note} | {n} | {rss / MB:.1f} | {per:.0f} | {srv.threads()} | {load()} |"


def _open_http(url: str, episodes: list[Episode], counts: list[int], srv: Server, base: int) -> Any:
    sessions: list[HTTPSession] = []
    rows = []
    for n in counts:
        while len(sessions) < n:
            s = HTTPSession(url)
            s.reset(episodes[len(sessions) % len(episodes)][0])
            s.http.close()  # an idle session holds no connection
            sessions.append(s)
        time.sleep(0.3)
        rows.append(_row("http", n, srv, base))
    for i, s in enumerate(sessions):  # one full episode each, then idle again
        task_id, texts = episodes[i % len(episodes)]
        s.episode(task_id, texts)
        s.http.close()
    time.sleep(0.3)
    rows.append(_row("http", len(sessions), srv, base, ", after one episode each"))

    def finish() -> None:
        for s in sessions:
            s.close()

    return rows, finish


def _open_ws(url: str, episodes: list[Episode], counts: list[int], srv: Server, base: int) -> Any:
    loop = asyncio.new_event_loop()
    sessions: list[WSSession] = []
    rows = []

    async def grow(n: int) -> None:
        while len(sessions) < n:
            batch = min(50, n - len(sessions))
            opened = await asyncio.gather(*(WSSession.open(url) for _ in range(batch)))
            for s in opened:
                task_id = episodes[len(sessions) % len(episodes)][0]
                await s.call("reset", {"task_id": task_id, "seed": 0, "config": RESET_CONFIG})
                sessions.append(s)

    for n in counts:
        loop.run_until_complete(grow(n))
        time.sleep(0.3)
        rows.append(_row("ws", n, srv, base))

    async def one_each() -> None:
        for i, s in enumerate(sessions):
            await s.episode(*episodes[i % len(episodes)])

    loop.run_until_complete(one_each())
    time.sleep(0.3)
    rows.append(_row("ws", len(sessions), srv, base, ", after one episode each"))

    async def close_all() -> None:
        await asyncio.gather(*(s.close() for s in sessions))

    def finish() -> None:
        loop.run_until_complete(close_all())
        loop.close()

    return rows, finish


# ---- cpu -----------------------------------------------------------------------------------------
# the servers of the cpu figure: (label, steps on the event loop, transport)
CPU_SERVERS = (
    ("WebSocket", False, "ws"),
    ("HTTP", False, "http"),
    ("WebSocket, steps on the event loop", True, "ws"),
)
CpuRound = tuple[float, float, float]  # in-process, server and client CPU seconds of one round


def cpu(
    episodes: list[Episode], rounds: int, profile: Path | None = None, baseline_core: str = "client"
) -> list[str]:
    cores = sorted(os.sched_getaffinity(0))
    server_core, client_core = cores[0], cores[-1]
    os.sched_setaffinity(0, {client_core})
    local_core = server_core if baseline_core == "server" else client_core
    in_process = _InProcess(local_core, client_core)
    results: dict[str, list[CpuRound]] = {}
    loads = []
    for label, loop_mode, transport in CPU_SERVERS:
        prof = profile / f"{transport}-{'loop' if loop_mode else 'thread'}.prof" if profile else None
        with server(cpu=server_core, loop=loop_mode, profile=prof) as srv:
            remote = _remote_runner(srv.url, transport)
            remote(episodes)  # warm-up: worlds built, imports done
            in_process(episodes)
            if prof is not None:
                srv.proc.send_signal(signal.SIGUSR1)
            for _ in range(rounds):
                results.setdefault(label, []).append(_interleaved(episodes, in_process, remote, srv))
                loads.append(os.getloadavg()[0])
            remote.close()
    os.sched_setaffinity(0, set(cores))
    n_steps = sum(len(t) for _, t in episodes)
    return [
        f"server on core {server_core}, client on core {client_core}, in-process env on core {local_core}; "
        f"{len(episodes)} ctool episodes, {n_steps} steps a round (resets included in both; in-process and "
        f"over the wire interleaved episode by episode), {rounds} rounds; "
        f"load {min(loads):.1f} .. {max(loads):.1f}",
        "",
        *_cpu_table(results, n_steps),
    ]


class _InProcess:
    """The baseline: episodes run by a `ToolEnv` in this thread, on `local_core` (the server
    idles meanwhile), timed by this thread's CPU clock; the thread goes back to `client_core`."""

    def __init__(self, local_core: int, client_core: int) -> None:
        from toolgym.envs.service.catalog import Catalog
        from toolgym.envs.tool_env import ToolEnv

        catalog = Catalog.build()
        self.env = ToolEnv(catalog.tools, catalog.task_set(TASK_SET), protocol="react")
        self.local_core, self.client_core = local_core, client_core

    def __call__(self, batch: list[Episode]) -> float:
        os.sched_setaffinity(0, {self.local_core})  # the server idles meanwhile
        t0 = time.thread_time()
        for task_id, texts in batch:
            self.env.reset(seed=0, options={"task": task_id})
            for text in texts:
                self.env.step(text)
        spent = time.thread_time() - t0
        os.sched_setaffinity(0, {self.client_core})
        return spent


def _interleaved(episodes: list[Episode], in_process: _InProcess, remote: Any, srv: Server) -> CpuRound:
    """One round, episode by episode: in-process, then over the wire (the load moves within
    a round; a slow patch then falls on both sides rather than on one)."""
    local_s = server_s = client_s = 0.0
    for episode in episodes:
        local_s += in_process([episode])
        before, client_t0 = srv.cpu_s(), time.thread_time()
        remote([episode])
        client_s += time.thread_time() - client_t0
        server_s += srv.cpu_s() - before
    return local_s, server_s, client_s


def _cpu_table(results: dict[str, list[CpuRound]], n_steps: int) -> list[str]:
    """Per server: the median ratio of server CPU to in-process CPU and its range over rounds,
    each side's CPU per step; then the verdict on the default servers' worst median."""
    lines = [
        "| transport | server CPU / in-process CPU: median | range over rounds | in-process CPU per step (µs) "
        "| server CPU per step (µs) | client CPU per step (µs) |",
        "|---|---|---|---|---|---|",
    ]
    for label, rows in results.items():
        ratios = [s / lo for lo, s, _ in rows]
        med = statistics.median
        lines.append(
            f"| {label} | **{med(ratios):.2f}×** | {min(ratios):.2f}× .. {max(ratios):.2f}× "
            f"| {med(r[0] for r in rows) / n_steps * 1e6:.0f} | {med(r[1] for r in rows) / n_steps * 1e6:.0f} "
            f"| {med(r[2] for r in rows) / n_steps * 1e6:.0f} |"
        )
    worst = max(
        statistics.median(s / lo for lo, s, _ in rows)
        for label, rows in results.items()
        if "loop" not in label
    )
    verdict = "met" if worst <= TARGET_CPU_RATIO else "NOT met"
    lines += [
        "",
        f"target: server CPU per step <= {TARGET_CPU_RATIO}× in-process (default server): {verdict} (worst {worst:.2f}×)",
    ]
    return lines


def overhead(episodes: list[Episode], calls: int) -> list[str]:
    """The server's CPU for the smallest call of each transport, on the pinned server: a
    WebSocket `state` message and an HTTP `GET /state` (a plain route, as /reset and /step are):
    what each reset and step pays besides its env work."""
    cores = sorted(os.sched_getaffinity(0))
    server_core, client_core = cores[0], cores[-1]
    os.sched_setaffinity(0, {client_core})
    task_id = episodes[0][0]
    with server(cpu=server_core) as srv:
        loop = asyncio.new_event_loop()
        ws = loop.run_until_complete(WSSession.open(srv.url))

        async def states() -> float:
            await ws.call("reset", {"task_id": task_id, "seed": 0, "config": RESET_CONFIG})
            before = srv.cpu_s()
            for _ in range(calls):
                await ws.ws.send('{"type": "state"}')
                json.loads(await ws.ws.recv())
            return srv.cpu_s() - before

        ws_s = loop.run_until_complete(states())
        loop.run_until_complete(ws.close())
        loop.close()
        http = HTTPSession(srv.url)
        http.reset(task_id)
        assert http.session is not None
        before = srv.cpu_s()
        for _ in range(calls):
            http.http.request("GET", "/state", params={"session_id": http.session})
        http_s = srv.cpu_s() - before
        http.close()
    os.sched_setaffinity(0, set(cores))
    return [
        f"server CPU per call, {calls} calls each ({load()}): WebSocket `state` message "
        f"{ws_s / calls * 1e6:.0f} µs, HTTP `GET /state` {http_s / calls * 1e6:.0f} µs"
    ]


def _remote_runner(url: str, transport: str) -> Any:
    if transport == "http":
        session = HTTPSession(url)

        def run_http(episodes: list[Episode]) -> None:
            for task_id, texts in episodes:
                session.episode(task_id, texts)

        run_http.close = session.close  # type: ignore[attr-defined]
        return run_http
    loop = asyncio.new_event_loop()
    ws = loop.run_until_complete(WSSession.open(url))

    def run_ws(episodes: list[Episode]) -> None:
        async def all_of() -> None:
            for task_id, texts in episodes:
                await ws.episode(task_id, texts)

        loop.run_until_complete(all_of())

    def close() -> None:
        loop.run_until_complete(ws.close())
        loop.close()

    run_ws.close = close  # type: ignore[attr-defined]
    return run_ws


# ---- stall ---------------------------------------------------------------------------------------
ATTACK_TASK = "ctool-music-playlist-012"
ATTACK_CALLS = 100  # search_tracks(page_size=50) calls in one step: 8098 characters of input
ATTACKER = """
import json, sys, time
from websockets.sync.client import connect
url, rounds, task, calls = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
call = {"type": "tool_call", "name": "search_tracks", "arguments": {"page_size": 50}}
step = json.dumps({"type": "step", "data": {"action": [call] * calls}})
windows = []
for _ in range(rounds):  # a fresh session for each expensive step
    with connect(url, max_size=None, compression=None) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"task_id": task, "seed": 0, "config": {"tasks": "ctool"}}}))
        ws.recv(timeout=300)
        started = time.monotonic()
        ws.send(step)
        reply = ws.recv(timeout=600)
        windows.append([started, time.monotonic(), len(reply)])
print(json.dumps(windows))
"""


def stall(episodes: list[Episode], rounds: int, baseline_s: float) -> list[str]:
    lines = [
        "| server | phase | victim steps | victim steps/s | victim p50 (ms) | p99 (ms) | max (ms) "
        "| attack step (s) | load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    from websockets.sync.client import connect

    for label, loop_mode in (("default", False), ("steps_on_loop", True)):
        with server(loop=loop_mode) as srv:
            ws_url = srv.url.replace("http://", "ws://") + "/ws"
            with connect(ws_url, max_size=None, compression=None) as ws:
                lines += _stall_rows(label, _Victim(ws, episodes), ws_url, rounds, baseline_s)
    return lines


def _stall_rows(label: str, victim: _Victim, ws_url: str, rounds: int, baseline_s: float) -> list[str]:
    victim.run_for(1.0)  # warm-up: worlds built, imports done
    victim.steps.clear()
    victim.run_for(baseline_s)
    rows = [victim.row(label, "alone", [(0.0, float("inf"))], None)]
    victim.steps.clear()
    attacker = subprocess.Popen(
        [sys.executable, "-c", ATTACKER, ws_url, str(rounds), ATTACK_TASK, str(ATTACK_CALLS)],
        stdout=subprocess.PIPE,
    )
    victim.run_while(attacker.poll, None)
    out, _ = attacker.communicate(timeout=60)
    windows = [(a, b) for a, b, _ in json.loads(out)]
    attack_s = statistics.median(b - a for a, b in windows)
    rows.append(victim.row(label, f"attacked ({len(windows)} attack steps)", windows, attack_s))
    return rows


class _Victim:
    """A WebSocket session running golden episodes, each step's (start, seconds) kept."""

    def __init__(self, ws: Any, episodes: list[Episode]) -> None:
        self.ws = ws
        self.episodes = episodes
        self.steps: list[tuple[float, float]] = []

    def _call(self, kind: str, data: dict[str, Any]) -> None:
        self.ws.send(json.dumps({"type": kind, "data": data}))
        if json.loads(self.ws.recv(timeout=600))["type"] == "error":
            raise RuntimeError(f"the victim's {kind} failed")

    def run_while(self, check: Callable[[], object], value: object) -> None:
        """Episodes, one after another, while `check()` returns `value`."""
        i = 0
        while check() == value:
            task_id, texts = self.episodes[i % len(self.episodes)]
            self._call("reset", {"task_id": task_id, "seed": 0, "config": RESET_CONFIG})
            for text in texts:
                started = time.monotonic()
                self._call("step", {"text": text})
                self.steps.append((started, time.monotonic() - started))
            i += 1

    def run_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        self.run_while(lambda: time.monotonic() < end, True)

    def row(self, label: str, phase: str, windows: list[tuple[float, float]], attack_s: float | None) -> str:
        """The victim's steps that started inside `windows`: count, rate, latency quantiles."""
        inside = sorted(s for t, s in self.steps if any(a <= t < b for a, b in windows))
        span = sum(min(b, time.monotonic()) - max(a, self.steps[0][0]) for a, b in windows)
        if not inside:
            return f"| {label} | {phase} | 0 | | | | | | {load()} |"
        p50, p99 = inside[len(inside) // 2], inside[min(len(inside) - 1, int(len(inside) * 0.99))]
        shown = f"{attack_s:.2f}" if attack_s is not None else ""
        return (
            f"| {label} | {phase} | {len(inside)} | {len(inside) / span:.1f} | {p50 * 1e3:.1f} "
            f"| {p99 * 1e3:.1f} | {inside[-1] * 1e3:.1f} | {shown} | {load()} |"
        )


# ---- active --------------------------------------------------------------------------------------
def active(episodes: list[Episode], clients: int, seconds: float) -> list[str]:
    lines = [
        "| transport | clients | seconds | episodes | episodes/s | steps/s | errors | server RSS (MB) | load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for transport in ("ws", "http"):
        with server(max_sessions=clients + 8) as srv:
            run = _active_ws if transport == "ws" else _active_http
            done, steps, errors, wall = run(srv.url, episodes, clients, seconds)
            lines.append(
                f"| {transport} | {clients} | {wall:.1f} | {done} | {done / wall:.1f} | {steps / wall:.0f} "
                f"| {len(errors)} | {srv.rss() / MB:.1f} | {load()} |"
            )
            for err in errors[:3]:
                lines.append(f"  error: {err}")
    return lines


def _active_ws(
    url: str, episodes: list[Episode], clients: int, seconds: float
) -> tuple[int, int, list[str], float]:
    errors: list[str] = []
    counts = [0, 0]

    async def client(k: int, stop: float) -> None:
        try:
            s = await WSSession.open(url)
        except Exception as exc:
            errors.append(f"open: {exc}")
            return
        i = k
        while time.monotonic() < stop:
            task_id, texts = episodes[i % len(episodes)]
            try:
                await s.episode(task_id, texts)
                counts[0] += 1
                counts[1] += len(texts)
            except Exception as exc:
                errors.append(str(exc)[:300])
                break
            i += 1
        await s.close()

    async def all_clients() -> float:
        t0 = time.monotonic()
        await asyncio.gather(*(client(k, t0 + seconds) for k in range(clients)))
        return time.monotonic() - t0

    wall = asyncio.run(all_clients())
    return counts[0], counts[1], errors, wall


def _active_http(
    url: str, episodes: list[Episode], clients: int, seconds: float
) -> tuple[int, int, list[str], float]:
    errors: list[str] = []
    counts = [0, 0]
    lock = threading.Lock()
    t0 = time.monotonic()
    stop = t0 + seconds

    def client(k: int) -> None:
        s = HTTPSession(url)
        i = k
        while time.monotonic() < stop:
            task_id, texts = episodes[i % len(episodes)]
            try:
                s.episode(task_id, texts)
            except Exception as exc:
                with lock:
                    errors.append(str(exc)[:300])
                break
            with lock:
                counts[0] += 1
                counts[1] += len(texts)
            i += 1
        try:
            s.close()
        except Exception as exc:
            with lock:
                errors.append(f"close: {exc}")

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return counts[0], counts[1], errors, time.monotonic() - t0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer rounds, a shorter active phase")
    parser.add_argument(
        "--only",
        default="memory,cpu,active,stall",
        help="comma-separated: memory, cpu, active, overhead, stall",
    )
    parser.add_argument("--sessions", type=int, default=1000, help="idle sessions at most (memory)")
    parser.add_argument("--rounds", type=int, default=None, help="cpu rounds (default 9; --quick 3)")
    parser.add_argument("--clients", type=int, default=50, help="concurrent clients (active)")
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="cpu: profile each server's event-loop thread with cProfile into this folder (FOLDER/<transport>-<mode>.prof)",
    )
    parser.add_argument(
        "--baseline-core",
        choices=("client", "server"),
        default="client",
        help="cpu: run the in-process ToolEnv on the client's core (default) or on the server's "
        "(while the server idles): the same core's caches and neighbours for both sides",
    )
    parser.add_argument(
        "--seconds", type=float, default=None, help="active phase length (default 30; --quick 5)"
    )
    args = parser.parse_args()
    only = set(args.only.split(","))
    episodes = golden_episodes()
    import platform

    print(f"{platform.node()}: {os.cpu_count()} cores, {load()}; python {platform.python_version()}")
    if "memory" in only:
        counts = sorted({c for c in (100, args.sessions) if c <= args.sessions})
        print("\n## server memory with idle sessions\n")
        print("\n".join(memory(episodes, counts)), flush=True)
    if "cpu" in only:
        print("\n## server CPU per step\n")
        rounds = args.rounds or (3 if args.quick else 9)
        print("\n".join(cpu(episodes, rounds, args.profile, args.baseline_core)), flush=True)
    if "overhead" in only:
        print("\n## the fixed cost of a call\n")
        print("\n".join(overhead(episodes, 200 if args.quick else 2000)), flush=True)
    if "stall" in only:
        print("\n## one client's expensive steps against another session\n")
        rounds = 2 if args.quick else 5
        print("\n".join(stall(episodes, rounds, 3.0 if args.quick else 10.0)), flush=True)
    if "active" in only:
        print(f"\n## {args.clients} active sessions\n")
        seconds = args.seconds or (5.0 if args.quick else 30.0)
        print("\n".join(active(episodes, args.clients, seconds)), flush=True)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory():
        main()
