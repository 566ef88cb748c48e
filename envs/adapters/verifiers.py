"""toolgym task sets as a verifiers environment (verifiers 0.4.0, `verifiers.v1`): a verifiers
taskset package. verifiers loads one by a top-level import name (its ids carry no dots), so the
top-level package `toolgym_verifiers` re-exports this module, and verifiers' own entry points run it:

    vf-eval toolgym_verifiers --env.taskset.tasks ctool \\
        --model MODEL --client.base-url http://127.0.0.1:8000/v1 --no-push

It exports one of each plug-in kind verifiers looks for in a taskset package (`__all__`):

- `ToolgymTaskset`: one verifiers task per toolgym task of the set `tasks` names (bundled, a
  plug-in's, or a task file), each carrying the protocol's instructions as its system prompt;
- `ToolgymEnv`: the multi-turn exchange. The env plays the user, as verifiers' OpenEnv taskset
  does: it opens with the task's query, steps a toolgym `ToolEnv` with each reply of the model
  (parsed by the action protocol, ReAct by default) and answers with the observation, until the
  episode ends; the episode's toolgym reward is the trace's `toolgym_reward` (its rubric), the
  reward's parts (`scores`) its metrics, and the toolgym trace goes to `trace_dir` when set;
- `ToolgymChatHarness`: the agent's program, run in-process as `Harness.launch` allows (one chat
  completion per turn through the interception endpoint, so verifiers records every model call):
  the bundled chat program of the `null` harness needs `uv` and a package index at run time.
  Another harness is chosen with `--env.agent.harness.id` (`null` needs no tools either).

verifiers 0.4.0 pins `mcp==2.0.0` and `openai<3`, which clash with toolgym's own pins: it lives in
its own venv, which sees toolgym and its other dependencies through a `.pth` line (docs/plugins.md,
"The RL libraries' own environment interfaces"). toolgym's env path imports neither `mcp` nor
`openai`, so both run there.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import verifiers.v1 as vf  # type: ignore[import-untyped,import-not-found,unused-ignore]
from verifiers.v1.dialects.chat import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
    message_to_wire,
)
from verifiers.v1.runtimes import ProgramResult  # type: ignore[import-untyped,import-not-found,unused-ignore]

from toolgym.envs.adapters.episode import TextEpisode, load_env
from toolgym.envs.tool_env import task_prompt


class ToolgymData(vf.TaskData):  # type: ignore[misc]
    task_set: str
    task_id: str
    seed: int | None = None
    protocol: str = "react"
    max_steps: int = 10
    trace_dir: str | None = None
    reward_mode: str = "final"


class ToolgymConfig(vf.TasksetConfig):  # type: ignore[misc]
    tasks: str = "demo"
    """The toolgym task set: a bundled or plug-in set's name (`toolgym tasks`), or a task file."""
    protocol: str = "react"
    """The action protocol that reads the model's replies: react or json."""
    max_steps: int = 10
    """Steps of an episode at most (a task's own `max_steps` wins)."""
    seed: int | None = None
    """The episodes' seed; None: each task's own."""
    trace_dir: str | None = None
    """Where each episode's toolgym trace goes (none when unset)."""
    reward_mode: str = "final"
    """milestones: the episode's milestone progress is among the rollout's metrics (verifiers takes
    one reward per rollout: the usual one)."""


class ToolgymTask(vf.Task[ToolgymData]):  # type: ignore[misc]
    pass


class ToolgymTaskset(vf.Taskset[ToolgymTask, ToolgymConfig]):  # type: ignore[misc]
    def load(self) -> Iterator[ToolgymTask]:
        config = self.config
        env = load_env(config.tasks, protocol=config.protocol, max_steps=config.max_steps)
        try:
            for task in env.tasks:
                _, info = env.reset(seed=config.seed, options={"task": task.id})
                data = ToolgymData(
                    id=task.id,
                    name=task.id,
                    description=task_prompt(task),
                    prompt=None,  # the env opens the exchange with the query
                    system_prompt=info["instructions"],
                    task_set=config.tasks,
                    task_id=task.id,
                    seed=config.seed,
                    protocol=config.protocol,
                    max_steps=config.max_steps,
                    trace_dir=config.trace_dir,
                    reward_mode=config.reward_mode,
                )
                yield ToolgymTask(data, config.task)
        finally:
            env.close()


class ToolgymEnvConfig(vf.EnvConfig):  # type: ignore[misc]
    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())
    """The one seat: the policy that plays the tasks (`--env.agent.*`); its runtime is local,
    since the harness runs in this process (verifiers' default is a remote sandbox)."""


class ToolgymEnv(vf.Env[ToolgymEnvConfig]):  # type: ignore[misc]
    async def run(self, task: ToolgymTask, agents: Any) -> None:
        data = task.data
        env = load_env(
            data.task_set,
            protocol=data.protocol,
            max_steps=data.max_steps,
            reward_mode="milestones" if data.reward_mode == "milestones" else "final",
        )
        episode = TextEpisode(env, agent="verifiers", trace_dir=data.trace_dir)
        try:
            opening = episode.reset(data.task_id, data.seed)
            async with agents.agent.interaction(task) as interaction:
                segment = await interaction.turn(opening[-1]["content"])
                while not segment.terminated:
                    turn = episode.step(segment.last_reply)
                    if turn.done:
                        break
                    segment = await interaction.turn(turn.observation)
                # scored before the exchange closes, so the closed rollout carries it; an
                # episode verifiers ended first (turn limit, stop) is scored on what it did
                reward = episode.finish()
                trace = interaction.trace
                trace.record_reward("toolgym_reward", reward)
                scores = {k: float(v) for k, v in episode.scores.items() if k != "reward"}
                trace.record_metrics({"toolgym_steps": float(episode.steps), **scores})
        finally:
            episode.close()


class ToolgymChatHarnessConfig(vf.HarnessConfig):  # type: ignore[misc]
    timeout_s: float = 600.0
    """How long one model call may take."""


class ToolgymChatHarness(vf.Harness[ToolgymChatHarnessConfig]):  # type: ignore[misc]
    """A plain chat turn, in-process: the conversation so far to the interception endpoint, one
    reply back (no tools of its own: the env reads the actions from the reply's text)."""

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_MCP = False
    SUPPORTS_RESUME = True
    SUPPORTS_TOOL_INTERCEPTION = False
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx: Any,
        trace: Any,
        runtime: Any,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: Any,
        tool_interception_url: str | None = None,
    ) -> Any:
        system, prompt = self.resolve_prompt(data)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        elif prompt is not None:
            messages.extend(message_to_wire(message) for message in prompt)
        body = {"model": ctx.model, "messages": messages}
        async with httpx.AsyncClient(timeout=self.config.timeout_s) as client:
            answer = await client.post(
                endpoint.rstrip("/") + "/chat/completions",
                json=body,
                headers={"Authorization": f"Bearer {secret}"},
            )
        if answer.status_code != 200:
            return ProgramResult(exit_code=1, stdout="", stderr=answer.text[-2000:])
        return ProgramResult(exit_code=0, stdout="", stderr="")


__all__ = ["ToolgymChatHarness", "ToolgymEnv", "ToolgymTaskset"]
