"""MTU-Eval scorer: the published reference numbers in compat mode, from the raw files and from
traces of the rows replayed through ToolEnv; the scorer's documented quirks; the fixed mode."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.shared_data import MTU_DIR
from toolgym.evaluation import EvaluationError, get_suite
from toolgym.evaluation.loaders.mtu import (
    load_mtu_tasks,
    parse_api_list,
    parse_history,
    read_jsonl,
    recorded_responses,
    responses_from_traces,
    run_mtu_episodes,
    task_to_row,
    write_mtu_rows,
)
from toolgym.evaluation.metrics.mtu import (
    Call,
    compat_compare,
    compat_lower,
    compat_multi_scores,
    compat_normalize,
    compat_parse_multi,
    compat_parse_single,
    dialog_keys,
    fixed_multi_scores,
    score_mtu_files,
    values_equal,
)
from toolgym.tasks import Task, TaskSet
from toolgym.trace import Trace, read_trace

SS = (MTU_DIR / "S-S_eval.jsonl", MTU_DIR / "S-S_gpt4_response.jsonl")
MM = (MTU_DIR / "M-M_eval.jsonl", MTU_DIR / "M-M_gpt4_response.jsonl")

# SCORER.md: MTU's own scorer on the GPT-4 responses, percent
REFERENCE_SS = {"TS": 88.46, "PS": 57.69}
REFERENCE_MM = {"TN": 70.71, "TO": 71.83, "ATS": 65.76, "SATS": 63.15, "SR": 22.78, "TPR": 58.10}


def test_compat_reproduces_reference_scores_from_the_files() -> None:
    ss = score_mtu_files(*SS, "compat")
    assert {k: ss.metrics[k] for k in REFERENCE_SS} == REFERENCE_SS
    assert ss.metrics["AVG"] == 7307.50  # the script's double x100, kept in compat
    assert ss.counts["S-S/items"] == 104 and ss.counts["S-S/no_call_gold"] == 26
    mm = score_mtu_files(*MM, "compat")
    assert {k: mm.metrics[k] for k in REFERENCE_MM} == REFERENCE_MM
    # M-M_19 names two dialogs; MTU keys dialogs by that prefix and merges them
    assert mm.counts["M-M/dialogs"] == 79 and mm.counts["M-M/dialog_turns"] == 263
    assert mm.counts["M-M/items"] == 266
    assert mm.counts["missing_responses"] == 0 and mm.counts["unused_responses"] == 0


def test_fixed_mode_differs_where_documented() -> None:
    ss = score_mtu_files(*SS, "fixed")
    assert ss.metrics["AVG"] == pytest.approx((ss.metrics["TS"] + ss.metrics["PS"]) / 2, abs=0.01)
    # extra calls beside the single gold call now fail the turn (S-S_0 adds ReserveRestaurant)
    assert ss.per_task["S-S_0"] == {"TS": 0.0, "PS": 0.0}
    # lists compare as multisets: the same return_info in another order is right
    assert ss.per_task["S-S_65"]["PS"] == 1.0
    mm = score_mtu_files(*MM, "fixed")
    assert mm.counts["M-M/dialogs"] == 80 and mm.counts["M-M/dialog_turns"] == 266
    # "Action: None / Action Input: None" is a no-call turn, right when the gold has no call
    assert mm.per_task["M-M_14_0"] == {"TN": 1.0, "TO": 1.0}
    compat = score_mtu_files(*MM, "compat")
    assert compat.per_task["M-M_14_0"] == {"TN": 0.0, "TO": 0.0}
    # an unreadable reply (Action Input in prose) is a failed turn, not a no call
    assert mm.per_task["M-M_14_1"] == {"TN": 0.0, "TO": 0.0}
    assert mm.counts["M-M/format_errors"] == 3
    # an extra call next to a right one halves TN (MTU ignores it)
    assert compat.per_task["M-M_21_2"]["TN"] == 1.0 and mm.per_task["M-M_21_2"]["TN"] == 0.5


@pytest.fixture(scope="module")
def mm_traces(tmp_path_factory: pytest.TempPathFactory) -> tuple[TaskSet, list[Path]]:
    tasks = load_mtu_tasks(MM[0])
    outputs = recorded_responses(tasks, MM[1])
    paths = run_mtu_episodes(tasks, outputs, tmp_path_factory.mktemp("mm"), agent_name="gpt4")
    return tasks, paths


def test_traces_of_replayed_rows_reproduce_the_reference(mm_traces: tuple[TaskSet, list[Path]]) -> None:
    tasks, paths = mm_traces
    traces = [read_trace(p) for p in paths]
    assert len(traces) == 266 and all(t.complete and len(t.steps) == 1 for t in traces)
    suite = get_suite("mtu")
    compat = suite.score(traces, tasks, "compat")
    assert {k: compat.metrics[k] for k in REFERENCE_MM} == REFERENCE_MM
    # the trace path and the file path agree in fixed mode too (same parser, same calls)
    assert suite.score(traces, tasks, "fixed").metrics == score_mtu_files(*MM, "fixed").metrics
    # order of the traces does not matter: the suite sorts them into the benchmark's row order
    assert suite.score(list(reversed(traces)), tasks, "compat").metrics == compat.metrics


def test_ss_traces_reproduce_the_reference(tmp_path: Path) -> None:
    tasks = load_mtu_tasks(SS[0])
    paths = run_mtu_episodes(tasks, recorded_responses(tasks, SS[1]), tmp_path)
    result = get_suite("mtu").score([read_trace(p) for p in paths], tasks, "compat")
    assert {k: result.metrics[k] for k in REFERENCE_SS} == REFERENCE_SS


def test_replayed_trace_holds_the_response_and_its_parsed_calls(
    mm_traces: tuple[TaskSet, list[Path]],
) -> None:
    tasks, paths = mm_traces
    by_task = {read_trace(p).header.task_id: read_trace(p) for p in paths}
    trace = by_task["M-M_21_2"]
    assert trace.header.agent == "gpt4"
    names = [a["name"] for a in trace.steps[0].actions]
    assert names == ["get_account_balance", "MakePayment"]
    assert trace.header.env_config["mode"] == "teacher_forced"
    # predictions are checked against the prompt's API list, never run
    assert trace.steps[0].error_kinds == []
    kinds = {k for p in paths for s in read_trace(p).steps for k in s.error_kinds}
    assert kinds == {"format_error", "unknown_tool", "argument_error"}
    assert by_task["M-M_3_1"].steps[0].observations[0]["tool"] == "User_Prompt"  # not in the list
    responses = {r["id"]: r for r in responses_from_traces(list(by_task.values()), tasks)}
    original = {r["id"]: r["response"] for r in read_jsonl(MM[1])}
    assert responses["M-M_21_2"]["response"] == original["M-M_21_2"]


def test_rows_round_trip_through_tasks(tmp_path: Path) -> None:
    for eval_file in (SS[0], MM[0]):
        tasks = load_mtu_tasks(eval_file)
        out = tmp_path / eval_file.name
        write_mtu_rows(tasks, out)
        assert read_jsonl(out) == read_jsonl(eval_file)
        # and through the TaskSet JSONL form
        tasks.dump(tmp_path / "tasks.jsonl")
        again = TaskSet.load(tmp_path / "tasks.jsonl")
        assert [task_to_row(t) for t in again] == read_jsonl(eval_file)


def test_loader_reads_tools_history_and_golden_step() -> None:
    tasks = load_mtu_tasks(MM[0])
    task = tasks["M-M_0_5"] if "M-M_0_5" in tasks else tasks[5]
    meta = task.metadata["mtu"]
    assert meta["split"] == "M-M" and task.max_steps == 1
    assert "get_current_temperature" in (task.tools or [])
    history = meta["history"]
    assert history[0]["role"] == "user"
    assert {"role": "action", "calls": {"get_current_temperature": {"location": "living room"}}} in history
    assert [g.action.type for g in task.golden] == ["tool_call"]
    # the duplicated ids of M-M_19 get unique task ids and their own dialog key
    assert "M-M_19_0~2" in tasks
    assert tasks["M-M_19_0~2"].metadata["mtu"]["dialog"] == "M-M_19~2"
    # S-S_17 lists no API object: the task offers no tools instead of failing to load
    assert load_mtu_tasks(SS[0])["S-S_17"].tools == []
    no_call = load_mtu_tasks(SS[0])
    assert any(t.golden[0].action.type == "no_call" for t in no_call)


def test_parse_history_and_api_list_shapes() -> None:
    prompt = (
        "The following is a list of APIs and their parameters that you can use:\n"
        "[{'name': 'A', 'required_parameters': ['x'], 'optional_parameters': {'y': '1'}}]\n"
        "History Dialog: \nUser:  hi\nAction: {}\nAssistant:  hello\n\nUser:  go"
    )
    assert parse_api_list(prompt)[0]["name"] == "A"
    assert parse_history(prompt) == [
        {"role": "user", "content": "hi"},
        {"role": "action", "calls": {}},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "go"},
    ]
    with pytest.raises(EvaluationError, match="no API list"):
        parse_api_list("User: hi")
    with pytest.raises(EvaluationError, match="neither JSON nor a Python literal"):
        parse_api_list(
            "The following is a list of APIs and their parameters that you can use:\n[oops(]\nUser: x"
        )


# ---- compat quirks, as SCORER.md states them ------------------------------------------------------


def test_compat_single_parser_quirks() -> None:
    # quotes stay in the name, so a quoted tool never matches
    assert compat_parse_single('Action: "BookRestaurant"\nAction Input: {"a": 1}')[0] == '"BookRestaurant"'
    # nested dicts are cut at the first "}"; unparseable input is a no call
    assert compat_parse_single('Action: A\nAction Input: {"a": {"b": 1}}') == ("", {})
    assert compat_parse_single("Action: A\nAction Input: none") == ("", {})
    # 'None' anywhere in the name is a no call; 'A, B' keeps A; single quotes are repaired
    assert compat_parse_single("Action: None\nAction Input: {}") == ("", {})
    assert compat_parse_single("Action: A, B\nAction Input: {'k': 'v'}") == ("A", {"k": "v"})
    assert compat_parse_single("Thought: just talk") == ("", {})


def test_compat_multi_parser_keeps_last_params_at_first_position() -> None:
    text = 'Action: A\nAction Input: {"x": 1}\nAction: B\nAction Input: {}\nAction: A\nAction Input: {"x": 2}'
    parsed = compat_parse_multi(text)
    assert list(parsed) == ["A", "B"] and parsed["A"] == {"x": 2}


def test_compat_value_normalisation_and_comparison() -> None:
    assert compat_normalize("10") == "onezero"  # digit by digit; '10' -> 'ten' never fires
    assert compat_normalize("today") == "monday"
    assert compat_lower({"a": True, "b": ["all"], "c": 3.0}) == {"a": "true", "b": "['all']", "c": "3.0"}
    # gold must be a substring of the prediction (S-S direction)
    assert compat_compare({"city": "atlanta"}, {"city": "atlanta, ga"})
    assert not compat_compare({"city": "atlanta, ga"}, {"city": "atlanta"})
    # the 'hotel' quirk: a param valued 'hotel' is dropped from both sides before counting
    assert compat_compare({"type": "hotel", "area": "east"}, {"area": "east"})
    # an empty predicted value is a substring of anything (M-M direction)
    assert compat_compare({"city": ""}, {"city": "paris"})


def _calls(*names: str) -> dict[str, dict[str, str]]:
    return {n: {"p": n.lower()} for n in names}


@pytest.mark.parametrize(
    ("pred", "tn", "to"),
    [
        (_calls("C", "B", "A"), 1.0, 1.0),
        (_calls("B", "C"), 2 / 3, 2 / 3),
        (_calls("A", "C"), 2 / 3, 1 / 3),
        ({**_calls("A", "B", "C"), "A": {"p": "zzz"}}, 0.5, math.cos(math.pi / 6) * 2 / 3),
        (_calls("A", "B", "C", "D"), 1.0, 1.0),
        (_calls("D"), 0.0, 0.0),
    ],
)
def test_compat_tn_to_table(pred: dict[str, dict[str, str]], tn: float, to: float) -> None:
    got_tn, got_to = compat_multi_scores(pred, _calls("A", "B", "C"))
    assert got_tn == pytest.approx(tn) and got_to == pytest.approx(to)


def test_fixed_tn_to_penalise_extras_and_use_predicted_order() -> None:
    gold = [Call("A", {"p": "a"}), Call("B", {"p": "b"}), Call("C", {"p": "c"})]
    assert fixed_multi_scores(gold, gold) == (1.0, 1.0)
    tn, to = fixed_multi_scores(gold, [*gold, Call("D")])
    assert tn == pytest.approx(3 / 4) and to == 1.0  # the gold calls are in order; TN pays for D
    # an extra call first pushes the run back: the cosine penalty applies on predicted positions
    assert fixed_multi_scores(gold, [Call("D"), *gold])[1] == pytest.approx(math.cos(math.pi / 8))
    # reversed order: every call right, the order is not
    tn, to = fixed_multi_scores(gold, list(reversed(gold)))
    assert tn == 1.0 and to < 0.5
    # repeated calls are a multiset: two gold calls of one tool need two calls
    twice = [Call("A", {"p": "1"}), Call("A", {"p": "2"})]
    assert fixed_multi_scores(twice, [Call("A", {"p": "2"}), Call("A", {"p": "1"})])[0] == 1.0
    assert fixed_multi_scores(twice, [Call("A", {"p": "1"})])[0] == 0.5


def test_fixed_typed_value_comparison() -> None:
    assert values_equal("2", 2) and values_equal("two", 2.0) and values_equal("True", True)
    assert values_equal("Atlanta", "Atlanta, GA") and values_equal("east", "east side of town")
    assert not values_equal("2", "12") and not values_equal("paris", "")
    assert values_equal(["food", "address"], ["address", "food"])
    assert not values_equal(["food"], ["food", "food"])
    assert values_equal("ＡＢＣ", "abc")  # NFKC: full-width letters
    assert not values_equal(True, "no")


def test_dialog_keys_split_reused_prefixes() -> None:
    ids = ["M-M_1_0", "M-M_1_1", "M-M_2_0", "M-M_1_0", "M-M_1_1"]
    assert dialog_keys(ids) == ["M-M_1", "M-M_1", "M-M_2", "M-M_1~2", "M-M_1~2"]


# ---- bad input ---------------------------------------------------------------------------------


def test_bad_files_and_tasks_give_typed_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "S-S_0", "question": "q", "answer": {}}\nnot json\n', encoding="utf-8")
    with pytest.raises(EvaluationError, match=r"bad.jsonl:2"):
        score_mtu_files(bad, SS[1], "compat")
    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text('{"id": "X-Y_0", "question": "q", "answer": {}}\n', encoding="utf-8")
    with pytest.raises(EvaluationError, match="unknown split"):
        score_mtu_files(unknown, SS[1], "compat")
    with pytest.raises(EvaluationError, match="unknown scoring mode"):
        score_mtu_files(*SS, "strict")  # type: ignore[arg-type]
    with pytest.raises(EvaluationError, match="needs the task set"):
        get_suite("mtu").score([_one_trace(tmp_path)], None, "compat")


def _one_trace(tmp_path: Path) -> Trace:
    tasks = load_mtu_tasks(SS[0])
    subset = TaskSet([tasks["S-S_3"]])
    (path,) = run_mtu_episodes(subset, {"S-S_3": ["Thought: no call"]}, tmp_path / "one")
    return read_trace(path)


def test_missing_responses_are_counted_and_scored_as_no_call(tmp_path: Path) -> None:
    rows = read_jsonl(SS[1])
    partial = tmp_path / "partial.jsonl"
    partial.write_text("".join(json.dumps(r) + "\n" for r in rows[:50]), encoding="utf-8")
    result = score_mtu_files(SS[0], partial, "compat")
    assert result.counts["missing_responses"] == 54
    assert result.metrics["TS"] < REFERENCE_SS["TS"]


def test_traces_of_unknown_tasks_are_skipped_and_counted(tmp_path: Path) -> None:
    trace = _one_trace(tmp_path)
    with pytest.raises(EvaluationError, match="none of the 1 traces"):
        get_suite("mtu").score([trace], TaskSet([Task(id="other", query="q")]), "fixed")
    tasks = load_mtu_tasks(SS[0])
    stray = trace.model_copy(update={"header": trace.header.model_copy(update={"task_id": "nope"})})
    result = get_suite("mtu").score([trace, stray], tasks, "compat")
    assert result.counts["skipped_unknown_task"] == 1 and result.counts["S-S/items"] == 1


# ---- end to end: mock apps and simulated APIs ------------------------------------------------------


def test_every_mtu_eval_dialog_runs_end_to_end() -> None:
    """Each row's APIs run somewhere: the mock app that implements them, or the simulated MTU
    library with the API's own schema. Every row with APIs builds its world, offers exactly the
    prompt's APIs, and its golden call reaches a tool (no unknown_tool unless the gold names an
    API its own prompt does not offer, as a few MTU rows do)."""
    from toolgym.actions import ToolCall as Call
    from toolgym.envs.tool_env import ToolEnv
    from toolgym.evaluation.loaders.mtu import api_homes
    from toolgym.tools import ToolSet

    homes = api_homes()
    simulated = {n for n, home in homes.items() if home == "simulated:mtu"}
    assert len(homes) == 116 and len(simulated) == 21  # 95 in mock apps
    ran = 0
    for path in sorted(MTU_DIR.glob("*_eval.jsonl")):
        tasks = load_mtu_tasks(path)
        with ToolEnv(ToolSet(), tasks) as env:
            for task in tasks:
                if not task.tools:
                    assert task.apps is None  # S-S_17 documents no API
                    continue
                assert task.apps is not None
                _, info = env.reset(options={"task": task.id})
                assert info["tools"] == task.tools
                for tool in env.offered:
                    assert tool.backend == ("simulated:deterministic" if tool.name in simulated else "mock")
                call = next((s.action for s in task.golden if isinstance(s.action, Call)), None)
                if call is None:
                    continue
                _, _, _, _, step = env.step(call)
                kinds = {(o["error"] or {}).get("kind") for o in step["observations"]}
                assert "unknown_tool" not in kinds or call.name not in task.tools, task.id
                ran += 1
    assert ran > 500  # the rows whose next turn calls an API (the others expect no call)


def test_mtu_rows_run_with_toolgym_run(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from toolgym.cli import app
    from toolgym.evaluation.loaders.mtu import api_homes

    homes = api_homes()
    tasks = load_mtu_tasks(MTU_DIR / "S-S_eval.jsonl")
    row = next(t for t in tasks if t.tools and any(homes[n] == "simulated:mtu" for n in t.tools))
    result = CliRunner().invoke(
        app, ["run", "--tasks", str(MTU_DIR / "S-S_eval.jsonl"), "--task-id", row.id, "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    (trace_path,) = (tmp_path / "trial-0").rglob("*.jsonl")
    trace = read_trace(trace_path)
    assert "simulated:mtu" in (row.apps or [])
    backends = {t.name: t.backend for t in trace.header.tools}
    assert {backends[n] for n in row.tools or [] if homes[n] == "simulated:mtu"} == {
        "simulated:deterministic"
    }
    assert trace.steps and trace.steps[0].actions  # the oracle played the golden turn


def test_episode_scoring_keeps_a_tool_called_twice(tmp_path: Path) -> None:
    from tests.evaluation.helpers import run_e2e
    from toolgym.tools import ToolSet

    tasks = TaskSet.load(Path(__file__).resolve().parents[2] / "fixtures" / "mock_tasks" / "teval.jsonl")
    task = tasks["teval-gaode-distance-005"]  # get_coordinate twice, then get_distance
    golden = [g.action for g in task.golden]
    assert [getattr(a, "name", None) for a in golden[:2]] == ["get_coordinate", "get_coordinate"]
    full = run_e2e(ToolSet(), tasks, task, golden, tmp_path / "full")
    assert get_suite("mtu").score([full], tasks, "fixed").metrics == {"TN": 100.0, "TO": 100.0, "SR": 100.0}
    # the second coordinate lookup skipped: one gold call is missing, the episode fails
    short = run_e2e(ToolSet(), tasks, task, [golden[0], golden[2], golden[3]], tmp_path / "short")
    fixed = get_suite("mtu").score([short], tasks, "fixed").metrics
    assert fixed["TN"] == round(100 * 2 / 3, 2) and fixed["SR"] == 0.0
    # compat keeps MTU's answer dict, one entry per tool: the repeat is invisible there
    assert get_suite("mtu").score([short], tasks, "compat").metrics["TN"] == 100.0
