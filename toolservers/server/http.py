"""The tool server's side of the shared HTTP toolkit (`toolgym.http`): its error envelope, which
`toolgym.http.secure` renders the toolkit's refusals in. The JSON helpers stay importable from here."""

from __future__ import annotations

from typing import Any

from toolgym.errors import ErrorKind
from toolgym.http import HttpProblem, json_bytes, json_response, parse_json, read_body

__all__ = [
    "error_body",
    "json_bytes",
    "json_response",
    "parse_json",
    "read_body",
    "render_error",
]

# the kind a client sees for each request the toolkit refuses
_PROBLEM_KINDS: dict[HttpProblem, ErrorKind] = {
    HttpProblem.UNAUTHORIZED: ErrorKind.INFRA_ERROR,
    HttpProblem.TOO_LARGE: ErrorKind.ARGUMENT_ERROR,
    HttpProblem.SLOW_BODY: ErrorKind.TIMEOUT,
    HttpProblem.MALFORMED: ErrorKind.ARGUMENT_ERROR,
    HttpProblem.FOREIGN_HOST: ErrorKind.INFRA_ERROR,
    HttpProblem.CROSS_ORIGIN: ErrorKind.INFRA_ERROR,
    HttpProblem.NOT_JSON: ErrorKind.ARGUMENT_ERROR,
}


def error_body(kind: str, message: str, **extra: Any) -> dict[str, Any]:
    """The native API's error envelope."""
    return {"ok": False, "error": {"kind": kind, "message": message}, **extra}


def render_error(problem: HttpProblem, message: str) -> dict[str, Any]:
    # `detail` too, which AgentLego's client reads; FastAPI's word for a 401
    detail = "Unauthorized" if problem is HttpProblem.UNAUTHORIZED else message
    return {**error_body(_PROBLEM_KINDS[problem].value, message), "detail": detail}
