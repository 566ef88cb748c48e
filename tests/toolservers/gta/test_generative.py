"""TextToImage and ImageStylization: tiny random Stable Diffusion and InstructPix2Pix pipelines
saved with save_pretrained and loaded through the real backend (DiffusionPipeline.from_pretrained,
local files only); the episode seed drives the noise and is recorded in the output."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image as PILImage

from toolgym.actions import Observation, ToolCall
from toolgym.errors import ErrorKind
from toolgym.files import FileStore
from toolgym.tools import ToolContext, ToolSet
from toolgym.toolservers.gta.config import ModelConfig
from toolgym.toolservers.gta.stylization import make_stylization_tool, model_input
from toolgym.toolservers.gta.text_to_image import make_text_to_image_tool

NEEDS_TORCH = "torch/diffusers are not installed: pip install -c constraints.txt 'toolgym[ml]'"


@pytest.fixture(scope="module")
def pipelines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("torch", reason=NEEDS_TORCH)
    pytest.importorskip("diffusers", reason=NEEDS_TORCH)
    from tests.toolservers.tiny_models import build_stable_diffusion

    root = tmp_path_factory.mktemp("diffusers")
    return {
        "sd": build_stable_diffusion(root / "sd"),
        "ip2p": build_stable_diffusion(root / "ip2p", instruct_pix2pix=True),
    }


@pytest.fixture(scope="module")
def generative(pipelines: dict[str, Path]) -> ToolSet:
    config = ModelConfig.from_env(
        {
            "TOOLGYM_MODELS_DIR": str(pipelines["sd"].parent),
            "TOOLGYM_TEXT_TO_IMAGE_MODEL": "sd",
            "TOOLGYM_STYLIZATION_MODEL": "ip2p",
            "TOOLGYM_DIFFUSION_STEPS": "2",
            "TOOLGYM_IMAGE_SIZE": "32",
        }
    )
    return ToolSet([make_text_to_image_tool(config), make_stylization_tool(config)])


def run(
    tools: ToolSet, name: str, seed: int, files: FileStore | None = None, **arguments: Any
) -> Observation:
    return tools.call(
        ToolCall(name=name, arguments=arguments), ToolContext(files=files or FileStore(), seed=seed)
    )


def decode(files: FileStore, obs: Observation) -> tuple[PILImage.Image, dict[str, str], str]:
    assert obs.error is None, obs.text
    (handle,) = obs.files
    assert handle.media_type == "image/png"
    data = files.get(handle).read_bytes()
    img = PILImage.open(io.BytesIO(data))
    img.load()
    return img, dict(img.text), handle.name or ""  # type: ignore[attr-defined]


def test_text_to_image_is_seeded_and_records_the_seed(generative: ToolSet) -> None:
    files = FileStore()
    a = run(generative, "TextToImage", 7, files, keywords="a red cat, watercolour")
    img, text, name = decode(files, a)
    assert img.size == (32, 32) and img.mode == "RGB"
    assert np.asarray(img).std() > 0  # a picture, not a blank
    assert text["toolgym:seed"] == "7" and text["toolgym:prompt"] == "a red cat, watercolour"
    assert name.startswith("image/text_to_image_seed7_") and name.endswith(".png")
    same = run(generative, "TextToImage", 7, files, keywords="a red cat,   watercolour")
    assert same.files[0].sha256 == a.files[0].sha256  # same seed and prompt: the same bytes
    other = run(generative, "TextToImage", 8, files, keywords="a red cat, watercolour")
    other_img, other_text, _ = decode(files, other)
    assert other_text["toolgym:seed"] == "8"
    assert not np.array_equal(np.asarray(other_img), np.asarray(img))  # another seed: another image


def test_stylization_keeps_the_input_size_and_records_seed_and_source(generative: ToolSet) -> None:
    files = FileStore()
    source = PILImage.fromarray((np.indices((40, 60)).sum(axis=0) % 255).astype(np.uint8)).convert("RGB")
    buf = io.BytesIO()
    source.save(buf, format="PNG")
    handle = files.put_bytes(buf.getvalue(), name="image/gradient.png")
    obs = run(
        generative,
        "ImageStylization",
        3,
        files,
        image="image/gradient.png",
        instruction="make it look like winter",
    )
    img, text, name = decode(files, obs)
    assert img.size == (60, 40)
    assert text["toolgym:seed"] == "3" and text["toolgym:source"] == handle.sha256
    assert text["toolgym:prompt"] == "make it look like winter"
    assert name.startswith("image/gradient_stylized_seed3_")
    again = run(
        generative,
        "ImageStylization",
        3,
        files,
        image="image/gradient.png",
        instruction="make it look like winter",
    )
    assert again.files[0].sha256 == obs.files[0].sha256


@pytest.mark.parametrize(
    ("name", "arguments", "kind", "needle"),
    [
        ("TextToImage", {"keywords": "  "}, ErrorKind.TOOL_ERROR, "empty"),
        ("TextToImage", {"keywords": "x" * 1001}, ErrorKind.TOOL_ERROR, "too long"),
        ("TextToImage", {}, ErrorKind.ARGUMENT_ERROR, "keywords"),
        (
            "ImageStylization",
            {"image": "image/none.png", "instruction": "x"},
            ErrorKind.ARGUMENT_ERROR,
            "no file",
        ),
        (
            "ImageStylization",
            {"image": "image/gradient.png", "instruction": ""},
            ErrorKind.TOOL_ERROR,
            "empty",
        ),
    ],
)
def test_bad_input(
    generative: ToolSet, name: str, arguments: dict[str, Any], kind: ErrorKind, needle: str
) -> None:
    files = FileStore()
    files.put_bytes(b"\x89PNG\r\n\x1a\n", name="image/gradient.png", media_type="image/png")
    obs = run(generative, name, 0, files, **arguments)
    assert obs.error is not None and obs.error.kind == kind and needle in obs.error.message


def test_without_a_pipeline_the_error_names_the_variable(tmp_path: Path) -> None:
    tools = ToolSet(
        [make_text_to_image_tool(ModelConfig()), make_stylization_tool(ModelConfig(models_dir=tmp_path))]
    )
    obs = run(tools, "TextToImage", 0, keywords="a cat")
    assert obs.error is not None and obs.error.kind == ErrorKind.TOOL_ERROR
    assert "TOOLGYM_TEXT_TO_IMAGE_MODEL" in obs.error.message and "no download" in obs.error.message
    files = FileStore()
    files.put_bytes(b"\x89PNG\r\n\x1a\n", name="image/x.png", media_type="image/png")
    obs = run(tools, "ImageStylization", 0, files, image="image/x.png", instruction="winter")
    assert obs.error is not None and str(tmp_path / "stylization") in obs.error.message


def test_a_directory_that_is_not_a_pipeline_is_a_tool_error(tmp_path: Path) -> None:
    pytest.importorskip("diffusers", reason=NEEDS_TORCH)
    (tmp_path / "model_index.json").write_text('{"_class_name": "NoSuchPipeline"}', encoding="utf-8")
    obs = run(
        ToolSet([make_text_to_image_tool(ModelConfig(text_to_image_model=tmp_path))]),
        "TextToImage",
        0,
        keywords="a cat",
    )
    assert obs.error is not None and obs.error.kind == ErrorKind.TOOL_ERROR
    assert "cannot load the diffusion pipeline" in obs.error.message


def test_model_input_sizes_are_multiples_of_eight() -> None:
    assert model_input(PILImage.new("RGB", (600, 400)), 512).size == (512, 344)
    assert model_input(PILImage.new("RGB", (5, 300)), 64).size == (8, 64)
