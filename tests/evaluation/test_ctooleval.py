"""CToolEval: tool matching, fixed answers, operational success (status codes, and in fixed mode
the resulting state on real SQLite mock apps) and real-time answers against recorded values."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.evaluation.helpers import Output, run_e2e
from toolgym.actions import ToolCall
from toolgym.canonical import canonical_json
from toolgym.envs.agents import OracleAgent
from toolgym.envs.faults import FaultLayer, FaultPlan, FaultRule
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.errors import InfraError
from toolgym.evaluation import EvaluationError, get_suite
from toolgym.evaluation.base import MODES, record_teacher_forced
from toolgym.evaluation.metrics.ctooleval import CToolEvalSuite, compat_keywords, task_kind, tool_match
from toolgym.evaluation.metrics.gta import fixed_iscorrect
from toolgym.tasks import Task, TaskSet
from toolgym.tools import SchemaTool, ToolContext, ToolSet
from toolgym.trace import Trace, read_trace

CTOOL = Path(__file__).resolve().parents[2] / "fixtures" / "mock_tasks" / "ctool.jsonl"


@pytest.fixture(scope="module")
def tasks() -> TaskSet:
    return TaskSet.load(CTOOL)


@pytest.fixture(scope="module")
def oracle_traces(tasks: TaskSet, tmp_path_factory: pytest.TempPathFactory) -> list[Trace]:
    env = ToolEnv(ToolSet(), tasks)
    out = tmp_path_factory.mktemp("ctool")
    try:
        paths = [run_episode(env, OracleAgent(env.protocol), t, trace_dir=out).trace_path for t in tasks]
    finally:
        env.close()
    return [read_trace(p) for p in paths if p is not None]


def test_oracle_episodes_score_full_marks(tasks: TaskSet, oracle_traces: list[Trace]) -> None:
    for mode in MODES:
        result = get_suite("ctooleval").score(oracle_traces, tasks, mode)
        assert result.metrics["ToolMatch"] == 100.0
        assert result.metrics["FixedAnswerAcc"] == 100.0
        assert result.metrics["OpSuccess"] == 100.0
        assert result.metrics["NoToolAcc"] == 100.0
        assert result.metrics["TaskSuccess"] == 100.0
        assert result.counts["episodes"] == len(tasks)
        assert result.counts["kind/operation"] == sum(1 for t in tasks if t.expected_state)


def test_a_successful_call_on_the_wrong_row_is_no_success_in_fixed_mode(
    tasks: TaskSet, tmp_path: Path
) -> None:
    task = tasks["ctool-express-cancel-002"]
    wrong = ToolCall(
        name="cancel_shipment", arguments={"tracking_number": "EXP-00000578", "reason": "not needed"}
    )
    trace = run_e2e(ToolSet(), tasks, task, [wrong, "Final Answer: cancelled"], tmp_path)
    assert trace.steps[0].observations[0]["content"]["status"] == "success"
    compat = CToolEvalSuite().score([trace], tasks, "compat")
    fixed = CToolEvalSuite().score([trace], tasks, "fixed")
    assert compat.metrics["OpSuccess"] == 100.0  # the API said success
    assert fixed.metrics["OpSuccess"] == 0.0  # but the state is not the golden one
    assert compat.metrics["ToolMatch"] == fixed.metrics["ToolMatch"] == 100.0


def test_an_error_status_fails_the_operation(tasks: TaskSet, tmp_path: Path) -> None:
    task = tasks["ctool-express-cancel-002"]
    unknown = ToolCall(name="cancel_shipment", arguments={"tracking_number": "EXP-99999999", "reason": "x"})
    trace = run_e2e(ToolSet(), tasks, task, [unknown, "Final Answer: done"], tmp_path)
    assert trace.steps[0].error_kinds == ["tool_error"]
    for mode in MODES:
        assert CToolEvalSuite().score([trace], tasks, mode).metrics["OpSuccess"] == 0.0


def test_tool_matching_counts() -> None:
    assert tool_match(["a", "b"], ["a", "a", "c"], "compat") == 0.5
    assert tool_match(["a", "b"], ["a", "a", "c"], "fixed") == pytest.approx(1 / 4)
    assert tool_match(["a", "a"], ["a"], "compat") == 1.0  # repeats of a gold tool are free
    assert tool_match(["a", "a"], ["a"], "fixed") == 0.5
    assert tool_match([], [], "fixed") == 1.0 and tool_match([], ["a"], "compat") == 0.0


def test_keyword_answers() -> None:
    assert compat_keywords("It takes 158 days", [["58"]], None)  # substring: a false match
    assert not fixed_iscorrect("It takes 158 days", [["58"]], None)
    assert compat_keywords("包裹已签收", [["签收"]], None) and fixed_iscorrect("包裹已签收", [["签收"]], None)
    assert not compat_keywords("cancelled, not refunded", [["cancelled"]], [["not refunded"]])


def test_real_time_answers_use_the_recorded_values(tasks: TaskSet, tmp_path: Path) -> None:
    base = tasks["ctool-express-track-001"]
    meta = {"ctooleval": {"type": "real_time", "answer_fields": ["tracking_number", "shipment_status"]}}
    task = base.model_copy(update={"id": "track-live", "metadata": meta})
    live = TaskSet([*tasks, task], base_dir=tasks.base_dir)
    assert task_kind(task) == "real_time"
    call = base.golden[0].action
    right = run_e2e(
        ToolSet(), live, task, [call, "Final Answer: EXP-00000590 is in_transit."], tmp_path / "a"
    )
    stale = run_e2e(
        ToolSet(), live, task, [call, "Final Answer: EXP-00000590 was delivered."], tmp_path / "b"
    )
    for mode in MODES:
        result = CToolEvalSuite().score([right, stale], live, mode)
        assert result.per_task["track-live"]["real_time"] in (0.0, 1.0)
        assert CToolEvalSuite().score([right], live, mode).metrics["RealTimeAcc"] == 100.0
        assert CToolEvalSuite().score([stale], live, mode).metrics["RealTimeAcc"] == 0.0
    # a field the episode never observed: compat checks what it saw, fixed wants every field
    meta2 = {"ctooleval": {"type": "real_time", "answer_fields": ["shipment_status", "signed_by"]}}
    task2 = task.model_copy(update={"id": "track-live-2", "metadata": meta2})
    live2 = TaskSet([*tasks, task2], base_dir=tasks.base_dir)
    trace = run_e2e(ToolSet(), live2, task2, [call, "Final Answer: it is in_transit"], tmp_path / "c")
    assert CToolEvalSuite().score([trace], live2, "compat").metrics["RealTimeAcc"] == 100.0
    assert CToolEvalSuite().score([trace], live2, "fixed").metrics["RealTimeAcc"] == 0.0


def test_infra_errors_and_other_traces(tasks: TaskSet, tmp_path: Path) -> None:
    def down(arguments: dict[str, object], ctx: ToolContext) -> str:
        raise InfraError("express backend unreachable")

    task = Task(id="infra", query="track it", tools=["track"], golden=tasks["ctool-express-track-001"].golden)
    infra_tasks = TaskSet([task])
    tools = ToolSet([SchemaTool("track", {"properties": {}}, down)])
    # a dead backend aborts the episode; a complete trace's infra errors are a fault plan's
    outage = FaultLayer(FaultPlan(name="express-down", rules=[FaultRule(tools="track", kind="error")]))
    outputs: list[Output] = [ToolCall(name="track"), "Final Answer: no idea"]
    trace = run_e2e(tools, infra_tasks, task, outputs, tmp_path, tool_layers=[outage])
    with pytest.raises(EvaluationError, match="none of the 1 traces"):
        CToolEvalSuite().score([trace], infra_tasks, "fixed")  # kept apart: nothing left to score
    assert CToolEvalSuite().score([trace], infra_tasks, "compat").counts["episodes"] == 1
    env = ToolEnv(ToolSet(), tasks)
    try:
        _, path = record_teacher_forced(env, OracleAgent(env.protocol), tasks[0], tmp_path / "tf")
    finally:
        env.close()
    with pytest.raises(EvaluationError, match="end-to-end"):
        CToolEvalSuite().score([read_trace(path)], tasks, "compat")
    with pytest.raises(EvaluationError, match="needs the task set"):
        CToolEvalSuite().score([trace], None, "compat")


# ---- Chinese tasks (zh locale) -------------------------------------------------------------------
CTOOL_ZH = CTOOL.with_name("ctool_zh.jsonl")


@pytest.fixture(scope="module")
def zh_tasks() -> TaskSet:
    return TaskSet.load(CTOOL_ZH)


def test_oracle_scores_full_marks_on_the_chinese_tasks(zh_tasks: TaskSet, tmp_path: Path) -> None:
    env = ToolEnv(ToolSet(), zh_tasks)
    try:
        results = [run_episode(env, OracleAgent(env.protocol), t, trace_dir=tmp_path) for t in zh_tasks]
    finally:
        env.close()
    # the env's reward agrees: Chinese answers match, open-ended ones equal their reference
    assert [r.task_id for r in results if r.reward != 1.0] == []
    traces = [read_trace(r.trace_path) for r in results if r.trace_path is not None]
    for mode in MODES:
        result = CToolEvalSuite().score(traces, zh_tasks, mode)
        for metric in (
            "ToolMatch",
            "FixedAnswerAcc",
            "OpenEndedScore",
            "OpSuccess",
            "RealTimeAcc",
            "TaskSuccess",
        ):
            assert result.metrics[metric] == 100.0, (mode, metric)
        assert {k: v for k, v in result.counts.items() if k.startswith("kind/")} == {
            "kind/fixed": 50,
            "kind/open_ended": 40,
            "kind/operation": 40,
            "kind/real_time": 40,
        }


def test_chinese_answers_match_without_word_boundaries(zh_tasks: TaskSet, tmp_path: Path) -> None:
    task = zh_tasks["ctoolzh-fixed-002"]  # fee and weight of a parcel
    call = task.golden[0].action
    assert task.answer is not None and task.answer.whitelist
    fee, weight = task.answer.whitelist[0][0], task.answer.whitelist[1][0]
    right = run_e2e(
        ToolSet(), zh_tasks, task, [call, f"Final Answer: 运费{fee}元，重{weight}公斤"], tmp_path / "a"
    )
    # full-width digits and no spaces around the numbers still match; another number does not
    wide = fee.translate(str.maketrans("0123456789.", "０１２３４５６７８９．"))
    width = run_e2e(
        ToolSet(), zh_tasks, task, [call, f"Final Answer: 运费{wide}元，重{weight}公斤"], tmp_path / "b"
    )
    wrong = run_e2e(
        ToolSet(), zh_tasks, task, [call, f"Final Answer: 运费{fee}1元，重{weight}公斤"], tmp_path / "c"
    )
    scores = [
        CToolEvalSuite().score([t], zh_tasks, "fixed").metrics["FixedAnswerAcc"]
        for t in (right, width, wrong)
    ]
    assert scores == [100.0, 100.0, 0.0]


def test_open_ended_answers_fall_back_to_similarity_with_the_reference(
    zh_tasks: TaskSet, tmp_path: Path
) -> None:
    task = zh_tasks["ctoolzh-open-ended-004"]
    assert task_kind(task) == "open_ended" and task.answer is not None and task.answer.references
    reference = task.answer.references[0]
    call = task.golden[0].action
    near = run_e2e(ToolSet(), zh_tasks, task, [call, "Final Answer: " + reference[:-8]], tmp_path / "near")
    off = run_e2e(ToolSet(), zh_tasks, task, [call, "Final Answer: 不知道。"], tmp_path / "off")
    near_result = CToolEvalSuite().score([near], zh_tasks, "fixed")
    off_score = CToolEvalSuite().score([off], zh_tasks, "fixed").metrics["OpenEndedScore"]
    assert 80.0 < near_result.metrics["OpenEndedScore"] < 100.0 and off_score < 20.0
    assert any("no judge" in n for n in near_result.notes)


def test_a_table_the_world_lacks_is_named_with_the_task_s_file_line_and_id(
    tasks: TaskSet, oracle_traces: list[Trace], tmp_path: Path
) -> None:
    # scoring replays the episode and checks expected_state: a misspelled table is the task's
    # mistake, said at its file and line (not a bare ValueError, not a 0 for the agent)
    from toolgym.evaluation.metrics.ctooleval import state_reached
    from toolgym.tasks import TaskUseError

    good = tasks["ctool-express-cancel-002"]
    row = good.model_dump(mode="json", exclude_none=True)
    row["expected_state"] = [{**a, "table": a["table"] + "s"} for a in good.expected_state]
    (tmp_path / "tasks.jsonl").write_text(canonical_json(row) + "\n", encoding="utf-8")
    bad = TaskSet.load(tmp_path / "tasks.jsonl")[0]
    trace = next(t for t in oracle_traces if t.header.task_id == good.id)
    assert state_reached(trace, good)
    with pytest.raises(TaskUseError) as caught:
        state_reached(trace, bad)
    assert str(caught.value).startswith(f"{tmp_path / 'tasks.jsonl'}:1: {good.id}: state assertion names")
