"""The ReAct text protocol, as ToolEyes, MTU-Bench and GTA (lagent) prompt it.

A reply is labelled lines; each label starts a line (case-insensitive, markdown bold allowed):

    Thought: <reasoning>                  optional before any action
    Action: <tool name>                   a tool call ...
    Action Input: <JSON object>           ... and its arguments ({} or empty for none)
    Action: <tool name>                   more pairs = several calls in one turn (MTU multi-tool)
    Action Input: <JSON object>

    Final Answer: <answer>                the final answer ("FinalAnswer:", "final_answer:" too)
    Ask User: <question>                  ask the user for missing information
    Thought: <reasoning>                  alone, with no Action: no call this turn (MTU)

Also understood: `Action: none` / `Action: No API call` (no call), `Action: ask_user` with
{"text": ...} (a question), `Action: FinishAction` with {"response": ...} (lagent/T-Eval finish).
Everything from the first `Observation:` line on is dropped: models often hallucinate the tool
result. A reply holds either tool calls, or one final answer, or one question, or no call.
Prose with no label at all is a FormatError (`prose_as_no_call=True`: a no call, as MTU scores it).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from toolgym.actions import (
    Action,
    ActionRecord,
    AskUser,
    FinalAnswer,
    Observation,
    ToolCall,
    as_action,
)
from toolgym.errors import FormatError
from toolgym.protocols.base import ActionProtocol, RawOutput, plain_output
from toolgym.protocols.json_protocol import (
    ASK_USER_KEYS,
    ASK_USER_NAMES,
    FINISH_KEYS,
    FINISH_NAMES,
    NO_CALL_NAMES,
    check_combination,
    check_length,
    content_of_message,
    decode_object,
    describe_type,
    dumps,
    normalize_reserved,
    preview,
    required_text,
)
from toolgym.tools import ToolSet

_LABEL_RE = re.compile(
    r"^[ \t>#-]*"  # markdown decoration: "> Thought:", "- Action:", "### Action:"
    r"(?P<bold>\*\*)?[ \t]*"  # "**Action:**" or "**Action**:"
    r"(?P<label>thought|action[ \t_]*input|action|final[ \t_-]*answer|ask[ \t_-]*user|observation)"
    r"(?:[ \t]*\d+)?"  # "Thought 1:" as in the ReAct paper
    r"[ \t]*(?(bold)(?:\*\*[ \t]*:|:\*\*)|:)[ \t]*",
    re.IGNORECASE | re.MULTILINE,
)
_OPENING_FENCE_RE = re.compile(r"\A\s*```[^\n]*\n")
# Tool names are identifier-like; prose after "Action:" is a format error, not a call.
_TOOL_NAME_RE = re.compile(r"[\w.\-:/@]+")

EXPECTED = (
    "expected 'Thought: <reasoning>' followed by 'Action: <tool name>' and 'Action Input: <JSON object>', "
    "or 'Final Answer: <answer>', or 'Ask User: <question>', or a 'Thought:' alone for no call"
)


@functools.lru_cache(maxsize=256)  # a model writes the same few labels again and again
def _kind(label: str) -> str:
    key = re.sub(r"[\s_\-]+", "", label).lower()
    return {"actioninput": "action_input", "finalanswer": "final", "askuser": "ask"}.get(key, key)


def _clean_name(body: str) -> str:
    """The tool name: first non-empty line, without quotes, backticks, brackets or a final period."""
    line = next((ln for ln in body.splitlines() if ln.strip()), "")
    name = line.strip().strip("\"'`*[] \t").rstrip(".,;:").strip("\"'`*[] \t")
    return name.removesuffix("()")


@dataclass
class _Thoughts:
    """Thought text seen since the last action; it becomes that action's `thought`."""

    parts: list[str] = field(default_factory=list)
    present: bool = False

    def add(self, text: str) -> None:
        self.parts.append(text.strip())
        self.present = True

    def take(self) -> str | None:
        text = "\n".join(p for p in self.parts if p) if self.present else None
        self.parts, self.present = [], False
        return text


