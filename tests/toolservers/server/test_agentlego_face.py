"""The AgentLego face against the wire schema captured from agentlego-server 0.2.0 and against
AgentLego's own client, `agentlego.tools.remote.RemoteTool` (the real package, unchanged)."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from PIL import Image as PILImage

from toolgym.toolservers.gta.calculator import calculator
from toolgym.toolservers.gta.drawing import drawbox
from toolgym.toolservers.server import ServerConfig, ToolConfig

from .helpers import Gate, fails, flip, png_bytes, running, size

EXAMPLE = Path(__file__).parent / "data" / "agentlego_server_openapi_example.json"


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    gate = Gate()
    gate.release()
    config = ServerConfig(title="AgentLego", tools_config={"Calculator": ToolConfig(max_request_bytes=4096)})
    with running([calculator, flip, size, drawbox, fails], config) as url:
        yield url


def test_spec_equals_the_one_agentlego_server_publishes() -> None:
    captured = json.loads(EXAMPLE.read_text())
    with running([calculator, flip, size], title="AgentLego") as url:
        ours = httpx.get(f"{url}/openapi.json").json()
    assert ours == captured


def test_spec_lists_only_tool_operations(server: str) -> None:
    spec = httpx.get(f"{server}/openapi.json").json()
    assert list(spec["paths"]) == ["/Calculator", "/Flip", "/Size", "/DrawBox", "/Fails"]
    assert all(list(item) == ["post"] for item in spec["paths"].values())
    body = spec["components"]["schemas"]["Body_DrawBox"]
    assert body["properties"]["image"] == {"type": "string", "format": "image;binary", "title": "Image"}
    assert body["required"] == ["image", "bbox"]
    assert spec["paths"]["/DrawBox"]["post"]["requestBody"]["content"].keys() == {"multipart/form-data"}
    assert httpx.get(server, follow_redirects=False).headers["location"] == "/openapi.json"


def test_agentlego_remote_tool_client_works_unchanged(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentlego.tools.remote import RemoteTool  # type: ignore[import-untyped]
    from agentlego.types import ImageIO  # type: ignore[import-untyped]

    monkeypatch.chdir(tmp_path)  # AgentLego writes image outputs under ./generated
    tools = {t.name: t for t in RemoteTool.from_server(server)}
    assert list(tools) == ["Calculator", "Flip", "Size", "DrawBox", "Fails"]
    assert tools["Calculator"](expression="290 // 5") == "58"
    assert tools["Calculator"].toolmeta.description == calculator.description

    image_path = tmp_path / "in.png"
    image_path.write_bytes(png_bytes(40, 20, "red"))
    assert tools["Size"](image=str(image_path)) == (40, 20)
    flipped_path = tools["Flip"](image=str(image_path))
    with PILImage.open(flipped_path) as flipped:
        assert flipped.size == (40, 20)
        assert flipped.convert("RGB").getpixel((39, 5)) == (255, 0, 0)  # red moved to the right
        assert flipped.convert("RGB").getpixel((0, 5)) == (255, 255, 255)
    boxed = tools["DrawBox"].apply(image=ImageIO(str(image_path)), bbox="(2, 2, 30, 15)")
    assert boxed.to_pil().size == (40, 20)

    with pytest.raises(RuntimeError, match="failed on purpose: x"):
        tools["Fails"](reason="x")
    with pytest.raises(RuntimeError, match="division by zero"):
        tools["Calculator"](expression="1/0")


def test_form_and_multipart_bodies_and_errors(server: str) -> None:
    ok = httpx.post(f"{server}/Calculator", data={"expression": "6*7"})
    assert ok.status_code == 200 and ok.json() == "42"
    missing = httpx.post(f"{server}/Calculator", data={})
    assert missing.status_code == 422
    assert missing.json()["detail"] == [
        {"type": "missing", "loc": ["body", "expression"], "msg": "Field required", "input": {}}
    ]
    bad_int = httpx.post(f"{server}/Flip", files={"image": ("a.png", png_bytes())}, data={"times": "twice"})
    assert bad_int.status_code == 422
    assert bad_int.json()["detail"][0]["loc"] == ["body", "times"]
    assert bad_int.json()["detail"][0]["type"] == "int_parsing"
    no_image = httpx.post(f"{server}/Size", files={"other": ("a.txt", b"x")})
    assert no_image.status_code == 422 and no_image.json()["detail"][0]["loc"] == ["body", "image"]
    not_image = httpx.post(f"{server}/Size", files={"image": ("a.txt", b"plain text")})
    assert not_image.status_code == 422 and "not an image" in not_image.json()["detail"][0]["msg"]
    tool_failure = httpx.post(f"{server}/Fails", data={"reason": "y"})
    assert tool_failure.status_code == 400 and tool_failure.json() == {"detail": "failed on purpose: y"}
    assert httpx.post(f"{server}/Nope", data={}).status_code == 404
    too_big = httpx.post(f"{server}/Calculator", data={"expression": "1+" * 3000})
    assert too_big.status_code == 413
    as_json = httpx.post(f"{server}/Calculator", json={"expression": "2**5"})
    assert as_json.json() == "32"


def test_outputs_base64_png_and_tuples(server: str) -> None:
    image = png_bytes(30, 10, "blue")
    flipped = httpx.post(
        f"{server}/Flip", files={"image": ("in.png", image, "image/png")}, data={"times": "2"}
    )
    assert flipped.status_code == 200
    data = base64.b64decode(flipped.json())
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    with PILImage.open(io.BytesIO(data)) as out, PILImage.open(io.BytesIO(image)) as original:
        assert out.convert("RGB").tobytes() == original.convert("RGB").tobytes()  # flipped twice
    jpeg = io.BytesIO()
    PILImage.new("RGB", (12, 8), "green").save(jpeg, format="JPEG")
    assert httpx.post(f"{server}/Size", files={"image": ("x.jpg", jpeg.getvalue())}).json() == [12, 8]


def test_timeout_is_408() -> None:
    gate = Gate()
    config = ServerConfig(tools_config={"Gated": ToolConfig(timeout_s=0.2)})
    with running([gate.tool()], config) as url:
        try:
            r = httpx.post(f"{url}/Gated", data={"label": "x"}, timeout=30)
        finally:
            gate.release()
    assert r.status_code == 408
    assert "did not finish" in r.json()["detail"]
