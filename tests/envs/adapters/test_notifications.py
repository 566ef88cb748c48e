"""A moving world's notifications reach the trainer through every adapter (tests/envs/
dynamic_fixture.py's task): in the text TextEpisode answers with (and so SkyRL's next user message),
in what TRL's GRPO environment's tool methods return, and in verl's tool responses; the env's
`wait` is a tool each of them offers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.envs import dynamic_fixture as dyn
from toolgym.actions import ToolCall
from toolgym.envs.adapters.episode import TextEpisode, load_env
from toolgym.envs.trainers import grpo_environment_factory, verl_tools
from toolgym.protocols import get_protocol
from toolgym.tasks import TaskSet
from toolgym.tools import ToolSet

REMINDER = f"Notification (2024-01-01T00:00:10+00:00): {dyn.REMINDER}"


def _reply() -> str:
    return f"Notification (2024-01-01T00:05:10+00:00): {dyn.reply_text(dyn.friends()[1])}"


def _tasks() -> TaskSet:
    return TaskSet([dyn.dynamic_task()])


def _calls() -> tuple[ToolCall, ToolCall]:
    ask, wait, _ = dyn.actions()
    assert isinstance(ask, ToolCall) and isinstance(wait, ToolCall)
    return ask, wait


def test_text_episode_answers_with_the_tool_result_then_the_notification(tmp_path: Path) -> None:
    episode = TextEpisode(load_env(_tasks(), tools=ToolSet()), agent="test", trace_dir=tmp_path)
    chat = episode.reset(dyn.TASK_ID)
    assert "wait" in chat[0]["content"]  # the instructions document the env's tools
    react = get_protocol("react")
    turns = [episode.step(react.format_action(action)) for action in dyn.actions()]
    episode.close()
    asked, waited, answered = turns
    assert asked.observation.endswith("\nObservation: " + REMINDER) and not asked.done
    assert waited.observation.endswith("\nObservation: " + _reply())
    assert answered.done and answered.reward == 1.0
    assert [e["id"] for e in asked.info["events"]] == ["reminder"]


def test_skyrl_gives_the_notification_in_the_next_user_message(tmp_path: Path) -> None:
    skyrl_gym = pytest.importorskip("skyrl_gym", reason="skyrl-gym is not installed")
    from toolgym.envs.adapters.skyrl import skyrl_dataset

    (row,) = skyrl_dataset(str(dyn.write_task_file(tmp_path)))
    extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
    env = skyrl_gym.make(row["env_class"], env_config={}, extras=extras)
    env.init(row["prompt"])
    react = get_protocol("react")
    outputs = [env.step(react.format_action(action)) for action in dyn.actions()]
    env.close()
    assert outputs[0]["observations"][0]["role"] == "user"
    assert outputs[0]["observations"][0]["content"].endswith(REMINDER)
    assert outputs[1]["observations"][0]["content"].endswith(_reply())
    assert outputs[2]["done"] and outputs[2]["reward"] == 1.0


def test_trl_tool_methods_return_the_notifications() -> None:
    env = grpo_environment_factory(ToolSet(), _tasks())()
    assert callable(getattr(env, "wait", None)) and callable(getattr(env, "current_time", None))
    env.reset(task_id=dyn.TASK_ID)
    ask, wait = _calls()
    asked: str = getattr(env, ask.name)(**ask.arguments)
    waited: str = getattr(env, wait.name)(**wait.arguments)
    env.final_answer(dyn.FINAL)
    assert asked.endswith(REMINDER) and '"status":"success"' in asked.split("\n")[0]
    assert waited.endswith(_reply())
    assert env.get_reward() == 1.0
    env.env.close()


def test_verl_tool_responses_carry_the_notifications() -> None:
    adapters = {a.name: a for a in verl_tools(ToolSet(), _tasks())}
    assert "wait" in adapters and "current_time" in adapters
    ask, wait = _calls()

    async def call(name: str, arguments: dict[str, Any]) -> str:
        instance, _ = await adapters[name].create(create_kwargs={"task_id": dyn.TASK_ID, "episode_id": "e1"})
        response, _, _ = await adapters[name].execute(instance, arguments)
        await adapters[name].release(instance)
        return str(response.text)

    async def main() -> tuple[str, str]:
        return await call(ask.name, ask.arguments), await call(wait.name, wait.arguments)

    asked, waited = anyio.run(main)
    adapters[ask.name].episodes.close("e1")
    assert asked.endswith(REMINDER) and waited.endswith(_reply())
