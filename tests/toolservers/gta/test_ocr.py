"""GTA OCR with the real RapidOCR backend on the fixture images (no mocks of our code).

EXPECTED pins what the default backend reads on each text fixture: the text exactly, the box to a
few pixels (onnxruntime builds may differ by a pixel or two). Tasks are written against these.
"""

from __future__ import annotations

import io
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

import toolgym.fixtures
from tests.shared_data import GTA_TOOLMETA
from toolgym.actions import Observation, ToolCall
from toolgym.errors import ErrorKind
from toolgym.files import FileStore
from toolgym.tools import ToolContext, ToolSet
from toolgym.toolservers.gta.drawing import addtext
from toolgym.toolservers.gta.ocr import (
    OCRBackend,
    OCRLine,
    RapidOCRBackend,
    TesseractBackend,
    clear_memory_cache,
    default_backend,
    make_ocr_tool,
    ocr,
    reading_order,
    recognize_cached,
)

IMAGES = Path(toolgym.fixtures.__file__).parent / "images"

LINE = re.compile(r"^\((\d+), (\d+), (\d+), (\d+)\) (.+)$")
BOX_TOLERANCE = 6

Expected = list[tuple[tuple[int, int, int, int], str]]
EXPECTED: dict[str, Expected] = {
    "receipt.png": [
        ((95, 35, 426, 67), "GREEN LEAF CAFE"),
        ((158, 88, 364, 114), "12 Harbour Street"),
        ((159, 123, 360, 149), "Date: 2024-03-15"),
        ((34, 200, 191, 234), "Cappuccino"),
        ((421, 199, 488, 232), "4.50"),
        ((31, 250, 225, 283), "Avocado Toast"),
        ((421, 250, 486, 283), "9.75"),
        ((32, 304, 205, 337), "Orange Juice"),
        ((421, 303, 486, 335), "3.25"),
        ((32, 356, 254, 389), "Blueberry Muffin"),
        ((421, 355, 486, 388), "3.00"),
        ((32, 409, 249, 441), "Sparkling Water"),
        ((421, 408, 486, 440), "3.00"),
        ((31, 488, 145, 522), "TOTAL"),
        ((385, 488, 488, 522), "23.50"),
        ((31, 550, 107, 582), "CASH"),
        ((411, 550, 486, 582), "30.00"),
        ((31, 596, 142, 626), "CHANGE"),
        ((427, 596, 489, 628), "6.50"),
        ((183, 695, 336, 728), "Thank you!"),
    ],
    "sign.png": [
        ((63, 90, 581, 147), "LAKESIDE PARK"),
        ((150, 207, 490, 250), "OPEN 7AM - 9PM"),
    ],
    "fish_oil.png": [
        ((100, 14, 498, 54), "OMEGA-3 FISH OIL"),
        ((186, 112, 413, 170), "1000 mg"),
        ((84, 201, 516, 254), "290 SOFTGELS"),
        ((150, 307, 447, 350), "Take 1 softgel daily"),
    ],
    "math_problem.png": [
        ((34, 39, 578, 76), "A train travels 120 km in 2 hours."),
        ((35, 103, 607, 141), "At the same speed, how far does it"),
        ((36, 169, 323, 203), "travel in 5 hours?"),
    ],
    "memo.png": [
        ((49, 55, 377, 88), "MEETING NOTICE"),
        ((48, 140, 556, 177), "The quarterly review will be held on"),
        ((49, 199, 580, 232), "Friday, June 14 at 10:30 in Room 204."),
        ((47, 252, 521, 292), "Please bring your project reports."),
        ((48, 310, 499, 346), "Contact: Maria Lopez, ext. 5521"),
    ],
}


@pytest.fixture(scope="module")
def store() -> FileStore:
    store = FileStore()
    for path in sorted(IMAGES.iterdir()):
        if path.suffix in (".png", ".jpg"):
            store.put_path(path, name=f"image/{path.name}")
    return store


def run_ocr(store: FileStore, image: str, tools: ToolSet | None = None) -> Observation:
    return (tools or ToolSet([ocr])).call(
        ToolCall(name="OCR", arguments={"image": image}), ToolContext(files=store)
    )


def parse(text: str) -> list[tuple[tuple[int, int, int, int], str]]:
    out = []
    for line in text.splitlines():
        m = LINE.match(line)
        assert m, f"badly formed OCR line {line!r}"
        x1, y1, x2, y2 = (int(v) for v in m.group(1, 2, 3, 4))
        out.append(((x1, y1, x2, y2), m.group(5)))
    return out


