"""Seeded fault plans on every kind of tool: local, mock-app writes, a remote tool server; a faulted
episode replays from its cassette byte for byte with zero live calls; bad plans are typed errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.recorder.toolsets import bank_task
from tests.toolservers.server.helpers import running
from toolgym.actions import Action, FinalAnswer, ToolCall
from toolgym.envs.agents import ScriptedAgent
from toolgym.envs.faults import (
    FaultLayer,
    FaultPlan,
    FaultPlanError,
    FaultRule,
    fault_aware,
    injected_of,
    offered_tool_names,
)
from toolgym.envs.rewards import task_scores
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.errors import ErrorKind
from toolgym.recorder.cassette import Cassette
from toolgym.tasks import AnswerSpec, Task
from toolgym.tools import ToolSet
from toolgym.toolservers.clients import RemoteToolSet
from toolgym.toolservers.gta.calculator import calculator

TOKEN = "faults-test-token-0123456"


def calc_task() -> Task:
    return Task(
        id="calc", query="2+3?", tools=["Calculator"], answer=AnswerSpec(whitelist=[["5"]]), max_steps=30
    )


def calc(i: int) -> ToolCall:
    return ToolCall(name="Calculator", arguments={"expression": f"{i} + 1"})


def plan(*rules: FaultRule, name: str = "p") -> FaultPlan:
    return FaultPlan(name=name, rules=rules)


def observations(env: ToolEnv, task: Task, actions: list[Any], seed: int = 0) -> list[dict[str, Any]]:
    env.reset(seed=seed, options={"task": task})
    out = []
    for action in actions:
        *_, info = env.step(action)
        out.extend(info["observations"])
    return out


def injected(obs: dict[str, Any]) -> dict[str, Any]:
    """The injected record of an observation that must have one."""
    record = injected_of(obs)
    assert record is not None, obs
    return record


class Sleeps:
    """Records the delays a fault layer asks for instead of sleeping: no wall clock in tests."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


# ---- plans ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "data",
    [
        {"rules": [{"kind": "http_503", "rate": 1.5}]},
        {"rules": [{"kind": "http_503", "rate": -0.1}]},
        {"rules": [{"kind": "http_503", "rate": "nan"}]},
        {"rules": [{"kind": "http_418"}]},
        {"rules": [{"kind": "outage"}]},  # an outage needs its window
        {"rules": [{"kind": "error", "steps": [3, 2]}]},
        {"rules": [{"kind": "error", "steps": [0, 2]}]},
        {"rules": [{"kind": "latency"}]},  # no delay
        {"rules": [{"kind": "latency", "delay_s": 1e9}]},
        {"rules": [{"kind": "error", "tool": "Calculator"}]},  # misspelt key
        {"name": "a b", "rules": []},
        ["not", "a", "plan"],
    ],
)
def test_impossible_plans_are_typed_errors(data: Any) -> None:
    with pytest.raises(FaultPlanError) as caught:
        FaultPlan.parse(data)
    assert caught.value.kind is ErrorKind.ARGUMENT_ERROR


def test_plan_files_load_and_bad_files_are_typed_errors(tmp_path: Path) -> None:
    good = tmp_path / "flaky-calc.json"
    good.write_text(json.dumps({"rules": [{"tools": "Calc*", "kind": "http_429", "rate": 0.25}]}))
    loaded = FaultPlan.load(good)
    assert loaded.name == "flaky-calc" and loaded.rules[0].rate == 0.25
    broken = tmp_path / "broken.json"
    broken.write_text("{rules: ")
    for path in (broken, tmp_path / "missing.json"):
        with pytest.raises(FaultPlanError):
            FaultPlan.load(path)


def test_a_plan_naming_tools_that_are_not_offered_is_refused_before_any_call() -> None:
    typo = plan(FaultRule(tools="Calculater", kind="error"))
    env = ToolEnv(ToolSet([calculator]), [calc_task()], tool_layers=[FaultLayer(typo)])
    with pytest.raises(FaultPlanError, match="Calculater"):
        env.reset(seed=0)
    with pytest.raises(FaultPlanError, match="Calculater"):
        FaultLayer(typo, known_tools=offered_tool_names(ToolSet([calculator]), [calc_task()]))
    # patterns are fnmatch patterns: one that matches an offered tool is fine
    FaultLayer(plan(FaultRule(tools="Calc*", kind="error")), known_tools=["Calculator"])


