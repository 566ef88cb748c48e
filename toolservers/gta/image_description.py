"""GTA's ImageDescription over a transformers vision-language model loaded from a local directory.

Two kinds of model fit (the directory's config.json decides):
- image captioning (BLIP, GIT, ... : `AutoModelForImageTextToText`): the caption is the description;
- visual question answering (BLIP-VQA: `AutoModelForVisualQuestionAnswering`): the model answers
  GTA's prompt "Describe the image in detail", as GTA's LLaVA-based tool did.

The model comes from TOOLGYM_CAPTION_MODEL (or $TOOLGYM_MODELS_DIR/caption) and is loaded with
`local_files_only=True`: no download, ever. Decoding is greedy, so answers are deterministic.
No model ships in a package, so on a fresh machine the tool answers with a tool_error that says
which variable provides one.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from PIL import Image as PILImage

from toolgym.errors import ToolError
from toolgym.tools import Image, Tool, tool

from .backends import (
    ML_EXTRA,
    Backend,
    Lazy,
    load_failure,
    load_module,
    missing_modules,
    model_dir_problem,
    new_tokens_limit,
    quiet_hf,
)
from .config import ModelConfig
from .ocr import open_rgb

DESCRIPTION = "A useful tool that returns a brief description of the input image."
DESCRIBE_PROMPT = "Describe the image in detail"
MAX_NEW_TOKENS = 60


def architectures(path: Path) -> list[str]:
    """The `architectures` of a transformers model directory (its config.json), [] if unreadable."""
    try:
        value = json.loads((path / "config.json").read_text(encoding="utf-8")).get("architectures") or []
    except (OSError, ValueError, AttributeError):
        return []
    return [str(a) for a in value] if isinstance(value, list) else []


class VisionLanguageModel(Backend):
    """A captioning or VQA model from a local directory; `answer(image, prompt)` runs it.

    Captioning models get the prompt as a text prefix only when `prefix_prompt` is set (BLIP
    continues a prefix); VQA models always get it as the question."""

    def __init__(self, config: ModelConfig, slot: str, *, tool: str, name: str = "transformers") -> None:
        self.config = config
        self.slot = slot
        self.tool = tool
        self.name = name
        self.path = config.model_path(slot)
        self._model: Lazy[tuple[Any, Any, bool]] = Lazy(self._load)
        self._run_lock = threading.Lock()

    def problem(self) -> str | None:
        missing = missing_modules(["torch", "transformers"])
        if missing:
            return f"needs the Python package(s) {', '.join(missing)}: {ML_EXTRA}"
        return model_dir_problem(self.config, self.slot)

    @property
    def is_vqa(self) -> bool:
        return self.path is not None and any(
            a.endswith("ForQuestionAnswering") for a in architectures(self.path)
        )

    def describe(self) -> str:
        return f"{'VQA' if self.is_vqa else 'captioning'} model {self.path}"

    def _load(self) -> tuple[Any, Any, bool]:
        self.require()
        transformers = load_module("transformers")
        quiet_hf()
        vqa = self.is_vqa
        auto = (
            transformers.AutoModelForVisualQuestionAnswering
            if vqa
            else transformers.AutoModelForImageTextToText
        )
        try:
            processor = transformers.AutoProcessor.from_pretrained(str(self.path), local_files_only=True)
            model = auto.from_pretrained(str(self.path), local_files_only=True)
        except Exception as exc:  # transformers raises many types for a bad directory
            raise load_failure("the vision-language model", self.path, exc) from None
        return processor, model.to(self.config.device).eval(), vqa

    def answer(self, image: PILImage.Image, prompt: str | None = None) -> str:
        """Greedy decoding of the model's text for `image` (and `prompt`, see the class doc)."""
        self.require()
        import torch

        processor, model, vqa = self._model.get()
        text = prompt if (vqa or prompt) else None
        if vqa and not text:
            text = DESCRIBE_PROMPT
        inputs = (
            processor(images=image, text=text, return_tensors="pt")
            if text
            else processor(images=image, return_tensors="pt")
        )
        inputs = {k: v.to(self.config.device) if hasattr(v, "to") else v for k, v in inputs.items()}
        with self._run_lock, torch.no_grad():
            out = model.generate(
                **inputs, max_new_tokens=new_tokens_limit(model, MAX_NEW_TOKENS), do_sample=False, num_beams=1
            )
        decoded = processor.batch_decode(out, skip_special_tokens=True)[0]
        answer = " ".join(str(decoded).split())
        # captioning models echo a text prefix; the answer is what follows it
        if text and not vqa and answer.lower().startswith(text.lower()):
            answer = answer[len(text) :].strip()
        return answer


def caption_backends(config: ModelConfig) -> list[VisionLanguageModel]:
    return [VisionLanguageModel(config, "caption_model", tool="ImageDescription")]


def make_image_description_tool(config: ModelConfig | None = None) -> Tool:
    cfg = config or ModelConfig()
    backend = caption_backends(cfg)[0]

    @tool(name="ImageDescription", category="perception", description=DESCRIPTION, backend=backend.name)
    def image_description(image: Image) -> str:
        backend.require()
        answer = backend.answer(open_rgb(image.path), DESCRIBE_PROMPT if backend.is_vqa else None)
        if not answer:
            raise ToolError("the captioning model produced no text for this image")
        return answer

    return image_description
