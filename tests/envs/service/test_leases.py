"""Leased HTTP sessions of the env service: a client that dies (SIGKILL) frees its slots a lease
later, a live client keeps its session however slowly it steps, a session mid-step never runs out.
The server's lease clock is the test's: time passes when the test says so."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from toolgym.envs.service.app import create_app
from toolgym.envs.service.catalog import Catalog
from toolgym.envs.service.client import RemoteToolEnv
from toolgym.trace import read_trace

from .support import GATE_TASKS, TASK_ID, TASK_SET, Gate, serve

RESET = {"task_id": TASK_ID, "config": {"tasks": TASK_SET}, "seed": 0}

# a client process: opens `n` leased HTTP sessions with RemoteToolEnv, prints their ids, then
# waits (renewing them) until it is killed
CLIENT = """
import sys
from toolgym.envs.service.client import RemoteToolEnv
url, n = sys.argv[1], int(sys.argv[2])
envs = [RemoteToolEnv(url, transport="http", lease_s=2.0, config={"tasks": "ctool"}) for _ in range(n)]
for env in envs:
    env.reset(seed=0, options={"task": "ctool-express-cancel-002"})
print(" ".join(env.session_id for env in envs), flush=True)
sys.stdin.read()
"""


class Clock:
    """The server's lease clock: it moves when the test advances it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def sessions_of(http: httpx.Client) -> dict[str, dict[str, Any]]:
    return {row["session_id"]: row for row in http.get("/sessions").json()["sessions"]}


def wait_until(condition: Any, what: str) -> None:
    deadline = time.monotonic() + 30  # the reaper ticks every lease / 4 of real time
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_a_killed_clients_sessions_are_closed_a_lease_later(catalog: Catalog, tmp_path: Path) -> None:
    clock = Clock()
    server = serve(create_app(catalog, trace_dir=tmp_path, max_sessions=4, clock=clock))
    client = subprocess.Popen(
        [sys.executable, "-c", CLIENT, server.url, "3"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert client.stdout is not None
        held = client.stdout.readline().split()
        with httpx.Client(base_url=server.url, timeout=30) as http:
            unleased = http.post("/reset", json=RESET).json()["observation"]["session_id"]
            rows = sessions_of(http)
            assert len(held) == 3 and set(rows) == {*held, unleased}
            assert all(rows[sid]["lease_s"] == 2.0 for sid in held) and "lease_s" not in rows[unleased]
            assert http.post("/reset", json=RESET).status_code == 503  # all four slots are taken

            client.kill()
            client.wait(30)
            clock.advance(2.5)
            wait_until(lambda: set(sessions_of(http)) == {unleased}, "the dead client's sessions stay")
            opened = [http.post("/reset", json=RESET) for _ in range(3)]  # their slots are free again
            assert [r.status_code for r in opened] == [200, 200, 200]
            clock.advance(3600)  # a session its client did not lease waits for the idle reaper
            assert unleased in sessions_of(http)
        for sid in held:  # each killed session's episode ended aborted in its trace
            (trace,) = (tmp_path / sid).iterdir()
            end = read_trace(trace).end
            assert end is not None and end.status == "aborted"
    finally:
        client.kill()
        client.wait(30)
        server.stop()


def test_a_live_client_keeps_its_session_however_slowly_it_steps(catalog: Catalog, tmp_path: Path) -> None:
    clock = Clock()
    server = serve(create_app(catalog, trace_dir=tmp_path, clock=clock))
    env = RemoteToolEnv(server.url, transport="http", lease_s=2.0, config={"tasks": TASK_SET})
    try:
        env.reset(seed=0, options={"task": TASK_ID})
        sid = env.session_id
        assert sid is not None
        with httpx.Client(base_url=server.url, timeout=30) as http:
            for _ in range(4):  # 6 s of the server's time without a step: 3 leases
                clock.advance(1.5)
                wait_until(lambda: sessions_of(http)[sid]["lease_left_s"] == 2.0, "the client did not renew")
        _, _, _, truncated, info = env.step("Thought: done\nFinal Answer: no")
        assert not truncated and info["session_id"] == sid and info.get("error_kind") != "infra_error"
    finally:
        env.close()
        server.stop()


def test_a_session_mid_step_never_runs_out(tmp_path: Path) -> None:
    gate = Gate()
    tasks = tmp_path / "gate.jsonl"
    tasks.write_text(GATE_TASKS)
    catalog = Catalog.build(task_files=[tasks], tools=gate.tools)
    clock = Clock()
    server = serve(create_app(catalog, trace_dir=tmp_path / "traces", clock=clock))
    reset = {"config": {"tasks": "gate"}, "task_id": "wait-1", "lease_s": 1.0}
    try:
        with httpx.Client(base_url=server.url, timeout=30) as http:
            busy, idle = (http.post("/reset", json=reset).json() for _ in range(2))
            assert busy["lease_s"] == 1.0
            busy_id, idle_id = busy["observation"]["session_id"], idle["observation"]["session_id"]
            call = 'Thought: wait\nAction: Wait\nAction Input: {"note": "hi"}'
            step: list[httpx.Response] = []
            runner = threading.Thread(
                target=lambda: step.append(
                    http.post("/step", json={"session_id": busy_id, "action": {"text": call}})
                )
            )
            runner.start()
            assert gate.entered.wait(30)  # the step is inside the tool now
            clock.advance(5)
            # the reaper has run once the idle session is gone: the busy one is still there
            wait_until(lambda: idle_id not in sessions_of(http), "the idle session was not closed")
            assert busy_id in sessions_of(http)
            gate.release.set()
            runner.join(30)
            assert step[0].status_code == 200
            # the lease starts again when the step ends
            assert sessions_of(http)[busy_id]["lease_left_s"] == 1.0
    finally:
        gate.release.set()
        server.stop()


def test_a_lease_is_a_number_of_seconds(catalog: Catalog, tmp_path: Path) -> None:
    server = serve(create_app(catalog, trace_dir=tmp_path, idle_timeout_s=60))
    try:
        with httpx.Client(base_url=server.url, timeout=30) as http:
            for bad in ("10", -1, 0, True, [1]):
                answer = http.post("/reset", json={**RESET, "lease_s": bad})
                assert (answer.status_code, answer.json()["error"]["kind"]) == (422, "argument_error"), bad
            assert http.get("/sessions").json()["sessions"] == []  # nothing was left open
            # clamped to [1 s, the idle timeout]
            assert http.post("/reset", json={**RESET, "lease_s": 0.01}).json()["lease_s"] == 1.0
            assert http.post("/reset", json={**RESET, "lease_s": 1e9}).json()["lease_s"] == 60.0
            renewed = http.post("/leases", json={"session_ids": ["nope-nope-nope"]}).json()
            assert renewed["renewed"] == [] and renewed["lost"] == ["nope-nope-nope"]
    finally:
        server.stop()
