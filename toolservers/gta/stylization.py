"""GTA's ImageStylization: edit an image by an instruction with a diffusers pipeline, seeded.

GTA used InstructPix2Pix. Any diffusers image-editing pipeline saved with `save_pretrained` fits
(InstructPix2Pix, Stable Diffusion img2img, ...): it comes from TOOLGYM_STYLIZATION_MODEL (or
$TOOLGYM_MODELS_DIR/stylization) and is loaded with `local_files_only=True`.

The input is scaled so that its longer side is TOOLGYM_IMAGE_SIZE (default 512) and both sides are
multiples of 8, as the VAE needs; the output is scaled back to the input's size so that boxes
found on the input still fit. The episode seed drives the noise and is recorded in the file name
(`<input name>_stylized_seed<seed>_<hash>.png`) and in the PNG's text chunks, with the instruction.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from PIL import Image as PILImage

from toolgym.tools import Image, Tool, ToolContext, tool

from .backends import store_generated
from .config import ModelConfig
from .drawing import ImageResult
from .ocr import open_rgb
from .text_to_image import DiffusersPipeline, check_prompt

DESCRIPTION = (
    "This tool can modify the input image according to the input instruction. Here are some example "
    'instructions: "turn him into cyborg", "add fireworks to the sky", "make his jacket out of leather".'
)
DEFAULT_SIDE = 512


def model_input(img: PILImage.Image, side: int) -> PILImage.Image:
    """Scale so the longer side is `side` and both sides are multiples of 8 (at least 8)."""
    w, h = img.size
    scale = side / max(w, h)
    nw = max(8, round(w * scale / 8) * 8)
    nh = max(8, round(h * scale / 8) * 8)
    return img.resize((nw, nh), PILImage.Resampling.LANCZOS)


def stylization_backends(config: ModelConfig) -> list[DiffusersPipeline]:
    return [DiffusersPipeline(config, "stylization_model", tool="ImageStylization")]


def make_stylization_tool(config: ModelConfig | None = None) -> Tool:
    cfg = config or ModelConfig()
    backend = stylization_backends(cfg)[0]

    @tool(name="ImageStylization", category="creativity", description=DESCRIPTION, backend=backend.name)
    def image_stylization(image: Image, instruction: str, ctx: ToolContext) -> ImageResult:
        prompt = check_prompt(instruction, "instruction")
        backend.require()
        source = open_rgb(image.path)
        edited = backend.run(
            ctx.seed,
            prompt=prompt,
            image=model_input(source, cfg.image_size or DEFAULT_SIDE),
            image_guidance_scale=1.5,  # InstructPix2Pix's default strength of the input image
        )
        if edited.size != source.size:
            edited = edited.resize(source.size, PILImage.Resampling.LANCZOS)
        stem = PurePosixPath(image.handle.name or "image").stem or "image"
        return store_generated(
            ctx,
            edited,
            stem=f"{stem}_stylized",
            seed=ctx.seed,
            metadata={
                "toolgym:tool": "ImageStylization",
                "toolgym:prompt": prompt,
                "toolgym:source": image.handle.sha256,
                "toolgym:steps": str(cfg.diffusion_steps),
            },
        )

    return image_stylization
