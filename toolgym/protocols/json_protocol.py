"""The JSON action protocol (T-Eval style) and the JSON helpers the other protocols share.

The model answers with one JSON object per turn, optionally inside a ```json fence:

    {"thought": "...", "name": "<tool>", "args": {...}}              a tool call
    {"thought": "...", "name": "FinishAction", "args": {"response": "..."}}   the final answer
    {"final_answer": "..."}                                          the final answer (short form)
    {"thought": "...", "name": "AskUser", "args": {"text": "..."}}   a question to the user
    {"thought": "...", "name": "NoAction", "args": {}}                no call this turn
    [{"name": ..., "args": ...}, ...]                                several tool calls at once

`args` may also be spelled `arguments` or `parameters`; a missing `args` means {}.
"""

from __future__ import annotations

import ast
import functools
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypeVar

from toolgym.actions import Action, ActionRecord, AskUser, FinalAnswer, NoCall, ToolCall
from toolgym.canonical import int_fits_json
from toolgym.errors import ErrorKind, FormatError
from toolgym.protocols.base import MAX_OUTPUT_CHARS, ActionProtocol, RawOutput, plain_output
from toolgym.tools import ToolSet

_A = TypeVar("_A", bound=ToolCall | FinalAnswer | NoCall | AskUser | ActionRecord)

# Deeper nesting than this in tool arguments is rejected instead of risking RecursionError.
MAX_ARGUMENT_DEPTH = 64

# Reserved action names, compared after `normalize_reserved` (lower case, no "_", "-", " ").
# "finish" / "ask_to_user" are ToolEyes' (ToolBench-style) control actions
FINISH_NAMES = frozenset({"finishaction", "finalanswer", "finish"})
ASK_USER_NAMES = frozenset({"askuser", "asktouser"})
NO_CALL_NAMES = frozenset({"none", "noaction", "nocall", "noapicall", "null", "n/a", "na"})
# Where the text of a finish action / a question may sit in its arguments.
FINISH_KEYS = ("response", "answer", "final_answer", "text")
ASK_USER_KEYS = ("text", "question")

_FENCE_RE = re.compile(r"```[^\n`]*\n?(.*?)(?:```|\Z)", re.DOTALL)


_RESERVED_SEPARATORS_RE = re.compile(r"[\s_\-]+")


@functools.lru_cache(maxsize=1024)  # a model names the same few tools again and again
def normalize_reserved(name: str) -> str:
    return _RESERVED_SEPARATORS_RE.sub("", name).lower()


def describe_type(value: object) -> str:
    return "null" if value is None else type(value).__name__


def preview(text: str, limit: int = 80) -> str:
    """A short quote of offending text for error messages (never the whole 200 kB)."""
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "...")


def check_length(text: str) -> None:
    if len(text) > MAX_OUTPUT_CHARS:
        raise FormatError(f"output is {len(text)} characters long; the limit is {MAX_OUTPUT_CHARS}")


def strip_code_fence(text: str) -> str:
    """The inside of a leading ``` fence (``` or ```json ...```), else the text unchanged."""
    stripped = text.strip()
    if not stripped.startswith("```"):
        return stripped
    match = _FENCE_RE.match(stripped)
    return match.group(1).strip() if match else stripped


class ArgumentValueError(FormatError):
    """Arguments that decoded but are not JSON data a tool can take: nested too deep, NaN or
    infinite, an int past Python's digit limit, non-string keys, bytes, sets, objects, text with
    a lone surrogate (which no UTF-8 store or wire can carry). The reply itself parsed, so
    `ToolEnv` counts the step as an `argument_error`; callers of `parse` still catch it as the
    FormatError it is."""

    kind = ErrorKind.ARGUMENT_ERROR


