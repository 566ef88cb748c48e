"""T-Eval: the six dimensions on hand-checked items in T-Eval's own format (results files and
traces of them), T-Eval's quirks in compat mode, and the trace-derived dimensions of our tasks."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.evaluation.helpers import run_e2e, run_step
from tests.shared_data import DATA, TEVAL_API_DOC
from toolgym.actions import ToolCall
from toolgym.cli import app
from toolgym.envs.agents import OracleAgent
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.evaluation import EvaluationError, get_suite
from toolgym.evaluation.base import MODES, record_teacher_forced
from toolgym.evaluation.loaders.teval import (
    datum_to_task,
    item_from_task,
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
    Item,
    TEvalSuite,
    args_score,
    format_load,
    parse_string,
    plan_scores,
    retrieve_str_score,
    review_choice,
    score_instruct,
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

# hand-checked, percent (see the items in tests/data/t-eval/results_sample); compat rounds the
# instruct and review subset means to 4 decimals first, as T-Eval's evaluators do
COMPAT = {
    "instruct": 100 * ((1 + 0.8333) / 2 + (0.5 + 0.5) / 2) / 2,  # json (1 + 5/6)/2, str (1/2 + 1/2)/2
    "plan": (500 / 9 + 100) / 2,  # json: 1, 2/3 (an unmatched plan still counts one step), 0
    "retrieve": (200 / 3 + 100 / 3) / 2,
    "review": 33.33,
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
    # T-Eval replaces the fields in the raw template: "{{" stays two braces in the regex
    assert parse_string("{{x}} {a}", "{{x}} 1") == {"a": "1"}
    assert parse_string("{{x}} {a}", "{x} 1", escape=True) == {"a": "1"}
    # and a single field's match is zipped character by character
    assert parse_string("Answer: {a}", "Answer: xyz") == {"a": "x"}
    assert parse_string("Answer: {a}", "Answer: xyz", escape=True) == {"a": "xyz"}


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


# ---- compat is T-Eval on wrong answers too (issue 10, item 2) ----------------------------------

JSON_TEMPLATE = {"thought": "thought", "action": "name", "args": "args"}
STRING_TEMPLATE = {
    "thought_start": "Thought: ",
    "thought_end": "\n",
    "action_start": "Action: ",
    "action_end": "\n",
    "args_start": "Action Input: ",
    "args_end": "",
}
GOLD_CALL = {"action": "WeatherAPI.get_weather_today", "args": {"location": "Beijing", "unit": "C"}}


def _instruct_datum(
    prediction: str, label: str = "json", gold: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "origin_prompt": [{"role": "user", "content": "What is the weather in Beijing?"}],
        "template": JSON_TEMPLATE if label == "json" else STRING_TEMPLATE,
        "meta_data": {"response_format": label},
        "ground_truth": gold or GOLD_CALL,
        "prediction": prediction,
    }


def _write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def _item(datum: dict[str, Any], subset: str = "instruct_v2") -> Item:
    task = datum_to_task(subset, "0", datum)
    return item_from_task(task, datum["prediction"])


# T-Eval's InstructEvaluator on each reply, worked out by hand from its code:
# (format metric, args EM) with gold WeatherAPI.get_weather_today(location=Beijing, unit=C)
JSON_REPLIES = [
    (
        "right call",
        '{"thought": "t", "name": "WeatherAPI.get_weather_today", '
        '"args": {"location": "Beijing", "unit": "C"}}',
        1,
        1.0,
    ),
    ("prose without an action", "I would check the weather in Beijing first.", 0, 0.0),
    (
        "two calls in one reply",
        '{"thought": "t", "name": "WeatherAPI.get_weather_today", "args": {}}\n'
        '{"thought": "t", "name": "TimeAPI.get_weekday", "args": {}}',
        0,
        0.0,
    ),
    (
        "broken JSON",
        '{"thought": "t", "name": "WeatherAPI.get_weather_today", "args": {"location": "Beijing"}',
        0,
        0.0,
    ),
    ("missing thought", '{"name": "WeatherAPI.get_weather_today", "args": {"location": "Beijing"}}', 0, 0.0),
    (
        "args not an object",
        '{"thought": "t", "name": "WeatherAPI.get_weather_today", "args": "Beijing"}',
        1,
        1 / 3,
    ),
    (
        "wrong name, one argument",
        '{"thought": "t", "name": "WeatherAPI.get_weather", "args": {"location": "Beijing"}}',
        1,
        1 / 3,
    ),
    (
        "a number as text",
        '{"thought": "t", "name": "x", "args": {"location": "Beijing", "unit": 1}}',
        1,
        1 / 3,
    ),
    (
        "fenced, single quotes",
        "```json\n{'thought': 't', 'name': 'WeatherAPI.get_weather_today', 'args': {'unit': 'C'}}\n```",
        1,
        2 / 3,
    ),
    (
        "JSON true",
        '{"thought": "t", "name": "WeatherAPI.get_weather_today", "args": {"location": true}}',
        1,
        1 / 3,
    ),
    ("a list", '[{"thought": "t", "name": "WeatherAPI.get_weather_today", "args": {}}]', 0, 0.0),
]
STRING_REPLIES = [
    (
        "right call",
        "Thought: t\nAction: WeatherAPI.get_weather_today\n"
        "Action Input: {'location': 'Beijing', 'unit': 'C'}",
        1,
        1.0,
    ),
    ("prose without an action", "I would check the weather in Beijing first.", 0, 0.0),
    # the template's (.*) are greedy: the last Action and Action Input win
    (
        "two calls in one reply",
        "Thought: t\nAction: TimeAPI.get_weekday\nAction Input: {}\n"
        "Thought: u\nAction: WeatherAPI.get_weather_today\nAction Input: {'location': 'Beijing'}",
        1,
        2 / 3,
    ),
    (
        "JSON input with true",
        "Thought: t\nAction: WeatherAPI.get_weather_today\n"
        'Action Input: {"location": "Beijing", "unit": true}',
        1,
        1 / 3,
    ),
    ("no Thought label", "Action: WeatherAPI.get_weather_today\nAction Input: {}", 0, 0.0),
    (
        "input not a dict",
        "Thought: t\nAction: WeatherAPI.get_weather_today\nAction Input: ['Beijing']",
        1,
        1 / 3,
    ),
]


@pytest.mark.parametrize(("label", "replies"), [("json", JSON_REPLIES), ("string", STRING_REPLIES)])
def test_instruct_compat_equals_teval_on_wrong_replies(label: str, replies: list[Any]) -> None:
    metric = "json" if label == "json" else "str"
    for name, prediction, fmt, em in replies:
        got = score_instruct(_item(_instruct_datum(prediction, label)), "compat")
        assert got == {f"{metric}_format": fmt, f"{metric}_args_em": pytest.approx(em)}, name


def test_instruct_string_label_is_the_string_format(tmp_path: Path) -> None:
    """T-Eval's data labels string items "string"; they are half of the instruct dimension."""
    right = (
        "Thought: t\nAction: WeatherAPI.get_weather_today\nAction Input: {'location': 'Beijing', 'unit': 'C'}"
    )
    data = {
        "0": _instruct_datum(JSON_REPLIES[0][1], "json"),
        "1": _instruct_datum("I would check the weather.", "string"),  # a format failure
        "2": _instruct_datum(right, "str"),  # the label T-Eval's other subsets use, accepted too
    }
    path = _write(tmp_path / "instruct_v2.json", data)
    for mode in MODES:
        result = score_teval_files([path], mode)
        assert result.metrics["instruct/str_format"] == 50.0
        assert result.metrics["instruct"] == pytest.approx(100 * (1.0 + 0.5) / 2)  # json 1, str (1/2 + 1/2)/2
        assert "instruct/string_format" not in result.metrics
        assert result.per_task["teval-instruct_v2-1"] == {"str_format": 0.0, "str_args_em": 0.0}
    data["3"] = _instruct_datum(right, "xml")
    with pytest.raises(
        EvaluationError, match=r"instruct_v2\.json: T-Eval instruct_v2/3: response_format 'xml'"
    ):
        score_teval_files([_write(tmp_path / "instruct_v2.json", data)], "compat")


