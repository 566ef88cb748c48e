"""A real OpenAI-compatible HTTP server for tests: scripted chat completions (and Responses) on 127.0.0.1.

It runs `http.server` in a thread on an ephemeral port and answers `POST /v1/chat/completions`
from a script: replies per conversation (keyed by a substring of the first user message, indexed
by how many assistant turns the request already holds), so concurrent episodes each get their own
replies in order. Faults (HTTP errors with Retry-After, stalls that outlast the client's timeout,
bodies that are not JSON) are queued and served to the next requests before any scripted reply.
Like OpenAI it rejects a history where an assistant's tool_calls are not all answered by tool
messages, and checks the bearer token when it has one. `POST /v1/responses` answers the same
scripts as Responses output items (function_call items with call ids, a message for text), and
rejects an input where a function_call has no function_call_output.

Token ids come back as vLLM's OpenAI server sends them (`token_ids="vllm"`): with
`return_token_ids`, the prompt's ids as `prompt_token_ids` on the response and the generated ids as
`token_ids` on the choice; with `logprobs`, `choices[0].logprobs.content` holds one entry per
generated token (its token spelt `token_id:<id>` under `return_tokens_as_token_ids`). The fake's
tokenizer is one token per character of a fixed chat template, so each prompt extends the previous
prompt and completion, as a real template does. `token_ids="legacy"` is a vLLM older than 0.10.2
(logprobs only), `"none"` a server that ignores all three.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal


@dataclass(frozen=True)
class Reply:
    """One scripted completion: text content, tool calls, or both."""

    content: str | None = None
    tool_calls: tuple[tuple[str, Mapping[str, Any] | str], ...] = ()  # str: raw arguments text
    finish_reason: str | None = None
    with_ids: bool = True  # False: tool calls without ids, as some servers send them

    def message(self, turn: int) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    **({"id": f"fake_{turn}_{i}"} if self.with_ids else {}),
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": args if isinstance(args, str) else json.dumps(dict(args)),
                    },
                }
                for i, (name, args) in enumerate(self.tool_calls)
            ]
        return message


def text(content: str) -> Reply:
    return Reply(content=content)


def calls(
    *pairs: tuple[str, Mapping[str, Any] | str], content: str | None = None, with_ids: bool = True
) -> Reply:
    return Reply(content=content, tool_calls=tuple(pairs), with_ids=with_ids)


@dataclass(frozen=True)
class Fault:
    """Served instead of a reply: an HTTP status, after an optional stall."""

    status: int = 500
    delay_s: float = 0.0
    retry_after: str | None = None
    body: str = '{"error": {"message": "injected fault"}}'


def history_error(messages: Sequence[Any]) -> str | None:
    """OpenAI's rule: after an assistant message with tool_calls, a tool message per call id."""
    pending: list[str] = []
    for message in messages:
        if not isinstance(message, dict) or "role" not in message:
            return "every message needs a role"
        role = message["role"]
        if role == "tool":
            if message.get("tool_call_id") not in pending:
                return f"tool message for unknown call id {message.get('tool_call_id')!r}"
            pending.remove(message["tool_call_id"])
            continue
        if pending:
            return f"tool_calls {pending} have no tool message before a {role} message"
        if role == "assistant":
            pending = [c["id"] for c in message.get("tool_calls") or []]
    return None


def responses_history_error(items: Sequence[Any]) -> str | None:
    """The Responses API's rule: every function_call's call_id gets a function_call_output
    before the conversation goes on."""
    pending: list[str] = []
    for item in items:
        if not isinstance(item, dict):
            return "every input item must be an object"
        kind = item.get("type", "message")
        if kind == "function_call_output":
            if item.get("call_id") not in pending:
                return f"function_call_output for unknown call_id {item.get('call_id')!r}"
            pending.remove(item["call_id"])
        elif kind == "function_call":
            pending.append(str(item.get("call_id")))
        elif pending and not (kind == "reasoning" or (kind == "message" and item.get("role") == "assistant")):
            return f"No tool output found for function calls {pending}"
    return f"No tool output found for function calls {pending}" if pending else None


def responses_turn(items: Sequence[Mapping[str, Any]]) -> int:
    """How many model turns the input already holds: runs of model items (reasoning, function
    calls, assistant messages)."""
    turns, in_model_turn = 0, False
    for item in items:
        kind = item.get("type", "message")
        model_item = kind in ("reasoning", "function_call") or (
            kind == "message" and item.get("role") == "assistant"
        )
        if model_item and not in_model_turn:
            turns += 1
        in_model_turn = model_item
    return turns


