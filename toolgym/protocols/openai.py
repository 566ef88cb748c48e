"""The OpenAI chat protocol: the model's output is an assistant message with `tool_calls`.

    {"role": "assistant", "content": "<thought or null>",
     "tool_calls": [{"id": "call_0", "type": "function",
                     "function": {"name": "<tool>", "arguments": "<JSON object as a string>"}}]}

Several tool_calls are several ToolCall actions (each with its call_id); a message with no
tool_calls is a FinalAnswer of its content. Two reserved function names carry the actions
OpenAI has no native form for: `ask_user` {"text": "<question>"} and `no_call` {}.
A thought travels in `content` next to tool calls, or in `reasoning_content` (the field
vLLM/DeepSeek use) next to a final answer. `arguments` may also be a dict, and the whole
message may be given as a JSON string.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from toolgym.actions import Action, AskUser, FinalAnswer, NoCall, Observation, ToolCall
from toolgym.canonical import canonical_json, sha256_hex
from toolgym.errors import FormatError
from toolgym.protocols.base import MAX_OUTPUT_CHARS, ActionProtocol, RawOutput, plain_output
from toolgym.protocols.json_protocol import (
    ASK_USER_KEYS,
    ASK_USER_NAMES,
    FINISH_KEYS,
    FINISH_NAMES,
    NO_CALL_NAMES,
    arguments_from,
    check_combination,
    check_length,
    content_of_message,
    describe_type,
    dumps,
    loads_strict,
    normalize_reserved,
    optional_text,
    preview,
    required_text,
)
from toolgym.tools import ToolSet, strict_json_schema


def derived_call_id(index: int, name: str, arguments: Mapping[str, Any]) -> str:
    """A call id that depends only on the call, so rendered histories are byte-identical."""
    return "call_" + sha256_hex(canonical_json([index, name, dict(arguments)]))[:16]


def function_call_action(
    name: Any, arguments: Any, call_id: Any, index: int, thought: str | None, where: str, id_key: str = "id"
) -> Action:
    """The action of one function call (a chat tool call or a Responses function_call item): a
    ToolCall, or the reserved ask_user / no_call / finish functions as their actions."""
    if not isinstance(name, str) or not name.strip():
        raise FormatError(f"{where}: function 'name' must be a non-empty string")
    name = name.strip()
    args = arguments_from(arguments, f"{where} ({name}) arguments")
    reserved = normalize_reserved(name)
    if reserved in ASK_USER_NAMES:
        return AskUser(text=required_text(args, ASK_USER_KEYS, name), thought=thought)
    if reserved in NO_CALL_NAMES:
        return NoCall(thought=thought or "")
    if reserved in FINISH_NAMES:
        return FinalAnswer(text=required_text(args, FINISH_KEYS, name), thought=thought)
    given_id = optional_text(call_id, f"{where}: {id_key!r}")
    return ToolCall(
        name=name, arguments=args, call_id=given_id or derived_call_id(index, name, args), thought=thought
    )


class OpenAIProtocol(ActionProtocol):
    name: ClassVar[str] = "openai"
    checks_arguments: ClassVar[bool] = True  # arguments come from check_arguments / arguments_from

    ASK_USER_FUNCTION: ClassVar[str] = "ask_user"
    NO_CALL_FUNCTION: ClassVar[str] = "no_call"

    # ---- parsing -------------------------------------------------------------------------
    def parse(self, output: RawOutput) -> list[Action]:
        message = self._message(output)
        role = message.get("role", "assistant")
        if role != "assistant":
            raise FormatError(f"expected an assistant message, got role {preview(str(role))}")
        reasoning = optional_text(message.get("reasoning_content"), "reasoning_content")
        content = None if message.get("content") is None else content_of_message(message)
        calls = message.get("tool_calls")
        if not calls and message.get("function_call") is not None:
            calls = [{"type": "function", "function": message["function_call"]}]  # legacy API
        if calls is None:
            calls = []
        if not isinstance(calls, (list, tuple)):
            raise FormatError(f"tool_calls must be a list, got {describe_type(calls)}")
        self._check_size(content, calls)
        if not calls:
            if content is None:
                raise FormatError("the assistant message has neither tool_calls nor content")
            return [FinalAnswer(text=content, thought=reasoning)]
        thought = reasoning if reasoning is not None else content
        actions = [self._call(call, i, thought if i == 0 else None) for i, call in enumerate(calls)]
        return check_combination(actions)

    @staticmethod
    def _message(output: RawOutput) -> Mapping[str, Any]:
        output = plain_output(output)
        given_as_text = isinstance(output, str)
        if isinstance(output, str):
            text = output
            check_length(text)
            try:
                output = plain_output(loads_strict(text))
            except ValueError:
                raise FormatError(
                    'expected an assistant message such as {"role": "assistant", "tool_calls": [...]}, '
                    f"got text that is not JSON: {preview(text)}"
                ) from None
        if isinstance(output, Mapping):
            return output
        if (
            isinstance(output, list)
            and output
            and all(isinstance(i, Mapping) and "type" in i for i in output)
        ):
            raise FormatError(
                "got Responses output items; the openai protocol reads chat messages "
                "(use protocol='responses' for the Responses API)"
            )
        if given_as_text:
            raise FormatError(f"expected an assistant message object, got JSON {describe_type(output)}")
        raise FormatError(f"expected an assistant message (a dict or its JSON), got {describe_type(output)}")

    @staticmethod
    def _check_size(content: str | None, calls: Sequence[Any]) -> None:
        size = len(content or "")
        for call in calls:
            function = call.get("function") if isinstance(call, Mapping) else None
            arguments = function.get("arguments") if isinstance(function, Mapping) else None
            if isinstance(arguments, str):
                size += len(arguments)
        if size > MAX_OUTPUT_CHARS:
            raise FormatError(f"message is {size} characters long; the limit is {MAX_OUTPUT_CHARS}")

    @staticmethod
    def _call(call: Any, index: int, thought: str | None) -> Action:
        where = f"tool_calls[{index}]"
        if not isinstance(call, Mapping):
            raise FormatError(f"{where} must be an object, got {describe_type(call)}")
        kind = call.get("type", "function")
        if kind != "function":
            raise FormatError(f"{where}: only type 'function' is supported, got {preview(str(kind))}")
        function = call.get("function")
        if not isinstance(function, Mapping):
            raise FormatError(f"{where}: 'function' must be an object, got {describe_type(function)}")
        return function_call_action(
            function.get("name"), function.get("arguments"), call.get("id"), index, thought, where
        )

    # ---- rendering -----------------------------------------------------------------------
    @staticmethod
    def _tool_call(
        index: int, name: str, arguments: Mapping[str, Any], call_id: str | None
    ) -> dict[str, Any]:
        return {
            "id": call_id or derived_call_id(index, name, arguments),
            "type": "function",
            "function": {"name": name, "arguments": dumps(dict(arguments))},
        }

    def _tool_call_of(self, action: Action, index: int) -> dict[str, Any]:
        if isinstance(action, ToolCall):
            return self._tool_call(index, action.name, action.arguments, action.call_id)
        if isinstance(action, AskUser):
            return self._tool_call(index, self.ASK_USER_FUNCTION, {"text": action.text}, None)
        return self._tool_call(index, self.NO_CALL_FUNCTION, {}, None)

    def format_action(self, action: Action) -> dict[str, Any]:
        return self.format_actions([action])

    def format_actions(self, actions: Sequence[Action]) -> dict[str, Any]:
        """One assistant message; several tool calls become several `tool_calls`."""
        first = check_combination(actions)[0]
        if isinstance(first, FinalAnswer):
            message: dict[str, Any] = {"role": "assistant", "content": first.text}
            if first.thought is not None:
                message["reasoning_content"] = first.thought
            return message
        return {
            "role": "assistant",
            "content": first.thought,
            "tool_calls": [self._tool_call_of(a, i) for i, a in enumerate(actions)],
        }

    def format_observation(self, obs: Observation) -> str:
        message = (  # a notification answers no call: the chat API takes it as the user's message
            {"role": "user", "content": obs.text}
            if obs.type == "notification"
            else {"role": "tool", "tool_call_id": obs.call_id, "content": obs.text}
        )
        return json.dumps(
            message,
            ensure_ascii=False,
            separators=(",", ":"),
        )

    def tools_json(
        self, tools: ToolSet, *, control: bool = True, strict: bool = False
    ) -> list[dict[str, Any]]:
        """The `tools` request field; with `control`, also the reserved ask_user/no_call functions;
        with `strict`, schemas for strict function calling (`toolgym.tools.strict_json_schema`)."""
        specs = tools.to_openai(strict=strict)
        if control:
            specs += [
                {
                    "type": "function",
                    "function": {
                        "name": self.ASK_USER_FUNCTION,
                        "description": "Ask the user for information you need and do not have.",
                        "parameters": {
                            "type": "object",
                            "properties": {"text": {"type": "string", "description": "The question."}},
                            "required": ["text"],
                        },
                    },
                },
                {
                    "type": "function",
                    "function": {
                        "name": self.NO_CALL_FUNCTION,
                        "description": "Deliberately call no tool this turn.",
                        "parameters": {"type": "object", "properties": {}, "required": []},
                    },
                },
            ]
            if strict:
                for spec in specs[-2:]:
                    function = spec["function"]
                    function.update(parameters=strict_json_schema(function["parameters"]), strict=True)
        return specs

    def instructions(self, tools: ToolSet, *, tools_in_prompt: bool = False) -> str:
        """How to answer with tool_calls. The schemas travel in the request's `tools`
        (`tools_json`), which the server's chat template renders, so they are not repeated here;
        `tools_in_prompt` also lists them at the end, for a template that renders no tools."""
        offered = "below" if tools_in_prompt else "you are offered"
        return (
            f"You are an assistant that can call the functions {offered} through "
            "tool_calls. Arguments are a JSON object that follows the function's parameter schema. "
            "You may call several functions in one message. When you have the final answer, reply with "
            "plain content and no tool_calls. If mandatory information is missing, call "
            f'`{self.ASK_USER_FUNCTION}` with {{"text": "<question>"}}; if no function should be called '
            f"this turn, call `{self.NO_CALL_FUNCTION}` with {{}}."
            + (embedded_tools("OpenAI tools JSON", self.tools_json(tools)) if tools_in_prompt else "")
        )


def embedded_tools(title: str, specs: list[dict[str, Any]]) -> str:
    """The tool schemas as a closing section of the system prompt (the `tools_in_prompt` form)."""
    return f"\n\nFunctions ({title}):\n{json.dumps(specs, ensure_ascii=False, indent=2)}"
