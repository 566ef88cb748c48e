"""GTA's MathOCR: a formula image to LaTeX, over three backends.

- `model`: a transformers VisionEncoderDecoder formula recogniser from TOOLGYM_MATHOCR_MODEL (or
  $TOOLGYM_MODELS_DIR/mathocr), e.g. a local copy of a TrOCR/Nougat-style LaTeX OCR model, with its
  image processor and tokenizer saved beside it; loaded with `local_files_only=True`.
- `mathpix`: the Mathpix v3/text API, as GTA's tool called it (MATHPIX_APP_ID, MATHPIX_APP_KEY);
  used only when TOOLGYM_MATHOCR_BACKEND=mathpix, so formulas never leave the machine by default.
- `rules`: offline, on RapidOCR's bundled models plus layout rules written here. It is honest
  about its reach: printed formulas, one or more lines, on a light background. It finds stacked
  fractions (a horizontal bar with ink above and below that is not an equals sign) and radicals
  (a stroke whose box encloses other glyphs), reads numerator, denominator, radicand and the
  plain runs between them with the recogniser alone, and maps the recogniser's Unicode output
  to LaTeX: superscript and subscript digits and signs (x² -> x^{2}, x₁ -> x_{1}), operators
  and relations (× ÷ · ± ≤ ≥ ≠ ≈ → ∞), Greek letters, ∑ ∫ ∂ and function names (sin, log, ...).
  It does not read nested fractions, matrices, big operators with limits, or superscripts that
  the recogniser reads as ordinary digits (it then returns what it read). Whitespace is removed.

TOOLGYM_MATHOCR_BACKEND=auto (the default) uses `model` when one is configured, else `rules`.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

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
    post_json_api,
    quiet_hf,
)
from .config import ModelConfig
from .ocr import RapidOCRBackend, open_rgb

DESCRIPTION = "This tool can recognize math expressions from an image and return the latex style expression."
MAX_NEW_TOKENS = 256

# ---- Unicode -> LaTeX ----------------------------------------------------------------------------------
_SUPERSCRIPTS = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱ", "0123456789+-=()ni", strict=True))
_SUBSCRIPTS = dict(zip("₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₒₓₙₘₖ", "0123456789+-=()aeoxnmk", strict=True))
_SYMBOLS = {
    "×": r"\times", "÷": r"\div", "·": r"\cdot", "⋅": r"\cdot", "∙": r"\cdot", "±": r"\pm", "∓": r"\mp",
    "≤": r"\leq", "≥": r"\geq", "≠": r"\neq", "≈": r"\approx", "≡": r"\equiv", "∞": r"\infty",
    "→": r"\rightarrow", "←": r"\leftarrow", "⇒": r"\Rightarrow", "⇔": r"\Leftrightarrow",
    "∈": r"\in", "∉": r"\notin", "⊂": r"\subset", "∪": r"\cup", "∩": r"\cap", "∅": r"\emptyset",
    "∠": r"\angle", "⊥": r"\perp", "∥": r"\parallel", "△": r"\triangle", "°": r"^{\circ}",
    "∑": r"\sum", "Σ": r"\sum", "∏": r"\prod", "∫": r"\int", "∂": r"\partial", "∇": r"\nabla",
    "α": r"\alpha", "β": r"\beta", "γ": r"\gamma", "δ": r"\delta", "ε": r"\epsilon", "θ": r"\theta",
    "λ": r"\lambda", "μ": r"\mu", "π": r"\pi", "ρ": r"\rho", "σ": r"\sigma", "τ": r"\tau",
    "φ": r"\phi", "ω": r"\omega", "Δ": r"\Delta", "Ω": r"\Omega", "Φ": r"\Phi", "Γ": r"\Gamma",
    "Λ": r"\Lambda", "Π": r"\Pi", "Θ": r"\Theta",
    # recogniser look-alikes: the CJK model reads a plus as 十 and a minus as 一
    "−": "-", "–": "-", "—": "-", "一": "-", "十": "+", "＝": "=", "（": "(", "）": ")", "，": ",",
}  # fmt: skip
_FUNCTIONS = ("arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "sin", "cos", "tan", "cot", "sec", "csc", "log", "ln", "exp", "lim", "max", "min", "det")  # fmt: skip


def _operand(text: str, i: int) -> tuple[str, int]:
    """The operand of a prefix operator (√) starting at text[i]: a bracketed group or a run of
    letters and digits; returns (operand, index after it)."""
    if i < len(text) and text[i] in "([{":
        close = {"(": ")", "[": "]", "{": "}"}[text[i]]
        depth = 0
        for j in range(i, len(text)):
            if text[j] == text[i]:
                depth += 1
            elif text[j] == close:
                depth -= 1
                if depth == 0:
                    return text[i + 1 : j], j + 1
        return text[i + 1 :], len(text)
    j = i
    while j < len(text) and (text[j].isalnum() or text[j] == "."):
        j += 1
    return text[i:j], j


def to_latex(text: str) -> str:
    """Recognised formula text (with Unicode math symbols) as LaTeX; see the module docstring."""
    s = "".join(text.split())
    tokens: list[str] = []
    i = 0
    while i < len(s):
        ch = s[i]
        function = next(
            (
                f
                for f in _FUNCTIONS
                if s.startswith(f, i)
                and (i == 0 or not s[i - 1].isalpha())
                and not s[i + len(f) : i + len(f) + 1].islower()
            ),
            None,
        )
        if function is not None:
            tokens.append("\\" + function)
            i += len(function)
        elif ch in _SUPERSCRIPTS or ch in _SUBSCRIPTS:
            table, mark = (_SUPERSCRIPTS, "^") if ch in _SUPERSCRIPTS else (_SUBSCRIPTS, "_")
            j = i
            while j < len(s) and s[j] in table:
                j += 1
            tokens.append(f"{mark}{{{''.join(table[c] for c in s[i:j])}}}")
            i = j
        elif ch == "√":
            operand, i = _operand(s, i + 1)
            tokens.append(rf"\sqrt{{{to_latex(operand)}}}")
        elif ch in _SYMBOLS:
            tokens.append(_SYMBOLS[ch])
            i += 1
        elif 0xFF01 <= ord(ch) <= 0xFF5E:  # full-width ASCII from the CJK recogniser
            tokens.append(chr(ord(ch) - 0xFEE0))
            i += 1
        else:
            tokens.append(ch)
            i += 1
    out = ""
    for token in tokens:
        # a command directly followed by a letter needs a space ("\pi r", not "\pir")
        if re.search(r"\\[A-Za-z]+$", out) and token[:1].isalpha():
            out += " "
        out += token
    return out


# ---- layout ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Glyph:
    """A connected component of ink: x, y, width, height (pixels), pixel count."""

    x: int
    y: int
    w: int
    h: int
    area: int

    @property
    def x2(self) -> int:
        return self.x + self.w

    @property
    def y2(self) -> int:
        return self.y + self.h

    @property
    def cx(self) -> float:
        return self.x + self.w / 2

    @property
    def cy(self) -> float:
        return self.y + self.h / 2


@dataclass
class Block:
    """A unit of a formula row: a fraction, a radical, or a run of plain glyphs."""

    kind: str  # "frac", "sqrt" or "run"
    glyphs: list[Glyph]
    parts: list[list[Glyph]]  # frac: [numerator, denominator]; sqrt: [radicand]; run: [glyphs]

    @property
    def x(self) -> int:
        return min(g.x for g in self.glyphs)

    @property
    def x2(self) -> int:
        return max(g.x2 for g in self.glyphs)

    @property
    def y(self) -> int:
        return min(g.y for g in self.glyphs)

    @property
    def y2(self) -> int:
        return max(g.y2 for g in self.glyphs)


def ink_mask(gray: np.ndarray) -> np.ndarray:
    """Dark-on-light ink as a 0/1 mask (Otsu threshold; light-on-dark images are inverted)."""
    import cv2

    _, mask = cv2.threshold(gray, 0, 1, cv2.THRESH_BINARY_INV + cv2.THRESH_OTSU)
    if mask.mean() > 0.5:
        mask = 1 - mask
    return mask.astype(np.uint8)


def glyphs_of(mask: np.ndarray) -> list[Glyph]:
    import cv2

    n, _, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    return [Glyph(int(s[0]), int(s[1]), int(s[2]), int(s[3]), int(s[4])) for s in stats[1:n] if s[4] >= 2]


def _is_bar(g: Glyph, text_h: float) -> bool:
    return g.h <= max(3.0, 0.2 * text_h) and g.w >= max(6.0, 3 * g.h) and g.area >= 0.6 * g.w * g.h


def _stack(glyphs: list[Glyph], bar: Glyph, text_h: float, above: bool) -> list[Glyph]:
    """Glyphs stacked directly above (or below) a bar within its width: from the bar outwards,
    each glyph joins while its near edge is within 0.8 text heights of the stack so far."""
    side = [
        g
        for g in glyphs
        if g is not bar
        and bar.x - 2 <= g.cx <= bar.x2 + 2
        and (g.y2 <= bar.y + 1 if above else g.y >= bar.y2 - 1)
    ]
    picked: list[Glyph] = []
    edge = bar.y if above else bar.y2
    for g in sorted(side, key=lambda g: -g.y2 if above else g.y):
        gap = edge - g.y2 if above else g.y - edge
        if gap > 0.8 * text_h:
            break
        picked.append(g)
        edge = min(edge, g.y) if above else max(edge, g.y2)
    return picked


def layout_rows(mask: np.ndarray) -> list[list[Block]]:
    """The formula's rows (top to bottom), each a left-to-right list of blocks."""
    glyphs = glyphs_of(mask)
    if not glyphs:
        return []
    tall = [g.h for g in glyphs if g.h > 3]
    text_h = float(np.median(tall)) if tall else 10.0
    used: set[int] = set()
    blocks: list[Block] = []
    # fractions, widest bar first so an outer bar claims its own stack
    for bar in sorted((g for g in glyphs if _is_bar(g, text_h)), key=lambda g: -g.w):
        if id(bar) in used:
            continue
        free = [g for g in glyphs if id(g) not in used]
        num = _stack(free, bar, text_h, above=True)
        den = _stack(free, bar, text_h, above=False)
        if not num or not den:
            continue
        if all(_is_bar(g, text_h) for g in num) or all(_is_bar(g, text_h) for g in den):
            continue  # an equals sign (or a stack of bars), not a fraction
        for g in (bar, *num, *den):
            used.add(id(g))
        blocks.append(Block("frac", [bar, *num, *den], [num, den]))
    # radicals: a stroke wider than tall whose box encloses other glyphs' centres
    for g in sorted(glyphs, key=lambda g: -g.w * g.h):
        if id(g) in used or g.w < 1.2 * g.h or g.h < 0.8 * text_h or g.area > 0.35 * g.w * g.h:
            continue
        inner = [
            o
            for o in glyphs
            if o is not g and id(o) not in used and g.x + 0.25 * g.h < o.cx < g.x2 and g.y < o.cy < g.y2
        ]
        if inner:
            for o in (g, *inner):
                used.add(id(o))
            blocks.append(Block("sqrt", [g, *inner], [inner]))
    for g in glyphs:
        if id(g) not in used:
            blocks.append(Block("run", [g], [[g]]))
    # rows: the tallest blocks found rows; a smaller block joins the row that holds its centre
    rows: list[list[Block]] = []
    for b in sorted(blocks, key=lambda b: (-(b.y2 - b.y), b.y, b.x)):
        centre = (b.y + b.y2) / 2
        for row in rows:
            if min(r.y for r in row) - 0.25 * text_h <= centre <= max(r.y2 for r in row) + 0.25 * text_h:
                row.append(b)
                break
        else:
            rows.append([b])
    merged: list[list[Block]] = []
    for row in rows:
        row.sort(key=lambda b: b.x)
        out: list[Block] = []
        for b in row:
            if b.kind == "run" and out and out[-1].kind == "run":
                out[-1].glyphs.extend(b.glyphs)
                out[-1].parts[0].extend(b.glyphs)
            else:
                out.append(b)
        merged.append(out)
    merged.sort(key=lambda r: min(b.y for b in r))
    return merged


