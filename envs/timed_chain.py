"""A golden chain run in simulated time, step by step, as ToolEnv runs an episode of a dynamic task.

A task with events or a time policy (`Task.dynamic`) moves on its own: its events fire between and
after the agent's steps (`toolgym.mocks.events.Timeline`). Replaying its golden chain call by call
on a bare world, as a static task's is replayed, fires none of them, so what the chain reads and the
state it ends in are not the episode's. `TimedChain` runs each golden step as ToolEnv's `step` does:
the turn's time passes (`begin_step`, events due meanwhile fire), the action runs (the env's `wait`
and `current_time` through the timeline, the apps' tools on the world), then `end_step` fires what
waits on the step. The generator drafts dynamic tasks with it, `toolgym check` and the state reward
replay their chains with it (`replay_timed`).

A step's output cost is counted on the action itself (`output_tokens` of its JSON), not on the text
a protocol would render: a task whose time policy charges per output token replays close to, not
exactly as, an episode under a given protocol (the generator's tasks charge per step only).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from toolgym.actions import Action, Observation, ToolCall
from toolgym.envs.milestones import state_fact_holds
from toolgym.mocks.events import TIMELINE_EXTRA, TIMELINE_TOOLSET, WAIT_TOOL, Timeline
from toolgym.tasks import Task

if TYPE_CHECKING:
    from toolgym.mocks.world import MockWorld


class TimedChain:
    """Actions run one env step each on `world` (reset to the task's seed and clock by the caller),
    with the task's events and time policy. `notified[i]` says whether step i+1 brought the agent
    a notification (at the env's default verbosity, "medium")."""

    def __init__(self, task: Task, world: MockWorld) -> None:
        self.world = world
        self.timeline = self._timeline(task)
        self.index = 0
        self.notified: list[bool] = []
        self.fired: list[dict[str, Any]] = []  # the events' trace records, in the order they fired

    def _timeline(self, task: Task) -> Timeline:
        world = self.world
        return Timeline(task, world, holds=lambda fact: state_fact_holds(fact, world))

    def retime(self, task: Task) -> None:
        """The task's events or time policy changed (a draft declared one more): what fired so far
        is in the world, so a new timeline over it carries on where this one stood."""
        self.timeline = self._timeline(task)

    def step(self, action: Action, *, run: bool = True) -> Observation | None:
        """One env step: the turn's time passes, the action runs (a tool call's observation is
        returned; other actions, and a call with `run` false, run nothing here), then what waits
        on the step fires."""
        self.index += 1
        self.timeline.begin_step(self.index, action.model_dump(mode="json"))
        obs = self._run(action) if isinstance(action, ToolCall) and run else None
        step = self.timeline.end_step(self.index)
        self.notified.append(bool(step.notifications))
        self.fired += step.events
        return obs

    def _run(self, call: ToolCall) -> Observation:
        if call.name in TIMELINE_TOOLSET:
            ctx = dataclasses.replace(self.world.context, extras={TIMELINE_EXTRA: self.timeline})
            return TIMELINE_TOOLSET.call(call, ctx)
        return self.world.step(call)


def replay_timed(world: MockWorld, task: Task) -> tuple[list[Observation], list[dict[str, Any]]]:
    """The task's golden chain run step by step on `world` in simulated time; the observations of
    its tool calls and the events that fired (their trace records, calls with outcomes). A call that fails where the chain does not say so (`expect_error`), or succeeds
    where it says it fails, raises GoldenReplayError, as `toolgym.mocks.rewards.replay_calls` does
    for a static chain; a call of a tool neither the world nor the timeline has takes its step's
    time and runs nothing (it cannot touch the world's state)."""
    from toolgym.mocks.rewards import GoldenReplayError

    chain = TimedChain(task, world)
    observations: list[Observation] = []
    for index, step in enumerate(task.golden):
        action = step.action
        if isinstance(action, ToolCall) and not _known(world, action):
            chain.step(action, run=False)
            continue
        obs = chain.step(action)
        if obs is None:
            continue
        if (obs.error.kind if obs.error is not None else None) != step.expect_error:
            assert isinstance(action, ToolCall)
            raise GoldenReplayError(index, action, obs, step.expect_error)
        observations.append(obs)
    return observations, chain.fired


def blind_chains(world: MockWorld, task: Task) -> dict[str, list[Action]]:
    """What agents that miss the point of a dynamic task would do, its golden chain cut down (run
    on `world`, reset by the caller, to find where the notifications come): "ignores
    notifications" stops at the first step that brings one (its wait calls left out) and gives
    the golden final answer; "never waits" is the chain without its wait calls. A task whose chain
    gets no notification has no first of them; one without a wait call has no second."""
    chain = TimedChain(task, world)
    for step in task.golden:
        chain.step(step.action, run=isinstance(step.action, ToolCall) and _known(world, step.action))
    actions = [step.action for step in task.golden]
    final = actions[-1:] if actions and not isinstance(actions[-1], ToolCall) else []
    out: dict[str, list[Action]] = {}
    if any(chain.notified):
        # the steps up to the one the first notification came with (the final answer at most)
        head = actions[: min(chain.notified.index(True) + 1, len(actions) - len(final))]
        out["ignores notifications"] = [a for a in head if not _waits(a)] + final
    if any(_waits(a) for a in actions):
        out["never waits"] = [a for a in actions if not _waits(a)]
    return out


def _waits(action: Action) -> bool:
    return isinstance(action, ToolCall) and action.name == WAIT_TOOL


def _known(world: MockWorld, call: ToolCall) -> bool:
    return call.name in world.tools or call.name in TIMELINE_TOOLSET
