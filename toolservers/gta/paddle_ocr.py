"""PaddleOCR 3.x as a backend of GTA's OCR tool (implements ocr.OCRBackend), for lab nodes.

PaddleOCR downloads its models on first use; here it never does: the models must already be
in TOOLGYM_PADDLEOCR_DIR (or $TOOLGYM_MODELS_DIR/paddleocr), one exported inference model per
sub-directory, `det` (text detection) and `rec` (text recognition), as PaddleOCR saves them
(inference.yml beside the weights names the model). Document orientation and unwarping are
switched off: GTA's inputs are photos and screenshots, already upright.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any

from toolgym.errors import ToolError

from .backends import GPU_EXTRA, Lazy, load_failure, load_module, missing_modules
from .config import ModelConfig
from .ocr import OCRLine, box_from_points, open_rgb


def _model_name(model_dir: Path) -> str | None:
    """The model name written in an exported model's inference.yml (`model_name: PP-OCRv5_...`)."""
    try:
        text = (model_dir / "inference.yml").read_text(encoding="utf-8")
    except OSError:
        return None
    match = re.search(r"^\s*model_name:\s*['\"]?([\w.\-]+)", text, re.MULTILINE)
    return match.group(1) if match else None


class PaddleOCRBackend:
    """PaddleOCR's det + rec pipeline from local model directories (never downloads)."""

    name = "paddleocr"

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self.root = config.model_path("paddleocr_dir")
        self.requirement = (
            f"the `paddleocr` (3.x) and `paddlepaddle` packages ({GPU_EXTRA}) and PaddleOCR inference models "
            f"in `det` and `rec` sub-directories: {config.model_hint('paddleocr_dir')}"
        )
        self._engine: Lazy[Any] = Lazy(self._load)
        self._lock = threading.Lock()

    def problem(self) -> str | None:
        missing = missing_modules(["paddleocr", "paddle"])
        if missing:
            return f"needs the Python package(s) {', '.join(missing)}: {GPU_EXTRA}"
        if self.root is None:
            return f"no models configured: {self.config.model_hint('paddleocr_dir')}"
        for part in ("det", "rec"):
            if not (self.root / part).is_dir():
                return f"no {part} model at {self.root / part}: {self.config.model_hint('paddleocr_dir')}"
        return None

    def available(self) -> bool:
        return self.problem() is None

    def _load(self) -> Any:
        problem = self.problem()
        if problem is not None:
            raise ToolError(f"OCR backend 'paddleocr' cannot run on this machine: {problem}")
        # PaddleX checks its model hosts at import; nothing may be fetched here
        os.environ.setdefault("PADDLE_PDX_DISABLE_MODEL_SOURCE_CHECK", "True")
        paddleocr = load_module("paddleocr")
        assert self.root is not None
        det, rec = self.root / "det", self.root / "rec"
        try:
            return paddleocr.PaddleOCR(
                text_detection_model_dir=str(det),
                text_detection_model_name=_model_name(det),
                text_recognition_model_dir=str(rec),
                text_recognition_model_name=_model_name(rec),
                use_doc_orientation_classify=False,
                use_doc_unwarping=False,
                use_textline_orientation=False,
                device=self.config.device,
            )
        except Exception as exc:  # paddle raises many types for a bad model directory
            raise load_failure("PaddleOCR", self.root, exc) from None

    def recognize(self, path: Path) -> list[OCRLine]:
        import numpy as np

        img = open_rgb(path)
        engine = self._engine.get()
        with self._lock:
            results = engine.predict(np.ascontiguousarray(np.asarray(img)[:, :, ::-1]))
        lines = []
        for res in results or []:
            texts = res.get("rec_texts") or []
            scores = res.get("rec_scores") or []
            polys = res.get("rec_polys")
            if polys is None:
                polys = res.get("dt_polys") or []
            for text, score, poly in zip(texts, scores, polys, strict=False):
                text = str(text).strip()
                if text:
                    lines.append(OCRLine(box_from_points(poly, img.size), text, round(float(score), 4)))
        return lines
