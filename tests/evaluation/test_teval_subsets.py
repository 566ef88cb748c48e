"""T-Eval's step-wise subsets built from toolgym traces (evaluation/loaders/teval_subsets.py):
from the oracle's golden traces, answered with the ground truth, they score 100 with the T-Eval
suite; review items carry the class of each call's typed error; and the suite scores what needs
no embeddings when the ml extra is missing, and says so through the CLI."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.evaluation.helpers import run_e2e
from tests.shared_data import DATA
from toolgym.actions import Action, FinalAnswer, ToolCall
from toolgym.cli import app
from toolgym.envs.agents import OracleAgent
from toolgym.evaluation.base import EvaluationError
from toolgym.evaluation.loaders.teval import score_teval_files
from toolgym.evaluation.loaders.teval_subsets import (
    REVIEW_OPTIONS,
    SUBSETS,
    build_subsets,
    golden_prediction,
)
from toolgym.evaluation.metrics import similarity
from toolgym.evaluation.metrics.teval import TEvalSuite, plan_scores
from toolgym.running.trials import run_trials
from toolgym.tasks import TaskSet
from toolgym.tools import ToolSet

MOCK_TASKS = Path(__file__).resolve().parents[2] / "fixtures" / "mock_tasks"
TASK_FILES = [MOCK_TASKS / "teval.jsonl", MOCK_TASKS / "ctool.jsonl"]
HAVE_ML = importlib.util.find_spec("sentence_transformers") is not None
needs_ml = pytest.mark.skipif(not HAVE_ML, reason="plan and reason need the ml extra")


@pytest.fixture(scope="module")
def oracle_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("oracle")
    sets = [(p.stem, TaskSet.load(p)) for p in TASK_FILES]
    run_trials(sets, lambda env, trial: OracleAgent(env.protocol), out=out)
    return out


@needs_ml
def test_subsets_of_golden_traces_answered_right_score_100(oracle_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "subsets"
    args = ["teval-subsets", str(oracle_dir), "--out", str(out), "--golden-predictions"]
    for path in TASK_FILES:
        args += ["--tasks", str(path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    files = sorted(out.glob("*.json"))
    assert {f.stem for f in files} == set(SUBSETS)
    instruct = json.loads((out / "instruct_v2.json").read_text(encoding="utf-8"))
    assert {d["meta_data"]["response_format"] for d in instruct.values()} == {"json", "string"}
    assert all(d["prediction"] for d in instruct.values())
    scored = score_teval_files(files, "fixed")
    dims = ("instruct", "plan", "reason", "retrieve", "understand", "review")
    assert all(d in scored.metrics for d in dims)
    assert {k: v for k, v in scored.metrics.items() if v < 100 - 1e-3} == {}
    # the same files through `toolgym eval`, as a user scores a model's predictions
    eval_out = tmp_path / "eval.json"
    cli = ["eval", "--out", str(eval_out)] + [a for f in files for a in ("--teval-results", str(f))]
    assert CliRunner().invoke(app, cli).exit_code == 0
    stored = json.loads(eval_out.read_text(encoding="utf-8"))["results"]["teval:results"]["metrics"]
    assert stored["overall"] == pytest.approx(100.0, abs=1e-3)
    # a wrong answer costs: every review answered "success" misses the irrelevant responses
    review = json.loads((out / "review_str_v2.json").read_text(encoding="utf-8"))
    for datum in review.values():
        datum["prediction"] = "Answer: A"
    wrong = tmp_path / "wrong" / "review_str_v2.json"
    wrong.parent.mkdir()
    wrong.write_text(json.dumps(review), encoding="utf-8")
    share = sum(d["ground_truth"]["answer"] == "A" for d in review.values()) / len(review)
    assert 0 < share < 1
    assert score_teval_files([wrong], "fixed").metrics["review"] == pytest.approx(100 * share)


def test_review_items_carry_the_class_of_each_typed_error(tmp_path: Path) -> None:
    tasks = TaskSet.load(TASK_FILES[0])
    task = tasks["teval-polygon-close-003"]
    first = task.golden[0].action
    assert isinstance(first, ToolCall)
    outputs: list[Action] = [
        ToolCall(name="no_such_tool", arguments={}),  # unknown tool: input error
        ToolCall(name=first.name, arguments={"bogus": 1}),  # schema refuses: input error
        first,  # success
        FinalAnswer(text="done"),
    ]
    trace = run_e2e(ToolSet(), tasks, task, outputs, tmp_path)
    assert [k for s in trace.steps for k in s.error_kinds] == ["unknown_tool", "argument_error"]
    subsets = build_subsets([trace], tasks)
    classes = [d["meta_data"]["source"]["class"] for d in subsets["review_str_v2"].values()]
    assert classes == ["input error", "input error", "success"]  # one task: nothing irrelevant to show
    answers = [d["ground_truth"]["answer"] for d in subsets["review_str_v2"].values()]
    assert answers == [REVIEW_OPTIONS[c] for c in classes] == ["C", "C", "A"]
    assert [d["ground_truth"]["answer"] for d in subsets["review_json_v2"].values()] == [False, False, True]
    # the response shown is the one the call got
    last = next(iter(subsets["review_str_v2"].values()))["origin_prompt"][-1]
    assert last["role"] == "function" and "no_such_tool" in last["content"]
    # the failed calls are no ground truth elsewhere: one instruct call (both formats), a one-step plan
    assert len(subsets["instruct_v2"]) == 2 and len(subsets["plan_json_v2"]["0"]["ground_truth"]) == 2
    with pytest.raises(EvaluationError, match="none of the 1 traces"):
        build_subsets([trace], TaskSet.load(TASK_FILES[1]))


def test_golden_prediction_writes_each_format() -> None:
    datum = {"ground_truth": {"thought": "t", "name": "get_weekday", "args": {"a": True}}}
    assert golden_prediction("retrieve_str_v2", datum) == "get_weekday"
    assert golden_prediction("understand_str_v2", datum) == "{'a': True}"  # a dict literal, as T-Eval
    assert json.loads(golden_prediction("reason_retrieve_understand_json_v2", datum))["args"] == {"a": True}


@needs_ml
def test_plan_threshold_is_a_parameter() -> None:
    gold = [{"id": 0, "name": "get_weekday", "args": "{}"}]
    pred = [{"id": 0, "name": "get_weekday", "args": '{"day": 1}'}]
    embedder = similarity.get_embedder()
    assert plan_scores(pred, gold, embedder, "fixed")["f1"] == 1.0  # similar enough at 0.8
    assert plan_scores(pred, gold, embedder, "fixed", threshold=0.9999)["f1"] == 0.0
    assert TEvalSuite(plan_threshold=0.7).plan_threshold == 0.7


def test_without_the_ml_extra_the_other_dimensions_score(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # sentence-transformers missing, as on an install without the ml extra
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    similarity._cached.cache_clear()  # an embedder loaded earlier in this process would answer
    try:
        samples = sorted((DATA / "t-eval" / "results_sample").glob("*.json"))
        result = score_teval_files(samples, "fixed")
        assert {"instruct", "retrieve", "understand", "review"} <= result.metrics.keys()
        assert "plan" not in result.metrics and "reason" not in result.metrics
        assert any(n.startswith("plan, reason not scored") for n in result.notes)
        out = tmp_path / "eval.json"
        cli = ["eval", "--out", str(out)] + [a for f in samples for a in ("--teval-results", str(f))]
        run = CliRunner().invoke(app, cli, env={"COLUMNS": "300"})
        assert run.exit_code == 0, run.output
        # the hint is printed as written: rich markup would eat "[ml]"
        assert "pip install 'toolgym[ml]'" in " ".join(run.output.split())
    finally:
        similarity._cached.cache_clear()