class ReActProtocol(ActionProtocol):
    name: ClassVar[str] = "react"
    checks_arguments: ClassVar[bool] = True  # arguments come from check_arguments / arguments_from
    asks_for_thought: ClassVar[bool] = True  # "Thought: your reasoning" before every reply

    def __init__(self, *, prose_as_no_call: bool = False) -> None:
        # MTU-Bench's scorer counts a reply with no labels at all ("Sure, which room?") as a
        # no-call turn; by default such prose is a format error, as lagent treats it.
        self.prose_as_no_call = prose_as_no_call

    # ---- parsing -------------------------------------------------------------------------
    def parse(self, output: RawOutput) -> list[Action]:
        return [as_action(a) for a in self._parse_records(output)]

    def parse_records(self, output: RawOutput) -> list[Action | ActionRecord]:
        """`parse` as lean records; a subclass that overrides `parse` is parsed by its own."""
        if type(self).parse is not ReActProtocol.parse:
            return list(self.parse(output))
        return self._parse_records(output)  # type: ignore[return-value]  # a new list, of records

    def _parse_records(self, output: RawOutput) -> list[ActionRecord]:
        text = self._text(plain_output(output))
        if not text.strip():
            raise FormatError(f"empty output; {EXPECTED}")
        preamble_end, sections = self._sections(text)
        thoughts = _Thoughts()
        preamble = text[:preamble_end]  # prose before the first label counts as thought
        if preamble.strip():
            thoughts.add(preamble)
        saw_thought_label = False
        actions: list[ActionRecord] = []
        no_call_thoughts: list[str] = []
        i = 0
        while i < len(sections):
            kind, body = sections[i]
            i += 1
            if kind == "thought":
                thoughts.add(body)
                saw_thought_label = True
            elif kind == "final":
                actions.append(ActionRecord("final_answer", text=body.strip(), thought=thoughts.take()))
            elif kind == "ask":
                actions.append(ActionRecord("ask_user", text=body.strip(), thought=thoughts.take()))
            elif kind == "action_input":
                raise FormatError(f"'Action Input:' without an 'Action:' line before it; {EXPECTED}")
            else:  # "action"
                input_body: str | None = None
                if i < len(sections) and sections[i][0] == "action_input":
                    input_body = sections[i][1]
                    i += 1
                action = self._action(body, input_body, thoughts.take())
                if action.type == "no_call":
                    no_call_thoughts.append(action.thought or "")
                else:
                    actions.append(action)
        if actions:
            # "Action: none" next to real actions adds nothing; the real ones count.
            return check_combination(actions)
        if no_call_thoughts:
            return [ActionRecord("no_call", thought=no_call_thoughts[0])]
        if saw_thought_label:
            return [ActionRecord("no_call", thought=thoughts.take() or "")]
        if self.prose_as_no_call:
            return [ActionRecord("no_call", thought=text.strip())]
        raise FormatError(f"no Thought/Action/Final Answer found in {preview(text)}; {EXPECTED}")

    @staticmethod
    def _text(output: RawOutput) -> str:
        if isinstance(output, str):
            text = output
        elif isinstance(output, Mapping):
            text = content_of_message(output)  # an assistant message carrying ReAct text
        else:
            raise FormatError(f"expected model output text, got {describe_type(output)}")
        check_length(text)
        # A reply wrapped whole in a ``` fence: drop the opening fence line so it is not a thought.
        return _OPENING_FENCE_RE.sub("", text, count=1)

    @staticmethod
    def _sections(text: str) -> tuple[int, list[tuple[str, str]]]:
        """Where the first label starts, and (kind, body) per label up to the first Observation."""
        matches = list(_LABEL_RE.finditer(text))
        sections: list[tuple[str, str]] = []
        for n, match in enumerate(matches):
            kind = _kind(match.group("label"))
            if kind == "observation":
                break
            end = matches[n + 1].start() if n + 1 < len(matches) else len(text)
            sections.append((kind, text[match.end() : end]))
        return (matches[0].start() if matches else len(text)), sections

    def _action(self, body: str, input_body: str | None, thought: str | None) -> ActionRecord:
        name = _clean_name(body)
        reserved = normalize_reserved(name)
        if reserved in NO_CALL_NAMES:
            return ActionRecord("no_call", thought=thought or "")
        if not name:
            raise FormatError(f"'Action:' has no tool name; {EXPECTED}")
        if not _TOOL_NAME_RE.fullmatch(name):
            raise FormatError(f"'Action:' must name one tool, got {preview(name)}; {EXPECTED}")
        if input_body is None:
            raise FormatError(
                f"Action {name!r} has no 'Action Input:' line; write 'Action Input: {{...}}' right after it "
                "(use {} when the tool takes no arguments)"
            )
        where = f"Action Input of {name!r}"
        args = decode_object(input_body, where) if input_body.strip() else {}
        if reserved in ASK_USER_NAMES:
            return ActionRecord("ask_user", text=required_text(args, ASK_USER_KEYS, where), thought=thought)
        if reserved in FINISH_NAMES:
            return ActionRecord("final_answer", text=required_text(args, FINISH_KEYS, where), thought=thought)
        return ActionRecord("tool_call", name, args, thought=thought)

    # ---- rendering -----------------------------------------------------------------------
    @staticmethod
    def _render(action: Action) -> str:
        lines = [] if action.thought is None else [f"Thought: {action.thought}"]
        if isinstance(action, ToolCall):
            lines += [f"Action: {action.name}", f"Action Input: {dumps(action.arguments)}"]
        elif isinstance(action, FinalAnswer):
            lines.append(f"Final Answer: {action.text}")
        elif isinstance(action, AskUser):
            lines.append(f"Ask User: {action.text}")
        # NoCall is its Thought line alone, as MTU-Bench writes no-call turns.
        return "\n".join(lines)

    def format_action(self, action: Action) -> str:
        return self._render(action)

    def format_actions(self, actions: Sequence[Action]) -> str:
        """Several tool calls as one reply (Action/Action Input pairs in order)."""
        return "\n".join(self._render(a) for a in check_combination(actions))

    def format_observation(self, obs: Observation) -> str:
        return f"Observation: {obs.text}"

    def instructions(self, tools: ToolSet) -> str:
        docs = "\n".join(
            dumps({"name": t.name, "description": t.description, "parameters": t.parameters_schema()})
            for t in tools
        )
        names = ", ".join(tools.names)
        return (
            "Answer the user's request. You can call the tools listed below.\n"
            "Reply in this format:\n"
            "Thought: your reasoning about what to do next\n"
            f"Action: the tool to call, exactly one of [{names}]\n"
            'Action Input: the arguments as one JSON object, e.g. {"param": "value"} ({} if none)\n'
            "You then receive the result as 'Observation: ...'. Never write the Observation yourself.\n"
            "To call several tools in one turn, write several Action / Action Input pairs; "
            "they run in the order written.\n"
            "When you know the answer, reply:\n"
            "Thought: your reasoning\n"
            "Final Answer: the answer\n"
            "If mandatory information is missing, ask the user instead of guessing:\n"
            "Thought: your reasoning\n"
            "Ask User: your question\n"
            "If no tool should be called this turn, write only:\n"
            "Thought: your reasoning\n\n"
            "Tools (name, description and JSON schema of the parameters):\n"
            f"{docs}"
        )
