"""Backend configuration of the GTA tools: one typed object, read from environment variables.

    cfg = ModelConfig.from_env()                   # os.environ
    cfg = ModelConfig.from_env({"TOOLGYM_MODELS_DIR": "/models"})
    cfg = ModelConfig(caption_model=Path("/models/blip"))

Model locations: a variable such as TOOLGYM_CAPTION_MODEL names a local directory or file (a relative
value is taken inside TOOLGYM_MODELS_DIR); when it is unset, the tool looks for the default
sub-path inside TOOLGYM_MODELS_DIR (`$TOOLGYM_MODELS_DIR/caption`). Nothing is ever downloaded.

Web APIs (Serper, Mathpix) are used only when selected by name (TOOLGYM_SEARCH_BACKEND=serper,
TOOLGYM_MATHOCR_BACKEND=mathpix): a key in the environment alone never sends an episode's data
out, and episodes stay deterministic by default.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, cast


@dataclass(frozen=True)
class BackendStatus:
    """One row of `toolgym models`: whether a backend can run here, and why (not)."""

    tool: str
    backend: str
    usable: bool
    detail: str
    selected: bool = False


OCRBackendName = Literal["rapidocr", "tesseract", "paddleocr"]
MathOCRBackendName = Literal["auto", "model", "mathpix", "rules"]
SearchBackendName = Literal["offline", "serper"]

DETECTION_BACKENDS: tuple[str, ...] = (
    "openvocab",
    "ultralytics",
    "yolo-onnx",
    "nudenet",
    "fall-detection",
    "haar",
    "hog",
)


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message names the variable."""


@dataclass(frozen=True)
class ModelSlot:
    """Where one model is configured: its variable, its default place, and what fits there."""

    env: str
    default_subpath: str
    what: str


# attribute name -> slot; the attribute holds the configured path (or None)
MODEL_SLOTS: dict[str, ModelSlot] = {
    "caption_model": ModelSlot(
        "TOOLGYM_CAPTION_MODEL",
        "caption",
        "a transformers image-captioning model directory (e.g. a local copy of "
        "Salesforce/blip-image-captioning-base)",
    ),
    "vqa_model": ModelSlot(
        "TOOLGYM_VQA_MODEL",
        "vqa",
        "a transformers visual-question-answering model directory (e.g. a local copy of Salesforce/blip-vqa-base)",
    ),
    "openvocab_model": ModelSlot(
        "TOOLGYM_OPENVOCAB_MODEL",
        "openvocab",
        "a transformers zero-shot object detection model directory (e.g. a local copy of "
        "google/owlv2-base-patch16-ensemble or google/owlvit-base-patch32)",
    ),
    "yolo_weights": ModelSlot(
        "TOOLGYM_YOLO_WEIGHTS",
        "yolo.pt",
        "an ultralytics YOLO checkpoint (.pt) or model yaml, e.g. yolov8n.pt",
    ),
    "yolo_onnx": ModelSlot(
        "TOOLGYM_YOLO_ONNX",
        "yolo.onnx",
        "a YOLOv8-style detection model exported to ONNX by ultralytics (`yolo export format=onnx`)",
    ),
    "text_to_image_model": ModelSlot(
        "TOOLGYM_TEXT_TO_IMAGE_MODEL",
        "text-to-image",
        "a diffusers text-to-image pipeline directory (e.g. a local copy of stabilityai/stable-diffusion-2-1-base)",
    ),
    "stylization_model": ModelSlot(
        "TOOLGYM_STYLIZATION_MODEL",
        "stylization",
        "a diffusers image-editing pipeline directory (e.g. a local copy of timbrooks/instruct-pix2pix)",
    ),
    "mathocr_model": ModelSlot(
        "TOOLGYM_MATHOCR_MODEL",
        "mathocr",
        "a transformers VisionEncoderDecoder formula-recognition model directory (image processor and "
        "tokenizer saved beside it)",
    ),
    "paddleocr_dir": ModelSlot(
        "TOOLGYM_PADDLEOCR_DIR",
        "paddleocr",
        "a directory holding PaddleOCR inference models in sub-directories `det` and `rec`",
    ),
}


