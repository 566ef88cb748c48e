"""The MCP SDK (`mcp`), an optional dependency: toolgym's `mcp` extra, `pip install 'toolgym[mcp]'`.

toolgym's MCP features are written against the SDK's 2.x API (`mcp.Client`, `mcp.MCPError`, the
low-level server with its request context): `toolgym mcp`, the tool server's `/mcp` face and
`mcp_tools` (tools imported from an MCP server). Nothing else in toolgym imports the SDK, so an
install without it, or with a 1.x (OpenEnv 0.10 pins `mcp<2` through fastmcp), runs everything
else: the env service, the tool server's other faces, runs and reports. The modules that import
the SDK call `require_mcp()` first, so a missing or 1.x SDK is one line naming the extra rather
than a name missing from `mcp`.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import re

MCP_EXTRA = "pip install 'toolgym[mcp]'"
SUPPORTED = (2, 3)  # the oldest release toolgym runs on; the next major is another API
_RELEASE = re.compile(r"(\d+)\.(\d+)")


class MCPUnavailable(ImportError):
    """The MCP SDK is missing or of a release toolgym's MCP features do not run on."""


@functools.cache  # what is installed does not change under a running process
def mcp_problem() -> str | None:
    """Why toolgym's MCP features cannot run here, in one line naming the extra (None: they can)."""
    try:
        installed = importlib.util.find_spec("mcp") is not None
    except ValueError:  # a module `mcp` without a spec (set up by hand): not the SDK
        installed = False
    if not installed:
        return f"toolgym's MCP features need the MCP SDK (mcp>=2.3,<3), which is not installed: {MCP_EXTRA}"
    try:
        version = importlib.metadata.version("mcp")
    except importlib.metadata.PackageNotFoundError:
        version = "of no known release"
    release = _RELEASE.match(version)
    found = (int(release[1]), int(release[2])) if release is not None else None
    if found is not None and SUPPORTED <= found < (SUPPORTED[0] + 1, 0):
        return None
    # the usual way to a 1.x: OpenEnv 0.10's pin (fastmcp 3 needs mcp<2)
    hint = " (OpenEnv 0.10 pins mcp<2: keep OpenEnv in a venv of its own)" if found and found < (2, 0) else ""
    return f"toolgym's MCP features need mcp>=2.3,<3, not the installed mcp {version}{hint}: {MCP_EXTRA}"


def require_mcp() -> None:
    """Raises MCPUnavailable (an ImportError) with `mcp_problem()`'s line unless the SDK is usable."""
    problem = mcp_problem()
    if problem is not None:
        raise MCPUnavailable(problem)
