"""The scorer interface: the registry, modes, teacher-forced prediction traces, and every suite
scoring the oracle's traces of a mock-app task set in both modes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from toolgym.actions import ToolCall
from toolgym.envs.agents import OracleAgent
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.evaluation import SUITES, EvaluationError, MetricSuite, SuiteResult, get_suite
from toolgym.evaluation.base import MODES, check_mode, is_teacher_forced, record_teacher_forced
from toolgym.evaluation.loaders.mtu import RecordedAgent
from toolgym.tasks import TaskSet
from toolgym.tools import ToolSet
from toolgym.trace import Trace, read_trace

HAVE_ML = importlib.util.find_spec("sentence_transformers") is not None
MTU_TASKS = Path(__file__).resolve().parents[2] / "fixtures" / "mock_tasks" / "mtu.jsonl"
MULTITURN_TASKS = MTU_TASKS.with_name("multiturn.jsonl")


def test_registry_and_modes() -> None:
    assert sorted(SUITES) == ["ctooleval", "gta", "milestones", "mtu", "teval", "tooleyes"]
    for name, suite in SUITES.items():
        assert isinstance(suite, MetricSuite) and suite.name == name and get_suite(name) is suite
    with pytest.raises(EvaluationError, match="unknown metric suite 'bfcl'"):
        get_suite("bfcl")
    assert [check_mode(m) for m in MODES] == ["compat", "fixed"]
    with pytest.raises(EvaluationError, match="unknown scoring mode"):
        check_mode("strict")
    result = SuiteResult(suite="x", mode="fixed", metrics={"a": 1.0})
    assert result.per_task == {} and result.counts == {} and result.notes == []


@pytest.fixture(scope="module")
def mtu_tasks() -> TaskSet:
    return TaskSet.load(MTU_TASKS)


@pytest.fixture(scope="module")
def oracle_traces(mtu_tasks: TaskSet, tmp_path_factory: pytest.TempPathFactory) -> list[Trace]:
    out = tmp_path_factory.mktemp("oracle")
    env = ToolEnv(ToolSet(), mtu_tasks)
    traces = []
    try:
        for task in mtu_tasks:
            result = run_episode(env, OracleAgent(env.protocol), task, trace_dir=out / "e2e")
            assert result.trace_path is not None
            traces.append(read_trace(result.trace_path))
    finally:
        env.close()
    return traces


def test_every_suite_scores_oracle_traces(mtu_tasks: TaskSet, oracle_traces: list[Trace]) -> None:
    names = [n for n in SUITES if HAVE_ML or n != "teval"]
    fixed = {name: get_suite(name).score(oracle_traces, mtu_tasks, "fixed") for name in names}
    assert fixed["gta"].metrics["AnsAcc"] == 100.0
    if HAVE_ML:
        assert fixed["teval"].metrics["plan"] == pytest.approx(100.0, abs=1e-3)
    else:  # T-Eval's plan needs sentence embeddings: the note names what provides them
        notes = get_suite("teval").score(oracle_traces, mtu_tasks, "fixed").notes
        assert any("plan not scored" in n and "toolgym[ml]" in n for n in notes)
    assert fixed["mtu"].metrics["SR"] == 100.0 and fixed["mtu"].metrics["TN"] == 100.0
    assert fixed["tooleyes"].metrics["IF"] == 100.0 and fixed["tooleyes"].metrics["tool_reality"] == 100.0
    assert fixed["ctooleval"].metrics["TaskSuccess"] == 100.0
    for name in names:
        compat = get_suite(name).score(oracle_traces, mtu_tasks, "compat")
        assert compat.suite == name and compat.mode == "compat" and compat.metrics
        assert set(compat.per_task) <= {t.id for t in mtu_tasks}
    # ToolEyes' own format check wants "Thought: ... Action: ... Action Input: ...": the oracle's
    # calls have it (a golden reply carries the Thought the ReAct prompt asks for), its answers and
    # questions ("Final Answer:", "Ask User:": toolgym's ReAct, not a ToolEyes tool call) do not
    # (IF is the mean over episodes of each episode's share of such replies)
    shares = [
        sum(any(a["type"] == "tool_call" for a in step.actions) for step in trace.steps) / len(trace.steps)
        for trace in oracle_traces
    ]
    if_ = get_suite("tooleyes").score(oracle_traces, mtu_tasks, "compat").metrics["IF"]
    assert 0 < if_ < 100 and if_ == pytest.approx(100 * sum(shares) / len(shares), abs=0.01)


def test_every_suite_scores_multiturn_episodes_with_a_simulated_user(tmp_path: Path) -> None:
    # the oracle asks, the rule-based user answers (user turns in the traces), the apps change
    tasks = TaskSet.load(MULTITURN_TASKS)
    env = ToolEnv(ToolSet(), tasks)
    traces = []
    try:
        for task in tasks:
            result = run_episode(env, OracleAgent(env.protocol), task, trace_dir=tmp_path)
            assert result.trace_path is not None and result.reward == 1.0
            traces.append(read_trace(result.trace_path))
    finally:
        env.close()
    assert all(any(o["type"] == "user" for s in t.steps for o in s.observations) for t in traces)
    names = [n for n in SUITES if HAVE_ML or n != "teval"]
    fixed = {name: get_suite(name).score(traces, tasks, "fixed") for name in names}
    assert fixed["gta"].metrics["AnsAcc"] == 100.0
    assert fixed["mtu"].metrics == {"TN": 100.0, "TO": 100.0, "SR": 100.0}
    tooleyes = fixed["tooleyes"].metrics  # overall, and per scenario (these tasks' category)
    assert tooleyes["IF"] == tooleyes["tool_reality"] == 100.0 and set(tooleyes.values()) == {100.0}
    assert fixed["ctooleval"].metrics["TaskSuccess"] == 100.0
    if HAVE_ML:
        assert fixed["teval"].metrics["plan"] == pytest.approx(100.0, abs=1e-3)
    for name in names:
        compat = get_suite(name).score(traces, tasks, "compat")
        assert compat.metrics and set(compat.per_task) <= {t.id for t in tasks}
    assert get_suite("mtu").score(traces, tasks, "compat").metrics["SR"] == 100.0


def test_suites_need_tasks_they_know(oracle_traces: list[Trace]) -> None:
    for name in SUITES:
        with pytest.raises(EvaluationError):
            get_suite(name).score(oracle_traces, None, "fixed")
        with pytest.raises(EvaluationError):
            get_suite(name).score(oracle_traces, TaskSet([]), "fixed")


def test_teacher_forced_trace_holds_predictions_and_checks(mtu_tasks: TaskSet, tmp_path: Path) -> None:
    task = next(t for t in mtu_tasks if len(t.golden) >= 2 and isinstance(t.golden[0].action, ToolCall))
    first = task.golden[0].action
    assert isinstance(first, ToolCall)
    outputs = [
        ToolCall(name="no_such_tool", arguments={}),  # checked, never run
        "this is not a reply",  # format error
        *[g.action for g in task.golden[2:]],
    ]
    env = ToolEnv(ToolSet(), mtu_tasks)
    try:
        result, path = record_teacher_forced(env, RecordedAgent({task.id: outputs}), task, tmp_path)
    finally:
        env.close()
    trace = read_trace(path)
    assert is_teacher_forced(trace) and trace.header.env_config["golden_steps"] == len(task.golden)
    assert len(trace.steps) == len(task.golden) == len(result.steps)
    assert trace.steps[0].actions[0]["name"] == "no_such_tool"
    assert trace.steps[0].error_kinds == ["unknown_tool"]
    assert trace.steps[1].actions == [] and trace.steps[1].error_kinds == ["format_error"]
    assert trace.steps[1].raw == "this is not a reply"
    assert trace.end is not None and trace.end.error_counts == {"unknown_tool": 1, "format_error": 1}
    # the world followed the golden chain, not the predictions: the episode is still scoreable
    gta = get_suite("gta").score([trace], mtu_tasks, "fixed")
    assert gta.metrics["ToolAcc"] < 100.0 and gta.counts["step/tasks"] == 1
