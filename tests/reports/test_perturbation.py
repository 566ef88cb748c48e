"""Runs under tool-schema perturbations: `toolgym run --perturb`, worker processes, eval on the
real names, the report's clean-vs-perturbed section, and replay from a cassette."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tests.cli_text import flat
from toolgym.cli import app
from toolgym.envs.agents import OracleAgent
from toolgym.envs.demo import mock_task_paths
from toolgym.envs.perturb import PERTURBATION_KEY, PerturbLayer, PerturbPlan, distractor_pool
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.recorder.cassette import Cassette
from toolgym.recorder.golden import EnvPool, TaskIndex
from toolgym.recorder.verify import verify_trace
from toolgym.reports.report import collect_report_data, render_report
from toolgym.running.trials import PERTURBED_DIR, find_traces
from toolgym.tasks import TaskSet
from toolgym.toolservers.registry import default_toolset
from toolgym.trace import read_trace

TASKS = ("mtu-balance-002", "mtu-transfer-011", "mtu-restaurant-chain-006")
IDS = [x for t in TASKS for x in ("--task-id", t)]


def mtu_path() -> Path:
    return next(p for p in mock_task_paths() if p.stem == "mtu")


def run(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return flat(result.output)


def test_run_with_perturbations_writes_each_beside_the_clean_run_and_scores_map_back(tmp_path: Path) -> None:
    out = tmp_path / "run"
    plan = tmp_path / "mine.json"
    plan.write_text(json.dumps({"rename_arguments": True, "drop_types": True, "seed": 7}))
    text = run(
        "run", "--out", str(out), "--tasks", str(mtu_path()), *IDS, "--perturb", "all", "--perturb", str(plan)
    )
    assert text.count("success: 3/3 episodes") == 3
    assert "under perturbation all" in text and "under perturbation mine" in text
    perturbed = out / PERTURBED_DIR / "all"
    summary = json.loads((perturbed / "run.json").read_text())
    assert summary["settings"]["perturb"]["name"] == "all"
    assert json.loads((out / "run.json").read_text())["run_config"]["perturb"] == ["all", str(plan)]
    # the clean run's folder does not take the perturbed traces in
    assert len(find_traces(out)) == 3 and len(find_traces(perturbed)) == 3
    header = json.loads(find_traces(perturbed)[0].read_text().splitlines()[0])
    assert header["env_config"][PERTURBATION_KEY]["plan"]["name"] == "all"
    # a suite scores the perturbed calls under their real names: the same as the clean run's
    for folder in (out, perturbed):
        run("eval", str(folder), "--suite", "mtu")
    clean = json.loads((out / "eval.fixed.json").read_text())["results"]["mtu"]
    scored = json.loads((perturbed / "eval.fixed.json").read_text())["results"]["mtu"]
    assert scored["per_task"] == clean["per_task"] and scored["metrics"] == clean["metrics"]
    assert clean["metrics"] == {"TN": 100.0, "TO": 100.0, "SR": 100.0}

    data = collect_report_data(out, {})
    assert [(r.plan, r.episodes, r.successes) for r in data.perturbation] == [
        ("clean", 3, 3),
        ("all", 3, 3),
        ("mine", 3, 3),
    ]
    html = render_report(data)
    assert "Robustness: clean vs perturbed tool schemas" in html and 'href="#perturbation"' in html


def test_perturbed_runs_on_worker_processes_write_the_one_process_bytes(tmp_path: Path) -> None:
    for out, extra in (("one", []), ("workers", ["--workers", "2"])):
        run("run", "--out", str(tmp_path / out), "--tasks", str(mtu_path()), *IDS, "--perturb", "all", *extra)
    one, workers = tmp_path / "one" / PERTURBED_DIR / "all", tmp_path / "workers" / PERTURBED_DIR / "all"
    traces = find_traces(one)
    assert len(traces) == 3 and all(b'"fn_' in p.read_bytes() for p in traces)
    assert [p.read_bytes() for p in traces] == [p.read_bytes() for p in find_traces(workers)]
    assert (one / "run.json").read_bytes() == (workers / "run.json").read_bytes()


def test_bad_perturbations_stop_the_run_before_any_episode(tmp_path: Path) -> None:
    base = ["run", "--out", str(tmp_path / "r"), "--tasks", str(mtu_path()), *IDS]
    for extra, said in (
        (["--perturb", "scrambled"], "or name a preset"),
        (["--perturb", "all", "--perturb", "all"], "distinct names"),
        (["--perturb", "all", "--mode", "step"], "end to end"),
    ):
        result = CliRunner().invoke(app, [*base, *extra])
        assert result.exit_code == 2 and said in flat(result.output), result.output
        assert not (tmp_path / "r").exists()


def test_a_perturbed_episode_replays_byte_identical_from_its_cassette(tmp_path: Path) -> None:
    """Recorded under a cassette (inside) and a perturbation (outside), the episode verifies step by
    step from the cassette alone: zero live calls; without its perturbation it would not."""
    tasks = TaskSet.load(mtu_path())
    tools = default_toolset()
    plan = PerturbPlan.named("all")
    tape = Cassette(tmp_path / "cassette.sqlite", mode="record")
    env = ToolEnv(tools, tasks, cassette=tape)
    env.add_tool_layer(PerturbLayer(plan, pool=distractor_pool(tools)))
    for task_id in TASKS:
        task = tasks[task_id]
        result = run_episode(env, OracleAgent(env.protocol), task, seed=0, trace_dir=tmp_path / "traces")
        assert result.reward == 1.0
    tape.close()
    replay = Cassette(tmp_path / "cassette.sqlite", mode="replay")
    pool = EnvPool(tools, cassette=replay)
    index = TaskIndex([mtu_path()])
    try:
        results = [verify_trace(p, pool, index) for p in sorted((tmp_path / "traces").glob("*.jsonl"))]
    finally:
        pool.close()
    assert len(results) == 3 and all(r.ok for r in results), [r.drifts for r in results]
    assert replay.stats.live_calls == 0 and replay.stats.hits >= 4
    replay.close()

    # the header's perturbation is what makes the replay offer the same names
    path = sorted((tmp_path / "traces").glob("*.jsonl"))[0]
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    del header["env_config"][PERTURBATION_KEY]
    stripped = tmp_path / "stripped" / path.name
    stripped.parent.mkdir()
    stripped.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    pool = EnvPool(tools)
    try:
        assert not verify_trace(stripped, pool, index).ok
    finally:
        pool.close()
    assert read_trace(path).header.env_config[PERTURBATION_KEY]["plan"]["name"] == "all"
