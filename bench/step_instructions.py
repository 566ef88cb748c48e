"""Instructions per `ToolEnv.step`, counted by valgrind: a figure no load on the machine moves.

    PYTHONPATH=. .venv/bin/python bench/step_instructions.py --against /tmp/base [--steps 200]

For each workload and each checkout (its own code on PYTHONPATH), runs a process under
`valgrind --tool=callgrind` that counts only what runs inside one `functools.reduce` call, which
wraps the measured steps (the import and warm-up steps are not counted), and prints instructions
per step and the ratio. Workloads: the banking app's `get_balance` read and `transfer` write
(there and back), and a bare echo tool (no world: the env's own cost), each with the action
given as an object and as raw ReAct text. valgrind makes a run 50-100 times slower: a workload
takes minutes.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = [f"{tool} {form}" for tool in ("get_balance", "transfer", "echo") for form in ("given", "ReAct")]


def measured(workload: str, steps: int) -> None:
    """The workload's steps, the counted ones inside `functools.reduce`."""
    from toolgym.actions import ToolCall
    from toolgym.envs.tool_env import ToolEnv
    from toolgym.protocols import get_protocol
    from toolgym.tasks import Task
    from toolgym.tools import ToolSet, tool

    @tool(category="logic")
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    name, form = workload.split()
    limit = 10**7
    if name == "echo":
        env = ToolEnv(
            ToolSet([echo]), [Task(id="b", query="q", tools=["echo"], max_steps=limit)], max_steps=limit
        )
        calls = [ToolCall(name="echo", arguments={"text": "hello"})]
    else:
        env = ToolEnv(tasks=[Task(id="b", query="q", apps=["banking"], max_steps=limit)], max_steps=limit)
        calls = (
            [ToolCall(name="get_balance", arguments={"account_id": "ACC-10001"})]
            if name == "get_balance"
            else [
                ToolCall(name="transfer", arguments={"from_account_id": a, "to_account_id": b, "amount": 1.0})
                for a, b in (("ACC-10001", "ACC-10002"), ("ACC-10002", "ACC-10001"))
            ]
        )
    react = get_protocol("react")
    actions: list[Any] = calls if form == "given" else [react.format_action(c) for c in calls]
    env.reset(seed=0)
    for i in range(30):  # warm-up: statement caches, the first packed steps
        env.step(actions[i % len(actions)])

    def run(_: int, __: int) -> int:
        for i in range(steps):
            env.step(actions[i % len(actions)])
        return 0

    functools.reduce(run, [0, 0])


def count(checkout: Path, workload: str, steps: int) -> float:
    """Instructions per step of `workload` with `checkout`'s code."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONHASHSEED": "0"}
    with tempfile.TemporaryDirectory(prefix="step-instructions-") as tmp:
        command = [
            "valgrind",
            "--tool=callgrind",
            "--collect-atstart=no",
            "--toggle-collect=functools_reduce",
            f"--callgrind-out-file={tmp}/callgrind.out",
            sys.executable,
            str(Path(__file__).resolve()),
            "--run",
            workload,
            "--steps",
            str(steps),
        ]
        done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count from valgrind: {done.stderr[-500:]}")
    return int(found.group(1)) / steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--against", type=Path, help="the other checkout (its own code)")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--only", nargs="+", choices=WORKLOADS, default=WORKLOADS, metavar="WORKLOAD")
    parser.add_argument("--run", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        measured(args.run, args.steps)
        return 0
    checkouts = {"this": ROOT, **({"other": args.against.resolve()} if args.against else {})}
    print(f"  {'instructions per step':<24}" + "".join(f"{n:>12}" for n in checkouts) + "  other/this")
    for workload in args.only:
        counts = [count(path, workload, args.steps) for path in checkouts.values()]
        row = f"  {workload:<24}" + "".join(f"{c:12,.0f}" for c in counts)
        if len(counts) > 1:
            row += f"  {counts[1] / counts[0]:9.2f}x"
        print(row, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
