"""MTU-Bench's released files as they are: responses with duplicated and missing ids, multi-turn
rows shuffled, OOD gold parameters stored as JSON strings; and the averages MTU's score() gives
per split. Real files from tests/data/mtu-bench, plus small crafted files for each case."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.shared_data import MTU_DIR
from toolgym.cli import app
from toolgym.evaluation import EvaluationError, get_suite
from toolgym.evaluation.base import SuiteResult
from toolgym.evaluation.loaders.mtu import (
    load_mtu_tasks,
    read_jsonl,
    recorded_responses,
    run_mtu_episodes,
)
from toolgym.evaluation.metrics import mtu as mtu_metrics
from toolgym.evaluation.metrics.mtu import (
    API_LIST_MARKER,
    best_assignment,
    compat_parse_single,
    compat_quote_repair,
    decode_answer,
    dialog_keys,
    join_responses,
    response_calls,
    score_mtu_files,
    unpaired_count,
)
from toolgym.trace import read_trace

SM = (MTU_DIR / "S-M_eval.jsonl", MTU_DIR / "S-M_gpt4_response.jsonl")
MS = (MTU_DIR / "M-S_eval.jsonl", MTU_DIR / "M-S_gpt4_response.jsonl")
SS = (MTU_DIR / "S-S_eval.jsonl", MTU_DIR / "S-S_gpt4_response.jsonl")
MM = (MTU_DIR / "M-M_eval.jsonl", MTU_DIR / "M-M_gpt4_response.jsonl")
OOD = MTU_DIR / "OOD_eval.jsonl"


def _write(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


APIS = ["FindRestaurants", "SearchFlight", "GetWeather"]


def _prompt(user: str, history: str = "") -> str:
    api_list = json.dumps([{"name": a, "description": a, "required_parameters": []} for a in APIS])
    dialog = f"History Dialog: \n{history}User: {user}" if history else f"User: {user}"
    return f"Reply with Thought / Action / Action Input.\n{API_LIST_MARKER}\n{api_list}\n{dialog}"


def _call(name: str, **arguments: Any) -> str:
    return f"Thought: I call {name}.\nAction: {name}\nAction Input: {json.dumps(arguments)}"


SS_ROWS = [
    {
        "id": "S-S_0",
        "question": _prompt("Find an Italian restaurant in Paris"),
        "answer": {"FindRestaurants": {"city": "Paris", "cuisine": "Italian"}},
    },
    {
        "id": "S-S_1",
        "question": _prompt("Find me a flight to Tokyo"),
        "answer": {"SearchFlight": {"destination": "Tokyo"}},
    },
    {
        "id": "S-S_2",
        "question": _prompt("What is the weather in Oslo?"),
        "answer": {"GetWeather": {"city": "Oslo"}},
    },
]
RIGHT = {
    "S-S_0": _call("FindRestaurants", city="Paris", cuisine="Italian"),
    "S-S_1": _call("SearchFlight", destination="Tokyo"),
    "S-S_2": _call("GetWeather", city="Oslo"),
}


# ---- pairing responses with rows ------------------------------------------------------------------


def test_real_sm_responses_with_a_neighbours_id_are_paired_by_content() -> None:
    """S-M_23 and S-M_30 have two responses each, S-M_24 and S-M_31 none: the response that does
    not rate the novel belongs to S-M_24 (which asks for no rating), the one that searches for
    films to S-M_31 (which asks for them)."""
    rows, responses = read_jsonl(SM[0]), read_jsonl(SM[1])
    texts, unused = join_responses(rows, responses)
    assert unused == 0 and None not in texts
    by_id = {r["id"]: t for r, t in zip(rows, texts, strict=True)}

    def names(item_id: str) -> list[str]:
        text = by_id[item_id]
        assert text is not None
        return [c.name for c in response_calls(text)]

    assert "RateBook" in names("S-M_23") and "RateBook" not in names("S-M_24")
    assert "SearchScreeningEvent" not in names("S-M_30") and "SearchScreeningEvent" in names("S-M_31")
    for mode in ("compat", "fixed"):
        result = score_mtu_files(*SM, mode)
        assert result.counts["missing_responses"] == 0 and result.counts["unused_responses"] == 0
        assert result.counts["paired_by_content"] == 4
        assert result.counts["S-M/items"] == 94
    note = next(n for n in result.notes if "another id" in n)
    assert "response line 23 (S-M_23) -> eval row 25 (S-M_24)" in note
    assert "response line 31 (S-M_30) -> eval row 32 (S-M_31)" in note


def test_duplicated_id_goes_to_the_row_its_content_answers(tmp_path: Path) -> None:
    """The weather answer carries S-S_1's id and comes first: by id it would take S-S_1's place
    and leave S-S_2 without a response; by content each row gets its own answer."""
    eval_file = _write(tmp_path / "S-S_eval.jsonl", SS_ROWS)
    responses = [
        {"id": "S-S_0", "response": RIGHT["S-S_0"]},
        {"id": "S-S_1", "response": RIGHT["S-S_2"]},
        {"id": "S-S_1", "response": RIGHT["S-S_1"]},
    ]
    response_file = _write(tmp_path / "S-S_response.jsonl", responses)
    for mode in ("compat", "fixed"):
        result = score_mtu_files(eval_file, response_file, mode)
        assert result.metrics["TS"] == 100.0 and result.metrics["PS"] == 100.0
        assert result.counts["missing_responses"] == 0 and result.counts["unused_responses"] == 0
    assert any("response line 2 (S-S_1) -> eval row 3 (S-S_2)" in n for n in result.notes)


def test_past_the_pool_limit_responses_stay_with_their_own_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pairing across ids compares every left-over row with every left-over response; past
    PAIRING_POOL_LIMIT only an id's own responses are considered (content still picks which)."""
    monkeypatch.setattr(mtu_metrics, "PAIRING_POOL_LIMIT", 1)
    eval_file = _write(tmp_path / "S-S_eval.jsonl", SS_ROWS)
    responses = [
        {"id": "S-S_0", "response": RIGHT["S-S_0"]},
        {"id": "S-S_1", "response": RIGHT["S-S_2"]},
        {"id": "S-S_1", "response": RIGHT["S-S_1"]},
    ]
    result = score_mtu_files(eval_file, _write(tmp_path / "resp.jsonl", responses), "fixed")
    assert result.per_task["S-S_1"] == {"TS": 1.0, "PS": 1.0}
    assert result.counts["missing_responses"] == 1 and result.counts["unused_responses"] == 1


