"""Hostile input for the env's own tools (`wait`, `current_time`) on a world that moves: a wait of
no time, of negative, NaN, infinite or huge time, of a string or of nothing is a typed
argument_error observation that leaves the clock and the world as they were, and the episode goes
on. A hypothesis property: random sequences of waits (good and bad), clock reads and app calls keep
the simulated clock moving forward only, and a rerun writes the same trace bytes."""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Sequence
from datetime import datetime
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.dynamic_tasks import ME, OTHER, lunch_task, timeless_lunch_task
from tests.envs.test_hostile import Script
from toolgym.actions import Action, ToolCall
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.tasks import Task
from toolgym.toolservers.registry import default_toolset
from toolgym.trace import Trace, read_trace

BAD_SECONDS: dict[str, Any] = {
    "negative": -5,
    "zero": 0,
    "negative-zero": -0.0,
    "nan": math.nan,
    "infinity": math.inf,
    "minus-infinity": -math.inf,
    "over-max-wait": 900.5,
    "huge": 1e300,
    "huge-int": 10**400,
    "string": "ten minutes",
    "null": None,
    "list": [60],
}
BAD_ARGUMENTS: dict[str, dict[str, Any]] = {
    **{name: {"seconds": value} for name, value in BAD_SECONDS.items()},
    "missing": {},
    "unknown-key": {"seconds": 60, "until": "noon"},
}
# the same through the JSON protocol as a model writes it (JSON has no NaN: 1e999 reads as inf)
BAD_TEXT = {
    "text-huge": '{"name": "wait", "arguments": {"seconds": 1e999}}',
    "text-string": '{"name": "wait", "arguments": {"seconds": "soon"}}',
    "text-negative": '{"name": "wait", "arguments": {"seconds": -1}}',
}
ASK = ToolCall(name="current_time", arguments={})


def episode(task: Task, outputs: Sequence[Any], folder: Path) -> Trace:
    env = ToolEnv(default_toolset(), [task], protocol="json", max_steps=20)
    result = run_episode(env, Script(outputs), task, seed=0, trace_dir=folder)
    env.close()
    assert result.trace_path is not None
    return read_trace(result.trace_path)


@pytest.mark.parametrize(
    "bad", [*BAD_ARGUMENTS.values(), *BAD_TEXT.values()], ids=[*BAD_ARGUMENTS, *BAD_TEXT]
)
def test_a_bad_wait_is_an_argument_error_that_changes_nothing(bad: Any, tmp_path: Path) -> None:
    """Step 1 asks the time (the after-step event falls due), steps 2 and 3 wait badly, step 4
    waits for real: the bad waits leave clock and state where step 1 left them, the good one
    then fires what fell due."""
    wait = ToolCall(name="wait", arguments=bad) if isinstance(bad, dict) else bad
    trace = episode(
        timeless_lunch_task(), [ASK, wait, wait, ToolCall(name="wait", arguments={"seconds": 60})], tmp_path
    )
    asked, first, second, waited = trace.steps[:4]
    for refused in (first, second):
        assert refused.error_kinds == ["argument_error"], refused.observations
        assert refused.observations[0]["error"]["kind"] == "argument_error"
        assert refused.clock == asked.clock == "2024-01-01T00:00:00+00:00"
        assert refused.state_hash_before == refused.state_hash_after == asked.state_hash_after
        assert not refused.events and not refused.state_diff
    assert waited.error_kinds == [] and waited.clock == "2024-01-01T00:01:00+00:00"
    assert [e["id"] for e in waited.events or []] == ["nudge"]  # due 30 s after step 1
    assert trace.end is not None and trace.end.status == "terminated"


def test_the_clock_tool_refuses_arguments_and_time_stays(tmp_path: Path) -> None:
    trace = episode(
        timeless_lunch_task(), [ToolCall(name="current_time", arguments={"tz": "UTC"}), ASK], tmp_path
    )
    refused, asked = trace.steps[:2]
    assert refused.error_kinds == ["argument_error"] and refused.clock == asked.clock
    assert json.loads(asked.observations[0]["text"]) == {"now": "2024-01-01T00:00:00+00:00"}


