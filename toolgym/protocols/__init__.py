"""Action protocols: how raw model output becomes actions, and how prompts, actions and
observations are rendered. `get_protocol("react" | "json" | "openai" | "responses")` returns one."""

from __future__ import annotations

from toolgym.protocols.base import MAX_OUTPUT_CHARS, ActionProtocol, RawOutput, plain_output
from toolgym.protocols.json_protocol import JSONProtocol
from toolgym.protocols.openai import OpenAIProtocol
from toolgym.protocols.react import ReActProtocol
from toolgym.protocols.responses import ResponsesProtocol

PROTOCOLS: dict[str, type[ActionProtocol]] = {
    cls.name: cls for cls in (ReActProtocol, JSONProtocol, OpenAIProtocol, ResponsesProtocol)
}


def get_protocol(name: str) -> ActionProtocol:
    """A fresh protocol instance by name; ValueError lists the known names."""
    try:
        return PROTOCOLS[name]()
    except (KeyError, TypeError):  # TypeError: an unhashable name
        raise ValueError(f"unknown protocol {name!r}; known: {', '.join(sorted(PROTOCOLS))}") from None


__all__ = [
    "MAX_OUTPUT_CHARS",
    "PROTOCOLS",
    "ActionProtocol",
    "JSONProtocol",
    "OpenAIProtocol",
    "RawOutput",
    "ReActProtocol",
    "ResponsesProtocol",
    "get_protocol",
    "plain_output",
]
