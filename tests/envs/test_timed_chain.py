"""A dynamic task's golden chain run in simulated time (envs/timed_chain.py): its events fire as in
ToolEnv's episode, so the replay ends in the oracle's state (the state reward's golden hash) and
`toolgym check` passes the task; a call that does not do what the chain says is a GoldenReplayError;
the chains of agents that ignore notifications or never wait are the golden one cut down."""

from __future__ import annotations

from typing import Any

import pytest

from toolgym.actions import FinalAnswer, ToolCall
from toolgym.authoring.check import check_tasks
from toolgym.envs.agents import OracleAgent
from toolgym.envs.rewards import golden_state_hash
from toolgym.envs.runner import run_episode
from toolgym.envs.timed_chain import blind_chains, replay_timed
from toolgym.envs.tool_env import ToolEnv
from toolgym.mocks.rewards import GoldenReplayError, replay_golden_state_hash
from toolgym.mocks.world import MockWorld
from toolgym.tasks import Task, TaskSet

ME, FRIEND = "U0001", "U0005"  # friends in the messaging app's seeded world (seed 0)
QUESTION, REPLY, THANKS = "Lunch on Friday?", "Friday works, noon.", "Thanks!"


def send(sender: str, to: str, content: str) -> dict[str, Any]:
    arguments = {"sender_id": sender, "to_user_id": to, "content": content}
    return {"action": {"type": "tool_call", "name": "send_message", "arguments": arguments}}


def reply_task(*, wait_s: float = 1800, golden: list[dict[str, Any]] | None = None) -> Task:
    """Ask a friend, wait for the answer (a `when` event 600 s after the question), thank them."""
    chain = [
        send(ME, FRIEND, QUESTION),
        {"action": {"type": "tool_call", "name": "wait", "arguments": {"seconds": wait_s}}},
        send(ME, FRIEND, THANKS),
        {"action": {"type": "final_answer", "text": f"They said: {REPLY}"}},
    ]
    return Task.model_validate(
        {
            "id": "reply",
            "query": f"Ask {FRIEND} about lunch, wait for the answer and thank them.",
            "apps": ["messaging"],
            "tools": ["send_message", "get_messages"],
            "time": {"per_step_s": 30, "max_wait_s": 3600},
            "events": [
                {
                    "id": "reply",
                    "when": {"table": "messaging_messages", "where": {"sender_id": ME, "content": QUESTION}},
                    "delay_s": 600,
                    "calls": [
                        {
                            "tool": "send_message",
                            "arguments": {"sender_id": FRIEND, "to_user_id": ME, "content": REPLY},
                        }
                    ],
                    "notify": {"text": f"New message from {FRIEND}: {REPLY}"},
                }
            ],
            "golden": chain if golden is None else golden,
            "answer": {"whitelist": [["noon"]]},
            "expected_state": [
                {
                    "kind": "row_exists",
                    "table": "messaging_messages",
                    "where": {"sender_id": FRIEND, "content": REPLY},
                },
                {
                    "kind": "row_exists",
                    "table": "messaging_messages",
                    "where": {"sender_id": ME, "content": THANKS},
                },
            ],
        }
    )


def test_the_replay_fires_the_events_and_ends_where_the_oracle_does() -> None:
    task = reply_task()
    with MockWorld(["messaging"], seed=0) as world:
        observations, _ = replay_timed(world, task)
        assert [o.error for o in observations] == [None, None, None]
        assert observations[1].content == {
            "waited_s": 570.0,  # the question went at 00:00:30, the wait began at 00:01:00
            "now": "2024-01-01T00:10:30+00:00",
            "notified": True,
        }
        assert world.rows("messaging_messages", {"sender_id": FRIEND, "content": REPLY})
        replayed = world.state_hash()
    assert golden_state_hash(task) == replayed
    # replayed call by call, as a static chain is, the reply never comes: another end state
    assert replay_golden_state_hash(["messaging"], 0, task.clock, task.golden) != replayed
    env = ToolEnv(tasks=TaskSet([task]), protocol="react")
    try:
        result = run_episode(env, OracleAgent(env.protocol), task, seed=0)
        assert env.world is not None
        oracle_end = env.world.state_hash()
    finally:
        env.close()
    # the oracle's episode takes the chain's steps, so it ends at the same simulated time and state;
    # the reward judges a dynamic task by its assertions (any other pace ends at another clock)
    assert oracle_end == replayed
    assert "state_match" not in result.scores and result.reward == 1.0


def test_toolgym_check_passes_a_dynamic_task_and_finds_a_chain_that_does_not_wait() -> None:
    assert check_tasks([reply_task()]) == []
    rushed = reply_task(
        golden=[
            send(ME, FRIEND, QUESTION),
            send(ME, FRIEND, THANKS),
            {"action": {"type": "final_answer", "text": "noon"}},
        ]
    )
    messages = [p.message for p in check_tasks([rushed])]
    assert any("does not hold after the golden chain" in m for m in messages), messages


def test_a_wait_the_policy_refuses_is_a_golden_replay_error() -> None:
    with (
        MockWorld(["messaging"], seed=0) as world,
        pytest.raises(GoldenReplayError, match="golden call #1 wait"),
    ):
        replay_timed(world, reply_task(wait_s=7200))


def test_the_blind_chains_are_the_golden_one_cut_down() -> None:
    task = reply_task()
    with MockWorld(["messaging"], seed=0) as world:
        chains = blind_chains(world, task)
    question, _, thanks, final = (s.action for s in task.golden)
    assert isinstance(final, FinalAnswer) and isinstance(thanks, ToolCall)
    assert chains == {"ignores notifications": [question, final], "never waits": [question, thanks, final]}
