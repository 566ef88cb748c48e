"""GTA's DrawBox and AddText: Pillow drawing on a copy of the input image, returned as a new PNG.

Behaviour follows GTA's AgentLego fork (`agentlego/tools/image_editing/{draw_box,add_text}.py`):
DrawBox fills the box with translucent red and outlines it in red, with an optional red label
above it; AddText writes text anchored at a point or at one of nine named spots. Differences,
on purpose: bad boxes, positions and colours are reported as tool errors instead of being drawn
off-image or raising ValueError; the outline is at least 2 px so it shows on large photos; and
a label that would leave the top edge is drawn just inside the box instead.

Output is deterministic: the same input gives a byte-identical PNG (Pillow's bundled font,
no timestamps in the file).
"""

from __future__ import annotations

import hashlib
import io
import re
from pathlib import PurePosixPath
from typing import Annotated

from PIL import Image as PILImage
from PIL import ImageColor, ImageDraw, ImageFont, ImageOps, UnidentifiedImageError

from toolgym.errors import ToolError
from toolgym.files import FileHandle, StoredFile
from toolgym.tools import FileParam, Image, Param, ToolContext, tool

from .geometry import parse_bbox, parse_point

DRAWBOX_DESCRIPTION = "A tool to draw a box on a certain region of the input image."
# GTA's toolmeta.json gives AddText the same description as DrawBox (a copy-paste slip upstream);
# it is kept verbatim so agents see exactly what GTA showed them.
ADDTEXT_DESCRIPTION = "A tool to draw a box on a certain region of the input image."
BBOX_DESCRIPTION = "The bbox coordinate in the format of `(x1, y1, x2, y2)`"
ANNOTATION_DESCRIPTION = "The extra annotation text of the bbox"
POSITION_DESCRIPTION = (
    'The left-bottom corner coordinate in the format of `(x, y)`, or a combination of ["l"(left), '
    '"m"(middle), "r"(right)] and ["t"(top), "m"(middle), "b"(bottom)] like "mt" for middle-top'
)

BOX_COLOR = (255, 0, 0)
BOX_FILL_ALPHA = 64  # GTA's translucent fill
MAX_TEXT_CHARS = 1000

ImageResult = Annotated[FileHandle, FileParam("image")]


# ---- shared helpers ---------------------------------------------------------------------------
def load_image(stored: StoredFile) -> PILImage.Image:
    """Decode an image file fully, or fail with a ToolError (corrupt file, decompression bomb).

    EXIF rotation is applied, as the OCR tool does, so boxes read by OCR land on the same pixels."""
    try:
        with PILImage.open(stored.path) as img:
            img.load()
            return ImageOps.exif_transpose(img)
    except (UnidentifiedImageError, PILImage.DecompressionBombError, OSError, SyntaxError) as exc:
        raise ToolError(f"cannot read image {stored.handle.name or stored.handle.ref}: {exc}") from None


def _has_alpha(img: PILImage.Image) -> bool:
    return img.mode in ("RGBA", "LA", "PA") or "transparency" in img.info


def _working_copy(img: PILImage.Image) -> PILImage.Image:
    """RGBA when the input has transparency (kept), RGB otherwise (grey and palette images gain colour)."""
    return img.convert("RGBA" if _has_alpha(img) else "RGB")


def font_for(size: tuple[int, int]) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    # GTA's size rule (18 px on a 336 px tall image), floored so small images stay legible.
    return ImageFont.load_default(size=max(10, int(size[1] / 336 * 18)))


def parse_color(color: str) -> tuple[int, ...]:
    try:
        return ImageColor.getrgb(color.strip())
    except (ValueError, AttributeError):
        raise ToolError(
            f"unknown colour {color!r}: use a colour name such as 'red', 'blue', 'white' "
            "or a hex code such as '#ff0000'"
        ) from None


def store_png(ctx: ToolContext, img: PILImage.Image, source: StoredFile, suffix: str) -> FileHandle:
    """PNG-encode and store; the name carries the source stem and a content hash, so it is unique."""
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    data = buf.getvalue()
    stem = PurePosixPath(source.handle.name or "image").stem or "image"
    name = f"image/{stem}_{suffix}_{hashlib.sha256(data).hexdigest()[:8]}.png"
    return ctx.files.put_bytes(data, name=name, media_type="image/png")


def _check_text(text: str, what: str) -> None:
    if len(text) > MAX_TEXT_CHARS:
        raise ToolError(f"{what} is too long ({len(text)} characters; at most {MAX_TEXT_CHARS})")


