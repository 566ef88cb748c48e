"""GTA's OCR tool over pluggable offline backends.

GTA served OCR with AgentLego's EasyOCR wrapper, which answers one line per text region,
`(x1, y1, x2, y2) text`, with an axis-aligned box in pixels of the input image. This module keeps
that output and swaps the engine: the default backend is RapidOCR 3.x on onnxruntime with the
PP-OCR models that ship inside the `rapidocr` wheel, so it runs on a CPU with no network.
A Tesseract backend is used only if `pytesseract` and the `tesseract` binary are installed.

Lines are ordered top-to-bottom, then left-to-right: regions whose vertical extents overlap by
at least half the smaller height count as one row (so a price printed a pixel higher than its
item does not jump ahead of it).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import shutil
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Final, Protocol, runtime_checkable

import numpy as np
from PIL import Image as PILImage
from PIL import ImageOps, UnidentifiedImageError

from toolgym.cache import DiskCache, cache_enabled, cache_key
from toolgym.errors import ToolError
from toolgym.tools import Image, Tool, tool

DESCRIPTION = "This tool can recognize all text on the input image."
RETURNS_DESCRIPTION = "OCR results, include bbox in x1, y1, x2, y2 format and the recognized text."


@dataclass(frozen=True)
class OCRLine:
    """One recognised text region: an axis-aligned pixel box (x1, y1) top-left, (x2, y2) bottom-right."""

    bbox: tuple[int, int, int, int]
    text: str
    score: float

    def render(self) -> str:
        x1, y1, x2, y2 = self.bbox
        return f"({x1}, {y1}, {x2}, {y2}) {self.text}"


@runtime_checkable
class OCRBackend(Protocol):
    """What the OCR tool needs from an engine. A backend whose results are a pure function of the
    image's bytes may also offer `cache_identity() -> object` (JSON: everything its output depends
    on besides the image); the tool then caches its results (see `recognize_cached`)."""

    @property
    def name(self) -> str: ...

    def available(self) -> bool:
        """True when the engine and its models are installed; must be cheap and never download."""
        ...

    def recognize(self, path: Path) -> list[OCRLine]:
        """Text regions of the image at `path`, in any order; ToolError for unreadable input."""
        ...


def open_rgb(path: Path) -> PILImage.Image:
    """Decode an image (EXIF rotation applied) as RGB, or raise a ToolError."""
    try:
        with PILImage.open(path) as img:
            img.load()
            return ImageOps.exif_transpose(img).convert("RGB")
    except (UnidentifiedImageError, PILImage.DecompressionBombError, OSError, SyntaxError) as exc:
        raise ToolError(f"cannot read image: {exc}") from None


def box_from_points(points: Any, size: tuple[int, int]) -> tuple[int, int, int, int]:
    """The enclosing axis-aligned box of a polygon, clipped to the image."""
    arr = np.asarray(points, dtype=float).reshape(-1, 2)
    w, h = size
    x1 = int(np.clip(np.floor(arr[:, 0].min()), 0, w))
    y1 = int(np.clip(np.floor(arr[:, 1].min()), 0, h))
    x2 = int(np.clip(np.ceil(arr[:, 0].max()), 0, w))
    y2 = int(np.clip(np.ceil(arr[:, 1].max()), 0, h))
    return (x1, y1, x2, y2)


def reading_order(lines: list[OCRLine]) -> list[OCRLine]:
    """Top-to-bottom rows, left-to-right within a row (see the module docstring)."""
    rows: list[list[OCRLine]] = []
    for line in sorted(lines, key=lambda ln: ((ln.bbox[1] + ln.bbox[3]) / 2, ln.bbox[0])):
        if rows:
            row = rows[-1]
            top = min(ln.bbox[1] for ln in row)
            bottom = max(ln.bbox[3] for ln in row)
            overlap = min(bottom, line.bbox[3]) - max(top, line.bbox[1])
            smaller = min(bottom - top, line.bbox[3] - line.bbox[1])
            if smaller > 0 and overlap >= smaller / 2:
                row.append(line)
                continue
        rows.append([line])
    return [ln for row in rows for ln in sorted(row, key=lambda ln: (ln.bbox[0], ln.bbox[1]))]


def format_lines(lines: list[OCRLine]) -> str:
    return "\n".join(line.render() for line in reading_order(lines))


# ---- RapidOCR ---------------------------------------------------------------------------------------
# config keys that choose other model files than the bundled defaults
_MODEL_SELECTION: Final = ("engine_type", "model_type", "ocr_version", "lang_type", "model_path")
# each task's model files in the rapidocr wheel's model folder
_MODEL_PATTERNS: Final = (("Det", "*_det_*.onnx"), ("Rec", "*_rec_*.onnx"), ("Cls", "*cls*.onnx"))


class RapidOCRBackend:
    """RapidOCR 3.x on onnxruntime with the models bundled in the `rapidocr` wheel.

    The engine is built once, on first use, and reused (guarded by a lock; RapidOCR itself
    serialises model loading). Model paths are passed explicitly so that RapidOCR never takes its
    download branch: if a bundled model file is missing the tool fails with a clear error."""

    name = "rapidocr"
    requirement = (
        "the `rapidocr` (3.x) and `onnxruntime` packages and the model files of its config "
        "(the rapidocr wheel ships the default PP-OCR models)"
    )

    # RapidOCR's default config, except the detector's resize rule: limiting the longer side to
    # 960 px keeps word spacing on small, wide text (ENVIRONMENT.md) and is fast on a CPU.
    DEFAULT_PARAMS: ClassVar[dict[str, Any]] = {
        "Det.limit_type": "max",
        "Det.limit_side_len": 960,
        "Global.log_level": "error",
    }

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        self.params = {**self.DEFAULT_PARAMS, **(params or {})}
        self._engine: Any = None
        self._models: dict[str, Path] | None = None
        self._lock = threading.Lock()
        # one recognition at a time: RapidOCR keeps per-call settings on the engine object, and
        # onnxruntime already spreads one image over all cores
        self._run_lock = threading.Lock()

    @staticmethod
    def model_dir() -> Path | None:
        spec = importlib.util.find_spec("rapidocr")
        if spec is None or spec.origin is None:
            return None
        return Path(spec.origin).parent / "models"

    def _default_model_names(self) -> dict[str, str] | None:
        """The model file names RapidOCR itself would pick for this config (None if its API moved)."""
        try:
            from rapidocr.inference_engine.base import FileInfo, InferSession
            from rapidocr.main import DEFAULT_CFG_PATH
            from rapidocr.utils.parse_parameters import ParseParams

            cfg = ParseParams.update_batch(ParseParams.load(DEFAULT_CFG_PATH), dict(self.params))
            names = {}
            for task in ("Det", "Rec", "Cls"):
                c = cfg[task]
                info = InferSession.get_model_url(
                    FileInfo(
                        engine_type=c.engine_type,
                        ocr_version=c.ocr_version,
                        task_type=c.task_type,
                        lang_type=c.lang_type,
                        model_type=c.model_type,
                    )
                )
                names[task] = Path(str(info["model_dir"])).name
            return names
        except Exception:  # internal API of rapidocr: fall back to the files that are there
            return None

    def bundled_models(self) -> dict[str, Path] | None:
        """The det/rec/cls ONNX files shipped in the wheel, or None if any is missing."""
        if self._models is not None:
            return self._models
        if importlib.util.find_spec("onnxruntime") is None:
            return None
        root = self.model_dir()
        if root is None or not root.is_dir():
            return None
        names = self._default_model_names()
        if names is None and any(k.split(".")[-1] in _MODEL_SELECTION for k in self.params):
            return None  # a non-default model was asked for and cannot be resolved: never guess
        found: dict[str, Path] = {}
        for task, pattern in _MODEL_PATTERNS:
            explicit = self.params.get(f"{task}.model_path")
            if explicit is not None:
                found[task] = Path(explicit)
                if not found[task].is_file():
                    return None
            elif names is not None:
                path = root / names[task]
                if not path.is_file():
                    return None
                found[task] = path
            else:
                matches = sorted(root.glob(pattern))
                if not matches:
                    return None
                found[task] = matches[0]
        self._models = found
        return found

    def available(self) -> bool:
        """Whether OCR can run here. For the default models this is a cheap look at the installed
        packages and the wheel's model folder: importing rapidocr's model resolver loads its model
        table with omegaconf (about a second), which only the first recognition needs to pay.
        A config that selects other models is resolved exactly, as `bundled_models` does."""
        if self._models is not None:
            return True
        if any(k.split(".")[-1] in _MODEL_SELECTION for k in self.params):
            return self.bundled_models() is not None
        if importlib.util.find_spec("onnxruntime") is None:
            return False
        root = self.model_dir()
        if root is None or not root.is_dir():
            return False
        return all(any(root.glob(pattern)) for _, pattern in _MODEL_PATTERNS)

    def cache_identity(self) -> object:
        """What a recognition depends on besides the image: the config, the packages that compute
        it, and the model files (by name and size; explicit paths also by modification time)."""
        root = self.model_dir()
        bundled = sorted((p.name, p.stat().st_size) for p in root.glob("*.onnx")) if root else []
        explicit = {}
        for key, value in self.params.items():
            if key.endswith(".model_path"):
                try:
                    stat = Path(value).stat()
                    explicit[key] = [str(value), stat.st_size, stat.st_mtime_ns]
                except OSError:
                    explicit[key] = [str(value), None, None]
        return {
            "backend": self.name,
            "params": {k: repr(v) for k, v in sorted(self.params.items())},
            "packages": _package_versions(_RAPIDOCR_PACKAGES),
            "models": bundled,
            "explicit_models": explicit,
        }

    def _get_engine(self) -> Any:
        with self._lock:
            if self._engine is None:
                models = self.bundled_models()
                if models is None:
                    raise ToolError(
                        f"OCR backend 'rapidocr' is not installed: it needs {self.requirement} "
                        "(no download is attempted)"
                    )
                from rapidocr import RapidOCR

                # explicit paths keep RapidOCR off its download branch
                params = {f"{task}.model_path": str(path) for task, path in models.items()}
                engine = RapidOCR(params={**self.params, **params})
                _load_sessions_without_spinning(engine)
                self._engine = engine
            return self._engine

    def recognize(self, path: Path) -> list[OCRLine]:
        img = open_rgb(path)
        engine = self._get_engine()
        # RapidOCR takes arrays in OpenCV's BGR order
        with self._run_lock:
            result = engine(np.ascontiguousarray(np.asarray(img)[:, :, ::-1]))
        boxes, txts, scores = (getattr(result, k, None) for k in ("boxes", "txts", "scores"))
        if boxes is None or txts is None or scores is None:
            return []
        lines = []
        for points, text, score in zip(boxes, txts, scores, strict=True):
            text = str(text).strip()
            if text:
                lines.append(OCRLine(box_from_points(points, img.size), text, round(float(score), 4)))
        return lines


# onnxruntime's session option for its intra-op threads: spin-wait for the next piece of work
# ("1", its default) or sleep ("0"). Which one never changes a result, only how threads wait.
_SPINNING_KEY: Final = "session.intra_op.allow_spinning"
_session_patch_lock = threading.Lock()


def _load_sessions_without_spinning(engine: Any) -> None:
    """Load the ONNX sessions of a new RapidOCR engine now (RapidOCR loads each on its first use),
    with onnxruntime's spin-waiting off and every other session option RapidOCR's own.

    Spinning threads keep a core busy while they wait for the next operator: on a machine whose
    cores are taken (a 2-core box, a test run, the sandboxes' children, a seeding thread) they
    take it from the work they wait for; the demo's first run used about 2 s more CPU with them
    on, for the same wall time at best. RapidOCR offers no setting for it, so its option builder
    is wrapped while the sessions are made. If its internals moved, the sessions load lazily with
    RapidOCR's defaults, as before: slower, never different."""
    try:
        from rapidocr.inference_engine.onnxruntime.main import OrtInferSession
    except ImportError:
        return
    loaders = [
        loader
        for flag, name in (
            ("use_det", "_load_det_model"),
            ("use_cls", "_load_cls_model"),
            ("use_rec", "_load_rec_model"),
        )
        if getattr(engine, flag, False) and callable(loader := getattr(engine, name, None))
    ]
    with _session_patch_lock:
        original = OrtInferSession.__dict__.get("_init_sess_opts")
        if not isinstance(original, staticmethod):
            return
        build = original.__func__

        def options(cfg: Any) -> Any:
            opts = build(cfg)
            opts.add_session_config_entry(_SPINNING_KEY, "0")
            return opts

        OrtInferSession._init_sess_opts = staticmethod(options)  # type: ignore[method-assign]
        try:
            for load in loaders:
                load()
        finally:
            OrtInferSession._init_sess_opts = original  # type: ignore[method-assign]


# ---- the result cache -----------------------------------------------------------------------------------
# what computes a RapidOCR result besides toolgym: a new version of any may change it
_RAPIDOCR_PACKAGES: Final = ("rapidocr", "onnxruntime", "opencv-python-headless", "numpy", "pillow")
_MEMORY_ENTRIES: Final = 256
_memory: OrderedDict[str, tuple[OCRLine, ...]] = OrderedDict()
_memory_lock = threading.Lock()
_disk = DiskCache("ocr", max_bytes=64 * 2**20)


@functools.cache
def _package_versions(names: tuple[str, ...]) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in names:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


@functools.cache
def _code_digest() -> str:
    # this module turns the engine's output into lines: a change to it must not hit old entries
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


def _lines_from_json(payload: bytes) -> tuple[OCRLine, ...]:
    rows = json.loads(payload)
    lines = []
    for (x1, y1, x2, y2), text, score in rows:
        if not all(isinstance(v, int) for v in (x1, y1, x2, y2)) or not isinstance(text, str):
            raise ValueError("malformed OCR cache entry")
        lines.append(OCRLine((x1, y1, x2, y2), text, float(score)))
    return tuple(lines)


def recognize_cached(engine: OCRBackend, path: Path) -> list[OCRLine]:
    """`engine.recognize(path)`, answered from a cache when the same image bytes were recognised by
    the same engine and config before: in this process (the demo reads one receipt four times),
    or in an earlier one (on disk, `toolgym.cache`). The key is the sha256 of the image's bytes
    and of the engine's `cache_identity()` (config, package versions, model files) and of this
    module's code. Engines without `cache_identity`, and `TOOLGYM_CACHE=0`, are never cached."""
    identity_of = getattr(engine, "cache_identity", None)
    if identity_of is None or not cache_enabled():
        return engine.recognize(path)
    try:
        image = path.read_bytes()
    except OSError:
        return engine.recognize(path)  # the engine's own error for an unreadable file
    key = cache_key("ocr", _code_digest(), identity_of(), hashlib.sha256(image).hexdigest())
    with _memory_lock:
        hit = _memory.get(key)
        if hit is not None:
            _memory.move_to_end(key)
            return list(hit)
    payload = _disk.get(key)
    lines: tuple[OCRLine, ...] | None = None
    if payload is not None:
        try:
            lines = _lines_from_json(payload)
        except (ValueError, TypeError):
            _disk.discard(key)
    if lines is None:
        lines = tuple(engine.recognize(path))
        rows = [[list(ln.bbox), ln.text, ln.score] for ln in lines]
        _disk.put(key, json.dumps(rows, ensure_ascii=False).encode("utf-8"))
    with _memory_lock:
        _memory[key] = lines
        while len(_memory) > _MEMORY_ENTRIES:
            _memory.popitem(last=False)
    return list(lines)


def clear_memory_cache() -> None:
    """Forget the results cached in this process (the disk cache stays)."""
    with _memory_lock:
        _memory.clear()


# ---- Tesseract (optional) ------------------------------------------------------------------------------
class TesseractBackend:
    """Tesseract via pytesseract, when both are installed (not a toolgym dependency).

    Words are grouped into lines by Tesseract's own (block, paragraph, line) numbering."""

    name = "tesseract"
    requirement = "the `pytesseract` package and the `tesseract` program (Debian: tesseract-ocr)"

    def __init__(self, lang: str = "eng", min_confidence: float = 30.0) -> None:
        self.lang = lang
        self.min_confidence = min_confidence

    def available(self) -> bool:
        return importlib.util.find_spec("pytesseract") is not None and shutil.which("tesseract") is not None

    def recognize(self, path: Path) -> list[OCRLine]:
        if not self.available():
            raise ToolError(f"OCR backend 'tesseract' is not installed: it needs {self.requirement}")
        pytesseract: Any = importlib.import_module("pytesseract")
        img = open_rgb(path)
        data = pytesseract.image_to_data(img, lang=self.lang, output_type=pytesseract.Output.DICT)
        groups: dict[tuple[int, int, int], list[int]] = {}
        for i, word in enumerate(data["text"]):
            if str(word).strip() and float(data["conf"][i]) >= self.min_confidence:
                key = (int(data["block_num"][i]), int(data["par_num"][i]), int(data["line_num"][i]))
                groups.setdefault(key, []).append(i)
        lines = []
        for idx in groups.values():
            x1 = min(int(data["left"][i]) for i in idx)
            y1 = min(int(data["top"][i]) for i in idx)
            x2 = max(int(data["left"][i]) + int(data["width"][i]) for i in idx)
            y2 = max(int(data["top"][i]) + int(data["height"][i]) for i in idx)
            text = " ".join(str(data["text"][i]).strip() for i in idx)
            score = sum(float(data["conf"][i]) for i in idx) / len(idx) / 100
            lines.append(OCRLine((x1, y1, x2, y2), text, round(score, 4)))
        return lines


# ---- the tool ----------------------------------------------------------------------------------------------
def make_ocr_tool(backend: OCRBackend | None = None) -> Tool:
    """GTA's OCR tool over `backend` (default: a new RapidOCRBackend)."""
    engine: OCRBackend = backend if backend is not None else RapidOCRBackend()

    @tool(
        name="OCR",
        category="perception",
        description=DESCRIPTION,
        returns_description=RETURNS_DESCRIPTION,
        backend=engine.name,
    )
    def ocr(image: Image) -> str:
        if not engine.available():
            needs = getattr(engine, "requirement", "its packages or model files")
            raise ToolError(f"OCR backend {engine.name!r} is not installed on this machine: it needs {needs}")
        return format_lines(recognize_cached(engine, image.path))

    return ocr


default_backend = RapidOCRBackend()
ocr = make_ocr_tool(default_backend)
