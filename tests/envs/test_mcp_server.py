"""`toolgym mcp`: mock worlds over MCP, driven by the official `mcp` SDK client over stdio (a real
subprocess) and streamable HTTP (a real uvicorn server on 127.0.0.1)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client, MCPError
from mcp.client.stdio import StdioServerParameters
from typer.testing import CliRunner

from tests.pantry import install_pantry
from toolgym.cli import app
from toolgym.envs.demo import mock_task_paths
from toolgym.envs.mcp_server import McpSetupError, http_app, make_config
from toolgym.http import ServerThread
from toolgym.trace import read_trace

ROOT = Path(__file__).resolve().parents[2]
MTU = next(p for p in mock_task_paths() if p.stem == "mtu")
BALANCE = "mtu-balance-002"
TRANSFER = "mtu-transfer-011"
# its golden call: a write to the seeded accounts of mtu_banking
TRANSFER_ARGS = {
    "account_number": "123456",
    "source_account": "checking",
    "destination_account": "savings",
    "amount": 500,
    "transfer_speed": "now",
}


def _server_params(*args: str) -> StdioServerParameters:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return StdioServerParameters(command=sys.executable, args=["-m", "toolgym.cli", "mcp", *args], env=env)


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def _resource_text(result: types.ReadResourceResult) -> str:
    contents = result.contents[0]
    assert isinstance(contents, types.TextResourceContents)
    return contents.text


def test_stdio_episode_is_traced_and_scored(tmp_path: Path) -> None:
    traces = tmp_path / "traces"

    async def main() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with Client(_server_params("--tasks", "mtu", "--trace-dir", str(traces))) as client:
            prompts = await client.list_prompts()
            seen["prompts"] = [p.name for p in prompts.prompts]
            prompt = await client.get_prompt(BALANCE)
            block = prompt.messages[0].content
            assert isinstance(block, types.TextContent)
            seen["query"] = block.text
            seen["tools"] = [t.name for t in (await client.list_tools()).tools]
            ok = await client.call_tool("get_account_balance", {"account_number": "123456"})
            seen["ok"] = ok
            seen["bad"] = await client.call_tool("get_account_balance", {"acct": "123456"})
            with pytest.raises(MCPError) as unknown:
                await client.call_tool("no_such_tool", {})
            seen["unknown"] = unknown.value.error
            seen["episode"] = json.loads(_resource_text(await client.read_resource("toolgym://episode")))
            seen["final"] = await client.call_tool(
                "final_answer", {"text": "Account 123456 has a balance of $4,825.50."}
            )
            seen["after"] = await client.call_tool("get_account_balance", {"account_number": "123456"})
        return seen

    seen = anyio.run(main)
    assert BALANCE in seen["prompts"] and seen["query"].startswith("How much money is in my bank account")
    assert seen["tools"][-1] == "final_answer" and "get_account_balance" in seen["tools"]
    ok: types.CallToolResult = seen["ok"]
    assert not ok.is_error and ok.structured_content == {"result": json.loads(_text(ok))}
    assert ok.structured_content["result"]["balance"] == "$4,825.50"
    bad: types.CallToolResult = seen["bad"]
    assert bad.is_error and bad.structured_content is not None
    assert bad.structured_content["error"]["kind"] == "argument_error"
    assert seen["unknown"].code == types.INVALID_PARAMS and "no_such_tool" in seen["unknown"].message
    assert (
        seen["episode"]["task_id"] == BALANCE and seen["episode"]["step"] == 2
    )  # the unknown tool is no step
    final: types.CallToolResult = seen["final"]
    assert final.structured_content == {"reward": 1.0, "scores": {"answer": 1.0, "reward": 1.0}, "steps": 3}
    after: types.CallToolResult = seen["after"]
    assert after.is_error and "episode is over" in _text(after)

    # the first episode (no steps) left nothing; the task's episode is a finished openai trace
    files = sorted(p.relative_to(traces).as_posix() for p in traces.rglob("*") if p.is_file())
    assert files == [f"session-1/ep2.{BALANCE}.jsonl"]
    trace = read_trace(traces / files[0])
    assert trace.header.protocol == "openai" and trace.header.agent.startswith("mcp")
    assert [s.error_kinds for s in trace.steps] == [[], ["argument_error"], []]
    assert trace.end is not None and trace.end.status == "terminated" and trace.end.reward == 1.0
    assert trace.steps[0].raw is not None and trace.steps[0].raw["tool_calls"][0]["function"]["name"] == (
        "get_account_balance"
    )

    result = CliRunner().invoke(app, ["eval", str(traces), "--suite", "mtu", "--tasks", str(MTU)])
    assert result.exit_code == 0, result.output
    scored = json.loads((traces / "eval.fixed.json").read_text())
    assert scored["results"]["mtu"]["counts"]["episode/items"] == 1


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    config = make_config(tasks=str(MTU), task=TRANSFER, trace_dir=tmp_path / "traces")
    asgi, close_all = http_app(config)
    with ServerThread(asgi) as url:
        yield f"{url}/mcp"
    close_all()


def test_http_sessions_each_get_their_own_world(http_server: str) -> None:
    async def main() -> tuple[str, str, str, list[dict[str, Any]], list[dict[str, Any]]]:
        async with Client(http_server) as first, Client(http_server, mode="legacy") as second:
            start = _resource_text(await first.read_resource("toolgym://world/state-hash"))
            result = await first.call_tool("transfer_funds", TRANSFER_ARGS)
            assert not result.is_error, _text(result)
            moved = _resource_text(await first.read_resource("toolgym://world/state-hash"))
            other = _resource_text(await second.read_resource("toolgym://world/state-hash"))
            table = "toolgym://world/tables/mtu_banking_accounts"
            rows = json.loads(_resource_text(await second.read_resource(table)))
            rows_first = json.loads(_resource_text(await first.read_resource(table)))
            with pytest.raises(MCPError) as missing:
                await second.read_resource("toolgym://world/tables/no_such_table")
            assert missing.value.error.code == -32002
        return start, moved, other, rows, rows_first

    start, moved, other, rows, rows_first = anyio.run(main)
    assert moved != start  # the write changed the first session's world
    assert other == start  # and only that one

    def checking(table: list[dict[str, Any]]) -> int:
        row = next(r for r in table if r["account_number"] == "123456" and r["account_type"] == "checking")
        return int(row["balance_cents"])

    assert checking(rows) == 482550 and checking(rows_first) == 432550


def test_http_refuses_sessionless_requests(http_server: str) -> None:
    async def main() -> MCPError:
        async with Client(http_server, mode="2026-07-28") as client:
            with pytest.raises(MCPError) as refused:
                await client.list_tools()
        return refused.value

    refused = anyio.run(main)
    assert "world per MCP session" in refused.error.message


def test_files_are_session_resources(tmp_path: Path) -> None:
    config = make_config(tasks="demo", task="receipt-total")
    asgi, close_all = http_app(config)

    async def main(url: str) -> tuple[list[types.Resource], types.ReadResourceResult]:
        async with Client(url) as client:
            resources = (await client.list_resources()).resources
            files = [r for r in resources if str(r.uri).startswith("toolgym://files/")]
            return files, await client.read_resource(str(files[0].uri))

    with ServerThread(asgi) as url:
        files, read = anyio.run(main, f"{url}/mcp")
    close_all()
    assert len(files) == 1 and files[0].mime_type == "image/png"
    blob = read.contents[0]
    assert isinstance(blob, types.BlobResourceContents)
    receipt = ROOT / "toolgym/fixtures/images/receipt.png"
    assert base64.b64decode(blob.blob) == receipt.read_bytes()


def test_setup_errors_are_typed() -> None:
    with pytest.raises(McpSetupError, match="no mock app"):
        make_config(apps=["no_such_app"])
    with pytest.raises(McpSetupError, match="no such task set"):
        make_config(tasks="no_such_set")
    with pytest.raises(McpSetupError, match="no task 'nope'"):
        make_config(tasks="mtu", task="nope")
    result = CliRunner().invoke(app, ["mcp", "--http", "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "loopback" in result.output


def _inspector() -> str:
    """The MCP inspector's launcher (npm `@modelcontextprotocol/inspector`, which has `--cli`):
    $TOOLGYM_MCP_INSPECTOR, the one `make install-dev` puts in the venv, or `mcp-inspector` on
    PATH; the test skips without one (no npm)."""
    in_venv = Path(sys.prefix) / "mcp-inspector" / "node_modules" / ".bin" / "mcp-inspector"
    found = (
        os.environ.get("TOOLGYM_MCP_INSPECTOR")
        or (str(in_venv) if in_venv.exists() else None)
        or shutil.which("mcp-inspector")
    )
    if not found:
        pytest.skip(
            "the MCP inspector is not installed (npm i @modelcontextprotocol/inspector; TOOLGYM_MCP_INSPECTOR)"
        )
    return found


def _inspect(*method: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [_inspector(), "--cli", sys.executable, "-m", "toolgym.cli", "mcp", "--apps", "mtu_banking"]
    return subprocess.run([*command, *method], capture_output=True, text=True, env=env, timeout=120)


def test_mcp_inspector_cli() -> None:
    listed = _inspect("--method", "tools/list")
    assert listed.returncode == 0, listed.stderr
    names = [t["name"] for t in json.loads(listed.stdout)["tools"]]
    assert "get_account_balance" in names and names[-1] == "final_answer"
    called = _inspect(
        "--method", "tools/call", "--tool-name", "get_account_balance", "--tool-arg", "account_number=123456"
    )
    assert called.returncode == 0, called.stderr
    result = json.loads(called.stdout)
    assert result["isError"] is False and result["structuredContent"]["result"]["balance"] == "$4,825.50"
    unknown = _inspect("--method", "tools/call", "--tool-name", "no_such_tool")
    assert unknown.returncode != 0 and "-32602" in unknown.stderr + unknown.stdout


def test_builtin_tools_and_an_unfinished_episode(tmp_path: Path) -> None:
    """Without apps or tasks the server offers the built-in tools; a session that ends mid-episode
    (the client closes it) leaves its trace readable as `.partial`."""
    config = make_config(trace_dir=tmp_path)
    asgi, close_all = http_app(config)

    async def main(url: str) -> tuple[list[str], types.CallToolResult]:
        async with Client(url) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            return names, await client.call_tool("Calculator", {"expression": "6*7"})

    with ServerThread(asgi) as url:
        names, result = anyio.run(main, f"{url}/mcp")
        assert "Calculator" in names and "OCR" in names
        assert not result.is_error and "42" in _text(result)
        partial = tmp_path / "session-1" / "ep1.mcp-world.jsonl.partial"
        for _ in range(100):  # the session closes when the server handles the client's DELETE
            if partial.exists() and partial.stat().st_size:
                break
            anyio.run(anyio.sleep, 0.05)
    close_all()
    trace = read_trace(partial)
    assert not trace.complete and [s.actions[0]["name"] for s in trace.steps] == ["Calculator"]


def test_a_new_task_announces_its_tools(http_server: str) -> None:
    seen: list[str] = []

    async def on_message(message: object) -> None:
        seen.append(str(getattr(message, "method", type(message).__name__)))

    async def main() -> list[str]:
        async with Client(http_server, mode="legacy", message_handler=on_message) as client:
            await client.get_prompt(BALANCE)
            for _ in range(100):
                if len(seen) >= 2:
                    break
                await anyio.sleep(0.02)
            return [t.name for t in (await client.list_tools()).tools]

    tools = anyio.run(main)
    assert "notifications/tools/list_changed" in seen and "notifications/resources/list_changed" in seen
    assert "get_account_balance" in tools and "transfer_funds" in tools


def test_an_integer_for_a_string_parameter_is_coerced_unless_strict() -> None:
    """MTU's apps take a JSON number for a string parameter (MTU's own data writes them so);
    `--strict-arguments` takes the declared type only, for benchmarks that score types."""

    async def call(url: str) -> types.CallToolResult:
        async with Client(url) as client:
            await client.get_prompt(BALANCE)
            return await client.call_tool("get_account_balance", {"account_number": 123456})

    results = {}
    for strict in (False, True):
        asgi, close_all = http_app(make_config(tasks=str(MTU), task=BALANCE, strict_arguments=strict))
        with ServerThread(asgi) as url:
            results[strict] = anyio.run(call, f"{url}/mcp")
        close_all()
    assert not results[False].is_error and "$4,825.50" in _text(results[False])
    assert results[True].is_error and "account_number: Input should be a valid string" in _text(results[True])


def test_a_task_set_mixing_an_app_and_a_registered_tool_is_served(tmp_path: Path) -> None:
    """examples/pantry's task uses its app's tools and the registered tool ConvertUnits: over
    stdio (a real `toolgym mcp` process where the package is installed) the episode offers both,
    both answer, and the oracle's answer scores 1."""
    site = install_pantry(tmp_path / "site")
    server = _server_params("--tasks", "pantry", "--task", "pantry-convert-003")
    server.env = {**(server.env or {}), "PYTHONPATH": f"{ROOT}{os.pathsep}{site}"}

    async def main() -> tuple[list[str], list[types.CallToolResult], dict[str, Any]]:
        async with Client(server) as client:
            await client.get_prompt("pantry-convert-003")
            names = [t.name for t in (await client.list_tools()).tools]
            calls = [
                await client.call_tool("get_item", {"item": "rice"}),
                await client.call_tool("ConvertUnits", {"value": 2500, "source": "g", "target": "kg"}),
                await client.call_tool("final_answer", {"text": "There are 2.5 kg of rice."}),
            ]
            episode = json.loads(_resource_text(await client.read_resource("toolgym://episode")))
            return names, calls, episode

    names, calls, episode = anyio.run(main)
    assert names == ["get_item", "list_shelf", "use_item", "restock", "ConvertUnits", "final_answer"]
    assert not any(c.is_error for c in calls), [_text(c) for c in calls]
    assert "2500" in _text(calls[0]) and "2.5" in _text(calls[1])
    assert episode["reward"] == 1.0, episode
