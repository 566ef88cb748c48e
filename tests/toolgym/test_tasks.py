"""toolgym.tasks: the strict task format (every problem one line naming file:line and the task id)
and the answer matcher (`alias_found`). The task model's round trips are in test_files_tasks.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from toolgym.actions import FinalAnswer, ToolCall
from toolgym.errors import ErrorKind
from toolgym.tasks import (
    _WORD,
    GoldenStep,
    ScenarioError,
    Task,
    TaskFileError,
    TaskProblem,
    TaskSet,
    _norm,
    _whole_word_in,
    alias_found,
    read_task_file,
    task_problem,
)

PAY = {"type": "tool_call", "name": "transfer", "arguments": {"amount": 3.5}}
# what a raw pydantic message looks like: none of it may reach a task author
PYDANTIC_DUMP = re.compile(r"validation errors? for|For further information visit|\[type=|input_value=")


def write_tasks(path: Path, *rows: object) -> Path:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8"
    )
    return path


# ---- the strict format --------------------------------------------------------------------------
def test_a_typo_d_key_is_one_line_with_file_line_task_id_and_a_suggestion(tmp_path: Path) -> None:
    path = write_tasks(
        tmp_path / "tasks.jsonl",
        {"id": "fine", "query": "q"},
        {"id": "typo", "query": "q", "apps": ["banking"], "expected_sate": []},
    )
    with pytest.raises(TaskFileError) as caught:
        TaskSet.load(path)
    assert (
        str(caught.value) == f"{path}:2: typo: unknown field 'expected_sate' (did you mean 'expected_state'?)"
    )
    assert caught.value.problems == [
        TaskProblem(str(path), 2, "typo", "unknown field 'expected_sate' (did you mean 'expected_state'?)")
    ]
    assert isinstance(caught.value, ValueError)  # callers that caught ValueError still do


@pytest.mark.parametrize(
    ("task", "line"),
    [
        (
            {"golden": [{"action": {**PAY, "arguements": {}}}]},
            "golden[0].action: unknown field 'arguements' (did you mean 'arguments'?)",
        ),
        (
            {"golden": [{"action": PAY, "expectd": 1}]},
            "golden[0]: unknown field 'expectd' (did you mean 'expected'?)",
        ),
        (
            {"golden": [{"action": {**PAY, "type": "tool_cal"}}]},
            "golden[0].action: unknown type 'tool_cal' (types: tool_call, final_answer, no_call, ask_user; "
            "did you mean 'tool_call'?)",
        ),
        (
            {"golden": [{"action": PAY, "expect_error": "tool_eror"}]},
            "golden[0].expect_error: unknown value 'tool_eror' (values: format_error, unknown_tool, "
            "argument_error, tool_error, timeout, infra_error; did you mean 'tool_error'?)",
        ),
        (
            {"golden": [{"action": {"type": "final_answer", "text": "a"}, "expect_error": "tool_error"}]},
            "golden[0]: expect_error is for tool calls only, not a final_answer step",
        ),
        ({"answer": {"whitelst": [["a"]]}}, "answer: unknown field 'whitelst' (did you mean 'whitelist'?)"),
        (
            {"files": [{"name": "a.png", "pth": "a.png"}]},
            "files[0]: unknown field 'pth' (did you mean 'path'?)",
        ),
        ({"seed": "one"}, "seed: Input should be a valid integer, unable to parse string as an integer"),
        (
            {"expected_state": [{"kind": "row_exist", "table": "bank_accounts"}]},
            "expected_state[0]: unknown kind 'row_exist' (kinds: row_exists, row_absent, field_equals, count; "
            "did you mean 'row_exists'?)",
        ),
        (
            {"expected_state": [{"table": "bank_accounts"}]},
            "expected_state[0]: missing field 'kind' (kinds: row_exists, row_absent, field_equals, count)",
        ),
        ({"expected_state": [{"kind": "count", "table": "t"}]}, "expected_state[0]: missing field 'n'"),
        (
            {"expected_state": [{"kind": "row_absent", "table": "t", "wher": {}}]},
            "expected_state[0]: unknown field 'wher' (did you mean 'where'?)",
        ),
    ],
)
def test_each_problem_is_a_short_readable_line(tmp_path: Path, task: dict[str, Any], line: str) -> None:
    path = write_tasks(tmp_path / "tasks.jsonl", {"id": "t-1", "query": "q", **task})
    tasks, problems = read_task_file(path)
    assert tasks == []
    assert [str(p) for p in problems] == [f"{path}:1: t-1: {line}"]
    assert not PYDANTIC_DUMP.search(line)


def test_every_problem_of_a_file_is_reported_and_the_valid_tasks_are_read(tmp_path: Path) -> None:
    path = write_tasks(
        tmp_path / "tasks.jsonl",
        {"id": "a", "query": "q", "expected_sate": []},
        {"id": "b", "query": "q"},
        "not json",
        {"id": "c", "query": "q", "expected_state": [{"kind": "count", "table": "t", "n": 1, "field": "x"}]},
        "",
        {"query": "no id"},
        {"id": "b", "query": "again"},
        {"id": "d", "query": "q", "user": {"persona": "p", "known": {}, "goal": "g"}},
        ["a list"],
    )
    tasks, problems = read_task_file(path)
    assert [t.id for t in tasks] == ["b"] and tasks[0].origin == (str(path), 2)
    assert [(p.line, p.task_id) for p in problems] == [
        (1, "a"),
        (3, None),
        (4, "c"),
        (6, None),
        (7, "b"),
        (8, "d"),
        (9, None),
    ]
    assert problems[4].message == "duplicate task id (first on line 2)"
    assert problems[5].message == "user: missing field 'satisfied_when'"
    with pytest.raises(TaskFileError) as caught:
        TaskSet.load(path)
    assert caught.value.problems == problems
    assert str(caught.value).splitlines() == [str(p) for p in problems]
    for problem in problems:
        assert not PYDANTIC_DUMP.search(str(problem)), problem
    # a user scenario among the problems: still the ScenarioError its callers catch
    assert isinstance(caught.value, ScenarioError) and caught.value.task_id == "d"


def test_the_errors_cross_a_process_boundary_whole(tmp_path: Path) -> None:
    import pickle

    from toolgym.tasks import TaskUseError

    path = write_tasks(
        tmp_path / "tasks.jsonl", {"id": "a", "query": "q", "seeed": 1}, {"id": "b", "qury": "q"}
    )
    with pytest.raises(TaskFileError) as caught:
        TaskSet.load(path)
    for error in (caught.value, TaskUseError(caught.value.problems[:1]), ScenarioError("t", "goal: missing")):
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error) and str(copy) == str(error)
        assert getattr(copy, "problems", None) == getattr(error, "problems", None)


def test_a_problem_leaves_out_what_is_not_known() -> None:
    assert str(TaskProblem("f.jsonl", 3, "t", "m")) == "f.jsonl:3: t: m"
    assert str(TaskProblem("f.jsonl", None, None, "m")) == "f.jsonl: m"
    assert str(TaskProblem(None, None, "t", "m")) == "t: m"
    assert str(TaskProblem(None, 4, None, "m")) == "line 4: m"


def test_where_a_task_was_read_is_no_part_of_it(tmp_path: Path) -> None:
    row = {"id": "t", "query": "q", "golden": [{"action": PAY}]}
    path = write_tasks(tmp_path / "tasks.jsonl", row)
    loaded = TaskSet.load(path)["t"]
    built = Task.model_validate(row)
    assert loaded.origin == (str(path), 1) and built.origin is None
    assert loaded == built and loaded.model_dump_json() == built.model_dump_json()
    assert str(task_problem(loaded, "no table 'x'")) == f"{path}:1: t: no table 'x'"
    assert str(task_problem(built, "no table 'x'")) == "t: no table 'x'"


def test_expect_error_is_left_out_of_dumps_when_absent() -> None:
    plain = GoldenStep(action=ToolCall(name="transfer"))
    assert "expect_error" not in plain.model_dump(mode="json")
    meant = GoldenStep(action=ToolCall(name="transfer"), expect_error=ErrorKind("tool_error"))
    assert meant.expect_error is ErrorKind.TOOL_ERROR
    assert meant.model_dump(mode="json")["expect_error"] == "tool_error"
    assert GoldenStep.model_validate_json(meant.model_dump_json()) == meant
    with pytest.raises(ValidationError):
        GoldenStep(action=FinalAnswer(text="x"), expect_error=ErrorKind.TOOL_ERROR)


def test_the_models_refuse_unknown_keys_built_in_code_too() -> None:
    with pytest.raises(ValidationError, match="expected_sate"):
        Task.model_validate({"id": "t", "query": "q", "expected_sate": []})
    with pytest.raises(ValidationError, match="row_exist"):
        Task.model_validate(
            {"id": "t", "query": "q", "expected_state": [{"kind": "row_exist", "table": "x"}]}
        )
    # the stored form of expected_state stays the dicts it was written as (dumps, task_hash)
    written = [{"kind": "row_exists", "table": "bank_accounts"}]
    assert Task(id="t", query="q", expected_state=written).expected_state == written


# ---- the answer matcher -----------------------------------------------------------------------------


def regex_whole_word_in(text: str, needle: str) -> bool:
    """The one-pattern-per-alias search `_whole_word_in` replaces: the reference it must equal."""
    return re.search(rf"(?<!{_WORD})" + re.escape(needle) + rf"(?!{_WORD})", text) is not None


# letters, digits and "_" (word characters), Han, kana and Thai (unspaced: no word characters),
# spaces, punctuation, a combining mark, full-width forms: every kind of boundary
ALPHABET = "ab1_ 5.,$+-C南京天のกéÀ\u0301ＡＢ１２\t"
texts = st.text(alphabet=ALPHABET, max_size=24)
needles = st.text(alphabet=ALPHABET, min_size=1, max_size=4)


@settings(max_examples=2000, deadline=None)
@given(texts, needles)
@example("a58 58", "58")  # the first occurrence is inside a word, the second is not
@example("5858", "58")
@example("aaa", "aa")  # overlapping occurrences
@example("寄往南京的包裹", "南京")
@example("c++ and C", "c++")
@example("$5.", "$5")
def test_whole_word_search_equals_the_regex(text: str, needle: str) -> None:
    assert _whole_word_in(text, needle) == regex_whole_word_in(text, needle)


@settings(max_examples=500, deadline=None)
@given(texts, needles)
def test_alias_found_keeps_the_regex_semantics(text: str, alias: str) -> None:
    a, t = _norm(alias).strip(), _norm(text)
    if a and regex_whole_word_in(t, a):
        assert alias_found(text, alias)
    elif a and not any(ch.isdigit() for ch in a):
        assert not alias_found(text, alias)  # only numeric aliases have a second way to match


def test_alias_boundaries() -> None:
    assert alias_found("It lasts 58天", "58")
    assert alias_found("The total is 23.50.", "23.50")
    assert not alias_found("It lasts 158 days", "58")
    assert not alias_found("a58", "58")
    assert alias_found("a58 then 58", "58")  # a later occurrence on word boundaries counts
    assert alias_found("Learn C++ today", "c++")
    assert not alias_found("cat", "")