def _unpaired_files(tmp_path: Path) -> tuple[Path, Path]:
    """S-S_2 gets no response; a response for a row that does not exist (S-S_7: its argument is
    in no request) and one of another split are left over."""
    eval_file = _write(tmp_path / "S-S_eval.jsonl", SS_ROWS)
    responses = [
        {"id": "S-S_1", "response": RIGHT["S-S_1"]},
        {"id": "S-S_7", "response": _call("SearchFlight", destination="Lima")},
        {"id": "S-S_0", "response": RIGHT["S-S_0"]},
        {"id": "M-M_3_0", "response": _call("GetWeather", city="Oslo")},
    ]
    return eval_file, _write(tmp_path / "S-S_response.jsonl", responses)


def _assert_unpaired_reported(result: SuiteResult) -> None:
    assert result.counts["missing_responses"] == 1 and result.counts["unused_responses"] == 2
    assert unpaired_count(result) == 3
    assert "1 rows have no response (scored as empty replies): eval row 3 (S-S_2)" in result.notes
    assert (
        "2 responses belong to no row (not scored): response line 2 (S-S_7), response line 4 (M-M_3_0)"
        in result.notes
    )


def test_unpaired_rows_and_responses_are_reported_on_the_file_path(tmp_path: Path) -> None:
    eval_file, response_file = _unpaired_files(tmp_path)
    result = score_mtu_files(eval_file, response_file, "fixed")
    _assert_unpaired_reported(result)
    assert result.per_task["S-S_2"] == {"TS": 0.0, "PS": 0.0}  # an empty reply, never a right call


