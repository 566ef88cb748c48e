"""Tools from an MCP server over streamable HTTP, through the official `mcp` SDK client.

    with mcp_tools("http://127.0.0.1:8765/mcp", token=...) as tools:
        env = ToolEnv(tools, tasks)

One SDK `Client` stays connected for the toolset's life, on an event loop in a background thread,
so synchronous `ToolSet.call` can use it from any thread. A result becomes the tool's value: its
`structuredContent` (unwrapped from `{"result": ...}` as toolgym's server sends it), else its text;
images and embedded binary resources become files in the episode's store. `isError` results are
tool errors (with the kind a toolgym server put in them); protocol and transport failures are
infra errors.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import concurrent.futures
import contextlib
import threading
from collections.abc import Coroutine, Iterable, Mapping
from typing import Any, TypeVar

import httpx2

try:  # the SDK is the `mcp` extra
    import mcp.types as types
    from mcp import Client, MCPError
    from mcp.client.streamable_http import streamable_http_client
except ImportError:  # no SDK, or a 1.x (which lacks these names): one line naming the extra
    from toolgym.toolservers.mcp_sdk import require_mcp

    require_mcp()
    raise

from toolgym.errors import ErrorKind, InfraError, ToolError, error_for_kind
from toolgym.files import FileHandle, StoredFile
from toolgym.tools import ReturnSpec, SchemaTool, ToolContext, ToolSet

from ._common import bearer, store_bytes, with_handles

T = TypeVar("T")


class MCPToolSet(ToolSet):
    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        headers: Mapping[str, str] | None = None,
        tools: Iterable[str] | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        super().__init__()
        self.url = url
        self.timeout_s = timeout_s
        self._headers = bearer(token, headers)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="toolgym-mcp-client", daemon=True)
        self._thread.start()
        self._client: Client | None = None
        self._stop: asyncio.Event | None = None
        self._session_task: concurrent.futures.Future[None] | None = None
        try:
            self._connect()
            listed = self._run(self._list_tools())
        except BaseException:
            self.close()
            raise
        wanted = list(tools) if tools is not None else None
        by_name = {t.name: t for t in listed}
        if wanted is not None:
            missing = [n for n in wanted if n not in by_name]
            if missing:
                self.close()
                raise InfraError(f"{url} does not serve {missing}; it serves {sorted(by_name)}")
        for name in wanted if wanted is not None else list(by_name):
            self.add(self._make_tool(by_name[name]))

    # ---- the connection ----------------------------------------------------------------
    def _connect(self) -> None:
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()

        async def hold() -> None:
            # the SDK's task groups must be entered and left by one task: this one owns the session
            self._stop = asyncio.Event()
            http = httpx2.AsyncClient(
                headers=self._headers, timeout=httpx2.Timeout(self.timeout_s, connect=5.0)
            )
            try:
                async with http, Client(streamable_http_client(self.url, http_client=http)) as client:
                    self._client = client
                    ready.set_result(None)
                    await self._stop.wait()
            except BaseException as exc:
                if not ready.done():
                    ready.set_exception(exc)
                else:
                    raise
            finally:
                self._client = None

        self._session_task = asyncio.run_coroutine_threadsafe(hold(), self._loop)
        try:
            ready.result(timeout=self.timeout_s)
        except concurrent.futures.TimeoutError:
            raise InfraError(f"MCP server {self.url} did not answer the handshake in time") from None
        except Exception as exc:
            raise InfraError(f"cannot connect to MCP server {self.url}: {_describe(exc)}") from None

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout=self.timeout_s + 5)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise InfraError(f"MCP server {self.url}: no answer in {self.timeout_s:g} s") from None

    async def _list_tools(self) -> list[types.Tool]:
        assert self._client is not None
        out: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(1000):
            page = await self._client.list_tools(cursor=cursor)
            out.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        return out

    # ---- tools -------------------------------------------------------------------------
    def _make_tool(self, t: types.Tool) -> SchemaTool:
        read_only = t.annotations.read_only_hint if t.annotations is not None else None

        def run(arguments: dict[str, Any], ctx: ToolContext) -> Any:
            return self._call(t.name, arguments, ctx)

        return SchemaTool(
            t.name,
            t.input_schema,
            run,
            description=t.description or "",
            returns=[ReturnSpec(type="text")],
            mutates_state=read_only is False,
            backend="mcp",
        )

    def _call(self, name: str, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        wire = {
            k: (
                f"data:{v.handle.media_type};base64,{base64.b64encode(v.read_bytes()).decode('ascii')}"
                if isinstance(v, StoredFile)
                else v
            )
            for k, v in arguments.items()
        }

        async def call() -> types.CallToolResult:
            if self._client is None:
                raise InfraError(f"MCP server {self.url}: not connected")
            return await self._client.call_tool(name, wire, read_timeout_seconds=self.timeout_s)

        try:
            result = self._run(call())
        except MCPError as exc:  # the server refused the request (unknown tool, bad params)
            raise InfraError(f"{name} at {self.url}: {exc}") from None
        except (InfraError, ToolError):
            raise
        except Exception as exc:
            raise InfraError(f"{name} at {self.url}: {_describe(exc)}") from None
        return self._decode(name, result, ctx)

    def _decode(self, name: str, result: types.CallToolResult, ctx: ToolContext) -> Any:
        texts: list[str] = []
        files: list[FileHandle] = []
        for block in result.content:
            if isinstance(block, types.TextContent):
                texts.append(block.text)
            elif isinstance(block, (types.ImageContent, types.AudioContent)):
                files.append(_store_b64(ctx, block.data, block.mime_type))
            elif isinstance(block, types.EmbeddedResource):
                res = block.resource
                if isinstance(res, types.BlobResourceContents):
                    files.append(_store_b64(ctx, res.blob, res.mime_type or "application/octet-stream"))
                else:
                    texts.append(res.text)
        structured = result.structured_content
        if result.is_error:
            error = structured.get("error") if isinstance(structured, Mapping) else None
            kind = str(error.get("kind")) if isinstance(error, Mapping) else ErrorKind.TOOL_ERROR.value
            message = str(error.get("message")) if isinstance(error, Mapping) else "\n".join(texts)
            raise error_for_kind(kind, message)
        if isinstance(structured, Mapping) and set(structured) == {"result"}:
            # toolgym's server: the JSON result, whose file handles name the files sent along
            return with_handles(structured["result"], {h.sha256: h for h in files})
        if structured is not None:
            return structured
        text = "\n".join(texts)
        if not files:
            return text
        if not text:
            return files[0] if len(files) == 1 else files
        return [text, *files]

    # ---- lifetime ----------------------------------------------------------------------
    def close(self) -> None:
        if self._loop.is_closed():
            return
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._session_task is not None:
            with contextlib.suppress(Exception):  # a failed session has nothing left to close
                self._session_task.result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self._loop.close()

    def __enter__(self) -> MCPToolSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _store_b64(ctx: ToolContext, data: str, media_type: str) -> FileHandle:
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise InfraError("MCP server sent content that is not base64") from None
    return store_bytes(ctx, raw, name=None, media_type=media_type)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


def mcp_tools(
    url: str,
    *,
    token: str | None = None,
    headers: Mapping[str, str] | None = None,
    tools: Iterable[str] | None = None,
    timeout_s: float = 60.0,
) -> MCPToolSet:
    """The tools of the MCP server at `url` (streamable HTTP endpoint, e.g. http://host:port/mcp)."""
    return MCPToolSet(url, token=token, headers=headers, tools=tools, timeout_s=timeout_s)
