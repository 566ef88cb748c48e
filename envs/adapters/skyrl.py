"""toolgym task sets as a SkyRL-Gym environment (skyrl-gym 0.4.0): `ToolgymSkyRLEnv`, a
`BaseTextEnv` registered under the id `toolgym` when this module is imported, so SkyRL's trainer
makes it by its dataset rows' `env_class`:

    import toolgym.envs.adapters.skyrl                    # registers "toolgym"
    env = skyrl_gym.make("toolgym", env_config={"tasks": "ctool"}, extras=row)
    chat, info = env.init(row["prompt"])                  # the tools and the query, as chat messages
    out = env.step(model_reply)                           # {"observations", "reward", "done", "metadata"}

`skyrl_dataset(tasks)` gives the rows (`prompt`, `env_class`, `task_id`, `seed`, the set's name in
`tasks`). `env_config` (the trainer's `environment.skyrl_gym.toolgym` section) may name `tasks`,
`protocol`, `max_turns`, `trace_dir` and `reward_mode`; a row's own values win. The reward is the
episode's (task reward: state checks and the answer), given on the step that ends it, 0 before, or
with `reward_mode: milestones` each step's change in milestone progress before it (dense rewards); a
turn cap reached before a final answer ends the episode and scores what it did.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from skyrl_gym import register  # type: ignore[import-untyped,import-not-found,unused-ignore]
from skyrl_gym.envs import registration  # type: ignore[import-untyped,import-not-found,unused-ignore]
from skyrl_gym.envs.base_text_env import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
    BaseTextEnv,
    BaseTextEnvStepOutput,
)

from toolgym.envs.adapters.episode import Message, TextEpisode, load_env
from toolgym.envs.tool_env import task_prompt
from toolgym.tasks import TaskSet

ENV_ID = "toolgym"


def _settings(env_config: Any, extras: Mapping[str, Any]) -> dict[str, Any]:
    """env_config's values (a dict or omegaconf's DictConfig), under the row's own."""
    merged = {k: env_config[k] for k in env_config} if env_config is not None else {}
    info = extras.get("extra_info") or {}
    return {**merged, **{k: v for k, v in info.items() if v is not None}, **extras}


class ToolgymSkyRLEnv(BaseTextEnv):  # type: ignore[misc]
    """One episode of a toolgym task (see the module docstring)."""

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        given = _settings(env_config, extras or {})
        if "task_id" not in given or "tasks" not in given:
            raise ValueError("a toolgym row names its task set (`tasks`) and task (`task_id`)")
        self.task_id = str(given["task_id"])
        self.seed = int(given["seed"]) if given.get("seed") is not None else None
        self.max_turns = int(given.get("max_turns") or 10)
        mode = str(given.get("reward_mode") or "final")
        env = load_env(
            given["tasks"],
            protocol=str(given.get("protocol", "react")),
            max_steps=self.max_turns,
            reward_mode="milestones" if mode == "milestones" else "final",
        )
        self.episode = TextEpisode(env, agent="skyrl", trace_dir=given.get("trace_dir"))

    def init(self, prompt: list[Message] | None = None) -> tuple[list[Message], dict[str, Any]]:
        """The episode's opening chat (the row's prompt is the same messages, made when the
        dataset was); toolgym's instructions name the tools and the reply format."""
        chat = self.episode.reset(self.task_id, self.seed)
        return chat, {"task_id": self.task_id}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        self.turns += 1
        turn = self.episode.step(action)
        reward = turn.reward
        if not turn.done and self.turns >= self.max_turns:
            reward = self.episode.finish()
        done = self.episode.done
        metadata = {"error_kinds": turn.info.get("error_kinds", []), "step": turn.info.get("step")}
        if done:
            metadata["scores"] = turn.info.get("scores", {})
        observations = [] if done else [{"role": "user", "content": turn.observation}]
        return BaseTextEnvStepOutput(observations=observations, reward=reward, done=done, metadata=metadata)

    def get_metrics(self) -> dict[str, Any]:
        return {"steps": self.turns, "solved": float(self.episode.reward == 1.0)}

    def close(self) -> None:
        self.episode.close()


def skyrl_dataset(tasks: str, seed: int | None = None, *, protocol: str = "react") -> list[dict[str, Any]]:
    """SkyRL's dataset rows for a task set given by name or file: the opening chat as `prompt`
    (what `init` returns), `env_class` "toolgym", and what the env reads (`tasks`, `task_id`,
    `seed`); SkyRL passes the row's other fields to the env as `extras`."""
    env = load_env(tasks, protocol=protocol)
    task_set: TaskSet = env.tasks
    rows = []
    for task in task_set:
        _, info = env.reset(seed=seed, options={"task": task.id})
        prompt = [
            {"role": "system", "content": info["instructions"]},
            {"role": "user", "content": task_prompt(task)},
        ]
        rows.append(
            {
                "prompt": prompt,
                "env_class": ENV_ID,
                "tasks": str(tasks),
                "task_id": task.id,
                "seed": task.seed if seed is None else seed,
                "reward_spec": {"method": "rule", "ground_truth": None},
            }
        )
    env.close()
    return rows


if ENV_ID not in registration.registry:
    register(id=ENV_ID, entry_point=f"{__name__}:ToolgymSkyRLEnv")
