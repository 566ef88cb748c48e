"""An agent backed by any OpenAI-compatible chat server (vLLM, OpenAI, llama.cpp, SGLang, ...).

`ChatClient` asks the server through the openai SDK (`openai.OpenAI`, base_url as the SDK spells
it, e.g. `http://127.0.0.1:8000/v1`): `/chat/completions` or, with `api="responses"`, `/responses`.
The SDK does the per-request timeout and the retries with backoff (408 / 409 / 429 / 5xx /
connection errors / timeouts, Retry-After honoured); an event hook on its HTTP client counts the
attempts. On top: a semaphore that bounds the requests in flight across threads, and token
accounting from each response's `usage`. Answers are the SDK's typed objects (`ChatCompletion`,
`Response`), parsed by the SDK as its `with_raw_response(...).parse()` does (leniently: servers
differ in the fields they fill), with the body as sent kept beside them (`ChatResult.raw`).
`AsyncChatClient` is the same client on `openai.AsyncOpenAI` (an `asyncio.Semaphore` bounds its
requests in flight); both share request building, parsing and error classification
(`_ClientCore`), and `LLMAgent` on it is an `AsyncAgent` (`astart`, `aact`) that
`toolgym.envs.rollouts.arollout` drives on one event loop.

`LLMAgent` keeps one episode's chat history: the protocol's instructions as the system message, the
task prompt as the user message, then the model's replies and the env's observations. With the
`openai` protocol the tools go in the request's `tools` field (only there: the system message keeps
the format instructions, unless `tools_in_prompt` asks for the schemas in it too) and observations
come back as `tool` messages paired with the call ids; with the `responses` protocol (over `/v1/responses`) the model's
output items join the input and observations come back as `function_call_output` items; with the
text protocols (react, json) the reply is text and observations are user messages.

With `LLMConfig.token_ids` the client asks the server for the token ids it saw and generated, as
vLLM's OpenAI server returns them (`return_token_ids`: `prompt_token_ids` on the response,
`token_ids` on each choice; `logprobs: true` for the logprob of each generated token; older vLLM's
`return_tokens_as_token_ids` spells each logprob token `token_id:<id>`). The agent keeps them as
the turn's `TurnTokens`, which the runner writes into the trace; nothing is ever re-tokenised. A
server that returns none gives no tokens, said once in the log. A server that refuses vLLM's own
parameters (`transformers serve` answers 422 "Unexpected fields") is asked again without them, and
the client asks for OpenAI's `logprobs` only from then on (once per client, said in the log).

Responses requests say `"stream": false`, OpenAI's default, for servers whose default is a stream
(`transformers serve`'s /v1/responses).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import threading
import time
import typing
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx2  # the HTTP client the openai SDK is built on
import openai
import pydantic
from openai._constants import RAW_RESPONSE_HEADER  # what the SDK's `with_raw_response` sends
from openai.types.chat import ChatCompletion, ChatCompletionMessage
from openai.types.responses import Response, ResponseFunctionToolCall, ResponseOutputItem

from toolgym.actions import Observation
from toolgym.canonical import escape_surrogates
from toolgym.envs.rollouts import run_stopped_by_driver
from toolgym.envs.tool_env import ToolEnv
from toolgym.mocks.events import NOTIFICATION_PREFIX
from toolgym.models.activity import Activity, doing
from toolgym.models.chat_api import (
    API_PATHS,
    API_PROTOCOLS,
    DEFAULT_KEY_ENV,
    LLM_PROTOCOLS,
    RETRY_STATUS,
    LLMCancelled,
    LLMConfig,
    LLMError,
    LLMRequestError,
    LLMResponseError,
    LLMUnavailable,
    Usage,
    api_key_from_env,
    preflight,
    retryable,
)
from toolgym.models.setups import system_prompt, tools_in_prompt_refusal
from toolgym.protocols.json_protocol import content_of_message
from toolgym.protocols.openai import OpenAIProtocol
from toolgym.protocols.responses import ResponsesProtocol
from toolgym.tasks import Task
from toolgym.trace import ModelRequest, TurnTokens

# the module's names, and those of toolgym.models.chat_api, whose public home stays this module too
__all__ = [
    "API_PATHS",
    "API_PROTOCOLS",
    "DEFAULT_KEY_ENV",
    "LLM_PROTOCOLS",
    "LOGPROB_PARAMS",
    "NO_KEY",
    "RAW_RESPONSE",
    "RETRY_STATUS",
    "TOKEN_ID_PARAMS",
    "TOKEN_ID_PREFIX",
    "VLLM_TOKEN_PARAMS",
    "AsyncChatClient",
    "BaseChatClient",
    "ChatBackend",
    "ChatClient",
    "ChatResult",
    "ChatSettings",
    "LLMAgent",
    "LLMCancelled",
    "LLMConfig",
    "LLMError",
    "LLMRequestError",
    "LLMResponseError",
    "LLMUnavailable",
    "Observed",
    "ThreadedChatClient",
    "Turn",
    "Usage",
    "api_key_from_env",
    "preflight",
    "retryable",
    "turn_tokens",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChatResult:
    """One answered request, as the openai SDK parsed it. `completion` is the SDK's typed object (a
    `ChatCompletion`, or a `Response` over /v1/responses) and `raw` the body as the server sent it;
    `message` is the chat message (for a Response: its output text as an assistant message),
    `output` the Response's output items (empty for a chat completion)."""

    message: ChatCompletionMessage
    finish_reason: str | None
    usage: Usage
    completion: ChatCompletion | Response
    raw: str
    output: list[ResponseOutputItem] = field(default_factory=list)
    tokens: TurnTokens | None = None  # with LLMConfig.token_ids, when the server returned them

    @classmethod
    def of_chat(
        cls,
        completion: ChatCompletion,
        usage: Usage,
        *,
        raw: str | None = None,
        tokens: TurnTokens | None = None,
    ) -> ChatResult:
        """A chat completion's answer: its first choice's message and finish reason; `raw` is the
        body as the server sent it (by default the completion's own JSON)."""
        choice = completion.choices[0]
        reason = getattr(choice, "finish_reason", None)
        return cls(
            message=choice.message,
            finish_reason=reason if isinstance(reason, str) else None,
            usage=usage,
            completion=completion,
            raw=completion.model_dump_json(exclude_unset=True) if raw is None else raw,
            tokens=tokens,
        )


