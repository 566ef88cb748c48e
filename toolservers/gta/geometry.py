"""Parsing of the coordinate strings GTA's image tools take: `(x1, y1, x2, y2)` boxes and `(x, y)` points.

Agents write these in many shapes (`(10, 20, 30, 40)`, `[10 20 30 40]`, `10.5,20,30,40`), so the
parser is tolerant about brackets, separators and int/float, and strict about everything else:
the string must hold exactly the expected count of finite numbers. It never evaluates the text.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from toolgym.errors import ToolError

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_SEPARATOR = r"\s*[,;\s]\s*"
_BRACKETS = {"(": ")", "[": "]", "{": "}"}


def parse_numbers(text: str, count: int, *, what: str, example: str) -> tuple[float, ...]:
    """Exactly `count` finite numbers from `text`, or a ToolError saying what was expected."""
    s = text.strip()
    if len(s) >= 2 and s[0] in _BRACKETS and s[-1] == _BRACKETS[s[0]]:
        s = s[1:-1].strip()
    pattern = rf"{_NUMBER}(?:{_SEPARATOR}{_NUMBER}){{{count - 1}}}"
    if not re.fullmatch(pattern, s):
        raise ToolError(f"invalid {what} {text!r}: expected {count} numbers like {example!r}")
    values = tuple(float(v) for v in re.findall(_NUMBER, s))
    if not all(math.isfinite(v) for v in values):
        raise ToolError(f"invalid {what} {text!r}: coordinates must be finite numbers")
    return values


@dataclass(frozen=True)
class Box:
    """A pixel box with integer corners; (x1, y1) top-left, (x2, y2) bottom-right."""

    x1: int
    y1: int
    x2: int
    y2: int

    def as_tuple(self) -> tuple[int, int, int, int]:
        return (self.x1, self.y1, self.x2, self.y2)


def parse_bbox(text: str, size: tuple[int, int]) -> Box:
    """A box inside an image of `size` (width, height); coordinates are rounded to whole pixels.

    Corners may lie on the image border (0..width, 0..height) because OCR and detection tools
    report exclusive right/bottom edges."""
    x1, y1, x2, y2 = (round(v) for v in parse_numbers(text, 4, what="bbox", example="(x1, y1, x2, y2)"))
    width, height = size
    if x2 <= x1 or y2 <= y1:
        raise ToolError(
            f"invalid bbox {text!r}: need x1 < x2 and y1 < y2 ((x1, y1) is the top-left corner, "
            "(x2, y2) the bottom-right one)"
        )
    if x1 < 0 or y1 < 0 or x2 > width or y2 > height:
        raise ToolError(
            f"bbox {text!r} lies outside the image: it is {width}x{height}, "
            f"so x must be in 0..{width} and y in 0..{height}"
        )
    return Box(x1, y1, x2, y2)


def parse_point(text: str, size: tuple[int, int]) -> tuple[int, int]:
    """A point `(x, y)` inside an image of `size` (width, height), rounded to whole pixels."""
    x, y = (round(v) for v in parse_numbers(text, 2, what="position", example="(x, y)"))
    width, height = size
    if not (0 <= x <= width and 0 <= y <= height):
        raise ToolError(
            f"position {text!r} lies outside the image: it is {width}x{height}, "
            f"so x must be in 0..{width} and y in 0..{height}"
        )
    return (x, y)
