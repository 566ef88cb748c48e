"""A world that moves, for tests: a messaging task whose events use every trigger kind (a time,
after a step, after another event with a delay, when a fact holds with a delay), a time policy
that charges per step and per output token, notifications of each weight, and a milestone with a
time window. Its golden chain sends a message, waits three times (the first two cut short by
notifications at the default verbosity), reads the clock and answers, so the oracle drives it on
every rollout path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolgym.tasks import Task, TaskSet, TimePolicy

ME, FRIEND, OTHER = "U0001", "U0005", "U0018"  # U0005 and U0018 are U0001's friends in the seeded world
LUNCH_ID = "lunch-reply"
ASKED = {"sender_id": ME, "to_user_id": FRIEND, "content": "Lunch?"}
REPLY = {"sender_id": FRIEND, "to_user_id": ME, "content": "Noon works."}
NUDGE = {"sender_id": OTHER, "to_user_id": ME, "content": "Are you in today?"}
EVENT_IDS = ("nudge", "reply", "ping", "quarter-past")


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"action": {"type": "tool_call", "name": name, "arguments": arguments}}


def lunch_task(task_id: str = LUNCH_ID) -> Task:
    """The task (see the module docstring). "nudge" notifies at verbosity high only (no text),
    "reply" and "ping" at medium and high, "quarter-past" at every verbosity but none."""
    return Task.model_validate(
        {
            "id": task_id,
            "query": f"You are {ME}. Ask {FRIEND} about lunch, wait for the reply and say when it is.",
            "apps": ["messaging"],
            "time": {"per_step_s": 10, "per_output_token_s": 0.5, "max_wait_s": 900},
            "events": [
                {
                    "id": "nudge",
                    "after_step": 1,
                    "delay_s": 30,
                    "calls": [{"tool": "send_message", "arguments": NUDGE}],
                },
                {
                    "id": "reply",
                    "when": {"table": "messaging_messages", "where": {"sender_id": ME, "content": "Lunch?"}},
                    "delay_s": 300,
                    "calls": [{"tool": "send_message", "arguments": REPLY}],
                    "notify": {"text": f"New message from {FRIEND}: Noon works."},
                },
                {
                    "id": "ping",
                    "after_event": "reply",
                    "delay_s": 60,
                    "notify": {"text": "A minute since the reply."},
                },
                {
                    "id": "quarter-past",
                    "at": "2024-01-01T00:15:00+00:00",
                    "notify": {"text": "It is a quarter past.", "important": True},
                },
            ],
            "milestones": [
                {"id": "asked", "call": {"tool": "send_message", "arguments": {"to_user_id": FRIEND}}},
                {
                    "id": "answered",
                    "after": ["asked"],
                    "state": {
                        "table": "messaging_messages",
                        "where": {"sender_id": FRIEND, "content": "Noon works."},
                    },
                    "window": {"after_event": "reply", "until_s": 60},
                },
            ],
            "golden": [
                _call("send_message", ASKED),
                _call("wait", {"seconds": 900}),
                _call("wait", {"seconds": 900}),
                _call("wait", {"seconds": 900}),
                _call("current_time", {}),
                {"action": {"type": "final_answer", "text": "Lunch is at noon."}},
            ],
            "answer": {"whitelist": [["noon"]]},
        }
    )


def timeless_lunch_task() -> Task:
    """The task with time that passes only when the agent waits (no cost per step or token): a
    refused call leaves the clock exactly where it was."""
    return lunch_task().model_copy(update={"time": TimePolicy(max_wait_s=900)})


def dynamic_set() -> TaskSet:
    return TaskSet([lunch_task()])


def write_dynamic_set(folder: Path, name: str = "dynamic") -> Path:
    """The set as a task file `folder/<name>.jsonl` (for the CLI and the env service)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.jsonl"
    path.write_text(lunch_task().model_dump_json(exclude_none=True) + "\n", encoding="utf-8")
    return path
