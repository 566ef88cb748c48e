"""End to end: the demo set with the oracle, through the CLI and through each protocol."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolgym.cli import app
from toolgym.envs.agents import OracleAgent
from toolgym.envs.demo import demo_tasks_path, make_demo_env
from toolgym.envs.runner import run_episode
from toolgym.tasks import TaskSet
from toolgym.trace import read_trace


def test_demo_command_solves_every_task_and_writes_traces(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["demo", "--out", str(tmp_path), "--tasks", str(demo_tasks_path())])
    assert result.exit_code == 0, result.output
    tasks = TaskSet.load(demo_tasks_path())
    assert len(tasks) >= 10
    assert f"answer accuracy: {len(tasks)}/{len(tasks)}" in result.output
    traces = sorted((tmp_path / "tasks").glob("*.jsonl"))
    assert len(traces) == len(tasks)
    for path in traces:
        trace = read_trace(path)
        assert trace.complete and trace.end is not None and trace.end.reward == 1.0
        assert trace.end.error_counts == {}


@pytest.mark.parametrize("protocol", ["json", "openai"])
def test_oracle_through_every_protocol(protocol: str, tmp_path: Path) -> None:
    env = make_demo_env(protocol=protocol)
    agent = OracleAgent(env.protocol)
    for task_id in ("fish-oil-days", "receipt-chart", "caption-cat"):
        result = run_episode(env, agent, env.tasks[task_id], seed=0, trace_dir=tmp_path)
        assert result.reward == 1.0, (protocol, task_id, result)
    env.close()


def test_golden_observations_match_recorded_expectations() -> None:
    """The demo's expected observations were recorded from these tools: a drift shows here."""
    env = make_demo_env()
    for task in env.tasks:
        env.reset(options={"task": task})
        for golden in task.golden[:-1]:
            _, _, _, _, info = env.step(golden.action)
            assert info["observations"][0]["content"] == golden.expected, (task.id, golden.action)
    env.close()


def test_tools_command_exports() -> None:
    runner = CliRunner()
    table = runner.invoke(app, ["tools"])
    assert table.exit_code == 0 and "Calculator" in table.output
    exported = json.loads(runner.invoke(app, ["tools", "--format", "openai"]).output)
    assert {t["function"]["name"] for t in exported} >= {
        "OCR",
        "Calculator",
        "Solver",
        "Plot",
        "DrawBox",
        "AddText",
    }
    meta = json.loads(runner.invoke(app, ["tools", "--format", "agentlego"]).output)
    assert meta["OCR"]["inputs"][0]["type"] == "image"
    teval = json.loads(runner.invoke(app, ["tools", "--format", "teval"]).output)
    assert any(api["name"] == "Solver" for api in teval)
