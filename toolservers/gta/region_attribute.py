"""GTA's RegionAttributeDescription: describe one attribute of a boxed region of an image.

Backends, in order of use:
- `vqa`: a transformers VQA or captioning model from TOOLGYM_VQA_MODEL ($TOOLGYM_MODELS_DIR/vqa),
  asked about the cropped region, as GTA asked LLaVA;
- `colour`: offline and exact for one attribute, colour: it names the dominant colours of the
  region by counting its pixels in HSV space (black/grey/white by value and saturation, else one of
  red, orange, beige, brown, yellow, green, cyan, blue, purple, pink by hue). Any other attribute is a
  tool_error that names TOOLGYM_VQA_MODEL.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Annotated

import numpy as np
from PIL import Image as PILImage

from toolgym.errors import ToolError
from toolgym.tools import Image, Param, Tool, tool

from .backends import Backend
from .config import ModelConfig
from .geometry import parse_bbox
from .image_description import VisionLanguageModel
from .ocr import open_rgb

DESCRIPTION = "Describe the attribute of a region of the input image."
BBOX_DESCRIPTION = "The bbox coordinate in the format of `(x1, y1, x2, y2)`"
ATTRIBUTE_DESCRIPTION = "The attribute to describe"
MAX_ATTRIBUTE_CHARS = 200
MIN_SHARE = 0.08  # colours covering less of the region are noise (edges, shadows)

_COLOUR_WORDS = re.compile(r"\b(colou?rs?|hues?|shades?)\b", re.IGNORECASE)


def colour_name(h: int, s: int, v: int) -> str:
    """A basic colour name for one pixel in PIL's HSV (each channel 0..255)."""
    if v < 50:
        return "black"
    if s < 40 or (s < 70 and v < 90):
        if v >= 200:
            return "white"
        return "grey" if v >= 90 else "black"
    hue = h * 360 / 255
    if hue < 10 or hue >= 345:
        return "red"
    if hue < 45:
        if v < 150:
            return "brown"
        return "orange" if s >= 115 else "beige"  # pale orange is how skin and sand look
    if hue < 70:
        return "yellow" if v >= 120 else "brown"
    if hue < 165:
        return "green"
    if hue < 195:
        return "cyan"
    if hue < 255:
        return "blue"
    if hue < 290:
        return "purple"
    return "pink"


def dominant_colours(region: PILImage.Image) -> list[tuple[str, float]]:
    """(colour, share) pairs over MIN_SHARE, most common first."""
    small = region.convert("RGB")
    small.thumbnail((96, 96))
    hsv = np.asarray(small.convert("HSV")).reshape(-1, 3)
    counts = Counter(colour_name(int(h), int(s), int(v)) for h, s, v in hsv)
    total = sum(counts.values())
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [(name, n / total) for name, n in ranked if n / total >= MIN_SHARE]


def describe_colours(colours: list[tuple[str, float]]) -> str:
    if not colours:
        return "The region has no dominant colour."
    parts = [f"{name} ({share:.0%})" for name, share in colours]
    head = f"The main colour of the region is {parts[0]}"
    if len(parts) == 1:
        return head + "."
    rest = parts[1:]
    tail = rest[0] if len(rest) == 1 else ", ".join(rest[:-1]) + f" and {rest[-1]}"
    return f"{head}, followed by {tail}."


class ColourBackend(Backend):
    """Offline: dominant colours of the region (only for colour attributes)."""

    name = "colour"
    tool = "RegionAttributeDescription"

    def problem(self) -> str | None:
        return None

    def describe(self) -> str:
        return "offline, colour attributes only (pixel statistics)"

    @staticmethod
    def handles(attribute: str) -> bool:
        return bool(_COLOUR_WORDS.search(attribute))

    def run(self, region: PILImage.Image) -> str:
        return describe_colours(dominant_colours(region))


def vqa_question(attribute: str) -> str:
    return f"what is the {attribute} of the object in the image?"


def region_backends(config: ModelConfig) -> tuple[VisionLanguageModel, ColourBackend]:
    return (
        VisionLanguageModel(config, "vqa_model", tool="RegionAttributeDescription", name="vqa"),
        ColourBackend(),
    )


def make_region_attribute_tool(config: ModelConfig | None = None) -> Tool:
    cfg = config or ModelConfig()
    vqa, colour = region_backends(cfg)

    @tool(
        name="RegionAttributeDescription",
        category="perception",
        description=DESCRIPTION,
        backend=f"{vqa.name}+{colour.name}",
    )
    def region_attribute_description(
        image: Image,
        bbox: Annotated[str, Param(BBOX_DESCRIPTION)],
        attribute: Annotated[str, Param(ATTRIBUTE_DESCRIPTION)],
    ) -> str:
        attribute = " ".join(attribute.split())
        if not attribute:
            raise ToolError("the attribute is empty")
        if len(attribute) > MAX_ATTRIBUTE_CHARS:
            raise ToolError(
                f"the attribute is too long ({len(attribute)} characters; at most {MAX_ATTRIBUTE_CHARS})"
            )
        img = open_rgb(image.path)
        box = parse_bbox(bbox, img.size)
        region = img.crop(box.as_tuple())
        if vqa.usable():
            answer = vqa.answer(region, vqa_question(attribute))
            if not answer:
                raise ToolError("the VQA model produced no answer for this region")
            return answer
        if colour.handles(attribute):
            return colour.run(region)
        raise ToolError(
            f"describing {attribute!r} needs a VQA model: {vqa.problem()} "
            "(offline, only colour attributes are answered)"
        )

    return region_attribute_description