# what vLLM's OpenAI server takes to return token ids (>= 0.10.2) and logprobs; older versions
# ignore return_token_ids but spell logprob tokens as `token_id:<id>` with the last one
LOGPROB_PARAMS: dict[str, Any] = {"logprobs": True}  # OpenAI's own: every server knows the name
VLLM_TOKEN_PARAMS: dict[str, Any] = {"return_token_ids": True, "return_tokens_as_token_ids": True}
TOKEN_ID_PARAMS: dict[str, Any] = {**LOGPROB_PARAMS, **VLLM_TOKEN_PARAMS}
TOKEN_ID_PREFIX = "token_id:"


def _ids(value: Any) -> list[int] | None:
    if isinstance(value, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in value):
        return list(value)
    return None


def _id_of_token(token: Any) -> int | None:
    """The id in a `token_id:<id>` logprob token (vLLM's return_tokens_as_token_ids)."""
    if isinstance(token, str) and token.startswith(TOKEN_ID_PREFIX):
        digits = token[len(TOKEN_ID_PREFIX) :]
        # ASCII digits of a plausible id only: "²" is a digit to isdigit() and int() refuses it,
        # and int() raises past the int->str digit limit
        return int(digits) if digits.isascii() and digits.isdigit() and len(digits) <= 18 else None
    return None


def _extra(model: object, key: str) -> Any:
    """A field the server added beyond OpenAI's (vLLM's token ids), kept by the SDK's models."""
    extra = getattr(model, "model_extra", None)
    return extra.get(key) if isinstance(extra, dict) else None


def turn_tokens(completion: ChatCompletion) -> TurnTokens | None:
    """The turn's tokens from a chat completion, as vLLM returns them: the prompt's ids
    (`prompt_token_ids`), the first choice's generated ids (`token_ids`, else the `token_id:<id>`
    logprob tokens) and one logprob per generated token. None when the server returned no prompt
    ids or no generated ids: a trajectory cannot be put together without both."""
    choices = getattr(completion, "choices", None)
    if not isinstance(choices, list) or not choices:
        return None
    choice = choices[0]
    prompt = _ids(_extra(completion, "prompt_token_ids"))
    logprobs = getattr(choice, "logprobs", None)
    content = getattr(logprobs, "content", None)
    entries = content if isinstance(content, list) else []
    completion_ids = _ids(_extra(choice, "token_ids"))
    if completion_ids is None and entries:
        from_tokens = [_id_of_token(getattr(e, "token", None)) for e in entries]
        completion_ids = [i for i in from_tokens if i is not None] if None not in from_tokens else None
    if prompt is None or completion_ids is None:
        return None
    values = [getattr(e, "logprob", None) for e in entries]
    numbers = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    # one per generated token, or none (a server that sent ids without logprobs)
    return TurnTokens(
        prompt_ids=prompt,
        completion_ids=completion_ids,
        logprobs=numbers if len(numbers) == len(completion_ids) == len(values) else None,
    )


def _count(usage: object, *keys: str) -> int:
    for key in keys:
        value = getattr(usage, key, None)
        # servers differ: some omit fields, some send null; bool is not a token count
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return 0


def _dump(model: object) -> Any:
    """An SDK object back as the JSON the server sent (only the fields it set); anything else, as
    the SDK left it (a server's malformed value)."""
    if isinstance(model, pydantic.BaseModel):
        return model.model_dump(mode="json", exclude_unset=True, warnings=False)
    return model


NO_KEY = "no-key"  # what the SDK is given when there is no key; never sent
# the header the SDK's own `with_raw_response` sets: the answer comes back as a LegacyAPIResponse,
# whose `.parse()` gives the typed object and `.text` the body as sent
RAW_RESPONSE = {"headers": {RAW_RESPONSE_HEADER: "true"}}


