"""Robustness: clean vs faulted runs, retries and recovery, `toolgym run --faults` and the report."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tests.cli_text import flat
from toolgym.cli import app
from toolgym.envs.agents import OracleAgent
from toolgym.envs.demo import mock_task_paths
from toolgym.envs.faults import FaultPlan, FaultPlanError, FaultRule
from toolgym.envs.lab import InfraRetry
from toolgym.envs.tool_env import ToolEnv
from toolgym.reports.report import collect_report_data, render_report
from toolgym.reports.robustness import CLEAN, robustness_rows
from toolgym.running.trials import FAULTS_DIR, find_traces, run_trials
from toolgym.tasks import TaskSet
from toolgym.toolservers.registry import default_toolset

TASKS = ("mtu-balance-002", "mtu-door-003")


def mtu_path() -> Path:
    return next(p for p in mock_task_paths() if p.stem == "mtu")


def mtu_sets() -> list[tuple[str, TaskSet]]:
    full = TaskSet.load(mtu_path())
    return [("mtu", TaskSet([t for t in full if t.id in TASKS], base_dir=full.base_dir))]


OUTAGE = FaultPlan(name="outage-1", rules=(FaultRule(tools="*", kind="outage", steps=(1, 1)),))


def retrying(env: ToolEnv, trial: int) -> InfraRetry:
    return InfraRetry(OracleAgent(env.protocol))


def test_a_retrying_agent_recovers_and_the_rows_say_so(tmp_path: Path) -> None:
    clean = run_trials(mtu_sets(), retrying, out=tmp_path, toolset=default_toolset())
    faulted = run_trials(
        mtu_sets(),
        retrying,
        out=tmp_path / FAULTS_DIR / OUTAGE.name,
        toolset=default_toolset(),
        faults=OUTAGE,
    )
    assert all(e.success for e in clean.episodes) and all(e.success for e in faulted.episodes)
    assert all(e.error_counts == {"infra_error": 1} for e in faulted.episodes)
    assert all(e.scores["injected_faults"] == 1.0 for e in faulted.episodes)  # fault_aware rewards
    assert all("injected_faults" not in e.scores for e in clean.episodes)
    assert faulted.settings["faults"]["name"] == "outage-1"
    # the clean run's folder does not take the faulted traces in
    assert all(FAULTS_DIR not in p.relative_to(tmp_path).parts for p in find_traces(tmp_path))

    data = collect_report_data(tmp_path, {})
    assert [(r.plan, r.episodes) for r in data.robustness] == [(CLEAN, 2), ("outage-1", 2)]
    plain, hit = data.robustness
    assert (plain.injected, plain.retries, plain.faulted_episodes, plain.infra_errors) == (0, 0, 0, 0)
    assert (hit.injected, hit.retries, hit.faulted_episodes, hit.recovered, hit.infra_errors) == (
        2,
        2,
        2,
        2,
        2,
    )
    assert hit.by_kind == {"outage": [2, 2]} and hit.recovered_from() == "outage 2/2"
    assert hit.success_rate == plain.success_rate == 1.0
    assert hit.mean_reward_without_faults is None  # every episode met a fault
    page = render_report(data)
    assert 'id="robustness"' in page and "outage 2/2" in page and "2/2" in page


def test_a_faulted_run_repeats_byte_for_byte(tmp_path: Path) -> None:
    flaky = FaultPlan(
        name="flaky", rules=(FaultRule(kind="http_503", rate=0.5), FaultRule(kind="truncate", rate=0.3))
    )
    for out in ("a", "b"):
        run_trials(
            mtu_sets(), retrying, out=tmp_path / out, toolset=default_toolset(), faults=flaky, trials=2
        )
    first, second = find_traces(tmp_path / "a"), find_traces(tmp_path / "b")
    assert len(first) == 4
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]
    assert (tmp_path / "a" / "run.json").read_bytes() == (tmp_path / "b" / "run.json").read_bytes()


def test_faulted_runs_on_worker_processes_write_the_one_process_bytes(tmp_path: Path) -> None:
    plan = tmp_path / "flaky.json"
    plan.write_text(
        json.dumps({"rules": [{"kind": "http_503", "rate": 0.5}, {"kind": "truncate", "rate": 0.3}]})
    )
    ids = [x for t in TASKS for x in ("--task-id", t)]
    for out, extra in (("one", []), ("workers", ["--workers", "2"])):
        args = ["run", "--out", str(tmp_path / out), "--tasks", str(mtu_path()), "--faults", str(plan)]
        result = CliRunner().invoke(app, [*args, *ids, "--trials", "2", *extra])
        assert result.exit_code == 0, result.output
    one, workers = tmp_path / "one" / FAULTS_DIR / "flaky", tmp_path / "workers" / FAULTS_DIR / "flaky"
    traces = find_traces(one)
    assert len(traces) == 4 and any(b'"injected"' in p.read_bytes() for p in traces)
    assert [p.read_bytes() for p in traces] == [p.read_bytes() for p in find_traces(workers)]
    assert (one / "run.json").read_bytes() == (workers / "run.json").read_bytes()


def test_run_refuses_a_plan_naming_no_tool_before_any_episode(tmp_path: Path) -> None:
    typo = FaultPlan(name="typo", rules=(FaultRule(tools="get_balanse", kind="error"),))
    try:
        run_trials(mtu_sets(), retrying, out=tmp_path, toolset=default_toolset(), faults=typo)
    except FaultPlanError as exc:
        assert "get_balanse" in exc.message
    else:
        raise AssertionError("a plan naming no offered tool must be refused")
    assert not list(tmp_path.iterdir())


def test_run_command_with_faults_and_the_report(tmp_path: Path) -> None:
    plan = tmp_path / "outage-1.json"
    plan.write_text(json.dumps({"rules": [{"tools": "*", "kind": "outage", "steps": [1, 1]}]}))
    out = tmp_path / "run"
    args = ["run", "--out", str(out), "--tasks", str(mtu_path()), "--faults", str(plan)]
    result = CliRunner().invoke(app, [*args, *[x for t in TASKS for x in ("--task-id", t)]])
    assert result.exit_code == 0, result.output
    text = flat(result.output)
    # the oracle answers from the golden chain whatever it observed: it "recovers" from anything
    assert text.count("success: 2/2 episodes") == 2 and "under fault plan outage-1" in text
    assert (out / FAULTS_DIR / "outage-1" / "run.json").is_file()
    report = CliRunner().invoke(app, ["report", str(out)])
    assert report.exit_code == 0, report.output
    page = (out / "report.html").read_text()
    assert "Robustness: clean vs fault plans" in page and "outage-1" in page and "outage 2/2" in page
    rows, problems = robustness_rows(out, [], [], {})
    assert problems == [] and [r.plan for r in rows] == [CLEAN, "outage-1"]


def test_run_command_rejects_bad_plans_before_running(tmp_path: Path) -> None:
    cases = {
        "rate.json": ({"rules": [{"kind": "http_503", "rate": 2}]}, "less than or equal to 1"),
        "window.json": ({"rules": [{"kind": "outage", "steps": [4, 2]}]}, "1 <= n <= m"),
        "typo.json": ({"rules": [{"tools": "get_balanse", "kind": "error"}]}, "get_balanse"),
    }
    for name, (data, message) in cases.items():
        plan = tmp_path / name
        plan.write_text(json.dumps(data))
        out = tmp_path / name.removesuffix(".json")
        result = CliRunner().invoke(
            app,
            [
                "run",
                "--out",
                str(out),
                "--tasks",
                str(mtu_path()),
                "--task-id",
                TASKS[0],
                "--faults",
                str(plan),
            ],
        )
        assert result.exit_code == 2, result.output
        assert message in flat(result.output), name
        assert not out.exists()


def test_metric_suites_count_injected_faults_as_infra_errors(tmp_path: Path) -> None:
    from toolgym.evaluation.suites import get_suite
    from toolgym.running.trials import load_traces

    full = TaskSet.load(next(p for p in mock_task_paths() if p.stem == "ctool"))
    tasks = TaskSet(list(full)[:4], base_dir=full.base_dir)
    flaky = FaultPlan(name="flaky", rules=(FaultRule(kind="http_503", rate=0.5),))
    run_trials([("ctool", tasks)], retrying, out=tmp_path / "clean", toolset=default_toolset())
    run_trials(
        [("ctool", tasks)], retrying, out=tmp_path / "faulted", toolset=default_toolset(), faults=flaky
    )
    suite = get_suite("ctooleval")
    clean = suite.score([t.trace for t in load_traces(tmp_path / "clean")[0]], tasks, "fixed")
    faulted_traces = [t.trace for t in load_traces(tmp_path / "faulted")[0]]
    hit = sum(any("infra_error" in s.error_kinds for s in t.steps) for t in faulted_traces)
    assert 0 < hit < len(tasks)  # seed 0 draws faults in some episodes, not all
    faulted = suite.score(faulted_traces, tasks, "fixed")
    assert clean.counts.get("infra_error_episodes", 0) == 0
    assert (
        faulted.counts["infra_error_episodes"] == hit
    )  # apart from the agent's errors, not scored against it
