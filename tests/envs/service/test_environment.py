"""The session class in-process (no network): wire types, refusals that change nothing, and the
trace it writes, byte for byte the runner's."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("openenv", reason="the env service needs openenv-core (toolgym[service])")

from pydantic import ValidationError

from toolgym.envs.agents import OracleAgent
from toolgym.envs.runner import run_episode
from toolgym.envs.service.catalog import Catalog, ServiceError, SessionConfig
from toolgym.envs.service.environment import ToolgymAction, ToolgymEnvironment
from toolgym.trace import read_trace

from .support import TASK_ID, TASK_SET, golden_outputs, local_env


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