# ---- backends -----------------------------------------------------------------------------------------
class RulesMathOCR(Backend):
    """Offline: RapidOCR's recogniser on the parts that the layout rules find."""

    name = "rules"
    tool = "MathOCR"

    def __init__(self) -> None:
        self._ocr = RapidOCRBackend()
        self._engine: Lazy[Any] = Lazy(self._load)
        self._lock = threading.Lock()

    def problem(self) -> str | None:
        if missing_modules(["cv2"]):
            return "needs OpenCV: pip install opencv-python-headless==4.14.0.94 (a toolgym dependency)"
        if not self._ocr.available():
            return f"needs {self._ocr.requirement}"
        return None

    def describe(self) -> str:
        return "offline: RapidOCR recogniser + layout rules (printed formulas: fractions, radicals, scripts)"

    def _load(self) -> Any:
        self.require()
        from rapidocr import RapidOCR

        models = self._ocr.bundled_models() or {}
        # explicit model paths keep RapidOCR off its download branch
        params = {f"{task}.model_path": str(path) for task, path in models.items()}
        return RapidOCR(params={**self._ocr.params, **params})

    def _read(self, rgb: np.ndarray, glyphs: list[Glyph], band: tuple[int, int] | None = None) -> str:
        """The recogniser's text for the box around `glyphs`, vertically widened to `band` (the
        row's extent, so that lower-case letters keep their size next to the row), padded
        with a thin white border: a wide border makes it read subscripts as plain digits."""
        import cv2

        x1 = max(min(g.x for g in glyphs) - 2, 0)
        x2 = max(g.x2 for g in glyphs) + 2
        y1 = max(min(g.y for g in glyphs) - 2, 0)
        y2 = max(g.y2 for g in glyphs) + 2
        if band is not None:
            y1, y2 = min(y1, band[0]), max(y2, band[1])
        crop = cv2.copyMakeBorder(rgb[y1:y2, x1:x2], 4, 4, 4, 4, cv2.BORDER_CONSTANT, value=(255, 255, 255))
        engine = self._engine.get()
        with self._lock:
            result = engine(np.ascontiguousarray(crop[:, :, ::-1]), use_det=False, use_cls=False)
        texts = getattr(result, "txts", None) or ()
        return "".join(str(t) for t in texts)

    def _latex(self, rgb: np.ndarray, block: Block, band: tuple[int, int]) -> str:
        if block.kind == "frac":
            num, den = (to_latex(self._read(rgb, part)) for part in block.parts)
            return rf"\frac{{{num}}}{{{den}}}"
        if block.kind == "sqrt":
            return rf"\sqrt{{{to_latex(self._read(rgb, block.parts[0]))}}}"
        return to_latex(self._read(rgb, block.parts[0], band))

    def recognize(self, path: Path) -> str:
        self.require()
        import cv2

        rgb = np.asarray(open_rgb(path))
        mask = ink_mask(cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY))
        lines = []
        for row in layout_rows(mask):
            plain = [g for b in row if b.kind == "run" for g in b.glyphs]
            band = (min(g.y for g in plain), max(g.y2 for g in plain)) if plain else (0, 0)
            lines.append("".join(self._latex(rgb, b, band) for b in row))
        return "\n".join(line for line in lines if line)