def test_compat_rounds_subset_means_as_teval(tmp_path: Path) -> None:
    """InstructEvaluator and ReviewEvaluator round each metric's mean to 4 decimals (np.round);
    convert_results then averages, and the print multiplies by 100 last."""
    wrong = '{"thought": "t", "name": "TimeAPI.get_weekday", "args": {"day": 1}}'
    instruct = {
        str(n): _instruct_datum(p) for n, p in enumerate([JSON_REPLIES[0][1], JSON_REPLIES[0][1], wrong])
    }
    review = {
        str(n): {
            "origin_prompt": [{"role": "user", "content": "Is the task finished?"}],
            "template": "",
            "meta_data": {"response_format": "str"},
            "ground_truth": {"answer": "B"},
            "prediction": p,
        }
        for n, p in enumerate(["Answer: B", "Answer: C", "Answer: D"])
    }
    paths = [_write(tmp_path / "instruct_v2.json", instruct), _write(tmp_path / "review_str_v2.json", review)]
    compat = score_teval_files(paths, "compat")
    em = float(np.round(np.mean([1.0, 1.0, 0.0]), 4))  # 0.6667
    assert compat.metrics["instruct/json_args_em"] == 100 * em
    assert compat.metrics["instruct"] == 100 * float(np.mean([(1.0 + em) / 2]))
    assert compat.metrics["review"] == compat.metrics["review/str"] == 100 * 0.3333
    assert compat.metrics["overall"] == 100 * float(np.mean([(1.0 + em) / 2, 0.3333]))
    fixed = score_teval_files(paths, "fixed")
    assert fixed.metrics["instruct"] == pytest.approx(100 * (1 + 2 / 3) / 2) and fixed.metrics[
        "review"
    ] == pytest.approx(100 / 3)


