"""The LLM agent passes a moving world's notifications on to the model (tests/envs/
dynamic_fixture.py's task) against a real local OpenAI-compatible server (tests/models/
fake_openai.py): under the native tool protocols (chat and Responses) each notification is a user
message after the step's tool messages, never the answer to a call, even when the env answered
fewer calls than the model made. Driven by run_episode (each step's info) and by hand with the
reset info on every turn (the agent reads the rendered observation then)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import pytest

from tests.envs import dynamic_fixture as dyn
from tests.models.fake_openai import FakeOpenAI, calls, history_error, responses_history_error, serve, text
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.models.llm import ChatClient, LLMAgent, LLMConfig

Api = Literal["chat", "responses"]
NOT_RUN = "This call was not executed."


def _script() -> dict[str, list[Any]]:
    """Step 1 does not parse (two calls, one cut short: the env answers neither by id) and the
    reminder fires after it; step 2 asks; step 3 waits until the reply's notification; step 4 answers."""
    question = dyn.question_call()
    return {
        dyn.QUERY_KEY: [
            calls(("send_message", '{"sender_id": "U'), ("current_time", {})),
            calls(("send_message", question.arguments)),
            calls(("wait", dyn.WAIT_CALL.arguments)),
            text(dyn.FINAL),
        ]
    }


def _run(api: Api, driver: str, tmp_path: Path) -> tuple[FakeOpenAI, float]:
    protocol = "responses" if api == "responses" else "openai"
    task = dyn.dynamic_task()
    env = ToolEnv(tasks=[task], protocol=protocol)
    with serve(FakeOpenAI(_script())) as fake:
        settings = LLMConfig(base_url=fake.base_url, model="fake-model", api=api)
        with ChatClient(settings) as client:
            agent = LLMAgent(client, env)
            if driver == "run_episode":
                reward = run_episode(env, agent, task, seed=0, trace_dir=tmp_path).reward
            else:
                reward = _drive_with_reset_info(env, agent)
    env.close()
    return fake, reward


def _drive_with_reset_info(env: ToolEnv, agent: LLMAgent) -> float:
    """An Agent-protocol driver that hands every act the reset info, as some drivers do."""
    obs, reset_info = env.reset(options={"task": dyn.TASK_ID})
    agent.start(env.tasks[dyn.TASK_ID], obs, reset_info)
    done, reward = False, 0.0
    while not done:
        obs, r, terminated, truncated, _ = env.step(agent.act(obs, reset_info))
        reward, done = float(r), terminated or truncated
    return reward


def _history(fake: FakeOpenAI, api: Api, turn: int) -> list[dict[str, Any]]:
    request = fake.requests[turn]
    items: list[dict[str, Any]] = request["input"] if api == "responses" else request["messages"]
    return items


def _answers(items: list[dict[str, Any]], api: Api) -> list[tuple[str, str]]:
    """(call id, text) of each tool message / function_call_output."""
    if api == "responses":
        return [(i["call_id"], i["output"]) for i in items if i.get("type") == "function_call_output"]
    return [(m["tool_call_id"], m["content"]) for m in items if m.get("role") == "tool"]


@pytest.mark.parametrize("driver", ["run_episode", "reset info"])
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_notifications_are_user_messages_after_the_tool_messages(
    api: Api, driver: str, tmp_path: Path
) -> None:
    fake, reward = _run(api, driver, tmp_path)
    assert reward == 1.0 and len(fake.requests) == 4
    check = responses_history_error if api == "responses" else history_error
    for turn in range(4):
        assert check(_history(fake, api, turn)) is None  # every call answered before the user speaks
    reminder, reply = (
        "Notification (2024-01-01T00:00:10+00:00): " + dyn.REMINDER,
        dyn.reply_text(dyn.friends()[1]),
    )
    # turn 2's new items: the unparsed reply's two calls answered (the error, then "not executed"),
    # and the reminder after them, as the user's: not the answer to the second call
    first = _history(fake, api, 1)[len(_history(fake, api, 0)) :]
    answers = _answers(first, api)
    assert [call_id for call_id, _ in answers] == ["fake_0_0", "fake_0_1"]
    assert answers[0][1].startswith("format_error:") and answers[1][1] == NOT_RUN
    assert first[-1] == {"role": "user", "content": reminder}
    assert all(reminder not in text for _, text in answers)
    # the ask's turn: a tool answer and nothing from the user
    second = _history(fake, api, 2)[len(_history(fake, api, 1)) :]
    assert not [m for m in second if m.get("role") == "user"]
    # the wait ended early by the reply: its answer, then the reply's notification
    third = _history(fake, api, 3)[len(_history(fake, api, 2)) :]
    (waited,) = _answers(third, api)
    assert waited[0] == "fake_2_0" and '"notified":true' in waited[1]
    assert third[-1]["role"] == "user" and third[-1]["content"].endswith(reply)
