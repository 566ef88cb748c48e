"""Mock-app episodes as agents run them, measured side by side in one run.

    PYTHONPATH=. .venv/bin/python bench/bench_episodes.py            # full
    PYTHONPATH=. .venv/bin/python bench/bench_episodes.py --quick    # fewer rounds, shorter runs

Sections (each prints its baseline beside it, so the ratios hold on a loaded machine):

- mixed: the bundled mock-app tasks (fixtures/mock_tasks) played by the oracle as raw ReAct text,
  reads and writes interleaved as their golden chains do; `ToolEnv.step` per step kind (read, write,
  final answer) and `ToolEnv.reset` between episodes, next to the isolated figures older benches
  report (one read repeated; one write back and forth).
- resets: `ToolEnv.reset` after real episodes of 1, 10, 100 and 1000 steps on the banking app
  (25% writes: transfers and deposits; reads: balances, accounts, transactions, bills), next to a
  reset after an empty episode.
- toolsets: reset and step with 10 and 256 tools offered, next to rendering the instructions
  (what every reset paid before they were cached per tool set).
- cold: a new process (imports, first env, first reset, first read and write step), next to the
  warm figures of the same steps.
- scoring: the golden end state a state reward compares with, replayed per episode (as before)
  against the per-process cache (`toolgym.envs.rewards.golden_state_hash`).
- throughput: mock steps/s with 25% writes, episodes of 20 steps with a reset each, in 1 and 2
  processes at once (`--procs`), next to one process alone; and the process executor of
  `toolgym.envs.rollouts` on the bundled tasks (traces written) with 1 and 2 workers.

Times are wall-clock medians on a shared machine: the load average is printed with every section.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from banking_workload import banking_calls, mixed_calls
from bench_mocks import fmt, line, sample, stats

from toolgym.actions import FinalAnswer, ToolCall
from toolgym.envs.agents import OracleAgent
from toolgym.envs.demo import mock_task_paths
from toolgym.envs.rollouts import AgentSpec, ProcessExecutor, episode_specs, rollout
from toolgym.envs.tool_env import ToolEnv
from toolgym.protocols import get_protocol
from toolgym.tasks import Task, TaskSet
from toolgym.tools import Tool, ToolSet

WRITE_SHARE = 0.25


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min)"


def mock_sets() -> list[tuple[str, TaskSet]]:
    return [(p.stem, TaskSet.load(p)) for p in mock_task_paths()]


# ---- mixed: the bundled tasks, step by step ------------------------------------------------------
def step_kind(env: ToolEnv, raw: Any) -> str:
    actions = env.parse_action(raw)
    if not isinstance(actions, list):
        return "error"
    calls = [a for a in actions if isinstance(a, ToolCall)]
    if not calls:
        return "final" if any(isinstance(a, FinalAnswer) for a in actions) else "other"
    return (
        "write"
        if any(c.name in env.offered and env.offered.get(c.name).mutates_state for c in calls)
        else "read"
    )


def bench_mixed(rounds: int, n_isolated: int) -> dict[str, Any]:
    print(f"mixed episodes: the bundled mock-app tasks, oracle, raw ReAct text ({load()})")
    timings: dict[str, list[float]] = {"read": [], "write": [], "final": [], "other": [], "error": []}
    resets: list[float] = []
    calls = writes = 0
    for round_ in range(rounds + 1):  # round 0 warms the templates and caches, untimed
        for _, task_set in mock_sets():
            env = ToolEnv(tasks=task_set)
            agent = OracleAgent(env.protocol)
            for task in task_set:
                t0 = time.perf_counter_ns()
                obs, info = env.reset(seed=0, options={"task": task})
                reset_us = (time.perf_counter_ns() - t0) / 1000
                agent.start(task, obs, info)
                done, step_info = False, info
                while not done:
                    raw = agent.act(obs, step_info)
                    kind = step_kind(env, raw)
                    t0 = time.perf_counter_ns()
                    obs, _, terminated, truncated, step_info = env.step(raw)
                    elapsed = (time.perf_counter_ns() - t0) / 1000
                    done = terminated or truncated
                    if round_:
                        timings[kind].append(elapsed)
                        if kind in ("read", "write"):
                            calls += 1
                            writes += kind == "write"
                if round_:
                    resets.append(reset_us)
            env.close()
    result: dict[str, Any] = {"write_share": writes / max(calls, 1)}
    print(f"  tool steps: {calls // rounds} per round, {result['write_share']:.0%} of them writes")
    for kind in ("read", "write", "final"):
        result[kind] = stats(timings[kind])
        line(f"env.step: {kind} (in a mixed episode)", result[kind])
    result["reset"] = stats(resets)
    line("env.reset between the episodes", result["reset"])
    # the isolated figures (bench_step.py's shape), side by side
    iso = isolated_banking(n_isolated)
    for kind in ("read", "write"):
        ratio = result[kind]["median_us"] / iso[kind]["median_us"]
        line(f"isolated {kind}: same call repeated ({ratio:.2f}x)", iso[kind])
    result["isolated"] = iso
    print(f"  targets: write <= 100 µs, read <= 30 µs (medians in a mixed episode); {load()}")
    return result


def mixed_actions(n: int, write_share: float = WRITE_SHARE) -> list[str]:
    """n raw ReAct steps over banking, every (1/write_share)-th a write, the rest reads, in turn."""
    react = get_protocol("react")
    return [str(react.format_action(call)) for _, call in mixed_calls(n, round(1 / write_share))]


def banking_env(max_steps: int = 10**7, tools: ToolSet | None = None) -> ToolEnv:
    task = Task(id="bench-bank", query="bench", apps=["banking"], max_steps=max_steps)
    return ToolEnv(tools, tasks=[task], max_steps=max_steps)


def isolated_banking(n: int) -> dict[str, Any]:
    reads, writes = banking_calls()
    react = get_protocol("react")
    env = banking_env()
    env.reset(seed=0)
    read_raw = str(react.format_action(reads[0]))
    there, back = (str(react.format_action(w)) for w in (writes[0], writes[2]))
    flip = [0]

    def write() -> object:
        flip[0] ^= 1
        return env.step(there if flip[0] else back)

    out = {"read": stats(sample(lambda: env.step(read_raw), n)), "write": stats(sample(write, n))}
    env.close()
    return out


# ---- resets after real episodes ------------------------------------------------------------------
def bench_resets(lengths: list[int], reps: int) -> dict[str, Any]:
    print(f"\nreset after a real episode (banking, {WRITE_SHARE:.0%} writes; {load()})")
    env = banking_env()
    env.reset(seed=0)
    results: dict[str, Any] = {}
    base = stats(sample(lambda: env.reset(seed=0), reps * 4))
    line("after an empty episode (the old bench's figure)", base)
    results["empty"] = base
    for n in lengths:
        actions = mixed_actions(n)

        def play(actions: list[str] = actions) -> None:
            for raw in actions:
                env.step(raw)

        def fresh_episode(play: Callable[[], None] = play) -> None:
            env.reset(seed=0)
            play()

        def world_part() -> None:
            """What env.reset asks of the world: its reset, the state hash and the diff."""
            assert env.world is not None and env.task is not None
            env.world.reset(seed=env.task.seed, clock=env.task.clock)
            env.world.state_hash()
            env.world.take_diff()

        count = max(5, reps // max(1, n // 10))
        s = stats(sample(lambda: env.reset(seed=0), count, setup=play))
        line(
            f"after {n} steps ({n // round(1 / WRITE_SHARE)} writes) ({s['median_us'] / base['median_us']:.1f}x)",
            s,
        )
        results[str(n)] = s
        w = stats(sample(world_part, count, setup=fresh_episode))
        line("  of which the world's reset, state hash and diff", w)
        results[f"{n} world"] = w
    env.close()
    print("  target: <= 1 ms after episodes of up to 1000 writes")
    return results


# ---- tool sets of 10 and 256 tools ---------------------------------------------------------------
def filler_tools(n: int) -> list[Tool]:
    def lookup(key: str, limit: int = 10, exact: bool = False) -> str:
        """Look a key up in this tool's table."""
        return key

    return [
        Tool(lookup, name=f"lookup_{i:03d}", description=f"Look a key up in table {i}.") for i in range(n)
    ]