def image_size(name: str) -> tuple[int, int]:
    with Image.open(IMAGES / name) as img:
        return img.size


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_reads_fixture_text(store: FileStore, name: str) -> None:
    obs = run_ocr(store, f"image/{name}")
    assert obs.type == "tool_result", obs.text
    got = parse(obs.text)
    assert [t for _, t in got] == [t for _, t in EXPECTED[name]]
    w, h = image_size(name)
    for (box, text), (want, _) in zip(got, EXPECTED[name], strict=True):
        x1, y1, x2, y2 = box
        assert 0 <= x1 < x2 <= w and 0 <= y1 < y2 <= h, (text, box)
        assert all(abs(a - b) <= BOX_TOLERANCE for a, b in zip(box, want, strict=True)), (text, box, want)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_output_is_in_reading_order(store: FileStore, name: str) -> None:
    got = parse(run_ocr(store, f"image/{name}").text)
    centres = [(y1 + y2) / 2 for (_, y1, _, y2), _ in got]
    # rows go down the page; within a row (centres closer than 10 px) boxes go left to right
    for i in range(1, len(got)):
        if abs(centres[i] - centres[i - 1]) < 10:
            assert got[i][0][0] > got[i - 1][0][0]
        else:
            assert centres[i] > centres[i - 1]


def test_fish_oil_count_feeds_the_calculator(store: FileStore) -> None:
    text = run_ocr(store, "image/fish_oil.png").text
    assert re.search(r"\b290 SOFTGELS\b", text)


def test_scanned_page(store: FileStore) -> None:
    """skimage's page(): a low-resolution scan; the heading and the code line read cleanly."""
    got = parse(run_ocr(store, "image/page.png").text)
    texts = [t for _, t in got]
    assert texts[0] == "Region-based segmentation"
    assert ">> markers = np.zeros_like(coins)" in texts
    assert any("the markers are found at the two extreme parts of the" in t for t in texts)
    for (x1, y1, x2, y2), _ in got:
        assert 0 <= x1 < x2 <= 384 and 0 <= y1 < y2 <= 191


@pytest.mark.parametrize("name", ["astronaut.jpg", "coffee.jpg", "chelsea.jpg"])
def test_photos_give_well_formed_output(store: FileStore, name: str) -> None:
    obs = run_ocr(store, f"image/{name}")
    assert obs.type == "tool_result"
    parse(obs.text)  # may be empty: these photos hold no legible text