def first_user_text(items: Sequence[Mapping[str, Any]]) -> Any:
    for item in items:
        if item.get("type", "message") == "message" and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, list):  # input_text parts
                return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return content
    return None


def response_output(reply: Reply, turn: int) -> list[dict[str, Any]]:
    """A scripted reply as Responses output items: a message for its text, a function_call per
    tool call (call ids fake_<turn>_<i>, as the chat side names them)."""
    output: list[dict[str, Any]] = []
    if reply.content is not None:
        output.append(
            {
                "type": "message",
                "id": f"msg_{turn}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.content, "annotations": []}],
            }
        )
    for i, (name, args) in enumerate(reply.tool_calls):
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{turn}_{i}",
                "call_id": f"fake_{turn}_{i}",
                "name": name,
                "arguments": args if isinstance(args, str) else json.dumps(dict(args)),
                "status": "completed",
            }
        )
    return output


def usage_of(body: Mapping[str, Any], message: Mapping[str, Any]) -> dict[str, int]:
    """Deterministic stand-in token counts: characters / 4 of what went in and came out."""
    prompt = len(json.dumps(body.get("messages"), sort_keys=True)) // 4 + 1
    completion = len(json.dumps(message, sort_keys=True)) // 4 + 1
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _template_body(message: Mapping[str, Any]) -> str:
    text = message.get("content")
    body = text if isinstance(text, str) else ""
    tool_calls = message.get("tool_calls") or []
    if tool_calls:
        body += json.dumps([[c["function"]["name"], c["function"]["arguments"]] for c in tool_calls])
    return body


def render_prompt(messages: Sequence[Mapping[str, Any]]) -> str:
    """The fake's chat template: each message as <|role|>body<|end|>, then the generation prompt."""
    return "".join(f"<|{m.get('role')}|>{_template_body(m)}<|end|>" for m in messages) + "<|assistant|>"


def tokenize(text: str) -> list[int]:
    """The fake's tokenizer: a token per character, its code point as the id."""
    return [ord(c) for c in text]


def logprob_of(token_id: int) -> float:
    return -((token_id % 10) + 1) / 20