class ChatSettings(typing.Protocol):
    """What a chat client reads of its settings (LLMConfig has them, and HFConfig)."""

    @property
    def api(self) -> Literal["chat", "responses"]: ...

    @property
    def model(self) -> str: ...

    @property
    def temperature(self) -> float | None: ...

    @property
    def top_p(self) -> float | None: ...

    @property
    def seed(self) -> int | None: ...

    @property
    def max_tokens(self) -> int | None: ...


ConfigT = typing.TypeVar("ConfigT", bound=ChatSettings)


@dataclass(frozen=True)
class Turn:
    """One request of an agent's turn, as a synchronous client answers it."""

    messages: Sequence[Mapping[str, Any]]
    tools: Sequence[Mapping[str, Any]] | None
    seed: int | None
    stop: Sequence[str] | None
    # what watchers see of it (`toolgym.models.activity`); the answer may fill in its tokens so far
    activity: Activity = field(default_factory=lambda: Activity("turn", ""))

    @property
    def step(self) -> int:
        """The turn's place in its episode: 1 + the assistant turns before it (few-shot examples
        sit in the system message)."""
        return 1 + sum(1 for m in self.messages if m.get("role") == "assistant")


class BaseChatClient(typing.Generic[ConfigT]):
    """What every chat client shares, a server's (ChatClient, AsyncChatClient) and a model's in this
    process (`toolgym.models.hf_agent.HFChatClient`): the settings, the chat request (its body, and
    what a trace keeps of it), token accounting (`usage`: every turn's tokens and time) and
    cancellation (`cancel()`). Only how a turn is answered differs."""

    def __init__(self, config: ConfigT) -> None:
        self.config = config
        self._lock = threading.Lock()
        self.usage = Usage()
        self.turns_without_tokens = 0  # answers without token ids, when they were asked for
        self._cancelled = threading.Event()
        self._waiting: set[Callable[[], None]] = set()  # wakes the turns under way
        # reentrant: cancel() may run in a signal handler on a thread that holds it
        self._waiting_lock = threading.RLock()

    def cancel(self) -> None:
        """Stop spending: from now on no turn starts (no request, no retry is sent), and the turns
        under way are abandoned, each raising LLMCancelled at once. Safe from a signal handler or
        any thread."""
        self._cancelled.set()
        with self._waiting_lock:
            waiting = list(self._waiting)
        for wake in waiting:
            wake()

    def _label(self) -> str:
        """Who answers, as errors name it."""
        return self.config.model

    def _cancelled_error(self, spent: Usage | None = None) -> LLMCancelled:
        """What a turn raises once the client is cancelled (`spent`: what it had spent, where known)."""
        return LLMCancelled(f"{self._label()}: not sent, the run was cancelled", usage=spent)

    def _is_cancelled(self) -> bool:
        """`cancel()` was called, or this is a worker process whose driver stopped the run (read
        at once: the worker's own cancel comes a thread's wake-up later)."""
        return self._cancelled.is_set() or run_stopped_by_driver()

    def _refuse_if_cancelled(self) -> None:
        if self._is_cancelled():
            raise self._cancelled_error()

    def _spend(self, usage: Usage) -> None:
        with self._lock:
            self.usage.add(usage)

    def request_body(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        seed: int | None = None,
        stop: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """The request for these messages: the JSON body a server is sent (with api="responses":
        input items), and what a trace keeps of every turn."""
        body = self._history([dict(m) for m in messages])
        if tools:
            body["tools"] = [dict(t) for t in tools]
            body["tool_choice"] = "auto"
        body.update({k: v for k, v in self._sampling(seed, stop).items() if v is not None})
        body.update(self._extra_params())
        return body

    def _history(self, history: list[dict[str, Any]]) -> dict[str, Any]:
        return {"model": self.config.model, "messages": history}

    def _sampling(self, seed: int | None, stop: Sequence[str] | None) -> dict[str, Any]:
        """How to generate, as a chat request says it (None: left out)."""
        cfg = self.config
        return {
            "temperature": cfg.temperature,
            "top_p": cfg.top_p,
            "seed": cfg.seed if seed is None else seed,
            "max_tokens": cfg.max_tokens,
            "stop": list(stop) if stop else None,
        }

    def _extra_params(self) -> dict[str, Any]:
        """Parameters beyond the chat API's own."""
        return {}


class ThreadedChatClient(BaseChatClient[ConfigT]):
    """A synchronous client (what LLMAgent drives as a `ChatBackend`): `complete` answers a turn
    (`_answer`) and counts what it spent, a turn cut short by `cancel()` too; what blocks (a
    request, a generation) runs through `_abandonable`, on a helper thread `cancel()` abandons."""

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        seed: int | None = None,
        stop: Sequence[str] | None = None,
    ) -> ChatResult:
        """One turn. Once the client is cancelled: LLMCancelled, with what the turn had spent
        where that is known (counted in `usage` too)."""
        self._refuse_if_cancelled()
        turn = Turn(messages, tools, seed, stop, Activity("turn", self._label()))
        turn.activity.step = turn.step
        with doing(turn.activity) as activity:  # the run's progress display watches it
            try:
                result = self._answer(turn)
            except LLMCancelled as exc:
                if exc.usage is not None:
                    self._spend(exc.usage)
                raise
            activity.prompt_tokens = result.usage.prompt_tokens
            activity.completion_tokens = result.usage.completion_tokens
        self._spend(result.usage)
        return result

    def _answer(self, turn: Turn) -> ChatResult:
        """The turn's answer, not counted yet."""
        raise NotImplementedError

    def _abandonable(self, call: Callable[[], Any]) -> Any:
        """`call()` (a request, a generation) on a helper thread, which `cancel()` abandons at once
        (LLMCancelled): a blocking call cannot be interrupted, and a cancelled run must not wait for
        it. An answer is taken or dropped the moment it arrives: one that arrives after the cancel
        is never used nor counted, however late the waiting thread wakes."""
        self._refuse_if_cancelled()
        done = threading.Event()
        box: list[Any] = []
        context = contextvars.copy_context()  # a request's attempt counter

        def work() -> None:
            try:
                outcome = (True, context.run(call))
            except BaseException as exc:  # handed to the waiting thread
                outcome = (False, exc)
            with self._waiting_lock:  # cancel() sets the flag before it takes the lock
                if not self._is_cancelled():
                    box.append(outcome)
            done.set()

        with self._waiting_lock:
            self._waiting.add(done.set)
        try:
            threading.Thread(target=work, name="llm-turn", daemon=True).start()
            done.wait()
        finally:
            with self._waiting_lock:
                self._waiting.discard(done.set)
        if not box:  # woken by cancel(): the answer, if one ever comes, is dropped
            self._refuse_if_cancelled()
        ok, value = box[0]
        if not ok:
            raise value
        return value


