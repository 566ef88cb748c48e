"""Typed error kinds: every failure an agent can meet comes back as one of these, never as an exception."""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorKind(StrEnum):
    FORMAT_ERROR = "format_error"  # the agent's output could not be parsed
    UNKNOWN_TOOL = "unknown_tool"  # the named tool is not offered in this task
    ARGUMENT_ERROR = "argument_error"  # missing, extra or ill-typed arguments
    TOOL_ERROR = "tool_error"  # the tool ran and failed
    TIMEOUT = "timeout"  # the tool ran past its time limit
    INFRA_ERROR = "infra_error"  # server down, container died: not the agent's fault


class ToolgymError(Exception):
    """Base of the errors that map onto an ErrorKind."""

    kind: ErrorKind = ErrorKind.TOOL_ERROR

    def __init__(self, message: str, *, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        # structured payload the agent also sees, e.g. a mock API's {"status": 404, ...}
        self.data = data


class FormatError(ToolgymError):
    kind = ErrorKind.FORMAT_ERROR


class UnknownToolError(ToolgymError):
    kind = ErrorKind.UNKNOWN_TOOL


class ArgumentError(ToolgymError):
    kind = ErrorKind.ARGUMENT_ERROR


class ToolError(ToolgymError):
    """Raise from a tool to report a failure the agent caused or can react to."""

    kind = ErrorKind.TOOL_ERROR


class ToolTimeout(ToolgymError):
    kind = ErrorKind.TIMEOUT


class InfraError(ToolgymError):
    kind = ErrorKind.INFRA_ERROR
