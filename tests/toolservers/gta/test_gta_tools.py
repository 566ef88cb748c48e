"""All 14 GTA tools: the registry against GTA's toolmeta.json, every tool answering through ToolEnv
in-process (offline backends with real results, model backends with tiny saved models or a clear
tool_error), the backend configuration, and `toolgym models`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image as PILImage
from typer.testing import CliRunner

import toolgym.fixtures
from tests.shared_data import GTA_TOOLMETA
from tests.toolservers.tiny_models import skimage_photo
from toolgym.actions import ToolCall
from toolgym.cli import app
from toolgym.envs.tool_env import ToolEnv
from toolgym.tasks import Task, TaskFile, TaskSet
from toolgym.tools import ToolSet, to_agentlego_meta
from toolgym.toolservers.gta.config import ConfigError, ModelConfig
from toolgym.toolservers.models import backend_statuses
from toolgym.toolservers.registry import all_gta_tools, builtin_tools, default_toolset

GTA_NAMES = set(json.loads(GTA_TOOLMETA.read_text(encoding="utf-8")))
NEEDS_TORCH = "torch/transformers/diffusers are not installed: pip install -c constraints.txt 'toolgym[ml]'"


def test_registry_has_the_14_gta_tools_with_gtas_schemas() -> None:
    toolmeta = json.loads(GTA_TOOLMETA.read_text(encoding="utf-8"))
    tools = all_gta_tools(ModelConfig())
    assert len(tools) == 14 and {t.name for t in tools} == GTA_NAMES
    for t in tools:
        assert to_agentlego_meta(t) == toolmeta[t.name], t.name
    # GTA's categories, as its evaluator maps them for the per-category tool F1
    categories = {t.name: t.category for t in tools}
    assert {n for n, c in categories.items() if c == "perception"} == {
        "OCR",
        "ImageDescription",
        "RegionAttributeDescription",
        "TextToBbox",
    }
    assert {n for n, c in categories.items() if c == "operation"} == {"DrawBox", "AddText", "GoogleSearch"}
    assert {n for n, c in categories.items() if c == "logic"} == {
        "Calculator",
        "Solver",
        "Plot",
        "MathOCR",
        "CountGivenObject",
    }
    assert {n for n, c in categories.items() if c == "creativity"} == {"TextToImage", "ImageStylization"}
    # the default toolset (demo, CLI, server) is the same set, the six older tools first
    assert [t.name for t in builtin_tools(ModelConfig())][:6] == [
        "Calculator",
        "OCR",
        "DrawBox",
        "AddText",
        "Solver",
        "Plot",
    ]
    assert set(default_toolset(ModelConfig()).names) == GTA_NAMES


@pytest.fixture(scope="module")
def task_set(tmp_path_factory: pytest.TempPathFactory) -> TaskSet:
    root = tmp_path_factory.mktemp("gta")
    PILImage.fromarray(skimage_photo("astronaut")).save(root / "astronaut.png")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(0.01, 0.01))
    fig.text(0, 0, "$x^2 + 3x - 4 = 0$", fontsize=28)
    fig.savefig(root / "formula.png", dpi=100, bbox_inches="tight", pad_inches=0.2, facecolor="white")
    plt.close(fig)
    sign = Path(toolgym.fixtures.__file__).parent / "images" / "sign.png"
    (root / "sign.png").write_bytes(sign.read_bytes())
    task = Task(
        id="all-tools",
        query="Use every tool once.",
        files=[
            TaskFile(name="image/astronaut.png", path="astronaut.png"),
            TaskFile(name="image/formula.png", path="formula.png"),
            TaskFile(name="image/sign.png", path="sign.png"),
        ],
        seed=11,
        max_steps=40,
    )
    return TaskSet([task], base_dir=root)


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("OCR", {"image": "image/sign.png"}),
    ("ImageDescription", {"image": "image/astronaut.png"}),
    (
        "RegionAttributeDescription",
        {"image": "image/astronaut.png", "bbox": "(40, 320, 130, 480)", "attribute": "colour"},
    ),
    ("TextToBbox", {"image": "image/astronaut.png", "text": "face"}),
    ("CountGivenObject", {"image": "image/astronaut.png", "text": "faces"}),
    ("DrawBox", {"image": "image/astronaut.png", "bbox": "(180, 80, 273, 190)", "annotation": "face"}),
    ("AddText", {"image": "image/astronaut.png", "text": "Eileen Collins", "position": "mt"}),
    ("GoogleSearch", {"query": "first woman space shuttle", "k": 2}),
    ("Calculator", {"expression": "round(290 / 5)"}),
    (
        "Solver",
        {
            "command": "from sympy import symbols, solve\ndef solution():\n    x = symbols('x')\n    return str(solve(x**2 + 3*x - 4, x))"
        },
    ),
    (
        "Plot",
        {
            "command": "import matplotlib.pyplot as plt\ndef solution():\n    fig = plt.figure()\n    plt.plot([1, 2, 3])\n    return fig"
        },
    ),
    ("MathOCR", {"image": "image/formula.png"}),
    ("TextToImage", {"keywords": "an astronaut, orange suit"}),
    ("ImageStylization", {"image": "image/astronaut.png", "instruction": "make it a watercolour"}),
]


def run_all(
    tools: ToolSet, task_set: TaskSet, seed: int = 11, only: set[str] | None = None
) -> dict[str, dict[str, Any]]:
    env = ToolEnv(tools, task_set, max_steps=40)
    env.reset(seed=seed, options={"task": "all-tools"})
    out = {}
    for name, arguments in CALLS:
        if only is not None and name not in only:
            continue
        _, _, terminated, truncated, info = env.step(ToolCall(name=name, arguments=arguments))
        assert not (terminated or truncated)
        (obs,) = info["observations"]
        out[name] = obs
    env.close()
    assert set(out) == (only if only is not None else GTA_NAMES)
    return out


def test_every_tool_answers_through_tool_env_on_a_fresh_machine(task_set: TaskSet) -> None:
    """The default configuration: offline backends give real results, model-only tools a clear error."""
    obs = run_all(ToolSet(all_gta_tools(ModelConfig())), task_set)
    ok = {name: o for name, o in obs.items() if o["error"] is None}
    assert "LAKESIDE PARK" in ok["OCR"]["text"]
    assert ok["RegionAttributeDescription"]["text"].startswith("The main colour of the region is orange")
    assert ok["TextToBbox"]["text"].startswith("(")
    assert ok["CountGivenObject"]["content"] == 1
    assert ok["DrawBox"]["files"] and ok["AddText"]["files"]
    assert ok["GoogleSearch"]["text"].startswith("1 - ")
    assert ok["Calculator"]["text"] == "58"
    assert ok["Solver"]["text"] == "[-4, 1]"
    assert ok["Plot"]["files"][0]["media_type"] == "image/png"
    assert ok["MathOCR"]["text"] == "x^{2}+3x-4=0"
    failed = {name: o["error"] for name, o in obs.items() if o["error"] is not None}
    assert set(failed) == {"ImageDescription", "TextToImage", "ImageStylization"}
    assert all(e["kind"] == "tool_error" for e in failed.values())
    assert "TOOLGYM_CAPTION_MODEL" in failed["ImageDescription"]["message"]
    assert "TOOLGYM_TEXT_TO_IMAGE_MODEL" in failed["TextToImage"]["message"]
    assert "TOOLGYM_STYLIZATION_MODEL" in failed["ImageStylization"]["message"]


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    for module in ("torch", "transformers", "diffusers"):
        pytest.importorskip(module, reason=NEEDS_TORCH)
    from tests.toolservers.tiny_models import build_blip, build_stable_diffusion

    root = tmp_path_factory.mktemp("models")
    # the default places under TOOLGYM_MODELS_DIR
    build_blip(root / "caption", vqa=False, word="cat")
    build_blip(root / "vqa", vqa=True, word="orange")
    build_stable_diffusion(root / "text-to-image")
    build_stable_diffusion(root / "stylization", instruct_pix2pix=True)
    return root


def test_every_tool_answers_through_tool_env_with_models(task_set: TaskSet, models_dir: Path) -> None:
    config = ModelConfig.from_env(
        {"TOOLGYM_MODELS_DIR": str(models_dir), "TOOLGYM_DIFFUSION_STEPS": "2", "TOOLGYM_IMAGE_SIZE": "32"}
    )
    # the other ten answered in the test above; these four need models
    model_tools = {"ImageDescription", "RegionAttributeDescription", "TextToImage", "ImageStylization"}
    obs = run_all(ToolSet(all_gta_tools(config)), task_set, seed=5, only=model_tools)
    assert {name for name, o in obs.items() if o["error"] is not None} == set()
    assert set(obs["ImageDescription"]["text"].split()) == {"cat"}
    assert set(obs["RegionAttributeDescription"]["text"].split()) == {"orange"}
    # the episode seed reaches the generative tools and is recorded in their outputs
    assert obs["TextToImage"]["content"]["name"].startswith("image/text_to_image_seed5_")
    assert obs["ImageStylization"]["content"]["name"].startswith("image/astronaut_stylized_seed5_")


# ---- configuration -----------------------------------------------------------------------------------
def test_config_from_env_and_model_paths(tmp_path: Path) -> None:
    config = ModelConfig.from_env(
        {
            "TOOLGYM_MODELS_DIR": str(tmp_path),
            "TOOLGYM_CAPTION_MODEL": "blip-large",
            "TOOLGYM_VQA_MODEL": "/abs/vqa",
            "TOOLGYM_DETECTION_BACKENDS": " haar , HOG ",
            "TOOLGYM_OCR_BACKEND": "Tesseract",
            "SERPER_API_KEY": "secret",
        }
    )
    assert config.model_path("caption_model") == tmp_path / "blip-large"
    assert config.model_path("vqa_model") == Path("/abs/vqa")
    assert config.model_path("text_to_image_model") == tmp_path / "text-to-image"
    assert ModelConfig().model_path("caption_model") is None
    assert config.detection_backends == ("haar", "hog") and config.ocr_backend == "tesseract"
    assert "secret" not in repr(config) and config.variables()["serper_api_key"] == "set"


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"TOOLGYM_DIFFUSION_STEPS": "many"}, "TOOLGYM_DIFFUSION_STEPS must be a number"),
        ({"TOOLGYM_DIFFUSION_STEPS": "0"}, "at least 1"),
        ({"TOOLGYM_IMAGE_SIZE": "100"}, "multiple of 8"),
        ({"TOOLGYM_HTTP_TIMEOUT": "-1"}, "positive"),
        ({"TOOLGYM_OCR_BACKEND": "easyocr"}, "TOOLGYM_OCR_BACKEND must be one of"),
        ({"TOOLGYM_SEARCH_BACKEND": "bing"}, "TOOLGYM_SEARCH_BACKEND"),
    ],
)
def test_bad_configuration_is_a_config_error_naming_the_variable(env: dict[str, str], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        ModelConfig.from_env(env)


def test_ocr_backend_choice(tmp_path: Path) -> None:
    from toolgym.files import FileStore
    from toolgym.tools import ToolContext

    tools = ToolSet(
        all_gta_tools(
            ModelConfig.from_env({"TOOLGYM_OCR_BACKEND": "paddleocr", "TOOLGYM_MODELS_DIR": str(tmp_path)})
        )
    )
    assert tools.get("OCR").backend == "paddleocr"
    files = FileStore()
    files.put_path(Path(toolgym.fixtures.__file__).parent / "images" / "sign.png", name="image/sign.png")
    obs = tools.call(ToolCall(name="OCR", arguments={"image": "image/sign.png"}), ToolContext(files=files))
    assert obs.error is not None and obs.error.kind == "tool_error"
    assert "paddle" in obs.error.message and "toolgym[gpu]" in obs.error.message
    assert ToolSet(all_gta_tools(ModelConfig())).get("OCR").backend == "rapidocr"


# ---- toolgym models ----------------------------------------------------------------------------------------
def test_backend_statuses_cover_every_tool_and_mark_the_selected_ones(tmp_path: Path) -> None:
    rows = [
        r
        for r in backend_statuses(ModelConfig(models_dir=tmp_path))
        if not r.backend.startswith("simulated:")
    ]
    assert {r.tool for r in rows} == GTA_NAMES
    by = {(r.tool, r.backend): r for r in rows}
    assert by[("OCR", "rapidocr")].usable and by[("OCR", "rapidocr")].selected
    assert by[("GoogleSearch", "offline")].selected and not by[("GoogleSearch", "serper")].selected
    assert by[("MathOCR", "rules")].selected and by[("MathOCR", "rules")].usable
    caption = by[("ImageDescription", "transformers")]
    assert not caption.usable and str(tmp_path / "caption") in caption.detail
    assert by[("TextToBbox", "haar")].usable and by[("CountGivenObject", "haar")].usable
    assert by[("RegionAttributeDescription", "colour")].selected


def test_toolgym_models_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLGYM_SEARCH_BACKEND", "serper")
    monkeypatch.delenv("SERPER_API_KEY", raising=False)
    runner = CliRunner()
    result = runner.invoke(app, ["models", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    serper = next(r for r in rows if r["backend"] == "serper")
    assert serper["selected"] and not serper["usable"] and "SERPER_API_KEY" in serper["detail"]
    table = runner.invoke(app, ["models"], env={"COLUMNS": "200"})
    assert table.exit_code == 0 and "ImageStylization" in table.output and "toolgym[gpu]" in table.output
    monkeypatch.setenv("TOOLGYM_IMAGE_SIZE", "7")
    bad = runner.invoke(app, ["models"])
    assert bad.exit_code != 0 and isinstance(bad.exception, ConfigError)