def test_result_files_with_shuffled_and_repeated_ids(tmp_path: Path) -> None:
    items = {str(n): _instruct_datum(p) for n, (_, p, _, _) in enumerate(JSON_REPLIES)}
    straight = score_teval_files([_write(tmp_path / "instruct_v2.json", items)], "compat")
    shuffled = dict(reversed(list(items.items())))
    other = tmp_path / "other"
    other.mkdir()
    again = score_teval_files([_write(other / "instruct_v2.json", shuffled)], "compat")
    assert again.metrics == pytest.approx(straight.metrics) and again.per_task == straight.per_task
    # an id given twice keeps its last datum, as json (and T-Eval's mmengine.load) reads it
    first, last = json.dumps(_instruct_datum("prose")), json.dumps(_instruct_datum(JSON_REPLIES[0][1]))
    text = '{"0": ' + first + ', "0": ' + last + "}"
    (tmp_path / "instruct_v2.json").write_text(text, encoding="utf-8")
    twice = score_teval_files([tmp_path / "instruct_v2.json"], "compat")
    assert twice.counts["items"] == 1 and twice.metrics["instruct"] == 100.0


def test_json_review_is_never_right_in_compat(tmp_path: Path) -> None:
    """ReviewEvaluator compares {"review": is_finished} with the gold answer: never equal."""
    data = {
        str(n): {
            "origin_prompt": [{"role": "user", "content": "Is the task finished?"}],
            "template": "",
            "meta_data": {"response_format": "json"},
            "ground_truth": {"answer": True},
            "prediction": p,
        }
        for n, p in enumerate(['{"is_finished": true}', '{"is_finished": 1}', '{"finished": true}'])
    }
    path = _write(tmp_path / "review_json_v2.json", data)
    compat = score_teval_files([path], "compat")
    assert compat.metrics["review/json"] == 0.0
    # convert_results reads review_str alone: a json review file is not part of the dimension
    assert "review" not in compat.metrics and any("review/json" in n for n in compat.notes)
    assert [compat.per_task[f"teval-review_json_v2-{n}"]["review_parsed"] for n in range(3)] == [
        1.0,
        1.0,
        0.0,
    ]
    fixed = score_teval_files([path], "fixed")
    assert fixed.metrics["review"] == fixed.metrics["review/json"] == pytest.approx(100 / 3)  # only true