def toolset_figures(n: int, reps: int, read: str, react: Any) -> dict[str, Any]:
    env = banking_env(tools=ToolSet(filler_tools(n - 8)))
    _, info = env.reset(seed=0)
    assert len(info["tools"]) == n, info["tools"]
    render = stats(sample(lambda: react.instructions(env.offered), reps))
    reset = stats(sample(lambda: env.reset(seed=0), reps, setup=lambda: env.step(read)))
    step = stats(sample(lambda: env.step(read), reps))
    line(f"{n} tools: rendering the instructions (per reset before)", render)
    line(f"{n} tools: env.reset after one read (cached)", reset)
    line(f"{n} tools: env.step read", step)
    env.close()
    return {"render": render, "reset": reset, "step": step}


def bench_toolsets(sizes: list[int], reps: int) -> dict[str, Any]:
    print(f"\ntool sets: reset and step with n tools offered (banking's 8 + fillers; {load()})")
    read = mixed_actions(1)[0]
    react = get_protocol("react")
    results: dict[str, Any] = {}
    for n in sizes:
        results[str(n)] = toolset_figures(n, reps, read, react)
    return results


# ---- cold: a new process -------------------------------------------------------------------------
COLD_PROBE = """
import json, time
t0 = time.perf_counter()
from toolgym.envs.tool_env import ToolEnv
from toolgym.tasks import Task
t1 = time.perf_counter()
env = ToolEnv(tasks=[Task(id="bench-bank", query="bench", apps=["banking"], max_steps=100)])
t2 = time.perf_counter()
env.reset(seed=0)
t3 = time.perf_counter()
env.step({read!r})
t4 = time.perf_counter()
env.step({write!r})
t5 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "env": t2 - t1, "first reset": t3 - t2,
                  "first read step": t4 - t3, "first write step": t5 - t4}}))
"""


