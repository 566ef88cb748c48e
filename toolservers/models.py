"""`toolgym models`: every backend of every GTA tool, whether it can run on this machine and why.

Nothing is loaded or downloaded: each backend checks its packages, model files and keys only.
The `selected` column marks what the tool uses under the current configuration (environment
variables, see toolservers/gta/config.py).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from toolgym.plugins import Plugin, PluginError, call_factory, collect
from toolgym.toolservers.gta.config import BackendStatus, ModelConfig


def _status(tool: str, backend: str, problem: str | None, ready: str, selected: bool) -> BackendStatus:
    return BackendStatus(
        tool=tool, backend=backend, usable=problem is None, detail=problem or ready, selected=selected
    )


def backend_statuses(config: ModelConfig | None = None) -> list[BackendStatus]:
    """One row per (tool, backend): the `toolgym.models` entry points' rows (toolgym.plugins), GTA's
    in its tool order first, then the simulators' and the installed packages'."""
    cfg = config if config is not None else ModelConfig.from_env()
    found, _ = collect("models", lambda plugin, loaded: _rows_of(plugin, loaded, cfg))
    return [row for rows in found.values() for row in rows]


def _rows_of(plugin: Plugin, loaded: Any, config: ModelConfig) -> list[tuple[str, list[BackendStatus]]]:
    """A `toolgym.models` entry point's rows: a callable (given `config=` when it takes one)
    returning BackendStatus rows."""
    rows = list(call_factory(loaded, config=config)) if callable(loaded) else None
    if rows is None or not all(isinstance(r, BackendStatus) for r in rows):
        raise PluginError(f"loads {loaded!r}, not a callable returning BackendStatus rows")
    return [(plugin.name, rows)]


def gta_statuses(config: ModelConfig | None = None) -> list[BackendStatus]:
    """One row per (tool, backend) of GTA's tools, in GTA's tool order."""
    from toolgym.toolservers.gta.detection import detection_backends
    from toolgym.toolservers.gta.image_description import caption_backends
    from toolgym.toolservers.gta.mathocr import mathocr_backends, select_mathocr
    from toolgym.toolservers.gta.ocr import RapidOCRBackend, TesseractBackend
    from toolgym.toolservers.gta.paddle_ocr import PaddleOCRBackend
    from toolgym.toolservers.gta.region_attribute import region_backends
    from toolgym.toolservers.gta.search import search_backends
    from toolgym.toolservers.gta.stylization import stylization_backends
    from toolgym.toolservers.gta.text_to_image import text_to_image_backends
    from toolgym.toolservers.sandbox import available_isolations

    cfg = config if config is not None else ModelConfig.from_env()
    rows: list[BackendStatus] = []

    rapid, tess, paddle = RapidOCRBackend(), TesseractBackend(), PaddleOCRBackend(cfg)
    rows.append(
        _status(
            "OCR",
            "rapidocr",
            None if rapid.available() else f"needs {rapid.requirement}",
            "RapidOCR with the PP-OCR models bundled in its wheel",
            cfg.ocr_backend == "rapidocr",
        )
    )
    rows.append(
        _status(
            "OCR",
            "tesseract",
            None if tess.available() else f"needs {tess.requirement}",
            "pytesseract + tesseract",
            cfg.ocr_backend == "tesseract",
        )
    )
    rows.append(
        _status(
            "OCR",
            "paddleocr",
            paddle.problem(),
            f"PaddleOCR models in {paddle.root}",
            cfg.ocr_backend == "paddleocr",
        )
    )

    for b in caption_backends(cfg):
        rows.append(b.status(selected=True))

    vqa, colour = region_backends(cfg)
    rows.append(vqa.status(selected=vqa.usable()))
    rows.append(colour.status(selected=not vqa.usable()))

    for d in detection_backends(cfg):
        status = d.status(selected=d.name in cfg.detection_backends)
        for tool in ("TextToBbox", "CountGivenObject"):
            rows.append(BackendStatus(tool, status.backend, status.usable, status.detail, status.selected))

    rows.append(_status("DrawBox", "pillow", None, "Pillow drawing", True))
    rows.append(_status("AddText", "pillow", None, "Pillow drawing", True))

    for s in search_backends(cfg):
        rows.append(s.status(selected=s.name == cfg.search_backend))

    rows.append(_status("Calculator", "builtin", None, "safe expression evaluator (no eval)", True))
    isolations = available_isolations()
    sandbox = f"sandboxed subprocess ({', '.join(isolations) or 'rlimits and audit hooks only'})"
    rows.append(_status("Solver", "sandbox", None, sandbox, True))
    rows.append(_status("Plot", "sandbox", None, sandbox, True))

    math_backends = mathocr_backends(cfg)
    chosen = select_mathocr(cfg, math_backends)
    for m in math_backends:
        rows.append(m.status(selected=m is chosen))

    for t in text_to_image_backends(cfg):
        rows.append(t.status(selected=True))
    for t in stylization_backends(cfg):
        rows.append(t.status(selected=True))
    return rows


def simulated_statuses() -> list[BackendStatus]:
    """The simulators of tools known only by their documentation (toolgym.mocks.simulated)."""
    from importlib.metadata import version

    from toolgym.mocks.simulated.app import bundled_libraries
    from toolgym.mocks.simulated.simulator import DETERMINISTIC, LLM

    libraries = bundled_libraries()
    tool = f"simulated tools ({len(libraries)} bundled libraries)"
    return [
        BackendStatus(
            tool,
            DETERMINISTIC,
            True,
            f"no LLM: answers derived from the docs, values from Faker {version('faker')}",
            True,
        ),
        BackendStatus(
            tool,
            LLM,
            True,
            "an OpenAI-compatible endpoint writes answers from the docs, checked against their "
            "return schema; chosen per run, replayed from cassettes",
            False,
        ),
    ]


def models_command(
    as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of a table")] = False,
) -> None:
    """List every backend of every tool: usable on this machine or not, and why."""
    rows = backend_statuses()
    if as_json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
        return
    table = Table(title="toolgym models: tool backends on this machine")
    for column in ("tool", "backend", "selected", "usable", "detail"):
        table.add_column(column, overflow="fold")
    for r in rows:
        table.add_row(
            r.tool,
            r.backend,
            "*" if r.selected else "",
            "[green]yes[/green]" if r.usable else "[red]no[/red]",
            escape(r.detail),  # details quote pip extras like 'toolgym[ml]'
        )
    Console().print(table)
