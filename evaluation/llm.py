"""An agent backed by any OpenAI-compatible chat server (vLLM, OpenAI, llama.cpp, SGLang, ...).

`ChatClient` posts to `{base_url}/chat/completions` (base_url as the OpenAI SDK spells it, e.g.
`http://127.0.0.1:8000/v1`) with a per-request timeout, retries with exponential backoff on
429 / 5xx / connection errors / timeouts, a semaphore that bounds the requests in flight across
threads, and token accounting from each response's `usage`.

`LLMAgent` keeps one episode's chat history: the protocol's instructions as the system message, the
task prompt as the user message, then the model's replies and the env's observations. With the
`openai` protocol the tools go in the request's `tools` field and observations come back as `tool`
messages paired with the call ids; with the text protocols (react, json) the reply is text and
observations are user messages.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from toolgym.actions import Observation
from toolgym.canonical import escape_surrogates
from toolgym.envs.tool_env import ToolEnv
from toolgym.protocols.json_protocol import content_of_message
from toolgym.protocols.openai import OpenAIProtocol
from toolgym.tasks import Task
from toolgym.trace import ModelRequest

# what LLMAgent can speak over /v1/chat/completions (the responses protocol reads /v1/responses output)
LLM_PROTOCOLS = ("openai", "react", "json")

RETRY_STATUS = frozenset({408, 409, 425, 429})  # and every 5xx, as the OpenAI SDK retries


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


class LLMResponseError(LLMError):
    """The server answered 200 with something that is not a chat completion."""


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
    max_retries: int = 4
    backoff_s: float = 0.5
    max_backoff_s: float = 20.0
    concurrency: int = 8
    extra_body: Mapping[str, Any] = field(default_factory=dict)

    @property
    def endpoint(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"


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


@dataclass(frozen=True)
class ChatResult:
    message: dict[str, Any]
    finish_reason: str | None
    usage: Usage
    response: dict[str, Any]


def _count(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    # servers differ: some omit fields, some send null; bool is not a token count
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _retry_after(response: httpx.Response, cap: float) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff
    return min(max(seconds, 0.0), cap)


class ChatClient:
    """Thread-safe: share one client between the threads that run episodes."""

    def __init__(self, config: LLMConfig, *, transport: httpx.BaseTransport | None = None) -> None:
        if config.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if config.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.config = config
        headers = {"Content-Type": "application/json"}
        if config.api_key:
            headers["Authorization"] = f"Bearer {config.api_key}"
        limits = httpx.Limits(
            max_connections=config.concurrency, max_keepalive_connections=config.concurrency
        )
        self._http = httpx.Client(
            timeout=httpx.Timeout(config.timeout_s), headers=headers, limits=limits, transport=transport
        )
        self._slots = threading.BoundedSemaphore(config.concurrency)
        self._lock = threading.Lock()
        self._jitter = random.Random(0)  # jitter only spreads retries in time; results never depend on it
        self.usage = Usage()

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request_body(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        seed: int | None = None,
        stop: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        cfg = self.config
        body: dict[str, Any] = {"model": cfg.model, "messages": [dict(m) for m in messages]}
        if tools:
            body["tools"] = [dict(t) for t in tools]
            body["tool_choice"] = "auto"
        optional = {
            "temperature": cfg.temperature,
            "top_p": cfg.top_p,
            "seed": cfg.seed if seed is None else seed,
            "max_tokens": cfg.max_tokens,
            "stop": list(stop) if stop else None,
        }
        body.update({k: v for k, v in optional.items() if v is not None})
        body.update(cfg.extra_body)
        return body

    def _backoff(self, attempt: int, response: httpx.Response | None) -> float:
        cfg = self.config
        hinted = _retry_after(response, cfg.max_backoff_s) if response is not None else None
        if hinted is not None:
            return hinted
        base = min(cfg.backoff_s * 2.0**attempt, cfg.max_backoff_s)
        with self._lock:
            return base * (0.5 + self._jitter.random() / 2)

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        seed: int | None = None,
        stop: Sequence[str] | None = None,
    ) -> ChatResult:
        """One chat completion; raises LLMRequestError, LLMUnavailable or LLMResponseError."""
        body = self.request_body(messages, tools=tools, seed=seed, stop=stop)
        # encoded here, as httpx would, but with lone surrogates (a model's own output echoed in
        # the history) escaped: httpx's UTF-8 encoding would raise on them
        content = escape_surrogates(
            json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        ).encode("utf-8")
        started = time.perf_counter()
        retries = 0
        last = "no attempt made"
        last_status: int | None = None
        for attempt in range(self.config.max_retries + 1):
            response: httpx.Response | None = None
            try:
                with self._slots:
                    response = self._http.post(
                        self.config.endpoint, content=content, headers={"Content-Type": "application/json"}
                    )
            except httpx.TimeoutException as exc:
                last, last_status = (
                    f"timed out after {self.config.timeout_s:g} s ({type(exc).__name__})",
                    None,
                )
            except httpx.TransportError as exc:
                last, last_status = f"connection failed: {type(exc).__name__}: {exc}", None
            else:
                if response.status_code == 200:
                    result = self._result(response, retries, time.perf_counter() - started)
                    with self._lock:
                        self.usage.add(result.usage)
                    return result
                last_status = response.status_code
                last = f"HTTP {response.status_code}: {response.text[:500]}"
                if not retryable(response.status_code):
                    raise LLMRequestError(
                        f"{self.config.endpoint} refused the request: {last}",
                        status=response.status_code,
                        body=response.text,
                    )
            if attempt == self.config.max_retries:
                break
            retries += 1
            time.sleep(self._backoff(attempt, response))
        with self._lock:
            self.usage.retries += retries
        raise LLMUnavailable(
            f"{self.config.endpoint}: {self.config.max_retries + 1} attempts failed; last: {last}",
            status=last_status,
        )

    def _result(self, response: httpx.Response, retries: int, elapsed: float) -> ChatResult:
        try:
            data = response.json()
        except ValueError:
            raise LLMResponseError(
                f"response is not JSON: {response.text[:200]!r}", status=200, body=response.text
            ) from None
        choices = data.get("choices") if isinstance(data, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise LLMResponseError("response has no choices", status=200, body=response.text)
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise LLMResponseError("response choice has no message object", status=200, body=response.text)
        usage_field = data.get("usage")
        usage_data: Mapping[str, Any] = usage_field if isinstance(usage_field, dict) else {}
        prompt = _count(usage_data, "prompt_tokens")
        completion = _count(usage_data, "completion_tokens")
        usage = Usage(
            prompt_tokens=prompt,
            completion_tokens=completion,
            total_tokens=_count(usage_data, "total_tokens") or prompt + completion,
            requests=1,
            retries=retries,
            latency_s=elapsed,
        )
        reason = choices[0].get("finish_reason")
        return ChatResult(
            message=message,
            finish_reason=reason if isinstance(reason, str) else None,
            usage=usage,
            response=data,
        )


def _text_of(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if content is None:
        return ""
    try:
        return content_of_message(message)
    except Exception:
        return str(content)  # the protocol parser reports it as a format error


class LLMAgent:
    """An `Agent` for one ToolEnv: it reads the env's protocol and, per episode, its offered tools.

    Give each concurrently running episode its own env and agent; they may share a ChatClient.
    `usage` holds the current episode's token counts, `finish_reasons` its finish reasons.
    """

    def __init__(
        self,
        client: ChatClient,
        env: ToolEnv,
        *,
        seed: int | None = None,
        stop: Sequence[str] | None = None,
        name: str | None = None,
        few_shot: Sequence[Sequence[Mapping[str, str]]] | None = None,
    ) -> None:
        if env.protocol.name not in LLM_PROTOCOLS:
            raise ValueError(
                f"LLMAgent speaks {', '.join(LLM_PROTOCOLS)} over /v1/chat/completions; "
                f"the env's protocol is {env.protocol.name!r}"
            )
        self.client = client
        self.env = env
        self.seed = seed
        # solved examples, closing the system message (toolgym.evaluation.setups)
        self.few_shot = [[dict(m) for m in example] for example in few_shot or []]
        self.native = isinstance(env.protocol, OpenAIProtocol)
        # ReAct models go on to invent the tool result; the parser drops it, stopping saves tokens
        self.stop = (
            list(stop) if stop is not None else (["\nObservation:"] if env.protocol.name == "react" else [])
        )
        self.name = name or f"llm:{client.config.model}"
        self.messages: list[dict[str, Any]] = []
        self.usage = Usage()
        self.finish_reasons: list[str | None] = []
        self._tools: list[dict[str, Any]] | None = None
        self._pending_ids: list[str] = []
        self._turns = 0
        # the last turn as the trace keeps it (toolgym.envs.runner): what was sent, how long it took
        self.turn_request: ModelRequest | None = None
        self.turn_latency_ms: float | None = None
        self._recorded = 0  # messages already in an earlier turn's request

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        system = info["instructions"]
        if self.few_shot:
            from toolgym.evaluation.setups import few_shot_block

            system = f"{system}\n\n{few_shot_block(self.few_shot)}"
        self.messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": observation},
        ]
        self.usage = Usage()
        self.finish_reasons = []
        self._pending_ids = []
        self._turns = 0
        self.turn_request = None
        self.turn_latency_ms = None
        self._recorded = 0
        protocol = self.env.protocol
        self._tools = protocol.tools_json(self.env.offered) if isinstance(protocol, OpenAIProtocol) else None

    def act(self, observation: str, info: dict[str, Any]) -> str | dict[str, Any]:
        if self._turns > 0:
            self._add_observation(observation, info)
        self._turns += 1
        self.turn_request = self._request_delta()
        self.turn_latency_ms = None
        result = self.client.complete(
            self.messages, tools=self._tools, seed=self.seed, stop=self.stop or None
        )
        # only a request that was answered counts as sent: a retried turn sends the same delta
        self._recorded = len(self.messages)
        self.turn_latency_ms = result.usage.latency_s * 1000
        self.usage.add(result.usage)
        self.finish_reasons.append(result.finish_reason)
        if self.native:
            message = self._assistant_message(result.message)
            self.messages.append(message)
            return dict(message)
        text = _text_of(result.message)
        self.messages.append({"role": "assistant", "content": text})
        return text

    def _request_delta(self) -> ModelRequest:
        """This turn's request as a trace step keeps it: the messages since the last turn's request,
        the tools on the first turn only (they stay the same all episode), the other parameters."""
        body = self.client.request_body(
            self.messages, tools=self._tools, seed=self.seed, stop=self.stop or None
        )
        tools = body.pop("tools", None)
        return ModelRequest(
            messages_from=self._recorded,
            messages=body.pop("messages")[self._recorded :],
            tools=tools if self._recorded == 0 else None,
            params=body,
        )

    def _assistant_message(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """What goes back into the history (and to the env): role, content and tool_calls with an id
        each; server-specific fields (reasoning_content, refusal, ...) stay out of later requests."""
        out: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
        calls = message.get("tool_calls")
        self._pending_ids = []
        if isinstance(calls, list) and calls:
            fixed = []
            for i, call in enumerate(calls):
                if isinstance(call, Mapping):
                    call = dict(call)
                    if not isinstance(call.get("id"), str) or not call["id"]:
                        call["id"] = f"call_{self._turns}_{i}"  # some servers omit ids; replies need them
                    self._pending_ids.append(call["id"])
                fixed.append(call)
            out["tool_calls"] = fixed
        return out

    def _observed(self, observation: str, info: Mapping[str, Any]) -> list[tuple[str | None, str]]:
        """(call id, text) per observation of the last step. From info when it is that step's info;
        else from the rendered text (toolgym.envs.runner.run_episode passes the reset info to every
        act), where the openai protocol writes one tool message as JSON per line."""
        if info.get("step") == self._turns and isinstance(info.get("observations"), list):
            parsed = [Observation.model_validate(o) for o in info["observations"]]
            return [(o.call_id, o.text) for o in parsed]
        pairs: list[tuple[str | None, str]] = []
        for line in observation.split("\n"):
            try:
                message = json.loads(line)
            except ValueError:
                message = None  # a clipped line or the clip marker: keep it as plain text
            if isinstance(message, dict) and message.get("role") == "tool":
                call_id = message.get("tool_call_id")
                content = message.get("content")
                pairs.append(
                    (
                        call_id if isinstance(call_id, str) else None,
                        content if isinstance(content, str) else line,
                    )
                )
            elif line.strip():
                pairs.append((None, line))
        return pairs

    def _add_observation(self, observation: str, info: Mapping[str, Any]) -> None:
        if not self.native:
            self.messages.append({"role": "user", "content": observation})
            return
        observed = self._observed(observation, info)
        by_id = {call_id: text for call_id, text in observed if call_id in self._pending_ids}
        loose = [text for call_id, text in observed if call_id not in by_id]
        # every tool_call id must get a tool message, or the next request is rejected: calls the env
        # did not answer by id (ask_user, no_call, a reply that failed to parse) get the loose texts
        for call_id in self._pending_ids:
            if call_id in by_id:
                text = by_id[call_id]
            elif loose:
                text = loose.pop(0)
            else:
                text = "This call was not executed."
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": text})
        if loose:
            self.messages.append({"role": "user", "content": "\n".join(loose)})
        self._pending_ids = []
