"""A world that moves on the rollout paths without Ray: the oracle on `tests.dynamic_tasks`'s task
fires every kind of event, at every verbosity, and the run folder a pool of worker processes
writes is the same bytes as one process's; the verbosity is in the trace header (and run.json)
only when it is not the default. A fork or a checkpoint taken before an event fires fires it
again, at its time, with the same effect."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.dynamic_tasks import ASKED, EVENT_IDS, LUNCH_ID, REPLY, dynamic_set, lunch_task
from tests.envs.test_rollouts import traces_of, whole_folder
from toolgym.actions import ToolCall
from toolgym.envs.milestones import state_fact_holds
from toolgym.envs.rollouts import AgentSpec, Executor, ProcessExecutor
from toolgym.envs.tool_env import ToolEnv
from toolgym.mocks.events import Timeline, Verbosity
from toolgym.mocks.world import MockWorld
from toolgym.running.trials import RunSummary, run_trials
from toolgym.toolservers.registry import default_toolset

SETS = [("dynamic", dynamic_set())]
TRACE = f"trial-0/dynamic/{LUNCH_ID}.seed0.jsonl"


def oracle_run(
    out: Path, verbosity: Verbosity = "medium", executor: Executor | None = None
) -> dict[str, bytes]:
    run_trials(
        SETS,
        AgentSpec(),
        out=out,
        trials=2,
        seed=0,
        agent_name="oracle",
        verbosity=verbosity,
        executor=executor,
    )
    return whole_folder(out)


def records(trace: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in trace.decode().splitlines()]


def fired(steps: list[dict[str, Any]]) -> dict[str, bool]:
    """Each event fired in the episode -> whether it notified the agent."""
    return {e["id"]: e["notified"] for step in steps for e in step.get("events") or []}


@pytest.fixture(scope="module")
def one_process(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    return oracle_run(tmp_path_factory.mktemp("one-process"))


def test_the_oracle_fires_every_trigger_kind_and_is_told_at_the_default_verbosity(
    one_process: dict[str, bytes],
) -> None:
    header, *steps, end = records(one_process[TRACE])
    assert "notifications" not in header["env_config"]  # the default is not written
    assert fired(steps) == {"nudge": False, "reply": True, "ping": True, "quarter-past": True}
    assert all(step["clock"] for step in steps)  # simulated time on every step
    clocks = [step["clock"] for step in steps]
    assert clocks == sorted(clocks) and len(set(clocks)) == len(clocks)  # each step costs time
    notes = [o["text"] for step in steps for o in step["observations"] if o["type"] == "notification"]
    assert notes == [
        "Notification (2024-01-01T00:05:33+00:00): New message from U0005: Noon works.",
        "Notification (2024-01-01T00:06:33+00:00): A minute since the reply.",
        "Notification (2024-01-01T00:15:00+00:00): It is a quarter past.",
    ]
    assert end["scores"]["milestone_progress"] == 1.0  # the reply was seen inside its window
    assert one_process[TRACE] == one_process[TRACE.replace("trial-0", "trial-1")]  # a rerun: the same bytes


def test_worker_processes_write_the_one_process_bytes(tmp_path: Path, one_process: dict[str, bytes]) -> None:
    assert oracle_run(tmp_path / "procs", executor=ProcessExecutor(2)) == one_process
    assert len(traces_of(one_process)) == 2


@pytest.mark.parametrize(
    ("verbosity", "told"),
    [
        ("none", {"nudge": False, "reply": False, "ping": False, "quarter-past": False}),
        ("low", {"nudge": False, "reply": False, "ping": False, "quarter-past": True}),
        (
            "high",
            {"nudge": True, "reply": True, "ping": True},
        ),  # the waits end sooner: it is quarter past later
    ],
)
def test_another_verbosity_is_recorded_where_a_rerun_reads_it(
    tmp_path: Path, verbosity: Verbosity, told: dict[str, bool]
) -> None:
    folder = oracle_run(tmp_path, verbosity)
    header, *steps, _ = records(folder[TRACE])
    assert header["env_config"]["notifications"] == verbosity
    assert fired(steps) == told and set(told) <= set(EVENT_IDS)
    assert RunSummary.load(tmp_path).settings["notifications"] == verbosity  # a resume must match it


def test_a_fork_and_a_checkpoint_taken_before_an_event_fire_it_again_with_the_same_effect() -> None:
    """After the agent asks, the reply is due in 300 s: the env's world, a fork of it and the
    checkpoint restored each fire it at the same simulated time, to the same state."""
    task = lunch_task()
    env = ToolEnv(default_toolset(), [task], protocol="json")
    env.reset(seed=0)
    env.step(ToolCall(name="send_message", arguments=ASKED))
    world = env.world
    assert isinstance(world, MockWorld)
    fork = world.fork()
    world.checkpoint("asked")
    _, _, _, _, info = env.step(ToolCall(name="wait", arguments={"seconds": 900}))
    assert [e["id"] for e in info["events"]] == ["nudge", "reply"]
    reply_time, after = info["events"][1]["time"], world.state_hash()

    def fire_again(moved: MockWorld) -> dict[str, Any]:
        timeline = Timeline(task, moved, holds=lambda fact: state_fact_holds(fact, moved))
        assert "reply" not in timeline.fired()  # taken before it fired
        waited = timeline.wait(900)
        assert timeline.fired()["reply"].isoformat() == reply_time
        return waited

    assert fire_again(fork) == {"waited_s": 300.0, "now": reply_time, "notified": True}
    assert fork.state_hash() == after  # the same message, at the same time, and the same timeline
    assert fork.rows("messaging_messages", {"sender_id": REPLY["sender_id"], "content": REPLY["content"]})
    world.restore("asked")
    assert world.state_hash() != after
    fire_again(world)
    assert world.state_hash() == after
    env.close()
