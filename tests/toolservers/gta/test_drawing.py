"""GTA DrawBox and AddText on real fixture images, decoded with Pillow and compared pixel by pixel."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from PIL import Image

import toolgym.fixtures
from tests.shared_data import GTA_TOOLMETA
from toolgym.actions import Observation, ToolCall
from toolgym.errors import ErrorKind
from toolgym.files import FileStore
from toolgym.tools import ToolContext, ToolSet
from toolgym.toolservers.gta.drawing import BOX_FILL_ALPHA, addtext, drawbox, named_position

IMAGES = Path(toolgym.fixtures.__file__).parent / "images"


@pytest.fixture()
def store() -> FileStore:
    store = FileStore()
    for name in ("receipt.png", "astronaut.jpg", "page.png", "chelsea.jpg"):
        store.put_path(IMAGES / name, name=f"image/{name}")
    return store


@pytest.fixture()
def ctx(store: FileStore) -> ToolContext:
    return ToolContext(files=store)


TOOLS = ToolSet([drawbox, addtext])


def call(ctx: ToolContext, name: str, **arguments: Any) -> Observation:
    return TOOLS.call(ToolCall(name=name, arguments=arguments), ctx)


def pixels(ctx: ToolContext, ref: str) -> NDArray[np.int16]:
    with Image.open(ctx.files.resolve(ref).path) as img:
        return np.asarray(img.convert("RGB")).astype(np.int16)


def result_image(ctx: ToolContext, obs: Observation) -> Image.Image:
    assert obs.type == "tool_result", obs.text
    assert len(obs.files) == 1 and obs.files[0].media_type == "image/png"
    with Image.open(ctx.files.get(obs.files[0]).path) as img:
        assert img.format == "PNG"
        img.load()
        return img.copy()


def changed_region(before: NDArray[np.int16], after: NDArray[np.int16]) -> tuple[int, int, int, int] | None:
    """(x1, y1, x2, y2), exclusive right/bottom, of the pixels that differ."""
    ys, xs = np.nonzero(np.any(before != after, axis=2))
    if len(xs) == 0:
        return None
    return (int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1)


# ---- DrawBox ------------------------------------------------------------------------------------
def test_drawbox_changes_exactly_the_box(ctx: ToolContext) -> None:
    before = pixels(ctx, "image/receipt.png")
    obs = call(ctx, "DrawBox", image="image/receipt.png", bbox="(31, 488, 488, 522)")
    out = result_image(ctx, obs)
    assert out.size == (520, 760) and out.mode == "RGB"
    after = np.asarray(out).astype(np.int16)
    assert changed_region(before, after) == (31, 488, 488, 522)
    # the outline is pure red
    assert tuple(after[488, 200]) == (255, 0, 0)
    assert tuple(after[521, 200]) == (255, 0, 0)
    assert tuple(after[505, 31]) == (255, 0, 0)
    assert tuple(after[505, 487]) == (255, 0, 0)
    # inside, the paper is tinted with translucent red: alpha-composited, exactly as Pillow does it
    paper = before[500, 250]
    tinted = after[500, 250]
    a = BOX_FILL_ALPHA / 255
    expected = np.array([255, 0, 0]) * a + paper * (1 - a)
    assert np.all(np.abs(tinted - expected) <= 1), (tinted, expected)
    assert tinted[0] > tinted[1] + 50
    # outside: untouched
    assert np.array_equal(after[:488], before[:488])
    assert np.array_equal(after[522:], before[522:])


def test_drawbox_annotation_sits_above_the_box(ctx: ToolContext) -> None:
    before = pixels(ctx, "image/astronaut.jpg")
    obs = call(ctx, "DrawBox", image="image/astronaut.jpg", bbox="(150, 200, 350, 400)", annotation="person")
    after = np.asarray(result_image(ctx, obs)).astype(np.int16)
    x1, y1, x2, y2 = changed_region(before, after) or (0, 0, 0, 0)
    assert (x1, x2, y2) == (150, 350, 400)
    assert y1 < 200 - 5  # the label is drawn above the box
    label = after[y1:195, 150:350]
    red = (label[:, :, 0] > 200) & (label[:, :, 1] < 60) & (label[:, :, 2] < 60)
    assert red.sum() > 30


def test_drawbox_label_moves_inside_at_the_top_edge(ctx: ToolContext) -> None:
    before = pixels(ctx, "image/astronaut.jpg")
    obs = call(ctx, "DrawBox", image="image/astronaut.jpg", bbox="(150, 0, 350, 200)", annotation="helmet")
    after = np.asarray(result_image(ctx, obs)).astype(np.int16)
    assert changed_region(before, after) == (150, 0, 350, 200)


@pytest.mark.parametrize(
    "bbox",
    [
        "(40, 50, 140, 150)",
        "[40, 50, 140, 150]",
        "40 50 140 150",
        "40,50,140,150",
        "(40.2, 49.8, 140, 150.0)",
    ],
)
def test_drawbox_bbox_spellings(ctx: ToolContext, bbox: str) -> None:
    reference = call(ctx, "DrawBox", image="image/chelsea.jpg", bbox="(40, 50, 140, 150)")
    obs = call(ctx, "DrawBox", image="image/chelsea.jpg", bbox=bbox)
    assert obs.type == "tool_result", obs.text
    assert obs.files[0].sha256 == reference.files[0].sha256


def test_drawbox_is_deterministic(ctx: ToolContext) -> None:
    args = {"image": "image/receipt.png", "bbox": "(10, 10, 100, 100)", "annotation": "x"}
    first = call(ctx, "DrawBox", **args)
    other = FileStore()  # an unrelated store and a fresh run
    other.put_path(IMAGES / "receipt.png", name="image/receipt.png")
    second = TOOLS.call(ToolCall(name="DrawBox", arguments=args), ToolContext(files=other))
    assert first.files[0].sha256 == second.files[0].sha256  # byte-identical PNGs
    assert first.content["name"].startswith("image/receipt_box_")


def test_drawbox_on_greyscale_gives_colour(ctx: ToolContext) -> None:
    obs = call(ctx, "DrawBox", image="image/page.png", bbox="(0, 0, 100, 40)")
    out = result_image(ctx, obs)
    assert out.mode == "RGB" and out.size == (384, 191)
    assert out.getpixel((50, 0)) == (255, 0, 0)


def test_drawbox_keeps_transparency(ctx: ToolContext) -> None:
    buf = io.BytesIO()
    Image.new("RGBA", (64, 48), (0, 128, 0, 0)).save(buf, format="PNG")
    ctx.files.put_bytes(buf.getvalue(), name="image/clear.png")
    out = result_image(ctx, call(ctx, "DrawBox", image="image/clear.png", bbox="(8, 8, 40, 40)"))
    assert out.mode == "RGBA"
    assert out.getpixel((0, 0)) == (0, 128, 0, 0)
    assert out.getpixel((8, 20)) == (255, 0, 0, 255)


@pytest.mark.parametrize(
    ("bbox", "fragment"),
    [
        ("(1, 2, 3)", "expected 4 numbers"),
        ("(1, 2, 3, 4, 5)", "expected 4 numbers"),
        ("(a, b, c, d)", "expected 4 numbers"),
        ("", "expected 4 numbers"),
        ("1e999, 0, 10, 10", "finite"),
        ("(10, 10, 5, 20)", "x1 < x2"),
        ("(10, 30, 20, 10)", "y1 < y2"),
        ("(10, 10, 10, 20)", "x1 < x2"),
        ("(-5, 0, 10, 10)", "outside the image"),
        ("(0, 0, 521, 10)", "outside the image"),
        ("(0, 0, 10, 761)", "outside the image"),
    ],
)
def test_drawbox_bad_bbox(ctx: ToolContext, bbox: str, fragment: str) -> None:
    obs = call(ctx, "DrawBox", image="image/receipt.png", bbox=bbox)
    assert obs.error_kind == ErrorKind.TOOL_ERROR
    assert fragment in obs.text


def test_drawbox_bbox_on_the_border_is_allowed(ctx: ToolContext) -> None:
    out = result_image(ctx, call(ctx, "DrawBox", image="image/receipt.png", bbox="(0, 0, 520, 760)"))
    assert out.getpixel((519, 759)) == (255, 0, 0)


def test_drawbox_argument_errors(ctx: ToolContext) -> None:
    assert call(ctx, "DrawBox", image="image/receipt.png").error_kind == ErrorKind.ARGUMENT_ERROR
    assert (
        call(ctx, "DrawBox", image="image/nope.png", bbox="(0, 0, 1, 1)").error_kind
        == ErrorKind.ARGUMENT_ERROR
    )
    ctx.files.put_bytes(b"hello", name="notes.txt")
    assert call(ctx, "DrawBox", image="notes.txt", bbox="(0, 0, 1, 1)").error_kind == ErrorKind.ARGUMENT_ERROR


def test_corrupt_image_is_a_tool_error(ctx: ToolContext) -> None:
    ctx.files.put_bytes(b"\x89PNG\r\n\x1a\nnot really", name="image/broken.png")
    obs = call(ctx, "DrawBox", image="image/broken.png", bbox="(0, 0, 1, 1)")
    assert obs.error_kind == ErrorKind.TOOL_ERROR and "cannot read image" in obs.text
    obs = call(ctx, "AddText", image="image/broken.png", text="hi", position="mm")
    assert obs.error_kind == ErrorKind.TOOL_ERROR


# ---- AddText ------------------------------------------------------------------------------------
def test_addtext_middle_top(ctx: ToolContext) -> None:
    before = pixels(ctx, "image/astronaut.jpg")
    out = result_image(
        ctx, call(ctx, "AddText", image="image/astronaut.jpg", text="Hello space", position="mt")
    )
    assert out.size == (512, 512)
    after = np.asarray(out).astype(np.int16)
    x1, y1, x2, y2 = changed_region(before, after) or (0, 0, 0, 0)
    margin = 512 // 20
    assert abs((x1 + x2) / 2 - 256) <= 3  # centred
    assert margin - 2 <= y1 <= margin + 3  # hangs from the top margin
    assert 20 <= y2 - y1 <= 40 and 100 <= x2 - x1 <= 200
    changed = np.any(before != after, axis=2)
    strongly_red = (after[:, :, 0] > 200) & (after[:, :, 1] < 80) & (after[:, :, 2] < 80)
    assert (changed & strongly_red).sum() > 100


def test_addtext_point_is_the_bottom_left_corner(ctx: ToolContext) -> None:
    before = pixels(ctx, "image/receipt.png")
    obs = call(ctx, "AddText", image="image/receipt.png", text="PAID", position="(300, 700)", color="blue")
    after = np.asarray(result_image(ctx, obs)).astype(np.int16)
    x1, y1, x2, y2 = changed_region(before, after) or (0, 0, 0, 0)
    assert 300 <= x1 <= 306 and 699 <= y2 <= 701  # a glyph may have a few px of side bearing
    assert y1 > 640 and x2 < 520
    region = after[y1:y2, x1:x2]
    blue = (region[:, :, 2] > 200) & (region[:, :, 0] < 60) & (region[:, :, 1] < 60)
    assert blue.sum() > 50


@pytest.mark.parametrize("code", ["lt", "lm", "lb", "mt", "mm", "mb", "rt", "rm", "rb"])
def test_addtext_all_named_positions_stay_inside(ctx: ToolContext, code: str) -> None:
    before = pixels(ctx, "image/receipt.png")
    obs = call(ctx, "AddText", image="image/receipt.png", text="SAMPLE", position=code, color="#00aa00")
    after = np.asarray(result_image(ctx, obs)).astype(np.int16)
    x1, y1, x2, y2 = changed_region(before, after) or (0, 0, 0, 0)
    w, h, m = 520, 760, 520 // 20
    horizontal = {"l": (x1, m), "m": ((x1 + x2) // 2, w // 2), "r": (x2, w - m)}[code[0]]
    vertical = {"t": (y1, m), "m": ((y1 + y2) // 2, h // 2), "b": (y2, h - m)}[code[1]]
    assert abs(horizontal[0] - horizontal[1]) <= 3
    assert abs(vertical[0] - vertical[1]) <= 3


@pytest.mark.parametrize(
    ("spelling", "code"),
    [
        ("tm", "mt"),
        ("top", "mt"),
        ("top-left", "lt"),
        ("upper right", "rt"),
        ("center", "mm"),
        ("BL", "lb"),
        ("ml", "lm"),
    ],
)
def test_addtext_position_spellings(spelling: str, code: str) -> None:
    assert named_position(spelling) == code


def test_addtext_multiline_and_determinism(ctx: ToolContext) -> None:
    args = {
        "image": "image/chelsea.jpg",
        "text": "line one\nline two",
        "position": "(10, 290)",
        "color": "yellow",
    }
    first = call(ctx, "AddText", **args)
    second = call(ctx, "AddText", **args)
    assert first.type == "tool_result", first.text
    assert first.files[0].sha256 == second.files[0].sha256
    # chaining: the produced image is a valid input
    third = call(ctx, "DrawBox", image=first.files[0].ref, bbox="(0, 0, 50, 50)")
    assert third.type == "tool_result"


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"position": "xx"}, "invalid position"),
        ({"position": "lr"}, "invalid position"),
        ({"position": "(1, 2, 3)"}, "expected 2 numbers"),
        ({"position": "(5000, 3)"}, "outside the image"),
        ({"position": "(-1, 3)"}, "outside the image"),
        ({"position": "mt", "color": "blurple"}, "unknown colour"),
        ({"position": "mt", "text": "   "}, "empty"),
        ({"position": "mt", "text": "x" * 1001}, "too long"),
    ],
)
def test_addtext_bad_input(ctx: ToolContext, arguments: dict[str, str], fragment: str) -> None:
    obs = call(ctx, "AddText", **{"image": "image/receipt.png", "text": "hi", **arguments})
    assert obs.error_kind == ErrorKind.TOOL_ERROR
    assert fragment in obs.text


def test_schemas_match_gta_toolmeta() -> None:
    if not GTA_TOOLMETA.exists():
        pytest.skip("GTA toolmeta.json not present")
    gta = json.loads(GTA_TOOLMETA.read_text())
    ours = TOOLS.to_agentlego_toolmeta()
    assert ours["DrawBox"] == gta["DrawBox"]
    assert ours["AddText"] == gta["AddText"]
    assert drawbox.category == addtext.category == "operation"