_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def _check_text(text: str, where: str) -> None:
    # a lone surrogate is no Unicode text: SQLite, HTTP bodies and files cannot encode it
    if text.isascii():  # most text: a C check instead of a regex scan
        return
    found = _SURROGATE_RE.search(text)
    if found is not None:
        raise ArgumentValueError(
            f"{where}: text with a lone surrogate U+{ord(found.group()):04X} is not valid Unicode"
        )


def json_value(value: Any, where: str, depth: int = 0) -> Any:
    """`value` as plain JSON data (dict with str keys, list, str, finite number, bool, null), of
    exactly those types: subclasses (an IntEnum, a str subclass) become their plain value.

    `ast.literal_eval` can produce tuples, sets, bytes or complex numbers and callers may
    hand in arbitrary objects, so everything is checked before it becomes tool arguments.
    Failures are ArgumentValueError."""
    if depth > MAX_ARGUMENT_DEPTH:
        raise ArgumentValueError(f"{where}: nested deeper than {MAX_ARGUMENT_DEPTH} levels")
    kind = type(value)
    # what json.loads makes, by exact type first (the common case); subclasses below
    if kind is str:
        _check_text(value, where)
        return value
    if value is None or kind is bool:
        return value
    if kind is int:
        if not int_fits_json(value):
            raise ArgumentValueError(f"{where}: an integer of {value.bit_length()} bits is not a JSON number")
        return value
    if kind is float:
        if not math.isfinite(value):
            raise ArgumentValueError(f"{where}: {value} is not a JSON number")
        return value
    if kind is dict or isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str:
                if not isinstance(key, str):
                    raise ArgumentValueError(
                        f"{where}: object keys must be strings, got {describe_type(key)}"
                    )
                key = str.__str__(key)
            if not key.isascii():  # most keys: a C check, not a call
                _check_text(key, where)
            item_kind = type(item)
            if item_kind is str:  # the usual values, checked here without a call each
                if not item.isascii():
                    _check_text(item, where)
                out[key] = item
            elif item is None or item_kind is bool or (item_kind is int and int_fits_json(item)):
                out[key] = item
            else:
                out[key] = json_value(item, where, depth + 1)
        return out
    if kind is list or isinstance(value, (list, tuple)):
        return [json_value(item, where, depth + 1) for item in value]
    if isinstance(value, str):
        return json_value(str.__str__(value), where, depth)
    if isinstance(value, int):  # bool is handled above; an IntEnum is its int
        return json_value(int.__int__(value), where, depth)
    if isinstance(value, float):
        return json_value(float.__float__(value), where, depth)
    raise ArgumentValueError(f"{where}: {describe_type(value)} is not a JSON value")


