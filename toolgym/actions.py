"""What an agent can do (actions) and what it sees back (observations)."""

from __future__ import annotations

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


ObservationType = Literal["task", "tool_result", "error", "user", "note", "final"]


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
