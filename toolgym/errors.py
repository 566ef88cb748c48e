"""Typed error kinds: every failure an agent can meet comes back as one of these, never as an exception."""

from __future__ import annotations

import re
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


# The one table between kinds, exception classes and HTTP statuses: servers answer with
# `HTTP_STATUS[kind]`, clients raise `ERROR_CLASSES[kind]` for a typed error they are sent.
ERROR_CLASSES: dict[ErrorKind, type[ToolgymError]] = {
    ErrorKind.FORMAT_ERROR: FormatError,
    ErrorKind.UNKNOWN_TOOL: UnknownToolError,
    ErrorKind.ARGUMENT_ERROR: ArgumentError,
    ErrorKind.TOOL_ERROR: ToolError,
    ErrorKind.TIMEOUT: ToolTimeout,
    ErrorKind.INFRA_ERROR: InfraError,
}

HTTP_STATUS: dict[ErrorKind, int] = {
    ErrorKind.FORMAT_ERROR: 400,
    ErrorKind.TOOL_ERROR: 400,
    ErrorKind.UNKNOWN_TOOL: 404,
    ErrorKind.TIMEOUT: 408,
    ErrorKind.ARGUMENT_ERROR: 422,
    ErrorKind.INFRA_ERROR: 503,
}

# a bare HTTP failure (no typed body) read as a kind: refusals of the request itself (auth,
# proxy auth, rate limits) are infra; any other 4xx without a body is the tool's own failure
_KIND_BY_BARE_STATUS: dict[int, ErrorKind] = {
    401: ErrorKind.INFRA_ERROR,
    403: ErrorKind.INFRA_ERROR,
    407: ErrorKind.INFRA_ERROR,
    408: ErrorKind.TIMEOUT,
    422: ErrorKind.ARGUMENT_ERROR,
    429: ErrorKind.INFRA_ERROR,
    504: ErrorKind.TIMEOUT,
}


def kind_for_status(status: int) -> ErrorKind:
    """The kind of an HTTP failure that came without a typed error body."""
    if status in _KIND_BY_BARE_STATUS:
        return _KIND_BY_BARE_STATUS[status]
    return ErrorKind.INFRA_ERROR if status >= 500 else ErrorKind.TOOL_ERROR


def error_for_kind(
    kind: ErrorKind | str, message: str, *, data: Any = None, default: type[ToolgymError] = ToolError
) -> ToolgymError:
    """The exception for a kind sent over the wire; a kind this version does not know gets `default`."""
    try:
        cls = ERROR_CLASSES[ErrorKind(kind)]
    except ValueError:
        cls = default
    return cls(message, data=data)


# an absolute path of two or more segments, not inside a word or a URL ("km/h", "http://h/a/b")
_ABSOLUTE_PATH = re.compile(r"(?<![\w:/.~-])(?:/[\w.@+~-]+){2,}/?")


def redact_paths(text: str) -> str:
    """`text` without the absolute paths in it: what a server tells a client must never name its
    own directories (the file store, temporary files, tracebacks' source files)."""
    return _ABSOLUTE_PATH.sub("<server path>", text)
