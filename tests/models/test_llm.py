"""LLMAgent and ChatClient against a real local OpenAI-compatible HTTP server (tests/models/fake_openai.py)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.envs.test_rollouts import without_latencies
from tests.models.fake_openai import FakeOpenAI, Fault, Reply, calls, history_error, serve, text, usage_of
from tests.models.real_model import OUTPUT_FIXTURES, TEXT_PROTOCOL_ERRORS, real_outputs
from toolgym.envs.demo import make_demo_env, mock_task_paths
from toolgym.envs.rollouts import EnvConfig, EpisodeOutcome, EpisodeSpec, arollout, episode_specs, rollout
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.models.llm import (
    AsyncChatClient,
    ChatClient,
    LLMAgent,
    LLMConfig,
    LLMError,
    LLMRequestError,
    LLMResponseError,
    LLMUnavailable,
    api_key_from_env,
)
from toolgym.recorder.golden import TraceAgent
from toolgym.running.trials import ABORT_ON
from toolgym.tasks import TaskSet
from toolgym.toolservers.registry import default_toolset
from toolgym.trace import TRACE_SCHEMA_VERSION, full_requests, read_trace

FISH_OIL = "family of 5"  # a substring of the fish-oil-days prompt: the server's script key
OCR_ARGS = {"image": "image/fish_oil.png"}
CALC_ARGS = {"expression": "290 // 5"}


def config(fake: FakeOpenAI, **overrides: Any) -> LLMConfig:
    settings: dict[str, Any] = {"base_url": fake.base_url, "model": "fake-model"}
    settings.update(overrides)
    return LLMConfig(**settings)


def mtu_tasks() -> TaskSet:
    return TaskSet.load(next(p for p in mock_task_paths() if p.stem == "mtu"))


def test_openai_protocol_episode_with_native_tool_calls(tmp_path: Path) -> None:
    script = {
        FISH_OIL: [
            calls(("OCR", OCR_ARGS), content="Read the label first."),
            calls(("Calculator", CALC_ARGS)),
            text("The bottle holds 290 softgels: it lasts 58 days."),
        ]
    }
    env = make_demo_env(protocol="openai")
    with serve(FakeOpenAI(script)) as fake, ChatClient(config(fake, temperature=0.7, seed=11)) as client:
        agent = LLMAgent(client, env)
        result = run_episode(env, agent, env.tasks["fish-oil-days"], seed=0, trace_dir=tmp_path)
    env.close()
    assert result.reward == 1.0 and result.steps == 3 and result.error_counts == {}
    first, second, third = fake.requests
    # the tools travel in the request's `tools` field, with the reserved control functions
    names = {t["function"]["name"] for t in first["tools"]}
    assert names == {"OCR", "Calculator", "ask_user", "no_call"}
    assert first["temperature"] == 0.7 and first["seed"] == 11 and first["model"] == "fake-model"
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert first["messages"][0]["content"] == env.protocol.instructions(env.offered)
    # the schemas go in `tools` only: the system message does not repeat them
    for spec in first["tools"]:
        assert spec["function"]["description"] not in first["messages"][0]["content"]
    # the OCR result comes back as a tool message answering the call's id
    tool_message = second["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "fake_0_0"
    assert "290 SOFTGELS" in tool_message["content"]
    assert third["messages"][-1] == {"role": "tool", "tool_call_id": "fake_1_0", "content": "58"}
    # per-episode token accounting is the sum of what the server reported
    assert agent.usage.requests == 3
    assert agent.usage.prompt_tokens == sum(u["prompt_tokens"] for u in fake.served_usage)
    assert agent.usage.completion_tokens == sum(u["completion_tokens"] for u in fake.served_usage)
    assert client.usage.total_tokens == agent.usage.total_tokens > 0
    assert agent.finish_reasons == ["tool_calls", "tool_calls", "stop"]
    trace = read_trace(tmp_path / "fish-oil-days.seed0.jsonl")
    assert trace.header.agent == "llm:fake-model" and trace.header.protocol == "openai"
    assert trace.steps[0].raw["tool_calls"][0]["function"]["name"] == "OCR"
    assert trace.end is not None and trace.end.final_answer is not None and "58" in trace.end.final_answer


def test_trace_keeps_what_was_sent_to_the_model_and_its_latency(tmp_path: Path) -> None:
    script = {
        FISH_OIL: [
            calls(("OCR", OCR_ARGS)),
            calls(("Calculator", CALC_ARGS)),
            text("The bottle holds 290 softgels: it lasts 58 days."),
        ]
    }
    env = make_demo_env(protocol="openai")
    with serve(FakeOpenAI(script)) as fake, ChatClient(config(fake, temperature=0.2)) as client:
        result = run_episode(
            env, LLMAgent(client, env), env.tasks["fish-oil-days"], seed=0, trace_dir=tmp_path
        )
    env.close()
    assert result.steps == 3
    trace = read_trace(tmp_path / "fish-oil-days.seed0.jsonl")
    assert trace.header.schema_version == TRACE_SCHEMA_VERSION
    # each step keeps only what is new; rebuilt, the requests are what the server received
    deltas = [step.request for step in trace.steps]
    assert all(d is not None for d in deltas)
    assert [d.messages_from for d in deltas if d is not None] == [0, 2, 4]
    assert deltas[0] is not None and deltas[0].tools is not None
    assert all(d is not None and d.tools is None for d in deltas[1:])  # tools once per episode
    rebuilt = full_requests(trace.steps)
    for request, sent in zip(rebuilt, fake.requests, strict=True):
        assert request is not None
        assert request["messages"] == sent["messages"]
        assert request["tools"] == sent["tools"]
        assert request["params"]["temperature"] == 0.2 and request["params"]["model"] == "fake-model"
    # latencies: the model's answer and the whole step, both filled in an LLM run
    assert all(s.model_latency_ms is not None and s.model_latency_ms > 0 for s in trace.steps)
    assert all(s.latency_ms is not None and s.latency_ms >= 0 for s in trace.steps)


def test_a_golden_llm_trace_keeps_its_requests_and_replays_byte_for_byte(tmp_path: Path) -> None:
    script = {FISH_OIL: [calls(("OCR", OCR_ARGS)), text("It lasts 58 days.")]}
    env = make_demo_env(protocol="openai")
    task = env.tasks["fish-oil-days"]
    with serve(FakeOpenAI(script)) as fake, ChatClient(config(fake)) as client:
        run_episode(env, LLMAgent(client, env), task, seed=0, trace_dir=tmp_path / "golden", golden=True)
    golden = tmp_path / "golden" / "fish-oil-days.seed0.jsonl"
    trace = read_trace(golden)
    assert [s.request is not None for s in trace.steps] == [True, True]
    # no wall-clock figures in a golden trace: a replay gives the same bytes back
    assert all(s.latency_ms is None and s.model_latency_ms is None for s in trace.steps)
    replayed = run_episode(env, TraceAgent(trace), task, seed=0, trace_dir=tmp_path / "replay", golden=True)
    env.close()
    assert replayed.trace_path is not None and replayed.trace_path.read_bytes() == golden.read_bytes()


def test_react_protocol_episode_with_text_replies(tmp_path: Path) -> None:
    react = (
        "Thought: I need the count on the label.\nAction: OCR\nAction Input: "
        + json.dumps(OCR_ARGS)
        + "\nObservation: (made up by the model, dropped by the parser)"
    )
    script = {
        FISH_OIL: [
            text(react),
            text(
                "Thought: 290 softgels over 5 people.\nAction: Calculator\nAction Input: "
                + json.dumps(CALC_ARGS)
            ),
            text("Thought: done\nFinal Answer: 58 days"),
        ]
    }
    env = make_demo_env(protocol="react")
    with serve(FakeOpenAI(script)) as fake, ChatClient(config(fake)) as client:
        agent = LLMAgent(client, env)
        result = run_episode(env, agent, env.tasks["fish-oil-days"], seed=0, trace_dir=tmp_path)
    env.close()
    assert result.reward == 1.0 and result.steps == 3
    first, second, third = fake.requests
    assert "tools" not in first and "temperature" not in first and "seed" not in first
    assert first["stop"] == ["\nObservation:"]  # the react default
    # text protocols: the reply goes back as assistant text, the observation as a user message
    assert second["messages"][2] == {"role": "assistant", "content": react}
    assert second["messages"][3]["role"] == "user"
    assert second["messages"][3]["content"].startswith("Observation: ")
    assert "290 SOFTGELS" in second["messages"][3]["content"]
    assert third["messages"][-1] == {"role": "user", "content": "Observation: 58"}
    assert read_trace(tmp_path / "fish-oil-days.seed0.jsonl").steps[0].raw == react


def test_mock_app_episode_changes_state_through_the_json_protocol(tmp_path: Path) -> None:
    """A multi-turn mock-app task: ask the user, transfer money (a real SQLite write), answer."""
    transfer = {
        "account_number": "123456",
        "source_account": "checking",
        "destination_account": "savings",
        "amount": 200,
        "transfer_speed": "now",
    }
    script = {
        "move some money": [
            text(json.dumps({"thought": "need details", "name": "AskUser", "args": {"text": "How much?"}})),
            text(json.dumps({"thought": "transfer", "name": "transfer_funds", "args": transfer})),
            text(
                json.dumps(
                    {"name": "FinishAction", "args": {"response": "Moved $200; checking has $4,625.50."}}
                )
            ),
        ]
    }
    tasks = mtu_tasks()
    env = ToolEnv(tasks=tasks, protocol="json")
    with serve(FakeOpenAI(script)) as fake, ChatClient(config(fake)) as client:
        agent = LLMAgent(client, env)
        result = run_episode(env, agent, tasks["mtu-transfer-ask-017"], seed=0, trace_dir=tmp_path)
    env.close()
    assert result.scores["state"] == 1.0 and result.scores["answer"] == 1.0 and result.reward == 1.0
    # the scripted user's reply reaches the model as the next user message
    assert fake.requests[1]["messages"][-1]["content"] == tasks["mtu-transfer-ask-017"].user_replies[0]
    trace = read_trace(tmp_path / "mtu-transfer-ask-017.seed0.jsonl")
    assert trace.steps[1].state_diff  # the transfer really wrote rows


def test_openai_history_stays_valid_through_ask_user_and_format_errors(tmp_path: Path) -> None:
    """Every tool_call id gets a tool message, even when the env answered without an id (ask_user,
    no_call) or the reply did not parse; the server rejects the history otherwise (as OpenAI does)."""
    script = {
        "move some money": [
            calls(("ask_user", {"text": "Which account and how much?"})),
            calls(("transfer_funds", "{not json"), with_ids=False),
            calls(("no_call", {})),
            text("I could not do it."),
        ]
    }
    tasks = mtu_tasks()
    env = ToolEnv(tasks=tasks, protocol="openai")
    with serve(FakeOpenAI(script)) as fake, ChatClient(config(fake)) as client:
        agent = LLMAgent(client, env)
        result = run_episode(env, agent, tasks["mtu-transfer-ask-017"], seed=0, trace_dir=tmp_path)
    env.close()
    assert result.steps == 4 and result.error_counts == {"format_error": 1}
    assert len(fake.requests) == 4
    for request in fake.requests:
        assert history_error(request["messages"]) is None
    tool_messages = [m for m in fake.requests[-1]["messages"] if m["role"] == "tool"]
    assert tool_messages[0]["content"] == tasks["mtu-transfer-ask-017"].user_replies[0]
    assert tool_messages[1]["tool_call_id"] == "call_2_0"  # the agent gave the id-less call one
    assert tool_messages[1]["content"].startswith("format_error:")
    assert tool_messages[2]["content"] == "No tool was called."
    assert result.final_answer == "I could not do it." and result.reward == 0.0


def test_retries_on_429_and_5xx_then_succeeds() -> None:
    faults = deque([Fault(status=500), Fault(status=429, retry_after="0"), Fault(status=503)])
    with (
        serve(FakeOpenAI(lambda body: text("ok"), faults=faults)) as fake,
        ChatClient(config(fake)) as client,
    ):
        result = client.complete([{"role": "user", "content": "hi"}])
    assert result.message.content == "ok"
    assert result.usage.retries == 3 and result.usage.requests == 1
    assert len(fake.requests) == 4 and fake.faults_served == 3


def test_timeout_is_retried() -> None:
    # generous margins: a loaded CI machine must not time out the second, prompt answer too
    faults = deque([Fault(status=200, delay_s=3.0, body="{}")])
    with (
        serve(FakeOpenAI(lambda body: text("late but fine"), faults=faults)) as fake,
        ChatClient(config(fake, timeout_s=1.0)) as client,
    ):
        result = client.complete([{"role": "user", "content": "hi"}])
    assert result.message.content == "late but fine" and result.usage.retries == 1


def test_retries_exhausted_raise_llm_unavailable() -> None:
    faults = deque([Fault(status=502)] * 5)
    with (
        serve(FakeOpenAI(lambda body: text("never"), faults=faults)) as fake,
        ChatClient(config(fake, max_retries=2)) as client,
    ):
        with pytest.raises(LLMUnavailable, match="3 attempts failed; last: HTTP 502") as caught:
            client.complete([{"role": "user", "content": "hi"}])
        assert client.usage.retries == 2 and client.usage.requests == 0
    assert caught.value.status == 502 and len(fake.requests) == 3


def test_connection_refused_is_unavailable() -> None:
    with serve(FakeOpenAI(lambda body: text("x"))) as fake:
        url = fake.base_url
    with (
        ChatClient(LLMConfig(base_url=url, model="m", max_retries=1)) as client,
        pytest.raises(LLMUnavailable, match="connection failed"),
    ):
        client.complete([{"role": "user", "content": "hi"}])


def test_api_key_is_sent_and_a_refusal_is_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLGYM_TEST_KEY", "sk-right")
    with serve(FakeOpenAI(lambda body: text("hello"), api_key="sk-right")) as fake:
        with ChatClient(config(fake, api_key=api_key_from_env("TOOLGYM_TEST_KEY"))) as client:
            assert client.complete([{"role": "user", "content": "hi"}]).message.content == "hello"
        assert fake.headers[-1]["authorization"] == "Bearer sk-right"
        with (
            ChatClient(config(fake, api_key="sk-wrong")) as client,
            pytest.raises(LLMRequestError, match="HTTP 401") as caught,
        ):
            client.complete([{"role": "user", "content": "hi"}])
        assert caught.value.status == 401
        assert len(fake.requests) == 2  # the 401 was not retried
    assert "sk-wrong" not in repr(config(fake, api_key="sk-wrong"))


def test_missing_api_key_variable_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLGYM_NO_SUCH_KEY", raising=False)
    with pytest.raises(LLMRequestError, match="TOOLGYM_NO_SUCH_KEY"):
        api_key_from_env("TOOLGYM_NO_SUCH_KEY")
    assert api_key_from_env(None) is None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("this is not json", "not JSON"),
        ('{"choices": []}', "no choices"),
        ('{"choices": [{}]}', "no message"),
    ],
)
def test_a_200_that_is_not_a_completion_is_a_response_error(body: str, message: str) -> None:
    faults = deque([Fault(status=200, body=body)])
    with (
        serve(FakeOpenAI(lambda b: text("x"), faults=faults)) as fake,
        ChatClient(config(fake)) as client,
        pytest.raises(LLMResponseError, match=message),
    ):
        client.complete([{"role": "user", "content": "hi"}])


def test_concurrency_limit_bounds_requests_in_flight() -> None:
    fake = FakeOpenAI(lambda body: text("ok"), reply_delay_s=0.05)
    with serve(fake), ChatClient(config(fake, concurrency=2)) as client:
        threads = [
            threading.Thread(target=client.complete, args=([{"role": "user", "content": str(i)}],))
            for i in range(6)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert client.usage.requests == 6
    assert fake.max_in_flight == 2


def test_bad_settings_are_rejected() -> None:
    with pytest.raises(ValueError, match="concurrency"):
        ChatClient(LLMConfig(base_url="http://127.0.0.1:9/v1", model="m", concurrency=0))
    with pytest.raises(ValueError, match="max_retries"):
        ChatClient(LLMConfig(base_url="http://127.0.0.1:9/v1", model="m", max_retries=-1))
    # the chat client cannot play the Responses protocol: said up front, not as format errors later
    with (
        ChatClient(LLMConfig(base_url="http://127.0.0.1:9/v1", model="m")) as client,
        pytest.raises(ValueError, match="the env's protocol is 'responses'"),
    ):
        LLMAgent(client, make_demo_env(protocol="responses"))


def test_agent_reads_the_step_info_when_given_it() -> None:
    """Driven by hand with each step's own info (the Agent protocol), not through run_episode."""
    script = {FISH_OIL: [calls(("OCR", OCR_ARGS), ("Calculator", CALC_ARGS)), text("58 days")]}
    env = make_demo_env(protocol="openai")
    with serve(FakeOpenAI(script)) as fake, ChatClient(config(fake)) as client:
        agent = LLMAgent(client, env)
        obs, info = env.reset(options={"task": "fish-oil-days"})
        agent.start(env.tasks["fish-oil-days"], obs, info)
        done, reward = False, 0.0
        while not done:
            obs, r, done, truncated, info = env.step(agent.act(obs, info))
            reward = float(r)
            done = done or truncated
    env.close()
    assert reward == 1.0
    replies = [m for m in fake.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in replies] == ["fake_0_0", "fake_0_1"]  # two parallel calls
    assert "290 SOFTGELS" in replies[0]["content"] and replies[1]["content"] == "58"


