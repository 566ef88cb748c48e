"""The session class in-process (no network): wire types, refusals that change nothing, and the
trace it writes, byte for byte the runner's."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
from pydantic import ValidationError

from toolgym.actions import ToolCall
from toolgym.envs.agents import OracleAgent
from toolgym.envs.runner import run_episode
from toolgym.envs.service.catalog import Catalog, ServiceError, SessionConfig
from toolgym.envs.service.client import RemoteEnvError, RemoteToolEnv
from toolgym.envs.service.environment import (
    ToolgymAction,
    ToolgymEnvironment,
    world_bytes,
)
from toolgym.trace import read_trace

from .support import TASK_ID, TASK_SET, files_open_under, golden_outputs, local_env, serve


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"text": "a", "message": {}},
        {"action": {"type": "tool_call"}},
        {"action": []},
        {"action": {"type": "launch"}},
        {"text": 3},
        {"text": "a", "extra": 1},
    ],
)
def test_malformed_actions_are_refused(body: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        ToolgymAction.model_validate(body)


def test_action_payloads() -> None:
    assert ToolgymAction(text="hi").payload() == "hi"
    assert ToolgymAction(message={"role": "assistant"}).payload() == {"role": "assistant"}
    call = ToolgymAction(action={"type": "final_answer", "text": "x"}).payload()
    assert getattr(call, "text", None) == "x"
    assert isinstance(ToolgymAction(action=[{"type": "no_call"}]).payload(), list)


def test_trace_is_the_runners(catalog: Catalog, tmp_path: Path) -> None:
    local = local_env(catalog)
    result = run_episode(
        local, OracleAgent(local.protocol), local.tasks[TASK_ID], seed=0, trace_dir=tmp_path / "a"
    )
    session = ToolgymEnvironment(catalog, tmp_path / "b")
    session.reset(seed=0, task_id=TASK_ID, config=SessionConfig(tasks=TASK_SET).model_dump(), agent="oracle")
    for raw in golden_outputs(local):
        obs = session.step(ToolgymAction(text=raw))
    assert obs.done and obs.reward == result.reward == 1.0
    name = session.state.trace
    assert name is not None
    session.close()
    local.close()
    assert result.trace_path is not None
    assert (tmp_path / "b" / session.session_id / name).read_bytes() == result.trace_path.read_bytes()


def test_refusals_change_nothing(catalog: Catalog, tmp_path: Path) -> None:
    session = ToolgymEnvironment(catalog, tmp_path)
    with pytest.raises(ServiceError) as refused:
        session.step(ToolgymAction(text="a"))
    assert refused.value.kind == "not_reset"
    session.reset(seed=0, task_id=TASK_ID, config={"tasks": TASK_SET})
    before = session.state
    for bad in (
        {"task_id": "nope"},
        {"config": {"tasks": "nope"}},
        {"bogus": 1},
        {"config": {"reward": "x"}},
    ):
        with pytest.raises(ServiceError) as refused:
            session.reset(**bad)
        assert refused.value.kind == "argument_error"
    with pytest.raises(ServiceError):
        session.reset(seed=-1)
    assert session.state == before
    session.close()
    with pytest.raises(ServiceError) as refused:
        session.step(ToolgymAction(text="a"))
    assert refused.value.kind == "session_closed"
    (trace,) = (tmp_path / session.session_id).iterdir()
    end = read_trace(trace).end
    assert end is not None and end.status == "aborted"  # closed mid-episode: ended, not torn


def test_a_session_holds_its_trace_file_only_while_a_call_writes_it(catalog: Catalog, tmp_path: Path) -> None:
    """Sessions mid-episode, between calls, hold no descriptor of their traces (at ~1000 sessions
    one each ran a server into `ulimit -n 1024`), and the traces are the runner's all the same."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("lists the open files in /proc")
    local = local_env(catalog)
    raws = golden_outputs(local)
    sessions = [ToolgymEnvironment(catalog, tmp_path / "traces") for _ in range(20)]
    for session in sessions:
        session.reset(seed=0, task_id=TASK_ID, config={"tasks": TASK_SET}, agent="oracle")
        session.step(ToolgymAction(text=raws[0]))
    assert files_open_under(tmp_path) == []
    for session in sessions:
        for raw in raws[1:]:
            session.step(ToolgymAction(text=raw))
    assert files_open_under(tmp_path) == []
    result = run_episode(
        local, OracleAgent(local.protocol), local.tasks[TASK_ID], seed=0, trace_dir=tmp_path / "local"
    )
    assert result.trace_path is not None
    for session in sessions:
        assert session.state.trace is not None
        trace = tmp_path / "traces" / session.session_id / session.state.trace
        assert trace.read_bytes() == result.trace_path.read_bytes()
        session.close()
    local.close()