# ---- the property -----------------------------------------------------------------------------
FUZZ = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
seconds = st.one_of(
    st.floats(min_value=-10, max_value=1200, allow_nan=False),
    st.sampled_from([0, -0.0, math.nan, math.inf, 1e300, "60", "a minute", None, True]),
    st.integers(min_value=-5, max_value=2000),
)
contents = st.sampled_from(["Lunch?", "lunch?", "Hello", ""])
actions = st.one_of(
    st.builds(lambda s: ToolCall(name="wait", arguments={"seconds": s}), seconds),
    st.just(ASK),
    st.builds(
        lambda c, to: ToolCall(
            name="send_message", arguments={"sender_id": ME, "to_user_id": to, "content": c}
        ),
        contents,
        st.sampled_from(["U0005", OTHER, "U9999"]),
    ),
    st.just(ToolCall(name="get_unread_counts", arguments={"user_id": ME})),
)


@cache
def fuzz_env() -> ToolEnv:
    """One env for every example (reset rebuilds the episode), as a rollout worker keeps one."""
    return ToolEnv(default_toolset(), [lunch_task()], protocol="json", max_steps=20)


def trace_bytes(outputs: Sequence[Action], folder: str) -> bytes:
    env = fuzz_env()
    result = run_episode(env, Script(outputs), env.tasks[0], seed=0, trace_dir=Path(folder))
    assert result.trace_path is not None
    return result.trace_path.read_bytes()


@FUZZ
@given(outputs=st.lists(actions, min_size=1, max_size=8))
def test_random_waits_reads_and_app_calls_keep_time_forward_and_traces_reproducible(
    outputs: list[Action],
) -> None:
    with tempfile.TemporaryDirectory() as first, tempfile.TemporaryDirectory() as second:
        once = trace_bytes(outputs, first)
        assert trace_bytes(outputs, second) == once  # the same actions: the same bytes
    trace = read_trace_bytes(once)
    clocks = [datetime.fromisoformat(str(step.clock)) for step in trace.steps]
    assert all(a < b for a, b in pairwise(clocks))  # 10 s a step at least
    for step, clock in zip(trace.steps, clocks, strict=True):
        for event in step.events or []:
            assert datetime.fromisoformat(event["time"]) <= clock  # nothing fires in the step's future
        for observation in step.observations:
            if observation["tool"] == "current_time" and observation["error"] is None:
                assert json.loads(observation["text"])["now"] == step.clock  # read after the turn's cost
            if observation["tool"] == "wait" and observation["error"] is None:
                answer = json.loads(observation["text"])
                assert 0 <= answer["waited_s"] <= 900 and datetime.fromisoformat(answer["now"]) <= clock


def read_trace_bytes(data: bytes) -> Trace:
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as file:
        file.write(data)
        file.flush()
        return read_trace(Path(file.name))


@pytest.mark.parametrize("seconds", [86400 * 31, 86400 * 366])
def test_a_wait_past_the_last_date_is_an_argument_error(seconds: float, tmp_path: Path) -> None:
    """A task near the calendar's end (time policies are bounded, a year per wait: only a late
    clock gets there): a wait past year 9999 is the agent's bad argument, not a tool's failure,
    and time stays."""
    late = Task.model_validate(
        {
            "id": "late",
            "query": "q",
            "clock": "9999-12-15T00:00:00+00:00",
            "time": {"max_wait_s": 86400 * 366},
        }
    )
    trace = episode(
        late,
        [ToolCall(name="current_time", arguments={}), ToolCall(name="wait", arguments={"seconds": seconds})],
        tmp_path,
    )
    asked, refused = trace.steps[:2]
    assert (
        refused.error_kinds == ["argument_error"] and "past the last date" in refused.observations[0]["text"]
    )
    assert refused.clock == asked.clock
