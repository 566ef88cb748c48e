"""What an agent can do (actions) and what it sees back (observations)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from toolgym.errors import ErrorKind
from toolgym.files import FileHandle


class ToolCall(BaseModel):
    model_config = ConfigDict(frozen=True)

    type: Literal["tool_call"] = "tool_call"
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    call_id: str | None = None
    thought: str | None = None


class FinalAnswer(BaseModel):
    model_config = ConfigDict(frozen=True)

    type: Literal["final_answer"] = "final_answer"
    text: str
    thought: str | None = None


class NoCall(BaseModel):
    """A turn that deliberately calls no tool (MTU-Bench's "no API call" turns)."""

    model_config = ConfigDict(frozen=True)

    type: Literal["no_call"] = "no_call"
    thought: str = ""


class AskUser(BaseModel):
    model_config = ConfigDict(frozen=True)

    type: Literal["ask_user"] = "ask_user"
    text: str
    thought: str | None = None


Action = Annotated[ToolCall | FinalAnswer | NoCall | AskUser, Field(discriminator="type")]
ACTION_ADAPTER: TypeAdapter[Action] = TypeAdapter(Action)


class ErrorInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: ErrorKind
    message: str


# "notification": what an event of a moving world tells the agent (toolgym.mocks.events)
ObservationType = Literal["task", "tool_result", "error", "user", "note", "final", "notification"]


class Observation(BaseModel):
    """One thing the env shows the agent. `content` is the structured tool result (JSON);
    `text` is its plain rendering; `files` are handles of files the tool produced."""

    model_config = ConfigDict(frozen=True)

    type: ObservationType
    text: str
    tool: str | None = None
    call_id: str | None = None
    content: Any = None
    files: tuple[FileHandle, ...] = ()
    error: ErrorInfo | None = None

    @property
    def error_kind(self) -> ErrorKind | None:
        return self.error.kind if self.error else None

    @classmethod
    def from_error(
        cls,
        kind: ErrorKind,
        message: str,
        *,
        tool: str | None = None,
        call_id: str | None = None,
        content: Any = None,
    ) -> Observation:
        return cls(
            type="error",
            text=f"{kind.value}: {message}",
            tool=tool,
            call_id=call_id,
            content=content,
            error=ErrorInfo(kind=kind, message=message),
        )


# ---- lean records: what the step path holds ------------------------------------------------------
# `ToolEnv.step` runs on these plain slotted records, which cost a fraction of a validated model to
# build and to free (an episode keeps one per action and observation until the next reset); the
# models above are built from them when something asks (`EpisodeStep.actions`, `.observations`).
# Their fields hold what the models' fields would hold (values the protocol or the tool set
# already checked), under the same names, so code that reads fields reads either.


@dataclass(slots=True)
class ActionRecord:
    """An action as a protocol's lean parse makes it: `type` says which model it stands for."""

    type: Literal["tool_call", "final_answer", "no_call", "ask_user"]
    name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    call_id: str | None = None
    thought: str | None = None
    text: str = ""

    def action(self) -> Action:
        """The model this record stands for (validated as any model is)."""
        kind = self.type
        if kind == "tool_call":
            return ToolCall(
                name=self.name, arguments=self.arguments, call_id=self.call_id, thought=self.thought
            )
        if kind == "final_answer":
            return FinalAnswer(text=self.text, thought=self.thought)
        if kind == "ask_user":
            return AskUser(text=self.text, thought=self.thought)
        return NoCall(thought=self.thought or "")

    def record(self) -> dict[str, Any]:
        """Its JSON record, as `model_dump(mode="json")` of `action()` gives it (the arguments
        shared, not copied: a protocol made them plain JSON data)."""
        kind = self.type
        if kind == "tool_call":
            return {
                "type": kind,
                "name": self.name,
                "arguments": self.arguments,
                "call_id": self.call_id,
                "thought": self.thought,
            }
        if kind == "no_call":
            return {"type": kind, "thought": self.thought or ""}
        return {"type": kind, "text": self.text, "thought": self.thought}


def as_action(action: Action | ActionRecord) -> Action:
    """The model of an action the step path holds either way."""
    return action.action() if type(action) is ActionRecord else action  # type: ignore[return-value]


class _InText:
    """`ObservationRecord.content` of a record that keeps its content as its text only."""

    def __repr__(self) -> str:
        return "<content in text>"


CONTENT_IN_TEXT: Any = _InText()


@dataclass(slots=True)
class ObservationRecord:
    """An observation as the step path makes it: the fields of `Observation`, unvalidated (the
    tool set built them: `content` is JSON data, `files` handles). A tool result whose text is
    its content's canonical JSON may keep the text alone (`pack`): its content is then read
    back from the text when the model is built."""

    type: ObservationType
    text: str
    tool: str | None = None
    call_id: str | None = None
    content: Any = None
    files: tuple[FileHandle, ...] = ()
    error: ErrorInfo | None = None

    @property
    def error_kind(self) -> ErrorKind | None:
        return self.error.kind if self.error else None

    def observation(self) -> Observation:
        """The model this record stands for (validated as any model is)."""
        content = self.content
        if content is CONTENT_IN_TEXT:
            content = json.loads(self.text)
        return Observation(
            type=self.type,
            text=self.text,
            tool=self.tool,
            call_id=self.call_id,
            content=content,
            files=self.files,
            error=self.error,
        )

    def pack(self, rendered: str | None) -> None:
        """Keep the content as the text alone when `rendered`, the content's canonical JSON, is
        the text: one string instead of the content's objects, which then need no freeing at
        the next reset. `json.loads` of the text gives the content back equal (its objects'
        keys in sorted order), except where escaped surrogates stand in it (two lone ones read
        back as one character): such content is kept."""
        if rendered is not None and rendered == self.text and "\\ud" not in rendered:
            self.content = CONTENT_IN_TEXT

    @classmethod
    def from_error(
        cls,
        kind: ErrorKind,
        message: str,
        *,
        tool: str | None = None,
        call_id: str | None = None,
        content: Any = None,
    ) -> ObservationRecord:
        """What `Observation.from_error` makes, as a record."""
        return cls(
            "error",
            f"{kind.value}: {message}",
            tool,
            call_id,
            content,
            (),
            ErrorInfo(kind=kind, message=message),
        )


def as_observation(obs: Observation | ObservationRecord) -> Observation:
    """The model of an observation the step path holds either way."""
    return obs.observation() if type(obs) is ObservationRecord else obs  # type: ignore[return-value]