def test_a_step_past_the_memory_bound_holds_the_episode_until_a_reset(
    catalog: Catalog, tmp_path: Path
) -> None:
    """Once a step is refused for the session's memory bound (413 `session_memory`), every later
    step of the episode is refused too, however small, with nothing run, until a reset."""
    local = local_env(catalog)
    raws = golden_outputs(local)
    local.close()
    session = ToolgymEnvironment(catalog, tmp_path, max_bytes=1 << 20)
    session.reset(seed=0, task_id=TASK_ID, config={"tasks": TASK_SET}, agent="oracle")
    with pytest.raises(ServiceError) as refused:
        session.step(ToolgymAction(text="x" * 600_000))  # over half of 1 MiB
    assert (refused.value.kind, refused.value.status) == ("session_memory", 413)
    before = session.state
    for small in (raws[0], "Thought: hi"):
        with pytest.raises(ServiceError) as again:
            session.step(ToolgymAction(text=small))
        assert (again.value.kind, again.value.status) == ("session_memory", 413)
    assert session.state == before  # nothing ran
    session.reset(seed=0, task_id=TASK_ID)  # a new episode takes steps again
    for raw in raws:
        obs = session.step(ToolgymAction(text=raw))
    assert obs.done and obs.reward == 1.0
    session.close()


def test_a_new_config_rebuilds_the_env_and_ends_the_open_episode(catalog: Catalog, tmp_path: Path) -> None:
    session = ToolgymEnvironment(catalog, tmp_path)
    session.reset(seed=0, task_id=TASK_ID, config={"tasks": TASK_SET})
    obs = session.reset(seed=0, task_id=TASK_ID, config={"tasks": TASK_SET, "protocol": "json"})
    assert session.state.config is not None and session.state.config["protocol"] == "json"
    assert "JSON" in obs.info["instructions"] or "json" in obs.info["instructions"]
    traces = sorted((tmp_path / session.session_id).iterdir())
    assert [t.name.split(".")[0] for t in traces] == ["ep1", "ep2"]
    first_end = read_trace(traces[0]).end
    assert first_end is not None and first_end.status == "aborted"
    session.close()


def test_a_reset_config_is_resolved_once_per_server(catalog: Catalog) -> None:
    fresh = Catalog(catalog.task_paths, catalog.tools)
    raw = {"tasks": TASK_SET, "protocol": "json"}
    assert fresh.cached(raw) is None
    first, second = ToolgymEnvironment(fresh), ToolgymEnvironment(fresh)
    first.reset(seed=0, task_id=TASK_ID, config=raw)
    resolved = fresh.cached({"protocol": "json", "tasks": TASK_SET})  # any key order
    assert resolved is not None and resolved.protocol == "json"
    second.reset(seed=0, task_id=TASK_ID, config=dict(raw))
    assert second.state.config == first.state.config == resolved.as_dict()
    # a bad option beside a config resolved before reads as it does beside one resolved now
    refusals = []
    for cat in (fresh, Catalog(catalog.task_paths, catalog.tools)):
        with pytest.raises(ServiceError) as refused:
            ToolgymEnvironment(cat).reset(config=raw, agent=3)
        refusals.append((refused.value.kind, refused.value.message))
    assert refusals[0] == refusals[1] and refusals[0][0] == "argument_error"
    first.close()
    second.close()


def test_metadata(catalog: Catalog) -> None:
    assert ToolgymEnvironment(catalog).get_metadata().name == "toolgym"


def test_a_tool_server_killed_mid_episode_ends_the_session_episode_aborted(tmp_path: Path) -> None:
    """The env service on a real `toolgym serve` (`--tool-server`), SIGKILLed before the second
    call: that step answers done, unscored, with `info["aborted"]` naming the failure, and the
    session's trace ends `aborted` (eval leaves it out), never `terminated` with reward 0."""
    from tests.backends import calculator_task, tool_server

    tasks = tmp_path / "calc.jsonl"
    tasks.write_text(calculator_task("calc").model_dump_json() + "\n")
    with tool_server() as server:
        catalog = Catalog.build(task_files=[tasks], tool_names=[], tool_servers=[server.url])
        session = ToolgymEnvironment(catalog, tmp_path / "traces")
        session.reset(seed=0, task_id="calc", config={"tasks": "calc"})
        call = {"type": "tool_call", "name": "Calculator", "arguments": {"expression": "2+2"}}
        first = session.step(ToolgymAction(action=call))
        assert not first.done and first.info["observations"][0]["content"] == "4"
        server.kill()
        lost = session.step(ToolgymAction(action=call))
    assert lost.done and lost.reward == 0.0 and lost.info["error_kinds"] == ["infra_error"]
    assert lost.info["aborted"].startswith("Calculator: ") and "scores" not in lost.info
    assert session.state.done
    with pytest.raises(ServiceError) as over:
        session.step(ToolgymAction(action=call))
    assert over.value.kind == "episode_over"
    name = session.state.trace
    assert name is not None
    end = read_trace(tmp_path / "traces" / session.session_id / name).end
    assert end is not None and end.status == "aborted" and end.reward == 0.0 and end.steps == 2
    session.close()


