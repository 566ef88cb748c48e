"""Tool sets the recorder tests load by name (`--toolset tests.recorder.toolsets:<factory>`):
the built-in tools with one tool deliberately changed, to see verify catch the drift."""

from __future__ import annotations

from toolgym.tools import Tool, ToolSet, tool
from toolgym.toolservers.gta.calculator import DESCRIPTION, calculate
from toolgym.toolservers.gta.calculator import calculator as real_calculator
from toolgym.toolservers.registry import builtin_tools


def _replace(replacement: Tool) -> ToolSet:
    return ToolSet(replacement if t.name == replacement.name else t for t in builtin_tools())


@tool(name="Calculator", category="logic", description=DESCRIPTION, version=real_calculator.version)
def changed_calculator_tool(expression: str) -> str:
    """A Calculator whose backend changed its number format (same name, same version)."""
    return calculate(expression) + "0"


def changed_calculator() -> ToolSet:
    return _replace(changed_calculator_tool)


def builtin() -> ToolSet:
    return ToolSet(builtin_tools())
