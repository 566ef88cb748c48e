"""Where a server's tools come from.

A `ToolProvider` builds one tool for a device. `build` must be cheap (the server builds every
tool at start to publish its schema); `warmup` loads what the first call would otherwise load
(model weights, an engine): at start for eager tools, before the first call for lazy ones. `catalog()` is what `toolgym serve` can host:
the built-in GTA tools, the synthetic batching backend, installed packages' tools and any mock apps.
"""

from __future__ import annotations

import dataclasses
import functools
import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from toolgym.files import FileStore
from toolgym.tools import DEFAULT_CLOCK, BaseTool, ToolContext, ToolSet

from .config import ToolConfig


class DeviceError(ValueError):
    """A tool was placed on a device its provider does not support."""


@dataclass(frozen=True)
class ToolProvider:
    name: str
    build: Callable[[str], BaseTool]
    """make the tool for a device ("cpu", "cuda:0", ...)"""
    devices: tuple[str, ...] = ("cpu",)
    """devices the tool can run on; "cuda" admits "cuda" and "cuda:<n>\""""
    warmup: Callable[[BaseTool], None] | None = None
    defaults: ToolConfig | None = None
    """the provider's recommended limits (the server's per-tool config overrides them)"""

    def check_device(self, device: str) -> None:
        kind = device.split(":", 1)[0]
        if device not in self.devices and kind not in self.devices:
            raise DeviceError(
                f"tool {self.name!r} cannot run on device {device!r}; its backend supports: "
                f"{', '.join(self.devices)}"
            )

    def make(self, device: str) -> BaseTool:
        self.check_device(device)
        built = self.build(device)
        if built.name != self.name:
            raise ValueError(f"provider {self.name!r} built a tool named {built.name!r}")
        return built


def static(t: BaseTool, *, defaults: ToolConfig | None = None) -> ToolProvider:
    """A provider for a tool that already exists (device-independent: runs on the CPU)."""
    return ToolProvider(t.name, lambda _device: t, defaults=defaults)


def from_toolset(tools: ToolSet | Iterable[BaseTool]) -> list[ToolProvider]:
    return [static(t) for t in tools]


def sample_call_warmup(
    arguments: dict[str, object], image_size: tuple[int, int] = (64, 32)
) -> Callable[[BaseTool], None]:
    """A warm-up that runs the tool once on a blank image (the argument whose value is "<image>"),
    so an engine that loads on first use loads now; a failure surfaces as the tool's exception."""

    def warm(t: BaseTool) -> None:
        from PIL import Image as PILImage

        files = FileStore()
        try:
            buf = io.BytesIO()
            PILImage.new("RGB", image_size, "white").save(buf, format="PNG")
            handle = files.put_bytes(buf.getvalue(), name="warmup.png", media_type="image/png")
            args = {k: (handle.ref if v == "<image>" else v) for k, v in arguments.items()}
            t.invoke(args, ToolContext(files=files))
        finally:
            files.close()

    return warm


def builtin_providers() -> list[ToolProvider]:
    """The built-in tools: GTA's Calculator, OCR, DrawBox, AddText, Solver, Plot."""
    from toolgym.toolservers.gta.calculator import calculator
    from toolgym.toolservers.gta.drawing import addtext, drawbox
    from toolgym.toolservers.gta.ocr import RapidOCRBackend, make_ocr_tool
    from toolgym.toolservers.gta.plot import plot_tool
    from toolgym.toolservers.gta.solver import solver_tool

    def build_ocr(_device: str) -> BaseTool:
        backend = RapidOCRBackend()
        if not backend.available():  # never download: name what provides the models
            raise RuntimeError(f"OCR backend 'rapidocr' is not installed: it needs {backend.requirement}")
        return make_ocr_tool(backend)

    return [
        # microseconds of guarded arithmetic: served on the event loop, no thread hop
        static(calculator, defaults=ToolConfig(inline=True, max_request_bytes=64 * 1024)),
        ToolProvider(
            "OCR",
            build_ocr,
            devices=("cpu",),
            warmup=sample_call_warmup({"image": "<image>"}),
            # onnxruntime already spreads one image over every core
            defaults=ToolConfig(max_concurrency=1),
        ),
        static(drawbox),
        static(addtext),
        static(solver_tool, defaults=ToolConfig(max_concurrency=2)),
        static(plot_tool, defaults=ToolConfig(max_concurrency=2)),
    ]


# GTA's model-backed tools: built for the device the server places them on; their backends come
# from ModelConfig (TOOLGYM_* variables), and a missing model is the tool's own tool_error.
MODEL_TOOLS = (
    "GoogleSearch",
    "ImageDescription",
    "RegionAttributeDescription",
    "TextToBbox",
    "CountGivenObject",
    "MathOCR",
    "TextToImage",
    "ImageStylization",
)
# every model tool but the web search runs on a GPU when the server has one
_GPU_CAPABLE = frozenset(MODEL_TOOLS) - {"GoogleSearch"}


def model_providers() -> list[ToolProvider]:
    """The rest of GTA's 14 tools (see toolservers/registry.py), one provider each."""
    from toolgym.toolservers.gta.config import ModelConfig
    from toolgym.toolservers.registry import all_gta_tools

    @functools.lru_cache(maxsize=8)
    def tools_for(config: ModelConfig) -> dict[str, BaseTool]:
        # one construction of the set per configuration, shared by the providers below
        return {t.name: t for t in all_gta_tools(config)}

    def builder(name: str) -> Callable[[str], BaseTool]:
        def build(device: str) -> BaseTool:
            return tools_for(dataclasses.replace(ModelConfig.from_env(), device=device))[name]

        return build

    return [
        ToolProvider(
            name,
            builder(name),
            devices=("cpu", "cuda") if name in _GPU_CAPABLE else ("cpu",),
            # one model instance per tool: requests queue for it rather than racing on it
            defaults=ToolConfig(max_concurrency=1),
        )
        for name in MODEL_TOOLS
    ]


def synthetic_providers() -> list[ToolProvider]:
    """`SyntheticEmbed`: a batchable benchmark backend (see synthetic.py)."""
    from .synthetic import SyntheticEmbedder, make_embed_tool

    return [
        ToolProvider(
            "SyntheticEmbed",
            lambda _device: make_embed_tool(SyntheticEmbedder()),
            devices=("cpu",),
            warmup=lambda t: t.invoke({"text": "warm up"}, ToolContext(files=FileStore())),
            defaults=ToolConfig(max_concurrency=1),
        )
    ]


def app_providers(
    apps: Sequence[str], *, seed: int = 0, clock: datetime = DEFAULT_CLOCK
) -> list[ToolProvider]:
    """The APIs of one shared mock world of `apps` (per-session worlds are not served yet)."""
    from toolgym.mocks.world import MockWorld

    world = MockWorld(list(apps), seed=seed, clock=clock)
    return from_toolset(world.tools)


def registered_providers(known: Iterable[str]) -> list[ToolProvider]:
    """The registered tools (toolgym.tools entry points: installed packages') that no provider in
    `known` serves, each as it is (on the CPU)."""
    from toolgym.toolservers.registry import builtin_tools

    taken = set(known)
    return [static(t) for t in builtin_tools() if t.name not in taken]


def catalog(apps: Sequence[str] = ()) -> list[ToolProvider]:
    """Every tool `toolgym serve` knows: GTA's 14, the synthetic backend, the installed packages'
    tools, and `apps`' APIs."""
    providers = [*builtin_providers(), *model_providers(), *synthetic_providers()]
    providers.extend(registered_providers(p.name for p in providers))
    if apps:
        providers.extend(app_providers(apps))
    return providers