class ModelMathOCR(Backend):
    """A transformers VisionEncoderDecoder formula recogniser from a local directory."""

    name = "model"
    tool = "MathOCR"

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self.path = config.model_path("mathocr_model")
        self._model: Lazy[tuple[Any, Any, Any]] = Lazy(self._load)
        self._lock = threading.Lock()

    def problem(self) -> str | None:
        missing = missing_modules(["torch", "transformers"])
        if missing:
            return f"needs the Python package(s) {', '.join(missing)}: {ML_EXTRA}"
        return model_dir_problem(self.config, "mathocr_model")

    def describe(self) -> str:
        return f"VisionEncoderDecoder model {self.path}"

    def _load(self) -> tuple[Any, Any, Any]:
        self.require()
        transformers = load_module("transformers")
        quiet_hf()
        try:
            image_processor = transformers.AutoImageProcessor.from_pretrained(
                str(self.path), local_files_only=True
            )
            tokenizer = transformers.AutoTokenizer.from_pretrained(str(self.path), local_files_only=True)
            model = transformers.VisionEncoderDecoderModel.from_pretrained(
                str(self.path), local_files_only=True
            )
        except Exception as exc:
            raise load_failure("the formula recognition model", self.path, exc) from None
        return image_processor, tokenizer, model.to(self.config.device).eval()

    def recognize(self, path: Path) -> str:
        self.require()
        import torch

        image_processor, tokenizer, model = self._model.get()
        pixels = image_processor(images=open_rgb(path), return_tensors="pt").pixel_values.to(
            self.config.device
        )
        with self._lock, torch.no_grad():
            out = model.generate(
                pixel_values=pixels,
                max_new_tokens=new_tokens_limit(model, MAX_NEW_TOKENS),
                do_sample=False,
                num_beams=1,
            )
        return " ".join(str(tokenizer.batch_decode(out, skip_special_tokens=True)[0]).split())