# ---- local tools ---------------------------------------------------------------------------------
def test_faults_are_drawn_from_the_episode_seed_and_repeat_exactly() -> None:
    flaky = plan(FaultRule(tools="Calculator", kind="http_503", rate=0.5))
    actions: list[Any] = [calc(i) for i in range(20)]

    def run(seed: int) -> list[dict[str, Any]]:
        env = ToolEnv(ToolSet([calculator]), [calc_task()], tool_layers=[FaultLayer(flaky)])
        return observations(env, calc_task(), actions, seed=seed)

    first, again, other = run(0), run(0), run(1)
    assert first == again
    failed = [i for i, o in enumerate(first) if o["error"] is not None]
    assert 0 < len(failed) < 20  # rate 0.5 over 20 calls: some of each
    assert failed != [i for i, o in enumerate(other) if o["error"] is not None]
    for i in failed:
        obs = first[i]
        assert obs["error"]["kind"] == "infra_error"
        assert obs["text"] == "infra_error: Calculator: HTTP 503 Service Unavailable"
        assert injected_of(obs) == {
            "kind": "http_503",
            "plan": "p",
            "rule": 0,
            "tool": "Calculator",
            "step": i + 1,
            "call": i + 1,
            "status": 503,
        }
    ok = next(o for o in first if o["error"] is None)
    assert injected_of(ok) is None


def test_every_failure_kind_and_the_error_counts() -> None:
    for kind, text in [
        ("error", "the tool server failed to answer"),
        ("http_429", "HTTP 429 Too Many Requests"),
        ("http_500", "HTTP 500 Internal Server Error"),
        ("timeout", "no answer before the time limit"),
    ]:
        env = ToolEnv(
            ToolSet([calculator]), [calc_task()], tool_layers=[FaultLayer(plan(FaultRule(kind=kind)))]
        )
        env.reset(seed=0)
        *_, info = env.step(calc(1))
        assert info["observations"][0]["text"] == f"infra_error: Calculator: {text}"
        assert info["error_counts"] == {"infra_error": 1}
        assert injected(info["observations"][0])["kind"] == kind


def test_outage_window_covers_steps_n_to_m_only() -> None:
    outage = plan(FaultRule(tools="*", kind="outage", steps=(2, 3)))
    env = ToolEnv(ToolSet([calculator]), [calc_task()], tool_layers=[FaultLayer(outage)])
    obs = observations(env, calc_task(), [calc(i) for i in range(5)])
    assert [o["error"] is not None for o in obs] == [False, True, True, False, False]
    assert injected(obs[1])["status"] == 503
    # two calls in one step: both inside the window
    env.reset(seed=0)
    env.step(calc(0))
    *_, info = env.step([calc(1), calc(2)])
    assert info["error_kinds"] == ["infra_error", "infra_error"]


