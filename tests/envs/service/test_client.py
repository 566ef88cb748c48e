"""RemoteToolEnv: a gymnasium.Env on a service session, over WebSocket or HTTP; same episode as
in-process; vector envs take it; a dead or killed server is an infra_error, never an exception."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import httpx
import pytest

from toolgym.envs.service.catalog import Catalog
from toolgym.envs.service.client import RemoteEnvError, RemoteToolEnv, step_body
from toolgym.envs.service.environment import SLIM_DROPS
from toolgym.envs.tool_env import ToolEnv
from toolgym.trace import read_trace

from .support import TASK_ID, TASK_SET, Served, free_port, golden_outputs, local_env, serve, without_timing

CONFIG = {"tasks": TASK_SET}


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_remote_env_matches_in_process(served: Served, catalog: Catalog, transport: Any) -> None:
    local = local_env(catalog)
    remote = RemoteToolEnv(served.url, config=CONFIG, transport=transport, agent="oracle")
    assert isinstance(remote, gym.Env)
    try:
        for seed in (0, 3):  # two episodes on one session
            obs, info = local.reset(seed=seed, options={"task": TASK_ID})
            r_obs, r_info = remote.reset(seed=seed, options={"task": TASK_ID})
            assert r_obs == obs and without_timing(r_info) == without_timing(info)
            assert r_info["session_id"] == remote.session_id
            for raw in golden_outputs(local):
                expected = local.step(raw)
                got = remote.step(raw)
                assert got[:4] == expected[:4]
                assert without_timing(got[4]) == without_timing(expected[4])
            assert got[1] == 1.0 and got[2] is True
            with pytest.raises(RemoteEnvError) as refused:  # as in-process, a step after the end is refused
                remote.step(golden_outputs(local)[0])
            assert refused.value.kind == "episode_over"
        state = remote.state()
        assert state["step_count"] == 2 and state["task_id"] == TASK_ID
        trace = read_trace_bytes(remote.trace())
        assert trace[0]["agent"] == "oracle" and trace[-1]["record"] == "end"
    finally:
        remote.close()
        local.close()


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_dense_rewards_arrive_as_in_process(served: Served, catalog: Catalog, transport: Any) -> None:
    config = {**CONFIG, "reward_mode": "milestones"}
    local = ToolEnv(catalog.tools, catalog.task_set(TASK_SET), reward_mode="milestones")
    remote = RemoteToolEnv(served.url, config=config, transport=transport, agent="oracle")
    try:
        local.reset(seed=0, options={"task": TASK_ID})
        remote.reset(seed=0, options={"task": TASK_ID})
        rewards = []
        for raw in golden_outputs(local):
            expected, got = local.step(raw), remote.step(raw)
            assert got[:4] == expected[:4]
            rewards.append(float(got[1]))
        assert rewards[0] > 0 and rewards[-1] == 1.0  # the write's milestones, then the usual reward
        assert without_timing(got[4])["milestones"] == without_timing(expected[4])["milestones"]
        end = read_trace_bytes(remote.trace())[-1]
        assert end["scores"]["milestone_progress"] == 1.0 and end["milestones"]
    finally:
        remote.close()
        local.close()


def test_a_bad_reward_mode_is_refused_with_a_4xx(served: Served) -> None:
    answer = httpx.post(
        served.url + "/reset", json={"task_id": TASK_ID, "config": {**CONFIG, "reward_mode": "dense"}}
    )
    assert 400 <= answer.status_code < 500 and "reward_mode" in answer.text


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_a_slim_session_answers_without_the_heavy_info_and_traces_the_same_bytes(
    served: Served, catalog: Catalog, transport: Any
) -> None:
    """`info: "slim"` drops the parsed actions, structured observations, state diff and faults from
    each answer; text, reward, done and the rest of the info are in-process's, and the server's
    trace is the bytes a full session writes for the same episode."""
    local = local_env(catalog)
    traces = []
    try:
        for info_mode in ("slim", "full"):
            remote = RemoteToolEnv(served.url, config={**CONFIG, "info": info_mode}, transport=transport)
            try:
                obs, _ = local.reset(seed=0, options={"task": TASK_ID})
                assert remote.reset(seed=0, options={"task": TASK_ID})[0] == obs
                for raw in golden_outputs(local):
                    expected = local.step(raw)
                    got = remote.step(raw)
                    assert got[:4] == expected[:4]
                    wanted = without_timing(expected[4])
                    if info_mode == "slim":
                        assert {"actions", "observations", "state_diff"} <= wanted.keys()
                        wanted = {k: v for k, v in wanted.items() if k not in SLIM_DROPS}
                    assert without_timing(got[4]) == wanted
                state = remote.state()
                assert state["config"]["info"] == info_mode and state["state_diff"] is not None
                traces.append(remote.trace())
            finally:
                remote.close()
    finally:
        local.close()
    slim, full = (read_trace_bytes(t) for t in traces)
    assert slim == full and traces[0] == traces[1]


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_steps_on_the_event_loop_give_the_same_episode(
    catalog: Catalog, tmp_path: Path, transport: Any
) -> None:
    """`steps_on_loop` (no thread hop per step): the same answers as in-process, the same trace."""
    from toolgym.envs.service.app import create_app

    server = serve(create_app(catalog, trace_dir=tmp_path, steps_on_loop=True))
    local = local_env(catalog)
    remote = RemoteToolEnv(server.url, config=CONFIG, transport=transport, agent="oracle")
    try:
        obs, info = local.reset(seed=0, options={"task": TASK_ID})
        got_obs, got_info = remote.reset(seed=0, options={"task": TASK_ID})
        assert got_obs == obs and without_timing(got_info) == without_timing(info)
        for raw in golden_outputs(local):
            expected, got = local.step(raw), remote.step(raw)
            assert got[:4] == expected[:4] and without_timing(got[4]) == without_timing(expected[4])
        trace = read_trace_bytes(remote.trace())
        assert trace[-1]["record"] == "end" and trace[-1]["reward"] == 1.0
    finally:
        remote.close()
        local.close()
        server.stop()


def read_trace_bytes(data: bytes) -> list[dict[str, Any]]:
    import json

    return [json.loads(line) for line in data.decode().splitlines()]


def test_gymnasium_env_checker(served: Served) -> None:
    from gymnasium.utils.env_checker import check_env

    env = RemoteToolEnv(served.url, config=CONFIG)
    try:
        check_env(env, skip_render_check=True)
    finally:
        env.close()


def test_vector_env_of_remote_envs(served: Served, catalog: Catalog) -> None:
    local = local_env(catalog)
    raws = golden_outputs(local)
    vec = gym.vector.SyncVectorEnv(
        [lambda: RemoteToolEnv(served.url, config=CONFIG) for _ in range(2)],
        autoreset_mode=gym.vector.AutoresetMode.DISABLED,
    )
    try:
        obs, _ = vec.reset(seed=0, options={"task": TASK_ID})
        assert list(obs) == [local.reset(seed=0, options={"task": TASK_ID})[0]] * 2
        for raw in raws:
            obs, rewards, terminated, _, _ = vec.step((raw, raw))
        assert list(rewards) == [1.0, 1.0] and list(terminated) == [True, True]
    finally:
        vec.close()
        local.close()


def test_structured_actions_and_messages_on_the_wire() -> None:
    from toolgym.actions import FinalAnswer, ToolCall

    call = ToolCall(name="x", arguments={"a": 1})
    assert step_body("text") == {"text": "text"}
    assert step_body(call) == {"action": call.model_dump(mode="json")}
    assert step_body([call, FinalAnswer(text="y")])["action"][1]["type"] == "final_answer"
    assert step_body({"role": "assistant", "content": "hi"}) == {
        "message": {"role": "assistant", "content": "hi"}
    }
    with pytest.raises(TypeError):
        step_body(3)


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_a_full_server_is_an_infra_error(catalog: Catalog, tmp_path: Path, transport: Any) -> None:
    from toolgym.envs.service.app import create_app

    server = serve(create_app(catalog, trace_dir=tmp_path, max_sessions=1))
    first = RemoteToolEnv(server.url, config=CONFIG, transport=transport)
    second = RemoteToolEnv(server.url, config=CONFIG, transport=transport)
    try:
        assert not first.reset(seed=0)[0].startswith("infra_error")
        obs, info = second.reset(seed=0)
        assert obs.startswith("infra_error:") and "capacity" in obs and info["error_kinds"] == ["infra_error"]
        first.close()  # a slot frees up: the next reset gets a session
        assert not second.reset(seed=0)[0].startswith("infra_error")
    finally:
        first.close()
        second.close()
        server.stop()


@pytest.mark.parametrize("transport", ["http", "ws"])
def test_close_returns_once_the_server_has_freed_the_slot(
    catalog: Catalog, tmp_path: Path, transport: Any
) -> None:
    """On a one-session server, two clients take turns: each reset right after the other's close
    gets the slot (a ws close that returned before the server ended its session was refused)."""
    from toolgym.envs.service.app import create_app

    server = serve(create_app(catalog, trace_dir=tmp_path, max_sessions=1))
    envs = [RemoteToolEnv(server.url, config=CONFIG, transport=transport) for _ in range(2)]
    try:
        refused = []
        for turn in range(20):
            env = envs[turn % 2]
            obs, _ = env.reset(seed=0)
            refused += [turn] if obs.startswith("infra_error") else []
            env.close()
        assert refused == []
    finally:
        for env in envs:
            env.close()
        server.stop()


def test_a_session_lost_on_the_server_is_an_infra_error(served: Served, catalog: Catalog) -> None:
    local = local_env(catalog)
    env = RemoteToolEnv(served.url, config=CONFIG, transport="http")
    try:
        env.reset(seed=0, options={"task": TASK_ID})
        lost = env.session_id
        httpx.post(f"{served.url}/close", json={"session_id": lost})  # as the idle reaper would
        obs, reward, terminated, truncated, info = env.step(golden_outputs(local)[0])
        assert obs.startswith("infra_error:") and (reward, terminated, truncated) == (0.0, False, True)
        obs, info = env.reset(seed=0, options={"task": TASK_ID})  # a new session, the episode again
        assert "error_kinds" not in info  # a reset's info, not an infra error's
        assert env.session_id not in (None, lost) and obs == local.reset(seed=0, options={"task": TASK_ID})[0]
    finally:
        env.close()
        local.close()


def test_http_steps_outlive_the_servers_keep_alive(catalog: Catalog, tmp_path: Path) -> None:
    """The client keeps one connection; one the server closed while idle is reopened, not an error."""
    from toolgym.envs.service.app import create_app

    server = serve(create_app(catalog, trace_dir=tmp_path))
    server.server.config.timeout_keep_alive = 1  # read per connection
    local = local_env(catalog)
    env = RemoteToolEnv(server.url, config=CONFIG, transport="http")
    try:
        env.reset(seed=0, options={"task": TASK_ID})
        local.reset(seed=0, options={"task": TASK_ID})
        session_id = env.session_id
        for raw in golden_outputs(local):
            time.sleep(1.5)  # past the keep-alive: the server has closed the connection
            expected = local.step(raw)
            got = env.step(raw)
            assert got[:4] == expected[:4] and env.session_id == session_id
    finally:
        env.close()
        local.close()
        server.stop()


def test_http_client_on_a_descriptor_past_1024(served: Served, catalog: Catalog) -> None:
    """A busy process's sockets get descriptors past select()'s 1024: the client still steps."""
    resource = pytest.importorskip("resource")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"the hard limit of open files is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    filler = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    local = local_env(catalog)
    env = RemoteToolEnv(served.url, config=CONFIG, transport="http")
    try:
        env.reset(seed=0, options={"task": TASK_ID})
        local.reset(seed=0, options={"task": TASK_ID})
        assert env._http._conn is not None and env._http._conn.sock.fileno() > 1024
        for raw in golden_outputs(local):
            assert env.step(raw)[:4] == local.step(raw)[:4]
    finally:
        env.close()
        local.close()
        for fd in filler:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_websocket_session_reaped_while_idle(catalog: Catalog, tmp_path: Path) -> None:
    from toolgym.envs.service.app import create_app

    local = local_env(catalog)
    server = serve(create_app(catalog, trace_dir=tmp_path, idle_timeout_s=0.5))
    env = RemoteToolEnv(server.url, config=CONFIG)
    try:
        env.reset(seed=0, options={"task": TASK_ID})
        reaped = env.session_id
        deadline = time.monotonic() + 30  # openenv's reaper wakes every max(timeout / 4, 5) s
        while httpx.get(f"{server.url}/sessions").json()["sessions"]:
            assert time.monotonic() < deadline, "the session was not reaped"
            time.sleep(0.05)
        obs, _, _, truncated, _ = env.step(golden_outputs(local)[0])
        assert obs.startswith("infra_error:") and "session_closed" in obs and truncated
        obs, _ = env.reset(seed=0, options={"task": TASK_ID})  # a new connection, a new session
        assert env.session_id != reaped and obs == local.reset(seed=0, options={"task": TASK_ID})[0]
    finally:
        env.close()
        local.close()
        server.stop()


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_no_server_is_an_infra_error(transport: Any) -> None:
    env = RemoteToolEnv(f"http://127.0.0.1:{free_port()}", transport=transport, connect_timeout_s=2)
    try:
        obs, info = env.reset(seed=0)
        assert obs.startswith("infra_error:") and info["error_kinds"] == ["infra_error"]
        obs, reward, terminated, truncated, info = env.step("Thought: hi\nFinal Answer: 1")
        assert obs.startswith("infra_error:") and (reward, terminated, truncated) == (0.0, False, True)
    finally:
        env.close()


def test_wrong_token_is_an_infra_error(served: Served) -> None:
    # the test server has no token: a token it does not ask for is harmless
    env = RemoteToolEnv(served.url, config=CONFIG, token="unused-token-0123456789")
    try:
        assert not env.reset(seed=0, options={"task": TASK_ID})[0].startswith("infra_error")
    finally:
        env.close()


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_server_killed_mid_episode(
    server_process: tuple[str, subprocess.Popen[bytes], Path], catalog: Catalog, transport: Any
) -> None:
    url, proc, trace_dir = server_process
    local = local_env(catalog)
    raws = golden_outputs(local)
    env = RemoteToolEnv(url, config=CONFIG, transport=transport, agent="oracle")
    try:
        env.reset(seed=0, options={"task": TASK_ID})
        obs, _, _, _, info = env.step(raws[0])
        assert info["error_kinds"] == []
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        obs, reward, terminated, truncated, info = env.step(raws[1])
        assert obs.startswith("infra_error:") and info["error_kinds"] == ["infra_error"]
        assert (reward, terminated, truncated) == (0.0, False, True)
        obs, info = env.reset(seed=0, options={"task": TASK_ID})  # still no exception
        assert info["error_kinds"] == ["infra_error"]
    finally:
        env.close()
        local.close()
    # the server-side trace of the killed episode is readable up to the last step it ran
    (partial,) = list(trace_dir.glob("*/*.partial"))
    trace = read_trace(partial)
    assert trace.header.task_id == TASK_ID and len(trace.steps) == 1 and trace.end is None


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_a_session_with_a_fault_plan_matches_in_process_faults(
    served: Served, catalog: Catalog, transport: Any
) -> None:
    from toolgym.envs.faults import FaultLayer, FaultPlan

    faults = {"name": "svc", "rules": [{"tools": "*", "kind": "http_503", "rate": 0.5}]}
    local = local_env(catalog)
    local.add_tool_layer(FaultLayer(FaultPlan.parse(faults)))
    remote = RemoteToolEnv(served.url, config={**CONFIG, "faults": faults}, transport=transport)
    injected = 0
    try:
        for seed in (0, 3, 4):  # seed 3 meets a 503, seeds 0 and 4 do not
            assert (
                remote.reset(seed=seed, options={"task": TASK_ID})[0]
                == local.reset(seed=seed, options={"task": TASK_ID})[0]
            )
            for raw in golden_outputs(local):
                expected, got = local.step(raw), remote.step(raw)
                assert got[:4] == expected[:4] and without_timing(got[4]) == without_timing(expected[4])
                injected += got[4]["error_kinds"].count("infra_error")
        assert injected == 1
        bad = RemoteToolEnv(
            served.url, config={**CONFIG, "faults": {"rules": [{"kind": "http_503", "rate": 2}]}}
        )
        with pytest.raises(RemoteEnvError) as refused:
            bad.reset(seed=0)
        assert refused.value.kind == "argument_error"
        bad.close()
    finally:
        remote.close()
        local.close()
