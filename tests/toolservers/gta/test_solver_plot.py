"""GTA's Solver and Plot: schema parity with GTA's toolmeta.json, and real sandboxed runs."""

from __future__ import annotations

import io
import json
import textwrap
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from PIL import Image

from tests.shared_data import GTA_TOOLMETA as TOOLMETA
from toolgym.actions import Observation, ToolCall
from toolgym.errors import ErrorKind
from toolgym.files import FileStore
from toolgym.tools import ToolContext, ToolSet
from toolgym.toolservers.gta import plot as plot_module
from toolgym.toolservers.gta import solver as solver_module
from toolgym.toolservers.gta.plot import make_plot_tool, plot_tool
from toolgym.toolservers.gta.solver import gta_sandbox_tools, make_solver_tool, solver_tool
from toolgym.toolservers.sandbox import SandboxLimits


def example(description: str) -> str:
    """The ```python block of a GTA description, fences included (as an agent would send it)."""
    return description[description.index("```python") :]


@pytest.fixture(scope="module")
def ts() -> ToolSet:
    return ToolSet([solver_tool, plot_tool])


def call(ts: ToolSet, name: str, command: str, ctx: ToolContext | None = None) -> Observation:
    return ts.call(ToolCall(name=name, arguments={"command": command}), ctx or ToolContext(files=FileStore()))


# ---- schema ----------------------------------------------------------------------------------------
def test_schema_matches_gta() -> None:
    assert solver_tool.name == "Solver" and plot_tool.name == "Plot"
    assert solver_tool.category == "logic" and plot_tool.category == "logic"
    for t in (solver_tool, plot_tool):
        assert [(p.name, p.type, p.description, p.optional) for p in t.params] == [
            ("command", "text", "Markdown format Python code", False)
        ]
        assert t.parameters_schema()["required"] == ["command"]
    assert [r.type for r in solver_tool.returns] == ["text"]
    assert [r.type for r in plot_tool.returns] == ["image"]


@pytest.mark.skipif(not TOOLMETA.exists(), reason="GTA data not available")
def test_descriptions_and_agentlego_meta_are_verbatim() -> None:
    meta: dict[str, Any] = json.loads(TOOLMETA.read_text())
    exported = ToolSet([solver_tool, plot_tool]).to_agentlego_toolmeta()
    for name in ("Solver", "Plot"):
        assert exported[name]["description"] == meta[name]["description"]
        assert exported[name] == {key: meta[name][key] for key in exported[name]}


def test_gta_sandbox_tools() -> None:
    assert [t.name for t in gta_sandbox_tools()] == ["Solver", "Plot"]
    assert gta_sandbox_tools()[0] is solver_tool
    custom = gta_sandbox_tools(SandboxLimits(wall_timeout_s=5.0))
    assert [t.name for t in custom] == ["Solver", "Plot"] and custom[0] is not solver_tool


# ---- Solver ----------------------------------------------------------------------------------------
def test_solver_solves_the_toolmeta_example(ts: ToolSet) -> None:
    obs = call(ts, "Solver", example(solver_module.DESCRIPTION))
    assert obs.error is None, obs.text
    for solution in (
        "{x: -4, y: -2}",
        "{x: 4, y: 2}",
        "{x: -3*sqrt(2), y: -sqrt(2)}",
        "{x: 3*sqrt(2), y: sqrt(2)}",
    ):
        assert solution in obs.text
    assert obs.content == obs.text


def test_solver_accepts_prose_around_fences_and_gta_headers(ts: ToolSet) -> None:
    command = (
        "Let me solve it.\n```python\ndef solution():\n    x = symbols('x')\n"
        "    return solve(Eq(x**2, 9), x)\n```\nDone."
    )
    obs = call(ts, "Solver", command)
    assert obs.error is None, obs.text
    assert obs.text == "[-3, 3]"  # str() of a non-str result, like AgentLego


def test_solver_ignores_prints(ts: ToolSet) -> None:
    obs = call(ts, "Solver", "def solution():\n    print('noise')\n    return '42'\n")
    assert obs.text == "42"


