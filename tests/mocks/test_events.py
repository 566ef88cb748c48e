"""Worlds that move (toolgym.mocks.events): events, simulated time and notifications, on real
banking worlds stepped through ToolEnv."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from toolgym.actions import FinalAnswer, ToolCall
from toolgym.envs.milestones import StepClock, in_window
from toolgym.envs.tool_env import ToolEnv
from toolgym.mocks.events import TIMELINE_KEY, notifies, output_tokens
from toolgym.mocks.world import MockWorld
from toolgym.tasks import Event, Milestone, Task, TaskFileError
from toolgym.tools import DEFAULT_CLOCK

START = DEFAULT_CLOCK
ACCOUNT = "ACC-10001"  # $10,101.38 in the seeded bank (seed 0)


def at(seconds: float) -> str:
    return (START + timedelta(seconds=seconds)).isoformat()


def deposit(amount: float) -> dict[str, Any]:
    return {"tool": "deposit", "arguments": {"account_id": ACCOUNT, "amount": amount}}


def bank_task(events: list[dict[str, Any]], **fields: Any) -> Task:
    return Task.model_validate(
        {
            "id": "moving",
            "query": "Watch the account.",
            "apps": ["banking"],
            "time": {"per_step_s": 10, "max_wait_s": 600},
            "events": events,
            **fields,
        }
    )


def balance_call() -> ToolCall:
    return ToolCall(name="get_balance", arguments={"account_id": ACCOUNT})


def run(task: Task, actions: list[Any], **env_options: Any) -> list[tuple[str, dict[str, Any]]]:
    env = ToolEnv(tasks=[task], protocol="json", **env_options)
    _, info = env.reset(options={"task": task.id})
    seen = [("", info)]
    for action in actions:
        obs, _, terminated, truncated, info = env.step(action)
        seen.append((obs, info))
        if terminated or truncated:
            break
    env.close()
    return seen


def fired(seen: list[tuple[str, dict[str, Any]]]) -> list[tuple[int, str, str]]:
    return [(info["step"], e["id"], e["time"]) for _, info in seen for e in info.get("events", [])]


def test_events_fire_in_time_order_with_declared_order_breaking_ties() -> None:
    task = bank_task(
        [
            {"id": "second", "after_step": 1, "calls": [deposit(2)]},
            {"id": "first_declared_tie", "after_step": 1, "notify": {"text": "step one is over"}},
            {"id": "at_35", "at": at(35), "calls": [deposit(1)]},
            {"id": "chained", "after_event": "at_35", "delay_s": 100, "calls": [deposit(3)]},
        ]
    )
    seen = run(
        task,
        [
            balance_call(),
            balance_call(),
            balance_call(),
            balance_call(),
            ToolCall(name="wait", arguments={"seconds": 600}),
        ],
    )
    # steps cost 10 s each: step 1 acts at 0:10, step 4 at 0:40 (at_35 fires at 0:35 while the
    # fourth turn is written); the wait runs to 0:40 + 600 s, through `chained` at 0:35 + 100 s
    assert fired(seen) == [
        (1, "second", at(10)),
        (1, "first_declared_tie", at(10)),
        (4, "at_35", at(35)),
        (5, "chained", at(135)),
    ]
    # the wait's step starts at 0:50 and runs its whole 600 s: no event of this task notifies
    assert [info["clock"] for _, info in seen] == [at(0), at(10), at(20), at(30), at(40), at(650)]
    world_calls = [c for _, info in seen for e in info.get("events", []) for c in e["calls"]]
    assert all(c["ok"] for c in world_calls) and len(world_calls) == 3


def test_a_condition_fires_delay_s_after_it_first_holds_and_a_notification_ends_a_wait_early() -> None:
    task = bank_task(
        [
            {
                "id": "thanks",
                "when": {
                    "table": "bank_accounts",
                    "where": {"account_id": ACCOUNT},
                    "values": {"balance_cents": 1010238},
                },
                "delay_s": 120,
                "notify": {"text": "Thanks for the dollar!"},
            }
        ]
    )
    pay = ToolCall(name="deposit", arguments={"account_id": ACCOUNT, "amount": 1.0})
    seen = run(task, [pay, ToolCall(name="wait", arguments={"seconds": 600}), FinalAnswer(text="done")])
    (obs2, info2) = seen[2]
    assert fired(seen) == [(2, "thanks", at(10 + 120))]  # the deposit at 0:10 made it hold
    result = info2["observations"][0]["content"]
    assert result == {"waited_s": 110.0, "now": at(130), "notified": True}  # not the full 600 s
    assert info2["observations"][1]["type"] == "notification"
    assert obs2.splitlines()[-1] == f"Notification ({at(130)}): Thanks for the dollar!"


def test_notifications_follow_the_actions_observations_and_verbosity_chooses_them() -> None:
    events = [
        {"id": "quiet", "after_step": 1, "calls": [deposit(1)]},
        {"id": "plain", "after_step": 1, "notify": {"text": "plain news"}},
        {"id": "loud", "after_step": 1, "notify": {"text": "important news", "important": True}},
    ]
    task = bank_task(events)
    texts = {}
    for verbosity in ("none", "low", "medium", "high"):
        _, info = run(task, [[balance_call(), balance_call()]], verbosity=verbosity)[1]
        kinds = [o["type"] for o in info["observations"]]
        assert kinds[:2] == ["tool_result", "tool_result"]
        texts[verbosity] = [o["text"].split(": ", 1)[1] for o in info["observations"][2:]]
        assert [e["id"] for e in info["events"]] == ["quiet", "plain", "loud"]  # fired at every verbosity
    assert texts == {
        "none": [],
        "low": ["important news"],
        "medium": ["plain news", "important news"],
        "high": ["Event quiet happened (deposit).", "plain news", "important news"],
    }
    assert [notifies(Event.model_validate(e), "low") for e in events] == [False, False, True]


def test_think_time_counts_output_tokens_by_one_fixed_rule() -> None:
    assert output_tokens('{"name": "get_balance"}') == 9  # { " name " : " get_balance " }
    assert output_tokens("Thought: pay it.") == 5  # Thought : pay it .
    assert output_tokens({"a": [1, 2]}) == output_tokens('{"a":[1,2]}')  # a message: its canonical JSON
    task = bank_task([], time={"per_step_s": 1, "per_output_token_s": 0.5})
    text = '{"name": "get_balance", "arguments": {"account_id": "ACC-10001"}}'
    _, info = run(task, [text])[1]
    assert info["clock"] == at(1 + 0.5 * output_tokens(text))


def test_a_failed_event_call_is_recorded_and_changes_nothing() -> None:
    bad = {
        "tool": "transfer",
        "arguments": {"from_account_id": ACCOUNT, "to_account_id": "ACC-10002", "amount": 10**9},
    }
    seen = run(
        bank_task([{"id": "overdraw", "after_step": 1, "calls": [bad]}]), [balance_call(), balance_call()]
    )
    _, first = seen[1]
    (call,) = first["events"][0]["calls"]
    assert call["ok"] is False and "insufficient" in call["error"].lower()
    assert first["state_diff"] == {} or not first["state_diff"].get("bank_accounts")


def test_the_timeline_lives_in_the_world_so_restore_and_fork_fire_an_event_again() -> None:
    task = bank_task([{"id": "bonus", "after_step": 2, "calls": [deposit(5)], "notify": {"text": "bonus"}}])
    env = ToolEnv(tasks=[task], protocol="json")
    env.reset(options={"task": task.id})
    env.step(balance_call())
    world = env.world
    assert isinstance(world, MockWorld)
    world.checkpoint("before")
    fork = world.fork()
    _, _, _, _, info = env.step(balance_call())
    assert [e["id"] for e in info["events"]] == ["bonus"] and world.store.get_meta(TIMELINE_KEY)
    after_hash = world.state_hash()
    world.restore("before")
    assert fork.state_hash() == world.state_hash()  # the fork holds no fired event either
    _, _, _, _, again = env.step(balance_call())  # step 3: `bonus` waited on step 2 only
    assert "events" not in again
    assert after_hash != world.state_hash()  # the restored world never got the bonus
    fork.close()


def test_a_task_without_events_keeps_its_trace_fields_and_tools() -> None:
    task = Task.model_validate({"id": "still", "query": "q", "apps": ["banking"]})
    seen = run(task, [balance_call()])
    assert "wait" not in seen[0][1]["tools"] and "clock" not in seen[0][1] and "clock" not in seen[1][1]


@pytest.mark.parametrize(
    ("event", "problem"),
    [
        ({"id": "e", "notify": {"text": "x"}}, "exactly one of"),
        ({"id": "e", "after_step": 1, "at": at(5), "notify": {"text": "x"}}, "exactly one of"),
        ({"id": "e", "after_step": 1}, "changes nothing"),
        ({"id": "e", "at": at(5), "delay_s": 3, "notify": {"text": "x"}}, "takes no delay_s"),
        ({"id": "e", "at": at(0), "notify": {"text": "x"}}, "not after the task's start"),
        ({"id": "e", "at": "2024-01-01T01:00:00", "notify": {"text": "x"}}, "time zone"),
        ({"id": "e", "after_event": "nope", "notify": {"text": "x"}}, "unknown event"),
        ({"id": "e", "after_event": "e", "notify": {"text": "x"}}, "cycle"),
    ],
)
def test_bad_events_are_refused_when_the_task_is_read(event: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        bank_task([event])


def step_clock(seconds: float, fired: dict[str, datetime]) -> StepClock:
    when = START + timedelta(seconds=seconds)
    return StepClock(START, when, when, fired)


def test_time_windows_name_known_events_and_open_after_their_event() -> None:
    with pytest.raises(ValidationError, match="unknown events"):
        bank_task(
            [{"id": "e", "after_step": 1, "notify": {"text": "x"}}],
            milestones=[{"id": "m", "call": {"tool": "get_balance"}, "window": {"after_event": "f"}}],
        )
    m = Milestone.model_validate(
        {"id": "m", "call": {"tool": "t"}, "window": {"after_event": "e", "until_s": 60}}
    )
    fired_at = {"e": START + timedelta(seconds=100)}
    assert [in_window(m, step_clock(s, fired_at)) for s in (99, 100, 160, 161)] == [False, True, True, False]
    assert not in_window(m, None)  # time that never moves never reaches an event
    before = Milestone.model_validate({"id": "b", "call": {"tool": "t"}, "window": {"before_event": "e"}})
    assert [in_window(before, step_clock(s, fired_at)) for s in (99, 100)] == [True, False]


def test_a_reply_window_scores_the_milestone_only_inside_it() -> None:
    events = [{"id": "ask", "after_step": 1, "notify": {"text": "please deposit $1 within a minute"}}]
    window = {"after_event": "ask", "until_s": 60}
    task = bank_task(
        events,
        milestones=[
            {
                "id": "paid",
                "call": {"tool": "deposit", "arguments": {"account_id": ACCOUNT}},
                "window": window,
            }
        ],
    )
    pay = ToolCall(name="deposit", arguments={"account_id": ACCOUNT, "amount": 1.0})
    in_time = run(task, [balance_call(), pay, FinalAnswer(text="ok")])[-1][1]
    late = run(
        task, [balance_call(), ToolCall(name="wait", arguments={"seconds": 300}), pay, FinalAnswer(text="ok")]
    )[-1][1]
    assert in_time["milestones"] == [{"id": "paid", "step": 2, "similarity": 1.0}]
    assert late["milestones"] == [{"id": "paid", "step": None, "similarity": 0.0}]


def test_a_task_that_needs_a_world_for_its_events_or_tools_of_its_own_is_refused_at_reset() -> None:
    worldless = Task.model_validate(
        {"id": "w", "query": "q", "events": [{"id": "e", "after_step": 1, "calls": [deposit(1)]}]}
    )
    with pytest.raises(TaskFileError, match="need the task's apps"):
        ToolEnv(tasks=[worldless]).reset(options={"task": "w"})
    timed = Task.model_validate({"id": "t", "query": "q", "time": {"per_step_s": 60}})
    seen = run(
        timed, [ToolCall(name="current_time", arguments={}), ToolCall(name="wait", arguments={"seconds": 30})]
    )
    assert seen[1][1]["observations"][0]["content"] == {"now": at(60)}
    assert seen[2][1]["clock"] == at(150)
    assert datetime.fromisoformat(seen[2][1]["clock"]) > START


def test_a_time_policy_past_what_a_date_holds_is_refused_when_the_task_is_read() -> None:
    for policy in (
        {"per_step_s": 1e12},
        {"per_output_token_s": 1e6},
        {"max_wait_s": 1e15},
        {"per_step_s": -1},
    ):
        with pytest.raises(ValidationError, match="time"):
            bank_task([], time=policy)
