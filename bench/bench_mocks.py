"""Benchmarks of the mock-app framework, measured side by side in one run.

    .venv/bin/python bench/bench_mocks.py            # 1k, 100k and 1M rows
    .venv/bin/python bench/bench_mocks.py --quick    # 1k and 100k rows, fewer repetitions

Prints: bare mock API call latency (median, p99); take_diff + state_hash per step; reset and
restore after a few changes at 1k/100k/1M rows next to the naive baselines (a full copy of the
database with the backup API, serialize/deserialize, a file copy); fork and new-world cost; ratios.
Times are wall-clock on a shared machine: read the ratios, never assert on them in tests.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from sqlite_utils import Database

from toolgym.actions import ToolCall
from toolgym.mocks.app import App, read, write
from toolgym.mocks.responses import ok
from toolgym.mocks.store import connect
from toolgym.mocks.world import MockWorld
from toolgym.tools import Param

CLOCK = datetime(2024, 1, 1, tzinfo=UTC)
CHANGES_PER_EPISODE = 10  # rows changed between two resets in the reset/restore figures


class BigApp(App):
    """A synthetic app with one table of `n_rows` rows, for size scaling."""

    name = "bench_big"
    description = "Synthetic rows for benchmarks."
    schema = """
    CREATE TABLE big_rows (id INTEGER PRIMARY KEY, name TEXT NOT NULL, value INTEGER NOT NULL,
                           price REAL NOT NULL, note TEXT);
    """
    n_rows = 1000

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        db.conn.executemany(
            "INSERT INTO big_rows VALUES (?, ?, ?, ?, ?)",
            (
                (i, f"row-{i}", rng.randrange(1000), round(rng.random() * 100, 2), None)
                for i in range(self.n_rows)
            ),
        )

    @write
    def bump(self, row_id: Annotated[int, Param("row id")]) -> dict[str, Any]:
        """Add one to a row's value."""
        self.execute("UPDATE big_rows SET value = value + 1 WHERE id = ?", (row_id,))
        return ok(row_id=row_id)

    @read
    def get_row(self, row_id: int) -> dict[str, Any]:
        """One row."""
        return ok(self.row("SELECT * FROM big_rows WHERE id = ?", (row_id,)))


def big_app(n: int) -> type[App]:
    return type(f"BigApp{n}", (BigApp,), {"n_rows": n})


# ---- timing helpers ------------------------------------------------------------------------------
def sample(fn: Callable[[], object], n: int, setup: Callable[[], object] | None = None) -> list[float]:
    """n timings of fn in microseconds; setup (untimed) runs before each."""
    out = []
    for _ in range(n):
        if setup is not None:
            setup()
        t0 = time.perf_counter_ns()
        fn()
        out.append((time.perf_counter_ns() - t0) / 1000)
    return out


def stats(us: list[float]) -> dict[str, float]:
    ordered = sorted(us)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return {"median_us": statistics.median(ordered), "p99_us": p99, "n": len(ordered)}


def fmt(us: float) -> str:
    if us >= 1_000_000:
        return f"{us / 1_000_000:.2f} s"
    if us >= 1000:
        return f"{us / 1000:.2f} ms"
    return f"{us:.1f} µs"


def line(label: str, s: dict[str, float]) -> None:
    print(f"  {label:<44} median {fmt(s['median_us']):>10}   p99 {fmt(s['p99_us']):>10}")


# ---- sections ------------------------------------------------------------------------------------
def bench_calls(n: int) -> dict[str, Any]:
    world = MockWorld(["shopping", "banking"], seed=0, clock=CLOCK)
    ctx = world.context
    tools = world.tools
    balance, product, transfer = tools.get("get_balance"), tools.get("get_product"), tools.get("transfer")
    bank = world.apps["banking"]
    results: dict[str, Any] = {}
    print("bare mock API calls (shopping+banking world, real SQLite)")
    cases: list[tuple[str, Callable[[], object]]] = [
        ("app method, no validation: get_balance", lambda: bank.get_balance("ACC-10001")),  # type: ignore[attr-defined]
        ("Tool.invoke get_balance (read)", lambda: balance.invoke({"account_id": "ACC-10001"}, ctx)),
        ("Tool.invoke get_product (read)", lambda: product.invoke({"product_id": "PRD-00042"}, ctx)),
    ]
    flip = [0]

    def do_transfer() -> object:
        flip[0] ^= 1
        a, b = ("ACC-10001", "ACC-10002") if flip[0] else ("ACC-10002", "ACC-10001")
        return transfer.invoke({"from_account_id": a, "to_account_id": b, "amount": 1.0}, ctx)

    cases.append(("Tool.invoke transfer (write, savepoint)", do_transfer))
    call = ToolCall(name="get_balance", arguments={"account_id": "ACC-10001"})
    cases.append(("ToolSet.call get_balance -> Observation", lambda: tools.call(call, ctx)))
    for label, fn in cases:
        sample(fn, min(n, 200))  # warm caches
        s = stats(sample(fn, n))
        line(label, s)
        results[label] = s
    world.close()
    return results


