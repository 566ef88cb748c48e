"""The step path's targets (issue 30, items 1 and 2), this checkout against another, interleaved.

    PYTHONPATH=. .venv/bin/python bench/bench_step_path.py --against /tmp/base [--rounds 3] [--quick]

One worker process per checkout, each with its own code on PYTHONPATH, both started and warmed
up before anything is timed; then they take turns, one unit of work at a time (one bundled task's
golden chain, one banking episode, one long episode and its reset), the other waiting blocked: the
load of a shared machine falls on both alike, to within a few milliseconds. Each worker times by
its thread's CPU time (`time.thread_time_ns`); the figures are medians over every sample:

- mixed: the bundled mock-app tasks (fixtures/mock_tasks) played along their golden chains, reads
  and writes interleaved as the tasks have them; `ToolEnv.step` per kind of step (read, write),
  with the actions given as objects and as raw ReAct text; and the same ReAct steps with their
  trace line (`step_json(step_fields(...))`, what `run_episode` writes);
- banking: episodes of 20 steps, 25% writes (transfers and deposits; balances,
  accounts and transactions read), the same two ways; and among them the lightest read and write,
  `get_balance` and `transfer` (what bench_step.py repeats); and a whole episode with its reset,
  per step (what a rollout pays: work moved from the reset into the steps shows there);
- the env's own part of those steps: the step less the time its tool spent in `Tool.invoke`
  (argument validation and the app's SQL, which the step path does not own);
- reset: `ToolEnv.reset` after a 1000-step banking episode (25% writes, raw ReAct text) and after
  an empty one, everything included (the world's rollback, the finished episode freed).

Prints each figure for both checkouts, the ratio (other / this) and the target. The worker uses
only what both checkouts have (the public API and the trace functions), so any two checkouts of
this stop compare.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
clock = time.thread_time_ns

# figure -> target in µs (None: shown for reference)
TARGETS: dict[str, float | None] = {
    "mixed read, given": 30,
    "mixed write, given": 100,
    "mixed read, ReAct": 100,
    "mixed write, ReAct": 200,
    "mixed read, ReAct + trace line": None,
    "mixed write, ReAct + trace line": None,
    "mixed read, given: the env's part": None,
    "mixed write, given: the env's part": None,
    "mixed read, ReAct: the env's part": None,
    "mixed write, ReAct: the env's part": None,
    "banking read, given": 30,
    "banking write, given": 100,
    "banking read, ReAct": 100,
    "banking write, ReAct": 200,
    "banking read, given: the env's part": None,
    "banking write, given: the env's part": None,
    "get_balance, given": 30,
    "transfer, given": 100,
    "get_balance, ReAct": 100,
    "transfer, ReAct": 200,
    "get_balance, given: the env's part": None,
    "transfer, given: the env's part": None,
    "banking episode and its reset, per step, given": None,
    "banking episode and its reset, per step, ReAct": None,
    "reset after 1000 steps": 1000,
    "reset after an empty episode": None,
}


# ---- the worker (runs with either checkout's code) -----------------------------------------------
class Worker:
    """The workloads, set up once; `run(unit)` does one unit and keeps its samples."""

    def __init__(self) -> None:
        from toolgym.envs.demo import mock_task_paths
        from toolgym.protocols import get_protocol
        from toolgym.tasks import TaskSet

        self.react = get_protocol("react")
        self.samples: dict[str, list[int]] = {}
        self.invoked = 0  # CPU ns spent in Tool.invoke so far
        self.sets = [TaskSet.load(p) for p in mock_task_paths()]
        self.envs: dict[int, Any] = {}
        self.bank = _banking_env()
        calls = _banking_actions(20)
        self.bank_kinds = [kind for kind, _ in calls]
        self.bank_names = [call.name for _, call in calls]
        self.bank_forms = {
            "given": [c for _, c in calls],
            "ReAct": [self.react.format_action(c) for _, c in calls],
        }
        self.long = [self.react.format_action(c) for _, c in _banking_actions(1000)]
        for unit in self.units(quick=True):  # every workload once, untimed: templates, caches
            self.run(unit, keep=False)

    def units(self, quick: bool) -> Iterator[list[Any]]:
        """One round of work, unit by unit (JSON, so the driver can send them)."""
        for s, task_set in enumerate(self.sets):
            for t in range(len(task_set)):
                yield ["mixed", s, t]
        for _ in range(3 if quick else 10):
            yield ["banking"]
        for _ in range(1 if quick else 3):
            yield ["reset"]

    def _time_tools(self, env: Any) -> None:
        """Counts the time each offered tool spends in `invoke` into `self.invoked` (once a tool)."""
        for tool in env.offered:
            if getattr(tool, "_bench_timed", False):
                continue
            inner = tool.invoke

            def invoke(arguments: Any, ctx: Any, inner: Any = inner) -> Any:
                t0 = clock()
                try:
                    return inner(arguments, ctx)
                finally:
                    self.invoked += clock() - t0

            tool.invoke = invoke
            tool._bench_timed = True

    def _add(self, keep: bool, name: str, value: int) -> None:
        if keep:
            self.samples.setdefault(name, []).append(value)

    def run(self, unit: list[Any], keep: bool = True) -> None:
        kind = unit[0]
        if kind == "mixed":
            self._mixed(unit[1], unit[2], keep)
        elif kind == "banking":
            self._banking(keep)
        else:
            self._reset(keep)

    def _mixed(self, set_index: int, task_index: int, keep: bool) -> None:
        from toolgym.actions import ToolCall
        from toolgym.envs.runner import step_fields
        from toolgym.envs.tool_env import ToolEnv
        from toolgym.trace import step_json

        task_set = self.sets[set_index]
        env = self.envs.get(set_index)
        if env is None:
            env = self.envs[set_index] = ToolEnv(tasks=task_set)
        task = list(task_set)[task_index]
        for form in ("given", "ReAct"):
            _, info = env.reset(seed=0, options={"task": task})
            self._time_tools(env)
            hash_before = info.get("state_hash")
            for golden in task.golden:
                action = golden.action
                kind = "other"
                if isinstance(action, ToolCall) and action.name in env.offered:
                    kind = "write" if env.offered.get(action.name).mutates_state else "read"
                given = action if form == "given" else self.react.format_action(action)
                invoked = self.invoked
                t0 = clock()
                _, _, terminated, truncated, step_info = env.step(given)
                t1 = clock()
                step_json(step_fields(given, step_info, hash_before))
                t2 = clock()
                hash_before = step_info.get("state_hash")
                if kind != "other":
                    name = f"mixed {kind}, {form}"
                    self._add(keep, name, t1 - t0)
                    self._add(keep, f"{name}: the env's part", t1 - t0 - (self.invoked - invoked))
                    if form == "ReAct":
                        self._add(keep, f"{name} + trace line", t2 - t0)
                if terminated or truncated:
                    break

    def _banking(self, keep: bool) -> None:
        env = self.bank
        for form, actions in self.bank_forms.items():
            started = clock()
            env.reset(seed=0)
            self._time_tools(env)
            for kind, name, action in zip(self.bank_kinds, self.bank_names, actions, strict=True):
                invoked = self.invoked
                t0 = clock()
                env.step(action)
                elapsed = clock() - t0
                own = elapsed - (self.invoked - invoked)
                self._add(keep, f"banking {kind}, {form}", elapsed)
                self._add(keep, f"banking {kind}, {form}: the env's part", own)
                if name in ("get_balance", "transfer"):
                    self._add(keep, f"{name}, {form}", elapsed)
                    self._add(keep, f"{name}, {form}: the env's part", own)
            per_step = (clock() - started) // len(actions)
            self._add(keep, f"banking episode and its reset, per step, {form}", per_step)

    def _reset(self, keep: bool) -> None:
        env = self.bank
        env.reset(seed=0)
        for raw in self.long:
            env.step(raw)
        t0 = clock()
        env.reset(seed=0)
        self._add(keep, "reset after 1000 steps", clock() - t0)
        for _ in range(5):
            t0 = clock()
            env.reset(seed=0)
            self._add(keep, "reset after an empty episode", clock() - t0)


def _banking_actions(n: int) -> list[tuple[str, Any]]:
    """n banking steps, every fourth a write: (kind, ToolCall)."""
    from banking_workload import mixed_calls

    return list(mixed_calls(n, every=4))


def _banking_env() -> Any:
    from toolgym.envs.tool_env import ToolEnv
    from toolgym.tasks import Task

    task = Task(id="bench-bank", query="bench", apps=["banking"], max_steps=10**7)
    return ToolEnv(tasks=[task], max_steps=10**7)


def serve(quick: bool) -> None:
    """The worker's loop: `units` lists a round's units; a unit is run and answered `done`;
    `samples` answers every sample kept."""
    worker = Worker()
    out = sys.stdout
    out.write("ready\n")
    out.flush()
    for line in sys.stdin:
        request = json.loads(line)
        if request == "units":
            answer: Any = list(worker.units(quick))
        elif request == "samples":
            answer = worker.samples
        else:
            worker.run(request)
            answer = "done"
        out.write(json.dumps(answer) + "\n")
        out.flush()


# ---- the driver ----------------------------------------------------------------------------------
class Remote:
    """A worker process with one checkout's code, driven line by line."""

    def __init__(self, checkout: Path, quick: bool) -> None:
        command = [sys.executable, str(Path(__file__).resolve()), "--serve", *(["--quick"] if quick else [])]
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        self.process = subprocess.Popen(
            command, cwd=checkout, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None and self.process.stdin is not None
        self._in: IO[str] = self.process.stdin
        self._out: IO[str] = self.process.stdout

    def ready(self) -> None:
        line = self._out.readline()
        if line.strip() != "ready":
            raise RuntimeError(f"worker failed to start (exit {self.process.wait()})")

    def ask(self, request: Any) -> Any:
        self._in.write(json.dumps(request) + "\n")
        self._in.flush()
        line = self._out.readline()
        if not line:
            raise RuntimeError(f"worker died (exit {self.process.wait()})")
        return json.loads(line)

    def close(self) -> None:
        self._in.close()
        self.process.wait()


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--against", type=Path, help="the other checkout (its own code)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="fewer banking episodes and resets a round")
    parser.add_argument("--json", type=Path, help="also write every sample here")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.quick)
        return 0
    checkouts: dict[str, Path] = {"this": ROOT}
    if args.against is not None:
        checkouts["other"] = args.against.resolve()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; load average {load()}")
    workers = {name: Remote(path, args.quick) for name, path in checkouts.items()}
    try:
        for worker in workers.values():
            worker.ready()
        units = workers["this"].ask("units")
        for n in range(args.rounds):
            for i, unit in enumerate(units):
                names = list(workers) if (n + i) % 2 == 0 else list(reversed(workers))
                for name in names:  # one unit each, in turn: the same minute's load for both
                    workers[name].ask(unit)
            print(f"  round {n + 1} of {args.rounds}: load average {load()}")
        samples = {name: worker.ask("samples") for name, worker in workers.items()}
    finally:
        for worker in workers.values():
            worker.close()
    report(samples)
    print(f"load average {load()}")
    if args.json is not None:
        args.json.write_text(json.dumps(samples))
    return 0


def report(samples: dict[str, dict[str, list[int]]]) -> None:
    names = list(samples)
    header = f"  {'CPU µs, medians':<38}" + "".join(f"{n:>10}" for n in names)
    print(header + ("  other/this" if len(names) > 1 else "") + "   target")
    for figure, target in TARGETS.items():
        if any(figure not in samples[n] for n in names):
            continue
        values = [statistics.median(samples[n][figure]) / 1000 for n in names]
        row = f"  {figure:<38}" + "".join(f"{v:10.1f}" for v in values)
        if len(names) > 1:
            row += f"  {values[1] / values[0]:9.2f}x"
        if target is not None:
            row += f"   <= {target:g}" + ("  met" if values[0] <= target else "  not met")
        print(row)


if __name__ == "__main__":
    raise SystemExit(main())
