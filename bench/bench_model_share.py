"""The env's share of a real model's episode (issue 30, item 5): how long `ToolEnv.step` takes
beside the model's turn, on the real SmolLM2-135M-Instruct.

    PYTHONPATH=. .venv/bin/python bench/bench_model_share.py                 # runs hf:smollm2 itself
    PYTHONPATH=. .venv/bin/python bench/bench_model_share.py RUN [RUN ...]   # reads finished runs

Without run folders it runs `toolgym run --agent hf:smollm2` (in process, greedy) over the first
tasks of the mock-app sets (mtu, multiturn) and T-Eval, a few steps each, into a temporary folder.
Every LLM step's trace line keeps both clocks: `latency_ms` (the env's step: parse, tool call, the
world's write, hash and diff) and `model_latency_ms` (the model's answer). The bench prints, per
task set, the medians per turn and the env's total as a share of the model's; the target is < 1%.
Both clocks are wall-clock time on the same machine at the same minute, so the share holds under
load where the absolute figures do not.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_SHARE = 0.01
SETS = ("mtu", "multiturn", "teval")


def run_model(out: Path, per_set: int, max_steps: int, max_tokens: int) -> None:
    """`toolgym run --agent hf:smollm2` over the first `per_set` tasks of each of SETS."""
    from toolgym.envs.demo import resolve_task_set

    command = [sys.executable, "-m", "toolgym.cli", "run", "--agent", "hf:smollm2", "--out", str(out)]
    for name in SETS:  # --limit counts over all sets: name each set's first tasks instead
        ids = [task.id for task in resolve_task_set(name)][:per_set]
        command += ["--tasks", name, *(a for task_id in ids for a in ("--task-id", task_id))]
    command += ["--max-steps", str(max_steps), "--max-tokens", str(max_tokens)]
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)


def clocks(run: Path) -> dict[str, list[tuple[float, float]]]:
    """(env ms, model ms) of every model turn of `run`, by task set."""
    by_set: dict[str, list[tuple[float, float]]] = defaultdict(list)
    summary = json.loads((run / "run.json").read_text(encoding="utf-8"))
    for episode in summary["episodes"]:
        if not episode.get("trace"):
            continue
        for line in (run / episode["trace"]).read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            env_ms, model_ms = record.get("latency_ms"), record.get("model_latency_ms")
            if isinstance(env_ms, (int, float)) and isinstance(model_ms, (int, float)):
                by_set[episode["task_set"]].append((float(env_ms), float(model_ms)))
    return by_set


def report(name: str, turns: list[tuple[float, float]]) -> str:
    env = [e for e, _ in turns]
    model = [m for _, m in turns]
    share = sum(env) / sum(model)
    verdict = "met" if share < TARGET_SHARE else "NOT met"
    return (
        f"  {name:<22}{len(turns):>6}{statistics.median(model):>14,.0f}{statistics.median(env):>12.2f}"
        f"{share:>12.4%}  {verdict}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("runs", nargs="*", type=Path, help="finished run folders of an LLM agent")
    parser.add_argument("--per-set", type=int, default=2, help="tasks per set when the bench runs the model")
    parser.add_argument("--max-steps", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=48)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="model-share-") as tmp:
        runs = list(args.runs)
        if not runs:
            runs = [Path(tmp) / "run"]
            run_model(runs[0], args.per_set, args.max_steps, args.max_tokens)
        print(
            f"  {'task set':<22}{'turns':>6}{'model ms/turn':>14}{'env ms/step':>12}{'env/model':>12}  (< 1%)"
        )
        every: list[tuple[float, float]] = []
        for run in runs:
            for name, turns in sorted(clocks(run).items()):
                label = name if len(runs) == 1 else f"{run.parent.name}/{run.name}/{name}"
                print(report(label, turns))
                every += turns
        if not every:
            print("no step kept both clocks: the runs' agent was not an LLM agent", file=sys.stderr)
            return 2
        print(report("all", every))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