class _ClientCore(BaseChatClient[LLMConfig]):
    """What the sync and async server clients share: the SDK's settings, the Responses API's and
    vLLM's request forms, parsing the SDK's answer into a ChatResult, the refused-vs-unavailable
    split. Only the call differs."""

    def __init__(self, config: LLMConfig) -> None:
        if config.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if config.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        super().__init__(config)
        # the SDK's attempts for the current request (it retries inside one call): a context
        # variable, so threads and asyncio tasks each count their own
        self._attempts: ContextVar[list[int]] = ContextVar(f"attempts_{id(self)}")
        self.vllm_token_params = True  # until the server refuses them (_drop_refused_token_params)

    def _label(self) -> str:
        return self.config.endpoint

    def _sdk_options(self) -> dict[str, Any]:
        """The SDK client's settings (its own retries and timeout)."""
        return {
            "base_url": self.config.base_url,
            # the SDK insists on a key; a keyless local server gets none (_count_attempt drops it)
            "api_key": self.config.api_key or NO_KEY,
            "timeout": self.config.timeout_s,
            "max_retries": self.config.max_retries,
        }

    def _limits(self) -> httpx2.Limits:
        return httpx2.Limits(
            max_connections=self.config.concurrency, max_keepalive_connections=self.config.concurrency
        )

    def _count_attempt(self, request: httpx2.Request) -> None:
        self._refuse_if_cancelled()  # an attempt (a retry, too) after the run was cancelled
        counter = self._attempts.get(None)
        if counter is not None:
            counter[0] += 1
        if self.config.api_key is None:
            request.headers.pop("Authorization", None)

    def _history(self, history: list[dict[str, Any]]) -> dict[str, Any]:
        if self.config.api == "responses":
            # stream: OpenAI's default, said for servers whose default is a stream (transformers serve)
            return {"model": self.config.model, "input": history, "stream": False}
        return super()._history(history)

    def _sampling(self, seed: int | None, stop: Sequence[str] | None) -> dict[str, Any]:
        if self.config.api == "responses":  # the Responses API takes no seed or stop sequences
            cfg = self.config
            return {"temperature": cfg.temperature, "top_p": cfg.top_p, "max_output_tokens": cfg.max_tokens}
        return super()._sampling(seed, stop)

    def _extra_params(self) -> dict[str, Any]:
        """vLLM's token-id parameters (with LLMConfig.token_ids), then the config's `extra_body`."""
        cfg = self.config
        tokens = (TOKEN_ID_PARAMS if self.vllm_token_params else LOGPROB_PARAMS) if cfg.token_ids else {}
        return {**tokens, **cfg.extra_body}

    def _drop_refused_token_params(self, exc: Exception) -> bool:
        """True when `exc` is the server refusing vLLM's token-id parameters by name (a 400 or
        422 that names one): later requests, and the caller's one retry, ask for `logprobs` only."""
        if not (self.config.token_ids and self.vllm_token_params and isinstance(exc, openai.APIStatusError)):
            return False
        refused = exc.status_code in (400, 422) and any(k in exc.response.text for k in VLLM_TOKEN_PARAMS)
        if refused:
            self.vllm_token_params = False
            log.warning(
                "%s refused vLLM's token-id parameters (%s): asking for logprobs only; the traces keep "
                "the tokens the server returns, if any",
                self.config.endpoint,
                ", ".join(VLLM_TOKEN_PARAMS),
            )
        return refused

    def _prepare(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        seed: int | None,
        stop: Sequence[str] | None,
    ) -> dict[str, Any]:
        """The SDK `post` arguments of one request; starts counting its attempts."""
        body = self.request_body(messages, tools=tools, seed=seed, stop=stop)
        # encoded here, with lone surrogates (a model's own output echoed in the history) escaped:
        # a UTF-8 encoding of them would raise. The SDK sends these bytes as they are.
        content = escape_surrogates(
            json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        ).encode("utf-8")
        self._attempts.set([0])
        return {
            "path": API_PATHS[self.config.api],
            "content": content,
            "cast_to": Response if self.config.api == "responses" else ChatCompletion,
            "options": RAW_RESPONSE,
        }

    def _fail(self, exc: Exception) -> typing.NoReturn:
        """Raises the error that says why the SDK gave up: LLMRequestError for a refusal that
        retrying cannot help, LLMUnavailable when every attempt failed."""
        if isinstance(exc, openai.APIStatusError):
            status: int | None = exc.response.status_code
            last = f"HTTP {exc.status_code}: {exc.response.text[:500]}"
        elif isinstance(exc, openai.APITimeoutError):
            status, last = None, f"timed out after {self.config.timeout_s:g} s ({type(exc).__name__})"
        else:
            cause = exc.__cause__ or exc
            status, last = None, f"connection failed: {type(cause).__name__}: {cause}"
        attempts = max(self._attempts.get([1])[0], 1)
        with self._lock:
            self.usage.retries += attempts - 1
        if status is not None and not retryable(status):
            body = exc.response.text if isinstance(exc, openai.APIStatusError) else None
            raise LLMRequestError(
                f"{self.config.endpoint} refused the request: {last}", status=status, body=body
            ) from None
        raise LLMUnavailable(
            f"{self.config.endpoint}: {attempts} attempts failed; last: {last}", status=status
        ) from None

    def _answered(self, answer: Any, started: float) -> ChatResult:
        """The ChatResult of an answered request (the SDK's LegacyAPIResponse), not counted yet."""
        retries = max(self._attempts.get([1])[0] - 1, 0)
        return self._result(answer, retries, time.perf_counter() - started)

    def _result(self, answer: Any, retries: int, elapsed: float) -> ChatResult:
        raw: str = answer.text
        try:
            parsed = answer.parse()  # the SDK's typed object, read leniently as the SDK reads
        except ValueError:
            parsed = None
        if isinstance(parsed, str) or parsed is None:  # not JSON (the SDK hands back the text)
            raise LLMResponseError(f"response is not JSON: {raw[:200]!r}", status=200, body=raw)
        if not isinstance(parsed, (ChatCompletion, Response)):
            raise LLMResponseError("response is not a JSON object", status=200, body=raw)
        usage_data = getattr(parsed, "usage", None)
        prompt = _count(usage_data, "prompt_tokens", "input_tokens")
        completion = _count(usage_data, "completion_tokens", "output_tokens")
        usage = Usage.of_request(
            prompt, completion, total=_count(usage_data, "total_tokens"), retries=retries, latency_s=elapsed
        )
        if isinstance(parsed, Response):
            return self._response_result(parsed, usage, raw)
        choices = parsed.choices
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], pydantic.BaseModel):
            raise LLMResponseError("response has no choices", status=200, body=raw)
        message = getattr(choices[0], "message", None)
        if not isinstance(message, ChatCompletionMessage):
            raise LLMResponseError("response choice has no message object", status=200, body=raw)
        return ChatResult.of_chat(parsed, usage, raw=raw, tokens=self._tokens(parsed))

    def _tokens(self, completion: ChatCompletion) -> TurnTokens | None:
        if not self.config.token_ids:
            return None
        tokens = turn_tokens(completion)
        if tokens is None:
            with self._lock:
                self.turns_without_tokens += 1
                first = self.turns_without_tokens == 1
            if first:  # once per client: every later answer is likely the same
                log.warning(
                    "%s returned no token ids (prompt_token_ids / token_ids): the traces keep no "
                    "tokens; vLLM >= 0.10.2 returns them",
                    self.config.endpoint,
                )
        return tokens

    @staticmethod
    def _response_result(response: Response, usage: Usage, raw: str) -> ChatResult:
        """A Response: its output items, and their output text as the assistant message. Read
        leniently, as the SDK reads responses (servers differ in the fields they fill)."""
        output = response.output
        if not isinstance(output, list) or not all(isinstance(i, pydantic.BaseModel) for i in output):
            raise LLMResponseError(
                "response is not a Response: no list of output items", status=200, body=raw
            )
        text = "".join(_output_text(item) for item in output if getattr(item, "type", None) == "message")
        details = getattr(response, "incomplete_details", None)
        reason = getattr(details, "reason", None)
        status = getattr(response, "status", None)
        return ChatResult(
            message=ChatCompletionMessage.construct(role="assistant", content=text),
            finish_reason=reason if isinstance(reason, str) else status if isinstance(status, str) else None,
            usage=usage,
            completion=response,
            raw=raw,
            output=output,
        )


