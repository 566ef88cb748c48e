"""The oracle's golden replies: in the form each protocol's prompt asks for (a thought where the
prompt asks for one), parsing back to the golden action, on every bundled task."""

from __future__ import annotations

from typing import Any

import pytest

from toolgym.actions import Action, AskUser, FinalAnswer, NoCall, ToolCall
from toolgym.envs.agents import OracleAgent, golden_action, golden_thought
from toolgym.envs.demo import bundled_task_sets
from toolgym.protocols import get_protocol
from toolgym.tasks import Task, TaskSet
from toolgym.tools import ToolSet

TASKS = [task for path in bundled_task_sets().values() for task in TaskSet.load(path)]
STEPS = [(task, step.action) for task in TASKS for step in task.golden]


def _replies(task: Task, protocol: str) -> list[Any]:
    agent = OracleAgent(get_protocol(protocol))
    agent.start(task, task.query, {})
    return [agent.act("", {}) for _ in task.golden]


def test_every_bundled_golden_react_reply_begins_with_a_thought_and_parses_back() -> None:
    """The ReAct prompt asks for `Thought:` before every Action, Final Answer and Ask User; the
    oracle's replies carry one and parse back to the golden action (its thought aside)."""
    react = get_protocol("react")
    assert len(STEPS) > 600  # every bundled task set, not a sample
    for task in TASKS:
        for reply, step in zip(_replies(task, "react"), task.golden, strict=True):
            assert isinstance(reply, str) and reply.startswith("Thought: "), (task.id, reply)
            (parsed,) = react.parse(reply)
            assert parsed.thought, (task.id, reply)
            assert parsed.model_copy(update={"thought": None}) == step.action, (task.id, reply)


def test_json_golden_replies_carry_the_thought_key_its_prompt_shows() -> None:
    json_protocol = get_protocol("json")
    assert '{"thought": "<your reasoning>"' in json_protocol.instructions(ToolSet())
    for task in TASKS[:50]:
        for reply, step in zip(_replies(task, "json"), task.golden, strict=True):
            assert isinstance(reply, str) and reply.startswith('{"thought": "'), (task.id, reply)
            (parsed,) = json_protocol.parse(reply)
            assert parsed.model_copy(update={"thought": None}) == step.action


@pytest.mark.parametrize("protocol", ["openai", "responses"])
def test_chat_protocol_golden_replies_are_the_golden_actions_as_written(protocol: str) -> None:
    """Their prompts ask for no thought: the oracle's replies are the protocol's rendering of the
    golden action, byte for byte as before thoughts were added."""
    rendering = get_protocol(protocol)
    for task in TASKS:
        expected = [rendering.format_action(step.action) for step in task.golden]
        assert _replies(task, protocol) == expected


def test_a_thought_the_task_wrote_is_kept_and_a_no_call_is_never_filled_in() -> None:
    react = get_protocol("react")
    written = ToolCall(name="transfer", arguments={"amount": 3}, thought="Move the money first.")
    assert golden_action(written, react) == written
    silent = NoCall()  # with a simulated user, a no call's thought is the message it gets
    assert golden_action(silent, react) == silent
    assert golden_action(ToolCall(name="ping"), get_protocol("openai")).thought is None


@pytest.mark.parametrize(
    ("action", "thought"),
    [
        (ToolCall(name="ping"), "I need to call ping."),
        (
            ToolCall(name="get_balance", arguments={"account": "A1"}),
            "I need to call get_balance with account.",
        ),
        (
            ToolCall(name="transfer", arguments={"src": "A", "dst": "B", "amount": 3}),
            "I need to call transfer with src, dst and amount.",
        ),
        (FinalAnswer(text="58"), "I now know the final answer."),
        (AskUser(text="Which account?"), "I am missing information I need, so I ask the user."),
    ],
)
def test_default_thoughts_are_derived_from_the_action(action: Action, thought: str) -> None:
    assert golden_thought(action) == thought
