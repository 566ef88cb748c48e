"""Tools imported from a real Gradio app (served on 127.0.0.1) through `gradio_client`."""

from __future__ import annotations

import os

# before gradio is imported: no usage reports to outside servers from the app or the client
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

from collections.abc import Iterator
from typing import Any

import gradio as gr
import pytest
from fastapi import FastAPI
from PIL import Image as PILImage
from PIL import ImageOps

from tests.toolservers.server.helpers import png_bytes
from toolgym.actions import ToolCall
from toolgym.errors import ErrorKind, InfraError
from toolgym.files import FileStore
from toolgym.tools import ToolContext
from toolgym.toolservers.clients import gradio_tools
from toolgym.toolservers.server import ServerThread


def gradio_app() -> Any:
    def add(a: float, b: float) -> float:
        return a + b

    def invert(img: PILImage.Image, label: str) -> tuple[PILImage.Image, str]:
        return ImageOps.invert(img.convert("RGB")), f"{label}: {img.size[0]}x{img.size[1]}"

    def refuse(text: str) -> str:
        raise gr.Error(f"cannot take {text!r}")

    with gr.Blocks(analytics_enabled=False) as demo:
        a, b, total = gr.Number(label="a"), gr.Number(label="b"), gr.Number(label="sum")
        gr.Button().click(add, [a, b], total, api_name="add")
        image, label = gr.Image(type="pil", label="image"), gr.Textbox(label="label")
        out_image, out_text = gr.Image(type="pil", format="png"), gr.Textbox()
        gr.Button().click(invert, [image, label], [out_image, out_text], api_name="invert")
        text, reply = gr.Textbox(label="text"), gr.Textbox()
        gr.Button().click(refuse, text, reply, api_name="refuse")
    return gr.mount_gradio_app(FastAPI(), demo, path="/")


@pytest.fixture(scope="module")
def app_url() -> Iterator[str]:
    with ServerThread(gradio_app()) as url:
        yield url + "/"


def test_endpoints_become_tools_that_run(app_url: str) -> None:
    ctx = ToolContext(files=FileStore())
    source = ctx.files.put_bytes(png_bytes(20, 10, "red"), name="image/red.png", media_type="image/png")
    with gradio_tools(app_url) as tools:
        assert tools.names == ["add", "invert", "refuse"]
        add = tools.get("add")
        assert add.parameters_schema()["properties"]["a"]["type"] == "number"
        assert add.parameters_schema()["required"] == ["a", "b"]
        assert tools.get("invert").file_params == {"img": "image"}
        assert [r.type for r in tools.get("invert").returns] == ["image", "text"]
        assert tools.call(ToolCall(name="add", arguments={"a": 2, "b": 3.5}), ctx).content == 5.5
        inverted = tools.call(ToolCall(name="invert", arguments={"img": source.ref, "label": "hi"}), ctx)
        assert inverted.error is None, inverted.text
        picture, caption = inverted.content
        assert caption == "hi: 20x10"
        assert len(inverted.files) == 1 and picture["sha256"] == inverted.files[0].sha256
        with PILImage.open(ctx.files.get(inverted.files[0]).path) as img:
            rgb = img.convert("RGB")
            assert rgb.size == (20, 10)
            assert rgb.getpixel((2, 2)) == (0, 255, 255)  # inverted red
            assert rgb.getpixel((18, 2)) == (0, 0, 0)  # inverted white
        refused = tools.call(ToolCall(name="refuse", arguments={"text": "x"}), ctx)
        assert refused.error_kind is ErrorKind.TOOL_ERROR and "cannot take 'x'" in refused.text
        bad = tools.call(ToolCall(name="add", arguments={"a": "two", "b": 1}), ctx)
        assert bad.error_kind is ErrorKind.ARGUMENT_ERROR


def test_chosen_endpoints_and_unreachable_apps(app_url: str) -> None:
    with gradio_tools(app_url, endpoints=["add"], prefix="calc_") as tools:
        assert tools.names == ["calc_add"]
    with pytest.raises(InfraError, match="no endpoints"):
        gradio_tools(app_url, endpoints=["/missing"])
    with pytest.raises(ValueError, match="running Gradio app"):
        gradio_tools("someone/some-space")  # a Space name would make the client call the Hub
    with pytest.raises(InfraError, match="cannot read the Gradio app"):
        gradio_tools("http://127.0.0.1:9/")


def test_app_that_goes_away_is_an_infra_error() -> None:
    thread = ServerThread(gradio_app())
    url = thread.start() + "/"
    tools = gradio_tools(url, endpoints=["add"])
    thread.stop()
    try:
        obs = tools.call(ToolCall(name="add", arguments={"a": 1, "b": 1}), ToolContext(files=FileStore()))
    finally:
        tools.close()
    assert obs.error_kind is ErrorKind.INFRA_ERROR
