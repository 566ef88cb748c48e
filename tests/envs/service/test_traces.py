"""The env service's trace files: written as the runner writes them, open only while a call
writes them. The trace folder stays within its bound: the oldest finished traces go first, an
open session's folder and its running episode stay, earlier runs' traces count at start."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from toolgym.envs.agents import OracleAgent
from toolgym.envs.runner import run_episode
from toolgym.envs.service.app import create_app
from toolgym.envs.service.catalog import Catalog, ServiceError
from toolgym.envs.service.traces import TraceFile, TraceRetention
from toolgym.trace import read_trace

from .support import TASK_ID, TASK_SET, files_open_under, local_env, serve

RESET = {"task_id": TASK_ID, "config": {"tasks": TASK_SET}, "seed": 0}


def traces_under(root: Path) -> list[Path]:
    return sorted(root.glob("*/*"))


def finished_bytes(root: Path) -> int:
    """What the bound counts: the finished traces (a running episode's `.partial` counts once it ends)."""
    return sum(p.stat().st_size for p in traces_under(root) if not p.name.endswith(".partial"))


def _lowest_free_descriptor() -> int:
    n = 0
    while True:
        try:
            os.fstat(n)
        except OSError:
            return n
        n += 1


def test_a_trace_file_writes_the_runners_bytes_and_holds_no_descriptor_between_calls(
    catalog: Catalog, tmp_path: Path
) -> None:
    """The runner's records written through a TraceFile give the runner's bytes; the file is open
    inside `held()` only, and with no descriptor free `held()` is a 503 `capacity` that writes
    nothing."""
    import resource

    if not Path("/proc/self/fd").is_dir():
        pytest.skip("lists the open files in /proc")
    local = local_env(catalog)
    result = run_episode(
        local, OracleAgent(local.protocol), local.tasks[TASK_ID], seed=0, trace_dir=tmp_path / "a"
    )
    local.close()
    assert result.trace_path is not None
    trace = read_trace(result.trace_path)
    assert trace.end is not None
    out = TraceFile(tmp_path / "b" / result.trace_path.name, trace.header)
    assert files_open_under(tmp_path) == []
    for step in trace.steps:
        with out.held():
            assert files_open_under(tmp_path) == [str(out.partial_path)]
            out.step(step.model_dump(exclude={"record"}))
        assert files_open_under(tmp_path) == []
    written = out.partial_path.read_bytes()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (_lowest_free_descriptor(), hard))  # none free now
    try:
        with pytest.raises(ServiceError) as refused, out.held():
            out.step(trace.steps[0].model_dump(exclude={"record"}))
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert (refused.value.kind, refused.value.status) == ("capacity", 503)
    assert out.partial_path.read_bytes() == written
    with out.held():
        path = out.finish(trace.end)
    assert path.read_bytes() == result.trace_path.read_bytes() and not out.partial_path.exists()
    assert files_open_under(tmp_path) == []


def test_the_trace_folder_stays_within_its_bound_over_many_sessions(catalog: Catalog, tmp_path: Path) -> None:
    # the size of one trace (an episode reset away: it ends aborted), to set the bound by
    probe = serve(create_app(catalog, trace_dir=tmp_path / "probe"))
    try:
        with httpx.Client(base_url=probe.url, timeout=30) as http:
            sid = http.post("/reset", json=RESET).json()["observation"]["session_id"]
            http.post("/close", json={"session_id": sid})
    finally:
        probe.stop()
    (one,) = traces_under(tmp_path / "probe")
    bound = one.stat().st_size * 5 + one.stat().st_size // 2  # room for five traces
    trace_dir = tmp_path / "traces"
    server = serve(create_app(catalog, trace_dir=trace_dir, max_trace_bytes=bound))
    try:
        with httpx.Client(base_url=server.url, timeout=30) as http:
            closed = []
            for _ in range(8):  # sessions of three episodes each, closed
                sid = http.post("/reset", json=RESET).json()["observation"]["session_id"]
                for _ in range(2):
                    http.post("/reset", json={**RESET, "session_id": sid})
                http.post("/close", json={"session_id": sid})
                closed.append(sid)
                assert finished_bytes(trace_dir) <= bound
            open_sid = http.post("/reset", json=RESET).json()["observation"]["session_id"]
            for _ in range(7):  # one long session: its own old traces go too
                http.post("/reset", json={**RESET, "session_id": open_sid})
                assert finished_bytes(trace_dir) <= bound
            left = traces_under(trace_dir)
            running = [p for p in left if p.name.endswith(".partial")]
            assert [p.parent.name for p in running] == [open_sid]  # the running episode is kept
            assert {p.parent.name for p in left} == {open_sid}  # the closed sessions' went first
            assert len(left) == 6  # five finished traces and the running one
            assert sorted(p.name for p in trace_dir.iterdir()) == [open_sid]  # empty folders removed
            assert all(read_trace(p).end is not None for p in left if p not in running)
    finally:
        server.stop()


def test_traces_of_earlier_runs_count_and_the_oldest_go_at_start(tmp_path: Path) -> None:
    for n in range(6):
        folder = tmp_path / f"session-{n:04d}"
        folder.mkdir()
        trace = folder / "ep1.task.s0.jsonl"
        trace.write_bytes(b"x" * 100)
        os.utime(trace, (1000 + n, 1000 + n))
    (tmp_path / "notes.txt").write_text("not a session folder: never touched")
    retention = TraceRetention(tmp_path, max_bytes=250)
    assert retention.total_bytes == 200
    assert sorted(p.parent.name for p in traces_under(tmp_path)) == ["session-0004", "session-0005"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "session-0004", "session-0005"]
