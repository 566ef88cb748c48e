"""Action protocols: how raw model output becomes actions, and how prompts, actions and
observations are rendered. `get_protocol("react" | "json" | "openai")` returns one."""

from __future__ import annotations

from toolgym.protocols.base import MAX_OUTPUT_CHARS, ActionProtocol, RawOutput
from toolgym.protocols.json_protocol import JSONProtocol
from toolgym.protocols.openai import OpenAIProtocol
from toolgym.protocols.react import ReActProtocol

PROTOCOLS: dict[str, type[ActionProtocol]] = {
    cls.name: cls for cls in (ReActProtocol, JSONProtocol, OpenAIProtocol)
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
    "get_protocol",
]
