"""The toolgym tool server: any ToolSet over a native JSON API, the AgentLego wire protocol and
MCP (streamable HTTP). See app.py for the entry points."""

from .app import ServerThread, create_app, serve
from .batching import BatchedTool, Batcher
from .config import BatchConfig, ServerConfig, ToolConfig
from .providers import ToolProvider, builtin_providers, catalog, static
from .runtime import ToolRuntime

__all__ = [
    "BatchConfig",
    "BatchedTool",
    "Batcher",
    "ServerConfig",
    "ServerThread",
    "ToolConfig",
    "ToolProvider",
    "ToolRuntime",
    "builtin_providers",
    "catalog",
    "create_app",
    "serve",
    "static",
]
