"""`toolgym serve --docs FILE`: tools known only by their documentation, simulated, over the
native, AgentLego and MCP faces of a real server on 127.0.0.1; a bad doc stops the command with
a message naming the file and the tool."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
from mcp import Client
from typer.testing import CliRunner

from tests.toolservers.server.helpers import running
from toolgym.cli import app
from toolgym.toolservers.commands import doc_libraries
from toolgym.toolservers.server.providers import catalog

DOCS = [
    {
        "name": "get_stock_quote",
        "description": "The latest price of a stock.",
        "parameters": {
            "type": "object",
            "properties": {"symbol": {"type": "string", "description": "ticker"}},
            "required": ["symbol"],
        },
    }
]


def test_served_over_every_face(tmp_path: Path) -> None:
    doc = tmp_path / "stocks.json"
    doc.write_text(json.dumps(DOCS), encoding="utf-8")
    providers = [p for p in catalog(doc_libraries([doc])) if p.name == "get_stock_quote"]
    with running(providers) as url:
        native = httpx.post(f"{url}/v1/tools/get_stock_quote/call", json={"arguments": {"symbol": "ACME"}})
        assert native.status_code == 200, native.text
        quote = native.json()["content"]
        assert quote["simulated"] is True and quote["symbol"] == "ACME" and isinstance(quote["price"], float)
        again = httpx.post(f"{url}/v1/tools/get_stock_quote/call", json={"arguments": {"symbol": "ACME"}})
        assert again.json()["content"] == quote  # deterministic
        bad = httpx.post(f"{url}/v1/tools/get_stock_quote/call", json={"arguments": {}})
        assert bad.status_code == 422 and bad.json()["error"]["kind"] == "argument_error"
        listed = httpx.get(f"{url}/v1/tools").json()
        assert any(t["name"] == "get_stock_quote" for t in listed["tools"])
        assert "/get_stock_quote" in httpx.get(f"{url}/openapi.json").json()["paths"]
        lego = httpx.post(f"{url}/get_stock_quote", data={"symbol": "ACME"})
        assert lego.status_code == 200, lego.text

        async def over_mcp() -> str:
            async with Client(f"{url}/mcp") as client:
                result = await client.call_tool("get_stock_quote", {"symbol": "ACME"})
                assert not result.is_error
                return str(result.content[0].text)  # type: ignore[union-attr]

        assert json.loads(asyncio.run(over_mcp())) == quote


def test_a_bad_doc_stops_serve_naming_file_and_tool(tmp_path: Path) -> None:
    doc = tmp_path / "broken.json"
    doc.write_text(
        json.dumps([{"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": 3}}}}])
    )
    result = CliRunner().invoke(app, ["serve", "--docs", str(doc), "--port", "1"])
    assert result.exit_code == 2
    assert "broken.json: tool 'f': parameters are not JSON Schema" in " ".join(result.output.split())
