"""What a run needs of an OpenAI-compatible chat API, without the openai SDK: the APIs and their
paths, the errors, `LLMConfig`, the key from the environment, the preflight request and `Usage`.

`toolgym.models.llm` (the clients and the agent, on the SDK) re-exports all of it. Commands that
only configure runs or read them back (`toolgym run` with the oracle, `eval`, `report`) import this
module instead: the SDK's import is ~0.8 s of CPU in every process that starts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

# what LLMAgent can speak over each API: tool calls in the API's own form, or text
API_PROTOCOLS: dict[str, tuple[str, ...]] = {
    "chat": ("openai", "react", "json"),
    "responses": ("responses", "react", "json"),
}
LLM_PROTOCOLS = ("openai", "responses", "react", "json")
API_PATHS = {"chat": "/chat/completions", "responses": "/responses"}

RETRY_STATUS = frozenset({408, 409, 429})  # and every 5xx: what the openai SDK retries


def retryable(status: int) -> bool:
    return status in RETRY_STATUS or status >= 500


class LLMError(Exception):
    """A chat request failed. Not the agent's fault: runs record the episode as aborted."""

    def __init__(self, message: str, *, status: int | None = None, body: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.body = body


class LLMRequestError(LLMError):
    """The server refused the request (a 4xx other than 408/409/425/429): retrying cannot help."""


class LLMUnavailable(LLMError):
    """Every attempt failed with a retryable error (429, 5xx, timeout, connection refused)."""


class LLMCancelled(LLMError):
    """The client was cancelled (`cancel()`: the run stopped): the request was never sent, or was
    abandoned in flight. The episode ends; the run lists it as cancelled, not aborted. `usage`:
    what the turn had spent when it was cut short, where that is known (a local model's partial
    generation), which the agent counts."""

    def __init__(self, message: str, *, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage


class LLMResponseError(LLMError):
    """The server answered 200 with something that is not a chat completion (or a Response)."""


@dataclass(frozen=True)
class LLMConfig:
    """Where the model is and how to ask it. `api_key` is sent as a bearer token, never logged."""

    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    timeout_s: float = 120.0
    max_retries: int = 4  # the openai SDK's retries, with its backoff
    concurrency: int = 8
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    api: Literal["chat", "responses"] = "chat"  # /v1/chat/completions or /v1/responses
    # ask for the token ids and logprobs of each turn (vLLM's extra parameters; chat API only)
    token_ids: bool = False

    def __post_init__(self) -> None:
        if self.token_ids and self.api != "chat":
            raise ValueError("token ids are asked over the chat API (/v1/chat/completions) only")

    @property
    def endpoint(self) -> str:
        return self.base_url.rstrip("/") + API_PATHS[self.api]


DEFAULT_KEY_ENV = "OPENAI_API_KEY"  # read when no --api-key-env is given, as the OpenAI SDK does


def api_key_from_env(name: str | None, *, default: str | None = None) -> str | None:
    """The key in environment variable `name`; a named but unset variable is an error (a run that
    silently goes out without its key would fail on every request). With no `name`, the
    `default` variable's value if it is set (a keyless local server needs none)."""
    if not name:
        return os.environ.get(default) or None if default else None
    value = os.environ.get(name)
    if not value:
        raise LLMRequestError(f"environment variable {name} (the API key) is not set")
    return value


def preflight(config: LLMConfig, *, timeout_s: float = 10.0) -> None:
    """One cheap request (`GET {base_url}/models`) before a run's first episode, so a dead server,
    a wrong key or a misspelt model fails in seconds with one line (LLMRequestError) instead of
    after every episode's retries. A server that does not list models (404) passes unchecked."""
    url = config.base_url.rstrip("/") + "/models"
    headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
    try:
        response = httpx.get(url, headers=headers, timeout=min(timeout_s, config.timeout_s))
    except httpx.TimeoutException:
        raise LLMRequestError(
            f"the model server at {config.base_url} did not answer in {timeout_s:g} s"
        ) from None
    except httpx.TransportError as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise LLMRequestError(f"cannot reach the model server at {config.base_url}: {reason}") from None
    if response.status_code in (401, 403):
        raise LLMRequestError(
            f"the model server at {config.base_url} refused the API key (HTTP {response.status_code}); "
            f"set {DEFAULT_KEY_ENV} or name the variable with --api-key-env",
            status=response.status_code,
        )
    if response.status_code != 200:
        return  # no model list here (404), or a busy server: the requests' own retries decide
    try:
        data = response.json().get("data")
        served = [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]
    except (ValueError, AttributeError, TypeError):
        return  # not OpenAI's list format: nothing to check the model against
    if served and config.model not in served:
        listed = ", ".join(served[:10]) + (", ..." if len(served) > 10 else "")
        raise LLMRequestError(
            f"model {config.model!r} is not served at {config.base_url} (it serves: {listed})"
        )


@dataclass
class Usage:
    """Token accounting over one episode or a whole run."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    requests: int = 0
    retries: int = 0
    latency_s: float = 0.0  # wall-clock time in requests, retries and backoff included

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.total_tokens += other.total_tokens
        self.requests += other.requests
        self.retries += other.retries
        self.latency_s += other.latency_s

    @classmethod
    def of_request(
        cls, prompt_tokens: int, completion_tokens: int, *, latency_s: float, retries: int = 0, total: int = 0
    ) -> Usage:
        """One answered request (`total`: the server's own total, where it sent one)."""
        return cls(
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            total_tokens=total or prompt_tokens + completion_tokens,
            requests=1,
            retries=retries,
            latency_s=latency_s,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, int | float]) -> Usage:
        return cls(
            prompt_tokens=int(data.get("prompt_tokens", 0)),
            completion_tokens=int(data.get("completion_tokens", 0)),
            total_tokens=int(data.get("total_tokens", 0)),
            requests=int(data.get("requests", 0)),
            retries=int(data.get("retries", 0)),
            latency_s=float(data.get("latency_s", 0.0)),
        )

    def as_dict(self) -> dict[str, int | float]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "requests": self.requests,
            "retries": self.retries,
            "latency_s": round(self.latency_s, 6),
        }