class ChatClient(_ClientCore, ThreadedChatClient[LLMConfig]):
    """Thread-safe: share one client between the threads that run episodes."""

    def __init__(self, config: LLMConfig) -> None:
        super().__init__(config)
        self._http = httpx2.Client(limits=self._limits(), event_hooks={"request": [self._count_attempt]})
        self._sdk = openai.OpenAI(**self._sdk_options(), http_client=self._http)
        self._slots = threading.BoundedSemaphore(config.concurrency)

    def close(self) -> None:
        self._sdk.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _answer(self, turn: Turn) -> ChatResult:
        """One chat completion (or Response); raises LLMRequestError, LLMUnavailable or
        LLMResponseError."""
        request = self._prepare(turn.messages, turn.tools, turn.seed, turn.stop)
        started = time.perf_counter()
        try:
            with self._slots:
                answer = self._abandonable(lambda: self._sdk.post(**request))
        except (openai.APIStatusError, openai.APIConnectionError) as exc:
            self._refuse_if_cancelled()
            if self._drop_refused_token_params(exc):
                return self._answer(turn)
            self._fail(exc)
        return self._answered(answer, started)


class AsyncChatClient(_ClientCore):
    """`ChatClient` on `openai.AsyncOpenAI`, for episodes driven on one event loop
    (`toolgym.envs.rollouts.arollout`): the same requests, results, errors and usage; an
    `asyncio.Semaphore` bounds the requests in flight. Use it on one event loop."""

    def __init__(self, config: LLMConfig) -> None:
        super().__init__(config)
        self._http = httpx2.AsyncClient(
            limits=self._limits(), event_hooks={"request": [self._count_attempt_async]}
        )
        self._sdk = openai.AsyncOpenAI(**self._sdk_options(), http_client=self._http)
        self._slots = asyncio.Semaphore(config.concurrency)

    async def _count_attempt_async(self, request: httpx2.Request) -> None:
        self._count_attempt(request)

    async def close(self) -> None:
        await self._sdk.close()

    async def __aenter__(self) -> AsyncChatClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        seed: int | None = None,
        stop: Sequence[str] | None = None,
    ) -> ChatResult:
        """As `ChatClient.complete`, awaited."""
        request = self._prepare(messages, tools, seed, stop)
        started = time.perf_counter()
        self._refuse_if_cancelled()
        try:
            async with self._slots:
                post = asyncio.ensure_future(self._sdk.post(**request))
                loop = asyncio.get_running_loop()

                def abandon() -> None:
                    loop.call_soon_threadsafe(post.cancel)

                with self._waiting_lock:
                    self._waiting.add(abandon)
                try:
                    answer = await post
                finally:
                    with self._waiting_lock:
                        self._waiting.discard(abandon)
        except asyncio.CancelledError:
            if not self._cancelled.is_set():
                raise  # the caller's task was cancelled, not this client
            self._refuse_if_cancelled()
        except (openai.APIStatusError, openai.APIConnectionError) as exc:
            self._refuse_if_cancelled()
            if self._drop_refused_token_params(exc):
                return await self.complete(messages, tools=tools, seed=seed, stop=stop)
            self._fail(exc)
        result = self._answered(answer, started)
        self._spend(result.usage)
        return result


