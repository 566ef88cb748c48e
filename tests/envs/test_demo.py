"""run_demo and `toolgym demo --jobs`: task sets on forked processes give the traces, results and
table of one process, and a failure in a process reaches the caller.

Forking needs a process with one thread, which a test run need not be (servers of other tests),
so each case runs in a fresh interpreter and counts the forks it made (os.register_at_fork):
a run that fell back to one process would pass every comparison without testing anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolgym.envs.demo import mock_task_paths

ROOT = Path(__file__).resolve().parents[2]


def _bundled(stem: str) -> Path:
    return next(p for p in mock_task_paths() if p.stem == stem)


def _subset(path: Path, count: int, out: Path) -> Path:
    lines = path.read_text(encoding="utf-8").splitlines()[:count]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def _python(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )


RUN_DEMO = """
import json, os, signal, sys, multiprocessing
from pathlib import Path
from toolgym.envs.demo import run_demo
from toolgym.tasks import TaskSet

forks = []
os.register_at_fork(after_in_parent=lambda: forks.append(1))
out, jobs, kill = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "kill"
sets = [(Path(p).stem.split("@")[0], TaskSet.load(p)) for p in sys.argv[4:]]

def on_episode():
    if kill:
        for child in multiprocessing.active_children():
            os.kill(child.pid, signal.SIGKILL)

try:
    episodes = run_demo(sets, out, jobs=jobs, on_episode=on_episode)
except BaseException as exc:
    print(json.dumps({"forks": len(forks), "error": type(exc).__name__, "message": str(exc)}))
    sys.exit(0)
rows = [[e.set_name, e.result.task_id, e.result.reward, e.result.steps, e.result.scores,
         e.result.final_answer, Path(e.result.trace_path).relative_to(out).as_posix()] for e in episodes]
print(json.dumps({"forks": len(forks), "rows": rows}))
"""


def _run_demo(out: Path, jobs: int, *sets: Path, kill: bool = False) -> dict[str, object]:
    done = _python(RUN_DEMO, str(out), str(jobs), "kill" if kill else "-", *map(str, sets))
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def _folder(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_forked_jobs_give_the_traces_and_results_of_one_process(tmp_path: Path) -> None:
    ctool = _subset(_bundled("ctool"), 6, tmp_path / "ctool.jsonl")
    mtu = _subset(_bundled("mtu"), 6, tmp_path / "mtu.jsonl")
    teval = _subset(_bundled("teval"), 4, tmp_path / "teval.jsonl")
    # a second set named ctool (its traces share a folder with the first): they run in one process
    again = _subset(_bundled("ctool"), 3, tmp_path / "ctool@again.jsonl")
    sets = (ctool, mtu, teval, again)

    one = _run_demo(tmp_path / "one", 1, *sets)
    three = _run_demo(tmp_path / "three", 3, *sets)

    assert one["forks"] == 0 and three["forks"] == 3
    assert three["rows"] == one["rows"]
    rows = one["rows"]
    assert isinstance(rows, list) and len(rows) == 6 + 6 + 4 + 3
    assert [row[0] for row in rows] == ["ctool"] * 6 + ["mtu"] * 6 + ["teval"] * 4 + ["ctool"] * 3
    assert all(row[2] == 1.0 for row in rows)
    assert _folder(tmp_path / "three") == _folder(tmp_path / "one")
    assert len(_folder(tmp_path / "one")) == 6 + 6 + 4  # the second ctool set rewrote three of its traces


def test_more_jobs_than_sets_forks_one_process_per_set(tmp_path: Path) -> None:
    mtu = _subset(_bundled("mtu"), 2, tmp_path / "mtu.jsonl")
    report = _run_demo(tmp_path / "out", 8, mtu)
    assert report["forks"] == 0  # one set: nothing to run beside it
    two = _run_demo(tmp_path / "two", 8, mtu, _subset(_bundled("teval"), 2, tmp_path / "teval.jsonl"))
    assert two["forks"] == 2 and len(two["rows"]) == 4  # type: ignore[arg-type]


def test_an_error_in_a_process_is_raised_by_the_caller(tmp_path: Path) -> None:
    good = _subset(_bundled("ctool"), 3, tmp_path / "ctool.jsonl")
    task = json.loads(_bundled("ctool").read_text(encoding="utf-8").splitlines()[0])
    # its golden chain replays (so the set is not refused up front); scoring it finds no such table
    task["expected_state"] = [{"kind": "row_exists", "table": "no_such_table"}]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(task) + "\n", encoding="utf-8")

    forked = _run_demo(tmp_path / "forked", 2, good, bad)
    alone = _run_demo(tmp_path / "alone", 1, good, bad)
    assert forked["forks"] == 2
    # the table is named with the task's file, line and id
    assert forked["error"] == alone["error"] == "TaskUseError"
    assert forked["message"] == alone["message"]
    assert str(forked["message"]).startswith(
        f"{bad}:1: {task['id']}: state assertion names unknown table 'no_such_table'"
    )


def test_a_killed_process_is_reported_not_waited_for(tmp_path: Path) -> None:
    quick = _subset(_bundled("ctool"), 3, tmp_path / "ctool.jsonl")
    # the solver's sandbox keeps its process busy for most of a second after the first episode
    demo = json.loads((ROOT / "fixtures/demo/tasks.jsonl").read_text(encoding="utf-8").splitlines()[8])
    assert demo["id"] == "solve-system"
    slow = tmp_path / "slow.jsonl"
    slow.write_text(json.dumps(demo) + "\n", encoding="utf-8")

    report = _run_demo(tmp_path / "out", 2, slow, quick, kill=True)
    assert report["forks"] == 2
    assert report["error"] == "RuntimeError"
    assert "exit code -9" in str(report["message"]) and "before its task sets did" in str(report["message"])


def _read_only_shm_prefix(tmp_path: Path) -> list[str] | None:
    """A bubblewrap command line that runs a program with /dev/shm read-only (no POSIX semaphores,
    as on hosts without a working /dev/shm), or None where bubblewrap cannot do it here."""
    import shutil

    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None
    empty = tmp_path / "empty-shm"
    empty.mkdir()
    prefix = [bwrap, "--dev-bind", "/", "/", "--ro-bind", str(empty), "/dev/shm"]
    probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=60, check=False)
    return prefix if probe.returncode == 0 else None


def test_without_process_queues_the_sets_run_in_one_process(tmp_path: Path) -> None:
    prefix = _read_only_shm_prefix(tmp_path)
    if prefix is None:
        pytest.skip("bubblewrap cannot run a program with a read-only /dev/shm here")
    sets = (
        _subset(_bundled("ctool"), 3, tmp_path / "ctool.jsonl"),
        _subset(_bundled("mtu"), 3, tmp_path / "mtu.jsonl"),
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [*prefix, sys.executable, "-c", RUN_DEMO, str(tmp_path / "no-shm"), "2", "-", *map(str, sets)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    alone = _run_demo(tmp_path / "alone", 1, *sets)
    assert report["forks"] == 0 and "error" not in report
    assert report["rows"] == alone["rows"] and len(report["rows"]) == 6
    assert _folder(tmp_path / "no-shm") == _folder(tmp_path / "alone")


CLI = """
import os, sys
forks = []
os.register_at_fork(after_in_parent=lambda: forks.append(1))
from toolgym.cli import main
try:
    main(sys.argv[1:])