def bench_cold(runs: int) -> dict[str, Any]:
    print(f"\ncold: a new process, first env on banking ({load()})")
    actions = mixed_actions(4)
    probe = COLD_PROBE.format(read=actions[0], write=actions[3])
    phases: dict[str, list[float]] = {}
    walls = []
    for _ in range(runs):
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
        walls.append((time.perf_counter() - t0) * 1e6)
        for key, value in json.loads(done.stdout).items():
            phases.setdefault(key, []).append(value * 1e6)
    line("process start to exit (interpreter included)", stats(walls))
    for key, values in phases.items():
        line(key, stats(values))
    warm = isolated_banking(200)
    print(
        f"  warm, same steps: read {fmt(warm['read']['median_us'])}, write {fmt(warm['write']['median_us'])}"
    )
    return {"process": stats(walls), **{k: stats(v) for k, v in phases.items()}, "warm": warm}


# ---- per-episode scoring ---------------------------------------------------------------------------
def bench_scoring(reps: int) -> dict[str, Any]:
    """The golden end state an episode's state reward compares with: replayed per episode (as
    before) against the per-process cache of `golden_state_hash`, over the bundled tasks."""
    from toolgym.envs.rewards import golden_state_hash
    from toolgym.mocks.rewards import golden_tool_calls, replay_golden_state_hash

    print(f"\nscoring: the golden end state per episode, bundled tasks with apps ({load()})")
    tasks = [t for _, task_set in mock_sets() for t in task_set if t.apps]
    for task in tasks:
        golden_state_hash(task)  # fill the cache, as the first trial of each task does
    cycle = iter(tasks * reps)

    def replay() -> object:
        t = next(cycle)
        return replay_golden_state_hash(t.apps or (), t.seed, t.clock, golden_tool_calls(t.golden))

    replayed = stats(sample(replay, len(tasks)))
    cycle = iter(tasks * reps)
    cached = stats(sample(lambda: golden_state_hash(next(cycle)), len(tasks) * reps))
    line("replayed on a fresh world (per episode before)", replayed)
    line(f"golden_state_hash, cached ({replayed['median_us'] / cached['median_us']:.0f}x less)", cached)
    return {"replayed": replayed, "cached": cached}


# ---- throughput across processes ------------------------------------------------------------------
def _steps_for(seconds: float, start_at: float) -> tuple[int, float, float]:
    """Episodes of 20 mixed steps (a reset each) until `seconds` have passed; (steps, elapsed,
    the process's CPU seconds over the same window)."""
    env = banking_env(max_steps=100)
    actions = mixed_actions(20)
    env.reset(seed=0)
    for raw in actions:  # warm the statement cache and the template
        env.step(raw)
    while time.time() < start_at:
        time.sleep(0.001)
    steps, t0, cpu0 = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - t0 < seconds:
        env.reset(seed=0)
        for raw in actions:
            env.step(raw)
        steps += len(actions)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    env.close()
    return steps, elapsed, cpu