def test_engine_is_built_once_and_reused(store: FileStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLGYM_CACHE", "0")  # a cached result would never build the engine
    run_ocr(store, "image/sign.png")
    engine = default_backend._engine
    assert engine is not None
    run_ocr(store, "image/sign.png")
    assert default_backend._engine is engine


def spinning_option(part: Any) -> str | None:
    """A RapidOCR model's onnxruntime `allow_spinning` option; None when unset (spinning is
    onnxruntime's default)."""
    options = part.session.session.get_session_options()
    try:
        return str(options.get_session_config_entry("session.intra_op.allow_spinning"))
    except RuntimeError:
        return None


def test_sessions_sleep_instead_of_spinning_and_read_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's ONNX sessions are made with onnxruntime's spin-waiting off, RapidOCR's option
    builder is left as it was, and an engine whose sessions spin (RapidOCR's default) reads
    every fixture image exactly as ours does."""
    from rapidocr import RapidOCR
    from rapidocr.inference_engine.onnxruntime.main import OrtInferSession

    monkeypatch.setenv("TOOLGYM_CACHE", "0")
    builder = OrtInferSession.__dict__["_init_sess_opts"]
    backend = RapidOCRBackend()
    engine = backend._get_engine()
    assert OrtInferSession.__dict__["_init_sess_opts"] is builder
    assert [spinning_option(p) for p in (engine.text_det, engine.text_cls, engine.text_rec)] == ["0"] * 3
    models = backend.bundled_models()
    assert models is not None
    spinning = RapidOCR(
        params={**backend.params, **{f"{task}.model_path": str(path) for task, path in models.items()}}
    )
    backend._engine = spinning  # the same backend code around RapidOCR's own lazily made sessions
    theirs = {name: backend.recognize(IMAGES / name) for name in sorted(EXPECTED)}
    assert spinning_option(spinning.text_det) is None
    backend._engine = engine
    assert {name: backend.recognize(IMAGES / name) for name in sorted(EXPECTED)} == theirs


def test_addtext_then_ocr_round_trip(store: FileStore) -> None:
    buf = io.BytesIO()
    Image.new("RGB", (640, 672), "white").save(buf, format="PNG")
    store.put_bytes(buf.getvalue(), name="image/blank.png")
    tools = ToolSet([ocr, addtext])
    ctx = ToolContext(files=store)
    written = tools.call(
        ToolCall(
            name="AddText", arguments={"image": "image/blank.png", "text": "HELLO 42", "position": "mm"}
        ),
        ctx,
    )
    assert written.type == "tool_result", written.text
    got = parse(run_ocr(store, written.files[0].ref, tools).text)
    assert [t for _, t in got] == ["HELLO 42"]
    (x1, y1, x2, y2), _ = got[0]
    assert abs((x1 + x2) / 2 - 320) < 10 and abs((y1 + y2) / 2 - 336) < 10


def test_corrupt_image_is_a_tool_error(store: FileStore) -> None:
    store.put_bytes(b"\xff\xd8\xff\xe0 truncated", name="image/broken.jpg")
    obs = run_ocr(store, "image/broken.jpg")
    assert obs.error_kind == ErrorKind.TOOL_ERROR and "cannot read image" in obs.text


def test_unknown_image_is_an_argument_error(store: FileStore) -> None:
    assert run_ocr(store, "image/missing.png").error_kind == ErrorKind.ARGUMENT_ERROR


# ---- backends -------------------------------------------------------------------------------------------
class FixedBackend:
    """A tiny real backend: returns the same lines in scrambled order."""

    name = "fixed"

    def __init__(self, lines: list[OCRLine], installed: bool = True) -> None:
        self.lines = lines
        self.installed = installed

    def available(self) -> bool:
        return self.installed

    def recognize(self, path: Path) -> list[OCRLine]:
        return list(self.lines)


def test_backends_satisfy_the_protocol() -> None:
    assert isinstance(RapidOCRBackend(), OCRBackend)
    assert isinstance(TesseractBackend(), OCRBackend)
    assert isinstance(FixedBackend([]), OCRBackend)
    assert RapidOCRBackend().available()


def test_availability_check_is_cheap_for_the_default_models() -> None:
    """Asking whether OCR can run must not load rapidocr's model table (about a second); a
    recognition still resolves the exact model files."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from toolgym.toolservers.gta.ocr import RapidOCRBackend\n"
        "backend = RapidOCRBackend()\n"
        "assert backend.available()\n"
        "print(sorted(m for m in sys.modules if m.startswith('rapidocr')))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    backend = RapidOCRBackend()
    assert backend.available() and backend._models is None  # nothing resolved yet
    models = backend.bundled_models()
    assert models is not None and set(models) == {"Det", "Rec", "Cls"}


def test_custom_backend_and_reading_order(store: FileStore) -> None:
    lines = [
        OCRLine((300, 101, 360, 130), "9.99", 0.9),  # a pixel higher than its item: same row
        OCRLine((10, 10, 200, 40), "HEADER", 0.99),
        OCRLine((10, 102, 150, 131), "Item", 0.95),
        OCRLine((10, 200, 90, 230), "End", 0.97),
    ]
    tool = make_ocr_tool(FixedBackend(lines[::-1]))
    assert tool.backend == "fixed"
    obs = run_ocr(store, "image/sign.png", ToolSet([tool]))
    assert obs.text == "\n".join(
        [
            "(10, 10, 200, 40) HEADER",
            "(10, 102, 150, 131) Item",
            "(300, 101, 360, 130) 9.99",
            "(10, 200, 90, 230) End",
        ]
    )
    assert [ln.text for ln in reading_order(lines)] == ["HEADER", "Item", "9.99", "End"]


def test_rapidocr_never_downloads(store: FileStore) -> None:
    """A model config whose files are not in the wheel is reported, not fetched."""
    from rapidocr.utils.typings import ModelType

    backend = RapidOCRBackend({"Det.model_type": ModelType.MEDIUM})
    assert not backend.available()
    obs = run_ocr(store, "image/sign.png", ToolSet([make_ocr_tool(backend)]))
    assert obs.error_kind == ErrorKind.TOOL_ERROR and "'rapidocr' is not installed" in obs.text
    assert backend._engine is None
    model_dir = RapidOCRBackend.model_dir()
    assert model_dir is not None and not any(model_dir.glob("*medium*"))


def test_unavailable_backend_is_a_tool_error(store: FileStore) -> None:
    obs = run_ocr(store, "image/sign.png", ToolSet([make_ocr_tool(FixedBackend([], installed=False))]))
    assert obs.error_kind == ErrorKind.TOOL_ERROR and "'fixed' is not installed" in obs.text


def test_tesseract_backend() -> None:
    backend = TesseractBackend()
    if not backend.available():
        store = FileStore()
        store.put_path(IMAGES / "sign.png", name="image/sign.png")
        obs = run_ocr(store, "image/sign.png", ToolSet([make_ocr_tool(backend)]))
        assert obs.error_kind == ErrorKind.TOOL_ERROR and "tesseract-ocr" in obs.text
        pytest.skip("pytesseract/tesseract not installed")
    texts = [ln.text for ln in reading_order(backend.recognize(IMAGES / "sign.png"))]
    assert "LAKESIDE PARK" in texts


def test_fixture_script_lists_every_image() -> None:
    from scripts.make_images import IMAGES as MADE

    on_disk = {p.name for p in IMAGES.iterdir() if p.suffix in (".png", ".jpg")}
    assert set(MADE) == on_disk
    assert sum((IMAGES / n).stat().st_size for n in on_disk) < 1_000_000
    assert all((IMAGES / n).stat().st_size < 100_000 for n in on_disk if n.endswith(".jpg"))


def test_schema_matches_gta_toolmeta() -> None:
    if not GTA_TOOLMETA.exists():
        pytest.skip("GTA toolmeta.json not present")
    gta = json.loads(GTA_TOOLMETA.read_text())["OCR"]
    assert ToolSet([ocr]).to_agentlego_toolmeta()["OCR"] == gta
    assert ocr.category == "perception"


def test_drawn_box_does_not_hide_text(store: FileStore) -> None:
    """A translucent DrawBox over the total keeps it readable: GTA chains OCR -> DrawBox."""
    from toolgym.toolservers.gta.drawing import drawbox

    tools = ToolSet([ocr, drawbox])
    ctx = ToolContext(files=store)
    boxed = tools.call(
        ToolCall(name="DrawBox", arguments={"image": "image/receipt.png", "bbox": "(31, 488, 488, 522)"}), ctx
    )
    texts = [t for _, t in parse(run_ocr(store, boxed.files[0].ref, tools).text)]
    assert "TOTAL" in texts and "23.50" in texts


def test_exif_rotation_is_applied_by_ocr_and_drawbox(store: FileStore) -> None:
    """A phone photo stored sideways with an EXIF orientation tag: both tools see it upright,
    so an OCR box can be passed straight to DrawBox."""
    from toolgym.toolservers.gta.drawing import drawbox

    with Image.open(IMAGES / "sign.png") as upright:
        sideways = upright.convert("RGB").transpose(Image.Transpose.ROTATE_90)
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation: rotate 90° clockwise to display
    buf = io.BytesIO()
    sideways.save(buf, format="JPEG", quality=95, exif=exif)
    store.put_bytes(buf.getvalue(), name="image/sideways.jpg")
    tools = ToolSet([ocr, drawbox])
    got = parse(run_ocr(store, "image/sideways.jpg", tools).text)
    assert [t for _, t in got] == ["LAKESIDE PARK", "OPEN 7AM - 9PM"]
    box = got[0][0]
    boxed = tools.call(
        ToolCall(name="DrawBox", arguments={"image": "image/sideways.jpg", "bbox": str(box)}),
        ToolContext(files=store),
    )
    assert boxed.type == "tool_result", boxed.text
    with Image.open(store.get(boxed.files[0]).path) as out:
        assert out.size == (640, 360)


# ---- the result cache ---------------------------------------------------------------------------------------
class CountingRapidOCR(RapidOCRBackend):
    """The real RapidOCR backend, counting the recognitions it actually runs."""

    def __init__(self, params: dict[str, object] | None = None) -> None:
        super().__init__(params)
        self.runs = 0

    def recognize(self, path: Path) -> list[OCRLine]:
        self.runs += 1
        return super().recognize(path)


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "cache"
    monkeypatch.setenv("TOOLGYM_CACHE_DIR", str(folder))
    monkeypatch.delenv("TOOLGYM_CACHE", raising=False)
    clear_memory_cache()
    yield folder
    clear_memory_cache()


def ocr_entries(cache_dir: Path) -> list[Path]:
    return sorted(p for p in (cache_dir / "ocr").rglob("*") if p.is_file())


def test_cache_hit_returns_the_same_lines_without_running_the_engine(cache_dir: Path) -> None:
    backend = CountingRapidOCR()
    first = recognize_cached(backend, IMAGES / "sign.png")
    assert first == backend.recognize(IMAGES / "sign.png")  # what the engine itself reads
    assert [ln.text for ln in first] == ["LAKESIDE PARK", "OPEN 7AM - 9PM"]
    runs = backend.runs
    assert recognize_cached(backend, IMAGES / "sign.png") == first  # in this process
    clear_memory_cache()
    other = CountingRapidOCR()  # a new engine, as in a new process: answered from disk
    assert recognize_cached(other, IMAGES / "sign.png") == first
    assert backend.runs == runs and other.runs == 0
    assert len(ocr_entries(cache_dir)) == 1


def test_the_same_bytes_under_another_name_hit(cache_dir: Path, tmp_path: Path) -> None:
    backend = CountingRapidOCR()
    copy = tmp_path / "copy.png"
    shutil.copyfile(IMAGES / "sign.png", copy)
    assert recognize_cached(backend, IMAGES / "sign.png") == recognize_cached(backend, copy)
    assert backend.runs == 1


def test_another_image_or_config_misses(cache_dir: Path, tmp_path: Path) -> None:
    backend = CountingRapidOCR()
    sign = recognize_cached(backend, IMAGES / "sign.png")
    edited = tmp_path / "sign.png"
    with Image.open(IMAGES / "sign.png") as img:
        img.convert("RGB").crop((0, 0, img.width, img.height // 2)).save(edited)  # the top line only
    top = recognize_cached(backend, edited)
    assert backend.runs == 2 and [ln.text for ln in top] == ["LAKESIDE PARK"] != [ln.text for ln in sign]
    smaller = CountingRapidOCR({"Det.limit_side_len": 320})
    assert smaller.cache_identity() != backend.cache_identity()
    recognize_cached(smaller, IMAGES / "sign.png")
    assert smaller.runs == 1
    assert len(ocr_entries(cache_dir)) == 3


def test_disabled_cache_runs_the_engine_every_time(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLGYM_CACHE", "0")
    backend = CountingRapidOCR()
    assert recognize_cached(backend, IMAGES / "sign.png") == recognize_cached(backend, IMAGES / "sign.png")
    assert backend.runs == 2 and ocr_entries(cache_dir) == []


@pytest.mark.parametrize("damage", ["truncate", "flip", "valid-but-not-lines"])
def test_a_damaged_entry_is_recomputed_and_replaced(cache_dir: Path, damage: str) -> None:
    backend = CountingRapidOCR()
    good = recognize_cached(backend, IMAGES / "sign.png")
    (entry,) = ocr_entries(cache_dir)
    data = entry.read_bytes()
    if damage == "truncate":
        entry.write_bytes(data[:-7])
    elif damage == "flip":
        entry.write_bytes(data[:-3] + bytes([data[-3] ^ 0xFF]) + data[-2:])
    else:  # checksum right, payload not OCR lines
        from toolgym.cache import DiskCache

        DiskCache("ocr").put(entry.name, b'{"not": "lines"}')
    clear_memory_cache()
    assert recognize_cached(backend, IMAGES / "sign.png") == good
    assert backend.runs == 2
    assert entry.read_bytes() == data  # rewritten whole


def test_backends_without_an_identity_are_not_cached(cache_dir: Path) -> None:
    class Counting(FixedBackend):
        runs = 0

        def recognize(self, path: Path) -> list[OCRLine]:
            self.runs += 1
            return super().recognize(path)

    backend = Counting([OCRLine((1, 2, 3, 4), "x", 1.0)])
    recognize_cached(backend, IMAGES / "sign.png")
    recognize_cached(backend, IMAGES / "sign.png")
    assert backend.runs == 2 and ocr_entries(cache_dir) == []


def test_the_tool_answers_from_the_cache_as_from_the_engine(
    cache_dir: Path, store: FileStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = CountingRapidOCR()
    tools = ToolSet([make_ocr_tool(backend)])
    first = run_ocr(store, "image/receipt.png", tools)
    again = run_ocr(store, "image/receipt.png", tools)
    monkeypatch.setenv("TOOLGYM_CACHE", "0")
    uncached = run_ocr(store, "image/receipt.png", tools)
    assert backend.runs == 2
    assert first.text == again.text == uncached.text and "23.50" in first.text
