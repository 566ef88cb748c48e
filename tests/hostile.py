"""Hostile input shared by the fuzz and bad-input tests: reply fragments that models (and
attackers) produce, and arguments nested deeper than any parser's recursion limit."""

from __future__ import annotations

from typing import Any

# pieces of ReAct, JSON and OpenAI replies, broken JSON and unpaired surrogates; strategies join them
REPLY_FRAGMENTS: list[str] = [
    "Thought: ",
    "Action: ",
    "Action Input: ",
    "Final Answer: ",
    "Ask User: ",
    "Observation: ",
    "Action: none",
    "Action: ask_user",
    "Action: FinishAction",
    "```json\n",
    "```",
    "{",
    "}",
    "[",
    "]",
    '"',
    "'",
    "\n",
    ":",
    ",",
    '{"name": ',
    '"args": ',
    '{"role": "assistant", "tool_calls": [',
    '{"function": {"name": ',
    '"arguments": ',
    "get_weather",
    '{"city": "Paris"}',
    "{'a': (1, 2)}",
    "NaN",
    "1e999",
    "\ud800",
    "\udfff",
    '"\\ud800"',
]


def nested_dict(levels: int) -> dict[str, Any]:
    """{"a": {"a": ... {}}}, `levels` deep (built iteratively: the builder must not recurse)."""
    root: dict[str, Any] = {}
    node = root
    for _ in range(levels):
        node["a"] = {}
        node = node["a"]
    return root


def nested_sequence(levels: int, kind: type[list[Any]] | type[tuple[Any, ...]] = list) -> Any:
    """[[...[]...]] (or tuples), `levels` deep (built iteratively, from the inside out)."""
    node: Any = kind()
    for _ in range(levels):
        node = kind([node])
    return node
