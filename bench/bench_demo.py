"""`toolgym demo` cold, a new process each run, with toolgym's caches and without, side by side.

    PYTHONPATH=. .venv/bin/python bench/bench_demo.py [--rounds 3] [--against CHECKOUT]

Three ways to run the same demo, interleaved round by round so load drifts hit all alike:

- off: `TOOLGYM_CACHE=0`, every OCR recognition and every mock-world template computed, as before
  the caches existed (the baseline);
- first run: the caches on, starting from an empty cache folder (what a user's first run pays:
  repeated images recognised once per process); matplotlib's font list is copied in, as every
  variant has it;
- later runs: the caches on, the folder left by an earlier run (OCR results and seeded templates
  read from disk).

The first and later runs are timed twice: as a user runs them (`toolgym demo` runs the task sets on
one forked process per CPU) and with `--jobs 1` (one process), which shows what the CPU-side
changes alone give.

`--against CHECKOUT` also times another checkout's demo in the same rounds (e.g. the code before
this change: `git worktree add /tmp/before <commit>`), run from that checkout with its own code, a
first run (an empty cache folder) and a later run (the folder its own earlier run left) each.
Every run writes its traces to a new folder under /tmp, and the bench checks that each run's
traces are byte-identical to the first run's, and its printed table the same but for the `ms`
column (wall-clock time per episode). Wall seconds are medians; the load average is printed.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run_demo(
    cwd: Path, out: Path, env: dict[str, str], extra: tuple[str, ...] = ()
) -> tuple[float, float, list[str]]:
    """Wall and CPU (user + sys of the child) seconds of one `toolgym demo`, a new process, and
    its printed summary less the wall-clock `ms` column."""
    full = {**os.environ, **env, "PYTHONPATH": str(cwd)}
    before = os.times()
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "toolgym.cli", "demo", "--out", str(out), *extra],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    after = os.times()
    if done.returncode != 0:
        raise RuntimeError(f"toolgym demo failed in {cwd} ({done.returncode}): {done.stderr[-2000:]}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, cpu, summary(done.stdout)


def summary(printed: str) -> list[str]:
    """The table's rows without their last column (`ms`, which also sets the table's width), and
    the score lines."""
    rows = []
    for line in printed.splitlines():
        cells = line.split("│")
        if len(cells) > 8:
            rows.append(" | ".join(" ".join(c.split()) for c in cells[1:-2]))
        elif line.startswith(("answer accuracy", "expected state")):
            rows.append(line)
    return rows


def same_tree(a: Path, b: Path) -> bool:
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return not mismatch and not errors and all(same_tree(a / d, b / d) for d in cmp.common_dirs)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--against", type=Path, help="another checkout whose demo is timed in the same rounds"
    )
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="toolgym-bench-demo-"))
    warm_cache = work / "cache-warm"
    # a variant without TOOLGYM_CACHE_DIR gets a new empty cache folder each round (a first run)
    one = ("--jobs", "1")
    variants: dict[str, tuple[Path, dict[str, str], tuple[str, ...]]] = {
        "off (TOOLGYM_CACHE=0)": (
            ROOT,
            {"TOOLGYM_CACHE": "0", "TOOLGYM_CACHE_DIR": str(work / "cache-off")},
            (),
        ),
        "first run (empty cache)": (ROOT, {}, ()),
        "first run, --jobs 1": (ROOT, {}, one),
        "later runs (cache from an earlier run)": (ROOT, {"TOOLGYM_CACHE_DIR": str(warm_cache)}, ()),
        "later runs, --jobs 1": (ROOT, {"TOOLGYM_CACHE_DIR": str(warm_cache)}, one),
    }
    # fill the warm cache once; its traces are the reference every run is compared with
    reference = work / "reference"
    _, _, reference_summary = run_demo(ROOT, reference, {"TOOLGYM_CACHE_DIR": str(warm_cache)})
    if args.against is not None:
        # the other checkout's first and later runs, each from a cache folder of its own (never the
        # user's default folder, which would make every run of it a later run)
        other, other_warm = args.against.resolve(), work / "cache-warm-other"
        run_demo(other, work / "reference-other", {"TOOLGYM_CACHE_DIR": str(other_warm)})
        variants[f"{args.against}: first run (its own code)"] = (other, {}, ())
        variants[f"{args.against}: later runs (its own code)"] = (
            other,
            {"TOOLGYM_CACHE_DIR": str(other_warm)},
            (),
        )
    # matplotlib's font list (the Plot sandbox's, kept under the same folder since before the result
    # caches) is there for every variant: the comparison is about the OCR and template caches
    fonts = warm_cache / "mplconfig"
    shutil.copytree(fonts, work / "cache-off" / "mplconfig")
    print(f"load average at the start: {load()}", flush=True)
    walls: dict[str, list[float]] = {name: [] for name in variants}
    cpus: dict[str, list[float]] = {name: [] for name in variants}
    for round_no in range(args.rounds):
        for name, (cwd, env, extra) in variants.items():
            if "TOOLGYM_CACHE_DIR" not in env:
                empty = work / f"cache-empty-{round_no}-{abs(hash(name))}"
                shutil.copytree(fonts, empty / "mplconfig")
                env = {"TOOLGYM_CACHE_DIR": str(empty)}
            out = work / f"out-{round_no}-{len(walls[name])}-{abs(hash(name))}"
            wall, cpu, printed = run_demo(cwd, out, env, extra)
            if not same_tree(reference, out):
                raise SystemExit(f"{name}: traces differ from the reference run ({out} vs {reference})")
            if printed != reference_summary or len(printed) < 2:
                raise SystemExit(f"{name}: the printed summary differs from the reference run's")
            shutil.rmtree(out)
            walls[name].append(wall)
            cpus[name].append(cpu)
            print(
                f"  round {round_no + 1}: {name}: {wall:.2f} s wall, {cpu:.2f} s CPU (load {load()})",
                flush=True,
            )
    base = statistics.median(walls["off (TOOLGYM_CACHE=0)"])
    print(
        f"\n`toolgym demo`, a new process each run, {args.rounds} rounds, medians; load at the end {load()}"
    )
    print(f"{'variant':<48} {'wall':>8} {'CPU':>8} {'off / this':>11}")
    for name in variants:
        wall = statistics.median(walls[name])
        cpu = statistics.median(cpus[name])
        print(f"{name:<48} {wall:7.2f}s {cpu:7.2f}s {base / wall:10.2f}x")
    print("traces byte-identical in every run; printed summary identical but for the ms column")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