# ---- the Responses API (/v1/responses) through the same client -----------------------------------
def test_responses_protocol_episode_over_v1_responses(tmp_path: Path) -> None:
    script = {
        FISH_OIL: [
            calls(("OCR", OCR_ARGS), ("Calculator", CALC_ARGS)),  # two parallel function calls
            text("The bottle holds 290 softgels: it lasts 58 days."),
        ]
    }
    env = make_demo_env(protocol="responses")
    with (
        serve(FakeOpenAI(script)) as fake,
        ChatClient(config(fake, api="responses", temperature=0.3, max_tokens=200)) as client,
    ):
        agent = LLMAgent(client, env)
        result = run_episode(env, agent, env.tasks["fish-oil-days"], seed=0, trace_dir=tmp_path)
    env.close()
    assert result.reward == 1.0 and result.steps == 2 and result.error_counts == {}
    first, second = fake.requests
    assert "messages" not in first and first["model"] == "fake-model"
    assert first["temperature"] == 0.3 and first["max_output_tokens"] == 200
    assert "seed" not in first and "stop" not in first  # the Responses API takes neither
    # flat function tools, as the Responses API takes them
    assert {t["name"] for t in first["tools"]} == {"OCR", "Calculator", "ask_user", "no_call"}
    assert [i["role"] for i in first["input"]] == ["system", "user"]
    # the calls go back as input items, each answered by a function_call_output with its call_id
    calls_back = [i for i in second["input"] if i.get("type") == "function_call"]
    outputs = [i for i in second["input"] if i.get("type") == "function_call_output"]
    assert [c["call_id"] for c in calls_back] == ["fake_0_0", "fake_0_1"]
    assert [c["name"] for c in calls_back] == ["OCR", "Calculator"]
    assert [o["call_id"] for o in outputs] == ["fake_0_0", "fake_0_1"]
    assert "290 SOFTGELS" in outputs[0]["output"] and outputs[1]["output"] == "58"
    # token accounting from the Responses usage (input_tokens / output_tokens)
    assert agent.usage.requests == 2
    assert agent.usage.prompt_tokens == sum(
        usage_of({"messages": r["input"]}, {})["prompt_tokens"] for r in fake.requests
    )
    assert agent.usage.completion_tokens > 0 and client.usage.total_tokens == agent.usage.total_tokens
    assert agent.finish_reasons == ["completed", "completed"]
    # the trace keeps the requests as sent: rebuilt, they are the input the server received
    trace = read_trace(tmp_path / "fish-oil-days.seed0.jsonl")
    assert trace.header.protocol == "responses"
    rebuilt = full_requests(trace.steps)
    for request, sent in zip(rebuilt, fake.requests, strict=True):
        assert request is not None and request["messages"] == sent["input"]
        assert request["tools"] == sent["tools"]
    assert trace.end is not None and trace.end.final_answer is not None and "58" in trace.end.final_answer
    # each step keeps the model's output items as its raw output (the viewer shows them)
    assert trace.steps[0].raw == calls_back
    assert trace.steps[1].raw == [
        {
            "type": "message",
            "role": "assistant",
            "content": "The bottle holds 290 softgels: it lasts 58 days.",
        }
    ]