# ---- DrawBox ------------------------------------------------------------------------------------
def draw_box(img: PILImage.Image, bbox: str, annotation: str | None = None) -> PILImage.Image:
    """The pure drawing step of DrawBox (exposed for reuse and tests)."""
    box = parse_bbox(bbox, img.size)
    base = img.convert("RGBA")
    overlay = PILImage.new("RGBA", base.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    width = max(2, min(base.size) // 200)
    # PIL's rectangle includes its right/bottom edge; boxes here are exclusive, as OCR reports them
    rect = (box.x1, box.y1, box.x2 - 1, box.y2 - 1)
    draw.rectangle(rect, fill=(*BOX_COLOR, BOX_FILL_ALPHA), outline=(*BOX_COLOR, 255), width=width)
    annotation = " ".join((annotation or "").split())  # a label is one line: PIL anchors need that
    if annotation:
        font = font_for(base.size)
        _, top, _, _ = draw.textbbox((box.x1, box.y1 - 5), annotation, font=font, anchor="lb")
        if top >= 0:
            draw.text((box.x1, box.y1 - 5), annotation, fill=(*BOX_COLOR, 255), font=font, anchor="lb")
        else:  # no room above the box: write just inside its top-left corner
            draw.text(
                (box.x1 + width + 2, box.y1 + width + 2),
                annotation,
                fill=(*BOX_COLOR, 255),
                font=font,
                anchor="la",
            )
    out = PILImage.alpha_composite(base, overlay)
    return out if _has_alpha(img) else out.convert("RGB")


@tool(name="DrawBox", category="operation", description=DRAWBOX_DESCRIPTION)
def drawbox(
    image: Image,
    bbox: Annotated[str, Param(BBOX_DESCRIPTION)],
    ctx: ToolContext,
    annotation: Annotated[str | None, Param(ANNOTATION_DESCRIPTION)] = None,
) -> ImageResult:
    if annotation is not None:
        _check_text(annotation, "annotation")
    out = draw_box(load_image(image), bbox, annotation)
    return store_png(ctx, out, image, "box")


# ---- AddText ------------------------------------------------------------------------------------
_HORIZONTAL_WORDS = {"l": "l", "left": "l", "r": "r", "right": "r"}
_VERTICAL_WORDS = {"t": "t", "top": "t", "upper": "t", "b": "b", "bottom": "b", "lower": "b"}
_MIDDLE_WORDS = {"m", "middle", "c", "center", "centre"}


def named_position(position: str) -> str | None:
    """'mt'-style code (horizontal l/m/r, then vertical t/m/b) for a named position, else None.

    Accepts GTA's codes, the same letters in the other order ('tl' for 'lt'), and words
    ('top left', 'middle-top', 'center', 'lower right')."""
    s = position.strip().lower()
    if re.fullmatch(r"[lmr][tmb]", s):
        return s
    parts = re.split(r"[\s\-_,]+", s) if re.search(r"[\s\-_,]", s) else ([*s] if len(s) == 2 else [s])
    horizontal = vertical = None
    middles = 0
    for part in parts:
        if part in _HORIZONTAL_WORDS and horizontal is None:
            horizontal = _HORIZONTAL_WORDS[part]
        elif part in _VERTICAL_WORDS and vertical is None:
            vertical = _VERTICAL_WORDS[part]
        elif part in _MIDDLE_WORDS:
            middles += 1
        else:
            return None
    if len(parts) > 2 or (horizontal is None and vertical is None and middles == 0):
        return None
    return f"{horizontal or 'm'}{vertical or 'm'}"


def add_text(img: PILImage.Image, text: str, position: str, color: str = "red") -> PILImage.Image:
    """The pure drawing step of AddText (exposed for reuse and tests)."""
    if not text.strip():
        raise ToolError("text is empty: nothing to add")
    fill = parse_color(color)
    out = _working_copy(img)
    w, h = out.size
    draw = ImageDraw.Draw(out)
    font = font_for(out.size)
    # the ink box of the text when its first line's top-left ascender point sits at (0, 0)
    left, top, right, bottom = draw.multiline_textbbox((0, 0), text, font=font, anchor="la")
    tw, th = right - left, bottom - top
    code = named_position(position)
    if code is not None:
        m = w // 20  # GTA's margin
        ax = {"l": m, "m": w // 2, "r": w - m}[code[0]]
        ay = {"t": m, "m": h // 2, "b": h - m}[code[1]]
    else:
        if not re.search(r"\d", position):
            raise ToolError(
                f"invalid position {position!r}: use '(x, y)' for the text's bottom-left corner, or two "
                "letters, l/m/r then t/m/b, such as 'lt', 'mt', 'mm', 'rb'"
            )
        ax, ay = parse_point(position, (w, h))
        code = "lb"  # a point is the bottom-left corner of the text
    # top-left corner of the ink box from the anchor point and the anchor code
    x0 = {"l": ax, "m": ax - tw // 2, "r": ax - tw}[code[0]]
    y0 = {"t": ay, "m": ay - th // 2, "b": ay - th}[code[1]]
    draw.multiline_text((x0 - left, y0 - top), text, fill=fill, font=font, anchor="la")
    return out


@tool(name="AddText", category="operation", description=ADDTEXT_DESCRIPTION)
def addtext(
    image: Image,
    text: str,
    position: Annotated[str, Param(POSITION_DESCRIPTION)],
    ctx: ToolContext,
    color: str = "red",
) -> ImageResult:
    _check_text(text, "text")
    out = add_text(load_image(image), text, position, color)
    return store_png(ctx, out, image, "text")
