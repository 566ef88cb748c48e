"""GTA's Solver: model-written sympy code, run in the sandbox (toolservers/sandbox.py).

Same schema as AgentLego's Solver (name, category, one `command` parameter, text result) and the
same contract: the code defines `solution()`, whose return value comes back as `str(...)`; the
command may be wrapped in Markdown fences (the first ```python block is used). AgentLego puts
`from sympy import symbols, Eq, solve` in front of the code; so does the sandbox. The code never
runs in this process: see toolservers/sandbox.py for the isolation and the error mapping.
"""

from __future__ import annotations

from typing import Annotated

from toolgym.tools import Param, Tool, tool
from toolgym.toolservers.gta.plot import make_plot_tool
from toolgym.toolservers.sandbox import Isolation, SandboxLimits, run_python

# Verbatim from GTA's toolmeta.json ("Solver").
DESCRIPTION = (
    "This tool can execute Python code to solve math equations. The code should include a "
    "function named 'solution'. You should use the `sympy` library in your code to solve the "
    "equations. The function should return its answer in str format. Avoid printing the answer. "
    "The code instance format is as follows:\n\n"
    "```python\n"
    "# import packages\n"
    "from sympy import symbols, Eq, solve\n"
    "def solution():\n"
    "    # Define symbols\n"
    "    x, y = symbols('x y')\n"
    "\n"
    "    # Define equations\n"
    "    equation1 = Eq(x**2 + y**2, 20)\n"
    "    equation2 = Eq(x**2 - 5*x*y + 6*y**2, 0)\n"
    "\n"
    "    # Solve the system of equations\n"
    "    solutions = solve((equation1, equation2), (x, y), dict=True)\n"
    "\n"
    "    # Return solutions as strings\n"
    "    return str(solutions)\n"
    "```"
)


def make_solver_tool(limits: SandboxLimits | None = None, isolation: Isolation = "auto") -> Tool:
    """A Solver tool with its own sandbox limits (tests use short timeouts)."""
    run_limits = limits or SandboxLimits()

    @tool(name="Solver", category="logic", description=DESCRIPTION, backend="sandbox")
    def solver(command: Annotated[str, Param("Markdown format Python code")]) -> str:
        result = run_python(command, mode="solver", limits=run_limits, isolation=isolation)
        return result.text or ""

    return solver


solver_tool: Tool = make_solver_tool()


def gta_sandbox_tools(limits: SandboxLimits | None = None, isolation: Isolation = "auto") -> list[Tool]:
    """GTA's two sandboxed tools, Solver and Plot (default limits: the module-level objects)."""
    if limits is None and isolation == "auto":
        from toolgym.toolservers.gta.plot import plot_tool

        return [solver_tool, plot_tool]
    return [make_solver_tool(limits, isolation), make_plot_tool(limits, isolation)]
