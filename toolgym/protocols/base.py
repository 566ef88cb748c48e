"""The contract every action protocol implements: parse raw model output into actions, and
render the prompt (format instructions + tool docs), actions and observations in its format."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

from toolgym.actions import Action, Observation
from toolgym.tools import ToolSet

# Raw model output: text, or an OpenAI-style assistant message.
RawOutput = str | Mapping[str, Any]

MAX_OUTPUT_CHARS = 200_000  # longer model output is a format_error, not a parse attempt


class ActionProtocol(ABC):
    name: ClassVar[str]

    @abstractmethod
    def parse(self, output: RawOutput) -> list[Action]:
        """One or more actions (parallel tool calls), or raise toolgym.errors.FormatError."""

    @abstractmethod
    def instructions(self, tools: ToolSet) -> str:
        """The system-prompt text: how to answer in this format, and the docs of `tools`."""

    @abstractmethod
    def format_action(self, action: Action) -> RawOutput:
        """Model output that `parse` turns back into `action` (used by scripted agents and
        to render golden history)."""

    def format_observation(self, obs: Observation) -> str:
        return obs.text
