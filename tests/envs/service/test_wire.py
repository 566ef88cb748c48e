"""The wire types give what openenv-core 0.3's give (the JSON schemas `/schema` serves, the errors
a malformed WebSocket message gets, the frames), and `/mcp` refuses as OpenEnv does for an
environment without MCP tools, over HTTP and the WebSocket, without taking a session."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from pydantic import BaseModel, ValidationError
from websockets.sync.client import connect

from toolgym.envs.service.wire import (
    MESSAGES,
    WireAction,
    WireObservation,
    WireState,
    error_frame,
    frame,
    invalid_message,
    mcp_refusal,
)

from .support import Served

MALFORMED: list[dict[str, Any]] = [
    {"type": "step"},
    {"type": "step", "data": "x"},
    {"type": "reset", "data": [1]},
    {"type": "state", "x": 1},
    {"type": "close", "data": {}},
]


def test_the_types_are_openenv_cores() -> None:
    """openenv-core 0.3's own types (its client's package, the dev extra) as the reference."""
    types = pytest.importorskip("openenv.core.env_server.types", reason="openenv-core (the dev extra)")
    pairs: list[tuple[type[BaseModel], type[BaseModel]]] = [
        (WireAction, types.Action),
        (WireObservation, types.Observation),
        (WireState, types.State),
    ]
    for ours, theirs in pairs:
        schema, reference = ours.model_json_schema(), theirs.model_json_schema()
        assert {**schema, "title": "", "description": ""} == {**reference, "title": "", "description": ""}
    theirs_by_type = {
        "reset": types.WSResetMessage,
        "step": types.WSStepMessage,
        "state": types.WSStateMessage,
        "close": types.WSCloseMessage,
    }
    for message in MALFORMED:
        with pytest.raises(ValidationError) as mine:
            MESSAGES[message["type"]].model_validate(message)
        with pytest.raises(ValidationError) as theirs_error:
            theirs_by_type[message["type"]](**message)
        assert (
            invalid_message(mine.value)
            == types.WSErrorResponse(
                data={
                    "message": "Invalid message",
                    "code": types.WSErrorCode.VALIDATION_ERROR,
                    "errors": theirs_error.value.errors(include_url=False, include_context=False),
                }
            ).model_dump_json()
        )
    state = {"episode_id": "e", "step_count": 2, "trace": "ép.jsonl"}
    assert frame("state", state) == types.WSStateResponse(data=state).model_dump_json()
    assert error_frame("x", "UNKNOWN_TYPE") == (
        types.WSErrorResponse(data={"message": "x", "code": types.WSErrorCode.UNKNOWN_TYPE}).model_dump_json()
    )


def test_mcp_refusals() -> None:
    def error(raw: str | bytes) -> tuple[Any, int, str]:
        answer = mcp_refusal(raw)
        return answer["id"], answer["error"]["code"], answer["error"]["message"]

    for method in ("tools/list", "tools/call", "openenv/session/create", "openenv/session/close"):
        request = {"jsonrpc": "2.0", "id": 7, "method": method, "params": {"session_id": "s"}}
        assert error(json.dumps(request)) == (7, -32603, "Environment does not support MCP")
    assert error('{"jsonrpc": "2.0", "id": "a", "method": "ping"}') == ("a", -32601, "Method not found: ping")
    for raw in ("{x", "[1]", b"\xff", "[" * 100 + "]" * 100):
        assert error(raw) == (None, -32700, "Parse error")
    _, code, message = error('{"jsonrpc": "1.0", "method": "tools/list"}')
    assert code == -32600 and message.startswith("Invalid request: 1 validation error for JsonRpcRequest")


def test_mcp_routes_answer_without_a_session(served: Served) -> None:
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    refusal = {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": -32603, "message": "Environment does not support MCP", "data": None},
    }
    assert httpx.post(f"{served.url}/mcp", json=request, timeout=30).json() == refusal
    with connect(served.url.replace("http://", "ws://") + "/mcp") as ws:
        ws.send(json.dumps(request))
        assert json.loads(ws.recv(timeout=30)) == refusal
        assert httpx.get(f"{served.url}/sessions", timeout=30).json()["sessions"] == []