def test_truncated_and_malformed_responses_are_damaged_deterministically() -> None:
    env = ToolEnv(ToolSet([calculator]), [calc_task()])
    clean = observations(
        env, calc_task(), [ToolCall(name="Calculator", arguments={"expression": "123456 * 789"})]
    )[0]
    call = ToolCall(name="Calculator", arguments={"expression": "123456 * 789"})
    cut = ToolEnv(
        ToolSet([calculator]),
        [calc_task()],
        tool_layers=[FaultLayer(plan(FaultRule(kind="truncate", keep=0.5)))],
    )
    truncated = observations(cut, calc_task(), [call])[0]
    assert truncated["text"] == clean["text"][: len(clean["text"]) // 2]
    assert truncated["error"]["kind"] == "infra_error" and truncated["files"] == []
    assert injected(truncated)["chars"] == len(clean["text"])
    bad = ToolEnv(
        ToolSet([calculator]), [calc_task()], tool_layers=[FaultLayer(plan(FaultRule(kind="malformed")))]
    )
    malformed = observations(bad, calc_task(), [call])[0]
    assert malformed["text"] == json.dumps({"result": clean["text"]}, separators=(",", ":"))[:-2]
    with pytest.raises(ValueError):
        json.loads(malformed["text"])
    assert observations(bad, calc_task(), [call])[0] == malformed


def test_latency_adds_the_planned_delay_and_keeps_the_result() -> None:
    sleeps = Sleeps()
    slow = plan(
        FaultRule(kind="latency", delay_s=0.001),
        FaultRule(kind="timeout", rate=1.0, delay_s=0.002, steps=(2, 2)),
    )
    layer = FaultLayer(slow, sleep=sleeps)
    env = ToolEnv(ToolSet([calculator]), [calc_task()], tool_layers=[layer])
    clean = observations(ToolEnv(ToolSet([calculator]), [calc_task()]), calc_task(), [calc(0)])
    obs = observations(env, calc_task(), [calc(0), calc(1)])
    assert obs[0] == clean[0]  # latency changes no observation
    assert obs[1]["error"]["kind"] == "infra_error"
    assert sleeps.delays == [0.001, 0.003]  # the timeout hangs on top of the latency
    assert [(e["kind"], e["step"]) for e in layer.events] == [("latency", 1), ("latency", 2), ("timeout", 2)]
    assert layer.events[0]["delay_s"] == 0.001
    # each step's info lists what was injected in it, latencies included
    env.reset(seed=0)
    *_, info = env.step(calc(0))
    assert [e["kind"] for e in info["faults"]] == ["latency"]
    *_, info = env.step(calc(1))
    assert [e["kind"] for e in info["faults"]] == ["latency", "timeout"]
    quiet = ToolEnv(ToolSet([calculator]), [calc_task()], tool_layers=[FaultLayer(plan())])
    quiet.reset(seed=0)
    assert "faults" not in quiet.step(calc(0))[4]


def test_unknown_tools_and_bad_arguments_stay_the_agents_errors() -> None:
    env = ToolEnv(
        ToolSet([calculator]), [calc_task()], tool_layers=[FaultLayer(plan(FaultRule(kind="error")))]
    )
    obs = observations(env, calc_task(), [ToolCall(name="Nope", arguments={})])
    assert obs[0]["error"]["kind"] == "unknown_tool" and injected_of(obs[0]) is None


# ---- mock apps -----------------------------------------------------------------------------------


def test_a_failed_mock_app_write_changes_nothing() -> None:
    task, a, b = bank_task()
    move = ToolCall(name="transfer", arguments={"from_account_id": a, "to_account_id": b, "amount": 12.5})
    env = ToolEnv(
        ToolSet(), [task], tool_layers=[FaultLayer(plan(FaultRule(tools="transfer", kind="http_500")))]
    )
    _, info = env.reset(seed=0)
    before = info["state_hash"]
    *_, info = env.step(move)
    assert info["error_kinds"] == ["infra_error"]
    assert info["state_hash"] == before and not info["state_diff"]
    *_, info = env.step(ToolCall(name="get_balance", arguments={"account_id": a}))  # reads go through
    assert info["error_kinds"] == []
    live = ToolEnv(ToolSet(), [task])
    live.reset(seed=0)
    *_, moved = live.step(move)
    assert moved["state_hash"] != before  # the same write without the fault does change the state


# ---- a remote tool server ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def remote() -> Iterator[RemoteToolSet]:
    with running([calculator], token=TOKEN) as url, RemoteToolSet(url, token=TOKEN) as tools:
        yield tools


def test_remote_tools_get_the_same_faults_as_local_ones(remote: RemoteToolSet) -> None:
    flaky = plan(
        FaultRule(tools="Calculator", kind="http_429", rate=0.4), FaultRule(kind="truncate", rate=0.3)
    )
    actions: list[Any] = [calc(i) for i in range(12)]
    local = observations(
        ToolEnv(ToolSet([calculator]), [calc_task()], tool_layers=[FaultLayer(flaky)]), calc_task(), actions
    )
    far = observations(ToolEnv(remote, [calc_task()], tool_layers=[FaultLayer(flaky)]), calc_task(), actions)
    assert far == local
    assert {injected(o)["kind"] for o in far if injected_of(o)} == {"http_429", "truncate"}


# ---- cassettes -----------------------------------------------------------------------------------
def test_a_faulted_episode_replays_from_its_cassette_byte_identical_with_zero_live_calls(
    tmp_path: Path,
) -> None:
    task, a, b = bank_task()
    actions: list[Action] = [
        ToolCall(name="get_balance", arguments={"account_id": a}),
        ToolCall(name="transfer", arguments={"from_account_id": a, "to_account_id": b, "amount": 12.5}),
        ToolCall(name="transfer", arguments={"from_account_id": a, "to_account_id": b, "amount": 12.5}),
        ToolCall(name="get_balance", arguments={"account_id": a}),
        ToolCall(name="get_balance", arguments={"account_id": b}),
        FinalAnswer(text="done"),
    ]
    faults = plan(
        FaultRule(
            tools="transfer", kind="http_503", steps=(2, 2)
        ),  # the first transfer fails, the retry works
        FaultRule(tools="get_balance", kind="truncate", steps=(4, 4)),
    )
    tape_path = tmp_path / "c.sqlite"

    def episode(cassette: Cassette, out: Path) -> Path:
        env = ToolEnv(
            ToolSet(), [task], tool_layers=[cassette, FaultLayer(faults)], reward_fn=fault_aware(task_scores)
        )
        result = run_episode(env, ScriptedAgent(env.protocol, actions), task, seed=3, trace_dir=out)
        assert result.trace_path is not None
        return result.trace_path

    with Cassette(tape_path, mode="record") as tape:
        recorded = episode(tape, tmp_path / "rec")
        assert tape.stats.live_calls == 4  # the failed transfer never reached the cassette
    with Cassette(tape_path, mode="replay") as tape:
        replayed = episode(tape, tmp_path / "rep")
        assert tape.stats.live_calls == 0 and tape.stats.misses == 0 and tape.stats.hits == 4
    assert replayed.read_bytes() == recorded.read_bytes()
    lines = [json.loads(line) for line in recorded.read_text().splitlines()]
    kinds = [
        injected(o)["kind"]
        for r in lines
        if r["record"] == "step"
        for o in r["observations"]
        if injected_of(o)
    ]
    assert kinds == ["http_503", "truncate"]
    assert lines[0]["env_config"]["faults"] == [faults.model_dump(mode="json")]  # the header names the plan
    assert [[f["kind"] for f in r["faults"] or []] for r in lines if r["record"] == "step"] == [
        [],
        ["http_503"],
        [],
        ["truncate"],
        [],
        [],
    ]
    end = lines[-1]
    assert end["error_counts"] == {"infra_error": 2} and end["scores"]["injected_faults"] == 2.0
    assert end["scores"]["reward"] == 1.0  # the agent recovered: retried the write once, answered


# ---- the env service -----------------------------------------------------------------------------
def test_an_env_service_session_runs_under_its_fault_plan(tmp_path: Path) -> None:
    from toolgym.envs.service.catalog import Catalog, ServiceError
    from toolgym.envs.service.environment import ToolgymAction, ToolgymEnvironment

    catalog = Catalog.build()
    task_id = "ctool-express-cancel-002"  # a write
    faults = {"name": "svc", "rules": [{"tools": "*", "kind": "http_503", "steps": [1, 1]}]}
    session = ToolgymEnvironment(catalog, tmp_path)
    first = session.reset(seed=0, task_id=task_id, config={"tasks": "ctool", "faults": faults})
    env = session._env
    assert env is not None
    golden = [env.protocol.format_action(s.action) for s in env.tasks[task_id].golden]
    obs = session.step(ToolgymAction(text=golden[0]))
    assert obs.info["error_kinds"] == ["infra_error"]
    assert injected(obs.info["observations"][0])["kind"] == "http_503"
    assert obs.info["state_hash"] == first.info["state_hash"]  # the write never ran
    assert session.state.config is not None and session.state.config["faults"]["name"] == "svc"
    for bad in (
        {"tasks": "ctool", "faults": {"rules": [{"kind": "http_503", "rate": 7}]}},
        {"tasks": "ctool", "faults": {"rules": [{"tools": "Calculater", "kind": "error"}]}},
        {"tasks": "ctool", "faults": {"rules": [{"kind": "latency", "delay_s": 30}]}},
    ):
        with pytest.raises(ServiceError) as refused:
            session.reset(seed=0, task_id=task_id, config=bad)
        assert refused.value.kind == "argument_error"
    session.close()


def test_a_failure_before_the_call_prevails_over_damage_to_its_response() -> None:
    both = plan(FaultRule(kind="truncate"), FaultRule(kind="http_500"))
    layer = FaultLayer(both)
    env = ToolEnv(ToolSet([calculator]), [calc_task()], tool_layers=[layer])
    obs = observations(env, calc_task(), [calc(1)])
    assert injected(obs[0])["kind"] == "http_500"  # the call never ran: nothing to truncate
    assert [e["kind"] for e in layer.events] == ["http_500"]


def test_a_failed_write_on_the_mock_service_changes_nothing_there() -> None:
    """A mock app served over HTTP (RemoteMockWorld on a real mock service): the faulted write
    never reaches the service; the same write without the fault does change its state."""
    from toolgym.mocks.service import MockServiceClient, RemoteMockWorld, ThreadedServer, create_app

    task, a, b = bank_task()
    move = ToolCall(name="transfer", arguments={"from_account_id": a, "to_account_id": b, "amount": 12.5})
    with ThreadedServer(create_app()) as url, MockServiceClient(url) as client:
        world = RemoteMockWorld(client, ["banking"], seed=task.seed, clock=task.clock)
        faults = plan(FaultRule(tools="transfer", kind="http_503", steps=(1, 1)))
        env = ToolEnv(ToolSet(), [task], world=world, tool_layers=[FaultLayer(faults)])
        _, info = env.reset(seed=0)
        before = info["state_hash"]
        *_, failed = env.step(move)
        assert (
            failed["error_kinds"] == ["infra_error"] and injected(failed["observations"][0])["status"] == 503
        )
        assert failed["state_hash"] == before == world.state_hash() and not failed["state_diff"]
        *_, moved = env.step(move)  # step 2: outside the outage, the retry reaches the service
        assert moved["error_kinds"] == [] and moved["state_hash"] != before
        env.close()
