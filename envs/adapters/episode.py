"""One ToolEnv episode driven turn by turn with a model's replies, as the RL libraries' environments
drive theirs: reset on a task, step with each reply, end with the episode's reward. Each episode
writes its trace with the runner's pieces (`trace_header`, `step_fields`, `trace_end`), so a trace
written under an adapter reads like `toolgym run`'s and the same actions score the same."""

from __future__ import annotations

import functools
import itertools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolgym.envs.demo import resolve_task_set
from toolgym.envs.runner import step_fields, trace_end, trace_header, trace_name
from toolgym.envs.tool_env import RewardMode, ToolEnv
from toolgym.tasks import Task, TaskSet
from toolgym.tools import ToolSet
from toolgym.trace import TraceWriter

Message = dict[str, str]
_episodes = itertools.count(1)  # trace names stay apart when many envs share a folder


@dataclass(frozen=True)
class Turn:
    """What one reply did: the env's answer (the next user message), the reward (the episode's,
    once done; 0 before) and whether the episode is over."""

    observation: str
    reward: float
    done: bool
    info: dict[str, Any]


class _Named:
    """The trace header's agent: the adapter, since the agent itself runs in the RL library."""

    def __init__(self, name: str) -> None:
        self.name = name

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        raise NotImplementedError("the agent runs in the RL library")

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        raise NotImplementedError("the agent runs in the RL library")


def load_env(
    tasks: str | Path | TaskSet,
    *,
    tools: ToolSet | None = None,
    protocol: str = "react",
    max_steps: int = 10,
    reward_mode: RewardMode = "final",
) -> ToolEnv:
    """A ToolEnv over a task set given by name (bundled or a plug-in's), file or TaskSet, with the
    registered tools (`toolgym tools`) unless `tools` is given; `reward_mode="milestones"`: dense
    rewards (each step's change in milestone progress)."""
    task_set = tasks if isinstance(tasks, TaskSet) else resolve_task_set(tasks)
    return ToolEnv(
        registered_tools() if tools is None else tools,
        task_set,
        protocol=protocol,
        max_steps=max_steps,
        reward_mode=reward_mode,
    )


@functools.cache
def registered_tools() -> ToolSet:
    """The registered tools (`toolgym tools`), made once per process: every env shares them (a
    tool's model backend loads once)."""
    from toolgym.toolservers.registry import default_toolset

    return default_toolset()


class TextEpisode:
    """A ToolEnv stepped with replies; `trace_dir`: where each episode's trace goes (None: none)."""

    def __init__(self, env: ToolEnv, *, agent: str, trace_dir: str | Path | None = None) -> None:
        self.env = env
        self.agent = _Named(agent)
        self.trace_dir = Path(trace_dir) if trace_dir is not None else None
        self.trace_path: Path | None = None
        self.reward: float | None = None
        self.scores: dict[str, float] = {}  # the reward's parts, once the episode is over
        self.steps = 0
        self._writer: TraceWriter | None = None
        self._hash_before: str | None = None

    def reset(self, task_id: str, seed: int | None = None) -> list[Message]:
        """A new episode on `task_id`; the chat it opens with: the protocol's instructions (the
        tools and the reply format) as the system message, the task's query as the user's."""
        obs, info = self.env.reset(seed=seed, options={"task": task_id})
        task = self.env.task
        assert task is not None
        self.reward = None
        self.scores, self.steps = {}, 0
        self._hash_before = info.get("state_hash")
        self.trace_path = None
        if self.trace_dir is not None:
            self.trace_dir.mkdir(parents=True, exist_ok=True)
            header = trace_header(
                self.env, self.agent, task, seed, {"max_steps": task.max_steps or self.env.max_steps}
            )
            name = f"{self.agent.name}-{os.getpid()}-{next(_episodes)}.{trace_name(task.id, seed)}"
            self._writer = TraceWriter(self.trace_dir / name, header)
            self.trace_path = self.trace_dir / name
        return [{"role": "system", "content": info["instructions"]}, {"role": "user", "content": obs}]

    @property
    def done(self) -> bool:
        return self.reward is not None

    def step(self, reply: Any) -> Turn:
        """One reply of the model (text, or a chat message for the openai protocol)."""
        if self.env.task is None:
            raise RuntimeError("reset() first")
        if self.reward is not None:
            raise RuntimeError("the episode is over; reset() first")
        obs, reward, terminated, truncated, info = self.env.step(reply)
        if self._writer is not None:
            self._writer.step(step_fields(reply, info, self._hash_before))
        self._hash_before = info.get("state_hash")
        if terminated or truncated:
            self._end(info, terminated=terminated, reward=float(reward))
        # the step's own reward until the end (0, or the change in milestone progress under
        # reward_mode "milestones"), then the episode's
        return Turn(str(obs), self.reward if self.reward is not None else float(reward), self.done, info)

    def finish(self) -> float:
        """The episode's reward; an episode the model left unfinished (no final answer, turns
        used up on the library's side) is scored now on what it did, and its trace ends truncated."""
        if self.reward is not None:
            return self.reward
        if self.env.task is None or self.env.episode is None:
            return 0.0
        reward, info = self.env.score_unfinished()
        self._end(info, terminated=False, reward=reward)
        return reward

    def _end(self, info: dict[str, Any], *, terminated: bool, reward: float) -> None:
        self.reward = reward
        self.scores = dict(info.get("scores") or {})
        self.steps = int(info["step"])
        if self._writer is not None:
            self._writer.finish(trace_end(self.env, info, terminated=terminated, reward=reward))
            self._writer = None

    def close(self) -> None:
        self.env.close()
