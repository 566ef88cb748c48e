"""What the remote clients share: turning transport failures and answers into typed errors."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, NoReturn

import httpx

from toolgym.errors import ArgumentError, ErrorKind, InfraError, ToolgymError, error_for_kind, kind_for_status
from toolgym.files import FileHandle
from toolgym.tools import BaseTool, ToolContext


def transport_error(what: str, exc: Exception) -> NoReturn:
    """A request that got no usable answer: never the agent's fault."""
    if isinstance(exc, httpx.TimeoutException):
        raise InfraError(f"{what}: no answer in time ({type(exc).__name__})") from None
    raise InfraError(f"{what}: {type(exc).__name__}: {exc}") from None


def error_for_status(what: str, status: int, message: str, data: Any = None) -> ToolgymError:
    """The typed error for an HTTP failure of a remote tool call. The server's refusals of the
    request itself (auth, limits, overload, crashes) are infra errors; what the tool or its
    argument checks reported keeps its kind."""
    text = f"{what}: {message}" if message else f"{what}: HTTP {status}"
    kind = kind_for_status(status)
    if kind is ErrorKind.INFRA_ERROR:
        text = f"{text} (HTTP {status})"
    return error_for_kind(kind, text, data=data)


def store_bytes(
    ctx: ToolContext, data: bytes, *, name: str | None, media_type: str, sha256: str | None = None
) -> FileHandle:
    """Put downloaded bytes into the episode's file store; a hash that does not match is an
    infra error (a corrupted transfer), never a silently different file."""
    if sha256 is not None:
        actual = hashlib.sha256(data).hexdigest()
        if actual != sha256:
            raise InfraError(f"downloaded file hashes to {actual}, expected {sha256}")
    return ctx.files.put_bytes(data, name=name, media_type=media_type)


def bearer(token: str | None, headers: Mapping[str, str] | None = None) -> dict[str, str]:
    out = dict(headers or {})
    if token:
        out["Authorization"] = f"Bearer {token}"
    return out


def params_without_validation(t: BaseTool, arguments: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(arguments, Mapping):
        raise ArgumentError(f"{t.name}: arguments must be a JSON object, got {type(arguments).__name__}")
    return dict(arguments)


def with_handles(content: Any, local: Mapping[str, FileHandle]) -> Any:
    """JSON content with a server's file-handle objects turned into the local FileHandles of the
    same bytes (matched by sha256), as the tool returned them in-process."""
    if isinstance(content, dict):
        if set(content) == {"sha256", "media_type", "name"} and content["sha256"] in local:
            return local[content["sha256"]]
        return {k: with_handles(v, local) for k, v in content.items()}
    if isinstance(content, list):
        return [with_handles(v, local) for v in content]
    return content
