"""The milestones suite: progress, the first milestone missed and minefield hits over a run's
traces, read from end records or scored again from a trace's calls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolgym.actions import Action, FinalAnswer, ToolCall
from toolgym.envs.agents import ScriptedAgent
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.evaluation.base import EvaluationError
from toolgym.evaluation.metrics.milestones import MilestonesSuite
from toolgym.tasks import Task, TaskSet
from toolgym.trace import Trace, read_trace

ACCOUNTS = ["ACC-10001", "ACC-10002", "ACC-10003"]
DEPOSITS = [ToolCall(name="deposit", arguments={"account_id": a, "amount": 10.0}) for a in ACCOUNTS]


def task(task_id: str, **fields: object) -> Task:
    golden = [{"action": d.model_dump(mode="json")} for d in DEPOSITS]
    golden.append({"action": {"type": "final_answer", "text": "Done."}})
    return Task.model_validate(
        {
            "id": task_id,
            "query": "Deposit $10 into three accounts.",
            "apps": ["banking"],
            "golden": golden,
            **fields,
        }
    )


def recorded(tmp_path: Path, the_task: Task, actions: list[Action], **env_args: object) -> Trace:
    env = ToolEnv(tasks=[the_task], **env_args)  # type: ignore[arg-type]
    result = run_episode(env, ScriptedAgent(env.protocol, actions), the_task, trace_dir=tmp_path)
    env.close()
    assert result.trace_path is not None
    return read_trace(result.trace_path)


def test_traces_run_without_checks_are_scored_again_from_their_calls(tmp_path: Path) -> None:
    full, partial = task("full"), task("partial")
    traces = [
        recorded(tmp_path / "a", full, [*DEPOSITS, FinalAnswer(text="Done.")]),
        recorded(tmp_path / "b", partial, [DEPOSITS[0], DEPOSITS[2], FinalAnswer(text="Done.")]),
    ]
    assert all(t.end is not None and t.end.milestones is None for t in traces)  # default mode: as before
    result = MilestonesSuite().score(traces, TaskSet([full, partial]), "fixed")
    assert result.per_task["full"]["milestone_progress"] == 1.0
    assert result.per_task["partial"]["milestone_progress"] == pytest.approx(4 / 6)
    assert result.per_task_notes == {"partial": "first missed: 2.deposit.1"}
    assert result.metrics == {"milestone_progress": pytest.approx(100 * 5 / 6), "all_milestones": 50.0}
    assert result.counts == {"scored_again": 2}
    assert (
        "per_task_notes" in result.model_dump()
        and "per_task_notes" not in MilestonesSuite().score(traces[:1], TaskSet([full]), "fixed").model_dump()
    )  # left out when empty


def test_end_records_are_read_as_they_are_and_minefields_counted(tmp_path: Path) -> None:
    mine = {"id": "no-third", "call": {"tool": "deposit", "arguments": {"account_id": "ACC-10003"}}}
    mined = task("mined", minefields=[mine])
    trace = recorded(tmp_path, mined, [*DEPOSITS, FinalAnswer(text="Done.")], reward_mode="milestones")
    assert trace.end is not None and trace.end.minefields == [{"id": "no-third", "step": 3}]
    result = MilestonesSuite().score([trace], TaskSet([mined]), "compat")
    assert result.per_task["mined"] == {"minefield_hits": 1.0, "milestone_progress": 1.0}
    assert result.per_task_notes == {"mined": "minefields hit: no-third (step 3)"}
    assert result.metrics["minefield_episodes"] == 100.0 and "scored_again" not in result.counts


def test_a_trace_whose_calls_do_not_reach_its_states_is_named_not_scored(tmp_path: Path) -> None:
    full = task("full")
    trace = recorded(tmp_path, full, [*DEPOSITS, FinalAnswer(text="Done.")])
    forged = trace.model_copy(
        update={"steps": [trace.steps[0].model_copy(update={"state_hash_after": "0" * 64}), *trace.steps[1:]]}
    )
    with pytest.raises(EvaluationError, match="none of the 1 traces"):
        MilestonesSuite().score([forged], TaskSet([full]), "fixed")
    other = task("other")
    ok = recorded(tmp_path / "ok", other, [*DEPOSITS, FinalAnswer(text="Done.")])
    result = MilestonesSuite().score([forged, ok], TaskSet([full, other]), "fixed")
    assert result.counts["skipped_replay_mismatch"] == 1
    assert "step 1 run again does not reach the state the trace recorded" in result.per_task_notes["full"]


def test_toolgym_eval_runs_the_suite_on_a_run_folder(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from toolgym.cli import app

    out = tmp_path / "run"
    runner = CliRunner()
    ran = runner.invoke(app, ["run", "--tasks", "ctool", "--limit", "0:3", "--out", str(out)])
    assert ran.exit_code == 0, ran.output
    scored = runner.invoke(app, ["eval", str(out), "--suite", "milestones"])
    assert scored.exit_code == 0, scored.output
    results = json.loads((out / "eval.fixed.json").read_text())["results"]["milestones"]
    assert results["metrics"]["milestone_progress"] == 100.0  # the oracle reaches every milestone
