"""How fast `toolgym generate` makes verified tasks, and whether the oracle solves all of them
(issue 36, item 5): the real command in a subprocess, timed from start to the file written, every
task through toolgym check's checker on the way (its oracle episode included); then, as a second
opinion, `toolgym run --agent oracle` over a seeded sample of the file, or all of it with
`--run-sample 0` (timed apart: not part of the target; a run writes a trace per episode, and on
this machine under load the whole file takes an hour).

    PYTHONPATH=. .venv/bin/python bench/generate_tasks.py [--n 10000] [--apps ...] [--cold]
        [--run-sample 1000 | --no-run]

`--cold` empties nothing but turns the disk cache of seeded worlds off (TOOLGYM_CACHE=0), so every
world is seeded in the run, as on a fresh machine. The machine's load (os.getloadavg) is printed
before and after each part: read the figures with it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ALL_GROUPS = "banking,shopping,ctool,ctool_zh,mtu,teval"
TARGET_TASKS, TARGET_SECONDS = 10_000, 300.0


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _toolgym(args: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """The command's result, its wall seconds, and the CPU seconds it and its workers spent (what
    the load does not change: on two free cores the wall time would be about half of it)."""
    start, cpu = time.perf_counter(), _cpu_of_children()
    done = subprocess.run(
        [sys.executable, "-m", "toolgym.cli", *args], capture_output=True, text=True, env=env
    )
    return done, time.perf_counter() - start, _cpu_of_children() - cpu


def _distributions(path: Path) -> dict[str, Counter[str]]:
    tasks = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    meta = [t["metadata"] for t in tasks]
    return {
        "templates": Counter(m["template"] for m in meta),
        "shape": Counter(m["shape"] for m in meta),
        "chain_length": Counter(str(m["chain_length"]) for m in meta),
        "apps per task": Counter(str(len(m["apps"])) for m in meta),
        "group": Counter(m["template"].split(".")[0] for m in meta),
        "distinct queries": Counter({"": len({t["query"] for t in tasks})}),
    }


def sample_queries(path: Path, k: int = 30, seed: int = 0) -> list[tuple[str, str]]:
    """(template, query) of k templates drawn with a fixed seed, the first task of each in the file:
    the unedited sample docs/tasks.md shows."""
    first: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        task = json.loads(line)
        first.setdefault(task["metadata"]["template"], task["query"])
    chosen = sorted(random.Random(seed).sample(sorted(first), min(k, len(first))))
    return [(name, first[name]) for name in chosen]


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--apps", default=ALL_GROUPS)
    parser.add_argument("--n", type=int, default=TARGET_TASKS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=None, help="generate's workers (default: one per CPU)")
    parser.add_argument(
        "--cold", action="store_true", help="no disk cache of seeded worlds (TOOLGYM_CACHE=0)"
    )
    parser.add_argument("--no-run", action="store_true", help="skip the oracle's run")
    parser.add_argument("--run-sample", type=int, default=1000, help="tasks the oracle's run takes (0: all)")
    parser.add_argument("--out", type=Path, default=None, help="folder for the tasks and the run")
    return parser.parse_args()


def generate_and_time(args: argparse.Namespace, tasks: Path, env: dict[str, str]) -> None:
    """The command, timed, with what it made: counts, distributions, a sample of queries."""
    command = [
        "generate",
        "--apps",
        args.apps,
        "--n",
        str(args.n),
        "--seed",
        str(args.seed),
        "--out",
        str(tasks),
    ]
    if args.jobs:
        command += ["--jobs", str(args.jobs)]
    print(f"cpus: {os.cpu_count()}, cache: {'off (cold)' if args.cold else 'on'}, load before: {_load()}")
    done, seconds, cpu = _toolgym(command, env)
    print(done.stdout.rstrip())
    if done.returncode != 0:
        sys.exit(f"toolgym generate failed ({done.returncode}): {done.stderr.strip()}")
    made = sum(1 for _ in tasks.open(encoding="utf-8"))
    met = made >= TARGET_TASKS and seconds <= TARGET_SECONDS
    print(
        f"generate + check: {made} tasks in {seconds:.1f} s = {made / seconds:.1f} tasks/s (load after:"
        f" {_load()}); target >= {TARGET_TASKS} in <= {TARGET_SECONDS:.0f} s: {'met' if met else 'NOT met'}"
    )
    print(f"CPU time of generate and its workers: {cpu:.1f} s = {1000 * cpu / max(made, 1):.1f} ms a task")
    for name, counts in _distributions(tasks).items():
        if name == "templates":
            low, high = min(counts.values()), max(counts.values())
            print(f"templates: {len(counts)} (tasks per template: min {low}, max {high})")
        elif name == "distinct queries":
            print(f"distinct queries: {counts['']}")
        else:
            print(f"{name}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    print("a sample of 30 queries (one per template, templates drawn with seed 0):")
    for name, query in sample_queries(tasks):
        print(f"  {name}: {query}")


def oracle_run(tasks: Path, out: Path, sample_size: int, env: dict[str, str]) -> None:
    """`toolgym run --agent oracle` over a seeded sample of the file (all of it for 0), timed."""
    workers = str(os.cpu_count() or 1)
    lines = tasks.read_text(encoding="utf-8").splitlines(keepends=True)
    sample = tasks
    if 0 < sample_size < len(lines):
        sample = out / "oracle-sample.jsonl"
        picked = sorted(random.Random(0).sample(range(len(lines)), sample_size))
        sample.write_text("".join(lines[i] for i in picked), encoding="utf-8")
    print(f"oracle run over {sample.name}: load before {_load()}")
    command = [
        "run",
        "--agent",
        "oracle",
        "--tasks",
        str(sample),
        "--out",
        str(out / "oracle"),
        "--workers",
        workers,
    ]
    run, run_seconds, _ = _toolgym(command, env)
    found = re.search(r"success: (\d+)/(\d+) episodes = ([\d.]+)%", run.stdout)
    if run.returncode != 0 or found is None:
        sys.exit(f"toolgym run failed ({run.returncode}): {run.stdout[-2000:]} {run.stderr[-2000:]}")
    print(
        f"oracle (toolgym run --agent oracle --workers {workers}): {found.group(1)}/{found.group(2)} ="
        f" {found.group(3)}% in {run_seconds:.1f} s (load after: {_load()})"
    )


def main() -> None:
    args = _arguments()
    out = args.out or Path(tempfile.mkdtemp(prefix="toolgym-generate-"))
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    if args.cold:
        env["TOOLGYM_CACHE"] = "0"
    tasks = out / "tasks.jsonl"
    generate_and_time(args, tasks, env)
    if not args.no_run:
        oracle_run(tasks, out, args.run_sample, env)


if __name__ == "__main__":
    main()
