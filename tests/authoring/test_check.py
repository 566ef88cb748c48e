"""The checker's Python API (issue 36, item 2): `check_tasks` / `check_task` on tasks built in
memory, as the generator calls them, on real apps, worlds, tools and the real oracle episode."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolgym.authoring.check import TaskChecker, check_file, check_task, check_tasks, resolve_targets
from toolgym.envs.demo import bundled_task_sets
from toolgym.tasks import Task, TaskProblem, TaskSet


@pytest.fixture(scope="module")
def transfer() -> Task:
    """mtu-transfer-011: a transfer, its answer, two balances after it."""
    return TaskSet.load(bundled_task_sets()["mtu"])["mtu-transfer-011"]


def _with(task: Task, **changes: Any) -> Task:
    """The task with some fields changed, validated as a new in-memory task (no origin)."""
    return Task.model_validate({**task.model_dump(mode="json", exclude_none=True), **changes})


def test_a_sound_task_has_no_problems(transfer: Task) -> None:
    assert check_task(transfer) == []
    assert check_tasks([_with(transfer, id="copy")]) == []


def test_a_problem_of_a_task_in_memory_names_the_task(transfer: Task) -> None:
    guard = {"kind": "row_exists", "table": "mtu_banking_accounts", "where": {"account_number": "123456"}}
    broken = _with(transfer, id="guard", expected_state=[*transfer.expected_state, guard])
    (problem,) = check_tasks([broken])
    assert problem == TaskProblem(
        None,
        None,
        "guard",
        "expected_state[2] (row_exists mtu_banking_accounts where account_number='123456') cannot fail: "
        "it holds on the untouched world already",
    )
    assert str(problem).startswith("guard: expected_state[2] ")


def test_a_task_id_given_twice_in_memory(transfer: Task) -> None:
    problems = check_tasks([transfer, _with(transfer, id=transfer.id)])
    assert [(p.task_id, p.message) for p in problems] == [
        ("mtu-transfer-011", "task id given twice (also line 11)")
    ]


def test_a_tool_task_without_apps_gets_the_checks_that_apply(tmp_path: Path) -> None:
    """No world: the tools it names, its files and its answer against the golden final answer."""
    task = Task.model_validate(
        {
            "id": "receipt",
            "query": "What is the total?",
            "files": [{"name": "image/receipt.png", "path": "receipt.png"}],
            "tools": ["OCR", "Calculatr"],
            "golden": [
                {"action": {"type": "tool_call", "name": "OCR", "arguments": {"image": "image/receipt.png"}}},
                {"action": {"type": "final_answer", "text": "The total is 23.50."}},
            ],
            "answer": {"whitelist": [["24"]]},
        }
    )
    messages = [p.message for p in check_task(task, tmp_path)]
    assert messages == [
        "unknown tool 'Calculatr' (did you mean 'Calculator'?)",
        f"file 'image/receipt.png' not found: {tmp_path / 'receipt.png'}",
        "answer.whitelist[0] ['24'] is not found in the golden final answer",
    ]


def test_the_oracle_runs_the_task_as_a_run_does(transfer: Task) -> None:
    """A read-only chain with no answer spec: its names, replay and answer checks find nothing,
    but no agent can pass it; only the real episode (the env's reward) finds that."""
    nothing = _with(
        transfer,
        id="nothing-to-score",
        golden=[
            {
                "action": {
                    "type": "tool_call",
                    "name": "get_account_balance",
                    "arguments": {"account_number": "123456"},
                }
            },
            {"action": {"type": "final_answer", "text": "$4,825.50"}},
        ],
        expected_state=[],
        answer=None,
    )
    (problem,) = check_tasks([nothing])
    assert problem.message == (
        "the oracle scores 0.00 (nothing scores it: the task has no answer spec and changes no state)"
    )
    assert check_tasks([nothing], oracle=False) == []


def test_the_oracle_must_reach_the_tasks_milestones_and_hit_no_minefield(transfer: Task) -> None:
    reachable = {
        "id": "balance",
        "state": {
            "table": "mtu_banking_accounts",
            "where": {"account_number": "123456"},
            "values": {"balance_cents": 432550},
        },
    }
    unreachable = {
        "id": "wrong",
        "after": ["balance"],
        "state": {
            "table": "mtu_banking_accounts",
            "where": {"account_number": "123456"},
            "values": {"balance_cents": 1},
        },
    }
    mine = {"id": "any-transfer", "call": {"tool": "transfer_funds", "outcome": "any"}}
    assert check_task(_with(transfer, id="sound", milestones=[reachable])) == []
    problems = [
        p.message
        for p in check_task(
            _with(transfer, id="unsound", milestones=[reachable, unreachable], minefields=[mine])
        )
    ]
    assert "the oracle reaches 50% of the milestones (first missed: wrong)" in problems
    assert "the oracle hits minefields: any-transfer (step 1)" in problems
    typo = {"id": "typo", "state": {"table": "mtu_banking_acounts"}}
    (problem,) = check_task(_with(transfer, id="typo", milestones=[typo]))
    assert "mtu_banking_acounts" in problem.message


def test_one_checker_serves_many_calls(transfer: Task) -> None:
    """What the generator does: one checker, its worlds reused, over batch after batch."""
    with TaskChecker() as checker:
        for batch in range(3):
            tasks = [_with(transfer, id=f"t-{batch}-{i}") for i in range(5)]
            assert check_tasks(tasks, checker=checker) == []


def test_a_file_is_checked_line_by_line(tmp_path: Path, transfer: Task) -> None:
    path = tmp_path / "tasks.jsonl"
    good = transfer.model_dump_json(exclude_none=True)
    path.write_text(good + "\n" + good.replace('"expected_state"', '"expected_sate"') + "\n")
    checked = check_file(path)
    assert (checked.name, checked.tasks) == ("tasks", 2)
    assert [str(p) for p in checked.problems] == [
        f"{path}:2: mtu-transfer-011: unknown field 'expected_sate' (did you mean 'expected_state'?)"
    ]


def test_targets_are_files_set_names_or_packages(tmp_path: Path) -> None:
    sets = bundled_task_sets()
    path = tmp_path / "mine.jsonl"
    path.write_text("")
    assert resolve_targets([str(path), "mtu"]) == [("mine", path), ("mtu", sets["mtu"])]
    assert resolve_targets(["toolgym"]) == list(sets.items())  # every set toolgym registers
    with pytest.raises(ValueError, match="nope: no such task file, registered set or package"):
        resolve_targets(["nope"])


# ---- dynamic tasks: events and simulated time ----------------------------------------------------
@pytest.fixture(scope="module")
def moving() -> Task:
    """change-bank-refund-lands-005: a refund lands at a time (an event calling `deposit`), the
    golden chain waits for it and moves the amount to savings."""
    from toolgym.envs.demo import dynamic_task_sets

    return TaskSet.load(dynamic_task_sets()["dynamic-world-changes"])["change-bank-refund-lands-005"]


def _event(task: Task, **changes: Any) -> dict[str, Any]:
    """The task's one event as JSON, with some fields changed."""
    assert task.events is not None
    return {**task.events[0].model_dump(mode="json", exclude_none=True), **changes}


def test_a_dynamic_task_is_checked_with_its_events_and_its_wait(moving: Task) -> None:
    assert (
        check_task(moving) == []
    )  # `wait` is offered though not in its tools list; the chain replays in time


def test_an_event_calling_no_api_of_the_tasks_apps_is_a_problem(tmp_path: Path, moving: Task) -> None:
    call = {"tool": "depositt", "arguments": {"account_id": "ACC-10003", "amount": 43.18}}
    elsewhere = {"tool": "send_message", "arguments": {"sender_id": "U0001", "content": "hi"}}
    bad = _with(moving, events=[_event(moving, calls=[call, elsewhere])])
    path = tmp_path / "tasks.jsonl"
    path.write_text(bad.model_dump_json(exclude_none=True) + "\n")
    assert [str(p) for p in check_file(path).problems] == [
        f"{path}:1: {moving.id}: event 'refund' call #0 names 'depositt', which is no API of the task's apps "
        "(banking) (did you mean 'deposit'?)",
        f"{path}:1: {moving.id}: event 'refund' call #1 names 'send_message', which is no API of the task's "
        "apps (banking)",
    ]


def test_an_event_call_that_fails_when_it_fires_is_a_problem(moving: Task) -> None:
    call = {"tool": "deposit", "arguments": {"account_id": "ACC-99999", "amount": 43.18}}
    (problem,) = check_task(_with(moving, events=[_event(moving, calls=[call])]), oracle=False)
    assert problem.message.startswith(
        "during the golden chain, event 'refund' call deposit fails when it fires: "
    )
    assert "ACC-99999" in problem.message


def test_a_dynamic_task_that_writes_needs_assertions(moving: Task) -> None:
    problems = [p.message for p in check_task(_with(moving, expected_state=[]), oracle=False)]
    assert problems == [
        "a task with events or a time policy is judged by its expected_state, and it has none "
        "(its golden chain writes: transfer)"
    ]


def test_a_when_fact_naming_what_the_world_lacks_is_a_problem(moving: Task) -> None:
    trigger = {"when": {"table": "bank_transactionz", "where": {}}, "delay_s": 60}
    event = {k: v for k, v in _event(moving, **trigger).items() if k != "at"}
    (problem,) = check_task(_with(moving, events=[event]), oracle=False)
    assert problem.message == (
        "event 'refund': its `when` fact names unknown table 'bank_transactionz' (did you mean 'bank_transactions'?)"
    )
    trigger = {"when": {"table": "bank_transactions", "where": {"acount_id": "ACC-10003"}}, "delay_s": 60}
    event = {k: v for k, v in _event(moving, **trigger).items() if k != "at"}
    (problem,) = check_task(_with(moving, events=[event]), oracle=False)
    assert problem.message == (
        "event 'refund': its `when` fact: table 'bank_transactions' has no column 'acount_id' (did you mean 'account_id'?)"
    )


def test_event_ids_and_windows_are_checked_where_the_task_is_read(tmp_path: Path, moving: Task) -> None:
    line = moving.model_dump(mode="json", exclude_none=True)
    line["minefields"][0]["window"] = {"before_event": "refnd"}
    twice = {**line, "id": "twice", "events": [_event(moving), _event(moving)]}
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(line) + "\n" + json.dumps(twice) + "\n")
    problems = [str(p) for p in check_file(path).problems]
    assert len(problems) == 2
    assert problems[0].startswith(f"{path}:1: {moving.id}: ") and "unknown events ['refnd']" in problems[0]
    assert problems[1].startswith(f"{path}:2: twice: ") and "event ids repeat: ['refund']" in problems[1]