def _output_text(message_item: object) -> str:
    """The text of a Responses message item: its output_text parts, joined."""
    content = getattr(message_item, "content", None)
    parts = content if isinstance(content, list) else []
    return "".join(
        str(getattr(part, "text", "") or "") for part in parts if getattr(part, "type", None) == "output_text"
    )


# how a notification's text begins (toolgym.mocks.events.NOTIFICATION_PREFIX) is the one mark a
# Responses user message rendered as text has of being one


@dataclass(frozen=True)
class Observed:
    """One observation of a step as the agent puts it back into the history: the call it answers
    (None: none, or the env could not tell), its text, and whether it is a notification (an event
    of a moving world, answering no call)."""

    call_id: str | None
    text: str
    notification: bool = False


def _text_or(value: Any, default: str) -> str:
    """`value` when it is text, else `default`."""
    return value if isinstance(value, str) else default


def _call_id(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _text_of(message: ChatCompletionMessage) -> str:
    content = getattr(message, "content", None)
    if content is None:
        return ""
    try:
        return content_of_message({"content": content})
    except Exception:
        return str(content)  # the protocol parser reports it as a format error


class ChatBackend(typing.Protocol):
    """A synchronous client LLMAgent can drive: ChatClient, or a model in this process
    (`toolgym.models.hf_agent.HFChatClient`)."""

    @property
    def config(self) -> ChatSettings: ...

    def request_body(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        seed: int | None = None,
        stop: Sequence[str] | None = None,
    ) -> dict[str, Any]: ...

    def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        seed: int | None = None,
        stop: Sequence[str] | None = None,
    ) -> ChatResult: ...


