"""The dynamic task sets (envs/demo.py: `dynamic_task_sets`; fixtures/dynamic, made by
scripts/make_dynamic_tasks.py): act at or after a time, adapt when the world changes, wait for a
reply. The oracle scores 1 on every task; agents that ignore notifications score less on every
task; two runs write the same trace bytes.

The notification-ignoring agents replay each task's own golden chain, so they call the right
tools with the right arguments and give the right final answer; what they leave out is the one
thing these tasks test, decided by a rule that is the same for every task:

- `on_request_only`: acts on the initial request alone: the golden steps before the first `wait`
  (what can be done before anything happens), then the golden final answer. It never lets time
  pass, so it never sees a notification and never does what one calls for.
- `never_waits`: every golden step but the `wait` calls: it does what the reply, the change or
  the moment calls for without waiting for it, acting on what it could not know yet.

A task either agent passes would not test what it claims to, so each must fail every task."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from toolgym.actions import Action, ToolCall
from toolgym.envs.agents import OracleAgent, ScriptedAgent
from toolgym.envs.demo import DYNAMIC_SETS, benchmark_task_sets, default_task_paths, dynamic_task_sets
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.mocks.events import WAIT_TOOL
from toolgym.tasks import Task, TaskSet

SETS = {
    "dynamic-at-time": "at_time",
    "dynamic-world-changes": "world_changes",
    "dynamic-wait-for-reply": "wait_for_reply",
}


def load(name: str) -> TaskSet:
    return TaskSet.load(dynamic_task_sets()[name])


def _is_wait(action: Action) -> bool:
    return isinstance(action, ToolCall) and action.name == WAIT_TOOL


def on_request_only(task: Task) -> list[Action]:
    """The golden steps before the first wait, then the golden final answer."""
    steps = [s.action for s in task.golden]
    first_wait = next(i for i, a in enumerate(steps) if _is_wait(a))
    return [*steps[:first_wait], steps[-1]]


def never_waits(task: Task) -> list[Action]:
    """The golden chain without its wait calls."""
    return [s.action for s in task.golden if not _is_wait(s.action)]


# ---- what the sets hold -------------------------------------------------------------------------
def test_each_set_is_registered_apart_with_at_least_10_dynamic_tasks() -> None:
    sets = dynamic_task_sets()
    assert set(sets) == set(SETS) == set(DYNAMIC_SETS)
    assert not set(sets.values()) & set(default_task_paths())  # not run by `make demo`
    assert not set(sets) & set(benchmark_task_sets())
    tasks = [t for name in SETS for t in load(name)]
    for name, category in SETS.items():
        chosen = list(load(name))
        assert len(chosen) >= 10, name
        assert {t.category for t in chosen} == {category}, name
    assert len(tasks) >= 30 and len({t.id for t in tasks}) == len(tasks)
    for t in tasks:
        assert t.dynamic and t.events and t.time is not None, t.id
        assert any(_is_wait(s.action) for s in t.golden), t.id
        assert t.minefields and all(m.window is not None for m in t.minefields), t.id
        assert t.milestones and all(m.window is not None for m in t.milestones), t.id
        assert t.expected_state and t.answer is not None and t.answer.whitelist, t.id
        # every golden call carries what the env answered it
        assert all(s.expected is not None for s in t.golden if isinstance(s.action, ToolCall)), t.id
    # varied: apps, people and start times, and no two queries alike
    assert len({app for t in tasks for app in t.apps or ()}) >= 6
    assert len({t.clock for t in tasks}) >= 20
    assert len({t.query for t in tasks}) == len(tasks)


# ---- the oracle and the agents that ignore notifications ------------------------------------------
@pytest.mark.parametrize("name", list(SETS))
def test_the_oracle_scores_1_and_agents_ignoring_notifications_fail_every_task(name: str) -> None:
    tasks = load(name)
    env = ToolEnv(tasks=tasks)
    ignoring: dict[str, Callable[[Task], list[Action]]] = {
        "on_request_only": on_request_only,
        "never_waits": never_waits,
    }
    try:
        for t in tasks:
            oracle = run_episode(env, OracleAgent(env.protocol), t)
            assert oracle.reward == 1.0, (t.id, oracle.scores)
            assert env.checks is not None and env.checks.progress == 1.0 and not env.checks.hits, t.id
            for agent_name, actions in ignoring.items():
                result = run_episode(env, ScriptedAgent(env.protocol, actions(t)), t)
                assert result.reward < 1.0, (t.id, agent_name, result.scores)
            # acting before the moment, the change or the reply is what the minefields catch
            assert env.checks is not None and env.checks.hits, t.id
    finally:
        env.close()


@pytest.mark.parametrize("name", list(SETS))
def test_the_golden_results_are_what_the_env_answers_the_oracle(name: str) -> None:
    tasks = load(name)
    env = ToolEnv(tasks=tasks, protocol="json")
    try:
        for t in tasks:
            env.reset(options={"task": t.id})
            for step in t.golden:
                if not isinstance(step.action, ToolCall):
                    continue
                env.step(step.action)
                answered = env.episode.steps[-1].observations if env.episode is not None else []
                assert answered[0].content == step.expected, (t.id, step.action.name)
    finally:
        env.close()


def test_two_runs_write_byte_identical_traces(tmp_path: Path) -> None:
    tasks = load("dynamic-wait-for-reply")
    traces: list[list[bytes]] = []
    for run in ("a", "b"):
        env = ToolEnv(tasks=tasks)
        try:
            paths = [
                run_episode(env, OracleAgent(env.protocol), t, trace_dir=tmp_path / run).trace_path
                for t in tasks
            ]
        finally:
            env.close()
        traces.append([p.read_bytes() for p in paths if p is not None])
    assert len(traces[0]) == len(tasks) and traces[0] == traces[1]
    assert b'"events"' in traces[0][0] and b'"clock"' in traces[0][0]  # the world moved in them
