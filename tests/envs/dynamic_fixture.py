"""A small dynamic task over the `messaging` app, for the tests of every surface a notification must
reach (protocols, the LLM agent, MCP, the RL and trainer adapters, exports, the viewer).

The agent (user A) asks friend B about lunch; a reminder notifies right after step 1 (`after_step`);
A then waits, and B's reply arrives 300 simulated seconds after A's question (a `when` fact on the
messages table), written through the app's own `send_message` and notified, which ends the wait
early. `ACTIONS` play it: step 1 sends the question (a tool result, then the reminder), step 2 waits
(the wait's result, then the reply's notification), step 3 answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from toolgym.actions import Action, FinalAnswer, ToolCall
from toolgym.mocks.world import MockWorld
from toolgym.tasks import Task

TASK_ID: Final = "dyn-lunch"
QUERY_KEY: Final = "about lunch and wait"  # a substring of the prompt: the fake model server's script key
REMINDER: Final = "Reminder: the canteen closes at 14:00."
QUESTION: Final = "Lunch?"
ANSWER_TEXT: Final = "Noon works."
FINAL: Final = "Lunch is at noon."


def friends() -> tuple[str, str]:
    """The seeded world's first friendship (A, B): who asks and who answers."""
    row = MockWorld(["messaging"]).rows("messaging_friendships")[0]
    return str(row["user_id"]), str(row["friend_id"])


def reply_text(friend: str) -> str:
    return f"New message from {friend}: {ANSWER_TEXT}"


def task_data() -> dict[str, Any]:
    """The task as a task file holds it."""
    me, friend = friends()
    return {
        "id": TASK_ID,
        "query": f"You are user {me}. Ask {friend} {QUERY_KEY} for the reply, then tell me the time.",
        "apps": ["messaging"],
        "answer": {"whitelist": [["noon"]]},
        "time": {"per_step_s": 10, "max_wait_s": 900},
        "events": [
            {"id": "reminder", "after_step": 1, "notify": {"text": REMINDER}},
            {
                "id": "reply",
                "when": {"table": "messaging_messages", "where": {"sender_id": me, "content": QUESTION}},
                "delay_s": 300,
                "calls": [
                    {
                        "tool": "send_message",
                        "arguments": {"sender_id": friend, "to_user_id": me, "content": ANSWER_TEXT},
                    }
                ],
                "notify": {"text": reply_text(friend)},
            },
        ],
    }


def dynamic_task() -> Task:
    return Task.model_validate(task_data())


def write_task_file(folder: Path) -> Path:
    """The task in a task file of its own (for `toolgym run --tasks`)."""
    path = folder / "dynamic.jsonl"
    path.write_text(json.dumps(task_data()) + "\n")
    return path


def question_call() -> ToolCall:
    me, friend = friends()
    return ToolCall(
        name="send_message", arguments={"sender_id": me, "to_user_id": friend, "content": QUESTION}
    )


WAIT_CALL: Final = ToolCall(name="wait", arguments={"seconds": 900})


def actions() -> list[Action]:
    """The episode's three steps: ask, wait for the reply, answer."""
    return [question_call(), WAIT_CALL, FinalAnswer(text=FINAL)]
