"""The registered tools, by name: the `toolgym.tools` entry points (toolgym.plugins), GTA's and
those of installed packages.

All 14 GTA tools are registered whatever is installed: a tool whose backend cannot run on this
machine is still listed and answers with a tool_error that says what would make it work
(`toolgym models` shows the same, for every backend). Backends are chosen by `ModelConfig`,
read from the environment (see toolservers/gta/config.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from toolgym.plugins import Plugin, PluginError, call_factory, collect
from toolgym.tasks import Task
from toolgym.tools import BaseTool, Tool, ToolSet
from toolgym.toolservers.gta.config import ModelConfig


def ocr_tool(config: ModelConfig) -> Tool:
    """GTA's OCR over the backend that TOOLGYM_OCR_BACKEND names (default: RapidOCR)."""
    from toolgym.toolservers.gta import ocr

    if config.ocr_backend == "tesseract":
        return ocr.make_ocr_tool(ocr.TesseractBackend())
    if config.ocr_backend == "paddleocr":
        from toolgym.toolservers.gta.paddle_ocr import PaddleOCRBackend

        return ocr.make_ocr_tool(PaddleOCRBackend(config))
    return ocr.ocr  # the shared RapidOCR engine, loaded once per process


def all_gta_tools(config: ModelConfig | None = None) -> list[Tool]:
    """GTA's 14 tools with the names, parameters and return types of its toolmeta.json."""
    from toolgym.toolservers.gta.calculator import calculator
    from toolgym.toolservers.gta.detection import make_detection_tools
    from toolgym.toolservers.gta.drawing import addtext, drawbox
    from toolgym.toolservers.gta.image_description import make_image_description_tool
    from toolgym.toolservers.gta.mathocr import make_mathocr_tool
    from toolgym.toolservers.gta.plot import plot_tool
    from toolgym.toolservers.gta.region_attribute import make_region_attribute_tool
    from toolgym.toolservers.gta.search import make_google_search_tool
    from toolgym.toolservers.gta.solver import solver_tool
    from toolgym.toolservers.gta.stylization import make_stylization_tool
    from toolgym.toolservers.gta.text_to_image import make_text_to_image_tool

    cfg = config if config is not None else ModelConfig.from_env()
    text_to_bbox, count_given_object = make_detection_tools(cfg)
    # the six original offline tools first, in their old order, so existing listings keep it
    return [
        calculator,
        ocr_tool(cfg),
        drawbox,
        addtext,
        solver_tool,
        plot_tool,
        make_google_search_tool(cfg),
        make_image_description_tool(cfg),
        make_region_attribute_tool(cfg),
        text_to_bbox,
        count_given_object,
        make_mathocr_tool(cfg),
        make_text_to_image_tool(cfg),
        make_stylization_tool(cfg),
    ]


def _tools_of(loaded: Any, config: ModelConfig | None) -> list[tuple[str, BaseTool]]:
    """What a `toolgym.tools` entry point gives: a tool, a list of them, or a factory of either
    (called with `config=` when it takes one)."""
    made = loaded if isinstance(loaded, BaseTool) else call_factory(loaded, config=config)
    tools = list(made) if isinstance(made, Sequence | ToolSet) else [made]
    for t in tools:
        if not isinstance(t, BaseTool):
            raise PluginError(f"gives {t!r}, not a tool (a @tool function or a BaseTool)")
    return [(t.name, t) for t in tools]


def builtin_tools(config: ModelConfig | None = None) -> list[BaseTool]:
    """Every registered tool (`toolgym.tools` entry points): GTA's 14, whose tools without a usable
    backend answer with a tool_error, then the installed packages' tools."""
    found, _ = collect("tools", lambda _plugin, loaded: _tools_of(loaded, config))
    return list(found.values())


def tool_owners(config: ModelConfig | None = None) -> dict[str, Plugin]:
    """Each registered tool's name and the entry point that registered it."""
    _, owners = collect("tools", lambda _plugin, loaded: _tools_of(loaded, config))
    return owners


def tools_beside_worlds(tasks: Iterable[Task]) -> ToolSet:
    """The registered tools (toolgym's and plug-ins') that tasks use beside their apps' worlds:
    every one for a task without apps (its episode offers the built-in tool set), else those a
    task with apps names (`ConvertUnits` beside the pantry app). A name no one registered is
    left to the env, which says which task names it when the task is used."""
    tasks = list(tasks)
    if all(t.apps and not t.tools for t in tasks):
        return ToolSet()
    registered = default_toolset()
    if any(not t.apps for t in tasks):
        return registered
    named = {name for t in tasks for name in t.tools or ()}
    return registered.subset([name for name in registered.names if name in named])


def default_toolset(config: ModelConfig | None = None) -> ToolSet:
    return ToolSet(builtin_tools(config))