def test_eval_command_reads_teval_result_files(tmp_path: Path) -> None:
    files = [DATA / "t-eval" / "results_sample" / n for n in ("instruct_v2.json", "review_str_v2.json")]
    out = tmp_path / "eval.json"
    args = ["eval", "--mode", "compat", "--out", str(out)]
    for path in files:
        args += ["--teval-results", str(path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    stored = json.loads(out.read_text(encoding="utf-8"))
    assert stored["failures"] == {}
    assert stored["results"]["teval:results"]["metrics"] == score_teval_files(files, "compat").metrics


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"[1, 2]", "expected an object keyed by datum id"),
        (b'{"0": {"origin_prompt": [], "ground_truth": {}', "not JSON"),
        (b"\xff\xfe{}", "not JSON"),
        (b'{"0": "prediction"}', "datum '0' is not an object"),
        (b'{"0": {"origin_prompt": []}}', "ground_truth"),
        (
            b'{"0": {"origin_prompt": [], "ground_truth": {}, "meta_data": {"response_format": ["json"]}}}',
            "response_format ['json'] is not one of",
        ),
        (
            b'{"0": {"origin_prompt": [], "ground_truth": [], "meta": {"prompt_type": "ReWOO"}}}',
            "plan prompt_type",
        ),
        (
            b'{"0": {"origin_prompt": [], "ground_truth": [], "meta": {"prompt_type": "str", "API_list": 5}}}',
            "API_list",
        ),
    ],
)
def test_eval_command_names_a_bad_teval_file(content: bytes, message: str, tmp_path: Path) -> None:
    bad = tmp_path / ("plan_json_v2.json" if b"prompt_type" in content else "instruct_v2.json")
    bad.write_bytes(content)
    out = tmp_path / "eval.json"
    result = CliRunner().invoke(app, ["eval", "--teval-results", str(bad), "--out", str(out)])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    failure = json.loads(out.read_text(encoding="utf-8"))["failures"]["teval:results"]
    assert str(bad) in failure and message in failure


def test_eval_command_scores_traces_against_a_teval_file(tmp_path: Path) -> None:
    """`toolgym eval DIR --suite teval --tasks instruct_v2.json`: the T-Eval file is the task set."""
    path = DATA / "t-eval" / "results_sample" / "instruct_v2.json"
    tasks = load_teval_file(path)
    run_teval_items(tasks, predictions_from_file(path, tasks), tmp_path / "traces")
    args = ["eval", str(tmp_path / "traces"), "--suite", "teval", "--mode", "compat", "--tasks", str(path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    stored = json.loads((tmp_path / "traces" / "eval.compat.json").read_text(encoding="utf-8"))
    assert stored["results"]["teval"]["metrics"] == score_teval_files([path], "compat").metrics


class _LetterEmbedder:
    """Letter counts as vectors: deterministic and offline, enough to exercise plan matching."""

    name = "letters"

    def encode(self, texts: Sequence[str]) -> Any:
        rows = np.zeros((len(texts), 27))
        for n, text in enumerate(texts):
            for char in text.lower():
                rows[n, ord(char) - 97 if "a" <= char <= "z" else 26] += 1
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return rows / np.where(norms == 0, 1, norms)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["", "x", "{", "FinishAction", "A.b", "json", "str", "string"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["id", "name", "args", "thought", "answer", "action", "API_list", "prompt_type", "response_format", "is_finished"]), inner, max_size=3),
    max_leaves=8,
)  # fmt: skip
_SUBSETS = ["instruct_v2", "plan_json_v2", "plan_str_v2", "reason_str_v2", "retrieve_str_v2",
            "understand_str_v2", "reason_retrieve_understand_json_v2", "review_str_v2", "review_json_v2"]  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    subset=st.sampled_from(_SUBSETS),
    datum=st.fixed_dictionaries(
        {"origin_prompt": st.just([{"role": "user", "content": "q"}]), "ground_truth": _JSON},
        optional={"prediction": _JSON | st.text(max_size=30), "template": _JSON, "meta_data": _JSON, "meta": _JSON},
    ),
)  # fmt: skip
def test_any_json_datum_scores_or_is_a_typed_error(
    subset: str, datum: dict[str, Any], tmp_path: Path
) -> None:
    """Malformed result files never crash the scorer: a score, or an EvaluationError."""
    path = tmp_path / f"{subset}.json"
    path.write_text(json.dumps({"0": datum}), encoding="utf-8")
    for mode in MODES:
        try:
            score_teval_files([path], mode, suite=TEvalSuite(_LetterEmbedder()))
        except EvaluationError as exc:
            assert str(path) in str(exc)