def test_unpaired_rows_and_responses_are_reported_on_the_trace_path(tmp_path: Path) -> None:
    eval_file, response_file = _unpaired_files(tmp_path)
    tasks = load_mtu_tasks(eval_file)
    outputs = recorded_responses(tasks, response_file)
    assert set(outputs) == {"S-S_0", "S-S_1"} and outputs.unused == [
        "response line 2 (S-S_7)",
        "response line 4 (M-M_3_0)",
    ]
    traces = [read_trace(p) for p in run_mtu_episodes(tasks, outputs, tmp_path / "traces")]
    assert len(traces) == 3  # the row without a response still runs, with an empty reply
    for mode in ("compat", "fixed"):
        from_traces = get_suite("mtu").score(traces, tasks, mode)
        _assert_unpaired_reported(from_traces)
        from_files = score_mtu_files(eval_file, response_file, mode)
        assert from_traces.metrics == from_files.metrics
        assert from_traces.counts == from_files.counts


def test_real_sm_traces_report_the_content_pairing(tmp_path: Path) -> None:
    tasks = load_mtu_tasks(SM[0])
    traces = [read_trace(p) for p in run_mtu_episodes(tasks, recorded_responses(tasks, SM[1]), tmp_path)]
    result = get_suite("mtu").score(traces, tasks, "compat")
    assert result.counts["paired_by_content"] == 4 and unpaired_count(result) == 0
    assert result.metrics == score_mtu_files(*SM, "compat").metrics


def test_strict_eval_exits_non_zero_on_any_unpaired_item(tmp_path: Path) -> None:
    eval_file, response_file = _unpaired_files(tmp_path)
    args = ["eval", "--mode", "fixed", "--mtu-eval", str(eval_file), "--mtu-responses", str(response_file)]
    runner = CliRunner()
    lenient = runner.invoke(app, [*args, "--out", str(tmp_path / "a.json")])
    assert lenient.exit_code == 0, lenient.output
    assert "1 rows have no response" in lenient.output
    strict = runner.invoke(app, [*args, "--out", str(tmp_path / "b.json"), "--strict"])
    assert strict.exit_code == 1
    assert "3 MTU rows or responses without a partner (--strict)" in strict.output
    # the results are written all the same
    saved = json.loads((tmp_path / "b.json").read_text(encoding="utf-8"))
    assert saved["results"]["mtu:S-S"]["counts"]["missing_responses"] == 1
    clean = ["eval", "--mode", "compat", "--mtu-eval", str(SM[0]), "--mtu-responses", str(SM[1])]
    assert runner.invoke(app, [*clean, "--out", str(tmp_path / "c.json"), "--strict"]).exit_code == 0


def _brute_force(weights: list[list[int]]) -> int:
    n, m = len(weights), len(weights[0])
    best = 0
    for cols in itertools.permutations(range(m), min(n, m)):
        for rows in itertools.permutations(range(n), min(n, m)):
            best = max(best, sum(max(0, weights[r][c]) for r, c in zip(rows, cols, strict=True)))
    return best


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 4).flatmap(
        lambda n: st.integers(1, 4).flatmap(
            lambda m: st.lists(st.lists(st.integers(-3, 9), min_size=m, max_size=m), min_size=n, max_size=n)
        )
    )
)
def test_best_assignment_is_a_maximum_weight_matching(weights: list[list[int]]) -> None:
    got = best_assignment(weights)
    cols = [c for c in got if c is not None]
    assert len(cols) == len(set(cols))  # each column at most once
    assert all(weights[r][c] > 0 for r, c in enumerate(got) if c is not None)
    assert sum(weights[r][c] for r, c in enumerate(got) if c is not None) == _brute_force(weights)


# ---- shuffled turns -------------------------------------------------------------------------------


def test_real_ms_shuffled_turns_form_whole_dialogs_in_both_modes() -> None:
    """M-S ships turn 3 before turn 0: every dialog is still one dialog of all its turns."""
    ids = [r["id"] for r in read_jsonl(MS[0])]
    assert ids[:4] == ["M-S_0_3", "M-S_0_1", "M-S_0_4", "M-S_0_0"]
    prefixes = {i.rpartition("_")[0] for i in ids}
    for mode in ("compat", "fixed"):
        result = score_mtu_files(*MS, mode)
        assert result.counts["M-S/dialogs"] == len(prefixes) == 85
        assert result.counts["M-S/dialog_turns"] == 473