finally:
    print(f"forks: {len(forks)}")
"""


def _table(stdout: str) -> list[str]:
    """The table without its `ms` column (wall time per episode, which also sets its width)."""
    rows = []
    for line in stdout.splitlines():
        if line.startswith("│"):
            rows.append("│".join(cell.strip() for cell in line.split("│")[:-2]))
        elif not line.startswith(("┏", "┡", "└", "┃", "forks:")) and line.strip():
            rows.append(line.replace("/one/", "/OUT/").replace("/two/", "/OUT/").strip())
    return rows


@pytest.mark.parametrize("protocol", ["react", "openai"])
def test_demo_command_on_two_processes_prints_and_writes_what_one_does(tmp_path: Path, protocol: str) -> None:
    args = ["demo", "--tasks", "ctool", "--tasks", "teval", "--protocol", protocol]
    one = _python(CLI, *args, "--jobs", "1", "--out", str(tmp_path / "one"))
    two = _python(CLI, *args, "--jobs", "2", "--out", str(tmp_path / "two"))
    assert one.returncode == two.returncode == 0, (one.stderr, two.stderr)
    assert "forks: 0" in one.stdout and "forks: 2" in two.stdout
    assert _table(two.stdout) == _table(one.stdout)
    assert any("answer accuracy:" in line for line in _table(one.stdout))
    assert _folder(tmp_path / "two") == _folder(tmp_path / "one")


def test_a_task_whose_golden_chain_fails_is_refused_before_any_episode(tmp_path: Path) -> None:
    """Issue 36: a golden chain that fails where it does not say so would score every agent 0; the
    demo refuses it in one line (its file:line, id and failing call), exit 2, and writes nothing."""
    transfer = next(line for line in _bundled("mtu").read_text().splitlines() if "mtu-transfer-011" in line)
    broken = transfer.replace('"account_number": "123456", "source', '"account_number": "999999", "source')
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(_bundled("mtu").read_text().splitlines()[0] + "\n" + broken + "\n")
    result = _python(CLI, "demo", "--tasks", str(tasks), "--out", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"toolgym: error: {tasks}:2: mtu-transfer-011: golden call #0 transfer_funds(")
    assert "failed (tool_error)" in line and "account '999999' not found" in line
    assert not (tmp_path / "out").exists()
