"""OpenEnv's wire protocol, as the env service speaks it: the body types, the WebSocket messages
and frames, the error codes, the metadata and health answers.

The service serves what openenv-core 0.3's `HTTPEnvServer` serves, field for field, so OpenEnv's
clients (`GenericEnvClient` of openenv-core 0.3 and of openenv 0.10) drive it unchanged, but it
imports no openenv: the `openenv` and `openenv-core` distributions both install the package
`openenv/`, and their releases pin different MCP SDK majors, so a server that imported either
would break beside the other. The types below are toolgym's own, written to give the same JSON
(the same fields, defaults, constraints and JSON schemas) as OpenEnv's.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolgym.http import BodyError, parse_json

# ---- the bodies' base types: each session type extends one (environment.py) -----------------


class WireAction(BaseModel):
    """A step's action: OpenEnv's Action (unknown fields refused; a `metadata` object)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    metadata: dict[str, Any] = Field(default_factory=dict, description="Additional metadata for the action")


class WireObservation(BaseModel):
    """What a reset or step observes: OpenEnv's Observation (`done`, `reward`, `metadata`)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    done: bool = Field(default=False, description="Whether the episode has terminated")
    reward: bool | int | float | None = Field(default=None, description="Reward signal from the last action")
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="Additional metadata for the observation"
    )


class WireState(BaseModel):
    """A session's state: OpenEnv's State (more fields allowed; the episode id, its steps)."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    episode_id: str | None = Field(default=None, description="Unique identifier for the current episode")
    step_count: int = Field(default=0, ge=0, description="Number of steps taken in the current episode")


class EnvironmentMetadata(BaseModel):
    """`GET /metadata`: what the environment is."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    readme_content: str | None = None
    version: str | None = None
    author: str | None = None
    documentation_url: str | None = None


HEALTHY = {"status": "healthy"}  # `GET /health`

# ---- the WebSocket (`/ws`): a session per connection ----------------------------------------
# a client message is {"type": "reset" | "step" | "state" | "close", "data": {...}}; the server
# answers each with one frame, {"type": "observation" | "state" | "error", "data": {...}}


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ResetMessage(_Message):
    type: Literal["reset"] = "reset"
    data: dict[str, Any] = Field(default_factory=dict)


class StepMessage(_Message):
    type: Literal["step"] = "step"
    data: dict[str, Any]


class StateMessage(_Message):
    type: Literal["state"] = "state"


class CloseMessage(_Message):
    type: Literal["close"] = "close"


MESSAGES: dict[str, type[_Message]] = {
    "reset": ResetMessage,
    "step": StepMessage,
    "state": StateMessage,
    "close": CloseMessage,
}

# an error frame's `code`
INVALID_JSON = "INVALID_JSON"  # a frame that is no JSON (toolgym: nor strict JSON, see toolgym.http)
UNKNOWN_TYPE = "UNKNOWN_TYPE"  # no object, or a `type` the protocol has not (`mcp` included)
VALIDATION_ERROR = "VALIDATION_ERROR"  # a message of the wrong shape; `errors` says how
EXECUTION_ERROR = "EXECUTION_ERROR"  # the session refused the call (toolgym: the message starts [kind])
CAPACITY_REACHED = "CAPACITY_REACHED"  # the server is full: sent once, then the connection closes
SESSION_ERROR = "SESSION_ERROR"  # the connection failed outside a message


class _Frame(BaseModel):
    type: str
    data: dict[str, Any]


def frame(kind: Literal["observation", "state", "error"], data: dict[str, Any]) -> str:
    """A server frame, encoded as OpenEnv's server encodes its (pydantic's JSON)."""
    return _Frame(type=kind, data=data).model_dump_json()


def error_frame(message: str, code: str, **extra: Any) -> str:
    return frame("error", {"message": message, "code": code, **extra})


def invalid_message(exc: ValidationError) -> str:
    """The frame for a message of the wrong shape (pydantic's errors, without their context: a
    validator's exception object is no JSON)."""
    errors = exc.errors(include_url=False, include_context=False)
    return error_frame("Invalid message", VALIDATION_ERROR, errors=errors)


def capacity_message(active: int, most: int) -> str:
    """What a full server says, over HTTP (503 `capacity`) and the WebSocket (CAPACITY_REACHED)."""
    return f"Server at capacity: {active}/{most} sessions active. Cannot accept new connections."


# ---- /mcp: OpenEnv's JSON-RPC face of MCP environments; a toolgym session is none ----------------
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INTERNAL_ERROR = -32700, -32600, -32601, -32603
NOT_MCP = "Environment does not support MCP"
# what OpenEnv's /mcp knows: the MCP calls and its own session methods, none of which a toolgym
# session serves (an MCP session over /mcp would be a session no client owns)
_MCP_METHODS = frozenset({"tools/list", "tools/call", "openenv/session/create", "openenv/session/close"})


class JsonRpcRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    jsonrpc: Literal["2.0"]
    method: str
    params: dict[str, Any] = Field(default_factory=dict)
    id: str | int | None = None


def mcp_refusal(raw: bytes | str) -> dict[str, Any]:
    """The JSON-RPC answer of `/mcp` (a POST body, or one WebSocket message) to `raw`: an error,
    as OpenEnv answers for an environment without MCP tools."""
    try:
        message = parse_json(raw)
    except BodyError:
        message = None
    if not isinstance(message, dict):
        return _rpc_error(PARSE_ERROR, "Parse error", None)
    try:
        request = JsonRpcRequest.model_validate(message)
    except ValidationError as exc:
        return _rpc_error(INVALID_REQUEST, f"Invalid request: {exc}", None)
    if request.method in _MCP_METHODS:
        return _rpc_error(INTERNAL_ERROR, NOT_MCP, request.id)
    return _rpc_error(METHOD_NOT_FOUND, f"Method not found: {request.method}", request.id)


def _rpc_error(code: int, message: str, request_id: str | int | None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message, "data": None}}
