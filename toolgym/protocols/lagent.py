"""lagent's ReAct parse (lagent 0.2.x, `ReActProtocol.parse` and `JsonParser.parse_inputs`), as
GTA's pipeline runs it, for scorers that must score a reply the way lagent read it.

lagent reads one action per reply, by plain substring rules (case-sensitive, no line anchors):

- if "Final Answer:" occurs anywhere, the reply is a finish: the answer is everything after its
  last occurrence, unstripped, even when an `Action:` comes before it;
- otherwise the tool is the text of the *last* "Action:" that a newline ends, and its input is
  everything after the *first* "Action Input:" to the end of the reply (stripped, then with
  double quotes stripped from both ends); so two Action blocks give the last tool name with an
  input holding both blocks;
- no such "Action:" line, or no "Action Input:", is lagent's `NoAction`.

This is not a registered ActionProtocol: lagent has no ask-user or no-call action, so it cannot
render every toolgym action. ToolEnv keeps its own protocols; the GTA scorer re-parses replies
with this module (toolgym.evaluation.metrics.gta).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

# lagent's built-in action names: what ActionExecutor falls back to
FINISH_ACTION = "FinishAction"
NO_ACTION = "NoAction"
INVALID_ACTION = "InvalidAction"

THOUGHT_MARK = "Thought:"
ACTION_MARK = "Action:"
INPUT_MARK = "Action Input:"
FINISH_MARK = "Final Answer:"

# "Action:" up to the end of its line; a line that the reply's end cuts off does not count
_ACTION_LINE = re.compile(re.escape(ACTION_MARK) + r"([^\n]*)\n")
# JsonParser drops a ```json fence that closes the input
_FENCED = re.compile(r"\A\s*(?:```json\n)?(.*)\n```\s*\Z", re.DOTALL)


@dataclass(frozen=True)
class LagentParse:
    """What lagent's parse returns: the thought, the action name (a tool name, FINISH_ACTION or
    NO_ACTION) and the action's input text (the answer for a finish)."""

    thought: str
    action: str
    action_input: str


def lagent_parse(text: str) -> LagentParse:
    """The reply as lagent's ReActProtocol.parse reads it (see the module docstring)."""
    thought = text.split(ACTION_MARK)[0].split(THOUGHT_MARK)[-1].split(FINISH_MARK)[0]
    if FINISH_MARK in text:
        return LagentParse(thought, FINISH_ACTION, text.rpartition(FINISH_MARK)[2])
    names = _ACTION_LINE.findall(text)
    _, found, command = text.partition(INPUT_MARK)
    if not names or not found:
        return LagentParse(thought, NO_ACTION, "")
    return LagentParse(thought, names[-1].strip(), command.strip().strip('"'))


def lagent_json_input(command: str) -> Any:
    """The action input decoded as lagent's JsonParser decodes it; ValueError when it is not
    JSON. The value may be any JSON value: the caller decides what a non-object means."""
    fenced = _FENCED.search(command)
    if fenced:
        command = fenced.group(1).strip()
    return json.loads(command)


def lagent_render(name: str, arguments: Any, thought: str | None = None) -> str:
    """A tool call as lagent text (GTA renders golden calls the same way: json.dumps arguments)."""
    head = f"{THOUGHT_MARK} {thought}\n" if thought else ""
    return f"{head}{ACTION_MARK} {name}\n{INPUT_MARK} {json.dumps(arguments)}\n"


__all__ = [
    "FINISH_ACTION",
    "INVALID_ACTION",
    "NO_ACTION",
    "LagentParse",
    "lagent_json_input",
    "lagent_parse",
    "lagent_render",
]