def test_responses_api_refusals_and_bad_bodies_are_typed_errors() -> None:
    answers = deque(
        [
            Fault(status=400, body='{"error": {"message": "bad input"}}'),
            Fault(status=200, body='{"id": "resp_1", "output": "not a list"}'),
        ]
    )
    with (
        serve(FakeOpenAI(lambda body: answers.popleft())) as fake,
        ChatClient(config(fake, api="responses")) as client,
    ):
        with pytest.raises(LLMRequestError, match="/responses refused the request: HTTP 400") as caught:
            client.complete([{"role": "user", "content": "hi"}])
        assert caught.value.status == 400 and len(fake.requests) == 1  # a 400 is not retried
        with pytest.raises(LLMResponseError, match="not a Response"):
            client.complete([{"role": "user", "content": "hi"}])


def test_each_api_takes_only_its_own_tool_protocol() -> None:
    url = "http://127.0.0.1:9/v1"
    with ChatClient(LLMConfig(base_url=url, model="m", api="responses")) as client:
        with pytest.raises(ValueError, match=r"over /v1/responses; the env's protocol is 'openai'"):
            LLMAgent(client, make_demo_env(protocol="openai"))
        assert LLMAgent(client, make_demo_env(protocol="react")).stop == ["\nObservation:"]


