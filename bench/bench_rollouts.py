"""Rollout throughput side by side in one run: in process (threads), local processes and Ray actors,
with 1, 2 and 4 workers, on the bundled mock-app task sets with the oracle (traces written).

    /work/venv-ray/bin/python bench/bench_rollouts.py            # 3 rounds
    /work/venv-ray/bin/python bench/bench_rollouts.py --quick    # 1 round, fewer episodes

Each configuration runs twice per round, a short and a long rollout (N and 4N episodes); the
marginal rate, (steps_long - steps_short) / (t_long - t_short), is the steady throughput without
the start-up (worker processes, actors, imports), and the start-up is what the short run took
beyond it. Rounds interleave the configurations so that noise from other work on the machine falls
on all of them; medians over rounds are printed. Wall-clock on a shared machine: read the ratios.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import ray

from toolgym.envs.demo import mock_task_paths
from toolgym.envs.ray_rollouts import RayExecutor
from toolgym.envs.rollouts import Executor, InProcessExecutor, ProcessExecutor, episode_specs, rollout
from toolgym.evaluation.runs import set_name
from toolgym.tasks import TaskSet

SETS = [(set_name(p), TaskSet.load(p)) for p in mock_task_paths()]
TASKS = sum(len(s) for _, s in SETS)


@dataclass
class Measure:
    steps: int
    episodes: int
    seconds: float
    driver_cpu_s: float  # CPU time of this process (the driver: scheduling, trace writes)


def measure(make: Callable[[], Executor], trials: int) -> Measure:
    out = Path(tempfile.mkdtemp(prefix="bench-rollouts-"))
    try:
        specs = episode_specs(SETS, trials=trials, seed=0)
        start, cpu = time.perf_counter(), time.process_time()
        outcomes = rollout(SETS, specs, out=out, executor=make())
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        assert all(o.reward == 1.0 for o in outcomes), "the oracle failed a task"
        return Measure(sum(o.steps for o in outcomes), len(outcomes), seconds, cpu)
    finally:
        shutil.rmtree(out, ignore_errors=True)


@dataclass
class Row:
    kind: str
    workers: int
    rates: list[float]  # marginal steps/s per round
    episode_ms: list[float]  # marginal wall time per episode
    startup_s: list[float]
    driver_ms: list[float]  # marginal driver CPU per episode

    @property
    def rate(self) -> float:
        return statistics.median(self.rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round, fewer episodes")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--trials", type=int, default=None, help="trials in the short run (long: 4x)")
    parser.add_argument("--workers", default="1,2,4")
    args = parser.parse_args()
    rounds = args.rounds or (1 if args.quick else 3)
    short = args.trials or (2 if args.quick else 4)
    counts = [int(n) for n in args.workers.split(",")]
    # one local Ray instance for the whole run, on loopback, with a CPU slot per actor asked for
    ray.init(
        num_cpus=max(counts),
        include_dashboard=False,
        log_to_driver=False,
        _node_ip_address="127.0.0.1",
    )
    configs: list[tuple[str, int, Callable[[], Executor]]] = []
    for n in counts:
        configs.append(("in-process (threads)", n, lambda n=n: InProcessExecutor(n)))  # type: ignore[misc]
        configs.append(("processes", n, lambda n=n: ProcessExecutor(n)))  # type: ignore[misc]
        configs.append(("ray actors", n, lambda n=n: RayExecutor(n)))  # type: ignore[misc]
    rows = {(kind, n): Row(kind, n, [], [], [], []) for kind, n, _ in configs}
    print(f"{os.cpu_count()} CPUs; {TASKS} mock-app tasks; short run {short} trials, long run {4 * short}")
    print(f"load average at the start: {os.getloadavg()[0]:.1f}")
    measure(InProcessExecutor, 1)  # warm this process's caches (seeded world templates, imports)
    for r in range(rounds):
        for kind, n, make in configs:
            a = measure(make, short)
            b = measure(make, 4 * short)
            rate = (b.steps - a.steps) / (b.seconds - a.seconds)
            per_episode = (b.seconds - a.seconds) / (b.episodes - a.episodes)
            row = rows[(kind, n)]
            row.rates.append(rate)
            row.episode_ms.append(per_episode * 1000)
            row.startup_s.append(max(0.0, a.seconds - a.episodes * per_episode))
            row.driver_ms.append((b.driver_cpu_s - a.driver_cpu_s) / (b.episodes - a.episodes) * 1000)
            print(
                f"round {r + 1}: {kind:22} x{n}: {rate:7.0f} steps/s, {per_episode * 1000:6.2f} ms/episode, "
                f"start-up {row.startup_s[-1]:5.2f} s, driver CPU {row.driver_ms[-1]:.2f} ms/episode "
                f"({b.episodes} episodes in {b.seconds:.2f} s)",
                flush=True,
            )
    ray.shutdown()
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    base = rows[("in-process (threads)", counts[0])].rate
    print()
    print(
        "| executor | workers | steps/s (median) | ms per episode | driver CPU per episode | start-up "
        "| vs in-process x1 | Ray / processes |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for kind, n, _ in configs:
        row = rows[(kind, n)]
        vs_proc = ""
        if kind == "ray actors":
            vs_proc = f"{row.rate / rows[('processes', n)].rate:.0%}"
        print(
            f"| {kind} | {n} | {row.rate:.0f} | {statistics.median(row.episode_ms):.2f} ms | "
            f"{statistics.median(row.driver_ms):.2f} ms | {statistics.median(row.startup_s):.1f} s | "
            f"{row.rate / base:.2f}x | {vs_proc} |"
        )
    one_proc = statistics.median(rows[("in-process (threads)", counts[0])].episode_ms)
    one_ray = statistics.median(rows[("ray actors", counts[0])].episode_ms)
    one_pool = statistics.median(rows[("processes", counts[0])].episode_ms)
    print()
    print(
        f"per-episode overhead over in-process with 1 worker: Ray {one_ray - one_proc:+.2f} ms, "
        f"processes {one_pool - one_proc:+.2f} ms (in-process {one_proc:.2f} ms per episode)"
    )


if __name__ == "__main__":
    main()
