"""The MTU mock-app tasks (fixtures/mock_tasks/mtu.jsonl): valid, and every golden chain replays on a
fresh world without errors, reaches its expected state and ends in an answer the whitelist accepts;
the apps are sound (check_app) and publish exactly the APIs SPECS.md lists."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from tests.mocks.apps.mtu import APPS
from toolgym.actions import AskUser, FinalAnswer, ToolCall
from toolgym.envs.agents import OracleAgent
from toolgym.envs.rewards import answer_matches
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.mocks.app import App, app_apis
from toolgym.mocks.apps.mtu import MTU_APPS
from toolgym.mocks.rewards import check_assertions
from toolgym.mocks.world import MockWorld, check_app
from toolgym.tasks import Task, TaskSet

ROOT = Path(__file__).resolve().parents[4]
TASKS_FILE = ROOT / "fixtures" / "mock_tasks" / "mtu.jsonl"
SPECS = ROOT / "mocks" / "apps" / "mtu" / "SPECS.md"
CATEGORIES = {"single_tool", "multi_tool_chain", "multi_turn", "write", "no_tool_fits"}
TASKS = TaskSet.load(TASKS_FILE).tasks


@pytest.mark.parametrize("cls", MTU_APPS, ids=lambda c: c.name)
def test_app_is_sound(cls: type[App]) -> None:
    assert check_app(cls, clock=TASKS[0].clock) == []


def test_specs_table_matches_the_published_apis() -> None:
    # the API table's rows: | API | app | required | optional | rows | notes |
    rows = [
        line.split("|") for line in SPECS.read_text(encoding="utf-8").splitlines() if line.startswith("| ")
    ]
    listed = {r[1].strip(): r[2].strip() for r in rows if len(r) == 8 and r[1].strip() != "API"}
    published = {a.name: cls.name for cls in MTU_APPS for a in app_apis(cls)}
    assert {k: v for k, v in listed.items() if v != "-"} == published
    assert len(published) == 95


def test_task_file_covers_every_category() -> None:
    for line in TASKS_FILE.read_text(encoding="utf-8").splitlines():
        Task.model_validate_json(line)
    counts = Counter(t.category for t in TASKS)
    assert len(TASKS) >= 10 and set(counts) == CATEGORIES, counts
    assert all(re.fullmatch(r"mtu-[a-z-]+-\d{3}", t.id) for t in TASKS)
    assert all(t.apps and all(a in APPS for a in t.apps) for t in TASKS)


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_golden_chain_replays(task: Task) -> None:
    assert task.apps and task.tools and task.answer is not None
    world = MockWorld(task.apps, seed=task.seed, clock=task.clock)  # by registry name
    start = world.state_hash()
    assert set(task.tools) <= {t.name for t in world.tools}
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
    writes = [c for c in calls if world.tools.get(c.name).mutates_state]
    if task.category == "write":
        assert writes and task.expected_state
    if task.category == "multi_turn":
        assert asks and len(task.user_replies) >= len(asks)
    if task.category == "multi_tool_chain":
        assert len(calls) >= 2
    if task.category == "no_tool_fits":
        assert not calls and len(task.golden) == 1
    if not writes:
        assert world.state_hash() == start  # read-only tasks change nothing
    world.close()


def test_the_oracle_scores_full_marks_through_tool_env() -> None:
    """The whole set through ToolEnv: registry lookup, scripted user replies, state rewards."""
    env = ToolEnv(tasks=TASKS)
    try:
        for task in TASKS:
            result = run_episode(env, OracleAgent(env.protocol), task)
            assert result.reward == 1.0, (task.id, result.scores)
            if task.expected_state:
                assert result.scores["assertions"] == 1.0 and result.scores["state_match"] == 1.0
    finally:
        env.close()
