"""Traces byte for byte against another checkout: the correctness guard of every step-path change.

    PYTHONPATH=. .venv/bin/python bench/same_traces.py --against /tmp/before [--protocols react json openai]

Runs `toolgym run --agent oracle` over the bundled task sets (the demo set and every mock-app set)
once with this checkout and once with CHECKOUT (e.g. `git worktree add /tmp/before <commit>`), for
each protocol, both with this interpreter and each with its own code on PYTHONPATH, the two runs
side by side; then compares the run folders file by file (traces, and the files tools drew), all
but run.json, which holds wall-clock times. Exits 1 if anything differs, naming the first files.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP = {"run.json"}


def run(checkout: Path, protocol: str, out: Path, cache: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(checkout), "TOOLGYM_CACHE_DIR": str(cache)}
    command = [sys.executable, "-m", "toolgym.cli", "run", "--agent", "oracle", "--protocol", protocol]
    return subprocess.Popen(
        [*command, "--out", str(out)],
        cwd=checkout,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def differences(a: Path, b: Path) -> list[str]:
    """Relative paths whose bytes differ, or that exist on one side only (run.json left out)."""

    def files(root: Path) -> set[Path]:
        return {p.relative_to(root) for p in root.rglob("*") if p.is_file() and p.name not in SKIP}

    left, right = files(a), files(b)
    found = sorted(str(p) for p in left ^ right)
    found += [str(p) for p in sorted(left & right) if (a / p).read_bytes() != (b / p).read_bytes()]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--against", type=Path, required=True, help="the other checkout (its own code)")
    parser.add_argument("--protocols", nargs="+", default=["react", "json", "openai"])
    args = parser.parse_args()
    failed = False
    with tempfile.TemporaryDirectory(prefix="same-traces-") as tmp:
        root = Path(tmp)
        for protocol in args.protocols:
            runs = {}
            for name, checkout in (("this", ROOT), ("other", args.against.resolve())):
                runs[name] = run(checkout, protocol, root / f"{name}-{protocol}", root / f"cache-{name}")
            for name, process in runs.items():
                _, err = process.communicate()
                if process.returncode != 0:
                    print(f"{protocol}: the {name} run failed ({process.returncode}): {err.decode()[-2000:]}")
                    return 2
            this, other = root / f"this-{protocol}", root / f"other-{protocol}"
            diff = differences(this, other)
            count = sum(1 for _ in this.rglob("*.jsonl"))
            if diff:
                failed = True
                print(f"{protocol}: {len(diff)} files differ, e.g. {diff[:5]}")
            else:
                print(f"{protocol}: {count} traces byte-identical")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