def test_row_order_never_changes_a_score(tmp_path: Path) -> None:
    """The M-S rows sorted by dialog and turn, or shuffled again, score exactly as shipped."""
    rows = read_jsonl(MS[0])

    def order(row: dict[str, Any]) -> tuple[int, int]:
        _, dialog, turn = row["id"].split("_")
        return int(dialog), int(turn)

    shuffled = list(rows)
    random.Random(7).shuffle(shuffled)
    for variant, name in ((sorted(rows, key=order), "sorted"), (shuffled, "shuffled")):
        path = _write(tmp_path / f"M-S_{name}.jsonl", variant)
        for mode in ("compat", "fixed"):
            got = score_mtu_files(path, MS[1], mode)
            want = score_mtu_files(*MS, mode)
            assert got.metrics == want.metrics and got.per_task == want.per_task


def _mm_row(item_id: str, user: str, history: str, answer: dict[str, Any]) -> dict[str, Any]:
    return {"id": item_id, "question": _prompt(user, history), "answer": answer}


def test_dialog_metrics_read_turns_by_turn_number(tmp_path: Path) -> None:
    """Turn 1 (right) is shipped before turn 0 (wrong): the dialog failed at its first turn, so
    TPR is 0 and turn 1 gets SATS' recovery credit, whatever the row order."""
    weather = {"GetWeather": {"city": "Oslo"}}
    rows = [
        _mm_row("M-M_5_1", "And in Oslo?", "User: Weather in Bergen?\nAction: {}\n", weather),
        _mm_row("M-M_5_0", "Weather in Bergen?", "", {"GetWeather": {"city": "Bergen"}}),
    ]
    responses = [
        {"id": "M-M_5_1", "response": _call("GetWeather", city="Oslo")},
        {"id": "M-M_5_0", "response": _call("GetWeather", city="Paris")},
    ]
    eval_file = _write(tmp_path / "M-M_eval.jsonl", rows)
    response_file = _write(tmp_path / "M-M_response.jsonl", responses)
    for mode in ("compat", "fixed"):
        result = score_mtu_files(eval_file, response_file, mode)
        assert result.counts["M-M/dialogs"] == 1
        assert result.metrics["TPR"] == 0.0 and result.metrics["SR"] == 0.0
        assert result.metrics["ATS"] == 50.0
        assert result.metrics["SATS"] == pytest.approx(100 * (1 - 0.36787944117) / 2, abs=0.01)


def test_dialogs_sharing_an_id_are_told_apart_by_content_not_row_order() -> None:
    """Two dialogs named M-M_1, shipped shuffled: each turn 1 joins the turn 0 whose dialog it
    continues."""
    ids = ["M-M_1_1", "M-M_1_0", "M-M_1_1", "M-M_1_0"]
    questions = [
        _prompt("Now book it", "User: A flight to Lima\nAction: {}\nAssistant: Found one.\n\n"),
        _prompt("Weather in Oslo?"),
        _prompt("And tomorrow?", "User: Weather in Oslo?\nAction: {}\nAssistant: Rain.\n\n"),
        _prompt("A flight to Lima"),
    ]
    keys = dialog_keys(ids, questions)
    assert keys[1] == keys[2] and keys[0] == keys[3] and keys[0] != keys[1]
    assert sorted(keys) == ["M-M_1", "M-M_1", "M-M_1~2", "M-M_1~2"]


def test_real_mm_two_dialogs_named_m_m_19_stay_apart_in_fixed_mode() -> None:
    rows = read_jsonl(MM[0])
    keys = dialog_keys([r["id"] for r in rows], [r["question"] for r in rows])
    assert {keys[n] for n in range(67, 71)} == {"M-M_19"}
    assert {keys[n] for n in range(133, 136)} == {"M-M_19~2"}


# ---- averages as MTU's score() returns them -------------------------------------------------------

# MTU's released script, with the crash fixes and the M-S flag reset of SCORER.md, run once on the
# released S-M and M-S GPT-4 responses paired as pair_responses pairs them, returned these
SCRIPT_SM = {"TN": 62.55, "TO": 65.03, "AVG": 6379.0}
SCRIPT_MS = {"TS": 88.58, "PS": 71.25, "ATS": 68.11, "SATS": 60.9, "SR": 18.82, "TPR": 36.81}


def test_compat_matches_the_released_script_on_sm_and_ms() -> None:
    assert score_mtu_files(*SM, "compat").metrics == SCRIPT_SM
    assert score_mtu_files(*MS, "compat").metrics == SCRIPT_MS


