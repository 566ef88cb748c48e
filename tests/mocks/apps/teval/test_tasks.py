"""The T-Eval mock-app tasks (fixtures/mock_tasks/teval.jsonl): valid, and every golden chain replays on a
fresh world without errors, reaches its expected state and ends in an answer the whitelist accepts."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from toolgym.actions import AskUser, FinalAnswer, ToolCall
from toolgym.envs.agents import OracleAgent
from toolgym.envs.rewards import answer_matches
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.mocks.apps.teval import resolve_app_names, teval_prefixes
from toolgym.mocks.rewards import check_assertions
from toolgym.mocks.world import MockWorld
from toolgym.tasks import Task, TaskSet

TASKS_FILE = Path(__file__).resolve().parents[4] / "fixtures" / "mock_tasks" / "teval.jsonl"
CATEGORIES = {"single_tool", "multi_tool_chain", "multi_turn", "write", "no_tool_fits"}
TASKS = TaskSet.load(TASKS_FILE).tasks


def test_task_file_covers_every_category() -> None:
    for line in TASKS_FILE.read_text(encoding="utf-8").splitlines():
        Task.model_validate_json(line)
    counts = Counter(t.category for t in TASKS)
    assert len(TASKS) >= 10 and set(counts) == CATEGORIES, counts
    assert all(t.id.startswith("teval-") for t in TASKS)
    assert all(t.apps and all(a.startswith("teval_") for a in t.apps) for t in TASKS)


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_golden_chain_replays(task: Task) -> None:
    assert task.apps and task.tools and task.answer is not None
    world = MockWorld(
        resolve_app_names(task.apps), seed=task.seed, clock=task.clock, prefixes=teval_prefixes(task.apps)
    )
    start = world.state_hash()
    offered = {t.name for t in world.tools}
    assert set(task.tools) <= offered
    calls = [s.action for s in task.golden if isinstance(s.action, ToolCall)]
    asks = [s.action for s in task.golden if isinstance(s.action, AskUser)]
    for call in calls:
        assert call.name in task.tools, call.name
        obs = world.step(call)
        assert obs.error is None, f"{call.name}: {obs.text}"
    last = task.golden[-1].action
    assert isinstance(last, FinalAnswer) and answer_matches(last.text, task.answer), last
    report = check_assertions(world, task.expected_state)
    assert report.passed, report.results
    if task.category == "write":
        assert calls and any(world.tools.get(c.name).mutates_state for c in calls) and task.expected_state
    if task.category == "multi_turn":
        assert asks and len(task.user_replies) >= len(asks)
    if task.category == "multi_tool_chain":
        assert len(calls) >= 2
    if task.category == "no_tool_fits":
        assert not calls and len(task.golden) == 1
        assert world.state_hash() == start
    if not task.expected_state:
        assert world.state_hash() == start  # read-only tasks change nothing


def test_the_oracle_scores_full_marks_through_tool_env() -> None:
    """The whole set through ToolEnv (registry lookup, scripted user replies, state rewards)."""
    env = ToolEnv(tasks=TASKS)
    for task in TASKS:
        result = run_episode(env, OracleAgent(env.protocol), task)
        assert result.reward == 1.0, (task.id, result.scores)
        if task.expected_state:
            assert result.scores["assertions"] == 1.0 and result.scores["state_match"] == 1.0
    env.close()
