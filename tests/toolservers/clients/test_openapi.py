"""Tools imported from OpenAPI specs: a FastAPI app's own spec (served for real on 127.0.0.1)
and AgentLego servers (toolgym's AgentLego face) through `agentlego_tools`."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import httpx
import pytest
from fastapi import FastAPI, File, Header, HTTPException, UploadFile
from fastapi.responses import Response
from PIL import Image as PILImage
from pydantic import BaseModel

from tests.toolservers.server.helpers import fails, flip, png_bytes, running, size
from toolgym.actions import ToolCall
from toolgym.errors import ErrorKind
from toolgym.files import FileStore
from toolgym.tools import ToolContext
from toolgym.toolservers.clients import SpecError, agentlego_tools, openapi_tools
from toolgym.toolservers.clients.openapi import OpenAPIToolSet
from toolgym.toolservers.gta.calculator import calculator
from toolgym.toolservers.gta.drawing import drawbox
from toolgym.toolservers.server import ServerThread


class NewItem(BaseModel):
    name: str
    price: float


def shop_app() -> FastAPI:
    app = FastAPI(title="shop")
    items: dict[int, dict[str, Any]] = {1: {"id": 1, "name": "tea", "price": 3.5}}

    @app.get("/items/{item_id}", operation_id="get_item", summary="Look up an item")
    def get_item(
        item_id: int, verbose: bool = False, x_trace: Annotated[str | None, Header()] = None
    ) -> dict[str, Any]:
        if item_id not in items:
            raise HTTPException(404, f"no item {item_id}")
        out = dict(items[item_id])
        if verbose:
            out["trace"] = x_trace
        return out

    @app.post("/items", operation_id="add_item", status_code=201)
    def add_item(item: NewItem) -> dict[str, Any]:
        new = {"id": len(items) + 1, **item.model_dump()}
        items[new["id"]] = new
        return new

    @app.post("/thumbnail", operation_id="thumbnail", response_class=Response)
    async def thumbnail(image: Annotated[UploadFile, File()], width: Annotated[int, File()] = 8) -> Response:
        with PILImage.open(io.BytesIO(await image.read())) as img:
            img.thumbnail((width, width))
            buf = io.BytesIO()
            img.save(buf, format="PNG")
        return Response(buf.getvalue(), media_type="image/png")

    @app.get("/boom", operation_id="boom")
    def boom() -> str:
        raise HTTPException(500, "database on fire")

    @app.get("/busy", operation_id="busy")
    def busy() -> str:
        raise HTTPException(429, "slow down")

    return app


@pytest.fixture(scope="module")
def shop() -> Iterator[str]:
    with ServerThread(shop_app()) as url:
        yield url


def ctx() -> ToolContext:
    return ToolContext(files=FileStore())


def test_fastapi_spec_becomes_tools(shop: str) -> None:
    with openapi_tools(f"{shop}/openapi.json") as tools:
        assert tools.names == ["get_item", "add_item", "thumbnail", "boom", "busy"]
        get_item = tools.get("get_item")
        assert get_item.description == "Look up an item"
        schema = get_item.parameters_schema()
        assert schema["required"] == ["item_id"]
        assert schema["properties"]["item_id"]["type"] == "integer"
        assert {p.name for p in tools.get("add_item").params} == {"name", "price"}
        assert tools.get("thumbnail").file_params == {"image": "file"}
        c = ctx()
        got = tools.call(
            ToolCall(name="get_item", arguments={"item_id": 1, "verbose": True, "x-trace": "abc"}), c
        )
        assert got.content == {"id": 1, "name": "tea", "price": 3.5, "trace": "abc"}
        added = tools.call(ToolCall(name="add_item", arguments={"name": "cake", "price": 4.25}), c)
        assert added.content == {"id": 2, "name": "cake", "price": 4.25}
        assert tools.call(ToolCall(name="get_item", arguments={"item_id": 2}), c).content["name"] == "cake"


def test_files_go_up_and_binary_answers_come_back_as_files(shop: str) -> None:
    c = ctx()
    handle = c.files.put_bytes(png_bytes(40, 20), name="image/wide.png", media_type="image/png")
    with openapi_tools(f"{shop}/openapi.json", operations=["thumbnail"]) as tools:
        obs = tools.call(ToolCall(name="thumbnail", arguments={"image": handle.ref, "width": 10}), c)
    assert obs.error is None and len(obs.files) == 1
    out = obs.files[0]
    assert out.media_type == "image/png"
    with PILImage.open(c.files.get(out).path) as img:
        assert img.size == (10, 5)


@pytest.mark.parametrize(
    ("name", "arguments", "kind", "text"),
    [
        ("get_item", {"item_id": 99}, ErrorKind.TOOL_ERROR, "no item 99"),
        ("get_item", {"item_id": "x"}, ErrorKind.ARGUMENT_ERROR, "is not of type 'integer'"),
        ("add_item", {"name": "x", "price": "free"}, ErrorKind.ARGUMENT_ERROR, "price"),
        ("boom", {}, ErrorKind.INFRA_ERROR, "database on fire"),
        ("busy", {}, ErrorKind.INFRA_ERROR, "HTTP 429"),
    ],
)
def test_failures_are_typed(
    shop: str, name: str, arguments: dict[str, Any], kind: ErrorKind, text: str
) -> None:
    with openapi_tools(f"{shop}/openapi.json") as tools:
        obs = tools.call(ToolCall(name=name, arguments=arguments), ctx())
    assert obs.error_kind is kind
    assert text in obs.text


def test_unreachable_api_is_an_infra_error(shop: str) -> None:
    spec = httpx.get(f"{shop}/openapi.json").json()
    with OpenAPIToolSet(spec, "http://127.0.0.1:9/") as tools:
        obs = tools.call(ToolCall(name="get_item", arguments={"item_id": 1}), ctx())
    assert obs.error_kind is ErrorKind.INFRA_ERROR


def test_spec_sources_and_spec_errors(shop: str, tmp_path: Path) -> None:
    spec = httpx.get(f"{shop}/openapi.json").json()
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    with openapi_tools(path, base_url=shop, operations=["get_item"]) as from_file:
        assert (
            from_file.call(ToolCall(name="get_item", arguments={"item_id": 1}), ctx()).content["name"]
            == "tea"
        )
    with pytest.raises(SpecError, match="no absolute server URL"):
        openapi_tools(spec)
    with pytest.raises(SpecError, match="no operations named"):
        openapi_tools(spec, base_url=shop, operations=["nope"])
    external = {
        "openapi": "3.1.0",
        "paths": {"/x": {"get": {"operationId": "x", "parameters": [{"$ref": "other.json#/p"}]}}},
    }
    with pytest.raises(SpecError, match="only local references"):
        openapi_tools(external, base_url=shop)
    dangling = {
        "openapi": "3.1.0",
        "paths": {"/x": {"get": {"parameters": [{"$ref": "#/components/parameters/q"}]}}},
    }
    with pytest.raises(SpecError, match="does not resolve"):
        openapi_tools(dangling, base_url=shop)
    with pytest.raises(SpecError, match="not an OpenAPI 3"):
        openapi_tools({"swagger": "2.0"}, base_url=shop)


def test_agentlego_servers_import_through_their_spec(tmp_path: Path) -> None:
    c = ctx()
    image = c.files.put_bytes(png_bytes(30, 10), name="image/in.png", media_type="image/png")
    with (
        running([calculator, flip, size, drawbox, fails], title="AgentLego") as url,
        agentlego_tools(url) as tools,
    ):
        assert tools.names == ["Calculator", "Flip", "Size", "DrawBox", "Fails"]
        assert tools.get("Calculator").description == calculator.description
        assert tools.get("Flip").file_params == {"image": "image"}
        assert [r.type for r in tools.get("Size").returns] == ["int", "int"]
        assert tools.call(ToolCall(name="Calculator", arguments={"expression": "6*7"}), c).content == "42"
        assert tools.call(ToolCall(name="Size", arguments={"image": image.ref}), c).content == [30, 10]
        flipped = tools.call(ToolCall(name="Flip", arguments={"image": image.ref, "times": 2}), c)
        assert flipped.error is None
        with (
            PILImage.open(c.files.get(flipped.files[0]).path) as out,
            PILImage.open(c.files.get(image).path) as src,
        ):
            assert out.convert("RGB").tobytes() == src.convert("RGB").tobytes()
        failed = tools.call(ToolCall(name="Fails", arguments={"reason": "q"}), c)
        assert failed.error_kind is ErrorKind.TOOL_ERROR and "failed on purpose: q" in failed.text
        missing = tools.call(ToolCall(name="Calculator", arguments={}), c)
        assert missing.error_kind is ErrorKind.ARGUMENT_ERROR  # checked against the imported schema
