"""Tool server configuration: what to serve, where, and each tool's limits, device and loading.

A config is plain data (pydantic), read from JSON or TOML or built in code:

    [server]                       # or top-level keys
    host = "127.0.0.1"
    port = 8765
    tools = ["Calculator", "OCR"]  # a subset of the catalog; omit for all
    load = "eager"                 # "eager": build and warm every tool at start; "lazy": on first call

    [defaults]                     # every tool's limits unless overridden
    max_concurrency = 4
    timeout_s = 60

    [tools.OCR]
    device = "cpu"
    max_concurrency = 1
    batch = { max_batch_size = 8, max_wait_ms = 2 }
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from toolgym.http import DEFAULT_BODY_TIMEOUT_S, DEFAULT_HEADER_TIMEOUT_S, check_bind
from toolgym.http import is_loopback as is_loopback  # its home was here

LoadMode = Literal["eager", "lazy"]

# URL segments the server itself uses: a tool cannot be served under one of these names
RESERVED_NAMES = frozenset({"v1", "mcp", "openapi.json", "docs", "redoc", "health"})


class BatchConfig(BaseModel):
    """Batch calls that wait for the same backend: up to `max_batch_size` calls, collected for at
    most `max_wait_ms` after the first one (calls that queue while a batch runs join the next)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_batch_size: int = Field(16, ge=1, le=4096)
    max_wait_ms: float = Field(1.0, ge=0, le=10_000)


class ToolConfig(BaseModel):
    """Limits and placement of one tool. Fields left unset take the server's `defaults`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_concurrency: int | None = Field(None, ge=1, le=1024)
    """calls (or batches, for a batched tool) running at once; more wait in a queue"""
    max_queue: int | None = Field(None, ge=0, le=100_000)
    """calls allowed to wait for a slot; one more is refused (503, infra_error for the client)"""
    timeout_s: float | None = Field(None, gt=0, le=86_400)
    """wall-clock limit of one call, queueing included (408, `timeout` for the client)"""
    max_request_bytes: int | None = Field(None, ge=1024)
    """largest request body to this tool's endpoints (413)"""
    device: str | None = None
    """where the tool's model runs: "cpu", "cuda", "cuda:1", ...; the tool's provider must support it"""
    load: LoadMode | None = None
    batch: BatchConfig | None = None
    inline: bool | None = None
    """run on the event loop instead of a worker thread: only for pure, microsecond-fast tools
    (no timeout can interrupt an inline call)"""


class ResolvedToolConfig(BaseModel):
    """A tool's effective settings: its own values over the server defaults."""

    model_config = ConfigDict(frozen=True)

    max_concurrency: int
    max_queue: int
    timeout_s: float
    max_request_bytes: int
    device: str
    load: LoadMode
    batch: BatchConfig | None
    inline: bool


DEFAULT_TOOL_CONFIG = ToolConfig(
    max_concurrency=4,
    max_queue=256,
    timeout_s=60.0,
    max_request_bytes=32 * 1024 * 1024,
    device="cpu",
    batch=None,
    inline=False,
)


class ServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(8765, ge=0, le=65535)
    token: SecretStr | None = None
    """bearer token for every endpoint but health, version and the schemas; required when the
    server binds beyond loopback"""
    allowed_hosts: list[str] = Field(default_factory=list)
    """more `Host` names the server answers to beside the bound address and loopback (a reverse
    proxy's, a DNS name of this machine); any other Host is refused (DNS rebinding)"""
    title: str = "toolgym"
    tools: list[str] | None = None
    """the subset of the catalog to serve (None: all of it)"""
    load: LoadMode = "eager"
    defaults: ToolConfig = DEFAULT_TOOL_CONFIG
    tools_config: dict[str, ToolConfig] = Field(default_factory=dict)
    """per-tool settings by tool name"""
    files_dir: Path | None = None
    """where uploaded and produced files live (default: a private temporary directory)"""
    max_workers: int = Field(32, ge=1, le=1024)
    """worker threads shared by all tools' calls"""
    serialize_apps: bool = True
    """run mock-app tools (category "app") one at a time: they share one world's database"""
    mcp: bool = True
    agentlego: bool = True
    header_timeout_s: float = Field(DEFAULT_HEADER_TIMEOUT_S, gt=0, le=3600)
    """a connection that has not sent a request's headers this long after opening (or after its
    request's first bytes) is closed: slow clients cannot hold connections"""
    body_timeout_s: float = Field(DEFAULT_BODY_TIMEOUT_S, gt=0, le=86_400)
    """a request body must arrive within this many seconds of its headers (else 408)"""

    @model_validator(mode="after")
    def _check(self) -> ServerConfig:
        check_bind(self.host, None if self.token is None else self.token.get_secret_value())
        return self

    def tool_config(self, name: str, base: ToolConfig | None = None) -> ResolvedToolConfig:
        """`name`'s settings: per-tool config, over the provider's own `base`, over the defaults."""
        merged: dict[str, Any] = DEFAULT_TOOL_CONFIG.model_dump()
        for layer in (self.defaults, base, self.tools_config.get(name)):
            if layer is not None:
                merged.update(layer.model_dump(exclude_none=True))
        if merged.get("load") is None:
            merged["load"] = self.load
        return ResolvedToolConfig.model_validate(merged)

    @classmethod
    def load_file(cls, path: Path | str, **overrides: Any) -> ServerConfig:
        """A config from a JSON or TOML file (a `[server]` table or top-level keys; `[defaults]`;
        `[tools.<Name>]`); `overrides` win over the file."""
        path = Path(path)
        text = path.read_text(encoding="utf-8")
        raw: dict[str, Any] = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
        data: dict[str, Any] = dict(raw.pop("server", {}))
        data.update({k: v for k, v in raw.items() if k not in ("tools",)})
        tools = raw.get("tools")
        if isinstance(tools, dict):
            data["tools_config"] = tools
        elif tools is not None:
            data["tools"] = tools
        data.update({k: v for k, v in overrides.items() if v is not None})
        return cls.model_validate(data)