# ---- the session's memory bound ------------------------------------------------------------------
SEND = "ctool-messaging-ask-010"  # offers send_message: each call stores up to 2000 characters


def _send(content: str) -> ToolCall:
    return ToolCall(
        name="send_message", arguments={"sender_id": "U0001", "to_user_id": "U0063", "content": content}
    )


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_a_session_past_its_memory_bound_is_refused_and_the_server_goes_on(
    catalog: Catalog, transport: Literal["ws", "http"]
) -> None:
    """A real server with a 1 MiB bound per session: the world's database stops at its half (a
    write past it is a tool_error that changes nothing), the episode's inputs at the other half
    (a 413 `session_memory`, nothing run); a reset frees the session, and another session is fine."""
    from toolgym.envs.service.app import create_app

    server = serve(create_app(catalog, max_session_bytes=1 << 20))
    config = {"tasks": TASK_SET, "max_steps": 100}
    greedy = RemoteToolEnv(server.url, config=config, transport=transport)
    other = RemoteToolEnv(server.url, config=config, transport=transport)
    try:
        greedy.reset(seed=0, options={"task": SEND})
        full = None
        for _ in range(60):  # 466 kB of seeded world + ~2 kB a message: full within ~25 writes
            obs, _, terminated, truncated, info = greedy.step(_send("m" * 1900))
            assert not (terminated or truncated)
            if "database or disk is full" in obs:
                full = info
                break
        assert full is not None and full["observations"][0]["error"]["kind"] == "tool_error"
        obs, *_, again = greedy.step(_send("m" * 1900))
        assert "database or disk is full" in obs and again["state_hash"] == full["state_hash"]

        ran = greedy.state()["step_count"]
        with pytest.raises(RemoteEnvError) as refused:  # inputs: 3 x 200k characters > 512 KiB
            for _ in range(3):
                greedy.step("x" * 200_000)
                ran += 1
        assert refused.value.kind == "session_memory"
        assert greedy.state()["step_count"] == ran  # the refused step did not run

        other.reset(seed=0, options={"task": TASK_ID})  # another session: untouched
        local = local_env(catalog)
        local.reset(seed=0, options={"task": TASK_ID})
        for raw in golden_outputs(local):
            assert other.step(raw)[:4] == local.step(raw)[:4]
        local.close()

        obs, info = greedy.reset(seed=0, options={"task": SEND})  # a reset starts afresh
        obs, *_, info = greedy.step(_send("hello"))
        assert "message_id" in obs
    finally:
        greedy.close()
        other.close()
        server.stop()


def test_idle_worlds_past_half_the_bound_are_built_afresh(catalog: Catalog) -> None:
    """Worlds kept between episodes stay within half the bound: past it, the next reset builds
    its world from the shared template, and the episodes are the same."""
    ids = [t.id for t in catalog.task_set(TASK_SET)]  # nine app sets, 164-683 kB each
    roomy = ToolgymEnvironment(catalog, None, max_bytes=64 << 20)
    tight = ToolgymEnvironment(catalog, None, max_bytes=2 << 20)
    try:
        for task_id in ids:
            answers = [
                e.reset_answer(seed=0, task_id=task_id, config={"tasks": TASK_SET}) for e in (roomy, tight)
            ]
            assert (
                answers[0]["observation"]["info"]["state_hash"]
                == answers[1]["observation"]["info"]["state_hash"]
            )
            assert tight._env is not None and roomy._env is not None
            kept = sum(world_bytes(w) for w in tight._env.built_worlds() if w is not tight._env.world)
            assert kept <= 1 << 20
        assert roomy._env is not None and tight._env is not None
        assert len(roomy._env.built_worlds()) > len(tight._env.built_worlds())
    finally:
        roomy.close()
        tight.close()