def _worker(args: tuple[float, float]) -> tuple[int, float, float]:
    return _steps_for(*args)


def parallel_steps(procs: int, seconds: float) -> tuple[float, float]:
    """(steps/s of all the processes together, steps per CPU-second of one process)."""
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(procs) as pool:
        start_at = time.time() + 3.0  # every process imported and warmed before the clock starts
        results = pool.map(_worker, [(seconds, start_at)] * procs)
    per_cpu = sum(steps for steps, _, _ in results) / sum(cpu for _, _, cpu in results)
    return sum(steps / elapsed for steps, elapsed, _ in results), per_cpu


def rollout_steps(workers: int, trials: int) -> tuple[float, float]:
    """Steps/s and episodes/s of the process executor on the bundled tasks (traces written)."""
    sets = mock_sets()
    specs = episode_specs(sets, trials=trials, seed=0)
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        outcomes = rollout(sets, specs, out=Path(out), executor=ProcessExecutor(workers), agent=AgentSpec())
        elapsed = time.perf_counter() - t0
    return sum(o.steps for o in outcomes) / elapsed, len(outcomes) / elapsed


def bench_throughput(procs: list[int], seconds: float, trials: int, rounds: int) -> dict[str, Any]:
    print(f"\nthroughput: banking episodes of 20 steps, {WRITE_SHARE:.0%} writes, a reset each ({load()})")
    results: dict[str, Any] = {}
    rates: dict[int, list[float]] = {n: [] for n in procs}
    per_cpu: dict[int, list[float]] = {n: [] for n in procs}
    for _ in range(rounds):  # interleaved: noise falls on every configuration
        for n in procs:
            rate, cpu_rate = parallel_steps(n, seconds)
            rates[n].append(rate)
            per_cpu[n].append(cpu_rate)
    base = statistics.median(rates[procs[0]])
    for n in procs:
        rate, cpu_rate = statistics.median(rates[n]), statistics.median(per_cpu[n])
        spread = f"{min(rates[n]):,.0f}-{max(rates[n]):,.0f}"
        print(
            f"  {n} process(es): {rate:10,.0f} steps/s (rounds {spread})   {rate / base:.2f}x"
            f"   {cpu_rate:8,.0f} steps per CPU-second of a process"
        )
        results[f"procs_{n}"] = {"median": rate, "rounds": rates[n], "per_cpu_s": cpu_rate}
    # the wall-clock rate depends on what else runs; two busy cores give at most twice this
    ceiling = 2 * statistics.median(per_cpu[procs[-1]])
    print(f"  two cores to themselves: at most {ceiling:,.0f} steps/s (2 x steps per CPU-second)")
    print(f"  target: >= 20,000 steps/s on 2 cores; {load()}")
    print(f"rollout(): ProcessExecutor, bundled tasks x {trials} trials, oracle, traces written ({load()})")
    for workers in (1, 2):
        steps, episodes = rollout_steps(workers, trials)
        print(
            f"  {workers} worker(s): {steps:8,.0f} steps/s, {episodes:7,.0f} episodes/s (start-up included)"
        )
        results[f"rollout_{workers}"] = {"steps_per_s": steps, "episodes_per_s": episodes}
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer rounds and shorter runs")
    parser.add_argument(
        "--only", nargs="*", default=None, help="sections: mixed resets toolsets cold scoring throughput"
    )
    parser.add_argument("--procs", type=int, nargs="*", default=[1, 2], help="process counts for throughput")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    q = args.quick
    wanted = set(args.only or ["mixed", "resets", "toolsets", "cold", "scoring", "throughput"])
    sections: dict[str, Callable[[], Any]] = {
        "mixed": lambda: bench_mixed(rounds=3 if q else 20, n_isolated=500 if q else 3000),
        "resets": lambda: bench_resets([1, 10, 100, 1000], reps=20 if q else 100),
        "toolsets": lambda: bench_toolsets([10, 256], reps=100 if q else 500),
        "cold": lambda: bench_cold(runs=2 if q else 5),
        "scoring": lambda: bench_scoring(reps=2 if q else 5),
        "throughput": lambda: bench_throughput(
            args.procs, seconds=2.0 if q else 5.0, trials=2 if q else 8, rounds=1 if q else 3
        ),
    }
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; {load()}\n")
    results = {name: run() for name, run in sections.items() if name in wanted}
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
