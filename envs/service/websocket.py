"""The env service's WebSockets: `/ws`, OpenEnv's session protocol (a session per connection:
reset, step, state and close messages, an answer frame each), and `/mcp`, OpenEnv's JSON-RPC face
of MCP environments, which a toolgym session is not.

Each `/ws` message is parsed, run and answered on the session's lane (sessions.py), its answer
encoded once from the session's wire dict. A message the session refuses, malformed ones
included, gets its error frame and the connection goes on; frames are parsed as strictly as HTTP
bodies (toolgym.http.parse_json: the same typed errors).
"""

from __future__ import annotations

import contextlib
import json

from pydantic import ValidationError
from starlette.websockets import WebSocket, WebSocketDisconnect

from toolgym.envs.service.environment import ToolgymAction, ToolgymEnvironment
from toolgym.envs.service.sessions import CapacityError, Session, SessionTable, typed
from toolgym.envs.service.wire import (
    CAPACITY_REACHED,
    EXECUTION_ERROR,
    INVALID_JSON,
    MESSAGES,
    SESSION_ERROR,
    UNKNOWN_TYPE,
    ResetMessage,
    StepMessage,
    error_frame,
    frame,
    invalid_message,
    mcp_refusal,
)
from toolgym.http import BodyError, client_of, json_bytes, parse_json


async def serve_session(table: SessionTable, websocket: WebSocket) -> None:
    """`/ws`: a session for the connection's life (closed with it, or by a `close` message)."""
    await websocket.accept()
    session: Session | None = None
    try:
        session = table.open(client_of(websocket.scope), "ws")
        while True:
            answer = await _answer(table, session, await _receive(websocket))
            if answer is None:
                break
            await websocket.send_text(answer)
    except WebSocketDisconnect:
        pass
    except CapacityError as exc:  # sent once; the connection closes
        refusal = error_frame(
            exc.message, CAPACITY_REACHED, active_sessions=exc.active, max_sessions=exc.most
        )
        await _send_quietly(websocket, refusal)
    except Exception as exc:
        await _send_quietly(websocket, error_frame(str(typed(exc)), SESSION_ERROR))
    finally:
        if session is not None:
            await table.close(session.id)
        with contextlib.suppress(RuntimeError, WebSocketDisconnect):  # the client may be gone
            await websocket.close()


async def serve_mcp(websocket: WebSocket) -> None:
    """`/mcp` over a WebSocket: each JSON-RPC message answered with its error (no session)."""
    await websocket.accept()
    with contextlib.suppress(WebSocketDisconnect):
        while True:
            # OpenEnv encodes these answers with json.dumps' default separators
            await websocket.send_text(json.dumps(mcp_refusal(await _receive(websocket))))


async def _answer(table: SessionTable, session: Session, raw: str | bytes) -> str | None:
    """The frame answering one client message (None: the client closes the session)."""
    try:
        answer, kind = await table.run(session, _reply, session.env, raw)
    except Exception as exc:  # a session gone, a server out of threads
        return error_frame(str(typed(exc)), EXECUTION_ERROR)
    if kind in ("step", "reset"):
        table.touch(session.id, step=kind == "step")
    return answer


def _reply(env: ToolgymEnvironment, raw: str | bytes) -> tuple[str | None, str]:
    """One message's answer frame and its type, on the session's lane."""
    try:
        message = parse_json(raw)
    except BodyError as exc:
        return error_frame(f"[argument_error] {exc}", INVALID_JSON), ""
    kind = message.get("type", "") if isinstance(message, dict) else ""
    model = MESSAGES.get(kind) if isinstance(kind, str) else None
    if model is None:
        return error_frame(f"Unknown message type: {kind}", UNKNOWN_TYPE), ""
    try:
        parsed = model.model_validate(message)
        if isinstance(parsed, StepMessage):
            action = ToolgymAction.model_validate(parsed.data)
            return _observation_frame(env.step_answer(action)), kind
        if isinstance(parsed, ResetMessage):
            return _observation_frame(env.reset_answer(**parsed.data)), kind
        if kind == "state":
            return frame("state", env.state.model_dump()), kind
        return None, kind  # close
    except ValidationError as exc:
        return invalid_message(exc), ""
    except Exception as exc:  # a ServiceError's message starts with its [kind]
        return error_frame(str(typed(exc)), EXECUTION_ERROR), ""


def _observation_frame(answer: dict[str, object]) -> str:
    # the session's wire dict as it is (no model around it: a step's answer is encoded once)
    return json_bytes({"type": "observation", "data": answer}).decode()


async def _receive(websocket: WebSocket) -> str | bytes:
    """A client message: a text frame's text or a binary frame's bytes (parsed as UTF-8 JSON)."""
    message = await websocket.receive()
    if message["type"] == "websocket.disconnect":
        raise WebSocketDisconnect(message.get("code", 1000), message.get("reason"))
    text: str | None = message.get("text")
    if text is not None:
        return text
    data: bytes = message.get("bytes") or b""
    return data


async def _send_quietly(websocket: WebSocket, answer: str) -> None:
    with contextlib.suppress(RuntimeError, WebSocketDisconnect):
        await websocket.send_text(answer)
