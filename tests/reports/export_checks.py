"""The export = prompt property, checked on a run of one chat-API episode (a scripted server's or a
real one's): every export format that carries messages gives, for each turn, exactly the request
the trace recorded for it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from toolgym.cli import app
from toolgym.trace import Trace, full_requests, read_trace


def hf_form(message: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """A request message in the hf export's documented form: arguments as objects, tool messages
    named after their call, content text, no weights."""
    message = {k: v for k, v in message.items() if k != "weight"}
    if message.get("tool_calls"):
        calls_ = []
        for c in message["tool_calls"]:
            names[c["id"]] = c["function"]["name"]
            arguments = c["function"]["arguments"]
            if arguments.endswith("}"):  # JSON; a call cut short stays text
                arguments = json.loads(arguments)
            calls_.append({**c, "function": {**c["function"], "arguments": arguments}})
        return {**message, "content": message.get("content") or "", "tool_calls": calls_}
    if message["role"] == "tool":
        return {**message, "name": names[message["tool_call_id"]]}
    return message


def export(run: Path, fmt: str, out: Path) -> list[dict[str, Any]]:
    result = CliRunner().invoke(app, ["export", str(run), "--format", fmt, "--out", str(out)])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in out.read_text().splitlines()]


@dataclass(frozen=True)
class CheckedExport:
    """What the check read: the trace, its requests as sent, the openai export's record, its
    messages and the tools the requests sent."""

    trace: Trace
    requests: list[dict[str, Any]]
    record: dict[str, Any]
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]


def check_exports_equal_requests(trace_path: Path, run: Path, tmp: Path) -> CheckedExport:
    """Exports `run` (one episode, at `trace_path`) as openai, hf, sharegpt and, when its steps kept
    token ids, tokens; asserts that for every turn the exported messages up to that turn and the
    tools are the request the trace recorded (the system message included), in each format's own
    form, and that the model's reply follows them (weighted 0 when it did not parse)."""
    trace = read_trace(trace_path)
    requests = [r for r in full_requests(trace.steps) if r is not None]
    assert len(requests) == len(trace.steps)
    sent_tools = requests[0]["tools"] or []  # the text protocols send none: the docs are in the prompt
    (openai_record,) = export(run, "openai", tmp / "openai.jsonl")
    (hf_record,) = export(run, "hf", tmp / "hf.jsonl")
    (sharegpt_record,) = export(run, "sharegpt", tmp / "sharegpt.jsonl")
    exported = openai_record["messages"]
    assert openai_record["tools"] == hf_record["tools"] == sent_tools
    if any(step.tokens is not None for step in trace.steps):
        (token_record,) = export(run, "tokens", tmp / "tokens.jsonl")
        assert token_record["messages"] == exported and token_record["tools"] == sent_tools
    for step, request in zip(trace.steps, requests, strict=True):
        n = len(request["messages"])
        assert [{k: v for k, v in m.items() if k != "weight"} for m in exported[:n]] == request["messages"]
        reply = exported[n]  # the model's reply, as it wrote it; learnt only when it parsed
        assert reply["role"] == "assistant" and ("weight" in reply) == (not step.actions)
    assert exported[0]["role"] == "system"
    # hf and sharegpt have no per-turn weights: every assistant turn in them is learnt, so a reply
    # that did not parse is left out with the env's answer to it (the messages up to the next
    # reply); every other message is the request's, in the format's own form
    kept: list[dict[str, Any]] = []
    answering_unparsed = False  # between a reply that did not parse and the next reply
    for message in exported:
        if message["role"] == "assistant":
            answering_unparsed = message.get("weight") == 0
        if not answering_unparsed:
            kept.append(message)
    while kept[-1]["role"] != "assistant":
        kept.pop()  # a record ends with a reply to learn
    names: dict[str, str] = {}
    assert hf_record["messages"] == [hf_form(m, names) for m in kept]
    unparsed = [_content(m) for m in exported if m.get("weight") == 0 and _content(m)]
    assert not any(_content(m) in unparsed for m in hf_record["messages"] if m["role"] == "assistant")
    targets = [t for t in sharegpt_record["conversations"] if t["from"] in ("gpt", "function_call")]
    assert len(targets) == sum(1 for m in kept if m["role"] == "assistant")
    assert not any(t["value"] in unparsed for t in targets)
    assert sharegpt_record["system"] == exported[0]["content"]
    assert json.loads(sharegpt_record["tools"]) == [t["function"] for t in sent_tools]
    return CheckedExport(trace, requests, openai_record, exported, sent_tools)


def _content(message: dict[str, Any]) -> str:
    return str(message.get("content") or "")
