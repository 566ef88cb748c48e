"""The built-in tools, by name."""

from __future__ import annotations

from toolgym.tools import Tool, ToolSet


def builtin_tools() -> list[Tool]:
    """The tools that run offline on a CPU with the default install."""
    from toolgym.toolservers.gta.basic import gta_basic_tools
    from toolgym.toolservers.gta.plot import plot_tool
    from toolgym.toolservers.gta.solver import solver_tool

    return [*gta_basic_tools(), solver_tool, plot_tool]


def default_toolset() -> ToolSet:
    return ToolSet(builtin_tools())