def test_lone_surrogates_in_the_history_are_sent_escaped() -> None:
    with serve(FakeOpenAI(lambda body: text("ok"))) as fake, ChatClient(config(fake)) as client:
        result = client.complete([{"role": "user", "content": "broken \ud800 text"}])
    assert result.message.content == "ok"
    assert fake.requests[0]["messages"][0]["content"] == "broken \ud800 text"  # decoded back exactly
    assert fake.headers[0]["content-type"] == "application/json"
    assert "authorization" not in fake.headers[0]  # no key: no bearer token, not the SDK's placeholder


# ---- token ids from the model server (vLLM's return_token_ids / logprobs) ------------------------
FISH_OIL_SCRIPT = {
    FISH_OIL: [
        calls(("OCR", OCR_ARGS), content="Read the label first."),
        calls(("Calculator", CALC_ARGS)),
        text("The bottle holds 290 softgels: it lasts 58 days."),
    ]
}


def _run_llm(fake: FakeOpenAI, out: Path, *extra: str) -> Any:
    from typer.testing import CliRunner

    from toolgym.cli import app
    from toolgym.envs.demo import demo_tasks_path

    args = ["run", "--agent", "llm", "--base-url", fake.base_url, "--model", "fake-model", *extra]
    args += ["--tasks", str(demo_tasks_path()), "--task-id", "fish-oil-days", "--out", str(out)]
    return CliRunner().invoke(app, args)


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_tools_in_prompt_lists_the_schemas_in_the_system_message_too(api: str, tmp_path: Path) -> None:
    with serve(FakeOpenAI(FISH_OIL_SCRIPT)) as fake:
        result = _run_llm(fake, tmp_path / "run", "--api", api, "--tools-in-prompt")
        assert result.exit_code == 0, result.output
        first = fake.requests[0]
    system = (first["messages"] if api == "chat" else first["input"])[0]["content"]
    listed = json.loads(system.split(":\n", 1)[1])
    assert listed == first["tools"]  # the same schemas as the tools field, as the old form sent them
    assert {"OCR", "Calculator"} <= {t.get("name") or t["function"]["name"] for t in listed}
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["settings"]["tools_in_prompt"] is True
    # text protocols always carry the tools' docs in their instructions: the flag is refused
    refused = _run_llm(fake, tmp_path / "react", "--protocol", "react", "--tools-in-prompt")
    assert refused.exit_code == 2 and "always puts the tools' docs" in " ".join(refused.output.split())


