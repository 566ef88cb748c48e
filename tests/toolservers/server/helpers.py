"""Tools and servers the server tests share: real tools with observable behaviour (a gate that
holds calls until the test lets them go), real uvicorn servers on 127.0.0.1."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any

import httpx
from PIL import Image as PILImage
from PIL import ImageOps

from toolgym.errors import ToolError
from toolgym.files import FileHandle
from toolgym.tools import BaseTool, FileParam, Image, Param, Tool, ToolCategory, ToolContext, tool
from toolgym.toolservers.server import ServerConfig, ServerThread, create_app
from toolgym.toolservers.server.providers import ToolProvider

ImageOut = Annotated[FileHandle, FileParam("image")]


@dataclass
class Gate:
    """Calls of a gated tool wait here until `release()`; the tool counts how many run at once."""

    event: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    running: int = 0
    most: int = 0
    calls: int = 0

    def release(self) -> None:
        self.event.set()

    def tool(self, name: str = "Gated", category: ToolCategory = "operation") -> Tool:
        @tool(name=name, category=category)
        def gated(label: str = "x") -> str:
            """Waits for the test's gate, then echoes its label."""
            with self.lock:
                self.running += 1
                self.calls += 1
                self.most = max(self.most, self.running)
            try:
                if not self.event.wait(timeout=30):
                    raise ToolError("the test never opened the gate")
                return f"done {label}"
            finally:
                with self.lock:
                    self.running -= 1

        return gated


@tool(name="Flip", category="operation")
def flip(image: Image, ctx: ToolContext, times: int = 1) -> ImageOut:
    """Flip the image horizontally."""
    with PILImage.open(image.path) as img:
        out = img.convert("RGB")
        for _ in range(times):
            out = ImageOps.mirror(out)
    buf = io.BytesIO()
    out.save(buf, format="PNG")
    return ctx.files.put_bytes(buf.getvalue(), media_type="image/png")


@tool(name="Size", category="perception")
def size(image: Image) -> tuple[int, int]:
    """Return width and height."""
    with PILImage.open(image.path) as img:
        return img.size


@tool(name="Fails", category="operation")
def fails(reason: Annotated[str, Param("why to fail")]) -> str:
    """Always fails with the given reason."""
    raise ToolError(f"failed on purpose: {reason}")


def png_bytes(width: int = 40, height: int = 20, color: str = "red") -> bytes:
    buf = io.BytesIO()
    img = PILImage.new("RGB", (width, height), "white")
    img.paste(PILImage.new("RGB", (width // 2, height), color), (0, 0))
    img.save(buf, format="PNG")
    return buf.getvalue()


@contextmanager
def running(
    served: Sequence[BaseTool] | Sequence[ToolProvider], config: ServerConfig | None = None, **kwargs: Any
) -> Iterator[str]:
    """A real server for `served` on 127.0.0.1 (ephemeral port), stopped at the end."""
    app = create_app(served, config or ServerConfig(**kwargs))
    with ServerThread(app) as url:
        yield url


def wait_for(predicate: Callable[[], bool], timeout_s: float = 20.0) -> None:
    """Poll until `predicate()` holds (state changes of a real server, never timing assertions)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.01)


def metrics(url: str, name: str, token: str | None = None) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    data: dict[str, Any] = httpx.get(f"{url}/v1/metrics", headers=headers).json()["tools"][name]
    return data
