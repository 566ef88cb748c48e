"""The LLM tool simulator against a real local OpenAI-compatible server (scripted answers): valid
answers are served and kept in the episode's state, each failure mode (timeout, non-JSON,
off-schema, megabytes) ends in bounded retries and a typed infra_error with the episode going on
and nothing lost, and a recorded run replays byte for byte with no LLM."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.models.fake_openai import FakeOpenAI, Fault, Reply, serve, text
from toolgym.actions import FinalAnswer, ToolCall
from toolgym.envs.agents import ScriptedAgent
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.errors import InfraError
from toolgym.mocks.simulated.app import register_library
from toolgym.mocks.simulated.docs import parse_docs
from toolgym.mocks.simulated.simulator import LLM, SimCall
from toolgym.models.llm import ChatClient, LLMConfig
from toolgym.models.simulators import llm_simulator, simulated_worlds
from toolgym.protocols.react import ReActProtocol
from toolgym.recorder.cassette import Cassette
from toolgym.tasks import Task, TaskSet
from toolgym.tools import ToolSet

CLOCK = datetime(2024, 5, 1, tzinfo=UTC)
BOOKING = {
    "type": "object",
    "properties": {"hotel": {"type": "string"}, "nights": {"type": "integer"}, "price": {"type": "number"}},
    "required": ["hotel", "nights", "price"],
}
DOCS = parse_docs(
    [
        {
            "name": "book_hotel",
            "description": "Book a hotel room.",
            "parameters": {
                "type": "object",
                "properties": {"hotel": {"type": "string"}, "nights": {"type": "integer"}},
                "required": ["hotel", "nights"],
            },
        },
        {
            "name": "get_booking",
            "description": "A booking by id.",
            "parameters": {
                "type": "object",
                "properties": {"booking_id": {"type": "string"}},
                "required": ["booking_id"],
            },
        },
    ],
    "hotels.json",
)
# the doc documents the booking's shape: every LLM answer is checked against it
DOCS = [DOCS[0].__class__(**{**DOCS[0].__dict__, "returns": BOOKING}), DOCS[1]]
register_library("test-llm-hotels", DOCS)
TASK = Task(id="book", query="Book the Ritz for 2 nights.", apps=["simulated:test-llm-hotels"], clock=CLOCK)
GOOD = json.dumps({"hotel": "Ritz", "nights": 2, "price": 512.5})


class Scripted:
    """Replies in order, then the last one again."""

    def __init__(self, *replies: Reply | Fault) -> None:
        self.replies = deque(replies)

    def __call__(self, body: Mapping[str, Any]) -> Reply | Fault:
        return self.replies.popleft() if len(self.replies) > 1 else self.replies[0]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with serve(FakeOpenAI(Scripted(text(GOOD)))) as server:
        yield server


def _client(fake: FakeOpenAI, **kw: Any) -> ChatClient:
    return ChatClient(LLMConfig(base_url=fake.base_url, model="sim", max_retries=0, **kw))


def _env(client: ChatClient, **kw: Any) -> ToolEnv:
    return ToolEnv(
        ToolSet(),
        TaskSet([TASK]),
        protocol=ReActProtocol(),
        world_factory=simulated_worlds(llm_simulator(client)),
        **kw,
    )


def _step(env: ToolEnv, name: str, **arguments: Any) -> dict[str, Any]:
    _, _, _, _, info = env.step(ToolCall(name=name, arguments=arguments))
    (obs,) = info["observations"]
    return dict(obs)


def test_llm_answers_are_checked_served_and_kept(fake: FakeOpenAI) -> None:
    with _client(fake) as client, _env(client) as env:
        env.reset(options={"task": "book"})
        assert {t.backend for t in env.offered} == {LLM}
        booked = _step(env, "book_hotel", hotel="Ritz", nights=2)
        assert booked["error"] is None
        booking = booked["content"]
        assert booking["price"] == 512.5 and booking["hotel_id"].startswith("SIM-HOTEL-")
        found = _step(env, "get_booking", booking_id=booking["hotel_id"])
        assert found["content"] == booking  # from the episode's state: no request
        assert len(fake.requests) == 1
        prompt = fake.requests[0]["messages"][1]["content"]
        assert "book_hotel" in prompt and '"hotel":"Ritz"' in prompt and "validate against" in prompt
        _step(env, "book_hotel", hotel="Savoy", nights=1)
        assert "Earlier call this session" in fake.requests[1]["messages"][1]["content"]


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (text("Sure! The booking is confirmed."), "not JSON"),
        (text(json.dumps({"hotel": "Ritz"})), "off the doc's return schema"),
        (text(json.dumps({"hotel": "x" * 2_000_000, "nights": 1, "price": 1.0})), "byte limit"),
    ],
)
def test_bad_answers_are_retried_then_a_typed_infra_error(fake: FakeOpenAI, bad: Reply, problem: str) -> None:
    fake.script = Scripted(bad)
    with _client(fake) as client, _env(client) as env:
        env.reset(options={"task": "book"})
        start = env.world.state_hash() if env.world is not None else None
        _, _, terminated, truncated, info = env.step(
            ToolCall(name="book_hotel", arguments={"hotel": "Ritz", "nights": 2})
        )
        (failed,) = info["observations"]
        assert failed["error"]["kind"] == "infra_error" and problem in failed["text"]
        # bounded: three attempts, the call tried once more in its step, then the typed error
        assert len(fake.requests) == 6
        assert env.world is not None and env.world.state_hash() == start  # nothing half-made
        # a simulator that cannot answer is a dead backend: the episode ends unscored, not failed
        assert truncated and not terminated and "book_hotel" in info["aborted"]
        fake.script = Scripted(text(GOOD))
        env.reset(options={"task": "book"})  # the next episode meets a working simulator
        assert _step(env, "book_hotel", hotel="Ritz", nights=2)["error"] is None


def test_a_bad_answer_then_a_good_one(fake: FakeOpenAI) -> None:
    fake.script = Scripted(text("not json"), text(GOOD))
    with _client(fake) as client, _env(client) as env:
        env.reset(options={"task": "book"})
        assert _step(env, "book_hotel", hotel="Ritz", nights=2)["content"]["price"] == 512.5
    assert len(fake.requests) == 2
    seeds = [r.get("seed") for r in fake.requests]
    assert seeds[0] != seeds[1]  # a retry is a new sample


def test_a_timeout_is_an_infra_error(fake: FakeOpenAI) -> None:
    # the call and its second try in the step both time out (a timeout is not retried inside)
    fake.faults.extend(Fault(status=200, delay_s=1.5) for _ in range(2))
    with _client(fake, timeout_s=0.3) as client, _env(client) as env:
        env.reset(options={"task": "book"})
        _, _, _, truncated, info = env.step(
            ToolCall(name="book_hotel", arguments={"hotel": "Ritz", "nights": 2})
        )
        (failed,) = info["observations"]
        assert failed["error"]["kind"] == "infra_error" and "tool simulator LLM" in failed["text"]
        assert truncated and info["aborted"]  # unscored, not the agent's failure
        env.reset(options={"task": "book"})
        assert _step(env, "book_hotel", hotel="Ritz", nights=2)["error"] is None


def _record(env: ToolEnv, out: Path) -> bytes:
    agent = ScriptedAgent(
        env.protocol,
        [ToolCall(name="book_hotel", arguments={"hotel": "Ritz", "nights": 2}), FinalAnswer(text="booked")],
    )
    result = run_episode(env, agent, TASK, trace_dir=out)
    assert result.trace_path is not None
    return result.trace_path.read_bytes()


def test_a_recorded_run_replays_byte_identically_with_no_llm(fake: FakeOpenAI, tmp_path: Path) -> None:
    tape = tmp_path / "tape.sqlite"
    with _client(fake) as client, _env(client, cassette=Cassette(tape, "record")) as env:
        recorded = _record(env, tmp_path / "live")
    assert len(fake.requests) == 1
    # the LLM is gone: its server answers nothing but errors
    fake.script = Scripted(Fault(status=500))
    replay = Cassette(tape, "replay")
    with _client(fake) as client, _env(client, cassette=replay) as env:
        replayed = _record(env, tmp_path / "replay")
    assert replayed == recorded and replay.stats.live_calls == 0 and len(fake.requests) == 1


def test_model_requests_through_a_cassette(fake: FakeOpenAI, tmp_path: Path) -> None:
    call = SimCall(doc=DOCS[0], arguments={"hotel": "Ritz", "nights": 2}, seed=0, clock=CLOCK)
    tape = tmp_path / "requests.sqlite"
    with _client(fake) as client:
        recording = Cassette(tape, "record")
        first = llm_simulator(client, cassette=recording).answer(call)
        recording.close()
        cached = Cassette(tape, "replay")
        assert llm_simulator(client, cassette=cached).answer(call) == first
        assert cached.stats.hits == 1 and cached.stats.live_calls == 0
        with pytest.raises(InfraError, match="cassette miss in strict replay"):
            llm_simulator(client, cassette=cached).answer(
                SimCall(doc=DOCS[0], arguments={"hotel": "X", "nights": 1}, seed=0, clock=CLOCK)
            )
    assert len(fake.requests) == 1  # the replays and the miss made no request


def test_toolgym_run_with_the_llm_simulator(tmp_path: Path) -> None:
    """`toolgym run --simulator-base-url ... --simulator-model ...`: ToolEyes' tools answered by
    the LLM on the local server, said so in the traces and the run's settings."""
    from typer.testing import CliRunner

    from tests.evaluation.tooleyes_model import tooleyes_script
    from toolgym.cli import app
    from toolgym.trace import read_trace

    def script(body: Mapping[str, Any]) -> Reply:
        system = str(body["messages"][0].get("content", ""))
        if system.startswith("You simulate a web API"):
            return text('{"answer_from": "the simulator LLM"}')
        return tooleyes_script(body)

    out = tmp_path / "run"
    with serve(FakeOpenAI(script)) as fake:
        args = [
            "run",
            "--tasks",
            "tooleyes",
            "--task-id",
            "tooleyes-000",
            "--agent",
            "llm",
            "--protocol",
            "react",
        ]
        args += ["--base-url", fake.base_url, "--model", "agent", "--out", str(out)]
        args += ["--simulator-base-url", fake.base_url, "--simulator-model", "sim"]
        result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (path,) = (out / "trial-0").rglob("*.jsonl")
    trace = read_trace(path)
    assert {t.backend for t in trace.header.tools} == {LLM}
    assert trace.steps[0].observations[0]["content"] == {"answer_from": "the simulator LLM"}
    settings = json.loads((out / "run.json").read_text(encoding="utf-8"))["settings"]
    assert settings["simulator"] == {"backend": LLM, "model": "sim", "base_url": fake.base_url}
    bad = CliRunner().invoke(app, ["run", "--tasks", "demo", "--simulator-model", "sim"])
    assert bad.exit_code == 2 and "--simulator-base-url and --simulator-model together" in bad.output
