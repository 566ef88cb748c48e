"""The property that guards every suite: the oracle, replaying each bundled task set's golden
chains with the real runner, scores each suite's maximum in fixed mode on every metric the suite
reports for that set. A scorer that loses a golden call (MTU's episode scoring once keyed gold
calls by tool name) fails here on the set that shows it."""

from __future__ import annotations

import importlib.util

import pytest

from tests.models.fake_openai import FakeOpenAI, serve, text
from toolgym.envs.agents import OracleAgent
from toolgym.envs.demo import default_task_paths
from toolgym.evaluation.base import EvaluationError
from toolgym.evaluation.metrics.ctooleval import CToolEvalSuite
from toolgym.evaluation.metrics.judge import OpenAIJudge
from toolgym.evaluation.metrics.tooleyes import ToolEyesSuite
from toolgym.evaluation.suites import SUITES, get_suite
from toolgym.running.trials import load_traces, run_trials, set_name
from toolgym.tasks import TaskSet
from toolgym.toolservers.registry import default_toolset
from toolgym.trace import Trace

HAVE_ML = importlib.util.find_spec("sentence_transformers") is not None
# metrics that count what went wrong (0 is their best), not shares of what went right
LOWER_IS_BETTER = frozenset({"tool_hallucinations", "param_hallucinations", "minefield_episodes"})
# similarity-scored metrics: embeddings of identical texts give 1 within float error
TOLERANCE = 1e-3

TASK_SETS = {set_name(p): p for p in default_task_paths()}


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[TaskSet, list[Trace]]]:
    out = tmp_path_factory.mktemp("oracle-run")
    sets = [(name, TaskSet.load(path)) for name, path in TASK_SETS.items()]
    summary = run_trials(
        sets, lambda env, trial: OracleAgent(env.protocol), out=out, toolset=default_toolset()
    )
    assert summary.episodes and not summary.aborted
    loaded, problems = load_traces(out)
    assert problems == []
    by_set: dict[str, tuple[TaskSet, list[Trace]]] = {}
    for name, task_set in sets:
        traces = [t.trace for t in loaded if t.trace.header.task_id in task_set]
        assert len(traces) == len(task_set), name
        by_set[name] = (task_set, traces)
    return by_set


def test_every_bundled_task_set_is_covered() -> None:
    # the demo set and every mock-app set (new sets join by being bundled)
    assert {"demo", "mtu", "teval", "ctool", "multiturn"} <= set(TASK_SETS)


@pytest.mark.parametrize("suite_name", sorted(SUITES))
@pytest.mark.parametrize("set_name_", sorted(TASK_SETS))
def test_oracle_scores_the_maximum(
    oracle_run: dict[str, tuple[TaskSet, list[Trace]]],
    suite_name: str,
    set_name_: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TOOLGYM_JUDGE_BASE_URL", raising=False)  # rule-based dimensions only
    tasks, traces = oracle_run[set_name_]
    if suite_name == "milestones" and not any(t.apps and t.golden for t in tasks):
        with pytest.raises(EvaluationError, match="none of the"):  # no world: nothing to reach
            get_suite(suite_name).score(traces, tasks, "fixed")
        return
    result = get_suite(suite_name).score(traces, tasks, "fixed")
    assert result.metrics, f"{suite_name} scored nothing on {set_name_}: {result.notes}"
    below = {
        metric: value
        for metric, value in result.metrics.items()
        if metric not in LOWER_IS_BETTER and value < 100.0 - TOLERANCE
    }
    assert below == {}, f"the oracle scores below 100 with {suite_name} on {set_name_}"
    for task_id, values in result.per_task.items():
        for metric in LOWER_IS_BETTER & values.keys():
            assert values[metric] == 0.0, (task_id, metric)
    if suite_name == "teval" and not HAVE_ML:
        assert any("toolgym[ml]" in note for note in result.notes)


def test_oracle_scores_the_maximum_on_judged_metrics_with_a_full_marks_judge(
    oracle_run: dict[str, tuple[TaskSet, list[Trace]]],
) -> None:
    # a judge that gives every question 10/10: what is left is the suites' own arithmetic (TS's
    # tool reality, AO's turn-limit factor, BP's product), which the oracle must pass in full
    with serve(FakeOpenAI(lambda body: text("Scoring Reason: fine.\nEvaluation Score: 10"))) as server:
        judge = OpenAIJudge(server.base_url, "judge-model")
        try:
            for name, (tasks, traces) in sorted(oracle_run.items()):
                for suite in (ToolEyesSuite(judge), CToolEvalSuite(judge)):
                    result = suite.score(traces, tasks, "fixed")
                    below = {
                        m: v for m, v in result.metrics.items() if m not in LOWER_IS_BETTER and v < 100.0
                    }
                    assert below == {}, (suite.name, name)
                    if suite.name == "tooleyes":
                        assert {"TS", "IU", "BP", "AO", "overall"} <= result.metrics.keys()
        finally:
            judge.close()
