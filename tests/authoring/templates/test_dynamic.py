"""The dynamic templates (authoring/templates/dynamic.py): each gives tasks that pass `toolgym check`
and carry events, a time policy and notifications; the oracle scores 1 on them in a real ToolEnv,
with its events fired and notified as the draft met them; an agent that ignores the notifications
(its chain cut at the first one, waits left out) fails every one; the same seed gives the same
bytes; `categories=["dynamic"]` keeps only them; and a template whose events change nothing the
agent needs is dropped."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from tests.authoring.templates.template_checks import (
    assert_deterministic,
    assert_every_template_passes,
    generated,
)
from toolgym.actions import Action, ToolCall
from toolgym.authoring.check import TaskChecker
from toolgym.authoring.generate import Draft, Generated, Template, generate
from toolgym.authoring.templates.banking import TEMPLATES as BANKING
from toolgym.authoring.templates.dynamic import DYNAMIC, TEMPLATES
from toolgym.envs.timed_chain import blind_chains
from toolgym.envs.tool_env import ToolEnv
from toolgym.mocks.world import MockWorld
from toolgym.tasks import Task


@pytest.fixture(scope="module")
def made() -> Generated:
    return assert_every_template_passes(TEMPLATES)


def play(task: Task, actions: Sequence[Action]) -> tuple[float, list[dict[str, Any]], list[str]]:
    """`actions` played in a real ToolEnv on `task`: the last reward, the events fired and the
    notifications the agent read."""
    env = ToolEnv(tasks=[task], protocol="json")
    try:
        env.reset(options={"task": task.id})
        reward, events, notes = 0.0, [], []
        for action in actions:
            _, reward_, terminated, truncated, info = env.step(action)
            reward = float(reward_)
            events += info.get("events", [])
            notes += [o["text"] for o in info["observations"] if o["type"] == "notification"]
            if terminated or truncated:
                break
        return reward, events, notes
    finally:
        env.close()


def test_every_template_gives_checked_dynamic_tasks(made: Generated) -> None:
    tasks = made.all_tasks
    assert {t.category for t in tasks} == {DYNAMIC}
    assert {a for t in tasks for a in t.metadata["apps"]} == {"banking", "shopping", "messaging"}
    triggers = {trigger for t in tasks for trigger in t.metadata["dynamic"]}
    assert {"at", "after_step", "when"} <= triggers
    for task in tasks:
        assert task.dynamic and task.events and task.time is not None
        assert task.time.per_output_token_s == 0  # the oracle's output costs no time under any protocol
        assert all(e.notify is not None for e in task.events)
        assert "wait" not in (task.tools or [])  # the env offers its own
    waiting = {t.metadata["template"] for t in tasks if any(_waits(s.action) for s in t.golden)}
    assert waiting == {t.name for t in TEMPLATES} - {"shopping.dynamic_sold_out_switch"}


def _waits(action: Action) -> bool:
    return isinstance(action, ToolCall) and action.name == "wait"


def test_the_oracle_scores_one_and_reads_the_notifications(made: Generated) -> None:
    for task in made.all_tasks:
        reward, events, notes = play(task, [s.action for s in task.golden])
        assert reward == 1.0, task.id
        fired = {e["id"] for e in events}
        assert fired == {e.id for e in task.events or []}, task.id
        assert all(call["ok"] for e in events for call in e["calls"]), task.id
        assert notes and all(n.startswith("Notification (") for n in notes), task.id


def test_an_agent_that_ignores_the_notifications_fails_every_task(made: Generated) -> None:
    with TaskChecker() as checker:
        for task in made.all_tasks:
            assert checker.blind_passes(task) == [], task.id
            with MockWorld(task.apps or [], seed=task.seed, clock=task.clock) as world:
                chains = blind_chains(world, task)
            blind = chains["ignores notifications"]
            assert not any(_waits(a) for a in blind) and len(blind) < len(task.golden)
            reward, _, _ = play(task, blind)
            assert reward < 1.0, task.id


def test_acting_before_the_allowed_time_hits_the_minefield(made: Generated) -> None:
    timed = [t for t in made.all_tasks if t.metadata["template"].endswith("_at_time")]
    assert len(timed) == 4
    for task in timed:
        (mine,) = task.minefields or []
        assert mine.window is not None and mine.window.until_s is not None
        rushed = [s.action for s in task.golden if not _waits(s.action)]
        reward, _, _ = play(task, rushed)
        assert reward == 0.0, task.id


def test_the_same_arguments_give_the_same_tasks() -> None:
    assert_deterministic(TEMPLATES)


def test_only_the_dynamic_category_gives_dynamic_tasks() -> None:
    mixed = [*BANKING, *TEMPLATES]
    asked = generate([], 6, seed=2, templates=mixed, jobs=1, categories=[DYNAMIC])
    assert len(asked.tasks) == 6 and all(t.dynamic and t.category == DYNAMIC for t in asked.tasks)
    plain = generate([], 6, seed=2, templates=BANKING, jobs=1)
    assert not any(t.dynamic for t in plain.tasks)


def balance_with_a_pointless_reminder(d: Draft) -> None:
    account = d.pick("SELECT account_id FROM bank_accounts WHERE status = 'active' ORDER BY account_id")
    d.event("reminder", at_s=600, notify="Reminder: coffee with Sam at noon.")
    d.knows(account["account_id"])
    d.query(["What is the balance of {a}? Wait ten minutes first."], a=account["account_id"])
    result = d.call("get_balance", account_id=account["account_id"])
    d.wait(900)
    d.answer(f"{account['account_id']} holds ${result['balance']:.2f}.", f"{result['balance']:.2f}")


def test_a_template_whose_events_the_agent_can_ignore_gives_no_task() -> None:
    template = Template("t.pointless", ("banking",), balance_with_a_pointless_reminder, category=DYNAMIC)
    result = generated([template], per_template=2)
    assert result.tasks == []
    assert any("an agent that ignores notifications passes it" in r for r in result.dropped), result.dropped


def first_step_then_event(d: Draft) -> None:
    d.call("list_payees")
    d.event("late", at_s=60, notify="too late to declare")


def test_events_come_before_the_first_step_and_waits_after_them() -> None:
    with MockWorld(["banking"], seed=0) as world:
        d = Draft(Template("t.late", ("banking",), first_step_then_event), world, random.Random(0))
        with pytest.raises(ValueError, match="wait is a step of a dynamic draft"):
            d.wait(60)
        with pytest.raises(ValueError, match="first event before its first step"):
            first_step_then_event(d)