def token_fields(
    body: Mapping[str, Any], message: Mapping[str, Any], mode: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(response fields, choice fields) a vLLM server adds for these request parameters."""
    if mode == "none":
        return {}, {}
    completion = tokenize(_template_body(message) + "<|end|>")
    logprobs = None
    if body.get("logprobs"):
        as_ids = bool(body.get("return_tokens_as_token_ids"))
        logprobs = {
            "content": [
                {
                    "token": f"token_id:{i}" if as_ids else chr(i),
                    "logprob": logprob_of(i),
                    "bytes": list(chr(i).encode()),
                    "top_logprobs": [],
                }
                for i in completion
            ]
        }
    if mode == "legacy":
        return {"prompt_logprobs": None}, {"logprobs": logprobs, "stop_reason": None}
    wants_ids = bool(body.get("return_token_ids"))
    return (
        {
            "prompt_logprobs": None,
            "prompt_token_ids": tokenize(render_prompt(body["messages"])) if wants_ids else None,
            "kv_transfer_params": None,
        },
        {"logprobs": logprobs, "stop_reason": None, "token_ids": completion if wants_ids else None},
    )


# a script gives the reply to a request; a Fault in a script fails that conversation's request
Script = Mapping[str, Sequence[Reply | Fault]] | Callable[[Mapping[str, Any]], Reply | Fault]


@dataclass
class FakeOpenAI:
    script: Script
    api_key: str | None = None
    model: str = "fake-model"
    models: tuple[str, ...] | None = None  # GET /v1/models lists these; None: 404, as bare servers do
    faults: deque[Fault] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    served_usage: list[dict[str, int]] = field(default_factory=list)
    faults_served: int = 0
    reply_delay_s: float = 0.0  # every scripted reply waits this long (to observe concurrency)
    token_ids: Literal["vllm", "legacy", "none"] = "vllm"  # how token ids come back (module doc)
    in_flight: int = 0
    max_in_flight: int = 0
    port: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _reply_for(self, body: Mapping[str, Any]) -> Reply | Fault | str:
        if callable(self.script):
            return self.script(body)
        if "input" in body:  # /v1/responses
            first_user, turn = first_user_text(body["input"]), responses_turn(body["input"])
        else:
            messages = body["messages"]
            first_user = next((m.get("content") for m in messages if m.get("role") == "user"), None)
            turn = sum(1 for m in messages if m.get("role") == "assistant")
        for key, replies in self.script.items():
            if isinstance(first_user, str) and key in first_user:
                if turn >= len(replies):
                    return f"script {key!r} has {len(replies)} replies; turn {turn} asked"
                return replies[turn]
        return f"no script for the conversation starting {str(first_user)[:60]!r}"

    def handle(self, body: Any, auth: str | None) -> tuple[int, dict[str, str], bytes, float]:
        """(status, headers, body, stall seconds) for one request."""
        with self._lock:
            self.requests.append(body if isinstance(body, dict) else {"invalid": body})
            fault = self.faults.popleft() if self.faults else None
            if fault is not None:
                self.faults_served += 1
        if fault is not None:
            headers = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            return fault.status, headers, fault.body.encode(), fault.delay_s
        if self.api_key is not None and auth != f"Bearer {self.api_key}":
            return 401, {}, b'{"error": {"message": "invalid api key"}}', 0.0
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return 400, {}, b'{"error": {"message": "messages must be a list"}}', 0.0
        problem = history_error(body["messages"])
        reply = self._reply_for(body) if problem is None else problem
        if isinstance(reply, str):
            return 400, {}, json.dumps({"error": {"message": reply}}).encode(), 0.0
        if isinstance(reply, Fault):
            return reply.status, {}, reply.body.encode(), reply.delay_s
        turn = sum(1 for m in body["messages"] if m.get("role") == "assistant")
        message = reply.message(turn)
        usage = usage_of(body, message)
        with self._lock:
            self.served_usage.append(usage)
        reason = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        response_extra, choice_extra = token_fields(body, message, self.token_ids)
        response = {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", self.model),
            "choices": [{"index": 0, "message": message, "finish_reason": reason, **choice_extra}],
            "usage": usage,
            **response_extra,
        }
        return 200, {}, json.dumps(response).encode(), self.reply_delay_s

    def handle_responses(self, body: Any, auth: str | None) -> tuple[int, dict[str, str], bytes, float]:
        """(status, headers, body, stall seconds) for one POST /v1/responses (no faults queued
        here: those are the chat side's)."""
        with self._lock:
            self.requests.append(body if isinstance(body, dict) else {"invalid": body})
        if self.api_key is not None and auth != f"Bearer {self.api_key}":
            return 401, {}, b'{"error": {"message": "invalid api key"}}', 0.0
        if not isinstance(body, dict) or not isinstance(body.get("input"), list):
            return 400, {}, b'{"error": {"message": "input must be a list of items"}}', 0.0
        problem = responses_history_error(body["input"])
        reply = self._reply_for(body) if problem is None else problem
        if isinstance(reply, str):
            return 400, {}, json.dumps({"error": {"message": reply}}).encode(), 0.0
        if isinstance(reply, Fault):
            return reply.status, {}, reply.body.encode(), reply.delay_s
        output = response_output(reply, responses_turn(body["input"]))
        chat_usage = usage_of({"messages": body["input"]}, {"output": output})
        usage = {
            "input_tokens": chat_usage["prompt_tokens"],
            "output_tokens": chat_usage["completion_tokens"],
            "total_tokens": chat_usage["total_tokens"],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        }
        response = {
            "id": f"resp_{len(self.requests)}",
            "object": "response",
            "created_at": 0,
            "status": "completed",
            "model": body.get("model", self.model),
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools", []),
            "usage": usage,
        }
        return 200, {}, json.dumps(response).encode(), self.reply_delay_s


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real servers do

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, headers: Mapping[str, str], payload: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            if self.path != "/v1/models" or fake.models is None:
                self._send(404, {}, b'{"error": {"message": "not found"}}')
            elif fake.api_key is not None and self.headers.get("Authorization") != f"Bearer {fake.api_key}":
                self._send(401, {}, b'{"error": {"message": "invalid api key"}}')
            else:
                listing = {"object": "list", "data": [{"id": m, "object": "model"} for m in fake.models]}
                self._send(200, {}, json.dumps(listing).encode())

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path not in ("/v1/chat/completions", "/v1/responses"):
                self._send(404, {}, b'{"error": {"message": "not found"}}')
                return
            handle = fake.handle if self.path == "/v1/chat/completions" else fake.handle_responses
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
            with fake._lock:
                fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                fake.in_flight += 1
                fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
            try:
                status, headers, payload, stall = handle(body, self.headers.get("Authorization"))
                if stall:
                    time.sleep(stall)
            finally:
                with fake._lock:
                    fake.in_flight -= 1
            with contextlib.suppress(OSError):  # the client gave up (timeout) and hung up
                self._send(status, headers, payload)

    return Handler


@contextmanager
def serve(fake: FakeOpenAI) -> Iterator[FakeOpenAI]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    server.daemon_threads = True
    fake.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
