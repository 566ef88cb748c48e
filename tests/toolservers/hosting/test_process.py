"""The process backend (no Docker needed): the same interface as containers, servers as
sandboxed local processes (bubblewrap where it works), limits, restarts of dead or hung ones."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from toolgym.actions import FinalAnswer, ToolCall
from toolgym.envs.agents import OracleAgent
from toolgym.envs.lab import InfraRetry, Lab
from toolgym.envs.runner import run_episode
from toolgym.mocks.service import MockServiceClient
from toolgym.tasks import AnswerSpec, GoldenStep, Task
from toolgym.toolservers.hosting.base import Limits, ServerSpec, ServerStartError, mock_server_spec
from toolgym.toolservers.hosting.process import CGROUP_ROOT, ProcessHost, process_tree
from toolgym.toolservers.hosting.supervisor import Supervisor
from toolgym.trace import read_trace

ARITHMETIC = Task(
    id="arithmetic",
    query="What is (290 // 5) * 3?",
    tools=["Calculator", "get_balance"],
    apps=["banking"],
    golden=[
        GoldenStep(action=ToolCall(name="Calculator", arguments={"expression": "290 // 5"})),
        GoldenStep(action=ToolCall(name="get_balance", arguments={"account_id": "ACC-10001"})),
        GoldenStep(action=ToolCall(name="Calculator", arguments={"expression": "58 * 3"})),
        GoldenStep(action=FinalAnswer(text="174")),
    ],
    answer=AnswerSpec(whitelist=[["174"]]),
)


@pytest.fixture(scope="module")
def backend() -> Iterator[ProcessHost]:
    b = ProcessHost()
    yield b
    b.close()


def test_process_server_is_sandboxed_and_limited(backend: ProcessHost) -> None:
    limits = Limits(memory_mb=1024, cpus=1.0, pids=128)
    handle = backend.start(mock_server_spec(network=False, limits=limits))
    try:
        assert handle.uds is not None and handle.extra["isolation"] == backend.isolation
        pids = process_tree(int(handle.ident))
        server = [p for p in pids if "python" in os.path.basename(os.readlink(f"/proc/{p}/exe"))]
        assert len(server) == 1
        if backend.isolation == "bwrap":  # the server sits in its own namespaces
            for ns in ("net", "pid", "user", "ipc"):
                assert os.readlink(f"/proc/{server[0]}/ns/{ns}") != os.readlink(f"/proc/self/ns/{ns}"), ns
        if handle.extra["limits"] == "cgroup":
            cgroup = handle.extra["cgroup"]
            by_controller = {d.relative_to(CGROUP_ROOT).parts[0]: d for d in cgroup.dirs}
            assert (by_controller["memory"] / "memory.limit_in_bytes").read_text().strip() == str(1024 << 20)
            assert (by_controller["pids"] / "pids.max").read_text().strip() == "128"
            members = {int(p) for p in (by_controller["pids"] / "cgroup.procs").read_text().split()}
            assert set(pids) <= members  # the server and everything it started
        with MockServiceClient(handle.url, token=handle.token, uds=handle.uds) as client:
            assert (
                client.world(["banking"]).call("get_balance", account_id="ACC-10001")["status"] == "success"
            )
    finally:
        backend.stop(handle)
    assert not Path(handle.extra["runtime"]).exists()


def test_dead_and_hung_servers_are_restarted(backend: ProcessHost) -> None:
    handle = backend.start(mock_server_spec(network=True))
    sup = Supervisor(backend, handle, probe_timeout_s=1.0)
    try:
        assert handle.url.startswith("http://127.0.0.1:") and handle.uds is None  # loopback TCP
        assert httpx.get(f"{handle.url}/sessions").status_code == 401
        ok = httpx.get(f"{handle.url}/sessions", headers={"authorization": f"Bearer {handle.token}"})
        assert ok.status_code == 200
        assert sup.recover() is False  # healthy: nothing to do
        backend.kill(handle, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while backend.alive(handle) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert sup.recover() is True and backend.healthy(handle)
        backend.kill(handle, signal.SIGSTOP)  # hangs: alive, silent
        assert backend.alive(handle)
        assert sup.recover() is True and backend.healthy(handle)
        assert [e.reason for e in sup.events] == ["dead", "unresponsive"]
        assert handle.restarts == 2
        assert httpx.get(f"{handle.url}/health").status_code == 200  # same port after restarts
    finally:
        backend.stop(handle)


def test_a_server_that_cannot_start_reports_its_logs(backend: ProcessHost) -> None:
    spec = ServerSpec(name="broken", kind="mocks", argv=("lab", "mock-server", "--max-sessions", "many"))
    with pytest.raises(ServerStartError, match="Invalid value for '--max-sessions'"):
        backend.start(spec)


def test_lab_on_processes_survives_a_killed_tool_server(tmp_path: Path) -> None:
    with Lab.start("process", tools=["Calculator"], network=False) as lab:
        env = lab.env([ARITHMETIC])
        tools = lab.handles["tools"]
        assert lab.backend is not None
        backend = lab.backend
        assert isinstance(backend, ProcessHost)

        def kill(event: str, info: dict[str, object]) -> None:
            if event == "step" and info["step"] == 1:
                backend.kill(tools, signal.SIGKILL)

        env.subscribe(kill)
        result = run_episode(env, InfraRetry(OracleAgent(env.protocol)), ARITHMETIC, trace_dir=tmp_path)
        # the supervisor restarted the server and the step's second try got through
        assert result.reward == 1.0 and result.error_counts == {}
        assert lab.restarts() == {"mocks": 0, "tools": 1}
        assert result.trace_path is not None
        trace = read_trace(result.trace_path)
        assert [s.error_kinds for s in trace.steps] == [[], [], [], []]
        env.close()
    assert not Path(tools.extra["runtime"]).exists()
