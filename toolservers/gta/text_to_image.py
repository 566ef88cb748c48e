"""GTA's TextToImage: a diffusers pipeline from a local directory, seeded with the episode seed.

The pipeline comes from TOOLGYM_TEXT_TO_IMAGE_MODEL (or $TOOLGYM_MODELS_DIR/text-to-image), a
directory written by `save_pretrained` (model_index.json and the component folders), and is loaded
with `DiffusionPipeline.from_pretrained(dir, local_files_only=True)`: whatever pipeline class the
directory names (Stable Diffusion 1.x/2.x, SDXL, ...). TOOLGYM_DIFFUSION_STEPS sets the number of
steps (default 25) and TOOLGYM_IMAGE_SIZE the output size (default: the pipeline's own).

Every call draws its noise from a torch.Generator seeded with the episode seed (ToolContext.seed):
the same seed, prompt and model give the same image. The seed is recorded in the output file
name (`text_to_image_seed<seed>_<hash>.png`) and in the PNG's text chunks, with the prompt.
"""

from __future__ import annotations

import inspect
import threading
from pathlib import Path
from typing import Annotated, Any

from PIL import Image as PILImage

from toolgym.errors import ToolError
from toolgym.tools import Param, Tool, ToolContext, tool

from .backends import (
    ML_EXTRA,
    Backend,
    Lazy,
    load_failure,
    load_module,
    missing_modules,
    model_dir_problem,
    quiet_hf,
    store_generated,
    torch_generator,
)
from .config import ModelConfig
from .drawing import ImageResult

DESCRIPTION = "This tool can generate an image according to the input text."
KEYWORDS_DESCRIPTION = "A series of keywords separated by comma."
MAX_PROMPT_CHARS = 1000


class DiffusersPipeline(Backend):
    """A diffusers pipeline from a local `save_pretrained` directory, run one call at a time."""

    def __init__(self, config: ModelConfig, slot: str, *, tool: str, name: str = "diffusers") -> None:
        self.config = config
        self.slot = slot
        self.tool = tool
        self.name = name
        self.path: Path | None = config.model_path(slot)
        self._pipe: Lazy[Any] = Lazy(self._load)
        self._run_lock = threading.Lock()  # a pipeline's scheduler holds per-call state

    def problem(self) -> str | None:
        missing = missing_modules(["torch", "diffusers", "transformers"])
        if missing:
            return f"needs the Python package(s) {', '.join(missing)}: {ML_EXTRA}"
        return model_dir_problem(self.config, self.slot, marker="model_index.json")

    def describe(self) -> str:
        return f"diffusers pipeline {self.path}"

    def _load(self) -> Any:
        self.require()
        diffusers = load_module("diffusers")
        quiet_hf()
        try:
            pipe = diffusers.DiffusionPipeline.from_pretrained(str(self.path), local_files_only=True)
        except Exception as exc:  # diffusers raises many types for a bad directory
            raise load_failure("the diffusion pipeline", self.path, exc) from None
        pipe = pipe.to(self.config.device)
        pipe.set_progress_bar_config(disable=True)
        return pipe

    def run(self, seed: int, **kwargs: Any) -> PILImage.Image:
        """One generation with the accepted keyword arguments (others are dropped: pipeline
        classes differ, e.g. only InstructPix2Pix takes image_guidance_scale)."""
        self.require()
        pipe = self._pipe.get()
        accepted = inspect.signature(pipe.__call__).parameters
        call = {k: v for k, v in kwargs.items() if k in accepted and v is not None}
        with self._run_lock:
            try:
                result = pipe(
                    **call,
                    num_inference_steps=self.config.diffusion_steps,
                    generator=torch_generator(seed, self.config.device),
                    output_type="pil",
                )
            except (ValueError, RuntimeError) as exc:  # e.g. a size the model cannot take
                raise ToolError(f"the diffusion pipeline failed: {exc}") from None
        images = getattr(result, "images", None)
        if not images:
            raise ToolError("the diffusion pipeline returned no image")
        image = images[0]
        if not isinstance(image, PILImage.Image):
            raise ToolError(f"the diffusion pipeline returned {type(image).__name__}, not an image")
        return image.convert("RGB")


def check_prompt(text: str, what: str) -> str:
    text = " ".join(text.split())
    if not text:
        raise ToolError(f"the {what} is empty")
    if len(text) > MAX_PROMPT_CHARS:
        raise ToolError(f"the {what} is too long ({len(text)} characters; at most {MAX_PROMPT_CHARS})")
    return text


def text_to_image_backends(config: ModelConfig) -> list[DiffusersPipeline]:
    return [DiffusersPipeline(config, "text_to_image_model", tool="TextToImage")]


def make_text_to_image_tool(config: ModelConfig | None = None) -> Tool:
    cfg = config or ModelConfig()
    backend = text_to_image_backends(cfg)[0]

    @tool(name="TextToImage", category="creativity", description=DESCRIPTION, backend=backend.name)
    def text_to_image(keywords: Annotated[str, Param(KEYWORDS_DESCRIPTION)], ctx: ToolContext) -> ImageResult:
        prompt = check_prompt(keywords, "keywords")
        backend.require()
        size = cfg.image_size
        image = backend.run(ctx.seed, prompt=prompt, height=size, width=size)
        return store_generated(
            ctx,
            image,
            stem="text_to_image",
            seed=ctx.seed,
            metadata={
                "toolgym:tool": "TextToImage",
                "toolgym:prompt": prompt,
                "toolgym:steps": str(cfg.diffusion_steps),
            },
        )

    return text_to_image
