"""MCP over streamable HTTP at /mcp, with the official `mcp` SDK (low-level `Server`).

Every served tool is an MCP tool with its JSON Schema as `inputSchema`. A result comes back as
text content (what an agent would see), the JSON result as `structuredContent` (`{"result": ...}`)
and produced images as image content. A failed call is a result with `isError` and the typed
error in `structuredContent` (`{"error": {"kind", "message"}}`), as MCP asks tools to report
failures (argument errors included, so a model can correct them). An unknown tool is a protocol
error, as the spec says: JSON-RPC -32602 "Unknown tool: <name>". File parameters take a handle of a file uploaded through the native API
(`file:<sha256>`) or a `data:<media type>;base64,...` URI.

The session manager is stateless and answers with JSON (no SSE stream): each request stands alone,
so any number of clients can call without server-side sessions.
"""

from __future__ import annotations

import base64
import binascii
from contextlib import AbstractAsyncContextManager
from typing import Any

try:  # the SDK is the `mcp` extra
    import mcp.types as types
    from mcp import MCPError
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel.server import Server
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings
except ImportError:  # no SDK, or a 1.x (which lacks these names): one line naming the extra
    from toolgym.toolservers.mcp_sdk import require_mcp

    require_mcp()
    raise

from toolgym.errors import ErrorKind
from toolgym.files import FileHandle, FileStore
from toolgym.tools import BaseTool

from .config import is_loopback
from .runtime import ToolRuntime

FILE_HINT = " (a file handle `file:<sha256>` uploaded to this server, or a `data:<type>;base64,...` URI)"


def mcp_tool(t: BaseTool) -> types.Tool:
    """A toolgym tool as an MCP tool: its JSON Schema as `inputSchema`, file parameters explained."""
    schema = t.parameters_schema()
    if t.file_params:
        props = {k: dict(v) for k, v in schema.get("properties", {}).items()}
        for pname in t.file_params:
            props[pname]["description"] = (props[pname].get("description") or "a file") + FILE_HINT
        schema = {**schema, "properties": props}
    return types.Tool(
        name=t.name,
        description=t.description,
        input_schema=schema,
        annotations=types.ToolAnnotations(read_only_hint=not t.mutates_state),
    )


def decode_data_uri(value: str) -> tuple[bytes, str] | None:
    head, sep, payload = value.partition(",")
    if not sep or not head.startswith("data:") or not head.endswith(";base64"):
        return None
    media_type = head[len("data:") : -len(";base64")] or "application/octet-stream"
    try:
        return base64.b64decode(payload, validate=True), media_type
    except (binascii.Error, ValueError):
        return None


def error_result(kind: ErrorKind, message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=f"{kind.value}: {message}")],
        structured_content={"error": {"kind": kind.value, "message": message}},
        is_error=True,
    )


def build_mcp(
    runtime: ToolRuntime, title: str
) -> tuple[StreamableHTTPASGIApp, AbstractAsyncContextManager[None]]:
    """The ASGI endpoint for /mcp and the context manager the app's lifespan must enter."""
    tools = {name: mcp_tool(runtime.entries[name].tool) for name in runtime.entries}

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(tools.values()))

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        entry = runtime.entries.get(params.name)
        if entry is None:
            # the MCP spec (tools, error handling) makes an unknown tool a protocol error, JSON-RPC
            # -32602, not a tool result with isError; `data` carries toolgym's kind as well
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Unknown tool: {params.name}",
                data={"kind": ErrorKind.UNKNOWN_TOOL.value, "tool": params.name},
            )
        arguments = dict(params.arguments or {})
        for pname in entry.tool.file_params:
            value = arguments.get(pname)
            if isinstance(value, str) and value.startswith("data:"):
                decoded = decode_data_uri(value)
                if decoded is None:
                    return error_result(
                        ErrorKind.ARGUMENT_ERROR, f"{params.name}: {pname}: malformed data: URI"
                    )
                data, media_type = decoded
                arguments[pname] = (await runtime.store(data, media_type=media_type)).ref
        outcome = await runtime.call(params.name, arguments)
        obs = outcome.observation
        if obs.error is not None:
            return error_result(obs.error.kind, obs.error.message)
        content: list[types.ContentBlock] = [types.TextContent(text=obs.text)]
        for handle in obs.files:
            content.append(await runtime.in_thread(file_block, runtime.files, handle))
        return types.CallToolResult(content=content, structured_content={"result": obs.content})

    server: Server[Any] = Server(title, version="1", on_list_tools=list_tools, on_call_tool=call_tool)
    security = transport_security(runtime.config.host)
    limit = max((e.config.max_request_bytes for e in runtime.entries.values()), default=4 << 20)
    manager = StreamableHTTPSessionManager(
        app=server,
        stateless=True,
        json_response=True,
        security_settings=security,
        max_request_body_size=limit,
    )
    return StreamableHTTPASGIApp(manager), manager.run()


def transport_security(host: str) -> TransportSecuritySettings:
    """DNS-rebinding protection on loopback (a browser page must not reach a loopback server);
    beyond loopback the bearer token guards every request instead."""
    if is_loopback(host):
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


def file_block(files: FileStore, handle: FileHandle) -> types.ContentBlock:
    """A produced file as MCP content: an image inline, anything else as an embedded blob."""
    data = base64.b64encode(files.get(handle).read_bytes()).decode("ascii")
    if handle.media_type.startswith("image/"):
        return types.ImageContent(data=data, mime_type=handle.media_type)
    return types.EmbeddedResource(
        resource=types.BlobResourceContents(
            uri=f"toolgym://files/{handle.sha256}", blob=data, mime_type=handle.media_type
        )
    )
