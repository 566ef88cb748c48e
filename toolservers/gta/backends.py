"""What every pluggable backend of a GTA tool shares: a usability check that never loads or
downloads anything, a lazily loaded model guarded by a lock, and helpers for the transformers and
diffusers stacks (local files only) and for storing generated images with their seed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Generic, TypeVar

import httpx
from PIL import Image as PILImage
from PIL import PngImagePlugin

from toolgym.errors import InfraError, ToolError
from toolgym.files import FileHandle
from toolgym.tools import ToolContext

# BackendStatus lives with the config so that `toolgym models` (every command registers it) lists
# rows without this module's imports (httpx, PIL); it stays importable from here
from .config import BackendStatus as BackendStatus
from .config import ModelConfig

T = TypeVar("T")

ML_EXTRA = "pip install 'toolgym[ml]'"
GPU_EXTRA = "pip install 'toolgym[gpu]'"


def module_available(name: str) -> bool:
    """True when `name` is importable; looks at the installed files only (imports nothing heavy)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent package missing, or a broken install
        return False


def missing_modules(names: Iterable[str]) -> list[str]:
    return [n for n in names if not module_available(n)]


class Backend(ABC):
    """A way to run one tool. `problem()` says why it cannot run here (None when it can);
    it must be cheap: it looks at installed packages and files, never loads a model."""

    name: str
    tool: str

    @abstractmethod
    def problem(self) -> str | None: ...

    def describe(self) -> str:
        """What runs when the backend is usable (shown by `toolgym models`)."""
        return "ready"

    def usable(self) -> bool:
        return self.problem() is None

    def status(self, *, selected: bool = False) -> BackendStatus:
        problem = self.problem()
        return BackendStatus(
            tool=self.tool,
            backend=self.name,
            usable=problem is None,
            detail=problem if problem is not None else self.describe(),
            selected=selected,
        )

    def require(self) -> None:
        """ToolError naming what is missing, when the backend cannot run here."""
        problem = self.problem()
        if problem is not None:
            raise ToolError(f"{self.tool} backend {self.name!r} cannot run on this machine: {problem}")


def model_dir_problem(config: ModelConfig, slot: str, *, marker: str | None = "config.json") -> str | None:
    """Why the model directory (or file, when marker is None) of `slot` is not there, or None."""
    path = config.model_path(slot)
    if path is None:
        return f"no model configured: {config.model_hint(slot)}"
    if marker is None:
        if not path.is_file():
            return f"no model file at {path}: {config.model_hint(slot)}"
        return None
    if not (path / marker).is_file():
        return f"no model at {path} ({marker} not found): {config.model_hint(slot)}"
    return None


class Lazy(Generic[T]):
    """A value built once, on first use, under a lock; a failed build is retried next time."""

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._value: T | None = None
        self._lock = threading.Lock()

    def get(self) -> T:
        with self._lock:
            if self._value is None:
                self._value = self._build()
            return self._value

    @property
    def loaded(self) -> bool:
        return self._value is not None


def load_failure(what: str, path: Path | None, exc: BaseException) -> ToolError:
    return ToolError(f"cannot load {what} from {path}: {type(exc).__name__}: {exc}")


# ---- images --------------------------------------------------------------------------------------
def png_bytes(img: PILImage.Image, metadata: dict[str, str] | None = None) -> bytes:
    """PNG-encode with optional tEXt chunks; deterministic for equal pixels and metadata."""
    info = PngImagePlugin.PngInfo()
    for key, value in sorted((metadata or {}).items()):
        info.add_text(key, value)
    buf = io.BytesIO()
    img.save(buf, format="PNG", pnginfo=info)
    return buf.getvalue()


def store_generated(
    ctx: ToolContext, img: PILImage.Image, *, stem: str, seed: int, metadata: dict[str, str]
) -> FileHandle:
    """Store a generated image; its name and its PNG text chunks record the seed that made it."""
    data = png_bytes(img, {**metadata, "toolgym:seed": str(seed)})
    name = f"image/{stem}_seed{seed}_{hashlib.sha256(data).hexdigest()[:8]}.png"
    return ctx.files.put_bytes(data, name=name, media_type="image/png")


# ---- torch / transformers / diffusers --------------------------------------------------------------
def load_module(name: str) -> Any:
    """Import an optional heavy library on first use, typed as Any: transformers, diffusers,
    onnxruntime and ultralytics ship partial or no type information."""
    return importlib.import_module(name)


def torch_generator(seed: int, device: str = "cpu") -> Any:
    """A torch.Generator seeded with the episode seed (on the CPU unless the device is CUDA)."""
    import torch

    generator_device = "cuda" if device.startswith("cuda") else "cpu"
    return torch.Generator(device=generator_device).manual_seed(int(seed) % (2**63))


def new_tokens_limit(model: Any, default: int) -> int:
    """How many tokens to generate: the model's own generation_config.max_new_tokens when its
    authors set one (a formula model knows its longest formula), else `default`."""
    value = getattr(getattr(model, "generation_config", None), "max_new_tokens", None)
    return int(value) if isinstance(value, int) and value > 0 else default


def quiet_hf() -> None:
    """Keep progress bars out of tool output; the libraries print them to stderr by default."""
    for name in ("transformers.utils.logging", "diffusers.utils.logging"):
        if module_available(name.split(".")[0]):
            logging = load_module(name)
            logging.disable_progress_bar()
            logging.set_verbosity_error()


def post_json_api(service: str, url: str, timeout_s: float, **request: Any) -> dict[str, Any]:
    """POST to a hosted model API and return its JSON object. Anything but an HTTP 200 with a
    JSON object (no connection, a bad key, an exhausted quota, a garbled body) is an InfraError
    naming the service: the operator's problem, not the agent's."""
    try:
        response = httpx.post(url, timeout=timeout_s, **request)
    except httpx.HTTPError as exc:
        raise InfraError(f"{service} request failed: {type(exc).__name__}: {exc}") from None
    if response.status_code != 200:
        raise InfraError(
            f"{service} answered HTTP {response.status_code}: {response.text[:200]}",
            data={"status": response.status_code},
        )
    try:
        payload = response.json()
    except ValueError:
        raise InfraError(f"{service} answered with a body that is not JSON") from None
    if not isinstance(payload, dict):
        raise InfraError(f"{service} answered with JSON that is not an object")
    return payload
