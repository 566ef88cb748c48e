"""ImageDescription and RegionAttributeDescription: tiny random BLIP captioning and VQA models saved
with save_pretrained and loaded through the real backend; the offline colour backend on the
astronaut photo; what a machine without models answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PIL import Image as PILImage

from tests.toolservers.tiny_models import BERT_WORDS
from toolgym.actions import ToolCall
from toolgym.errors import ErrorKind
from toolgym.files import FileStore
from toolgym.tools import ToolContext, ToolSet
from toolgym.toolservers.gta.config import ModelConfig
from toolgym.toolservers.gta.image_description import make_image_description_tool
from toolgym.toolservers.gta.region_attribute import (
    describe_colours,
    dominant_colours,
    make_region_attribute_tool,
)

NEEDS_TORCH = "torch/transformers are not installed: pip install -c constraints.txt 'toolgym[ml]'"
WORDS = {w for w in BERT_WORDS if not w.startswith("[")}


@pytest.fixture(scope="module")
def blip(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("torch", reason=NEEDS_TORCH)
    pytest.importorskip("transformers", reason=NEEDS_TORCH)
    from tests.toolservers.tiny_models import build_blip

    root = tmp_path_factory.mktemp("blip")
    return {
        "caption": build_blip(root / "caption", vqa=False),
        "vqa": build_blip(root / "vqa", vqa=True, word="orange"),
    }


def call(tools: ToolSet, image: Path, name: str, **arguments: Any) -> Any:
    files = FileStore()
    files.put_path(image, name="image/astronaut.png")
    return tools.call(
        ToolCall(name=name, arguments={"image": "image/astronaut.png", **arguments}), ToolContext(files=files)
    )


def tools(config: ModelConfig) -> ToolSet:
    return ToolSet([make_image_description_tool(config), make_region_attribute_tool(config)])


# ---- no models on this machine -----------------------------------------------------------------------
def test_without_a_model_the_tools_say_which_variable_provides_one(astronaut: Path, tmp_path: Path) -> None:
    bare = tools(ModelConfig())
    obs = call(bare, astronaut, "ImageDescription")
    assert obs.error is not None and obs.error.kind == ErrorKind.TOOL_ERROR
    assert "TOOLGYM_CAPTION_MODEL" in obs.error.message and "no download" in obs.error.message
    obs = call(bare, astronaut, "RegionAttributeDescription", bbox="(0, 0, 100, 100)", attribute="material")
    assert obs.error is not None and obs.error.kind == ErrorKind.TOOL_ERROR
    assert "TOOLGYM_VQA_MODEL" in obs.error.message and "colour" in obs.error.message
    # a models dir without the sub-directory: the message names the path it looked at
    obs = call(tools(ModelConfig(models_dir=tmp_path)), astronaut, "ImageDescription")
    assert obs.error is not None and str(tmp_path / "caption") in obs.error.message


# ---- the offline colour backend -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("bbox", "attribute", "main"),
    [
        ("(40, 320, 130, 480)", "color", "orange"),  # the suit
        ("(300, 360, 480, 512)", "colour", "black"),  # the helmet
        ("[180, 90, 260, 170]", "main colors", "beige"),  # the face
        ("(150, 20, 300, 80)", "hair colour", "brown"),
    ],
)
def test_colour_of_regions_of_the_astronaut(astronaut: Path, bbox: str, attribute: str, main: str) -> None:
    obs = call(tools(ModelConfig()), astronaut, "RegionAttributeDescription", bbox=bbox, attribute=attribute)
    assert obs.error is None, obs.text
    assert obs.text.startswith(f"The main colour of the region is {main} (")


def test_colour_shares_add_up_and_pure_images_name_one_colour() -> None:
    flag = PILImage.new("RGB", (100, 100), (255, 255, 255))
    flag.paste((200, 20, 30), (0, 0, 100, 60))
    colours = dominant_colours(flag)
    assert [c for c, _ in colours] == ["red", "white"]
    assert abs(sum(s for _, s in colours) - 1.0) < 1e-9
    assert describe_colours(colours) == "The main colour of the region is red (60%), followed by white (40%)."
    for rgb, name in [
        ((0, 0, 255), "blue"),
        ((0, 160, 0), "green"),
        ((128, 128, 128), "grey"),
        ((10, 10, 10), "black"),
    ]:
        assert dominant_colours(PILImage.new("RGB", (8, 8), rgb)) == [(name, 1.0)]


@pytest.mark.parametrize(
    ("arguments", "kind", "needle"),
    [
        ({"bbox": "(0, 0, 600, 100)", "attribute": "color"}, ErrorKind.TOOL_ERROR, "outside the image"),
        ({"bbox": "(10, 10, 5, 5)", "attribute": "color"}, ErrorKind.TOOL_ERROR, "x1 < x2"),
        ({"bbox": "ten, twenty", "attribute": "color"}, ErrorKind.TOOL_ERROR, "invalid bbox"),
        ({"bbox": "(0, 0, 10, 10)", "attribute": "  "}, ErrorKind.TOOL_ERROR, "empty"),
        ({"bbox": "(0, 0, 10, 10)", "attribute": "c" * 201}, ErrorKind.TOOL_ERROR, "too long"),
        ({"bbox": "(0, 0, 10, 10)"}, ErrorKind.ARGUMENT_ERROR, "attribute"),
    ],
)
def test_region_bad_input(astronaut: Path, arguments: dict[str, Any], kind: ErrorKind, needle: str) -> None:
    obs = call(tools(ModelConfig()), astronaut, "RegionAttributeDescription", **arguments)
    assert obs.error is not None and obs.error.kind == kind and needle in obs.error.message


# ---- tiny BLIP models through the real loading code ---------------------------------------------------------
def test_caption_model_describes_the_image(astronaut: Path, blip: dict[str, Path]) -> None:
    config = ModelConfig.from_env({"TOOLGYM_CAPTION_MODEL": str(blip["caption"])})
    tool_set = tools(config)
    first = call(tool_set, astronaut, "ImageDescription")
    assert first.error is None, first.text
    assert first.text and set(first.text.split()) <= WORDS  # decoded from the model's own vocabulary
    assert call(tool_set, astronaut, "ImageDescription").text == first.text  # greedy: deterministic
    # the same weights behind a relative path under TOOLGYM_MODELS_DIR
    relative = ModelConfig.from_env(
        {"TOOLGYM_MODELS_DIR": str(blip["caption"].parent), "TOOLGYM_CAPTION_MODEL": "caption"}
    )
    assert call(tools(relative), astronaut, "ImageDescription").text == first.text


def test_vqa_model_answers_about_the_cropped_region(astronaut: Path, blip: dict[str, Path]) -> None:
    config = ModelConfig(vqa_model=blip["vqa"], caption_model=blip["vqa"])
    tool_set = tools(config)
    obs = call(
        tool_set, astronaut, "RegionAttributeDescription", bbox="(40, 320, 130, 480)", attribute="color"
    )
    assert obs.error is None, obs.text
    assert set(obs.text.split()) == {"orange"}  # what the model says, not the colour backend
    other = call(
        tool_set, astronaut, "RegionAttributeDescription", bbox="(300, 360, 480, 512)", attribute="material"
    )
    assert other.error is None and set(other.text.split()) == {"orange"}
    # a VQA model also serves ImageDescription, asked GTA's "Describe the image in detail"
    described = call(tool_set, astronaut, "ImageDescription")
    assert described.error is None and set(described.text.split()) == {"orange"}


def test_broken_model_directory_is_a_tool_error(astronaut: Path, tmp_path: Path) -> None:
    pytest.importorskip("transformers", reason=NEEDS_TORCH)
    (tmp_path / "config.json").write_text('{"model_type": "blip"}', encoding="utf-8")
    obs = call(tools(ModelConfig(caption_model=tmp_path)), astronaut, "ImageDescription")
    assert obs.error is not None and obs.error.kind == ErrorKind.TOOL_ERROR
    assert "cannot load the vision-language model" in obs.error.message
