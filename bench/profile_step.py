"""Where a mock-app step, a bare call and a reset spend their time (per-phase medians, µs).

    .venv/bin/python bench/profile_step.py            # everything, resets at 1k, 100k and 1M rows
    .venv/bin/python bench/profile_step.py --quick    # fewer repetitions, 1k and 100k rows
    .venv/bin/python bench/profile_step.py --json out.json

Sections:
* bare calls: `Tool.invoke` of a banking read and write, next to the app method called directly;
* mixed episodes on the banking app (20 steps, reads and writes interleaved as the bundled tasks
  do, raw ReAct text parsed every step, each step's trace record built and written like
  `run_episode`): the median read and write step, and the same steps taken apart phase by phase;
* reset after 1/10/100/1000 writes (updates, inserts and deletes mixed) on a table of 1k, 100k
  and 1M rows: the world's reset plus the state hash and diff that `ToolEnv.reset` asks for, and
  which path the store took (discard of the episode transaction, undo replay or template copy);
  beside it, in the same run and after the same episodes, the reset forced down the undo and the
  copy paths (the baseline: what `reset_path` picked before the episode transaction), and the
  median API write of the episodes.

Times are wall-clock on a shared machine (`--cpu`: the thread's CPU time for calls and steps); the
load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from sqlite_utils import Database

from toolgym.actions import ToolCall
from toolgym.envs.agents import OracleAgent
from toolgym.envs.runner import step_fields, trace_header
from toolgym.envs.tool_env import ToolEnv
from toolgym.mocks import store as store_module
from toolgym.mocks.app import App, read, write
from toolgym.mocks.responses import ok
from toolgym.mocks.world import MockWorld
from toolgym.protocols import get_protocol
from toolgym.tasks import Task
from toolgym.tools import Param
from toolgym.trace import TraceWriter

CLOCK = datetime(2024, 1, 1, tzinfo=UTC)
# what the call and step sections time with: wall-clock, or with --cpu the thread's CPU time (on a
# shared machine, time other processes take from this one is then not counted)
clock: Callable[[], int] = time.perf_counter_ns


def median_us(samples: Sequence[float]) -> float:
    return statistics.median(samples) / 1000


def timed(fn: Callable[[], object], n: int) -> float:
    """Median of n calls, in µs (after a short warm-up)."""
    for _ in range(min(n, 50)):
        fn()
    out = []
    for _ in range(n):
        t0 = clock()
        fn()
        out.append(clock() - t0)
    return median_us(out)


# ---- bare calls ----------------------------------------------------------------------------------
def bare_calls(n: int) -> dict[str, float]:
    world = MockWorld(["banking"], seed=0, clock=CLOCK)
    ctx = world.context
    bank: Any = world.apps["banking"]
    balance, transfer = world.tools.get("get_balance"), world.tools.get("transfer")
    flip = [0]

    def do_transfer() -> object:
        flip[0] ^= 1
        a, b = ("ACC-10001", "ACC-10002") if flip[0] else ("ACC-10002", "ACC-10001")
        return transfer.invoke({"from_account_id": a, "to_account_id": b, "amount": 1.0}, ctx)

    out = {
        "app method get_balance (no validation, no guard)": timed(lambda: bank.get_balance("ACC-10001"), n),
        "Tool.invoke get_balance (read)": timed(lambda: balance.invoke({"account_id": "ACC-10001"}, ctx), n),
        "Tool.invoke transfer (write)": timed(do_transfer, n),
    }
    world.close()
    return out


# ---- mixed episodes ------------------------------------------------------------------------------
READS = [
    ToolCall(name="get_balance", arguments={"account_id": "ACC-10001"}),
    ToolCall(name="list_accounts", arguments={"customer_id": "CUST-0001"}),
    ToolCall(name="get_transactions", arguments={"account_id": "ACC-10001", "page_size": 5}),
]
WRITES = [
    ToolCall(
        name="transfer",
        arguments={"from_account_id": "ACC-10001", "to_account_id": "ACC-10002", "amount": 1.0},
    ),
    ToolCall(name="deposit", arguments={"account_id": "ACC-10002", "amount": 2.5}),
]
# read, write, read, read, write, ...: 40% writes, about the share of the bundled banking tasks
PATTERN = "RWRRWRWRRW"
EPISODE_STEPS = 20  # the bundled tasks take 2-20 steps; the env is reset (untimed) between


def _episode_actions(n_steps: int) -> list[tuple[str, Any]]:
    react = get_protocol("react")
    reads = [react.format_action(c) for c in READS]
    writes = [react.format_action(c) for c in WRITES]
    out = []
    for i in range(n_steps):
        kind = PATTERN[i % len(PATTERN)]
        pool = reads if kind == "R" else writes
        out.append((kind, pool[i % len(pool)]))
    return out


def _bank_env(n_steps: int) -> tuple[ToolEnv, Task]:
    task = Task(id="profile-bank", query="profile", apps=["banking"], max_steps=EPISODE_STEPS + 1)
    return ToolEnv(tasks=[task], max_steps=EPISODE_STEPS + 1), task


def mixed_episode(n_steps: int) -> dict[str, Any]:
    """Median read and write step (env.step on raw ReAct text + the trace record written)."""
    env, task = _bank_env(n_steps)
    times: dict[str, list[int]] = {"R": [], "W": []}
    actions = _episode_actions(EPISODE_STEPS)
    with tempfile.TemporaryDirectory() as tmp:
        for episode in range(max(1, n_steps // EPISODE_STEPS)):
            _, info = env.reset(seed=0)
            header = trace_header(env, OracleAgent(get_protocol("react")), task, 0, {})
            writer = TraceWriter(Path(tmp) / f"t{episode}.jsonl", header)
            hash_before = info.get("state_hash")
            for kind, raw in actions:
                t0 = clock()
                _, _, _, _, step_info = env.step(raw)
                writer.step(step_fields(raw, step_info, hash_before))  # as run_episode writes it
                times[kind].append(clock() - t0)
                hash_before = step_info.get("state_hash")
            writer.close()
    env.close()
    skip = 2 * EPISODE_STEPS  # warm-up
    return {"read step": median_us(times["R"][skip:]), "write step": median_us(times["W"][skip:])}


def phases(n_steps: int) -> dict[str, dict[str, float]]:
    """The same episodes, the step's work done piece by piece and each piece timed."""
    env, _ = _bank_env(n_steps)
    from toolgym.envs.tool_env import action_record, observation_record
    from toolgym.trace import step_json

    names = ["parse", "call", "state_hash", "take_diff", "info records", "trace record"]
    out: dict[str, dict[str, list[int]]] = {k: {p: [] for p in names} for k in "RW"}
    actions = _episode_actions(EPISODE_STEPS)
    for _ in range(max(1, n_steps // EPISODE_STEPS)):
        env.reset(seed=0)
        world, ctx = env.world, env._ctx
        assert world is not None and ctx is not None
        for i, (kind, raw) in enumerate(actions):
            t = [clock()]
            parsed = env.parse_action(raw)
            t.append(clock())
            assert isinstance(parsed, list)
            obs = env.offered.call(parsed[0], ctx)  # type: ignore[arg-type]
            t.append(clock())
            h = world.state_hash()
            t.append(clock())
            diff = world.take_diff()
            t.append(clock())
            acts = [action_record(a, trusted=True, checked=True) for a in parsed]
            obss = [observation_record(obs)]
            t.append(clock())
            info = {"step": i + 1, "actions": acts, "observations": obss, "error_kinds": []}
            step_json(step_fields(raw, {**info, "state_hash": h, "state_diff": diff}, h))
            t.append(clock())
            for k, name in enumerate(names):
                out[kind][name].append(t[k + 1] - t[k])
    env.close()
    skip = 2 * EPISODE_STEPS
    return {
        ("read" if k == "R" else "write"): {p: median_us(v[skip:]) for p, v in d.items()}
        for k, d in out.items()
    }


# ---- reset after an episode ----------------------------------------------------------------------
class ResetApp(App):
    """One table of `n_rows` rows and writes that update, insert and delete."""

    name = "profile_reset"
    description = "Synthetic rows for the reset profile."
    schema = """
    CREATE TABLE pr_rows (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, value INTEGER NOT NULL,
                          price REAL NOT NULL, note TEXT);
    """
    n_rows = 1000

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        db.conn.executemany(
            "INSERT INTO pr_rows VALUES (?, ?, ?, ?, ?)",
            (
                (i, f"row-{i}", rng.randrange(1000), round(rng.random() * 100, 2), None)
                for i in range(self.n_rows)
            ),
        )

    @write
    def bump(self, row_id: Annotated[int, Param("row id")]) -> dict[str, Any]:
        """Add one to a row's value."""
        self.execute("UPDATE pr_rows SET value = value + 1 WHERE id = ?", (row_id,))
        return ok(row_id=row_id)

    @write
    def add(self, row_id: int) -> dict[str, Any]:
        """Insert a row."""
        self.execute("INSERT INTO pr_rows VALUES (?, ?, 0, 1.5, 'new')", (row_id, f"new-{row_id}"))
        return ok(row_id=row_id)

    @write
    def remove(self, row_id: int) -> dict[str, Any]:
        """Delete a row."""
        self.execute("DELETE FROM pr_rows WHERE id = ?", (row_id,))
        return ok(row_id=row_id)

    @read
    def get_row(self, row_id: int) -> dict[str, Any]:
        """One row."""
        return ok(self.row("SELECT * FROM pr_rows WHERE id = ?", (row_id,)))


def play_writes(world: MockWorld, n_writes: int, n_rows: int, rng: random.Random) -> list[int]:
    """n_writes API writes: 70% updates of existing rows, 20% inserts, 10% deletes, each followed
    by the state hash and diff every env.step asks for. Returns the wall time of each call (ns)."""
    next_new = n_rows + 1
    times = []
    for _ in range(n_writes):
        r = rng.random()
        t0 = time.perf_counter_ns()
        if r < 0.7:
            world.call("bump", row_id=rng.randrange(n_rows))
        elif r < 0.9:
            world.call("add", row_id=next_new)
            next_new += 1
        else:
            world.call("remove", row_id=rng.randrange(n_rows))
        times.append(time.perf_counter_ns() - t0)
        world.state_hash()
        world.take_diff()
    return times


RESET_HOWS = ("auto", "undo", "copy")  # auto: what `world.reset` does; the others forced


def resets(sizes: list[int], episodes: list[int], reps: int, min_reps: int) -> dict[str, dict[str, Any]]:
    """Per size and episode length, the reset each way after the same kind of episode (the ways
    take turns, so load drifts hit them alike); at least `min_reps` resets each way."""
    out: dict[str, dict[str, Any]] = {}
    for size in sizes:
        cls = type(f"ResetApp{size}", (ResetApp,), {"n_rows": size, "name": f"profile_reset_{size}"})
        world = MockWorld([cls], seed=0, clock=CLOCK)
        world.state_hash()
        world.take_diff()
        rng = random.Random(0)
        for n_writes in episodes:
            wall: dict[str, list[int]] = {how: [] for how in RESET_HOWS}
            cpu: dict[str, list[int]] = {how: [] for how in RESET_HOWS}
            paths: set[str] = set()
            writes: list[int] = []
            for _ in range(max(min_reps, reps // max(1, n_writes // 10))):
                for how in RESET_HOWS:
                    # the first call after a reset also builds the world's tool context again
                    writes += play_writes(world, n_writes, size, rng)[1:]
                    t0, c0 = time.perf_counter_ns(), time.process_time_ns()
                    if how == "auto":
                        world.reset(seed=0, clock=CLOCK)
                    else:
                        world.store.reset(how)
                    world.state_hash()
                    world.take_diff()
                    wall[how].append(time.perf_counter_ns() - t0)
                    cpu[how].append(time.process_time_ns() - c0)  # without the time spent waiting
                    if how == "auto":
                        paths.add(str(world.store.last_reset_path))
                    if how == "copy":  # a new connection: prepare the replay's statements again,
                        # untimed, so the next undo is measured warm as on a long-lived world
                        play_writes(world, 1, size, rng)
                        world.store.reset("undo")
            out[f"{size} rows, reset after {n_writes} writes"] = {
                "median_us": median_us(wall["auto"]),
                "cpu_median_us": median_us(cpu["auto"]),
                "paths": sorted(paths),
                **{f"{how}_median_us": median_us(wall[how]) for how in RESET_HOWS[1:]},
                **{f"{how}_cpu_median_us": median_us(cpu[how]) for how in RESET_HOWS[1:]},
                "write_call_median_us": median_us(writes) if writes else None,
            }
        world.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--only", choices=["calls", "steps", "resets"], default=None)
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help="rows of the reset tables")
    parser.add_argument(
        "--page-size",
        type=int,
        default=None,
        help=f"SQLite page size of the templates built here (the store's: {store_module.PAGE_SIZE})",
    )
    parser.add_argument(
        "--cpu", action="store_true", help="time calls and steps by the thread's CPU time, not wall-clock"
    )
    args = parser.parse_args()
    if args.cpu:
        global clock
        clock = time.thread_time_ns
    if args.page_size is not None:  # read by build_template when it builds a template
        store_module.PAGE_SIZE = args.page_size
    n = 2000 if args.quick else 10000
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    result: dict[str, Any] = {"load_average": load}
    if args.only in (None, "calls"):
        result["bare calls"] = bare_calls(n)
        for k, v in result["bare calls"].items():
            print(f"  {k:<52} {v:8.1f} µs")
    if args.only in (None, "steps"):
        steps = 500 if args.quick else 3000
        result["mixed episode"] = mixed_episode(steps)
        for k, v in result["mixed episode"].items():
            print(f"  {k:<52} {v:8.1f} µs")
        result["phases"] = phases(steps)
        for kind, d in result["phases"].items():
            print(f"  {kind} step phases: " + ", ".join(f"{p} {v:.1f}" for p, v in d.items()))
    if args.only in (None, "resets"):
        sizes = args.sizes or ([1000, 100_000] if args.quick else [1000, 100_000, 1_000_000])
        result["resets"] = resets(sizes, [1, 10, 100, 1000], 10 if args.quick else 40, 5 if args.quick else 9)
        print("  reset: wall (CPU) µs; auto = world.reset, its path; forced undo and copy beside it")
        for k, v in result["resets"].items():
            ratios = ", ".join(
                f"{how} {v[f'{how}_median_us']:9.1f} ({v[f'{how}_cpu_median_us']:9.1f})"
                f" = {v[f'{how}_cpu_median_us'] / v['cpu_median_us']:6.1f}x CPU"
                for how in RESET_HOWS[1:]
            )
            print(
                f"  {k:<38} auto {v['median_us']:8.1f} ({v['cpu_median_us']:8.1f}) {', '.join(v['paths']):<8}"
                f" | {ratios}"
                + (f" | write call {v['write_call_median_us']:6.1f}" if v["write_call_median_us"] else "")
            )
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
