"""Clients: remote tools as ToolSets that ToolEnv uses like in-process ones.

- `RemoteToolSet(url)`: a toolgym server's native API;
- `agentlego_tools(url)`: an AgentLego server (agentlego-server 0.2.0, or toolgym's AgentLego face);
- `mcp_tools(url)`: an MCP server over streamable HTTP (the MCP SDK, the `mcp` extra: imported
  when first named, so the other clients work without it);
- `openapi_tools(spec)`: any OpenAPI 3 API;
- `gradio_tools(url)`: a Gradio app's API.

Remote failures (no connection, no answer, 5xx, auth) raise InfraError, so the env reports
`infra_error` and never blames the agent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .gradio import GradioToolSet, gradio_tools
from .openapi import OpenAPIToolSet, SpecError, agentlego_tools, openapi_tools
from .remote import RemoteTool, RemoteToolSet

if TYPE_CHECKING:
    from .mcp import MCPToolSet, mcp_tools

__all__ = [
    "GradioToolSet",
    "MCPToolSet",
    "OpenAPIToolSet",
    "RemoteTool",
    "RemoteToolSet",
    "SpecError",
    "agentlego_tools",
    "gradio_tools",
    "mcp_tools",
    "openapi_tools",
]


def __getattr__(name: str) -> Any:
    if name in ("MCPToolSet", "mcp_tools"):  # a missing or 1.x SDK: MCPUnavailable naming the extra
        from . import mcp

        return getattr(mcp, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
