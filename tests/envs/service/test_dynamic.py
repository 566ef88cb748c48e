"""A world that moves over the env service: a session on a real server (loopback) runs
`tests.dynamic_tasks`'s task at the verbosity its config names, `RemoteToolEnv` gets the same
observations (notifications included) and infos (the simulated clock, the events fired) as an
in-process ToolEnv, and the session's trace is the runner's bytes. A verbosity no env takes is
refused with a 4xx before anything changes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.dynamic_tasks import LUNCH_ID, write_dynamic_set
from toolgym.envs.agents import OracleAgent
from toolgym.envs.runner import run_episode
from toolgym.envs.service.catalog import Catalog
from toolgym.envs.service.client import RemoteEnvError, RemoteToolEnv
from toolgym.envs.tool_env import ToolEnv
from toolgym.mocks.events import Verbosity

from .support import Served, golden_outputs, serve, without_timing

SET = "dynamic"


@pytest.fixture(scope="module")
def dynamic_catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    return Catalog.build(task_files=[write_dynamic_set(tmp_path_factory.mktemp("tasks"), SET)])


@pytest.fixture
def dynamic_served(dynamic_catalog: Catalog, tmp_path: Path) -> Iterator[Served]:
    from toolgym.envs.service.app import create_app

    trace_dir = tmp_path / "traces"
    server = serve(create_app(dynamic_catalog, trace_dir=trace_dir))
    try:
        yield Served(server.url, trace_dir, server)
    finally:
        server.stop()


def local_env(catalog: Catalog, verbosity: Verbosity) -> ToolEnv:
    return ToolEnv(catalog.tools, catalog.task_set(SET), protocol="react", verbosity=verbosity)


def reference_trace(catalog: Catalog, verbosity: Verbosity, folder: Path) -> bytes:
    env = local_env(catalog, verbosity)
    result = run_episode(env, OracleAgent(env.protocol), env.tasks[LUNCH_ID], seed=0, trace_dir=folder)
    env.close()
    assert result.trace_path is not None
    return result.trace_path.read_bytes()


@pytest.mark.parametrize(("transport", "verbosity"), [("ws", "medium"), ("http", "high"), ("ws", "low")])
def test_a_session_runs_the_world_that_moves_as_in_process(
    dynamic_served: Served, dynamic_catalog: Catalog, tmp_path: Path, transport: Any, verbosity: Verbosity
) -> None:
    config = {"tasks": SET, "notifications": verbosity}
    local = local_env(dynamic_catalog, verbosity)
    remote = RemoteToolEnv(dynamic_served.url, config=config, transport=transport, agent="oracle")
    try:
        obs, info = local.reset(seed=0, options={"task": LUNCH_ID})
        r_obs, r_info = remote.reset(seed=0, options={"task": LUNCH_ID})
        assert r_obs == obs and without_timing(r_info) == without_timing(info)
        assert r_info["clock"] == "2024-01-01T00:00:00+00:00"
        fired = []
        for raw in golden_outputs(local, LUNCH_ID):
            expected, got = local.step(raw), remote.step(raw)
            assert got[:4] == expected[:4]  # notifications are in the observation text
            assert without_timing(got[4]) == without_timing(expected[4])
            assert got[4]["clock"] == expected[4]["clock"]
            fired += [e["id"] for e in got[4].get("events") or []]
        assert got[2] is True and {"nudge", "reply"} <= set(fired)
        assert remote.state()["config"].get("notifications") == (None if verbosity == "medium" else verbosity)
        assert remote.trace() == reference_trace(dynamic_catalog, verbosity, tmp_path / "local")
    finally:
        remote.close()
        local.close()


@pytest.mark.parametrize("bad", ["loud", "", 3, None, ["low"]])
def test_a_verbosity_no_env_takes_is_refused_with_a_4xx(dynamic_served: Served, bad: object) -> None:
    body = {"task_id": LUNCH_ID, "config": {"tasks": SET, "notifications": bad}}
    answer = httpx.post(dynamic_served.url + "/reset", json=body)
    if bad is None:  # null is "the server's default", as for every config field
        assert answer.status_code == 200, answer.text
        return
    assert answer.status_code == 422 and "notifications" in answer.text
    assert answer.json()["error"]["kind"] == "argument_error"


def test_a_refused_verbosity_leaves_the_episode_as_it_was(
    dynamic_served: Served, dynamic_catalog: Catalog
) -> None:
    raws = golden_outputs(local_env(dynamic_catalog, "medium"), LUNCH_ID)
    remote = RemoteToolEnv(dynamic_served.url, config={"tasks": SET}, agent="oracle")
    try:
        remote.reset(seed=0, options={"task": LUNCH_ID})
        remote.step(raws[0])  # the agent asks: the reply falls due
        before = remote.state()
        remote.config = {"tasks": SET, "notifications": "loud"}
        with pytest.raises(RemoteEnvError) as refused:
            remote.reset(seed=0, options={"task": LUNCH_ID})
        assert refused.value.kind == "argument_error" and "notifications" in refused.value.message
        assert remote.state() == before
        obs, _, done, _, info = remote.step(raws[1])  # the episode goes on: the wait ends with the reply
        assert not done and [e["id"] for e in info["events"]] == ["nudge", "reply"] and "Noon works." in obs
    finally:
        remote.close()


BUNDLED = ("dynamic-at-time", "dynamic-world-changes", "dynamic-wait-for-reply")


@pytest.mark.parametrize("set_name", BUNDLED)
def test_every_bundled_dynamic_task_over_a_session_writes_the_in_process_trace(
    dynamic_served: Served, dynamic_catalog: Catalog, tmp_path: Path, set_name: str
) -> None:
    """Each task of the bundled dynamic sets, played by the oracle over one WebSocket session, an
    episode after another: the session's trace of each is the runner's in-process bytes."""
    local = ToolEnv(dynamic_catalog.tools, dynamic_catalog.task_set(set_name), protocol="react")
    remote = RemoteToolEnv(dynamic_served.url, config={"tasks": set_name}, transport="ws", agent="oracle")
    try:
        for task in local.tasks:
            remote.reset(seed=0, options={"task": task.id})
            for raw in golden_outputs(local, task.id):
                _, _, terminated, _, info = remote.step(raw)
            assert terminated and info["scores"]["reward"] == 1.0, task.id
            expected = run_episode(
                local, OracleAgent(local.protocol), task, seed=0, trace_dir=tmp_path / task.id
            )
            assert expected.trace_path is not None
            assert remote.trace() == expected.trace_path.read_bytes(), task.id
    finally:
        remote.close()
        local.close()