def test_each_split_has_the_averages_mtu_returns_and_no_other() -> None:
    """score() gives "average_score" for S-S and S-M (both multiplied by 100 twice), none for
    M-S and M-M."""
    sm = score_mtu_files(*SM, "compat").metrics
    assert sm["AVG"] == round((sm["TN"] + sm["TO"]) / 2 * 100, 2)
    fixed_sm = score_mtu_files(*SM, "fixed").metrics
    assert fixed_sm["AVG"] == pytest.approx((fixed_sm["TN"] + fixed_sm["TO"]) / 2, abs=0.01)
    assert score_mtu_files(*SS, "compat").metrics["AVG"] == 7307.50
    for mode in ("compat", "fixed"):
        assert "AVG" not in score_mtu_files(*MS, mode).metrics
        assert "AVG" not in score_mtu_files(*MM, mode).metrics


# ---- gold parameters as JSON strings, and the OOD split ---------------------------------------------


def test_json_string_gold_parameters_are_decoded(tmp_path: Path) -> None:
    rows = [dict(r) for r in SS_ROWS]
    rows[2]["answer"] = {"GetWeather": json.dumps({"city": "Oslo"})}
    eval_file = _write(tmp_path / "S-S_eval.jsonl", rows)
    response_file = _write(tmp_path / "resp.jsonl", [{"id": k, "response": v} for k, v in RIGHT.items()])
    for mode in ("compat", "fixed"):
        result = score_mtu_files(eval_file, response_file, mode)
        assert result.per_task["S-S_2"] == {"TS": 1.0, "PS": 1.0}
        tasks = load_mtu_tasks(eval_file)
        traces = [
            read_trace(p)
            for p in run_mtu_episodes(tasks, {k: [v] for k, v in RIGHT.items()}, tmp_path / f"t-{mode}")
        ]
        assert get_suite("mtu").score(traces, tasks, mode).metrics == result.metrics
    golden = load_mtu_tasks(eval_file)["S-S_2"].golden[0].action
    assert golden.model_dump()["arguments"] == {"city": "Oslo"}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ("city: Oslo", "parameters of 'GetWeather' are a string that is not JSON"),
        ('["Oslo"]', "parameters of 'GetWeather' must be an object"),
        (5, "parameters of 'GetWeather' must be an object"),
    ],
)
def test_gold_parameters_that_are_no_object_are_a_typed_error(
    tmp_path: Path, params: Any, message: str
) -> None:
    rows = [dict(r) for r in SS_ROWS]
    rows[2]["answer"] = {"GetWeather": params}
    eval_file = _write(tmp_path / "S-S_eval.jsonl", rows)
    response_file = _write(tmp_path / "resp.jsonl", [{"id": k, "response": v} for k, v in RIGHT.items()])
    for mode in ("compat", "fixed"):
        with pytest.raises(EvaluationError, match=message):
            score_mtu_files(eval_file, response_file, mode)
    with pytest.raises(EvaluationError, match=message):
        load_mtu_tasks(eval_file)
    with pytest.raises(EvaluationError, match="'answer' must be an object"):
        decode_answer("GetWeather")


def _ood_oracle(tmp_path: Path) -> Path:
    """Responses that make exactly the gold calls of each OOD row."""
    out = []
    for row in read_jsonl(OOD):
        calls = [(n.strip(), p) for n, p in decode_answer(row["answer"]).items() if n.strip()]
        text = "\n".join(f"Action: {n}\nAction Input: {json.dumps(p)}" for n, p in calls)
        out.append({"id": row["id"], "response": f"Thought: go\n{text}" if calls else "Nothing to call."})
    return _write(tmp_path / "OOD_oracle.jsonl", out)


