"""The Responses protocol, checked against the openai SDK's own Responses types."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai import BadRequestError, OpenAI
from openai.types.responses import (
    FunctionToolParam,
    Response,
    ResponseFunctionToolCall,
    ResponseInputItemParam,
    ResponseOutputMessage,
    ResponseReasoningItem,
)
from pydantic import TypeAdapter

from tests.models.fake_openai import FakeOpenAI, calls, serve, text
from tests.toolgym.test_protocols import TOOLS
from toolgym import AnswerSpec, Task, ToolEnv
from toolgym.actions import AskUser, FinalAnswer, NoCall, Observation, ToolCall
from toolgym.errors import FormatError
from toolgym.protocols import ResponsesProtocol, get_protocol

RESPONSES = ResponsesProtocol()


def response(*items: dict[str, Any]) -> Response:
    """A Response as the SDK builds it from the wire."""
    return Response.model_validate(
        {
            "id": "resp_1",
            "object": "response",
            "created_at": 0,
            "model": "fake-model",
            "output": list(items),
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }
    )


def function_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def message(*texts: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": t, "annotations": []} for t in texts],
    }


def reasoning(text: str) -> dict[str, Any]:
    return {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": text}]}


PARALLEL = response(
    reasoning("Weather first, then the sum."),
    function_call("call_w", "get_weather", '{"city": "Paris"}'),
    function_call("call_a", "add_numbers", '{"first_term": 2, "second_term": 3}'),
)
EXPECTED_CALLS = [
    ToolCall(
        name="get_weather",
        arguments={"city": "Paris"},
        call_id="call_w",
        thought="Weather first, then the sum.",
    ),
    ToolCall(name="add_numbers", arguments={"first_term": 2, "second_term": 3}, call_id="call_a"),
]


def test_registered_by_name() -> None:
    assert isinstance(get_protocol("responses"), ResponsesProtocol)


def test_function_calls_are_parallel_calls_in_order_with_their_call_ids() -> None:
    assert RESPONSES.parse(PARALLEL) == EXPECTED_CALLS
    # the SDK's output items, their plain data, the Response's JSON: all read the same
    assert RESPONSES.parse(PARALLEL.output) == EXPECTED_CALLS
    assert RESPONSES.parse([item.model_dump() for item in PARALLEL.output]) == EXPECTED_CALLS
    assert RESPONSES.parse(PARALLEL.model_dump_json()) == EXPECTED_CALLS
    single = PARALLEL.output[1]
    assert isinstance(single, ResponseFunctionToolCall)
    assert RESPONSES.parse(single) == [EXPECTED_CALLS[0].model_copy(update={"thought": None})]


def test_message_without_calls_is_the_final_answer_and_reasoning_its_thought() -> None:
    out = response(reasoning("I know it."), message("It is ", "sunny."))
    assert RESPONSES.parse(out) == [FinalAnswer(text="It is sunny.", thought="I know it.")]
    item = ResponseOutputMessage.model_validate(message("Done."))
    assert RESPONSES.parse(item) == [FinalAnswer(text="Done.")]
    refusal = message()
    refusal["content"] = [{"type": "refusal", "refusal": "I cannot help with that."}]
    assert RESPONSES.parse(response(refusal)) == [FinalAnswer(text="I cannot help with that.")]
    # a reasoning model that shows no summary: its raw reasoning content is the thought
    raw = ResponseReasoningItem.model_validate(
        {
            "type": "reasoning",
            "id": "rs",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": "hm"}],
        }
    )
    assert RESPONSES.parse([raw, message("ok")]) == [FinalAnswer(text="ok", thought="hm")]


def test_message_text_next_to_calls_is_the_thought_and_control_functions_map() -> None:
    out = response(message("Let me look."), function_call("c1", "list_alarms", ""))
    assert RESPONSES.parse(out) == [
        ToolCall(name="list_alarms", arguments={}, call_id="c1", thought="Let me look.")
    ]
    assert RESPONSES.parse(response(function_call("c2", "ask_user", '{"text": "Which city?"}'))) == [
        AskUser(text="Which city?")
    ]
    assert RESPONSES.parse(response(message("nothing to do"), function_call("c3", "no_call", "{}"))) == [
        NoCall(thought="nothing to do")
    ]


def test_a_chat_message_is_read_as_the_openai_protocol_reads_it() -> None:
    chat = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c9", "type": "function", "function": {"name": "list_alarms", "arguments": "{}"}}
        ],
    }
    assert RESPONSES.parse(chat) == [ToolCall(name="list_alarms", arguments={}, call_id="c9")]


@pytest.mark.parametrize(
    ("output", "error"),
    [
        ([], "no items"),
        ([{"type": "web_search_call", "id": "ws"}], "unsupported output item type"),
        ([reasoning("thinking only")], "neither function_call items nor a message"),
        ([{"type": "message", "role": "user", "content": "hi"}], "expected an assistant message"),
        (
            [{"type": "message", "role": "assistant", "content": [{"type": "output_text"}]}],
            "text or refusal string",
        ),
        ([{"type": "function_call", "call_id": "c", "arguments": "{}"}], "'name' must be a non-empty string"),
        (
            [{"type": "function_call", "call_id": 7, "name": "x", "arguments": "{}"}],
            "'call_id' must be a string",
        ),
        (
            [{"type": "function_call", "call_id": "c", "name": "x", "arguments": "[1]"}],
            "must be a JSON object",
        ),
        (
            [function_call("a", "x", "{}"), message("a"), function_call("b", "ask_user", '{"text": "?"}')],
            "got",
        ),
        ({"output": "no"}, "expected Responses output items"),
        ({"object": "response", "output": None}, "no output list"),
        ("not json", "not JSON"),
        ([["nested"]], "must be an object"),
    ],
)
def test_malformed_output_is_a_format_error(output: Any, error: str) -> None:
    with pytest.raises(FormatError, match=error):
        RESPONSES.parse(output)


def test_rendered_turns_are_input_items_the_sdk_accepts_and_parse_back() -> None:
    inputs = TypeAdapter(list[ResponseInputItemParam])
    rendered = RESPONSES.format_actions(EXPECTED_CALLS)
    inputs.validate_python(rendered)
    assert RESPONSES.parse(rendered) == EXPECTED_CALLS
    final = RESPONSES.format_action(FinalAnswer(text="sunny", thought="checked"))
    inputs.validate_python(final)
    assert RESPONSES.parse(final) == [FinalAnswer(text="sunny", thought="checked")]


def test_observations_are_function_call_outputs_with_the_call_id() -> None:
    result = Observation(type="tool_result", text="sunny ☀", tool="get_weather", call_id="call_w")
    item = json.loads(RESPONSES.format_observation(result))
    assert item == {"type": "function_call_output", "call_id": "call_w", "output": "sunny ☀"}
    reply = json.loads(RESPONSES.format_observation(Observation(type="user", text="Paris.")))
    assert reply == {"type": "message", "role": "user", "content": "Paris."}
    TypeAdapter(list[ResponseInputItemParam]).validate_python([item, reply])


def test_tools_are_flat_function_tools_of_the_sdk() -> None:
    tools = RESPONSES.tools_json(TOOLS)
    assert [t["name"] for t in tools] == ["get_weather", "add_numbers", "list_alarms", "ask_user", "no_call"]
    adapter = TypeAdapter(FunctionToolParam)
    for spec in tools:
        adapter.validate_python(spec)
        assert spec["strict"] is False and "function" not in spec
    assert all(t["strict"] is True for t in RESPONSES.tools_json(TOOLS, strict=True))
    assert "function_call items" in RESPONSES.instructions(TOOLS)


def test_env_steps_a_response_and_answers_each_call_by_its_call_id() -> None:
    task = Task(id="w", query="Weather and sum?", answer=AnswerSpec(whitelist=[["5"]]))
    env = ToolEnv(TOOLS, [task], protocol="responses")
    env.reset(options={"task": "w"})
    obs, _, terminated, _, info = env.step(PARALLEL)
    assert not terminated and info["error_kind"] is None
    items = [json.loads(line) for line in obs.split("\n")]
    assert [(i["type"], i["call_id"]) for i in items] == [
        ("function_call_output", "call_w"),
        ("function_call_output", "call_a"),
    ]
    assert items[1]["output"] == "5"
    assert env.episode is not None
    assert env.episode.steps[0].raw == PARALLEL.model_dump(mode="json", exclude_none=True)["output"]
    _, reward, terminated, _, _ = env.step(response(message("5")))
    assert terminated and reward == 1.0


def test_an_episode_with_the_real_sdk_clients_responses_api() -> None:
    """`OpenAI(...).responses.create` against a local server: its Response goes into step, the
    observations go back as function_call_output input items, by call_id."""
    task = Task(id="w", query="Weather and sum?", answer=AnswerSpec(whitelist=[["5"]]))
    script = {
        "Weather and sum?": [
            calls(("get_weather", {"city": "Paris"}), ("add_numbers", {"first_term": 2, "second_term": 3})),
            text("5"),
        ]
    }
    env = ToolEnv(TOOLS, [task], protocol="responses")
    with serve(FakeOpenAI(script, api_key="test-key")) as fake:
        client = OpenAI(base_url=fake.base_url, api_key="test-key", max_retries=0)
        obs, info = env.reset(options={"task": "w"})
        tools = TypeAdapter(list[FunctionToolParam]).validate_python(
            RESPONSES.tools_json(env.offered, strict=True)
        )
        history: list[Any] = [{"role": "user", "content": obs}]
        first = client.responses.create(
            model="fake-model", instructions=info["instructions"], input=history, tools=tools
        )
        obs, _, terminated, _, info = env.step(first)
        assert not terminated and info["error_kind"] is None
        assert [(o["call_id"], o["text"]) for o in info["observations"]] == [
            ("fake_0_0", "sunny in Paris (c)"),
            ("fake_0_1", "5"),
        ]
        history += [item.model_dump(exclude_none=True) for item in first.output]
        with pytest.raises(BadRequestError, match="No tool output found"):  # as the real API says
            client.responses.create(model="fake-model", input=history, tools=tools)
        history += [json.loads(line) for line in obs.split("\n")]
        second = client.responses.create(model="fake-model", input=history, tools=tools)
        _, reward, terminated, _, info = env.step(second.output)
        assert terminated and reward == 1.0 and info["final_answer"] == "5"
        # the server saw strict flat tools and function_call_outputs paired with its call ids
        sent = fake.requests[-1]
        assert all(t["strict"] is True and "name" in t for t in sent["tools"])
        outputs = [i["call_id"] for i in sent["input"] if i.get("type") == "function_call_output"]
        assert outputs == ["fake_0_0", "fake_0_1"]