def check_arguments(value: Any, where: str) -> dict[str, Any]:
    """Tool arguments: a JSON object, nothing else."""
    if not isinstance(value, Mapping):
        raise FormatError(f"{where}: arguments must be a JSON object, got {describe_type(value)}")
    result: dict[str, Any] = json_value(value, where)
    return result


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def loads_strict(text: str) -> Any:
    """json.loads without NaN/Infinity; any failure (bad JSON, too deep, too many digits) is ValueError."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise ValueError(str(exc)) from None


def _balanced_end(text: str, start: int) -> int | None:
    """Index just past the bracket that closes text[start], honouring '...' and "..." strings."""
    depth = 0
    quote: str | None = None
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if quote is not None:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


_STRICT_DECODER = json.JSONDecoder(parse_constant=_reject_constant)  # stateless: one for every call


def decode_leading_value(text: str, where: str) -> Any:
    """The JSON value that starts `text` (trailing prose is ignored). Python dict syntax
    (single quotes, True/None) is accepted through ast.literal_eval, which evaluates
    literals only and never runs code."""
    try:
        value, _ = _STRICT_DECODER.raw_decode(text)
        return value
    except (ValueError, RecursionError):
        pass
    end = _balanced_end(text, 0) if text[:1] in ("{", "[") else None
    if end is not None:
        try:
            # literal_eval can also raise MemoryError/RecursionError on hostile input.
            return ast.literal_eval(text[:end])
        except Exception:
            pass
    raise FormatError(f"{where} is not valid JSON: {preview(text)}")


def decode_object(text: str, where: str) -> dict[str, Any]:
    """A JSON object from text such as `{"a": 1}`, `{'a': 1}`, or a fenced ```json block."""
    body = strip_code_fence(text)
    if not body.startswith("{"):
        raise FormatError(f'{where} must be a JSON object like {{"key": "value"}}, got {preview(body)}')
    return check_arguments(decode_leading_value(body, where), where)


def arguments_from(value: Any, where: str) -> dict[str, Any]:
    """Arguments given as an object, as a JSON string of an object, or absent ({}); strict otherwise."""
    if value is None:
        return {}
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:
            decoded = loads_strict(value)
        except ValueError:
            raise FormatError(f"{where} is not valid JSON: {preview(value)}") from None
        return check_arguments(decoded, where)
    return check_arguments(value, where)


def optional_text(value: Any, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise FormatError(f"{where} must be a string, got {describe_type(value)}")


def required_text(args: Mapping[str, Any], keys: Sequence[str], where: str) -> str:
    """The first of `keys` present in `args`, which must be a string."""
    for key in keys:
        if key in args:
            value = args[key]
            if not isinstance(value, str):
                raise FormatError(f"{where}: {key!r} must be a string, got {describe_type(value)}")
            return value
    raise FormatError(f"{where} needs {' or '.join(repr(k) for k in keys)} in its arguments")


def check_combination(actions: Sequence[_A]) -> list[_A]:
    """One turn is: one or more tool calls, or exactly one final answer / question / no-call
    (models or the step path's records: both say which by `type`)."""
    if not actions:
        raise FormatError("no action found")
    if len(actions) > 1 and not all(a.type == "tool_call" for a in actions):
        kinds = ", ".join(a.type for a in actions)
        raise FormatError(
            "one reply may hold several tool calls, or a single final answer, question or no-call; "
            f"got {kinds}"
        )
    return list(actions)


def content_of_message(output: Mapping[str, Any]) -> str:
    """The text of an assistant message's `content` (a string or a list of text parts)."""
    content = output.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        parts: list[str] = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                raise FormatError("message content parts must be objects with a 'text' string")
        return "".join(parts)
    raise FormatError(f"message content must be a string, got {describe_type(content)}")


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


class JSONProtocol(ActionProtocol):
    """T-Eval style: one JSON object (or an array of tool-call objects) per reply."""

    name: ClassVar[str] = "json"
    checks_arguments: ClassVar[bool] = True  # arguments come from check_arguments / arguments_from
    asks_for_thought: ClassVar[bool] = True  # {"thought": "<your reasoning>", "name": ...}

    FINISH_ACTION: ClassVar[str] = "FinishAction"
    ASK_USER_ACTION: ClassVar[str] = "AskUser"
    NO_ACTION: ClassVar[str] = "NoAction"
    _EXPECTED: ClassVar[str] = (
        'expected a JSON object like {"thought": "...", "name": "<tool>", "args": {...}} '
        'or {"name": "FinishAction", "args": {"response": "..."}}'
    )

    # ---- parsing -------------------------------------------------------------------------
    def parse(self, output: RawOutput) -> list[Action]:
        value = self._decode(plain_output(output))
        if isinstance(value, list):
            if not value:
                raise FormatError(f"empty JSON array; {self._EXPECTED}")
            actions = [self._action(item, f"item {i}") for i, item in enumerate(value)]
            if not all(isinstance(a, ToolCall) for a in actions):
                raise FormatError("a JSON array may only hold tool calls; send a final answer on its own")
            return check_combination(actions)
        return [self._action(value, "reply")]

    def _decode(self, output: RawOutput) -> Any:
        if isinstance(output, Mapping):
            if "role" not in output:
                return output  # the action object itself, already decoded
            text = content_of_message(output)
        elif isinstance(output, str):
            text = output
        else:
            raise FormatError(f"expected model output text, got {describe_type(output)}")
        check_length(text)
        body = strip_code_fence(text)
        if not body:
            raise FormatError(f"empty output; {self._EXPECTED}")
        try:
            return loads_strict(body)
        except ValueError:
            pass
        # Tolerate prose around the object: decode from the first "{".
        start = body.find("{")
        if start < 0:
            raise FormatError(f"reply is not a JSON object: {preview(body)}; {self._EXPECTED}")
        return decode_leading_value(body[start:], "reply")

    def _action(self, obj: Any, where: str) -> Action:
        if not isinstance(obj, Mapping):
            raise FormatError(f"{where}: got JSON {describe_type(obj)}; {self._EXPECTED}")
        thought = optional_text(obj.get("thought"), f"{where}: 'thought'")
        if "final_answer" in obj and "name" not in obj:
            return FinalAnswer(text=required_text(obj, ("final_answer",), where), thought=thought)
        if "ask_user" in obj and "name" not in obj:
            return AskUser(text=required_text(obj, ("ask_user",), where), thought=thought)
        name = obj.get("name")
        if not isinstance(name, str) or not name.strip():
            raise FormatError(f"{where}: missing tool 'name' (a non-empty string); {self._EXPECTED}")
        name = name.strip()
        raw_args = next((obj[k] for k in ("args", "arguments", "parameters") if k in obj), None)
        args = arguments_from(raw_args, f"{where}: args of {name!r}")
        reserved = normalize_reserved(name)
        if reserved in FINISH_NAMES:
            return FinalAnswer(text=required_text(args, FINISH_KEYS, name), thought=thought)
        if reserved in ASK_USER_NAMES:
            return AskUser(text=required_text(args, ASK_USER_KEYS, name), thought=thought)
        if reserved in NO_CALL_NAMES:
            return NoCall(thought=thought or "")
        return ToolCall(name=name, arguments=args, thought=thought)

    # ---- rendering -----------------------------------------------------------------------
    def _object(self, action: Action) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        if action.thought is not None:
            obj["thought"] = action.thought
        if isinstance(action, ToolCall):
            obj.update(name=action.name, args=action.arguments)
        elif isinstance(action, FinalAnswer):
            obj.update(name=self.FINISH_ACTION, args={"response": action.text})
        elif isinstance(action, AskUser):
            obj.update(name=self.ASK_USER_ACTION, args={"text": action.text})
        else:
            obj.update(name=self.NO_ACTION, args={})
        return obj

    def format_action(self, action: Action) -> str:
        return dumps(self._object(action))

    def format_actions(self, actions: Sequence[Action]) -> str:
        """Several tool calls as one reply (a JSON array); a single action as `format_action`."""
        if len(actions) == 1:
            return self.format_action(actions[0])
        check_combination(actions)
        return dumps([self._object(a) for a in actions])

    def instructions(self, tools: ToolSet) -> str:
        api_list = json.dumps(tools.to_teval_api_list(), ensure_ascii=False, indent=2)
        return (
            "You can call the following APIs (T-Eval api_list format):\n"
            f"{api_list}\n\n"
            "Reply with exactly one JSON object and nothing else:\n"
            '{"thought": "<your reasoning>", "name": "<API name>", "args": {<argument name>: <value>}}\n'
            "Use the parameter names given above; put every required parameter in args.\n"
            "To call several APIs at once, reply with a JSON array of such objects.\n"
            'When you have the answer: {"thought": "...", "name": "FinishAction", '
            '"args": {"response": "<final answer>"}}\n'
            'If mandatory information is missing, ask the user: {"thought": "...", "name": "AskUser", '
            '"args": {"text": "<question>"}}\n'
            'If no API should be called this turn: {"thought": "...", "name": "NoAction", "args": {}}'
        )
