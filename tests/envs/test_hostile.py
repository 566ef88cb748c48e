"""Hostile input, nothing lost (issue 10, item 5): `step` never raises on what an agent sends or on
a remote world or tool server that dies mid-episode; every step is recorded in a trace that reads
back; `close` releases the file store. Real SQLite worlds and real servers on 127.0.0.1."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.hostile import nested_dict
from toolgym.actions import FinalAnswer, ToolCall
from toolgym.envs.runner import EpisodeAborted, run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.mocks.service import MockServiceClient, RemoteMockWorld, ThreadedServer, create_app
from toolgym.tasks import AnswerSpec, GoldenStep, Task
from toolgym.toolservers.clients import RemoteToolSet
from toolgym.toolservers.gta.calculator import calculator
from toolgym.toolservers.server import ServerThread
from toolgym.toolservers.server import create_app as create_tool_app
from toolgym.trace import read_trace

BALANCE = {"account_id": "ACC-10001"}
TRANSFER = {"from_account_id": "ACC-10001", "to_account_id": "ACC-10002", "amount": 25.0}
BANKING = Task(
    id="bank",
    query="Check ACC-10001, then move $25 to ACC-10002.",
    apps=["banking"],
    answer=AnswerSpec(whitelist=[["done"]]),
    golden=[
        GoldenStep(action=ToolCall(name="transfer", arguments=TRANSFER)),
        GoldenStep(action=FinalAnswer(text="done")),
    ],  # a write: the reward scores the world's state
    max_steps=8,
)


def nested_text(levels: int) -> str:
    return '{"a":' * levels + "1" + "}" * levels


class Script:
    """An agent that says the given outputs in turn, then a final answer."""

    name = "hostile"

    def __init__(self, outputs: Sequence[Any]) -> None:  # raw outputs, actions, lists of them
        self.outputs = list(outputs)
        self.turn = 0

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        self.turn = 0

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        self.turn += 1
        if self.turn <= len(self.outputs):
            return self.outputs[self.turn - 1]
        return FinalAnswer(text="done")


def _cyclic() -> dict[str, Any]:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    return loop


class Opaque:
    pass


STRUCTURED: dict[str, Any] = {
    "nested-500": nested_dict(500),
    "nested-5000": nested_dict(5000),
    "cyclic": _cyclic(),
    "nan": math.nan,
    "infinity": math.inf,
    "huge-int": 10**5000,
    "surrogate": "\ud800",
    "surrogate-key": {"\udfff": 1},
    "bytes": b"\xff\x00",
    "set": {1, 2},
    "object": Opaque(),
    "int-keys": {1: "x"},
}


@pytest.mark.parametrize("value", list(STRUCTURED.values()), ids=list(STRUCTURED))
def test_structured_arguments_json_cannot_hold_are_argument_errors(value: Any, tmp_path: Path) -> None:
    env = ToolEnv(tasks=[BANKING])
    call = ToolCall(name="get_balance", arguments={"account_id": value})
    result = run_episode(
        env,
        Script([call, [call, ToolCall(name="get_balance", arguments=BALANCE)]]),
        BANKING,
        trace_dir=tmp_path,
    )
    assert result.trace_path is not None
    trace = read_trace(result.trace_path)
    assert trace.complete and len(trace.steps) == 3
    first, second = trace.steps[0], trace.steps[1]
    assert first.error_kinds == ["argument_error"]
    assert first.state_hash_after == first.state_hash_before  # refused: nothing ran
    assert first.observations[0]["tool"] == "get_balance"
    # one bad call among several: the good one still runs
    assert second.error_kinds == ["argument_error"] and second.observations[1]["error"] is None
    json.dumps(first.actions)  # recorded as JSON data (json_safe replacements)
    env.close()


HOSTILE_TEXT: dict[str, list[Any]] = {
    "react": [
        f"Action: get_balance\nAction Input: {nested_text(500)}",
        f"Action: get_balance\nAction Input: {nested_text(5000)}",
        'Action: get_balance\nAction Input: {"account_id": "\\ud800"}',
        'Thought: \ud800\udfff\nAction: get_balance\nAction Input: {"account_id": "\ud800"}',
        "Final Answer: " + "x" * 1_000_000,
    ],
    "json": [
        json.dumps({"name": "get_balance", "args": nested_dict(500)}),
        '{"name": "get_balance", "args": ' + nested_text(5000) + "}",
        '{"name": "get_balance", "args": {"account_id": "\ud800"}}',
        {"name": "get_balance", "args": {"account_id": nested_dict(600)}},
        "x" * 1_000_000,
    ],
    "openai": [
        {
            "role": "assistant",
            "tool_calls": [{"function": {"name": "get_balance", "arguments": nested_text(500)}}],
        },
        {
            "role": "assistant",
            "tool_calls": [{"function": {"name": "get_balance", "arguments": nested_text(5000)}}],
        },
        {
            "role": "assistant",
            "tool_calls": [{"function": {"name": "get_balance", "arguments": nested_dict(5000)}}],
        },
        {
            "role": "assistant",
            "content": "\ud800",
            "tool_calls": [{"function": {"name": "get_balance", "arguments": '{"account_id": "\\udfff"}'}}],
        },
        {"role": "assistant", "content": "y" * 1_000_000},
    ],
}
EXPECTED_KINDS = {
    "react": ["argument_error", "format_error", "argument_error", "argument_error", "format_error"],
    "json": ["argument_error", "format_error", "argument_error", "argument_error", "format_error"],
    "openai": ["argument_error", "format_error", "argument_error", "argument_error", "format_error"],
}


@pytest.mark.parametrize("protocol", list(HOSTILE_TEXT))
def test_hostile_outputs_through_each_protocol_are_typed_errors_and_recorded(
    protocol: str, tmp_path: Path
) -> None:
    """Deep nesting as text and as message objects, lone surrogates, 1 MB outputs: each step
    returns a typed error, leaves the state alone, and its line reads back with the raw output."""
    env = ToolEnv(tasks=[BANKING], protocol=protocol)
    outputs = HOSTILE_TEXT[protocol]
    result = run_episode(env, Script(outputs), BANKING, trace_dir=tmp_path)
    assert result.trace_path is not None
    result.trace_path.read_bytes().decode("utf-8")  # strict UTF-8: surrogates are escaped
    trace = read_trace(result.trace_path)
    assert trace.complete and len(trace.steps) == len(outputs) + 1
    assert [s.error_kinds for s in trace.steps[:-1]] == [[k] for k in EXPECTED_KINDS[protocol]]
    for step in trace.steps:
        assert step.state_hash_after == step.state_hash_before
    assert trace.steps[2].raw is not None
    if isinstance(outputs[2], str):
        assert trace.steps[2].raw == outputs[2]  # a surrogate reads back as itself
    env.close()


# ---- servers that die mid-episode ------------------------------------------------------------
def _on_step(env: ToolEnv, actions: dict[int, Callable[[], None]]) -> None:
    """Run `actions[n]` right after step n (a listener sees each step's info)."""
    env.subscribe(
        lambda event, info: actions[info["step"]]() if event == "step" and info["step"] in actions else None
    )


def test_a_mock_service_back_before_the_second_try_costs_nothing(tmp_path: Path) -> None:
    """The server goes away after step 1; the world's infra hook brings it back (what a supervisor
    does). The transfer's second try, in the same step, runs on the session rebuilt from the
    journal: no infra_error step, the episode ends scored, its trace complete."""
    first = ThreadedServer(create_app())
    url = first.start()
    servers = [first]

    def restart(exc: Exception) -> None:  # once, as a supervisor does for one outage
        if len(servers) == 1:
            servers.append(ThreadedServer(create_app()))
            client.url = servers[-1].start()  # a restarted server on a new port, as the lab's

    client = MockServiceClient(url, timeout_s=30)
    world = RemoteMockWorld(
        client, ["banking"], seed=BANKING.seed, clock=BANKING.clock, on_infra_error=restart
    )
    env = ToolEnv(tasks=[BANKING], world=world)
    _on_step(env, {1: first.stop})
    script = Script(
        [ToolCall(name="get_balance", arguments=BALANCE), ToolCall(name="transfer", arguments=TRANSFER)]
    )
    try:
        result = run_episode(env, script, BANKING, trace_dir=tmp_path)
        assert result.trace_path is not None
        trace = read_trace(result.trace_path)
        assert [s.error_kinds for s in trace.steps] == [[], [], []]
        assert trace.complete and trace.end is not None and trace.end.status == "terminated"
        assert result.reward == 1.0 and world.recoveries == 1 and len(servers) == 2
        assert trace.steps[1].state_diff  # the transfer changed the rebuilt session's state
    finally:
        env.close()
        client.close()
        servers[-1].stop()


def test_a_mock_service_gone_for_good_aborts_the_episode_unscored(tmp_path: Path) -> None:
    """`step` still never raises: the step that meets the dead service (twice) ends the episode
    truncated, reward 0, unscored, `info["aborted"]` saying why; the runner raises EpisodeAborted
    and leaves the trace partial, so no run scores the episode as the agent's failure."""
    server = ThreadedServer(create_app())
    client = MockServiceClient(server.start(), timeout_s=5)
    env = ToolEnv(tasks=[BANKING], world=RemoteMockWorld(client, ["banking"]))
    env.reset(options={"task": BANKING})
    server.stop()
    _, reward, terminated, truncated, info = env.step(ToolCall(name="transfer", arguments=TRANSFER))
    assert (reward, terminated, truncated) == (0.0, False, True)
    assert info["aborted"].startswith("transfer: mock service at") and "unreachable" in info["aborted"]
    assert "scores" not in info and set(info["error_kinds"]) == {"infra_error"}
    env.close()
    server = ThreadedServer(create_app())
    client = MockServiceClient(server.start(), timeout_s=5)
    env = ToolEnv(tasks=[BANKING], world=RemoteMockWorld(client, ["banking"]))
    _on_step(env, {1: server.stop})
    script = Script(
        [ToolCall(name="get_balance", arguments=BALANCE), ToolCall(name="transfer", arguments=TRANSFER)]
    )
    with pytest.raises(EpisodeAborted, match="unreachable"):
        run_episode(env, script, BANKING, trace_dir=tmp_path)
    (partial,) = tmp_path.glob("*.partial")
    trace = read_trace(partial)
    assert trace.end is None and [bool(s.error_kinds) for s in trace.steps] == [False, True]
    env.close()
    client.close()


def test_a_tool_server_gone_mid_episode_aborts_the_episode(tmp_path: Path) -> None:
    task = Task(id="calc", query="2+2?", tools=["Calculator"], answer=AnswerSpec(whitelist=[["done"]]))
    server = ServerThread(create_tool_app([calculator]))
    remote = RemoteToolSet(server.start())
    env = ToolEnv(remote, [task])
    _on_step(env, {1: server.stop})
    add = ToolCall(name="Calculator", arguments={"expression": "2+2"})
    try:
        with pytest.raises(EpisodeAborted, match=r"^Calculator: "):
            run_episode(env, Script([add, add, add]), task, trace_dir=tmp_path)
        (partial,) = tmp_path.glob("*.partial")
        trace = read_trace(partial)
        assert [s.error_kinds for s in trace.steps] == [[], ["infra_error"]]
        assert trace.steps[0].observations[0]["content"] == "4"
    finally:
        env.close()
        remote.close()


# ---- close -----------------------------------------------------------------------------------
def test_close_releases_the_file_store_and_can_be_called_twice() -> None:
    from toolgym.envs.demo import make_demo_env
    from toolgym.files import FileStore

    env = make_demo_env()
    env.reset(options={"task": "receipt-total"})
    root = env.files.root
    assert any(root.rglob("*"))  # the task's image is in the store
    env.close()
    assert not root.exists()
    env.close()
    mine = FileStore()
    env = ToolEnv(tasks=[BANKING], files=mine)
    env.reset()
    env.close()
    assert mine.root.exists()  # a store passed in stays its owner's
    mine.close()


# ---- the commands: `toolgym record` and `toolgym run` ------------------------------------------
CALC = Task(id="calc", query="What is 2+2?", tools=["Calculator"], answer=AnswerSpec(whitelist=[["done"]]))
HOSTILE_REACT: list[Any] = [
    'Thought: \ud800\nAction: Calculator\nAction Input: {"expression": "\udfff"}',
    f"Action: Calculator\nAction Input: {nested_text(500)}",
    f"Action: Calculator\nAction Input: {nested_text(5000)}",
    ToolCall(name="Calculator", arguments={"expression": nested_dict(5000)}),
    "z" * 1_000_000,
    "Final Answer: done \ud800",
]


def hostile_agent(protocol: Any) -> Script:
    """`--agent tests.envs.test_hostile:hostile_agent`: surrogates, deep nesting, 1 MB of text."""
    return Script(HOSTILE_REACT)


def _task_file(tmp_path: Path) -> Path:
    path = tmp_path / "hostile-tasks.jsonl"
    path.write_text("".join(t.model_dump_json() + "\n" for t in (BANKING, CALC)), encoding="utf-8")
    return path


def _check_traces(folder: Path, count: int) -> None:
    paths = sorted(folder.rglob("*.jsonl"))
    paths = [p for p in paths if p.name != "hostile-tasks.jsonl"]
    assert len(paths) == count, paths
    for path in paths:
        path.read_bytes().decode("utf-8")
        trace = read_trace(path)
        assert trace.complete and trace.end is not None
        assert all(s.error_kinds for s in trace.steps[:-1])  # every hostile step is a typed error
        assert trace.end.final_answer == "done \ud800"


def test_toolgym_record_with_a_hostile_agent_completes_and_leaves_readable_traces(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from toolgym.cli import app

    out = tmp_path / "golden"
    args = ["record", "--out", str(out), "--tasks", str(_task_file(tmp_path))]
    result = CliRunner().invoke(app, [*args, "--agent", "tests.envs.test_hostile:hostile_agent"])
    assert result.exit_code == 0, result.output
    _check_traces(out, 2)
    # the escaped traces replay as they were recorded
    replayed = CliRunner().invoke(app, ["replay", str(out), "--out", str(tmp_path / "replayed")])
    assert replayed.exit_code == 0, replayed.output
    assert "2/2 byte-identical" in replayed.output


def test_toolgym_run_with_a_hostile_model_completes_and_leaves_readable_traces(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tests.models.fake_openai import FakeOpenAI, Reply, calls, serve, text
    from toolgym.cli import app

    def script(body: Mapping[str, Any]) -> Reply:
        turn = sum(1 for m in body["messages"] if m.get("role") == "assistant")
        replies = [
            calls(("Calculator", nested_text(500))),
            calls(("Calculator", nested_text(5000)), content="\ud800"),
            calls(("Calculator", '{"expression": "\\udfff"}')),
            text("\ud800" + "y" * 1_000_000),
            text("done \ud800"),
        ]
        return replies[min(turn, len(replies) - 1)]

    out = tmp_path / "run"
    with serve(FakeOpenAI(script)) as fake:
        args = ["run", "--agent", "llm", "--base-url", fake.base_url, "--model", "m", "--max-retries", "0"]
        result = CliRunner().invoke(
            app, [*args, "--out", str(out), "--tasks", str(_task_file(tmp_path)), "--max-steps", "8"]
        )
    assert result.exit_code == 0, result.output
    _check_traces(out, 2)