def bench_step_hash(n: int) -> dict[str, Any]:
    world = MockWorld(["shopping", "banking"], seed=0, clock=CLOCK)
    ctx = world.context
    transfer = world.tools.get("transfer")
    world.state_hash()
    world.take_diff()
    flip = [0]

    def one_call() -> None:
        flip[0] ^= 1
        a, b = ("ACC-10001", "ACC-10002") if flip[0] else ("ACC-10002", "ACC-10001")
        transfer.invoke({"from_account_id": a, "to_account_id": b, "amount": 1.0}, ctx)

    def diff_and_hash() -> None:
        world.take_diff()
        world.state_hash()

    print("per step: take_diff + state_hash after one transfer (2 rows changed, 2 added)")
    s = stats(sample(diff_and_hash, n, setup=one_call))
    line("take_diff + state_hash", s)
    hash_only = stats(sample(world.state_hash, n, setup=one_call))
    line("state_hash alone", hash_only)
    full = stats(sample(world.store.full_hash, max(3, n // 200)))
    line("full recomputation (the naive hash)", full)
    print(f"  ratio full / incremental hash: {full['median_us'] / hash_only['median_us']:.1f}x")
    world.close()
    return {"diff_and_hash": s, "hash_only": hash_only, "full_hash": full}


def bench_size(n_rows: int, reps: int) -> dict[str, Any]:
    cls = big_app(n_rows)
    t0 = time.perf_counter()
    world = MockWorld([cls], seed=0, clock=CLOCK)
    seed_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    world.state_hash()
    first_hash_s = time.perf_counter() - t0
    image = world.store.template.image
    r: dict[str, Any] = {
        "rows": n_rows,
        "image_mb": len(image) / 2**20,
        "seed_s": seed_s,
        "first_hash_s": first_hash_s,
    }
    r.update(world_timings(world, cls, n_rows, reps))
    r.update(naive_timings(image, max(3, reps // 10)))
    world.close()
    print_size(r)
    ratio = r["naive_backup"]["median_us"] / r["reset"]["median_us"]
    print(f"  ratio naive backup copy / reset: {ratio:.1f}x")
    r["ratio_backup_over_reset"] = ratio
    return r


def world_timings(world: MockWorld, cls: type[App], n_rows: int, reps: int) -> dict[str, Any]:
    """Reset and restore after an episode's changes, diff and hash after one, fork, a new world."""
    ctx = world.context
    bump = world.tools.get("bump")
    rng = random.Random(0)

    def dirty() -> None:
        for _ in range(CHANGES_PER_EPISODE):
            bump.invoke({"row_id": rng.randrange(n_rows)}, ctx)

    def reset() -> None:
        world.reset(seed=0, clock=CLOCK)

    r: dict[str, Any] = {"reset": stats(sample(reset, reps, setup=dirty))}
    world.checkpoint("cp")

    def restore() -> None:
        world.restore("cp")

    r["restore"] = stats(sample(restore, reps, setup=dirty))

    def step_hash() -> None:
        world.take_diff()
        world.state_hash()

    r["diff_and_hash"] = stats(sample(step_hash, reps, setup=lambda: bump.invoke({"row_id": 1}, ctx)))

    forks: list[MockWorld] = []
    r["fork"] = stats(sample(lambda: forks.append(world.fork()), max(3, reps // 10)))
    for f in forks:
        f.close()
    fresh: list[MockWorld] = []
    r["new_world"] = stats(
        sample(lambda: fresh.append(MockWorld([cls], seed=0, clock=CLOCK)), max(3, reps // 10))
    )
    for f in fresh:
        f.close()
    return r


def naive_timings(image: bytes, base_reps: int) -> dict[str, Any]:
    """The naive baselines: throw the database away and copy the seeded one back in full."""
    src = connect()
    src.deserialize(image)
    copies: list[sqlite3.Connection] = []

    def backup_copy() -> None:
        dst = connect()
        src.backup(dst)
        copies.append(dst)

    def deserialize_copy() -> None:
        dst = connect()
        dst.deserialize(image)
        copies.append(dst)

    r: dict[str, Any] = {
        "naive_backup": stats(sample(backup_copy, base_reps)),
        "naive_deserialize": stats(sample(deserialize_copy, base_reps)),
    }
    for c in copies:
        c.close()
    with tempfile.TemporaryDirectory() as tmp:
        seeded, target = Path(tmp) / "seeded.db", Path(tmp) / "episode.db"
        on_disk = sqlite3.connect(seeded)
        src.backup(on_disk)
        on_disk.close()
        r["naive_file_copy"] = stats(sample(lambda: shutil.copyfile(seeded, target), base_reps))
    src.close()
    return r


def print_size(r: dict[str, Any]) -> None:
    print(
        f"{r['rows']:>9,} rows  (image {r['image_mb']:.1f} MiB; seeding {r['seed_s']:.2f} s once per template;"
        f" first hash {r['first_hash_s']:.2f} s once per template)"
    )
    line(f"reset after {CHANGES_PER_EPISODE} changes (rollback of the episode transaction)", r["reset"])
    line(f"restore checkpoint after {CHANGES_PER_EPISODE} changes", r["restore"])
    line("take_diff + state_hash after 1 change", r["diff_and_hash"])
    line("fork (backup API copy)", r["fork"])
    line("new world from the cached template", r["new_world"])
    line("naive: full copy with the backup API", r["naive_backup"])
    line("naive: deserialize a full image", r["naive_deserialize"])
    line("naive: file copy of the database", r["naive_file_copy"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="1k and 100k rows only, fewer repetitions")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    n_calls = 2000 if args.quick else 20000
    sizes = [1000, 100_000] if args.quick else [1000, 100_000, 1_000_000]
    reps = 50 if args.quick else 200
    print(f"python {sys.version.split()[0]}, sqlite {sqlite3.sqlite_version}\n")
    results: dict[str, Any] = {"calls": bench_calls(n_calls)}
    print()
    results["step"] = bench_step_hash(max(200, n_calls // 10))
    print("\nreset / restore / fork by database size")
    results["sizes"] = [bench_size(n, reps) for n in sizes]
    print("\nscaling (median, largest vs smallest size):")
    small, large = results["sizes"][0], results["sizes"][-1]
    for key in ("reset", "restore", "diff_and_hash", "fork", "naive_backup"):
        print(f"  {key:<16} {fmt(small[key]['median_us']):>10} -> {fmt(large[key]['median_us']):>10}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
