"""The four GTA tools with real offline backends: Calculator, OCR, DrawBox and AddText."""

from __future__ import annotations

from toolgym.tools import Tool

from .calculator import calculator
from .drawing import addtext, drawbox
from .ocr import ocr


def gta_basic_tools() -> list[Tool]:
    """Calculator, OCR (RapidOCR backend), DrawBox, AddText, in GTA's naming."""
    return [calculator, ocr, drawbox, addtext]