def test_token_ids_from_the_server_reach_the_trace_and_the_token_export(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tests.models.fake_openai import logprob_of, render_prompt, tokenize
    from toolgym.cli import app

    with serve(FakeOpenAI(FISH_OIL_SCRIPT)) as fake:
        result = _run_llm(fake, tmp_path / "run", "--token-ids")
    assert result.exit_code == 0, result.output
    assert "without token ids" not in result.output
    # asked as vLLM takes it
    assert all(
        r["logprobs"] is True and r["return_token_ids"] is True and r["return_tokens_as_token_ids"] is True
        for r in fake.requests
    )
    trace = read_trace(next((tmp_path / "run").rglob("fish-oil-days.seed0.jsonl")))
    turns = [s.tokens for s in trace.steps]
    assert len(turns) == 3 and all(t is not None for t in turns)
    for turn, sent in zip(turns, fake.requests, strict=True):
        assert turn is not None
        # exactly the ids the server sent back: its prompt, its completion, a logprob per token
        assert turn.prompt_ids == tokenize(render_prompt(sent["messages"]))
        assert turn.logprobs == [logprob_of(i) for i in turn.completion_ids]
    assert turns[2] is not None and "".join(map(chr, turns[2].completion_ids)).startswith("The bottle holds")

    out = tmp_path / "tokens.jsonl"
    exported = CliRunner().invoke(
        app, ["export", str(tmp_path / "run"), "--format", "tokens", "--out", str(out)]
    )
    assert exported.exit_code == 0, exported.output
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["task_id"] == "fish-oil-days" and record["reward"] == 1.0
    assert [t["completion_ids"] for t in record["turns"]] == [t.completion_ids for t in turns if t]
    # the turns concatenate (each prompt extends the last prompt and completion): one sequence
    # whose mask marks the model's tokens 1 and the prompt, tool and env tokens 0
    last = turns[-1]
    assert last is not None and record["input_ids"] == last.prompt_ids + last.completion_ids
    model_ids = [i for turn in turns if turn for i in turn.completion_ids]
    assert [i for i, m in zip(record["input_ids"], record["loss_mask"], strict=True) if m] == model_ids
    assert (
        "".join(chr(i) for i, m in zip(record["input_ids"], record["loss_mask"], strict=True) if not m).count(
            "<|tool|>"
        )
        == 2
    )
    assert [p for p in record["logprobs"] if p is not None] == [logprob_of(i) for i in model_ids]


@pytest.mark.parametrize("server", ["legacy", "none"])
def test_a_server_without_token_ids_gives_no_tokens_and_says_so_once(
    server: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeOpenAI(FISH_OIL_SCRIPT, token_ids=server)  # type: ignore[arg-type]
    with serve(fake), caplog.at_level("WARNING", logger="toolgym.models.llm"):
        result = _run_llm(fake, tmp_path, "--token-ids")
    assert result.exit_code == 0, result.output  # not an error: the run goes on without tokens
    assert "3 answers came without token ids" in " ".join(result.output.split())
    assert len(caplog.records) == 1 and "returned no token ids" in caplog.records[0].getMessage()
    trace = read_trace(next(tmp_path.rglob("fish-oil-days.seed0.jsonl")))
    assert trace.end is not None and all(s.tokens is None for s in trace.steps)


def test_a_server_refusing_vllms_parameters_is_asked_for_logprobs_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """transformers serve answers 422 to fields it does not know (return_token_ids): the turn is
    asked again without vLLM's parameters, later turns never send them, and the trace keeps the
    request as answered."""
    refusal = Fault(status=422, body='{"detail": "Unexpected fields in the request: {\'return_token_ids\'}"}')
    fake = FakeOpenAI(FISH_OIL_SCRIPT, token_ids="none", faults=deque([refusal]))
    with serve(fake), caplog.at_level("WARNING", logger="toolgym.models.llm"):
        result = _run_llm(fake, tmp_path, "--token-ids")
    assert result.exit_code == 0, result.output
    assert "return_token_ids" in fake.requests[0]  # refused, then never sent again
    assert all(r["logprobs"] is True and "return_token_ids" not in r for r in fake.requests[1:])
    assert len(fake.requests) == 4 and fake.faults_served == 1
    assert sum("refused vLLM's token-id parameters" in r.getMessage() for r in caplog.records) == 1
    trace = read_trace(next(tmp_path.rglob("fish-oil-days.seed0.jsonl")))
    assert trace.end is not None and trace.end.reward == 1.0
    requests = full_requests(trace.steps)
    assert all(r is not None and "return_token_ids" not in r["params"] for r in requests)

    async def ask() -> None:  # the async client drops them the same way
        async with AsyncChatClient(config(fake, token_ids=True)) as client:
            await client.complete([{"role": "user", "content": "hi"}])
            assert client.vllm_token_params is False

    fake.script, fake.faults = (lambda body: text("ok")), deque([refusal])
    with serve(fake):
        asyncio.run(ask())
    assert "return_token_ids" in fake.requests[-2] and "return_token_ids" not in fake.requests[-1]
    # a refusal that names none of them is the server's to explain: not retried
    fake.faults = deque([Fault(status=422, body='{"detail": "bad messages"}')])
    with serve(fake), ChatClient(config(fake, token_ids=True)) as client:
        with pytest.raises(LLMRequestError, match="HTTP 422"):
            client.complete([{"role": "user", "content": "hi"}])
        assert client.vllm_token_params is True


def test_token_ids_from_token_id_logprob_tokens() -> None:
    """A server that sends the prompt's ids but spells the generated ones only as `token_id:<id>`
    logprob tokens (return_tokens_as_token_ids); unusable answers give no tokens."""
    from openai.types.chat import ChatCompletion

    from toolgym.models.llm import turn_tokens

    def completion(response: dict[str, Any], choice: dict[str, Any]) -> ChatCompletion:
        # read as the SDK reads an answer (leniently, extra fields kept)
        return ChatCompletion.construct(**response, choices=[{"index": 0, **choice}])

    entries = [{"token": "token_id:7", "logprob": -0.5}, {"token": "token_id:9", "logprob": -1.0}]
    choice = {"logprobs": {"content": entries}}
    tokens = turn_tokens(completion({"prompt_token_ids": [1, 2]}, choice))
    assert tokens is not None and tokens.model_dump() == {
        "prompt_ids": [1, 2],
        "completion_ids": [7, 9],
        "logprobs": [-0.5, -1.0],
    }
    assert turn_tokens(completion({}, choice)) is None  # no prompt ids: no trajectory
    plain_tokens = {"logprobs": {"content": [{"token": "a"}]}}
    assert turn_tokens(completion({"prompt_token_ids": [1]}, plain_tokens)) is None
    # ids without logprobs: the ids, no logprobs
    no_logprobs = turn_tokens(completion({"prompt_token_ids": [1]}, {"token_ids": [5, 6]}))
    assert no_logprobs is not None and no_logprobs.logprobs is None
    # what a broken server may send: no tokens, and no exception in the agent's turn
    for token in ("token_id:²", "token_id:" + "9" * 5000, "token_id:-3", "token_id:"):
        bad = {"logprobs": {"content": [{"token": "token_id:7", "logprob": -0.5}, {"token": token}]}}
        assert turn_tokens(completion({"prompt_token_ids": [1]}, bad)) is None
    for ids in (["5"], [True], 5, None, [1.5]):
        assert turn_tokens(completion({"prompt_token_ids": ids}, {"token_ids": [5]})) is None
        assert turn_tokens(completion({"prompt_token_ids": [1]}, {"token_ids": ids})) is None


def test_token_ids_need_the_chat_api() -> None:
    with pytest.raises(ValueError, match="chat API"):
        LLMConfig(base_url="http://127.0.0.1:9/v1", model="m", api="responses", token_ids=True)
    with serve(FakeOpenAI(FISH_OIL_SCRIPT)) as fake:
        result = _run_llm(fake, Path("/nonexistent-out"), "--token-ids", "--api", "responses")
    assert result.exit_code == 2 and "chat API" in result.output and not fake.requests


# ---- the async twin: AsyncOpenAI, episodes on one event loop -------------------------------------
def _by_seed(body: Mapping[str, Any]) -> Reply | Fault:
    """fish-oil: right but on sampling seed 101; balance: always right; door: a server error."""
    messages = body["messages"]
    prompt = next(m["content"] for m in messages if m["role"] == "user")
    turn = sum(1 for m in messages if m["role"] == "assistant")
    if FISH_OIL in prompt:
        if body.get("seed") == 101:
            return text("About 60 days.")
        return [calls(("OCR", OCR_ARGS)), calls(("Calculator", CALC_ARGS)), text("58 days")][turn]
    if "bank account 123456" in prompt:
        return [calls(("get_account_balance", {"account_number": "123456"})), text("It holds $4,825.50.")][
            turn
        ]
    return Fault(status=500)


def _sets() -> list[tuple[str, TaskSet]]:
    from toolgym.envs.demo import demo_tasks_path

    demo = TaskSet.load(demo_tasks_path())
    mtu = mtu_tasks()
    return [
        ("demo", TaskSet([demo["fish-oil-days"]], base_dir=demo.base_dir)),
        ("mtu", TaskSet([mtu["mtu-balance-002"], mtu["mtu-door-003"]], base_dir=mtu.base_dir)),
    ]


def _sync_rollout(base_url: str, out: Path, specs: Sequence[EpisodeSpec]) -> list[EpisodeOutcome]:
    """The same episodes the sync way: ChatClient, LLMAgent.act, the in-process executor."""
    with ChatClient(LLMConfig(base_url=base_url, model="fake-model", max_retries=0)) as client:
        return rollout(
            _sets(),
            specs,
            out=out,
            env=EnvConfig(protocol="openai"),
            agent=lambda env, trial: LLMAgent(client, env, seed=100 + trial),
            toolset=default_toolset(),
            abort_on=ABORT_ON,
        )


def _async_rollout(
    base_url: str, out: Path, specs: Sequence[EpisodeSpec], *, episodes_at_once: int, requests_at_once: int
) -> list[EpisodeOutcome]:
    sets = dict(_sets())
    toolset = default_toolset()

    async def main() -> list[EpisodeOutcome]:
        config = LLMConfig(base_url=base_url, model="fake-model", max_retries=0, concurrency=requests_at_once)
        async with AsyncChatClient(config) as client:
            return await arollout(
                list(sets.items()),
                specs,
                out=out,
                make_env=lambda name: ToolEnv(toolset, sets[name], protocol="openai"),
                make_agent=lambda env, trial: LLMAgent(client, env, seed=100 + trial),
                concurrency=episodes_at_once,
                abort_types=(LLMError,),
            )

    return asyncio.run(main())


def _traces(root: Path) -> dict[str, list[str]]:
    """Every trace (finished or partial) under root, its wall-clock latencies left out."""
    return {
        p.relative_to(root).as_posix(): without_latencies(p.read_bytes())
        for p in sorted(root.rglob("*.jsonl*"))
    }


def test_async_episodes_write_the_sync_traces_with_bounded_requests(tmp_path: Path) -> None:
    specs = episode_specs(_sets(), trials=3, seed=0)  # 9 episodes: 5 pass, 1 fails, 3 abort
    fake = FakeOpenAI(_by_seed, reply_delay_s=0.05)
    with serve(fake):
        sync = _sync_rollout(fake.base_url, tmp_path / "sync", specs)
        sync_requests = len(fake.requests)
        fake.max_in_flight = 0
        outcomes = _async_rollout(
            fake.base_url, tmp_path / "async", specs, episodes_at_once=6, requests_at_once=2
        )
    # the client's semaphore bounds the requests in flight, counted by the server: 6 episodes at
    # once, never more than 2 requests, and 2 reached (the episodes really overlap)
    assert fake.max_in_flight == 2
    assert len(fake.requests) == 2 * sync_requests
    assert [(o.task_id, o.trial, o.status, o.reward) for o in outcomes] == [
        (o.task_id, o.trial, o.status, o.reward) for o in sync
    ]
    assert [o.status for o in outcomes if o.task_id == "mtu-door-003"] == ["aborted"] * 3
    assert [o.reward for o in outcomes if o.task_id == "fish-oil-days"] == [1.0, 0.0, 1.0]
    # the same token accounting per episode (the latencies aside)
    tokens = ("prompt_tokens", "completion_tokens", "requests", "retries")
    for ours, theirs in zip(outcomes, sync, strict=True):
        assert ours.usage is not None and theirs.usage is not None
        assert [ours.usage[k] for k in tokens] == [theirs.usage[k] for k in tokens]
    # the same trace bytes, partial traces of aborted episodes included, latencies aside
    sync_traces, async_traces = _traces(tmp_path / "sync"), _traces(tmp_path / "async")
    assert len(sync_traces) == 9 and sum(name.endswith(".partial") for name in sync_traces) == 3
    assert async_traces == sync_traces


def test_a_dead_server_aborts_async_episodes_as_sync_ones(tmp_path: Path) -> None:
    with serve(FakeOpenAI(_by_seed)) as fake:
        dead = fake.base_url  # the port is closed once the server is gone
    specs = episode_specs(_sets()[1:], trials=1, seed=0)
    sync = _sync_rollout(dead, tmp_path / "sync", specs)
    outcomes = _async_rollout(dead, tmp_path / "async", specs, episodes_at_once=2, requests_at_once=2)
    assert [o.status for o in sync] == [o.status for o in outcomes] == ["aborted", "aborted"]
    # the same error up to the OS's words for it (the async transport words a refusal its own way)
    kind = "1 attempts failed; last: connection failed: ConnectError: "
    for ours, theirs in zip(outcomes, sync, strict=True):
        assert ours.error is not None and theirs.error is not None
        assert ours.error.startswith("LLMUnavailable: ") and kind in ours.error
        assert ours.error.split(kind)[0] == theirs.error.split(kind)[0]
        assert (ours.steps, ours.trace, ours.usage) == (theirs.steps, theirs.trace, theirs.usage)


def test_the_async_client_keeps_the_sync_retries_errors_and_usage() -> None:
    async def ask(client: AsyncChatClient) -> Any:
        return await client.complete([{"role": "user", "content": "hi"}])

    async def main(fake: FakeOpenAI) -> None:
        async with AsyncChatClient(config(fake, max_retries=2)) as client:
            result = await ask(client)  # two 503s, then the answer: the SDK retried
            assert result.message.content == "ok" and result.usage.retries == 2
            fake.faults.append(Fault(status=400, body='{"error": {"message": "bad"}}'))
            with pytest.raises(LLMRequestError, match="HTTP 400") as caught:
                await ask(client)  # refused: not retried
            assert caught.value.status == 400
            assert client.usage.requests == 1 and client.usage.retries == 2
            assert client.usage.total_tokens == sum(u["total_tokens"] for u in fake.served_usage) > 0
            # a sync call on an async client's agent says how to drive it
            env = make_demo_env(protocol="openai")
            with pytest.raises(TypeError, match="aact"):
                LLMAgent(client, env).act("", {})
            env.close()

    fake = FakeOpenAI(lambda body: text("ok"), faults=deque([Fault(status=503), Fault(status=503)]))
    with serve(fake):
        asyncio.run(main(fake))
    assert len(fake.requests) == 4


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_teacher_forced_the_llm_agent_sends_the_golden_history_and_the_trace_keeps_it(
    api: str, tmp_path: Path
) -> None:
    """`toolgym run --mode step`: the model's wrong call is scored, never run nor shown again; the
    next request holds the golden call and its result, and the trace rebuilds every request."""
    from toolgym.envs.teacher import record_teacher_forced

    wrong = calls(("GetWeather", {"city": "Boston", "date": "2024-01-04"}))
    script = {"weather be like in New York": [wrong, text("Cloudy, 46 F.")]}
    tasks = mtu_tasks()
    env = ToolEnv(default_toolset(), tasks, protocol="openai" if api == "chat" else "responses")
    with serve(FakeOpenAI(script)) as fake, ChatClient(config(fake, api=api)) as client:
        result, path = record_teacher_forced(env, LLMAgent(client, env), tasks["mtu-weather-001"], tmp_path)
    env.close()
    sent = [r["messages" if api == "chat" else "input"] for r in fake.requests]
    assert len(sent) == 2 and "New York" in json.dumps(sent[1][2]) and "Boston" not in json.dumps(sent[1])
    assert "cloudy" in json.dumps(sent[1][3])  # the golden call's real result, paired with its id
    assert [(s.tool_match, s.args_match) for s in result.steps] == [(True, False), (None, None)]
    steps = read_trace(path).steps
    rebuilt = full_requests(steps)
    assert [r["messages"] if r is not None else None for r in rebuilt] == sent
    assert all(s.raw for s in steps)  # the model's output kept, chat messages and Responses items alike


# ---- the real model's outputs through the chat and Responses paths ---------------------------------
REAL_OUTPUTS = [(fixture.stem, o) for fixture in OUTPUT_FIXTURES for o in real_outputs(fixture)]


def _reply_text(raw: Any) -> str:
    """The text of a recorded reply: react/json text, a chat message's content, or Responses items."""
    if isinstance(raw, dict):
        return str(raw.get("content") or "")
    if isinstance(raw, list):
        return "".join(str(i.get("content") or "") for i in raw if i.get("type") == "message")
    return str(raw)


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize(
    "output",
    [o for _, o in REAL_OUTPUTS],
    ids=[f"{s}:{o['kind']}:{o['produced_by']['protocol']}" for s, o in REAL_OUTPUTS],
)
def test_the_real_models_outputs_through_chat_and_responses(
    output: dict[str, Any], api: str, tmp_path: Path
) -> None:
    """Each output the real SmolLM2 produced (in process or through transformers serve), sent back
    by a server as its reply over /v1/chat/completions or /v1/responses: under a text protocol the
    typed error it got and the episode goes on to the step limit; under the native protocols it is
    the final answer. Either way the trace keeps the reply as the model wrote it."""
    from typer.testing import CliRunner

    from toolgym.cli import app

    made = output["produced_by"]
    reply = _reply_text(output["raw"])
    native = made["protocol"] in ("openai", "responses")
    protocol = ("responses" if api == "responses" else "openai") if native else made["protocol"]
    args = ["run", "--agent", "llm", "--model", "fake-model", "--api", api, "--protocol", protocol]
    args += ["--tasks", made["task_set"], "--task-id", made["task_id"], "--max-steps", "2"]
    with serve(FakeOpenAI(lambda body: text(reply))) as fake:
        result = CliRunner().invoke(app, [*args, "--base-url", fake.base_url, "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    trace = read_trace(next(tmp_path.rglob("*.seed0.jsonl")))
    assert trace.end is not None
    if native:
        (step,) = trace.steps
        sent = (
            [{"type": "message", "role": "assistant", "content": reply}]
            if api == "responses"
            else {"role": "assistant", "content": reply}
        )
        assert step.raw == sent and step.error_kinds == [] and trace.end.final_answer == reply
        return
    assert [s.raw for s in trace.steps] == [reply, reply]
    assert trace.steps[0].error_kinds == TEXT_PROTOCOL_ERRORS[output["kind"]] == output["error_kinds"]
    assert trace.end.status == "truncated"  # on to the step limit


# ---- cancel: a stopped run spends nothing more ------------------------------------------------------
def test_cancel_abandons_requests_in_flight_and_sends_no_more_sync_and_async() -> None:
    """A request held by the server is abandoned at `cancel()` (LLMCancelled at once, not after the
    60 s answer), and no later request, or retry, reaches the server."""
    from toolgym.models.llm import LLMCancelled

    messages = [{"role": "user", "content": "hi"}]
    fake = FakeOpenAI(lambda body: text("late"), reply_delay_s=60.0)
    with serve(fake):
        client = ChatClient(config(fake, max_retries=3))
        failed: list[BaseException] = []

        def ask() -> None:
            try:
                client.complete(messages)
            except BaseException as exc:
                failed.append(exc)

        asker = threading.Thread(target=ask)
        asker.start()
        while fake.in_flight < 1:
            threading.Event().wait(0.01)
        client.cancel()
        asker.join(timeout=30)
        assert not asker.is_alive() and isinstance(failed[0], LLMCancelled)
        with pytest.raises(LLMCancelled):
            client.complete(messages)

        async def ask_async() -> None:
            async with AsyncChatClient(config(fake)) as aclient:
                pending = asyncio.ensure_future(aclient.complete(messages))
                while fake.in_flight < 2:  # the sync request's stall still holds one
                    await asyncio.sleep(0.01)
                aclient.cancel()
                with pytest.raises(LLMCancelled):
                    await asyncio.wait_for(pending, timeout=30)
                with pytest.raises(LLMCancelled):
                    await aclient.complete(messages)

        asyncio.run(ask_async())
    assert len(fake.requests) == 2  # one per client: none after the cancel
