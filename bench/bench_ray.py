"""Ray on an existing cluster (issue 30, item 4): how long a run takes to start its first episode,
phase by phase, and its throughput beside `--workers N` on the same CPUs, episodes and task sets.

    PYTHONPATH=. .venv/bin/python bench/bench_ray.py --quick            # one node of 2 CPUs
    PYTHONPATH=. .venv/bin/python bench/bench_ray.py --nodes 2 --cpus 1  # two nodes of 1 CPU

The bench starts the cluster itself (`ray start --block` on 127.0.0.1, own ports, temp dir and HOME,
token authentication off) and stops it by pid at the end; every run joins it by its address, as
`toolgym run --ray-address` does. Each figure is taken in a fresh driver process (a new Python,
as a command is), so nothing of an earlier run is warm in the driver:

- phases: a probe actor times what an actor does before its first episode (its worker process
  started, the run's context unpickled, `EpisodeWorker` built, the first and second episode), and
  the driver its imports, `ray.init(address=...)` and the context's put;
- first episode: `rollout()` of the 19 ctool tasks on 2 actors, from the call to the first
  outcome back at the driver and to the last, with fresh actors (killed at the end, the default)
  and with kept actors (`keep_actors_s`: the first run leaves them, the next reuses them); the
  same with `ProcessExecutor(2)`; and the whole `toolgym run` command (its own start-up included);
- throughput: every mock-app task x trials on N actors and on N processes, interleaved round by
  round, steady rates (bench_rollouts.measure: the first fifth and the last 5% left out).

The load average is printed with each figure. Linux only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

T_START = time.time()  # this process's start, for the fresh drivers' figures
ROOT = Path(__file__).resolve().parents[1]
RAY_BIN = Path(sys.executable).with_name("ray")
TOOLGYM_BIN = Path(sys.executable).with_name("toolgym")
FIRST_SET = "ctool"  # 19 tasks


def load() -> str:
    return f"load {os.getloadavg()[0]:.1f}"


# ---- the cluster -----------------------------------------------------------------------------
@contextmanager
def cluster(nodes: int, cpus: int) -> Iterator[tuple[str, dict[str, str]]]:
    """`nodes` Ray nodes of `cpus` CPUs on loopback; yields (address, the drivers' environment).
    Stopped by pid: every process whose environment carries this cluster's marker or whose raylet
    was ours."""
    from toolgym.toolservers.hosting.process import free_ports

    root = Path(tempfile.mkdtemp(prefix="tg-bench-ray-"))
    (root / "home").mkdir()
    ambient = {"RAY_ADDRESS", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"}
    env = {k: v for k, v in os.environ.items() if k not in ambient}
    env |= {
        "HOME": str(root / "home"),
        "RAY_AUTH_MODE": "disabled",
        "PYTHONPATH": str(ROOT),
        "TG_BENCH_RAY": str(root),
    }
    address, starters = "", []
    started = time.perf_counter()
    try:
        for i in range(nodes):
            ports = free_ports(8)
            args = [f"--temp-dir={root / f'n{i}'}", f"--num-cpus={cpus}", "--node-ip-address=127.0.0.1"]
            args += [f"--node-manager-port={ports[0]}", f"--object-manager-port={ports[1]}"]
            args += [f"--metrics-export-port={ports[2]}", f"--dashboard-agent-listen-port={ports[3]}"]
            args += [f"--dashboard-agent-grpc-port={ports[4]}", f"--runtime-env-agent-port={ports[5]}"]
            args += ["--min-worker-port=0", "--max-worker-port=0", "--disable-usage-stats", "--block"]
            if address:
                args.append(f"--address={address}")
            else:
                address = f"127.0.0.1:{ports[6]}"
                args += [
                    "--head",
                    f"--port={ports[6]}",
                    "--include-dashboard=false",
                    f"--dashboard-port={ports[7]}",
                ]
            log = root / f"n{i}.log"
            with log.open("wb") as sink:
                starters.append(
                    subprocess.Popen(
                        [str(RAY_BIN), "start", *args],
                        env=env,
                        stdout=sink,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
            while b"Ray runtime started" not in log.read_bytes():
                if starters[-1].poll() is not None:
                    raise RuntimeError(log.read_text())
                time.sleep(0.1)
        print(
            f"cluster: {nodes} node(s) x {cpus} CPU(s) at {address}, up in {time.perf_counter() - started:.1f} s ({load()})"
        )
        yield address, env
    finally:
        _stop(root, starters)


def _stop(root: Path, starters: list[subprocess.Popen[bytes]]) -> None:
    def ours() -> list[int]:
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                with suppress(OSError):
                    if f"TG_BENCH_RAY={root}".encode() in (entry / "environ").read_bytes().split(b"\0"):
                        found.append(int(entry.name))
        return found

    for _ in range(3):
        for pid in [s.pid for s in starters] + ours():
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.3)
    for starter in starters:
        starter.wait(10)


# ---- fresh drivers (this file run with --probe / --first) ------------------------------------
class Probe:
    """A rollout actor's start, timed inside the actor."""

    def __init__(self, context: Any) -> None:
        self.entered = time.time()  # after Ray unpickled the context (which imports toolgym)
        stat = Path(f"/proc/{os.getpid()}/stat").read_text()
        ticks = int(stat[stat.rindex(")") + 2 :].split()[19])
        boot = next(
            int(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime")
        )
        self.process_started = boot + ticks / os.sysconf("SC_CLK_TCK")
        from toolgym.envs.rollouts import EpisodeWorker

        started = time.time()
        self.worker = EpisodeWorker(context)
        self.worker_s = time.time() - started

    def ready(self) -> dict[str, float]:
        return {"process_started": self.process_started, "entered": self.entered, "worker_s": self.worker_s}

    def episode(self, spec: Any) -> float:
        started = time.time()
        self.worker.run(spec)
        return time.time() - started


def probe(address: str) -> None:
    started = time.time()
    import ray

    from toolgym.envs.demo import mock_task_paths
    from toolgym.envs.rollouts import WorkerContext, episode_specs
    from toolgym.running.trials import set_name
    from toolgym.tasks import TaskSet

    out: dict[str, float] = {"python_s": started - T_START, "imports_s": time.time() - started}
    sets = [(set_name(p), TaskSet.load(p)) for p in mock_task_paths() if set_name(p) == FIRST_SET]
    mark = time.time()
    ray.init(address=address, include_dashboard=False, log_to_driver=False)
    out["init_s"] = time.time() - mark
    mark = time.time()
    ref = ray.put(WorkerContext(sets))
    out["put_s"] = time.time() - mark
    created = time.time()
    actor: Any = ray.remote(Probe).options(num_cpus=1).remote(ref)
    inside = ray.get(actor.ready.remote())
    out["ready_s"] = time.time() - created
    out["process_age_s"] = created - inside["process_started"]  # > 0: a worker Ray started ahead
    out["to_init_s"] = inside["entered"] - created
    out["worker_s"] = inside["worker_s"]
    specs = episode_specs(sets, trials=1, seed=0)
    out["episode1_s"] = ray.get(actor.episode.remote(specs[0]))
    out["episode2_s"] = ray.get(actor.episode.remote(specs[1]))
    out["total_s"] = time.time() - T_START
    print(json.dumps(out))


def first(address: str, kind: str, keep: float | None) -> None:
    """One 19-episode rollout on 2 workers; prints when the first and last outcomes came back."""
    started = time.time()
    from toolgym.envs.demo import mock_task_paths
    from toolgym.envs.rollouts import Executor, ProcessExecutor, episode_specs, rollout
    from toolgym.running.trials import set_name
    from toolgym.tasks import TaskSet

    executor: Executor
    if kind == "ray":
        from toolgym.envs.ray_rollouts import RayExecutor

        options: dict[str, Any] = {} if keep is None else {"keep_actors_s": keep}
        executor = RayExecutor(2, address=address, **options)
    else:
        executor = ProcessExecutor(2)
    sets = [(set_name(p), TaskSet.load(p)) for p in mock_task_paths() if set_name(p) == FIRST_SET]
    specs = episode_specs(sets, trials=1, seed=0)
    out = Path(tempfile.mkdtemp(prefix="tg-bench-first-"))
    imported = time.time()
    firsts: list[float] = []
    rollout(sets, specs, out=out, executor=executor, on_outcome=lambda _: firsts.append(time.time()))
    done = time.time()
    shutil.rmtree(out, ignore_errors=True)
    stats = getattr(executor, "stats", None)
    print(
        json.dumps(
            {
                "python_s": started - T_START,
                "imports_s": imported - started,
                "first_s": firsts[0] - imported,
                "all_s": done - imported,
                "reused": getattr(stats, "actors_reused", 0),
            }
        )
    )


def fresh(args: list[str], env: dict[str, str]) -> dict[str, float]:
    result = subprocess.run(
        [sys.executable, __file__, *args], env=env, capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    if result.returncode != 0:
        raise RuntimeError(result.stdout + result.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def command(address: str, env: dict[str, str], keep: float | None) -> tuple[float, float]:
    """`toolgym run --ray-address A --tasks ctool --workers 2`: seconds to the first trace file in
    the run folder (the driver writes it when the first batch comes back) and to the end."""
    out = Path(tempfile.mkdtemp(prefix="tg-bench-cmd-")) / "run"
    args = [str(TOOLGYM_BIN), "run", "--ray-address", address, "--tasks", FIRST_SET, "--workers", "2"]
    args += ["--out", str(out)] + ([] if keep is None else ["--ray-keep-actors", str(keep)])
    started = time.perf_counter()
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    first_s = 0.0
    while proc.poll() is None:
        if not first_s and out.is_dir() and any(out.rglob("*.jsonl")):
            first_s = time.perf_counter() - started
        time.sleep(0.01)
    ended = time.perf_counter() - started
    shutil.rmtree(out.parent, ignore_errors=True)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.read().decode() if proc.stderr else "toolgym run failed")
    return first_s or ended, ended


# ---- the parts -------------------------------------------------------------------------------
def phases(address: str, env: dict[str, str], rounds: int) -> None:
    print("\nphases (a fresh driver and a probe actor, seconds):")
    for r in range(rounds):
        found = fresh(["--probe", address], env)
        print(
            f"  round {r + 1} ({load()}): driver imports {found['imports_s']:.2f}, ray.init(address) {found['init_s']:.2f}, "
            f"put context {found['put_s']:.3f}; actor created -> ready {found['ready_s']:.2f} (its worker process "
            f"started {found['process_age_s']:+.1f} s before: + is ahead; created -> __init__ entered, context "
            f"unpickled {found['to_init_s']:.2f}; EpisodeWorker {found['worker_s']:.2f}); first episode "
            f"{found['episode1_s']:.2f}, second {found['episode2_s'] * 1000:.0f} ms",
            flush=True,
        )


def firsts(address: str, env: dict[str, str], rounds: int, keep: float | None) -> None:
    """Fresh actors and processes interleaved first, then kept actors (which hold the CPUs
    between runs, so no fresh actor could be placed after them); the whole command likewise."""
    print(
        f"\nfirst episode of a {FIRST_SET} run (19 episodes, 2 workers), a fresh driver each, seconds from rollout():"
    )
    plain: list[tuple[str, list[str]]] = [
        ("processes (--workers 2)", ["--first", address, "--kind", "processes"]),
        ("ray, fresh actors", ["--first", address, "--kind", "ray"]),
    ]
    kept = [("ray, kept actors", ["--first", address, "--kind", "ray", "--keep", str(keep)])] if keep else []
    results: dict[str, list[dict[str, float]]] = {name: [] for name, _ in plain + kept}
    for variants, count in ((plain, rounds), (kept, rounds + 1)):  # kept: the first round starts them
        if variants is kept:
            _commands(address, env, rounds, None)
        for r in range(count):
            for name, args in variants:
                found = fresh(args, env)
                results[name].append(found)
                print(
                    f"  round {r + 1} ({load()}): {name:24} first outcome {found['first_s']:.2f}, all 19 "
                    f"{found['all_s']:.2f} (driver imports {found['imports_s']:.2f}; actors reused {found['reused']:.0f})",
                    flush=True,
                )
    for name, runs in results.items():
        later = runs[1:] if name.endswith("kept actors") else runs
        print(f"  median {name}: first outcome {statistics.median(f['first_s'] for f in later):.2f} s")
    if keep:
        _commands(address, env, rounds, keep)


def _commands(address: str, env: dict[str, str], rounds: int, keep: float | None) -> None:
    what = "fresh actors" if keep is None else "kept actors"
    print(
        f"\nthe whole command (toolgym run --ray-address A --tasks ctool --workers 2), {what}, seconds from its start:"
    )
    for r in range(rounds):
        first_s, all_s = command(address, env, keep)
        print(f"  round {r + 1} ({load()}): first trace {first_s:.2f}, done {all_s:.2f}", flush=True)


def throughput(
    address: str, env: dict[str, str], rounds: int, trials: int, workers: int, keep: float | None
) -> None:
    import ray

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_rollouts import TASKS, measure

    from toolgym.envs.ray_rollouts import RayExecutor
    from toolgym.envs.rollouts import ProcessExecutor

    os.environ.update({k: env[k] for k in ("HOME", "RAY_AUTH_MODE")})
    ray.init(address=address, include_dashboard=False, log_to_driver=False)
    options: dict[str, Any] = {} if keep is None else {"keep_actors_s": keep}
    print(f"\nthroughput: {TASKS} mock-app tasks x {trials} trials, {workers} workers, steady episodes/s:")
    measure(lambda: ProcessExecutor(1), 1)  # warm this process (seeded templates, imports)
    rates: dict[str, list[float]] = {"processes": [], "ray": []}
    for r in range(rounds):
        for name, make in (
            ("processes", lambda: ProcessExecutor(workers)),
            ("ray", lambda: RayExecutor(workers, address=address, **options)),
        ):
            m = measure(make, trials)
            rates[name].append(m.episodes / m.seconds)
            print(f"  round {r + 1} ({load()}): {name:9} {rates[name][-1]:6.1f} episodes/s", flush=True)
    ray_rate, procs = statistics.median(rates["ray"]), statistics.median(rates["processes"])
    print(
        f"  Ray / processes: {ray_rate / procs:.0%} ({ray_rate:.1f} against {procs:.1f} episodes/s, medians)"
    )
    ray.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and trials")
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--cpus", type=int, default=2, help="CPUs per node")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--trials", type=int, default=None)
    parser.add_argument("--keep", type=float, default=None, help="keep_actors_s for the kept-actor runs")
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    parser.add_argument("--first", help=argparse.SUPPRESS)
    parser.add_argument("--kind", help=argparse.SUPPRESS)
    parser.add_argument("--only", default="phases,first,throughput")
    args = parser.parse_args()
    if args.probe:
        return probe(args.probe)
    if args.first:
        return first(args.first, args.kind, args.keep)
    rounds = args.rounds or (2 if args.quick else 3)
    trials = args.trials or (2 if args.quick else 8)
    parts = args.only.split(",")
    print(f"{os.cpu_count()} CPUs; {load()}")
    with cluster(args.nodes, args.cpus) as (address, env):
        time.sleep(2)  # the node's own start-up work (agents, prestarted workers) settles
        if "phases" in parts:
            phases(address, env, rounds)
        if "first" in parts:
            firsts(address, env, rounds + 1, args.keep)
        if "throughput" in parts:
            throughput(address, env, rounds, trials, args.nodes * args.cpus, args.keep)
    print(f"\n{load()} at the end")


if __name__ == "__main__":
    main()
