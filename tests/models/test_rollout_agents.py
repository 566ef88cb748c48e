"""LLM agents built in rollout workers: `toolgym run --agent llm --workers 2` against the scripted
local server writes the traces one process writes (partial traces of aborted episodes too) and the
same run.json but for the measured latencies."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from tests.envs.test_rollouts import tree, without_latencies
from tests.models.fake_openai import FakeOpenAI, serve
from tests.running.test_trials import _seeded_script, mock_set_path
from toolgym.cli import app
from toolgym.envs.demo import demo_tasks_path
from toolgym.running.trials import RunSummary


def test_llm_runs_on_worker_processes_write_the_one_process_bytes(tmp_path: Path) -> None:
    fake = FakeOpenAI(_seeded_script)
    runs: dict[str, dict[str, bytes]] = {}
    with serve(fake):
        for name, extra in (("one", []), ("workers", ["--workers", "2"])):
            args = ["run", "--agent", "llm", "--base-url", fake.base_url, "--model", "fake-model"]
            args += [
                "--llm-seed",
                "100",
                "--trials",
                "3",
                "--max-retries",
                "0",
                "--out",
                str(tmp_path / name),
            ]
            args += ["--tasks", str(demo_tasks_path()), "--tasks", str(mock_set_path("mtu"))]
            args += [
                "--task-id",
                "fish-oil-days",
                "--task-id",
                "mtu-balance-002",
                "--task-id",
                "mtu-door-003",
            ]
            result = CliRunner().invoke(app, [*args, *extra])
            assert result.exit_code == 1, result.output  # mtu-door-003 always meets a server error
            runs[name] = tree(tmp_path / name)
    traces = {
        name: {k: without_latencies(v) for k, v in files.items() if k != "run.json"}
        for name, files in runs.items()
    }
    assert traces["workers"] == traces["one"] and len(traces["one"]) == 9  # partial traces too

    def timeless(path: Path) -> list[dict[str, Any]]:
        """run.json's episodes without the model's latency, the one wall-clock figure in them."""
        episodes = [asdict(e) for e in RunSummary.load(path).episodes]
        for e in episodes:
            e["usage"].pop("latency_s")
        return episodes

    assert timeless(tmp_path / "workers") == timeless(tmp_path / "one")
    summary = RunSummary.load(tmp_path / "workers")
    assert [e.success for e in summary.episodes if e.task_id == "fish-oil-days"] == [True, True, False]
    door = [e for e in summary.episodes if e.task_id == "mtu-door-003"]
    assert all(e.status == "aborted" and e.trace and e.trace.endswith(".partial") for e in door)
    assert summary.usage["requests"] > 0