def test_real_ood_is_scored_in_fixed_mode(tmp_path: Path) -> None:
    """OOD stores most gold parameters as JSON strings and reuses ids across dialogs (OOD_0_0 is
    23 one-turn dialogs); the gold calls themselves score 100 on every metric."""
    answers = [r["answer"] for r in read_jsonl(OOD)]
    assert sum(isinstance(p, str) for a in answers for p in a.values()) == 35
    oracle = _ood_oracle(tmp_path)
    result = score_mtu_files(OOD, oracle, "fixed")
    assert result.metrics == {
        "TN": 100.0,
        "TO": 100.0,
        "ATS": 100.0,
        "SATS": 100.0,
        "SR": 100.0,
        "TPR": 100.0,
    }
    assert result.counts["OOD/items"] == 72 and result.counts["OOD/dialogs"] == 46
    assert unpaired_count(result) == 0
    with pytest.raises(EvaluationError, match="MTU's scorer has no OOD split; score it in fixed mode"):
        score_mtu_files(OOD, oracle, "compat")
    # through traces: the loader reads every OOD prompt's API list, both of its shapes
    tasks = load_mtu_tasks(OOD)
    assert all(t.tools for t in tasks)
    traces = [
        read_trace(p) for p in run_mtu_episodes(tasks, recorded_responses(tasks, oracle), tmp_path / "t")
    ]
    assert get_suite("mtu").score(traces, tasks, "fixed").metrics == result.metrics
    with pytest.raises(EvaluationError, match="no OOD split"):
        get_suite("mtu").score(traces, tasks, "compat")


def test_ood_wrong_predictions_fail_their_turns(tmp_path: Path) -> None:
    """A wrong argument in one turn of a dialog fails that dialog only."""
    rows = read_jsonl(OOD)
    responses = read_jsonl(_ood_oracle(tmp_path))
    target = next(n for n, r in enumerate(rows) if r["id"] == "OOD_2_0")
    responses[target]["response"] = _call("get_world_record", record_category="fastest car")
    gold = decode_answer(rows[target]["answer"])
    assert gold and "fastest car" not in json.dumps(gold)
    result = score_mtu_files(OOD, _write(tmp_path / "wrong.jsonl", responses), "fixed")
    assert result.metrics["SR"] == pytest.approx(100 * 45 / 46, abs=0.01)
    assert result.metrics["TPR"] < 100.0 and result.metrics["TN"] < 100.0


def test_mtu_readers_share_one_jsonl_reader(tmp_path: Path) -> None:
    """The loader and the scorer read through toolgym.jsonl: the same bad line, the same error."""
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "S-S_0", "question": "q", "answer": {}}\n"just a string"\n', encoding="utf-8")
    with pytest.raises(EvaluationError) as from_loader:
        read_jsonl(bad)
    with pytest.raises(EvaluationError) as from_scorer:
        score_mtu_files(bad, bad, "compat")
    assert str(from_loader.value) == f"{bad}:2: row must be a JSON object, got str"
    assert str(from_scorer.value) == f"{bad}:2: eval row must be a JSON object, got str"


def test_compat_repairs_single_quotes_as_mtu_does() -> None:
    """MTU's fallback turns ' into ", but keeps an escaped \\' as an escaped backslash and quote."""
    assert compat_quote_repair("{'a': 'b'}") == '{"a": "b"}'
    assert compat_quote_repair("{'a': 'it\\'s'}") == '{"a": "it\\\\\'s"}'
    assert compat_parse_single("Action: A\nAction Input: {'a': 'it\\'s'}") == ("A", {"a": "it\\'s"})


def test_compat_crash_fixes_score_as_documented(tmp_path: Path) -> None:
    """Inputs MTU's script crashes on (docs/evaluation.md, compat vs the script, rows 1, 5)."""
    assert compat_parse_single("Action: A\nAction Input: none") == ("", {})
    assert compat_parse_single('Action Input: {"a": 1}') == ("", {})  # no "Action:"
    assert compat_parse_single("Action: A\nAction Input: [1]") == ("", {})  # no {...}: no call
    # a gold answer {} in a single-call split is "no call"; a dialog missing turn 1 is scored
    # over the turns it has
    rows = [
        {"id": "M-S_0_0", "question": _prompt("hi"), "answer": {}},
        {"id": "M-S_0_2", "question": _prompt("Oslo?"), "answer": {"GetWeather": {"city": "Oslo"}}},
    ]
    responses = [
        {"id": "M-S_0_0", "response": "Hello!"},
        {"id": "M-S_0_2", "response": _call("GetWeather", city="Oslo")},
    ]
    result = score_mtu_files(
        _write(tmp_path / "M-S_eval.jsonl", rows), _write(tmp_path / "M-S_resp.jsonl", responses), "compat"
    )
    assert result.metrics["TS"] == 100.0 and result.metrics["SR"] == 100.0
    assert result.counts["M-S/dialog_turns"] == 2
