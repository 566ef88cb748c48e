"""verify: re-execute golden traces; drifts are named by step and field; tolerant comparison of
text (edit distance) and images (perceptual hash) for tools whose backends may change."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Annotated

import numpy as np
import pytest
from PIL import Image as PILImage
from PIL import ImageDraw

import toolgym.fixtures
from toolgym import (
    AnswerSpec,
    FileStore,
    FinalAnswer,
    GoldenStep,
    Image,
    Task,
    TaskFile,
    TaskSet,
    ToolCall,
    ToolSet,
    tool,
)
from toolgym.canonical import canonical_json
from toolgym.files import FileHandle
from toolgym.recorder.cassette import Cassette
from toolgym.recorder.golden import EnvPool, TaskIndex, record_golden
from toolgym.recorder.verify import Tolerance, VerifyResult, image_distance, text_distance, verify_trace
from toolgym.tools import FileParam, ToolContext

IMAGES = Path(toolgym.fixtures.__file__).parent / "images"
ImageOut = Annotated[FileHandle, FileParam("image")]


def _png(img: PILImage.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def make_tools(*, read_suffix: str = "", paint_mode: str = "same") -> ToolSet:
    """Read (text out), Paint (image out) and Size (image in); `read_suffix` / `paint_mode` drift them."""

    @tool(name="Read", category="perception")
    def read(image: Image) -> str:
        """Text of the image (a stand-in for OCR)."""
        with PILImage.open(image.path) as img:
            return f"GREEN LEAF CAFE {img.size[0]}x{img.size[1]}" + read_suffix

    @tool(name="Paint", category="operation")
    def paint(image: Image, ctx: ToolContext) -> ImageOut:
        """Draw a red box on the image."""
        with PILImage.open(image.path) as src:
            img = src.convert("RGB")
        ImageDraw.Draw(img).rectangle((30, 480, 490, 525), outline=(255, 0, 0), width=4)
        if paint_mode == "slightly":  # another backend: a few pixels differ
            pixels = np.asarray(img).copy()
            pixels[:3, :3] = 0
            img = PILImage.fromarray(pixels)
        elif paint_mode == "other":
            img = PILImage.fromarray(255 - np.asarray(img)).rotate(90)
        return ctx.files.put_bytes(_png(img), name="painted.png", media_type="image/png")

    @tool(name="Size", category="perception")
    def size(image: Image) -> str:
        """Width and height of the image."""
        with PILImage.open(image.path) as img:
            return f"{img.size[0]}x{img.size[1]}"

    return ToolSet([read, paint, size])


def painted_ref() -> str:
    store = FileStore()
    store.put_path(IMAGES / "receipt.png", name="image/receipt.png")
    obs = make_tools().call(
        ToolCall(name="Paint", arguments={"image": "image/receipt.png"}), ToolContext(files=store)
    )
    return obs.files[0].ref


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("verify")
    shutil.copy(IMAGES / "receipt.png", root / "receipt.png")
    task = Task(
        id="paint-and-measure",
        query="Read the receipt, box the total, and tell me the size of the boxed image.",
        files=[TaskFile(name="image/receipt.png", path="receipt.png")],
        tools=["Read", "Paint", "Size"],
        golden=[
            GoldenStep(action=ToolCall(name="Read", arguments={"image": "image/receipt.png"})),
            GoldenStep(action=ToolCall(name="Paint", arguments={"image": "image/receipt.png"})),
            GoldenStep(action=ToolCall(name="Size", arguments={"image": painted_ref()})),
            GoldenStep(action=FinalAnswer(text="It is 520x760.")),
        ],
        answer=AnswerSpec(whitelist=[["520x760"]]),
    )
    TaskSet([task]).dump(root / "shop.jsonl")
    report = record_golden([root / "shop.jsonl"], root / "golden", toolset=make_tools())
    assert report.results[0][1].reward == 1.0, report.results
    return root


def check(
    golden: Path, tools: ToolSet, tolerance: Tolerance | None = None, *, reference: bool = True
) -> VerifyResult:
    trace = golden / "golden" / "shop" / "paint-and-measure.seed0.jsonl"
    pool = EnvPool(tools)
    ref = Cassette(golden / "golden" / "cassette.sqlite", mode="replay") if reference else None
    try:
        return verify_trace(
            trace, pool, TaskIndex([golden / "shop.jsonl"]), tolerance=tolerance, reference=ref
        )
    finally:
        pool.close()
        if ref is not None:
            ref.close()


def test_unchanged_tools_verify_identical(golden: Path) -> None:
    result = check(golden, make_tools())
    assert result.ok and result.error is None
    assert [s.index for s in result.steps] == [1, 2, 3, 4] and all(s.identical for s in result.steps)


def test_changed_text_is_named_by_step_and_field(golden: Path) -> None:
    result = check(golden, make_tools(read_suffix="!"))
    assert not result.ok
    drift = result.first_drift
    assert drift is not None and (drift.step, drift.field) == (1, "observations[0].content")
    assert drift.expected == "GREEN LEAF CAFE 520x760" and drift.got == "GREEN LEAF CAFE 520x760!"
    text = drift.describe()
    assert text.startswith("step 1: observations[0].content")
    assert "-GREEN LEAF CAFE 520x760\n" in text and "+GREEN LEAF CAFE 520x760!" in text
    assert [s.identical for s in result.steps] == [False, True, True, True]


def test_text_tolerance_accepts_small_edits_of_the_named_tools_only(golden: Path) -> None:
    drifted = make_tools(read_suffix="!")
    accepted = check(golden, drifted, Tolerance(text=0.1, tools=frozenset({"Read"})))
    assert accepted.ok and accepted.steps[0].tolerated and not accepted.steps[0].identical
    assert not check(golden, drifted, Tolerance(text=0.1, tools=frozenset({"Paint"}))).ok
    tight = check(golden, drifted, Tolerance(text=0.01))
    assert not tight.ok and tight.first_drift is not None and "edit distance" in tight.first_drift.note


def test_image_tolerance_uses_perceptual_distance_and_keeps_later_steps_working(golden: Path) -> None:
    slightly = make_tools(paint_mode="slightly")
    strict = check(golden, slightly)
    assert not strict.ok and strict.first_drift is not None and strict.first_drift.step == 2
    # within tolerance: step 2 passes, and step 3, which names the golden image by its old
    # handle, still finds the (new) image and matches
    tolerant = check(golden, slightly, Tolerance(image=6))
    assert tolerant.ok, [d.describe() for d in tolerant.drifts]
    assert tolerant.steps[1].tolerated and tolerant.steps[2].identical
    other = check(golden, make_tools(paint_mode="other"), Tolerance(image=6))
    assert not other.ok and other.first_drift is not None and "perceptual distance" in other.first_drift.note
    blind = check(golden, slightly, Tolerance(image=6), reference=False)
    assert (
        not blind.ok and blind.first_drift is not None and "cannot compare images" in blind.first_drift.note
    )


def test_changed_task_is_a_header_drift(golden: Path, tmp_path: Path) -> None:
    shutil.copytree(golden, tmp_path / "g")
    tasks = TaskSet.load(tmp_path / "g" / "shop.jsonl")
    changed = tasks[0].model_copy(update={"query": "Something else."})
    TaskSet([changed]).dump(tmp_path / "g" / "shop.jsonl")
    result = check(tmp_path / "g", make_tools())
    assert [d.field for d in result.header] == ["task_hash"] and result.steps[0].identical


def test_a_trace_without_its_end_checks_its_steps_and_fails(golden: Path, tmp_path: Path) -> None:
    shutil.copytree(golden, tmp_path / "g")
    trace = tmp_path / "g" / "golden" / "shop" / "paint-and-measure.seed0.jsonl"
    lines = trace.read_text(encoding="utf-8").splitlines(keepends=True)
    trace.write_text("".join(lines[:3]), encoding="utf-8")  # header + 2 steps, no end
    result = check(tmp_path / "g", make_tools())
    assert not result.ok and len(result.steps) == 2 and all(s.identical for s in result.steps)
    assert result.error is None and result.drifts == []
    assert result.incomplete is not None and result.incomplete.startswith(f"{trace}:3: incomplete trace")


def test_state_hash_drift_is_named(mock_golden: Path, tmp_path: Path) -> None:
    source = next(
        p for p in sorted((mock_golden / "ctool").glob("*.jsonl")) if '"state_diff":{"' in p.read_text()
    )
    lines = source.read_text(encoding="utf-8").splitlines()
    index = next(i for i, line in enumerate(lines) if '"state_diff":{"' in line)
    step = json.loads(lines[index])
    step["state_hash_after"] = "0" * 64
    lines[index] = canonical_json(step)
    (tmp_path / "ctool").mkdir()
    edited = tmp_path / "ctool" / source.name
    edited.write_text("\n".join(lines) + "\n", encoding="utf-8")
    from toolgym.toolservers.registry import default_toolset

    pool = EnvPool(default_toolset())
    try:
        result = verify_trace(edited, pool, TaskIndex.for_traces(mock_golden))
    finally:
        pool.close()
    drifts = result.drifts
    assert [(d.step, d.field) for d in drifts] == [(step["index"], "state_hash_after")]
    # the next step's "before" is the same hash: recorded before it, as it really was
    assert drifts[0].expected == "0" * 64 and drifts[0].got != drifts[0].expected


def test_perceptual_and_edit_distances() -> None:
    receipt = (IMAGES / "receipt.png").read_bytes()
    with PILImage.open(IMAGES / "receipt.png") as img:
        buf = io.BytesIO()
        img.convert("RGB").save(buf, format="JPEG", quality=70)
    assert image_distance(receipt, receipt) == 0
    assert image_distance(receipt, buf.getvalue()) <= 4
    assert image_distance(receipt, (IMAGES / "chelsea.jpg").read_bytes()) >= 16
    with pytest.raises(ValueError, match="not a readable image"):
        image_distance(receipt, b"not an image")
    assert text_distance("kitten", "sitting") == pytest.approx(3 / 7)
    assert text_distance("same", "same") == 0.0
