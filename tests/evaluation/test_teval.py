"""T-Eval: the six dimensions on hand-checked items in T-Eval's own format (results files and
traces of them), T-Eval's quirks in compat mode, and the trace-derived dimensions of our tasks."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.evaluation.helpers import run_e2e, run_step
from tests.shared_data import DATA, TEVAL_API_DOC
from toolgym.actions import ToolCall
from toolgym.envs.agents import OracleAgent
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.evaluation import EvaluationError, get_suite
from toolgym.evaluation.base import MODES, record_teacher_forced
from toolgym.evaluation.loaders.teval import (
    load_teval_api_docs,
    load_teval_file,
    predictions_from_file,
    run_teval_items,
    score_teval_files,
    task_to_teval_item,
    teval_toolset,
    write_teval_results,
)
from toolgym.evaluation.metrics.teval import (
    TEvalSuite,
    args_score,
    format_load,
    parse_string,
    plan_scores,
    retrieve_str_score,
    review_choice,
    understand_str_score,
)
from toolgym.tasks import Task, TaskSet
from toolgym.tools import ToolSet
from toolgym.trace import Trace, read_trace

needs_ml = pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is None, reason="plan and reason need the ml extra"
)

SAMPLES = sorted((DATA / "t-eval" / "results_sample").glob("*.json"))
MOCK_TASKS = Path(__file__).resolve().parents[2] / "fixtures" / "mock_tasks" / "teval.jsonl"

# hand-checked, percent (see the items in tests/data/t-eval/results_sample)
COMPAT = {
    "instruct": (100 + 250 / 3) / 4 + 25,  # json (1 + 5/6)/2, str (1/2 + 1/2)/2
    "plan": (500 / 9 + 100) / 2,  # json: 1, 2/3 (an unmatched plan still counts one step), 0
    "retrieve": (200 / 3 + 100 / 3) / 2,
    "review": 100 / 3,
}
FIXED = {
    "instruct": 100.0,
    "plan": (100 / 3 + 100) / 2,
    "retrieve": (200 / 3 + 200 / 3) / 2,
    "review": 200 / 3,
}


@needs_ml
def test_result_files_score_as_hand_checked() -> None:
    compat = score_teval_files(SAMPLES, "compat")
    for metric, value in COMPAT.items():
        assert compat.metrics[metric] == pytest.approx(value, abs=1e-3), metric
    # understand: json 2/3 of items (extra argument free, /(n + 1e-5)); str needs Python's repr
    assert compat.metrics["understand/json"] == pytest.approx(200 / 3 / (1 + 1e-5), abs=1e-3)
    assert compat.metrics["understand/str"] == 50.0
    assert compat.metrics["reason"] == pytest.approx((200 / 3 + 100) / 2, abs=1e-3)
    assert compat.metrics["overall"] == pytest.approx(
        sum(compat.metrics[d] for d in ("instruct", "plan", "reason", "retrieve", "understand", "review")) / 6
    )
    fixed = score_teval_files(SAMPLES, "fixed")
    for metric, value in FIXED.items():
        assert fixed.metrics[metric] == pytest.approx(value, abs=1e-3), metric
    assert fixed.metrics["understand/json"] == pytest.approx(50.0)  # the extra "unit" costs half
    assert fixed.metrics["understand/str"] == 100.0  # JSON args parse and compare as data
    assert compat.counts["items"] == fixed.counts["items"] == 20


@needs_ml
def test_traces_of_the_items_score_like_the_files(tmp_path: Path) -> None:
    traces: list[Trace] = []
    tasks: list[Task] = []
    for path in SAMPLES:
        task_set = load_teval_file(path)
        tasks.extend(task_set)
        paths = run_teval_items(task_set, predictions_from_file(path, task_set), tmp_path / path.stem)
        traces.extend(read_trace(p) for p in paths)
    all_tasks = TaskSet(tasks)
    for mode in MODES:
        from_traces = get_suite("teval").score(traces, all_tasks, mode)
        from_files = score_teval_files(SAMPLES, mode)
        assert from_traces.metrics == pytest.approx(from_files.metrics)
    # and the traces write back a result file T-Eval's evaluators read
    instruct = load_teval_file(SAMPLES[0])
    out = tmp_path / "instruct_v2.json"
    write_teval_results([t for t in traces if t.header.task_id in instruct], instruct, out)
    assert json.loads(out.read_text(encoding="utf-8")) == json.loads(SAMPLES[0].read_text(encoding="utf-8"))


def test_items_round_trip_and_golden_steps() -> None:
    for path in SAMPLES:
        tasks = load_teval_file(path)
        original = json.loads(path.read_text(encoding="utf-8"))
        for task in tasks:
            key, datum = task_to_teval_item(task)
            assert datum == {k: v for k, v in original[key].items() if k != "prediction"}
    plan = load_teval_file(DATA / "t-eval" / "results_sample" / "plan_json_v2.json")
    # the plan's calls, FinishAction left out
    assert [g.action.name for g in plan["teval-plan_json_v2-0"].golden] == [  # type: ignore[union-attr]
        "WeatherAPI.get_weather_today",
        "TimeAPI.get_weekday",
    ]
    rru = load_teval_file(DATA / "t-eval" / "results_sample" / "reason_retrieve_understand_json_v2.json")
    action = rru["teval-reason_retrieve_understand_json_v2-0"].golden[0].action
    assert action == ToolCall(
        name="WeatherAPI.get_weather_today",
        arguments={"location": "Beijing"},
        thought="I need the weather in Beijing",
    )
    review = load_teval_file(DATA / "t-eval" / "results_sample" / "review_str_v2.json")
    assert review["teval-review_str_v2-0"].golden[0].action.type == "final_answer"


def test_bad_files_give_typed_errors(tmp_path: Path) -> None:
    bad = tmp_path / "plan_json_v2.json"
    bad.write_text("[]", encoding="utf-8")
    with pytest.raises(EvaluationError, match="keyed by datum id"):
        load_teval_file(bad)
    bad.write_text('{"0": {"origin_prompt": []}}', encoding="utf-8")
    with pytest.raises(EvaluationError, match="ground_truth"):
        load_teval_file(bad)
    odd = tmp_path / "summary_v2.json"
    odd.write_text('{"0": {"origin_prompt": [], "ground_truth": {}}}', encoding="utf-8")
    with pytest.raises(EvaluationError, match="unknown dimension"):
        load_teval_file(odd)


# ---- helpers and quirks -------------------------------------------------------------------------


def test_format_load_and_parse_string() -> None:
    assert format_load("```json\n{'a': 1}\n```") == {"a": 1}
    assert format_load('noise [{"id": 0}] tail', "[", "]") == [{"id": 0}]
    with pytest.raises(ValueError):
        format_load("__import__('os')")  # data only: never evaluated
    template = "Thought: {thought}\nArgs[json]: {args}"
    text = "Thought: t\nArgs[json]: {}"
    assert parse_string(template, text) is None  # T-Eval uses the template as a regex
    assert parse_string(template, text, escape=True) == {"thought": "t", "args": "{}"}


@needs_ml
def test_plan_f1_floor_in_compat() -> None:
    from toolgym.evaluation.metrics.similarity import get_embedder

    gold = [{"id": 0, "name": "WeatherAPI.get_weather_today", "args": "{'location': 'Beijing'}"}]
    wrong = [{"id": 0, "name": "BookFlight.reserve_seat", "args": "{'seat': '12A'}"}]
    assert plan_scores(wrong, gold, get_embedder(), "compat")["f1"] == 1.0  # LIS starts at 1
    assert plan_scores(wrong, gold, get_embedder(), "fixed")["f1"] == 0.0
    finish = [{"id": 0, "name": "FinishAction", "args": "{}"}]
    assert plan_scores(finish, finish, get_embedder(), "compat")["f1"] == 0.0  # T-Eval crashes here
    assert plan_scores(finish, finish, get_embedder(), "fixed")["f1"] == 1.0


def test_argument_scores() -> None:
    gold = {"a": 5, "b": "x"}
    assert args_score(gold, {"a": "5", "b": "x"}, "compat") == pytest.approx(2 / (2 + 1e-5))
    assert args_score(gold, {"a": "5", "b": "x", "c": 1}, "compat") == pytest.approx(2 / (2 + 1e-5))
    assert args_score(gold, {"a": "5", "b": "x", "c": 1}, "fixed") == pytest.approx(2 / 3)
    assert args_score({}, {}, "fixed") == 1.0 and args_score({}, {"a": 1}, "compat") == 0.0
    assert understand_str_score("{'a': 1}", {"a": 1}, "compat") == 1.0
    assert understand_str_score('{"a": 1}', {"a": 1}, "compat") == 0.0
    assert understand_str_score('{"a": 1}', "{'a': 1}", "fixed") == 1.0


def test_retrieve_and_review_parsing() -> None:
    assert (
        retrieve_str_score(
            "use WeatherAPI.get_weather_today, e.g. now", "WeatherAPI.get_weather_today", "compat"
        )
        == 0.0
    )
    assert (
        retrieve_str_score(
            "use WeatherAPI.get_weather_today, e.g. now", "WeatherAPI.get_weather_today", "fixed"
        )
        == 1.0
    )
    assert retrieve_str_score("x.WeatherAPI.get_weather", "WeatherAPI.get_weather", "fixed") == 0.0
    assert review_choice("答案：B", "compat") is None and review_choice("答案：B", "fixed") == "B"
    assert review_choice("Answer: (C) because", "fixed") == "C"
    assert review_choice("Answer: Both", "compat") == "B"  # compat takes the first letter
    assert review_choice("Answer: Both", "fixed") is None


def test_api_docs_become_checking_tools() -> None:
    tools = teval_toolset(load_teval_api_docs(TEVAL_API_DOC))
    assert len(tools) == 50
    assert "AirbnbSearch.search_property_by_place" in tools
    schema = tools.get("AirbnbSearch.get_property_details").parameters_schema()
    assert schema["required"] == ["propertyId"] and schema["properties"]["propertyId"]["type"] == "number"


# ---- our own tasks ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mock_tasks() -> TaskSet:
    return TaskSet.load(MOCK_TASKS)


@needs_ml
def test_oracle_traces_of_mock_tasks_score_full_marks(mock_tasks: TaskSet, tmp_path: Path) -> None:
    subset = TaskSet(
        [t for t in mock_tasks if t.category in ("single_tool", "multi_tool_chain")][:4],
        base_dir=mock_tasks.base_dir,
    )
    traces = []
    env = ToolEnv(ToolSet(), subset)
    try:
        for task in subset:
            episode = run_episode(env, OracleAgent(env.protocol), task, trace_dir=tmp_path / "e2e")
            assert episode.trace_path is not None
            traces.append(read_trace(episode.trace_path))
            _, path = record_teacher_forced(env, OracleAgent(env.protocol), task, tmp_path / "tf")
            traces.append(read_trace(path))
    finally:
        env.close()
    for mode in MODES:
        result = TEvalSuite().score(traces, subset, mode)
        for dim in ("instruct", "plan", "retrieve", "understand"):
            assert result.metrics[dim] == pytest.approx(100.0, abs=1e-3), (mode, dim)
        assert "review" not in result.metrics and result.counts["traces"] == 8


@needs_ml
def test_trace_dimensions_on_a_wrong_chain(mock_tasks: TaskSet, tmp_path: Path) -> None:
    task = mock_tasks["teval-polygon-close-003"]
    first = task.golden[0].action
    assert isinstance(first, ToolCall)
    wrong_args = first.model_copy(update={"arguments": {**first.arguments, "extra": 1}})
    env_tools = ToolSet()
    step = run_step(
        env_tools, mock_tasks, task, [wrong_args, *[g.action for g in task.golden[1:]]], tmp_path / "tf"
    )
    compat = TEvalSuite().score([step], mock_tasks, "compat")
    fixed = TEvalSuite().score([step], mock_tasks, "fixed")
    n_calls = sum(1 for g in task.golden if g.action.type == "tool_call")
    assert compat.metrics["retrieve"] == fixed.metrics["retrieve"] == 100.0
    # the extra argument is free in compat, costs a share in fixed
    assert compat.metrics["understand"] == pytest.approx(100 / (1 + 1e-5), abs=1e-3)
    gold_n = len(first.arguments)
    assert fixed.metrics["understand"] == pytest.approx(100 * (n_calls - 1 + gold_n / (gold_n + 1)) / n_calls)
    # end to end: the episode stops after the first call; the plan lacks the rest
    e2e = run_e2e(env_tools, mock_tasks, task, [first, "Final Answer: not sure"], tmp_path / "e2e")
    plan = TEvalSuite().score([e2e], mock_tasks, "fixed").metrics["plan"]
    assert plan == pytest.approx(100 * 2 * (1 / n_calls) / (1 / n_calls + 1))