class MathpixMathOCR(Backend):
    """The Mathpix v3/text API (MATHPIX_APP_ID / MATHPIX_APP_KEY), as GTA's MathOCR used it."""

    name = "mathpix"
    tool = "MathOCR"

    def __init__(self, config: ModelConfig) -> None:
        self.app_id = config.mathpix_app_id
        self.app_key = config.mathpix_app_key
        self.url = config.mathpix_url
        self.timeout_s = config.http_timeout_s

    def problem(self) -> str | None:
        if not (self.app_id and self.app_key):
            return "no API credentials: set MATHPIX_APP_ID and MATHPIX_APP_KEY (and TOOLGYM_MATHOCR_BACKEND=mathpix)"
        return None

    def describe(self) -> str:
        return f"Mathpix API at {self.url} (credentials set)"

    def recognize(self, path: Path) -> str:
        self.require()
        options = {"math_inline_delimiters": ["$", "$"], "rm_spaces": True}
        payload = post_json_api(
            "Mathpix",
            self.url,
            self.timeout_s,
            files={"file": (path.name, path.read_bytes())},
            data={"options_json": json.dumps(options)},
            headers={"app_id": self.app_id or "", "app_key": self.app_key or ""},
        )
        if payload.get("error"):
            # Mathpix reports unreadable images in the body with HTTP 200
            raise ToolError(f"Mathpix could not read the image: {payload.get('error')}")
        text = payload.get("latex_styled") or payload.get("text") or ""
        return str(text).strip()


MathOCRBackend = RulesMathOCR | ModelMathOCR | MathpixMathOCR


def mathocr_backends(config: ModelConfig) -> list[MathOCRBackend]:
    return [ModelMathOCR(config), MathpixMathOCR(config), RulesMathOCR()]


def select_mathocr(config: ModelConfig, backends: list[MathOCRBackend]) -> MathOCRBackend:
    by_name = {b.name: b for b in backends}
    if config.mathocr_backend != "auto":
        return by_name[config.mathocr_backend]
    model = by_name["model"]
    return model if model.usable() else by_name["rules"]


def make_mathocr_tool(config: ModelConfig | None = None) -> Tool:
    cfg = config or ModelConfig()
    backend = select_mathocr(cfg, mathocr_backends(cfg))

    @tool(name="MathOCR", category="logic", description=DESCRIPTION, backend=backend.name)
    def math_ocr(image: Image) -> str:
        backend.require()
        open_rgb(image.path)  # a corrupt file is the agent's tool_error, whatever the backend
        latex = backend.recognize(image.path)
        if not latex:
            raise ToolError("no formula found in the image")
        return latex

    return math_ocr
