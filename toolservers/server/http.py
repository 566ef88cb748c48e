"""HTTP plumbing shared by the faces: JSON responses, the bearer-token and body-size middleware."""

from __future__ import annotations

import hmac
import json
from collections.abc import Iterable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send


def json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def json_response(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json_bytes(value), status_code=status, media_type="application/json", headers=headers)


def error_body(kind: str, message: str, **extra: Any) -> dict[str, Any]:
    """The native API's error envelope."""
    return {"ok": False, "error": {"kind": kind, "message": message}, **extra}


async def read_body(request: Request, limit: int) -> bytes | None:
    """The request body, or None when it is larger than `limit` (checked against the declared
    length first, so an oversized upload is refused before it is read)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def _send_json(
    send: Send, status: int, body: dict[str, Any], headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    payload = json_bytes(body)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


class BearerAuth:
    """Every request needs `Authorization: Bearer <token>` except the public paths (health,
    version, readiness and, if allowed, the AgentLego schema that RemoteTool fetches bare)."""

    def __init__(self, app: ASGIApp, token: str, public_paths: frozenset[str]) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()
        self.public_paths = public_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.public_paths:
            await self.app(scope, receive, send)
            return
        given = next((v for k, v in scope["headers"] if k == b"authorization"), b"")
        if not hmac.compare_digest(given, self.expected):
            await _send_json(
                send,
                401,
                {**error_body("infra_error", "missing or wrong bearer token"), "detail": "Unauthorized"},
                [(b"www-authenticate", b"Bearer")],
            )
            return
        await self.app(scope, receive, send)


class _TooLarge(Exception):
    pass


class BodyLimit:
    """Refuse request bodies over `limit` bytes with 413: by Content-Length before reading, and
    while reading for bodies sent without one."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = next((v for k, v in scope["headers"] if k == b"content-length"), None)
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._refuse(send)
            return
        received = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise _TooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        message = f"request body larger than {self.limit} bytes"
        await _send_json(send, 413, {**error_body("argument_error", message), "detail": message})