@pytest.mark.parametrize(
    ("command", "fragments"),
    [
        ("x = 1\n", ("solution",)),
        ("def solution(:\n    pass\n", ("SyntaxError",)),
        ("def solution():\n    a = 1\n    return a / 0\n", ("ZeroDivisionError: division by zero", "line 3")),
        ("def solution():\n    raise ValueError('bad input')\n", ("ValueError: bad input",)),
        ("import sys\ndef solution():\n    sys.exit(3)\n", ("SystemExit",)),
        ("import os\ndef solution():\n    os._exit(0)\n", ("ended the process",)),
        ("from sympy import nonexistent_name\n", ("ImportError",)),
    ],
)
def test_solver_reports_code_errors(ts: ToolSet, command: str, fragments: tuple[str, ...]) -> None:
    obs = call(ts, "Solver", command)
    assert obs.error is not None and obs.error.kind == ErrorKind.TOOL_ERROR, obs.text
    for fragment in fragments:
        assert fragment in obs.error.message


def test_solver_output_and_code_size_caps() -> None:
    small = ToolSet([make_solver_tool(SandboxLimits(max_output_chars=100, max_code_bytes=2000))])
    obs = call(small, "Solver", "def solution():\n    return 'x' * 1000\n")
    assert obs.error is not None and obs.error.kind == ErrorKind.TOOL_ERROR
    assert "output too large" in obs.error.message
    obs = call(small, "Solver", "# padding\n" * 500 + "def solution():\n    return 1\n")
    assert obs.error is not None and obs.error.kind == ErrorKind.ARGUMENT_ERROR
    assert "code too large" in obs.error.message


def test_concurrent_calls_are_independent() -> None:
    ts = ToolSet([solver_tool])
    commands = [
        f"def solution():\n    open('mine.txt', 'w').write('{i}')\n    return open('mine.txt').read()\n"
        for i in range(4)
    ]
    with ThreadPoolExecutor(max_workers=4) as pool:
        texts = [obs.text for obs in pool.map(lambda c: call(ts, "Solver", c), commands)]
    assert texts == ["0", "1", "2", "3"]


# ---- Plot ------------------------------------------------------------------------------------------
def test_plot_returns_a_png_in_the_file_store(ts: ToolSet) -> None:
    ctx = ToolContext(files=FileStore())
    obs = call(ts, "Plot", example(plot_module.DESCRIPTION), ctx)
    assert obs.error is None, obs.text
    assert len(obs.files) == 1
    handle = obs.files[0]
    assert handle.media_type == "image/png"
    assert obs.text == f"image {handle.ref}"
    data = ctx.files.resolve(handle.ref).read_bytes()
    image = Image.open(io.BytesIO(data))
    assert image.format == "PNG"
    assert image.size == (800, 600)  # figsize=(8, 6) at matplotlib's default 100 dpi
    rgb = image.convert("RGB")
    colors = rgb.getcolors(maxcolors=1 << 16)
    assert colors is not None and len(colors) > 20  # a pie with labels, not a blank canvas
    assert rgb.getextrema() != ((255, 255), (255, 255), (255, 255))


def test_plot_uses_the_plt_header(ts: ToolSet) -> None:
    command = "def solution():\n    fig = plt.figure(figsize=(2, 1))\n    plt.plot([0, 1])\n    return fig\n"
    obs = call(ts, "Plot", command)
    assert obs.error is None, obs.text


def test_plot_must_return_a_figure(ts: ToolSet) -> None:
    obs = call(ts, "Plot", "def solution():\n    plt.plot([1, 2])\n    return plt\n")
    assert obs.error is not None and obs.error.kind == ErrorKind.TOOL_ERROR
    assert "must return a matplotlib Figure" in obs.error.message


def test_plot_image_size_cap() -> None:
    small = ToolSet([make_plot_tool(SandboxLimits(max_image_bytes=2000))])
    code = textwrap.dedent("""
        import numpy as np
        def solution():
            fig = plt.figure(figsize=(4, 4))
            plt.imshow(np.random.default_rng(0).random((200, 200)))
            return fig
    """)
    obs = call(small, "Plot", code)
    assert obs.error is not None and obs.error.kind == ErrorKind.TOOL_ERROR
    assert "too large" in obs.error.message
