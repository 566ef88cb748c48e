"""Clients: remote tools as ToolSets that ToolEnv uses like in-process ones.

- `RemoteToolSet(url)`: a toolgym server's native API;
- `agentlego_tools(url)`: an AgentLego server (agentlego-server 0.2.0, or toolgym's AgentLego face);
- `mcp_tools(url)`: an MCP server over streamable HTTP;
- `openapi_tools(spec)`: any OpenAPI 3 API;
- `gradio_tools(url)`: a Gradio app's API.

Remote failures (no connection, no answer, 5xx, auth) raise InfraError, so the env reports
`infra_error` and never blames the agent.
"""

from .gradio import GradioToolSet, gradio_tools
from .mcp import MCPToolSet, mcp_tools
from .openapi import OpenAPIToolSet, SpecError, agentlego_tools, openapi_tools
from .remote import RemoteTool, RemoteToolSet

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
