"""Replay from cassettes against live tools, and what recording costs, measured side by side.

    python bench/bench_replay.py [--rounds 20] [--quick]

The episodes are the bundled task sets played by the oracle (raw ReAct text, so parsing is in
every step): the demo set (real GTA tools: OCR, Calculator, Solver, Plot, DrawBox, AddText) and
the mock-app sets (SQLite worlds, writes included). For each set, `env.step` is timed in three
modes: live (no cassette), record (live + the cassette write) and replay (strict, from the
cassette). Figures: median and p99 per tool-call step, tool-call steps per second (the sum of
their step times), all steps per second (final answers include the reward: on mock sets that
replays the golden chain on a fresh world), and the bare `CassetteToolSet.call` hit.
Live means the tools really run: toolgym's result cache (OCR) is off for the whole bench
(TOOLGYM_CACHE=0), or a live OCR call would be a cache lookup.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from toolgym.actions import ToolCall
from toolgym.envs.demo import demo_tasks_path, mock_task_paths
from toolgym.envs.tool_env import ToolEnv
from toolgym.files import FileStore
from toolgym.protocols import get_protocol
from toolgym.recorder.cassette import Cassette, CassetteMode
from toolgym.tasks import Task, TaskSet
from toolgym.tools import ToolContext, ToolSet
from toolgym.toolservers.gta.calculator import calculator
from toolgym.toolservers.registry import default_toolset

Episode = tuple[TaskSet, Task, list[Any]]
Sample = tuple[int, bool]  # (ns, was a tool call)


def episodes(paths: list[Path]) -> list[Episode]:
    react = get_protocol("react")
    out = []
    for path in paths:
        task_set = TaskSet.load(path)
        for task in task_set:
            out.append((task_set, task, [react.format_action(g.action) for g in task.golden]))
    return out


def drive(items: list[Episode], tools: ToolSet, cassette: Cassette | None, rounds: int) -> list[Sample]:
    envs: dict[int, ToolEnv] = {}
    samples: list[Sample] = []
    for _ in range(rounds):
        for task_set, task, outputs in items:
            env = envs.get(id(task_set))
            if env is None:
                env = envs[id(task_set)] = ToolEnv(tools, task_set, cassette=cassette)
            env.reset(seed=0, options={"task": task})
            for output in outputs:
                start = time.perf_counter_ns()
                _, _, terminated, truncated, info = env.step(output)
                elapsed = time.perf_counter_ns() - start
                samples.append((elapsed, any(a["type"] == "tool_call" for a in info["actions"])))
                if terminated or truncated:
                    break
    for env in envs.values():
        env.close()
    return samples


def figures(samples: list[Sample]) -> dict[str, float]:
    tool = sorted(ns for ns, is_tool in samples if is_tool)
    return {
        "median_us": statistics.median(tool) / 1000,
        "p99_us": tool[min(len(tool) - 1, int(len(tool) * 0.99))] / 1000,
        "tool_steps_per_s": len(tool) / (sum(tool) / 1e9),
        "all_steps_per_s": len(samples) / (sum(ns for ns, _ in samples) / 1e9),
        "tool_steps": float(len(tool)),
    }


def run_mode(
    items: list[Episode], tools: ToolSet, mode: CassetteMode, path: Path, rounds: int
) -> tuple[dict[str, float], dict[str, int]]:
    cassette = None if mode == "live" else Cassette(path, mode=mode)
    try:
        samples = drive(items, tools, cassette, rounds)
    finally:
        if cassette is not None:
            cassette.close()
    stats = cassette.stats.as_dict() if cassette is not None else {}
    return figures(samples), stats


def print_row(label: str, f: dict[str, float], base: dict[str, float] | None) -> None:
    ratio = f"{base['median_us'] / f['median_us']:7.1f}x" if base else "   base"
    print(
        f"  {label:<30} median {f['median_us']:9.1f} µs  p99 {f['p99_us']:9.1f} µs  "
        f"{f['tool_steps_per_s']:9.0f} tool steps/s  {f['all_steps_per_s']:9.0f} steps/s  {ratio}"
    )


def bench_set(name: str, paths: list[Path], rounds: int, live_rounds: int) -> None:
    items = episodes(paths)
    tools = default_toolset()
    with tempfile.TemporaryDirectory(prefix="bench-replay-") as tmp:
        tape = Path(tmp) / "cassette.sqlite"
        drive(items, tools, None, 1)  # warm-up: models loaded, templates seeded, sandboxes ready
        live, _ = run_mode(items, tools, "live", tape, live_rounds)
        recorded, rec_stats = run_mode(items, tools, "record", tape, live_rounds)
        replayed, rep_stats = run_mode(items, tools, "replay", tape, rounds)
    print(
        f"\n{name}: {len(items)} episodes, {int(live['tool_steps']) // live_rounds} tool-call steps per round"
    )
    print_row("live (no cassette)", live, None)
    print_row("record (live + write)", recorded, live)
    print_row("replay (strict)", replayed, live)
    overhead = recorded["median_us"] - live["median_us"]
    print(
        f"  recording overhead: {overhead:+.1f} µs median per tool call "
        f"({recorded['median_us'] / live['median_us']:.2f}x live); "
        f"replay: {replayed['tool_steps_per_s']:.0f} tool steps/s, live calls {rep_stats['live_calls']}, "
        f"misses {rep_stats['misses']}; recorded {rec_stats['recorded']}"
    )


def bench_lookup(n: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-replay-") as tmp:
        path = Path(tmp) / "cassette.sqlite"
        ctx = ToolContext(files=FileStore())
        call = ToolCall(name="Calculator", arguments={"expression": "290 // 5"})
        with Cassette(path, mode="record") as tape:
            tape.wrap(ToolSet([calculator])).call(call, ctx)
        bare = ToolSet([calculator])
        with Cassette(path, mode="replay") as tape:
            wrapped = tape.wrap(bare)
            rows = []
            for label, fn in (
                ("ToolSet.call (live Calculator)", bare.call),
                ("CassetteToolSet.call (hit)", wrapped.call),
            ):
                samples = []
                for _ in range(n):
                    start = time.perf_counter_ns()
                    fn(call, ctx)
                    samples.append(time.perf_counter_ns() - start)
                samples.sort()
                rows.append((label, statistics.median(samples) / 1000, n / (sum(samples) / 1e9)))
    print("\nbare calls:")
    for label, median_us, per_s in rows:
        print(f"  {label:<32} median {median_us:7.1f} µs  {per_s:9.0f}/s")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=20, help="replay rounds per set")
    parser.add_argument("--live-rounds", type=int, default=3, help="live and record rounds per set")
    parser.add_argument("--quick", action="store_true", help="mock sets only, fewer rounds")
    args = parser.parse_args()
    rounds, live_rounds = (5, 1) if args.quick else (args.rounds, args.live_rounds)
    os.environ["TOOLGYM_CACHE"] = "0"  # read on every call: live OCR recognises, as a model's tool would
    bench_set("mock-app sets", mock_task_paths(), rounds, live_rounds)
    if not args.quick:
        bench_set("demo set (real GTA tools)", [demo_tasks_path()], rounds, live_rounds)
    bench_lookup(5000 if args.quick else 20000)


if __name__ == "__main__":
    main()
