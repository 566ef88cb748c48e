"""Action protocols: how raw model output becomes actions, and how prompts, actions and
observations are rendered. `get_protocol("react" | "json" | "openai" | "responses")` returns one;
installed packages add theirs through the `toolgym.protocols` entry points (toolgym.plugins)."""

from __future__ import annotations

from typing import Any

from toolgym.plugins import Plugin, PluginError, Registry
from toolgym.protocols.base import MAX_OUTPUT_CHARS, ActionProtocol, RawOutput, plain_output
from toolgym.protocols.json_protocol import JSONProtocol
from toolgym.protocols.openai import OpenAIProtocol
from toolgym.protocols.react import ReActProtocol
from toolgym.protocols.responses import ResponsesProtocol


def _protocol_of(plugin: Plugin, loaded: Any) -> list[tuple[str, type[ActionProtocol]]]:
    if not (isinstance(loaded, type) and issubclass(loaded, ActionProtocol)):
        raise PluginError(f"loads {loaded!r}, not an ActionProtocol class")
    return [(loaded.name, loaded)]


# name -> protocol class: toolgym's four and the installed packages' (entry points, read when first used)
PROTOCOLS: Registry[type[ActionProtocol]] = Registry("protocols", _protocol_of)


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
