"""Tools imported from MCP servers with `mcp_tools`: toolgym's own MCP face and a plain server
written with the SDK's MCPServer (text and image results, no structured content)."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
from mcp.server.mcpserver import Image as MCPImage
from mcp.server.mcpserver import MCPServer
from PIL import Image as PILImage
from starlette.applications import Starlette

from tests.toolservers.server.helpers import fails, flip, png_bytes, running
from toolgym.actions import ToolCall
from toolgym.envs.tool_env import ToolEnv
from toolgym.errors import ErrorKind, InfraError
from toolgym.files import FileHandle, FileStore
from toolgym.tasks import AnswerSpec, Task
from toolgym.tools import ToolContext, ToolSet
from toolgym.toolservers.clients import mcp_tools
from toolgym.toolservers.gta.calculator import calculator
from toolgym.toolservers.server import ServerConfig, ServerThread, create_app

TOKEN = "mcp-client-token-0123456"


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with running([calculator, flip, fails], ServerConfig(token=TOKEN)) as url:
        yield url


def ctx() -> ToolContext:
    return ToolContext(files=FileStore())


def test_toolgym_mcp_face_round_trip_matches_in_process(server: str) -> None:
    c = ctx()
    image = c.files.put_bytes(png_bytes(24, 12, "red"), name="image/red.png", media_type="image/png")
    local = ToolSet([calculator, flip, fails])
    with mcp_tools(f"{server}/mcp", token=TOKEN) as tools:
        assert tools.names == ["Calculator", "Flip", "Fails"]
        assert tools.get("Calculator").parameters_schema() == calculator.parameters_schema()
        assert not tools.get("Calculator").mutates_state
        for call in (
            ToolCall(name="Calculator", arguments={"expression": "2**8"}),
            ToolCall(name="Calculator", arguments={"expression": "1/0"}),
            ToolCall(name="Fails", arguments={"reason": "r"}),
        ):
            assert tools.call(call, c) == local.call(call, c)
        flipped = tools.call(ToolCall(name="Flip", arguments={"image": image.ref}), c)
        expected = local.call(ToolCall(name="Flip", arguments={"image": image.ref}), c)
        assert flipped.error is None
        assert flipped.files[0].sha256 == expected.files[0].sha256  # the same bytes came back
        assert flipped.text == expected.text
        bad = tools.call(ToolCall(name="Calculator", arguments={"expr": "1"}), c)
        assert bad.error_kind is ErrorKind.ARGUMENT_ERROR


def test_mcp_toolset_in_an_env_and_failures(server: str) -> None:
    task = Task(id="m", query="q", tools=["Calculator"], answer=AnswerSpec(whitelist=[["x"]]))
    with mcp_tools(f"{server}/mcp", token=TOKEN, tools=["Calculator"]) as tools:
        env = ToolEnv(tools, [task])
        env.reset(seed=0)
        _, _, _, _, info = env.step(ToolCall(name="Calculator", arguments={"expression": "3+4"}))
        assert info["observations"][0]["content"] == "7"
    with pytest.raises(InfraError, match="does not serve"):
        mcp_tools(f"{server}/mcp", token=TOKEN, tools=["OCR"])
    with pytest.raises(InfraError, match="cannot connect"):
        mcp_tools(f"{server}/mcp")  # no token: refused
    thread = ServerThread(create_app([calculator]))  # a server that will go away
    url = thread.start()
    tools = mcp_tools(f"{url}/mcp", timeout_s=5)
    thread.stop()
    down = tools.call(ToolCall(name="Calculator", arguments={"expression": "1"}), ctx())
    tools.close()
    assert down.error_kind is ErrorKind.INFRA_ERROR


def plain_mcp_app() -> Starlette:
    server = MCPServer("plain")

    @server.tool()
    def shout(text: str) -> str:
        """Upper-case a text."""
        return text.upper()

    @server.tool(structured_output=False)
    def swatch(color: str) -> MCPImage:
        """A 4x4 image of one colour."""
        buf = io.BytesIO()
        PILImage.new("RGB", (4, 4), color).save(buf, format="PNG")
        return MCPImage(data=buf.getvalue(), format="png")

    @server.tool()
    def refuse(reason: str) -> str:
        """Always raises."""
        raise ValueError(f"refused: {reason}")

    return server.streamable_http_app(json_response=True, stateless_http=True)


def test_plain_sdk_server_text_images_and_errors() -> None:
    c = ctx()
    with ServerThread(plain_mcp_app()) as url, mcp_tools(f"{url}/mcp") as tools:
        assert sorted(tools.names) == ["refuse", "shout", "swatch"]
        shouted = tools.call(ToolCall(name="shout", arguments={"text": "hi"}), c)
        assert shouted.error is None and "HI" in shouted.text
        swatch = tools.call(ToolCall(name="swatch", arguments={"color": "blue"}), c)
        assert swatch.error is None and len(swatch.files) == 1
        handle: FileHandle = swatch.files[0]
        with PILImage.open(c.files.get(handle).path) as img:
            assert img.convert("RGB").getpixel((1, 1)) == (0, 0, 255)
        refused = tools.call(ToolCall(name="refuse", arguments={"reason": "no"}), c)
        # the SDK reports the failure without the exception's text
        assert refused.error_kind is ErrorKind.TOOL_ERROR and "Error executing tool refuse" in refused.text
