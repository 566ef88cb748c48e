"""The OpenAI Responses protocol: the model's output is a list of Responses output items.

    [{"type": "reasoning", "summary": [{"type": "summary_text", "text": "<thought>"}]},
     {"type": "function_call", "call_id": "call_0", "name": "<tool>", "arguments": "<JSON object>"},
     {"type": "function_call", "call_id": "call_1", "name": "<tool>", "arguments": "..."}]

Several function_call items are several ToolCall actions, in order, each keeping its `call_id`;
a `message` item with text and no function_call items is a FinalAnswer of that text. Reasoning
items (their summary, else their content) are the thought, as are message items next to calls.
The same reserved functions as the chat protocol carry ask_user and no_call. A whole `Response`
(or its JSON), one output item, or the openai SDK's objects for them are accepted too; a chat
assistant message is read as the `openai` protocol reads it.

Each observation comes back as one input item per line: a `function_call_output` with the call's
`call_id`, or, for what answers no call (a user's reply, a format error), a user `message`.
Tools are exported flat (`{"type": "function", "name": ..., "parameters": ..., "strict": ...}`),
as the Responses API takes them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from toolgym.actions import Action, AskUser, FinalAnswer, Observation, ToolCall
from toolgym.canonical import sha256_hex
from toolgym.errors import FormatError
from toolgym.protocols.base import MAX_OUTPUT_CHARS, ActionProtocol, RawOutput, plain_output
from toolgym.protocols.json_protocol import (
    check_combination,
    check_length,
    describe_type,
    dumps,
    loads_strict,
    preview,
)
from toolgym.protocols.openai import (
    OpenAIProtocol,
    derived_call_id,
    embedded_tools,
    function_call_action,
)
from toolgym.tools import ToolSet, to_responses_tool


def _part_texts(parts: Any, where: str, keys: Sequence[str]) -> list[str]:
    """The texts of a content or summary list: each part an object with one of `keys` as a string."""
    if parts is None:
        return []
    if isinstance(parts, str):
        return [parts]
    if not isinstance(parts, (list, tuple)):
        raise FormatError(f"{where} must be a list of parts, got {describe_type(parts)}")
    texts: list[str] = []
    for part in parts:
        text = next((part[k] for k in keys if isinstance(part, Mapping) and k in part), None)
        if not isinstance(text, str):
            raise FormatError(f"{where}: each part must be an object with a {' or '.join(keys)} string")
        texts.append(text)
    return texts


class ResponsesProtocol(ActionProtocol):
    name: ClassVar[str] = "responses"
    checks_arguments: ClassVar[bool] = True  # function_call_action: arguments_from

    # the chat protocol's reserved functions, so a history reads the same in both APIs
    ASK_USER_FUNCTION: ClassVar[str] = OpenAIProtocol.ASK_USER_FUNCTION
    NO_CALL_FUNCTION: ClassVar[str] = OpenAIProtocol.NO_CALL_FUNCTION

    # ---- parsing -------------------------------------------------------------------------
    def parse(self, output: RawOutput) -> list[Action]:
        items = self._items(output)
        if isinstance(items, Mapping):
            return OpenAIProtocol().parse(items)  # a chat assistant message
        reasoning: list[str] | None = None
        texts: list[str] | None = None
        calls: list[tuple[str, Mapping[str, Any]]] = []
        size = 0
        for i, item in enumerate(items):
            where = f"output[{i}]"
            if not isinstance(item, Mapping):
                raise FormatError(f"{where} must be an object, got {describe_type(item)}")
            kind = item.get("type")
            if kind == "reasoning":
                # the summary is what the API shows of a reasoning model's thinking; raw content else
                found = _part_texts(item.get("summary"), f"{where} summary", ("text",))
                found = found or _part_texts(item.get("content"), f"{where} content", ("text",))
                reasoning = [*(reasoning or []), *found]
                size += sum(map(len, found))
            elif kind == "message":
                role = item.get("role", "assistant")
                if role != "assistant":
                    raise FormatError(
                        f"{where}: expected an assistant message, got role {preview(str(role))}"
                    )
                found = _part_texts(item.get("content"), f"{where} content", ("text", "refusal"))
                texts = [*(texts or []), *found]
                size += sum(map(len, found))
            elif kind == "function_call":
                calls.append((where, item))
                arguments = item.get("arguments")
                size += len(arguments) if isinstance(arguments, str) else 0
            else:
                raise FormatError(
                    f"{where}: unsupported output item type {preview(str(kind))} "
                    "(expected function_call, message or reasoning)"
                )
        if size > MAX_OUTPUT_CHARS:
            raise FormatError(f"output is {size} characters long; the limit is {MAX_OUTPUT_CHARS}")
        thought = None if reasoning is None else "\n".join(reasoning)
        text = None if texts is None else "".join(texts)
        if not calls:
            if text is None:
                raise FormatError("the output has neither function_call items nor a message")
            return [FinalAnswer(text=text, thought=thought)]
        if thought is None:
            thought = text  # words next to calls are what the model thought
        actions = [
            function_call_action(
                item.get("name"),
                item.get("arguments"),
                item.get("call_id"),
                n,
                thought if n == 0 else None,
                where,
                "call_id",
            )
            for n, (where, item) in enumerate(calls)
        ]
        return check_combination(actions)

    @staticmethod
    def _items(output: RawOutput) -> list[Any] | Mapping[str, Any]:
        """The output items, or a chat message (a mapping) for the chat protocol to read."""
        value = plain_output(output)
        if isinstance(value, str):
            check_length(value)
            try:
                value = plain_output(loads_strict(value))
            except ValueError:
                raise FormatError(
                    'expected Responses output items such as [{"type": "function_call", ...}], '
                    f"got text that is not JSON: {preview(value)}"
                ) from None
        if isinstance(value, Mapping):
            if "role" in value and "type" not in value:
                return value
            raise FormatError(
                "expected Responses output items (function_call, message, reasoning) or a Response, "
                f"got an object with keys {preview(', '.join(map(str, value)))}"
            )
        if not isinstance(value, list):
            raise FormatError(f"expected Responses output items, got {describe_type(value)}")
        if not value:
            raise FormatError("the output has no items")
        return value

    # ---- rendering -----------------------------------------------------------------------
    @staticmethod
    def _function_call(
        index: int, name: str, arguments: Mapping[str, Any], call_id: str | None
    ) -> dict[str, Any]:
        return {
            "type": "function_call",
            "call_id": call_id or derived_call_id(index, name, arguments),
            "name": name,
            "arguments": dumps(dict(arguments)),
        }

    def _function_call_of(self, action: Action, index: int) -> dict[str, Any]:
        if isinstance(action, ToolCall):
            return self._function_call(index, action.name, action.arguments, action.call_id)
        if isinstance(action, AskUser):
            return self._function_call(index, self.ASK_USER_FUNCTION, {"text": action.text}, None)
        return self._function_call(index, self.NO_CALL_FUNCTION, {}, None)

    def format_action(self, action: Action) -> list[dict[str, Any]]:
        return self.format_actions([action])

    def format_actions(self, actions: Sequence[Action]) -> list[dict[str, Any]]:
        """The items of one turn, in the form the API takes them back as input: the thought as a
        reasoning item, then one message item (a final answer) or one function_call item per action."""
        first = check_combination(actions)[0]
        items: list[dict[str, Any]] = []
        if first.thought is not None:
            # an input reasoning item needs an id: one that depends only on the text (byte-identical histories)
            items.append(
                {
                    "type": "reasoning",
                    "id": "rs_" + sha256_hex(first.thought)[:16],
                    "summary": [{"type": "summary_text", "text": first.thought}],
                }
            )
        if isinstance(first, FinalAnswer):
            items.append({"type": "message", "role": "assistant", "content": first.text})
            return items
        return items + [self._function_call_of(a, i) for i, a in enumerate(actions)]

    def format_observation(self, obs: Observation) -> str:
        item: dict[str, Any] = (
            {"type": "function_call_output", "call_id": obs.call_id, "output": obs.text}
            if obs.call_id is not None
            else {"type": "message", "role": "user", "content": obs.text}
        )
        return json.dumps(item, ensure_ascii=False, separators=(",", ":"))

    def tools_json(
        self, tools: ToolSet, *, control: bool = True, strict: bool = False
    ) -> list[dict[str, Any]]:
        """The Responses `tools` request field (flat function tools); with `control`, also the
        reserved ask_user/no_call functions; with `strict`, schemas for strict function calling."""
        flat = []
        for spec in OpenAIProtocol().tools_json(tools, control=control):
            function = spec["function"]
            flat.append(
                to_responses_tool(
                    function["name"], function["description"], function["parameters"], strict=strict
                )
            )
        return flat

    def instructions(self, tools: ToolSet, *, tools_in_prompt: bool = False) -> str:
        """How to answer with function_call items; the schemas travel in the request's `tools`
        (`tools_json`), and `tools_in_prompt` also lists them at the end (as the chat protocol)."""
        offered = "below" if tools_in_prompt else "you are offered"
        return (
            f"You are an assistant that can call the functions {offered} through "
            "function_call items. Arguments are a JSON object that follows the function's parameter "
            "schema. You may call several functions in one turn. When you have the final answer, reply "
            "with a message and no function calls. If mandatory information is missing, call "
            f'`{self.ASK_USER_FUNCTION}` with {{"text": "<question>"}}; if no function should be called '
            f"this turn, call `{self.NO_CALL_FUNCTION}` with {{}}."
            + (
                embedded_tools("OpenAI Responses tools JSON", self.tools_json(tools))
                if tools_in_prompt
                else ""
            )
        )
