"""GTA's Plot: model-written matplotlib code, run in the sandbox (toolservers/sandbox.py).

Same schema as AgentLego's Plot (GTA files it under "logic"): one `command` parameter, an image
result. The code defines `solution()` returning a matplotlib Figure; the sandbox saves it as PNG
(matplotlib's default savefig settings, like AgentLego) and the PNG goes into the file store.
AgentLego puts `import matplotlib.pyplot as plt` in front of the code; so does the sandbox.
"""

from __future__ import annotations

import hashlib
from typing import Annotated

from toolgym.files import FileHandle
from toolgym.tools import FileParam, Param, Tool, ToolContext, tool
from toolgym.toolservers.sandbox import Isolation, SandboxLimits, run_python

# Verbatim from GTA's toolmeta.json ("Plot").
DESCRIPTION = (
    "This tool can execute Python code to plot diagrams. The code should include a function "
    "named 'solution'. The function should return the matplotlib figure directly. Avoid "
    "printing the answer. The code instance format is as follows:\n\n"
    "```python\n"
    "# import packages\n"
    "import matplotlib.pyplot as plt\n"
    "def solution():\n"
    "    # labels and data\n"
    "    cars = ['AUDI', 'BMW', 'FORD', 'TESLA', 'JAGUAR', 'MERCEDES']\n"
    "    data = [23, 17, 35, 29, 12, 41]\n"
    "\n"
    "    # draw diagrams\n"
    "    figure = plt.figure(figsize=(8, 6))\n"
    "    plt.pie(data, labels=cars, autopct='%1.1f%%', startangle=140)\n"
    "    plt.axis('equal')\n"
    "    plt.title('Car Distribution')\n"
    "    return figure\n"
    "```"
)


def make_plot_tool(limits: SandboxLimits | None = None, isolation: Isolation = "auto") -> Tool:
    """A Plot tool with its own sandbox limits (tests use short timeouts)."""
    run_limits = limits or SandboxLimits()

    @tool(name="Plot", category="logic", description=DESCRIPTION, backend="sandbox")
    def plot(
        command: Annotated[str, Param("Markdown format Python code")], ctx: ToolContext
    ) -> Annotated[FileHandle, FileParam("image")]:
        result = run_python(command, mode="plot", limits=run_limits, isolation=isolation)
        png = result.png or b""
        name = f"plot_{hashlib.sha256(png).hexdigest()[:12]}.png"
        return ctx.files.put_bytes(png, name=name, media_type="image/png")

    return plot


plot_tool: Tool = make_plot_tool()