@dataclass(frozen=True)
class ModelConfig:
    """Which backend each GTA tool uses and where its models are. Defaults run offline on a CPU."""

    models_dir: Path | None = None
    device: str = "cpu"
    ocr_backend: OCRBackendName = "rapidocr"
    detection_backends: tuple[str, ...] = DETECTION_BACKENDS
    mathocr_backend: MathOCRBackendName = "auto"
    search_backend: SearchBackendName = "offline"
    search_corpus: Path | None = None  # None: the corpus bundled in toolgym/fixtures/search_corpus
    # model locations (see MODEL_SLOTS)
    caption_model: Path | None = None
    vqa_model: Path | None = None
    openvocab_model: Path | None = None
    yolo_weights: Path | None = None
    yolo_onnx: Path | None = None
    text_to_image_model: Path | None = None
    stylization_model: Path | None = None
    mathocr_model: Path | None = None
    paddleocr_dir: Path | None = None
    # generation
    diffusion_steps: int = 25
    image_size: int | None = None  # None: the pipeline's own default size
    # web APIs
    serper_api_key: str | None = field(default=None, repr=False)
    serper_url: str = "https://google.serper.dev"
    mathpix_app_id: str | None = field(default=None, repr=False)
    mathpix_app_key: str | None = field(default=None, repr=False)
    mathpix_url: str = "https://api.mathpix.com/v3/text"
    http_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        unknown = [b for b in self.detection_backends if b not in DETECTION_BACKENDS]
        if unknown:
            raise ConfigError(
                f"TOOLGYM_DETECTION_BACKENDS: unknown backend(s) {unknown}; known: {', '.join(DETECTION_BACKENDS)}"
            )
        if self.diffusion_steps < 1:
            raise ConfigError(f"TOOLGYM_DIFFUSION_STEPS must be at least 1, got {self.diffusion_steps}")
        if self.image_size is not None and (self.image_size < 8 or self.image_size % 8):
            raise ConfigError(f"TOOLGYM_IMAGE_SIZE must be a multiple of 8 (>= 8), got {self.image_size}")
        if self.http_timeout_s <= 0:
            raise ConfigError(f"TOOLGYM_HTTP_TIMEOUT must be positive, got {self.http_timeout_s}")

    # ---- model locations ------------------------------------------------------------------------
    def model_path(self, slot: str) -> Path | None:
        """The configured path for a model slot, or its default place under models_dir, or None."""
        spec = MODEL_SLOTS[slot]
        value: Path | None = getattr(self, slot)
        if value is not None:
            if not value.is_absolute() and self.models_dir is not None:
                return self.models_dir / value
            return value
        if self.models_dir is not None:
            return self.models_dir / spec.default_subpath
        return None

    def model_hint(self, slot: str) -> str:
        """How to provide the model of a slot, for error messages."""
        spec = MODEL_SLOTS[slot]
        return (
            f"set {spec.env} to {spec.what}, or put it at $TOOLGYM_MODELS_DIR/{spec.default_subpath} "
            "(no download is attempted)"
        )

    # ---- from the environment -------------------------------------------------------------------
    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ModelConfig:
        """Read the TOOLGYM_* (and SERPER_API_KEY, MATHPIX_APP_ID/KEY) variables; ConfigError on bad values."""
        env = os.environ if env is None else env

        def text(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        def path(name: str) -> Path | None:
            value = text(name)
            return Path(value).expanduser() if value else None

        def number(name: str, kind: type[int] | type[float], default: float | None) -> float | None:
            value = text(name)
            if value is None:
                return default
            try:
                return kind(value)
            except ValueError:
                raise ConfigError(f"{name} must be a number, got {value!r}") from None

        def choice(name: str, allowed: tuple[str, ...], default: str) -> str:
            value = (text(name) or default).lower()
            if value not in allowed:
                raise ConfigError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
            return value

        kwargs: dict[str, Any] = {}
        for slot, spec in MODEL_SLOTS.items():
            kwargs[slot] = path(spec.env)
        detection = text("TOOLGYM_DETECTION_BACKENDS")
        steps = number("TOOLGYM_DIFFUSION_STEPS", int, 25)
        size = number("TOOLGYM_IMAGE_SIZE", int, None)
        timeout = number("TOOLGYM_HTTP_TIMEOUT", float, 30.0)
        return cls(
            models_dir=path("TOOLGYM_MODELS_DIR"),
            device=text("TOOLGYM_DEVICE") or "cpu",
            ocr_backend=cast(
                OCRBackendName,
                choice("TOOLGYM_OCR_BACKEND", ("rapidocr", "tesseract", "paddleocr"), "rapidocr"),
            ),
            detection_backends=(
                tuple(b.strip().lower() for b in detection.split(",") if b.strip())
                if detection
                else DETECTION_BACKENDS
            ),
            mathocr_backend=cast(
                MathOCRBackendName,
                choice("TOOLGYM_MATHOCR_BACKEND", ("auto", "model", "mathpix", "rules"), "auto"),
            ),
            search_backend=cast(
                SearchBackendName, choice("TOOLGYM_SEARCH_BACKEND", ("offline", "serper"), "offline")
            ),
            search_corpus=path("TOOLGYM_SEARCH_CORPUS"),
            diffusion_steps=int(steps or 0),
            image_size=None if size is None else int(size),
            serper_api_key=text("SERPER_API_KEY"),
            serper_url=text("TOOLGYM_SERPER_URL") or "https://google.serper.dev",
            mathpix_app_id=text("MATHPIX_APP_ID"),
            mathpix_app_key=text("MATHPIX_APP_KEY"),
            mathpix_url=text("TOOLGYM_MATHPIX_URL") or "https://api.mathpix.com/v3/text",
            http_timeout_s=float(timeout or 0.0),
            **kwargs,
        )

    def variables(self) -> dict[str, str]:
        """The configuration as `name=value` pairs for display (keys are shown only as set/unset)."""
        out: dict[str, str] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("serper_api_key", "mathpix_app_id", "mathpix_app_key"):
                out[f.name] = "set" if value else "unset"
            elif isinstance(value, tuple):
                out[f.name] = ",".join(value)
            else:
                out[f.name] = "" if value is None else str(value)
        return out
