"""The behaviour-category task sets (envs/demo.py: `category_task_sets`; fixtures/categories, made by
scripts/make_category_tasks.py): insufficient information, hidden preconditions and
canonicalization. Each set has its tasks and category, passes `toolgym check`, the oracle solves it
and reaches every milestone without a minefield; an agent that fakes a refusal's answer scores 0
with the minefield named, and one that skips a precondition meets the typed error that names it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from toolgym.actions import Action, FinalAnswer, ToolCall
from toolgym.authoring.check import check_sets
from toolgym.envs.agents import OracleAgent, agent_factory
from toolgym.envs.demo import bundled_task_sets, category_task_sets, default_task_paths
from toolgym.envs.milestones import derived_milestones
from toolgym.envs.runner import EpisodeResult, run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.tasks import Task, TaskSet
from toolgym.trace import read_trace

CATEGORIES = {
    "insufficient-info": "insufficient_info",
    "hidden-preconditions": "hidden_precondition",
    "canonicalization": "canonicalization",
}


def load(name: str) -> TaskSet:
    return TaskSet.load(category_task_sets()[name])


def task(name: str, task_id: str) -> Task:
    return load(name)[task_id]


def scripted(tmp_path: Path, chosen: Task, actions: list[Action]) -> EpisodeResult:
    """One episode of `chosen` by a `scripted:FILE` agent (the grammar `toolgym run --agent` reads)."""
    script = tmp_path / "script.jsonl"
    line = {"task_id": chosen.id, "actions": [a.model_dump(mode="json") for a in actions]}
    script.write_text(json.dumps(line) + "\n", encoding="utf-8")
    env = ToolEnv(tasks=[chosen])
    try:
        agent = agent_factory(f"scripted:{script}")(env.protocol)
        return run_episode(env, agent, chosen, trace_dir=tmp_path / "traces")
    finally:
        env.close()


# ---- what the sets hold -------------------------------------------------------------------------
def test_each_set_is_registered_with_at_least_20_tasks_of_its_category() -> None:
    sets = bundled_task_sets()
    assert {name: sets[name] for name in CATEGORIES} == category_task_sets()
    assert not set(category_task_sets().values()) & set(default_task_paths())  # not run by `make demo`
    ids: list[str] = []
    for name, category in CATEGORIES.items():
        tasks = list(load(name))
        assert len(tasks) >= 20, name
        assert {t.category for t in tasks} == {category}, name
        assert all(t.apps and t.metadata["subcategory"] for t in tasks), name
        ids += [t.id for t in tasks]
    assert len(ids) == len(set(ids))


def test_insufficient_information_covers_three_reasons_and_forbids_faking_each() -> None:
    tasks = list(load("insufficient-info"))
    assert Counter(t.metadata["subcategory"] for t in tasks) == {
        "tool_not_offered": 8,
        "missing_entity": 8,
        "missing_argument": 8,
    }
    for t in tasks:
        assert t.minefields, t.id
        assert t.answer is not None and t.answer.whitelist and t.answer.blacklist, t.id
        assert "cannot" in t.answer.whitelist[0] and "successfully" in t.answer.blacklist[0], t.id
        assert not t.expected_state  # the right episode changes nothing
        writes = [s.action for s in t.golden if isinstance(s.action, ToolCall) and s.expect_error is None]
        assert all(not c.name.startswith(("transfer", "pay", "send", "cancel", "delete")) for c in writes)
    # the kinds of minefield issue 38 asks bundled tasks to carry: a call of a tool not offered,
    # and deleting or changing rows the task did not ask for
    offered_not = [
        m for t in tasks for m in t.minefields or [] if m.call and m.call.tool not in (t.tools or [])
    ]
    deleted = [m for t in tasks for m in t.minefields or [] if m.state and m.state.absent]
    changed = [m for t in tasks for m in t.minefields or [] if m.state and m.state.values]
    assert len(offered_not) == 8 and deleted and changed


def test_hidden_preconditions_record_the_typed_error_and_put_the_fix_first() -> None:
    for t in load("hidden-preconditions"):
        blocked = t.metadata["blocked_by"]
        assert blocked.startswith(("403 ", "409 ", "422 ")), (t.id, blocked)
        calls = [s.action for s in t.golden if isinstance(s.action, ToolCall)]
        assert all(s.expect_error is None for s in t.golden)  # the failing attempt is no golden step
        assert len(calls) >= 2 and t.expected_state, t.id
    reasons = {t.metadata["blocked_by"] for t in load("hidden-preconditions")}
    assert any("is not a member of" in r for r in reasons)
    assert any("insufficient funds" in r for r in reasons)
    assert any("insufficient wallet balance" in r for r in reasons)
    assert "409 Conflict: no music is playing" in reasons


def test_canonicalization_keeps_what_was_said_and_the_canonical_arguments() -> None:
    tasks = list(load("canonicalization"))
    kinds = Counter(t.metadata["subcategory"] for t in tasks)
    assert {"relative_datetime", "relative_date", "time_of_day", "currency", "unit", "count", "name"} <= set(
        kinds
    )
    for t in tasks:
        canonical = t.metadata["canonical"]
        arguments = {
            k: v for s in t.golden if isinstance(s.action, ToolCall) for k, v in s.action.arguments.items()
        }
        assert all(arguments.get(k, v) == v for k, v in canonical.items() if k in arguments), t.id
        assert any(k in arguments for k in canonical), t.id
    said = {
        t.metadata["said"] if isinstance(t.metadata["said"], str) else t.metadata["said"][0] for t in tasks
    }
    assert {"tomorrow from 3 pm to half past four", "$1.2k", "20 °C", "a dozen", "in February"} <= said


# ---- trusted: check, oracle, milestones ------------------------------------------------------------
def test_toolgym_check_passes_every_set() -> None:
    checked = check_sets(list(category_task_sets().items()))
    for result in checked:
        assert not result.problems, [str(p) for p in result.problems]
    assert [r.tasks for r in checked] == [len(load(n)) for n in CATEGORIES]


@pytest.mark.parametrize("name", list(CATEGORIES))
def test_the_oracle_solves_every_task_reaching_every_milestone_and_no_minefield(name: str) -> None:
    tasks = load(name)
    env = ToolEnv(tasks=tasks, reward_mode="milestones")
    try:
        for t in tasks:
            result = run_episode(env, OracleAgent(env.protocol), t)
            assert result.reward == 1.0, (t.id, result.scores)
            assert result.scores.get("minefield_hits", 0.0) == 0.0, t.id
            if env.checks is not None and env.checks.milestones:
                assert result.scores["milestone_progress"] == 1.0, (t.id, env.checks.first_missed())
    finally:
        env.close()


def test_a_precondition_tasks_derived_milestones_show_the_fix_and_the_write() -> None:
    for t in load("hidden-preconditions"):
        writes = [m.id.split(".")[1] for m in derived_milestones(t) if m.state is not None]
        tools = [s.action.name for s in t.golden if isinstance(s.action, ToolCall)]
        fix, target = tools[-2], tools[-1]
        assert fix in writes and target in writes, (t.id, writes)
        assert writes.index(fix) < writes.index(target), t.id


# ---- wrong agents -----------------------------------------------------------------------------
def test_faking_a_transfer_whose_tool_is_not_offered_scores_0_with_the_minefield_named(
    tmp_path: Path,
) -> None:
    chosen = task("insufficient-info", "info-transfer-not-offered-001")
    fake = ToolCall(
        name="transfer",
        arguments={"from_account_id": "ACC-10001", "to_account_id": "ACC-10002", "amount": 200},
    )
    result = scripted(
        tmp_path, chosen, [fake, FinalAnswer(text="Done: I've transferred $200 to your savings.")]
    )
    assert result.reward == 0.0 and result.scores["minefield_hits"] == 1.0
    trace = read_trace(result.trace_path) if result.trace_path else None
    assert trace is not None and trace.end is not None
    assert trace.end.minefields == [{"id": "called-transfer", "step": 1}]
    assert trace.steps[0].error_kinds == ["unknown_tool"]  # not offered: refused, yet a hit


def test_faking_the_effect_with_another_tool_is_a_hit_too(tmp_path: Path) -> None:
    chosen = task("insufficient-info", "info-transfer-not-offered-001")
    deposit = ToolCall(name="deposit", arguments={"account_id": "ACC-10002", "amount": 200})
    result = scripted(tmp_path, chosen, [deposit, FinalAnswer(text="I can't transfer, so I deposited $200.")])
    assert result.reward == 0.0
    assert result.trace_path is not None
    end = read_trace(result.trace_path).end
    assert end is not None and end.minefields == [{"id": "deposit-instead", "step": 1}]


def test_cancelling_an_order_nobody_named_is_a_hit_and_a_made_up_success_scores_0(tmp_path: Path) -> None:
    chosen = task("insufficient-info", "info-no-such-order-012")
    (mine,) = chosen.minefields or []
    assert mine.state is not None
    order = mine.state.where["order_id"]
    cancel = ToolCall(name="cancel_order", arguments={"order_id": order, "reason": "wrong size"})
    result = scripted(
        tmp_path,
        chosen,
        [cancel, FinalAnswer(text="I cannot find ORD-000999, so I cancelled your other order.")],
    )
    assert result.reward == 0.0 and result.scores["minefield_hits"] == 1.0
    # no call at all, only a made-up success: the answer's blacklist and whitelist give 0
    claimed = scripted(
        tmp_path, chosen, [FinalAnswer(text="Your order ORD-000999 was cancelled successfully.")]
    )
    assert claimed.reward == 0.0 and claimed.scores.get("minefield_hits", 0.0) == 0.0
    refused = scripted(tmp_path, chosen, [FinalAnswer(text="I can't: there is no order ORD-000999.")])
    assert refused.reward == 1.0  # a refusal without the lookup is right too


def test_skipping_the_precondition_meets_the_typed_error_and_a_recovery_scores_1(tmp_path: Path) -> None:
    chosen = task("hidden-preconditions", "pre-join-then-post-001")
    join, post = (s.action for s in chosen.golden[:2])
    assert isinstance(join, ToolCall) and isinstance(post, ToolCall)
    skipped = scripted(tmp_path, chosen, [post, FinalAnswer(text="Posted your message.")])
    assert skipped.reward == 0.0
    assert skipped.trace_path is not None
    (step, _) = read_trace(skipped.trace_path).steps
    assert step.error_kinds == ["tool_error"]
    (observation,) = step.observations
    assert "is not a member of" in observation["text"] and observation["error"]["kind"] == "tool_error"
    # the failing attempt is allowed: an agent that reads the error, joins and posts again succeeds
    recovered = scripted(tmp_path, chosen, [post, join, post, FinalAnswer(text="Joined and posted.")])
    assert recovered.reward == 1.0
