"""Rollout throughput side by side in one run: in process (threads), local processes and Ray actors,
with 1, 2 and 4 workers, on the bundled mock-app task sets with the oracle (traces written).

    /work/venv-ray/bin/python bench/bench_rollouts.py            # 3 rounds
    /work/venv-ray/bin/python bench/bench_rollouts.py --quick    # 1 round, 4 trials per task

Each configuration runs once per round; its rates are taken over the steady part of the run, from
the outcome that completes the first fifth of the episodes (every worker has started by then) to
the one that completes 95%, so the start-up (worker processes, a Ray instance and its actors,
imports) is left out and printed apart (time to the first result). Rounds interleave the
configurations so that noise from other work on the machine falls on all of them; medians over
rounds are printed.

Beside wall-clock rates, the CPU time of every process a run uses (all descendants of this
process, read from /proc) is measured over the same window, in three parts: the driver (this
process: scheduling, unpickling results, writing traces), the workers (pool processes or Ray
rollout actors: the episodes) and the daemons (a local Ray instance's raylet, GCS, agents and
monitors; the pool's fork server). On a shared machine the wall-clock rates swing with other
people's work; CPU per episode hardly does, and when the cores are saturated (the regime that
matters at scale) throughput is cores / CPU per episode, so the CPU ratios are the steadier
Ray-vs-processes figures. The daemons cost a roughly fixed share of a core per node whatever the
node's size, so the driver + workers ratio is what carries over to a cluster.
Linux only (/proc).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from toolgym.envs.demo import mock_task_paths
from toolgym.envs.ray_rollouts import RayExecutor
from toolgym.envs.rollouts import (
    EpisodeOutcome,
    Executor,
    InProcessExecutor,
    ProcessExecutor,
    episode_specs,
    rollout,
)
from toolgym.running.trials import set_name
from toolgym.tasks import TaskSet

SETS = [(set_name(p), TaskSet.load(p)) for p in mock_task_paths()]
TASKS = sum(len(s) for _, s in SETS)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def tree_cpu() -> dict[int, tuple[int, str]]:
    """CPU ticks (user + system) of this process and each process below it, by pid, with its part:
    `driver` (this process), `workers` (process-pool workers, Ray rollout actors) or `daemons`
    (everything else: a local Ray instance's raylet, GCS, agents, monitors and idle workers; the
    pool's fork server). ray.init starts its processes as our descendants. Linux /proc only."""
    stats: dict[int, tuple[int, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            text = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue  # gone meanwhile
        fields = text[text.rindex(")") + 2 :].split()  # fields 3.. of proc(5)'s stat
        stats[int(entry)] = (int(fields[1]), int(fields[11]) + int(fields[12]))  # ppid; utime + stime
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    me = os.getpid()
    found: dict[int, tuple[int, str]] = {}
    todo: list[tuple[int, bool]] = [(me, False)]  # (pid, its parent is the fork server)
    while todo:
        pid, forked = todo.pop()
        cmd = _cmdline(pid)
        server = "multiprocessing.forkserver" in cmd
        part = "driver" if pid == me else "daemons"
        if forked or cmd.startswith("ray::RolloutActor"):
            part = "workers"
        found[pid] = (stats.get(pid, (0, 0))[1], part)
        todo.extend((child, server) for child in children.get(pid, []))
    return found


def cpu_between(before: dict[int, tuple[int, str]], after: dict[int, tuple[int, str]]) -> dict[str, float]:
    """CPU seconds by part that the processes alive at `after` spent since `before` (each process's
    own time: children reaped meanwhile are not counted twice, and a process that exited meanwhile,
    such as an idle Ray worker the raylet retired, does not make the sum go down)."""
    parts = {"driver": 0.0, "workers": 0.0, "daemons": 0.0}
    for pid, (ticks, part) in after.items():
        parts[part] += (ticks - before.get(pid, (0, part))[0]) / os.sysconf("SC_CLK_TCK")
    return parts


@dataclass
class Measure:
    """The steady part of one rollout: from the outcome that completes its first fifth (every
    worker has started by then) to the one that completes 95% (every worker still runs: at the very
    end, pool processes and actors are gone before the last trace is written)."""

    steps: int = 0
    episodes: int = 0
    seconds: float = 0.0
    driver_cpu_s: float = 0.0  # CPU time of this process (the driver: scheduling, trace writes)
    worker_cpu_s: float = 0.0  # of the pool's worker processes or the Ray rollout actors
    daemon_cpu_s: float = 0.0  # of the rest (Ray's raylet, GCS, agents, monitors; the fork server)
    startup_s: float = 0.0  # until the first outcome came back


def measure(make: Callable[[], Executor], trials: int) -> Measure:
    out = Path(tempfile.mkdtemp(prefix="bench-rollouts-"))
    specs = episode_specs(SETS, trials=trials, seed=0)
    skip, last = len(specs) // 5, len(specs) * 19 // 20
    m = Measure()
    marks: dict[str, float] = {}
    cpu_at_skip: dict[int, tuple[int, str]] = {}
    seen = 0

    def on_outcome(outcome: EpisodeOutcome) -> None:
        nonlocal seen
        seen += 1
        if seen == 1:
            m.startup_s = time.perf_counter() - marks["start"]
        if skip < seen <= last:
            m.steps += outcome.steps
            m.episodes += 1
        if seen in (skip, last):
            now, tree = time.perf_counter(), tree_cpu()
            if seen == skip:
                marks.update(t=now)
                cpu_at_skip.update(tree)
            else:
                m.seconds = now - marks["t"]
                parts = cpu_between(cpu_at_skip, tree)
                m.driver_cpu_s, m.worker_cpu_s, m.daemon_cpu_s = (
                    parts["driver"],
                    parts["workers"],
                    parts["daemons"],
                )

    try:
        marks["start"] = time.perf_counter()
        outcomes = rollout(SETS, specs, out=out, executor=make(), on_outcome=on_outcome)
        assert all(o.reward == 1.0 for o in outcomes), "the oracle failed a task"
        return m
    finally:
        shutil.rmtree(out, ignore_errors=True)


@dataclass
class Row:
    kind: str
    workers: int
    rates: list[float] = field(default_factory=list)  # steady steps/s per round
    episode_ms: list[float] = field(default_factory=list)  # steady wall time per episode
    startup_s: list[float] = field(default_factory=list)
    driver_ms: list[float] = field(default_factory=list)  # CPU per episode, by part
    worker_ms: list[float] = field(default_factory=list)
    daemon_ms: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return statistics.median(self.rates)

    @property
    def episode_cpu(self) -> float:
        """CPU per episode of the driver and the workers: what grows with the episodes."""
        return statistics.median(d + w for d, w in zip(self.driver_ms, self.worker_ms, strict=True))

    @property
    def cpu(self) -> float:
        return statistics.median(
            d + w + x for d, w, x in zip(self.driver_ms, self.worker_ms, self.daemon_ms, strict=True)
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round, fewer episodes")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--trials", type=int, default=None, help="trials per task (default 16, quick 4)")
    parser.add_argument("--workers", default="1,2,4")
    args = parser.parse_args()
    rounds = args.rounds or (1 if args.quick else 3)
    trials = args.trials or (4 if args.quick else 16)
    counts = [int(n) for n in args.workers.split(",")]
    configs: list[tuple[str, int, Callable[[], Executor]]] = []
    for n in counts:
        configs.append(("in-process (threads)", n, lambda n=n: InProcessExecutor(n)))  # type: ignore[misc]
        configs.append(("processes", n, lambda n=n: ProcessExecutor(n)))  # type: ignore[misc]
        # each Ray run starts its own local instance, as `toolgym run --ray` does, so its daemons'
        # CPU is counted in its own runs only; a CPU slot per actor even where cores are fewer
        ray_init = {"num_cpus": max(n, 2)}
        configs.append(("ray actors", n, lambda n=n, o=ray_init: RayExecutor(n, init_options=o)))  # type: ignore[misc]
    rows = {(kind, n): Row(kind, n) for kind, n, _ in configs}
    print(
        f"{os.cpu_count()} CPUs; {TASKS} mock-app tasks x {trials} trials = {TASKS * trials} episodes per run"
    )
    print(f"load average at the start: {os.getloadavg()[0]:.1f}")
    measure(InProcessExecutor, 1)  # warm this process's caches (seeded world templates, imports)
    for r in range(rounds):
        for kind, n, make in configs:
            m = measure(make, trials)
            row = rows[(kind, n)]
            row.rates.append(m.steps / m.seconds)
            row.episode_ms.append(m.seconds / m.episodes * 1000)
            row.startup_s.append(m.startup_s)
            row.driver_ms.append(m.driver_cpu_s / m.episodes * 1000)
            row.worker_ms.append(m.worker_cpu_s / m.episodes * 1000)
            row.daemon_ms.append(m.daemon_cpu_s / m.episodes * 1000)
            print(
                f"round {r + 1}: {kind:22} x{n}: {row.rates[-1]:7.0f} steps/s, "
                f"{row.episode_ms[-1]:6.2f} ms/episode; CPU per episode: driver {row.driver_ms[-1]:.2f} ms, "
                f"workers {row.worker_ms[-1]:.2f} ms, daemons {row.daemon_ms[-1]:.2f} ms "
                f"({m.daemon_cpu_s / m.seconds:.0%} of a core); first result after {m.startup_s:5.2f} s",
                flush=True,
            )
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    base = rows[("in-process (threads)", counts[0])]
    print()
    print(
        "| executor | workers | steps/s (wall) | CPU per episode: driver + workers | + daemons "
        "| first result after | Ray / processes: steps/s | Ray / processes: episodes per CPU-second "
        "(driver + workers) | (all processes) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for kind, n, _ in configs:
        row = rows[(kind, n)]
        ratios = ["", "", ""]
        if kind == "ray actors":
            procs = rows[("processes", n)]
            ratios = [
                f"{row.rate / procs.rate:.0%}",
                f"{procs.episode_cpu / row.episode_cpu:.0%}",
                f"{procs.cpu / row.cpu:.0%}",
            ]
        print(
            f"| {kind} | {n} | {row.rate:.0f} | {row.episode_cpu:.2f} ms | {row.cpu:.2f} ms "
            f"| {statistics.median(row.startup_s):.1f} s | {' | '.join(ratios)} |"
        )
    ray1, proc1 = rows[("ray actors", counts[0])], rows[("processes", counts[0])]
    print()
    print(
        f"CPU per episode (driver + workers) over in-process, {counts[0]} worker(s): Ray "
        f"{ray1.episode_cpu - base.episode_cpu:+.2f} ms, processes {proc1.episode_cpu - base.episode_cpu:+.2f} ms "
        f"(in-process {base.episode_cpu:.2f} ms); with daemons: Ray {ray1.cpu - base.cpu:+.2f} ms, processes "
        f"{proc1.cpu - base.cpu:+.2f} ms; wall: Ray "
        f"{statistics.median(ray1.episode_ms) - statistics.median(base.episode_ms):+.2f} ms, processes "
        f"{statistics.median(proc1.episode_ms) - statistics.median(base.episode_ms):+.2f} ms per episode"
    )


if __name__ == "__main__":
    main()
