"""The options that point a command at a model server (`toolgym run --agent llm`, `toolgym
teval-answer --agent llm`), declared once: each is an `Annotated` type a command's signature
uses, and `LLM_FIELDS` says which LLMOptions setting (running/config.py) it gives."""

from __future__ import annotations

from typing import Annotated, Final

import typer

BaseUrlOption = Annotated[
    str | None, typer.Option(help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1")
]
ModelOption = Annotated[str | None, typer.Option(help="model name sent in requests")]
ApiKeyEnvOption = Annotated[
    str | None,
    typer.Option(
        help="environment variable holding the API key (sent as a bearer token); default: "
        "OPENAI_API_KEY when it is set"
    ),
]
TemperatureOption = Annotated[
    float | None, typer.Option(help="sampling temperature (server default if unset)")
]
TopPOption = Annotated[float | None, typer.Option(help="nucleus sampling top_p (server default if unset)")]
LLMSeedOption = Annotated[
    int | None,
    typer.Option(help="sampling seed; in a run, trial t sends llm_seed + t, so trials differ reproducibly"),
]
MaxTokensOption = Annotated[int | None, typer.Option(help="completion token limit per request")]
TimeoutOption = Annotated[float, typer.Option(help="seconds per request before it is retried (more than 0)")]
MaxRetriesOption = Annotated[int, typer.Option(help="retries on 429 / 5xx / timeouts / refused connections")]
ThreadsOption = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="torch threads of the in-process model (--agent hf:...; each worker's own); default: "
        "OMP_NUM_THREADS, else half the CPUs this process may use, at most 4 (a shared machine: "
        "torch's own default spins against the other processes)",
    ),
]

# the command-line parameter -> the LLMOptions setting it gives
LLM_FIELDS: Final[dict[str, str]] = {
    "base_url": "base_url",
    "model": "model",
    "api_key_env": "api_key_env",
    "temperature": "temperature",
    "top_p": "top_p",
    "llm_seed": "seed",
    "max_tokens": "max_tokens",
    "timeout": "timeout",
    "max_retries": "max_retries",
}
