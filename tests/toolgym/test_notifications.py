"""A notification reaches the model in the next observation under every built-in protocol: after the
step's tool result, in the protocol's own form (tests/envs/dynamic_fixture.py's task, stepped with
each protocol's own rendering of the actions, call ids included)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.envs import dynamic_fixture as dyn
from toolgym.envs.tool_env import ToolEnv


def _observations(protocol: str) -> list[str]:
    """The observation text of each step of the fixture's episode."""
    env = ToolEnv(tasks=[dyn.dynamic_task()], protocol=protocol)
    env.reset(options={"task": dyn.TASK_ID})
    texts = []
    for action in dyn.actions():
        obs, *_ = env.step(env.protocol.format_action(action))
        texts.append(obs)
    env.close()
    return texts


def _notification(at: str, text: str) -> str:
    return f"Notification ({at}): {text}"


REMINDER = _notification("2024-01-01T00:00:10+00:00", dyn.REMINDER)


def _reply() -> str:
    return _notification("2024-01-01T00:05:10+00:00", dyn.reply_text(dyn.friends()[1]))


@pytest.mark.parametrize("protocol", ["react", "json"])
def test_text_protocols_show_the_notification_on_the_line_after_the_tool_result(protocol: str) -> None:
    first, second, _ = _observations(protocol)
    prefix = "Observation: " if protocol == "react" else ""
    result, notification = first.split("\n")
    assert json.loads(result.removeprefix(prefix))["status"] == "success"
    assert notification == prefix + REMINDER
    waited, reply = second.split("\n")
    assert json.loads(waited.removeprefix(prefix))["notified"] is True  # the reply ended the wait
    assert reply == prefix + _reply()


def _messages(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.split("\n")]


def test_openai_answers_the_call_then_notifies_as_the_user() -> None:
    first, second, _ = _messages_of("openai")
    assert [m["role"] for m in first] == ["tool", "user"]
    assert first[0]["tool_call_id"] and json.loads(first[0]["content"])["status"] == "success"
    assert first[1] == {"role": "user", "content": REMINDER}  # no tool_call_id: it answers no call
    assert [m["role"] for m in second] == ["tool", "user"] and second[1]["content"] == _reply()


def test_responses_answers_the_call_then_notifies_as_a_user_message() -> None:
    first, second, _ = _messages_of("responses")
    assert first[0]["type"] == "function_call_output" and first[0]["call_id"]
    assert first[1] == {"type": "message", "role": "user", "content": REMINDER}
    assert second[0]["type"] == "function_call_output"
    assert second[1] == {"type": "message", "role": "user", "content": _reply()}


def _messages_of(protocol: str) -> list[list[dict[str, Any]]]:
    return [_messages(text) for text in _observations(protocol)]
