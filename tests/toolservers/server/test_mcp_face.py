"""The MCP face through the official `mcp` SDK client over streamable HTTP."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import mcp.types as types
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from toolgym.toolservers.gta.calculator import calculator
from toolgym.toolservers.server import ServerConfig

from .helpers import fails, flip, png_bytes, running, size

TOKEN = "mcp-test-token-0123456789"


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with running([calculator, flip, size, fails]) as url:
        yield url


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_tools_are_listed_with_their_schemas(server: str) -> None:
    async def main() -> types.ListToolsResult:
        async with Client(f"{server}/mcp") as client:
            return await client.list_tools()

    listed = {t.name: t for t in run(main()).tools}
    assert list(listed) == ["Calculator", "Flip", "Size", "Fails"]
    assert listed["Calculator"].input_schema == calculator.parameters_schema()
    assert listed["Calculator"].description == calculator.description
    assert (
        listed["Calculator"].annotations is not None
        and listed["Calculator"].annotations.read_only_hint is True
    )
    assert "file:<sha256>" in listed["Flip"].input_schema["properties"]["image"]["description"]


def test_calls_results_errors_and_images(server: str) -> None:
    image = png_bytes(20, 10, "red")
    data_uri = "data:image/png;base64," + base64.b64encode(image).decode()

    async def main() -> list[types.CallToolResult]:
        async with Client(f"{server}/mcp") as client:
            return [
                await client.call_tool("Calculator", {"expression": "2**10"}),
                await client.call_tool("Calculator", {"expression": "1/0"}),
                await client.call_tool("Calculator", {"nope": 1}),
                await client.call_tool("Fails", {"reason": "z"}),
                await client.call_tool("Size", {"image": data_uri}),
                await client.call_tool("Flip", {"image": data_uri}),
                await client.call_tool("Size", {"image": "data:image/png;base64,%%%"}),
            ]

    ok, div, bad_args, failed, sized, flipped, bad_uri = run(main())
    assert not ok.is_error
    assert ok.content == [types.TextContent(text="1024")]
    assert ok.structured_content == {"result": "1024"}
    assert div.is_error and div.structured_content == {
        "error": {"kind": "tool_error", "message": "division by zero"}
    }
    assert bad_args.is_error and bad_args.structured_content["error"]["kind"] == "argument_error"
    assert failed.is_error and "failed on purpose: z" in failed.content[0].text
    assert sized.structured_content == {"result": [20, 10]}
    assert not flipped.is_error
    text, picture = flipped.content
    assert isinstance(picture, types.ImageContent) and picture.mime_type == "image/png"
    produced = base64.b64decode(picture.data)
    handle = flipped.structured_content["result"]
    assert hashlib.sha256(produced).hexdigest() == handle["sha256"]
    assert text == types.TextContent(text=f"image file:{handle['sha256']}")
    assert bad_uri.is_error and "malformed data: URI" in bad_uri.structured_content["error"]["message"]


def test_an_unknown_tool_is_a_protocol_error(server: str) -> None:
    """The MCP spec (server/tools, error handling): unknown tools are JSON-RPC errors, not
    results with isError; the session stays usable."""

    async def main() -> tuple[MCPError, types.CallToolResult]:
        async with Client(f"{server}/mcp") as client:
            with pytest.raises(MCPError) as refused:
                await client.call_tool("Missing", {})
            return refused.value, await client.call_tool("Calculator", {"expression": "1+1"})

    error, after = run(main())
    assert error.code == types.INVALID_PARAMS == -32602
    assert error.message == "Unknown tool: Missing"
    assert error.data == {"kind": "unknown_tool", "tool": "Missing"}
    assert after.structured_content == {"result": "2"}
    # on the wire: a JSON-RPC error object, no result
    raw = httpx.post(
        f"{server}/mcp",
        json={
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "Missing", "arguments": {}},
        },
        headers={"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"},
    )
    body = raw.json()
    assert "result" not in body and body["id"] == 7 and body["error"]["code"] == -32602


def test_token_protected_mcp() -> None:
    async def call(url: str, token: str | None) -> types.CallToolResult:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
        ):
            return await client.call_tool("Calculator", {"expression": "3*3"})

    with running([calculator], ServerConfig(token=TOKEN)) as url:
        assert run(call(url, TOKEN)).structured_content == {"result": "9"}
        with pytest.raises(BaseExceptionGroup) as refused:
            run(call(url, None))
        assert refused.group_contains(MCPError, depth=None)
        raw = httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert raw.status_code == 401  # refused before the MCP layer sees it
