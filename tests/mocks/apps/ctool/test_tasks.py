"""The CToolEval-style task fixtures: valid tasks whose golden chains replay cleanly on a fresh world,
reach the expected state and end in an answer that matches the whitelist."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from toolgym.actions import AskUser, FinalAnswer, ToolCall
from toolgym.envs.rewards import answer_matches
from toolgym.mocks.apps.ctool import resolve_app_names
from toolgym.mocks.rewards import check_assertions
from toolgym.mocks.world import MockWorld
from toolgym.tasks import Task

TASKS_FILE = Path(__file__).resolve().parents[4] / "fixtures" / "mock_tasks" / "ctool.jsonl"
CATEGORIES = {"single_tool", "multi_tool_chain", "multi_turn", "write", "no_tool_fits"}


def _load() -> list[Task]:
    lines = [line for line in TASKS_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [Task.model_validate_json(line) for line in lines]


TASKS = _load()


def test_task_set_covers_every_category() -> None:
    assert len(TASKS) >= 12
    assert len({t.id for t in TASKS}) == len(TASKS)
    counts = Counter(t.category for t in TASKS)
    assert set(counts) == CATEGORIES
    apps = {a for t in TASKS for a in t.apps or []}
    assert {"express", "messaging", "calendar", "maps", "music", "takeout", "shopping", "banking"} <= apps
    chains = {tuple(s.action.name for s in t.golden if isinstance(s.action, ToolCall)) for t in TASKS}
    assert ("geocode", "search_nearby_places", "plan_route") in chains
    assert ("search_available_rooms", "book_room") in chains


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_golden_chain_replays(task: Task) -> None:
    assert task.apps and task.tools and task.answer is not None
    with MockWorld(resolve_app_names(task.apps), seed=task.seed, clock=task.clock) as world:
        offered = {t.name for t in world.tools}
        assert set(task.tools) <= offered, set(task.tools) - offered
        start = world.state_hash()
        calls = [s.action for s in task.golden if isinstance(s.action, ToolCall)]
        for call in calls:
            assert call.name in task.tools, f"golden tool {call.name} is not offered"
            obs = world.step(call)
            assert obs.error is None, obs.text
        report = check_assertions(world, task.expected_state)
        assert report.passed, [r.detail for r in report.results if not r.passed]
        if task.category == "write" or any(world.tools.get(c.name).mutates_state for c in calls):
            assert task.expected_state, "a task that changes state says which state it expects"
            assert world.state_hash() != start
        else:
            assert world.state_hash() == start

    last = task.golden[-1].action
    assert isinstance(last, FinalAnswer)
    assert answer_matches(last.text, task.answer)
    asks = [s for s in task.golden if isinstance(s.action, AskUser)]
    if task.category == "multi_turn":
        assert asks and len(task.user_replies) == len(asks)
    else:
        assert not asks
    if task.category == "no_tool_fits":
        assert len(task.golden) == 1
        assert not any(answer_matches(f"I booked it: {t}", task.answer) for t in ("done", "ok"))
    if task.category == "multi_tool_chain":
        assert len(calls) >= 2
