"""Milestones and minefields (toolgym.envs.milestones) on real mock-app episodes."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from toolgym.actions import Action, FinalAnswer, ToolCall
from toolgym.envs.agents import OracleAgent, ScriptedAgent
from toolgym.envs.demo import bundled_task_sets
from toolgym.envs.milestones import (
    BestMapping,
    checks_of_trace,
    derived_milestones,
    progress_text,
    rouge_l,
    value_similarity,
    words,
)
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.tasks import MAX_MILESTONES, Milestone, Task, TaskSet
from toolgym.trace import read_trace

# five deposits into five accounts of the seeded bank (seed 0): ACC-10001 starts at $10,101.38
ACCOUNTS = ["ACC-10001", "ACC-10002", "ACC-10003", "ACC-10004", "ACC-10005"]
DEPOSITS = [
    ToolCall(name="deposit", arguments={"account_id": a, "amount": 10.0 + i}) for i, a in enumerate(ACCOUNTS)
]
START_CENTS = 1010138


def deposits_task(**fields: Any) -> Task:
    golden = [{"action": d.model_dump(mode="json")} for d in DEPOSITS]
    golden.append({"action": {"type": "final_answer", "text": "Done: five deposits."}})
    return Task.model_validate(
        {
            "id": "five-deposits",
            "query": "Deposit $10, $11, $12, $13 and $14 into accounts ACC-10001 to ACC-10005.",
            "apps": ["banking"],
            "golden": golden,
            "clock": "2024-01-01T00:00:00Z",
            **fields,
        }
    )


def play(
    task: Task, actions: list[Action], *, trace_dir: Path | None = None, **env_args: Any
) -> tuple[ToolEnv, Any]:
    env = ToolEnv(tasks=[task], **env_args)
    result = run_episode(env, ScriptedAgent(env.protocol, actions), task, trace_dir=trace_dir)
    return env, result


# ---- similarity ------------------------------------------------------------------------------
def test_words_split_unspaced_scripts_into_characters() -> None:
    assert words("Send 2 apples, NOW!") == ["send", "2", "apples", "now"]
    assert words("寄往南京的包裹 box-7") == ["寄", "往", "南", "京", "的", "包", "裹", "box", "7"]


def test_rouge_l_is_lcs_f1_over_words() -> None:
    assert rouge_l("the cat sat", "the cat sat") == 1.0
    assert rouge_l("the cat sat", "the cat sat down") == pytest.approx(2 * 0.75 * 1.0 / 1.75)
    assert rouge_l("the cat sat", "dogs bark") == 0.0
    assert rouge_l("", "") == 1.0 and rouge_l("a b", "") == 0.0
    assert rouge_l("明天见面", "明天下午见面") == pytest.approx(2 * (4 / 6) * 1.0 / (4 / 6 + 1.0))


@pytest.mark.parametrize(
    ("expected", "actual", "how", "similarity"),
    [
        (5, 5.0, "exact", 1.0),
        ("5", 5, "exact", 0.0),
        ({"a": [1, 2]}, {"a": [1, 2]}, "exact", 1.0),
        (10.0, 10.004, "close", 1.0),
        (10.0, 10.02, "close", 0.0),
        ("ten", "ten", "close", 1.0),  # not numbers: exact
        ("Gate", "golden gate bridge", "contains", 1.0),
        ("gates", "golden gate bridge", "contains", 0.0),
        (True, 1, "exact", 0.0),  # a boolean is not the number 1
    ],
)
def test_value_similarity(expected: Any, actual: Any, how: Any, similarity: float) -> None:
    assert value_similarity(expected, actual, how) == similarity


# ---- the best order-respecting mapping ----------------------------------------------------------
def brute_force(similarities: list[list[float]], after: list[list[int]]) -> float:
    """Every assignment of each milestone to a step or to none, the order checked."""
    steps = len(similarities[0]) if similarities else 0
    best = 0.0
    for choice in itertools.product([None, *range(steps)], repeat=len(similarities)):
        if any(
            (placed := choice[m]) is not None and (before := choice[p]) is not None and before > placed
            for m, preds in enumerate(after)
            for p in preds
        ):
            continue
        if any(c is not None and similarities[m][c] == 0 for m, c in enumerate(choice)):
            continue
        best = max(best, sum(similarities[m][c] for m, c in enumerate(choice) if c is not None))
    return best


@st.composite
def mapping_cases(draw: st.DrawFn) -> tuple[list[list[float]], list[list[int]]]:
    n, steps = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    values = st.sampled_from([0.0, 0.0, 0.25, 0.5, 1.0])
    similarities = [[draw(values) for _ in range(steps)] for _ in range(n)]
    after = [sorted(draw(st.sets(st.integers(0, m - 1)))) if m else [] for m in range(n)]  # acyclic
    return similarities, after


@settings(max_examples=150, deadline=None)
@given(mapping_cases())
def test_best_mapping_equals_brute_force(case: tuple[list[list[float]], list[list[int]]]) -> None:
    similarities, after = case
    milestones = [
        Milestone(id=f"m{m}", after=[f"m{p}" for p in preds], call={"tool": "t"})
        for m, preds in enumerate(after)
    ]
    mapping = BestMapping(milestones)
    for step in range(len(similarities[0])):
        mapping.add_step(step + 1, [row[step] for row in similarities])
    assert mapping.total() == pytest.approx(brute_force(similarities, after))
    placed = {r.id: r.step for r in mapping.reached()}
    for m, preds in enumerate(after):  # the mapping it reports respects the order too
        for p in preds:
            at, before = placed[f"m{m}"], placed[f"m{p}"]
            if at is not None and before is not None:
                assert before <= at


def test_a_milestone_is_never_placed_before_one_it_comes_after() -> None:
    mapping = BestMapping(
        [Milestone(id="read", call={"tool": "t"}), Milestone(id="write", after=["read"], call={"tool": "t"})]
    )
    mapping.add_step(1, [0.0, 1.0])  # the write's fact holds before the read happened
    mapping.add_step(2, [1.0, 0.0])
    assert mapping.total() == 1.0
    assert [r.record() for r in mapping.reached()] == [
        {"id": "read", "step": None, "similarity": 0.0},
        {"id": "write", "step": 1, "similarity": 1.0},
    ]  # ties go to the earlier step


# ---- the task format ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("milestones", "message"),
    [
        ([{"id": "a", "call": {"tool": "t"}}, {"id": "a", "call": {"tool": "u"}}], "ids repeat"),
        ([{"id": "a", "after": ["b"], "call": {"tool": "t"}}], "unknown milestones ['b']"),
        (
            [
                {"id": "a", "after": ["b"], "call": {"tool": "t"}},
                {"id": "b", "after": ["a"], "call": {"tool": "t"}},
            ],
            "cycle",
        ),
        ([{"id": "a"}], "exactly one of state and call"),
        (
            [{"id": "a", "state": {"table": "t", "where": {"k": 1}, "values": {"v": 1}, "absent": True}}],
            "no values",
        ),
        ([{"id": "a", "call": {"tool": "t", "match": {"x": "contains"}}}], "not in arguments"),
        ([{"id": "a", "call": {"tool": "t", "arguments": {"x": 1}, "match": {"x": "fuzzy"}}}], "fuzzy"),
        ([{"id": f"m{i}", "call": {"tool": "t"}} for i in range(MAX_MILESTONES + 1)], "at most"),
    ],
)
def test_bad_milestones_are_refused_with_the_reason(milestones: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("[", r"\[").replace("]", r"\]")):
        deposits_task(milestones=milestones)


def test_a_task_without_milestones_dumps_and_hashes_as_before() -> None:
    task = deposits_task()
    assert "milestones" not in task.model_dump(mode="json") and "minefields" not in task.model_dump(
        mode="json"
    )
    assert deposits_task(milestones=[{"id": "a", "call": {"tool": "deposit"}}]).model_dump(mode="json")[
        "milestones"
    ] == [
        {
            "id": "a",
            "after": [],
            "call": {"tool": "deposit", "arguments": {}, "outcome": "ok", "match": {}, "tolerance": 0.01},
        }
    ]


# ---- milestones derived from golden chains ------------------------------------------------------
def test_every_write_of_the_chain_becomes_milestones() -> None:
    milestones = derived_milestones(deposits_task())
    # each deposit changes a balance and adds a transaction (its id, made up by the write, left out)
    assert [m.id for m in milestones] == [f"{i}.deposit.{k}" for i in range(1, 6) for k in (1, 2)]
    balance, transaction = milestones[0].state, milestones[1].state
    assert balance is not None and balance.model_dump(exclude_defaults=True) == {
        "table": "bank_accounts",
        "where": {"account_id": "ACC-10001"},
        "values": {"balance_cents": START_CENTS + 1000},
    }
    assert transaction is not None and transaction.table == "bank_transactions"
    assert "txn_id" not in transaction.values and transaction.values["amount_cents"] == 1000
    assert all(m.after == [] for m in milestones)  # no deposit reads what another one made


def test_a_read_the_answer_quotes_is_a_milestone_and_orders_the_write_that_uses_it() -> None:
    (task,) = [t for t in TaskSet.load(bundled_task_sets()["ctool"]) if t.id == "ctool-banking-transfer-018"]
    milestones = derived_milestones(task)
    assert milestones[0].id == "1.list_accounts" and milestones[0].call is not None
    assert milestones[0].call.arguments == {"customer_id": "CUST-0001"}
    writes = milestones[1:]
    assert writes and all(m.id.startswith("2.transfer") and m.after == ["1.list_accounts"] for m in writes)


def test_the_oracle_reaches_every_derived_milestone_of_every_bundled_mock_app_task() -> None:
    checked = 0
    for path in bundled_task_sets().values():
        tasks = [t for t in TaskSet.load(path) if t.apps and t.golden]
        if not tasks:
            continue
        env = ToolEnv(tasks=tasks, reward_mode="milestones")
        for task in tasks:
            result = run_episode(env, OracleAgent(env.protocol), task)
            # nothing derived (a chain of reads the answer does not quote), or minefields alone (a
            # refusal's): no milestone to reach, and the oracle steps on no minefield
            if env.checks is None or not env.checks.milestones:
                assert not derived_milestones(task)
                assert result.scores.get("minefield_hits", 0.0) == 0.0, task.id
                continue
            assert result.scores["milestone_progress"] == 1.0, (task.id, env.checks.first_missed())
            checked += 1
        env.close()
    assert checked >= 250


# ---- partial progress and minefields in episodes ------------------------------------------------
def test_three_of_five_writes_get_partial_progress_and_the_first_missed_is_named(tmp_path: Path) -> None:
    done: list[Action] = [*DEPOSITS[:3], FinalAnswer(text="Done.")]
    env, result = play(deposits_task(), done, trace_dir=tmp_path, reward_mode="milestones")
    assert result.scores["milestone_progress"] == 0.6
    assert result.reward == 0.0  # the usual reward: the final state is not the golden one
    assert env.checks is not None and env.checks.first_missed() == "4.deposit.1"
    assert progress_text(env.checks) == "milestones 60%; first missed: 4.deposit.1"
    end = read_trace(result.trace_path).end
    assert end is not None and end.milestones is not None
    assert [(m["id"], m["step"]) for m in end.milestones] == [
        *[(f"{i}.deposit.{k}", i) for i in (1, 2, 3) for k in (1, 2)],
        *[(f"{i}.deposit.{k}", None) for i in (4, 5) for k in (1, 2)],
    ]


def test_dense_rewards_are_the_change_in_progress_and_the_last_is_the_usual_one() -> None:
    task = deposits_task()
    env = ToolEnv(tasks=[task], reward_mode="milestones")
    env.reset(options={"task": task})
    rewards = [
        env.step(f"Thought: go.\nAction: deposit\nAction Input: {json.dumps(d.arguments)}")[1]
        for d in DEPOSITS[:2]
    ]
    rewards.append(
        env.step(
            f"Thought: wrong account.\nAction: deposit\nAction Input: {json.dumps({'account_id': 'ACC-99999', 'amount': 1.0})}"
        )[1]
    )
    rewards += [
        env.step(f"Thought: go.\nAction: deposit\nAction Input: {json.dumps(d.arguments)}")[1]
        for d in DEPOSITS[2:]
    ]
    _, last, terminated, _, info = env.step(
        "Thought: I now know the final answer.\nFinal Answer: Done: five deposits."
    )
    assert rewards == pytest.approx([0.2, 0.2, 0.0, 0.2, 0.2, 0.2])
    assert terminated and last == 1.0 and info["scores"]["milestone_progress"] == 1.0


def test_the_default_mode_keeps_rewards_and_end_records_as_they_were() -> None:
    task = deposits_task()
    env = ToolEnv(tasks=[task])
    env.reset(options={"task": task})
    reward = env.step(f"Thought: go.\nAction: deposit\nAction Input: {json.dumps(DEPOSITS[0].arguments)}")[1]
    *_, info = env.step("Final Answer: Done.")
    assert reward == 0.0 and env.checks is None
    assert "milestones" not in info and "milestone_progress" not in info["scores"]


def test_bad_reward_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="reward_mode must be one of"):
        ToolEnv(reward_mode="dense")  # type: ignore[arg-type]


MINE = {
    "id": "drained-checking",
    "state": {
        "table": "bank_accounts",
        "where": {"account_id": "ACC-10001"},
        "values": {"balance_cents": START_CENTS - 10000},
    },
}


def test_a_minefield_hit_zeroes_the_reward_even_when_the_write_is_undone(tmp_path: Path) -> None:
    task = Task.model_validate(
        {
            "id": "check-balance",
            "query": "What is the balance of ACC-10001?",
            "apps": ["banking"],
            "golden": [
                {
                    "action": {
                        "type": "tool_call",
                        "name": "get_balance",
                        "arguments": {"account_id": "ACC-10001"},
                    }
                },
                {"action": {"type": "final_answer", "text": "$10,101.38"}},
            ],
            "answer": {"whitelist": [["10,101.38", "10101.38"]]},
            "minefields": [MINE],
            "clock": "2024-01-01T00:00:00Z",
        }
    )
    there = {"from_account_id": "ACC-10001", "to_account_id": "ACC-10002", "amount": 100.0}
    back = {"from_account_id": "ACC-10002", "to_account_id": "ACC-10001", "amount": 100.0}
    careless: list[Action] = [
        ToolCall(name="transfer", arguments=there),
        ToolCall(name="transfer", arguments=back),
        FinalAnswer(text="It holds $10,101.38."),
    ]
    env, result = play(task, careless, trace_dir=tmp_path)
    assert result.reward == 0.0 and result.scores["answer"] == 1.0 and result.scores["minefield_hits"] == 1.0
    end = read_trace(result.trace_path).end
    assert end is not None and end.minefields == [{"id": "drained-checking", "step": 1}]
    assert env.checks is not None and progress_text(env.checks) == "minefields hit: drained-checking (step 1)"
    _, clean = play(task, [FinalAnswer(text="It holds $10,101.38.")])
    assert clean.reward == 1.0 and clean.scores["minefield_hits"] == 0.0


def test_a_call_to_a_tool_not_offered_is_a_minefield_hit_though_the_env_refused_it() -> None:
    mine = {"id": "no-bill-paying", "call": {"tool": "pay_bill", "outcome": "any"}}
    task = deposits_task(tools=["deposit"], minefields=[mine])
    pay = ToolCall(name="pay_bill", arguments={"bill_id": "BILL-1", "from_account_id": "ACC-10001"})
    env, result = play(task, [pay, *DEPOSITS, FinalAnswer(text="Done: five deposits.")])
    assert env.error_counts["unknown_tool"] == 1
    assert result.reward == 0.0 and result.scores["minefield_hits"] == 1.0


def test_a_task_naming_an_unknown_table_is_the_tasks_error() -> None:
    task = deposits_task(milestones=[{"id": "a", "state": {"table": "bank_acounts"}}])
    env = ToolEnv(tasks=[task])
    env.reset(options={"task": task})
    with pytest.raises(Exception, match="bank_acounts"):
        env.step("Final Answer: Done.")


def test_a_write_before_the_user_answered_is_a_minefield_hit_and_after_it_is_not(tmp_path: Path) -> None:
    """The bundled multi-turn tasks: each write tool is a minefield until the user first answers (a
    guess is not what the user said); the oracle asks first and hits nothing."""
    tasks = TaskSet.load(bundled_task_sets()["multiturn"])
    task = tasks["multiturn-alarm-001"]
    assert task.minefields is not None and task.minefields[0].before_user_turns == 1
    write = next(g.action for g in task.golden if isinstance(g.action, ToolCall))
    guess: list[Action] = [write, FinalAnswer(text="Your Gym alarm is set for 06:15 on weekdays.")]
    env = ToolEnv(tasks=tasks)
    guessed = run_episode(env, ScriptedAgent(env.protocol, guess), task, trace_dir=tmp_path / "guess")
    assert guessed.reward == 0.0 and guessed.scores["minefield_hits"] == 1.0
    end = read_trace(guessed.trace_path).end  # type: ignore[arg-type]
    assert end is not None and end.minefields == [{"id": "set_alarm-before-the-user-answered", "step": 1}]
    asked = run_episode(env, OracleAgent(env.protocol), task, trace_dir=tmp_path / "asked")
    assert asked.reward == 1.0 and asked.scores["minefield_hits"] == 0.0
    # scored again from the traces alone, the user's answers counted as the env counted them
    for result, hits in ((guessed, 1), (asked, 0)):
        checks = checks_of_trace(read_trace(result.trace_path), task)  # type: ignore[arg-type]
        assert checks is not None and len(checks.hits) == hits
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        Task.model_validate(
            {
                **task.model_dump(mode="json"),
                "minefields": [{"id": "x", "call": {"tool": "set_alarm"}, "before_user_turns": 0}],
            }
        )