class LLMAgent:
    """An `Agent` for one ToolEnv: it reads the env's protocol and, per episode, its offered tools.

    Give each concurrently running episode its own env and agent; they may share a ChatClient. On
    an AsyncChatClient it is an `AsyncAgent` (`astart`, `aact`: toolgym.envs.rollouts.arollout).
    `usage` holds the current episode's token counts, `finish_reasons` its finish reasons.
    """

    def __init__(
        self,
        client: ChatBackend | AsyncChatClient,
        env: ToolEnv,
        *,
        seed: int | None = None,
        stop: Sequence[str] | None = None,
        name: str | None = None,
        few_shot: Sequence[Sequence[Mapping[str, str]]] | None = None,
        tools_in_prompt: bool = False,
    ) -> None:
        api = client.config.api
        if env.protocol.name not in API_PROTOCOLS[api]:
            raise ValueError(
                f"LLMAgent speaks {', '.join(API_PROTOCOLS[api])} over /v1{API_PATHS[api]}; "
                f"the env's protocol is {env.protocol.name!r}"
            )
        self.client = client
        self.env = env
        self.seed = seed
        # solved examples, closing the system message (toolgym.models.setups)
        self.few_shot = [[dict(m) for m in example] for example in few_shot or []]
        # the tool schemas in the system message as well as in `tools` (a template without tools)
        self.tools_in_prompt = tools_in_prompt
        self.native = isinstance(env.protocol, OpenAIProtocol)
        self.responses = isinstance(env.protocol, ResponsesProtocol)  # tool calls as Responses items
        if tools_in_prompt and not (self.native or self.responses):
            raise ValueError(tools_in_prompt_refusal(env.protocol.name))
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
        self.turn_tokens: TurnTokens | None = None  # with LLMConfig.token_ids, what the server gave
        self._recorded = 0  # messages already in an earlier turn's request

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        system = system_prompt(
            info["instructions"],
            self.env.protocol,
            self.env.offered,
            tools_in_prompt=self.tools_in_prompt,
            few_shot=self.few_shot,
        )
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
        self.turn_tokens = None
        self._recorded = 0
        protocol = self.env.protocol
        self._tools = (
            protocol.tools_json(self.env.offered)
            if isinstance(protocol, (OpenAIProtocol, ResponsesProtocol))
            else None
        )

    def act(self, observation: str, info: dict[str, Any]) -> str | dict[str, Any] | list[dict[str, Any]]:
        if isinstance(self.client, AsyncChatClient):
            raise TypeError("an agent on an AsyncChatClient is driven with `await agent.aact(...)`")
        request = self._begin_turn(observation, info)
        try:
            result = self.client.complete(self.messages, **request)
        except LLMCancelled as exc:
            if exc.usage is not None:  # a turn cut short had spent tokens: the episode counts them
                self.usage.add(exc.usage)
            raise
        return self._end_turn(result)

    async def astart(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        """`start` for async drivers (`toolgym.envs.runner.arun_episode`); it asks nothing."""
        self.start(task, observation, info)

    async def aact(
        self, observation: str, info: dict[str, Any]
    ) -> str | dict[str, Any] | list[dict[str, Any]]:
        """`act` on an AsyncChatClient: the same turn, the model awaited."""
        if not isinstance(self.client, AsyncChatClient):
            raise TypeError("`aact` needs an AsyncChatClient; a ChatClient's agent is driven with `act`")
        request = self._begin_turn(observation, info)
        return self._end_turn(await self.client.complete(self.messages, **request))

    def _begin_turn(self, observation: str, info: dict[str, Any]) -> dict[str, Any]:
        """The last step's observation into the history; the request's other arguments."""
        if self._turns > 0:
            if info.get("teacher_forced"):
                self._force_golden(info)
            self._add_observation(observation, info)
        self._turns += 1
        self.turn_request = self._request_delta()
        self.turn_latency_ms = None
        self.turn_tokens = None
        return {"tools": self._tools, "seed": self.seed, "stop": self.stop or None}

    def _end_turn(self, result: ChatResult) -> str | dict[str, Any] | list[dict[str, Any]]:
        """The model's answer into the history and the turn's record; the output for the env."""
        # the request as answered: a parameter the server refused was dropped on the retry
        self.turn_request = self._request_delta()
        # only a request that was answered counts as sent: a retried turn sends the same delta
        self._recorded = len(self.messages)
        self.turn_latency_ms = result.usage.latency_s * 1000
        self.turn_tokens = result.tokens
        self.usage.add(result.usage)
        self.finish_reasons.append(result.finish_reason)
        if self.responses:
            items = self._output_items(result.output)
            self.messages.extend(items)
            return items
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
        history = body.pop("input" if self.client.config.api == "responses" else "messages")
        return ModelRequest(
            messages_from=self._recorded,
            messages=history[self._recorded :],
            tools=tools if self._recorded == 0 else None,
            params=body,
        )

    def _assistant_message(self, message: ChatCompletionMessage) -> dict[str, Any]:
        """What goes back into the history (and to the env): role, content and tool_calls with an id
        each, as the server sent them; server-specific fields (reasoning_content, refusal, ...) stay
        out of later requests."""
        out: dict[str, Any] = {"role": "assistant", "content": _dump(message.content)}
        calls = message.tool_calls
        self._pending_ids = []
        if isinstance(calls, list) and calls:
            fixed = []
            for i, call in enumerate(calls):
                sent = _dump(call)
                if isinstance(sent, dict):
                    call_id = getattr(call, "id", None)
                    if not isinstance(call_id, str) or not call_id:
                        sent["id"] = f"call_{self._turns}_{i}"  # some servers omit ids; replies need them
                    self._pending_ids.append(sent["id"])
                fixed.append(sent)
            out["tool_calls"] = fixed
        return out

    def _output_items(self, output: Sequence[ResponseOutputItem]) -> list[dict[str, Any]]:
        """A Response's output items as they go back into the input (and to the env): function calls
        with a call_id each, messages as assistant text, reasoning items as they came; server fields
        (status, annotations, ...) stay out of later requests."""
        items: list[dict[str, Any]] = []
        self._pending_ids = []
        for i, item in enumerate(output):
            if isinstance(item, ResponseFunctionToolCall):
                call_id = item.call_id
                if not isinstance(call_id, str) or not call_id:
                    call_id = f"call_{self._turns}_{i}"  # replies need one
                self._pending_ids.append(call_id)
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call_id,
                        "name": item.name,
                        "arguments": item.arguments,
                    }
                )
            elif getattr(item, "type", None) == "message":
                items.append({"type": "message", "role": "assistant", "content": _output_text(item)})
            else:
                items.append(_dump(item))
        return items

    def _observed(self, observation: str, info: Mapping[str, Any]) -> list[Observed]:
        """The observations of the last step. From info when it is that step's info; else from the
        rendered text (toolgym.envs.runner.run_episode passes the reset info to every act), where
        the openai protocol writes one message as JSON per line (a notification as the user's)."""
        if info.get("step") == self._turns and isinstance(info.get("observations"), list):
            parsed = [Observation.model_validate(o) for o in info["observations"]]
            return [Observed(o.call_id, o.text, o.type == "notification") for o in parsed]
        return [self._observed_line(line) for line in observation.split("\n") if line.strip()]

    def _observed_line(self, line: str) -> Observed:
        """One line of a rendered observation: a tool message or function_call_output (answering
        its call), a user message (the chat form's is a notification; the Responses form's only
        when it reads as one: it also carries the answers to calls the env could not read), or
        plain text (a clipped line or the clip marker)."""
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if not isinstance(message, dict):
            return Observed(None, line)
        if message.get("type") == "function_call_output":
            return Observed(_call_id(message.get("call_id")), _text_or(message.get("output"), line))
        if message.get("role") == "tool":
            return Observed(_call_id(message.get("tool_call_id")), _text_or(message.get("content"), line))
        if message.get("role") == "user" and (self.native or self.responses):
            content = _text_or(message.get("content"), line)
            if message.get("type") != "message":  # the chat form: only a notification is the user's
                return Observed(None, content, True)
            return Observed(None, content, content.startswith(NOTIFICATION_PREFIX))
        return Observed(None, line)

    def _force_golden(self, info: Mapping[str, Any]) -> None:
        """Teacher forcing (toolgym.envs.teacher): the golden step ran, not the model's output, so
        the golden output (`info["history"]`) takes the place of the model's in the history."""
        golden = info["history"][-2]["content"]
        del self.messages[self._recorded :]  # the model's own last answer
        if self.responses:
            items = [dict(i) for i in golden] if isinstance(golden, list) else [dict(golden)]
            self.messages.extend(items)
            self._pending_ids = [str(i["call_id"]) for i in items if i.get("type") == "function_call"]
        elif self.native and isinstance(golden, dict):
            message = {k: golden[k] for k in ("role", "content", "tool_calls") if k in golden}
            self.messages.append(message)
            self._pending_ids = [str(c["id"]) for c in message.get("tool_calls") or []]
        else:
            text = golden if isinstance(golden, str) else json.dumps(golden, ensure_ascii=False)
            self.messages.append({"role": "assistant", "content": text})
            self._pending_ids = []

    def _add_observation(self, observation: str, info: Mapping[str, Any]) -> None:
        if not (self.native or self.responses):
            self.messages.append({"role": "user", "content": observation})
            return
        observed = self._observed(observation, info)
        answers = [o for o in observed if not o.notification]
        by_id = {o.call_id: o.text for o in answers if o.call_id in self._pending_ids}
        loose = [o.text for o in answers if o.call_id not in by_id]
        # every tool_call id must get a tool message, or the next request is rejected: calls the env
        # did not answer by id (ask_user, no_call, a reply that failed to parse) get the loose texts
        for call_id in self._pending_ids:
            if call_id in by_id:
                text = by_id[call_id]
            elif loose:
                text = loose.pop(0)
            else:
                text = "This call was not executed."
            self.messages.append(
                {"type": "function_call_output", "call_id": call_id, "output": text}
                if self.responses
                else {"role": "tool", "tool_call_id": call_id, "content": text}
            )
        if loose:
            self.messages.append({"role": "user", "content": "\n".join(loose)})
        # a notification answers no call: the world told the agent, as the user's message after the
        # step's tool messages, one each (as the openai protocol renders them)
        self.messages.extend({"role": "user", "content": o.text} for o in observed if o.notification)
        self._pending_ids = []
