"""A run knows where its tasks came from: `toolgym eval`, `report`, `export` and `view` of a
ToolEyes run and of a run over a task file need no `--tasks`, and a task file changed since the
run is refused in one line. Real runs through the CLI (typer's runner)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.cli_text import flat
from toolgym.cli import app
from toolgym.envs.demo import mock_task_paths
from toolgym.running.task_sources import TaskSource, TaskSourceError, file_digest, resolve

MTU = next(p for p in mock_task_paths() if p.stem == "mtu")


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, flat(result.output)


def test_a_tooleyes_run_is_scored_reported_exported_and_viewed_without_tasks(tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    answer = {"type": "final_answer", "text": "Here is one: a8Xk2pQz"}
    script.write_text(json.dumps({"task_id": "tooleyes-000", "actions": [answer]}) + "\n", encoding="utf-8")
    run = tmp_path / "run"
    code, said = invoke(
        "run",
        "--agent",
        f"scripted:{script}",
        "--tasks",
        "tooleyes",
        "--task-id",
        "tooleyes-000",
        "--out",
        str(run),
    )
    assert code == 0, said
    code, said = invoke("eval", str(run), "--suite", "tooleyes")
    assert code == 0, said
    scored = json.loads((run / "eval.fixed.json").read_text(encoding="utf-8"))
    assert scored["results"]["tooleyes"]["counts"]["episodes"] == 1 and not scored["failures"]
    assert invoke("report", str(run))[0] == 0 and (run / "report.html").is_file()
    code, said = invoke("export", str(run), "--format", "hf")
    assert code == 0 and "1 hf records" in said, said
    code, said = invoke("view", str(run), "--export", str(tmp_path / "view.html"))
    assert code == 0 and "1 episodes" in said, said
    page = (tmp_path / "view.html").read_text(encoding="utf-8")
    assert "random string with a length of 8" in page  # the task's query, found by the viewer


def test_a_task_files_run_finds_its_file_and_refuses_it_once_changed(tmp_path: Path) -> None:
    tasks = tmp_path / "mine.jsonl"
    tasks.write_text("".join(MTU.read_text(encoding="utf-8").splitlines(keepends=True)[:2]), encoding="utf-8")
    run = tmp_path / "run"
    assert invoke("run", "--tasks", str(tasks), "--out", str(run))[0] == 0
    code, said = invoke("eval", str(run), "--suite", "mtu")
    assert code == 0, said  # the file is no bundled set: eval found it in run.json
    assert json.loads((run / "eval.fixed.json").read_text(encoding="utf-8"))["traces"] == 2
    (run / "eval.fixed.json").unlink()

    original = tasks.read_text(encoding="utf-8")
    changed = original.replace("balance", "BALANCE")
    assert changed != original
    tasks.write_text(changed, encoding="utf-8")
    for command in (["eval", str(run), "--suite", "mtu"], ["report", str(run)], ["export", str(run)]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 2, result.output
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and f"the run's task file {tasks} changed since the run" in lines[0]
        assert "--tasks" in lines[0]
    assert not list(run.glob("eval.*.json")) and not (run / "report.html").exists()
    # --tasks names the file to use anyway
    assert invoke("eval", str(run), "--suite", "mtu", "--tasks", str(tasks))[0] == 0


def test_sources_resolve_names_and_files_and_check_digests(tmp_path: Path) -> None:
    assert resolve(["mtu"]) == [("mtu", MTU)]
    mine = tmp_path / "mtu"  # a file named like a bundled set wins over it
    mine.write_text("", encoding="utf-8")
    assert resolve([str(mine)]) == [(None, mine)]
    assert all(name is not None for name, _ in resolve([]))  # the default sets are registered ones
    with pytest.raises(ValueError, match="no such task set file or bundled set: nope"):
        resolve(["nope"])
    source = TaskSource(name="mtu", source="mtu", registered=True, digest=file_digest(MTU))
    assert source.checked_path() == MTU
    gone = TaskSource(name="x", source="no-such-set", registered=True, digest="0" * 64)
    with pytest.raises(TaskSourceError, match="no longer registered"):
        gone.checked_path()
    missing = TaskSource(name="x", source=str(tmp_path / "gone.jsonl"), digest="0" * 64)
    with pytest.raises(TaskSourceError, match="cannot be read"):
        missing.checked_path()
