"""Check toolgym's pairings against the newest release of each library it pairs with (`make newest`).

    .venv/bin/python -m scripts.newest_releases                    # every library, docs/newest-releases.md
    .venv/bin/python -m scripts.newest_releases --only gymnasium,openai --doc /tmp/n.md

For each library: a venv of its own under `.venv-newest/<name>` that sees toolgym's venv behind its
own packages (a `.pth` line, as the verifiers venv does), the library's newest release installed into
it (`pip install --upgrade`: only what differs from toolgym's venv lands there), then the library's
adapter tests run on that venv's Python. A library that cannot share toolgym's venv (its pins clash
or it wants another Python) gets a venv of its own kind, said in the table: verifiers' test runs
`vf-eval` in the verifiers venv, NeMo Gym's servers run in a Python 3.13 venv. The table (library,
the release tested, how, the tests' outcome, why a venv of its own) is written to the document.
Nothing here runs in CI (`make test`): each library's newest release changes without toolgym
changing, and installing them takes minutes.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENVS = ROOT / ".venv-newest"
DOC = ROOT / "docs" / "newest-releases.md"
PYTEST_SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|error|errors)")


@dataclass(frozen=True)
class Pairing:
    """A library toolgym pairs with: the distribution, the tests that exercise the pairing, and
    what its check needs beyond an overlay on toolgym's venv."""

    name: str
    dist: str
    tests: tuple[str, ...]
    own_venv: str = ""  # why it cannot share toolgym's venv ("" when it can)
    python: str | None = None  # an interpreter of its own (NeMo Gym: 3.13)
    pip_args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)  # what the tests are told (the venv's path)


PAIRINGS: tuple[Pairing, ...] = (
    Pairing("gymnasium", "gymnasium", ("tests/envs/test_tool_env.py",)),
    Pairing("openai SDK", "openai", ("tests/models/test_llm.py",)),
    Pairing("mcp", "mcp", ("tests/envs/test_mcp_server.py", "tests/toolservers/clients/test_mcp.py")),
    Pairing("Ray", "ray", ("tests/envs/test_ray_rollouts.py",)),
    Pairing("TRL", "trl", ("tests/envs/test_trainers.py",)),
    Pairing("SkyRL-Gym", "skyrl-gym", ("tests/envs/adapters/test_skyrl.py",)),
    Pairing("Inspect", "inspect-ai", ("tests/toolgym/test_inspect_tasks.py",)),
    Pairing(
        "OpenEnv (client)",
        "openenv",
        ("tests/envs/service/test_app.py",),
        own_venv="an overlay, as any: openenv (0.10) pins mcp<2, which the overlay takes; toolgym's env "
        "service needs no mcp (tests/envs/service/test_openenv_clients.py also builds `toolgym[service] "
        "openenv` from scratch)",
    ),
    Pairing(
        "verifiers",
        "verifiers",
        ("tests/envs/adapters/test_verifiers.py",),
        own_venv="its pins (mcp, openai) clash with toolgym's: vf-eval runs in the verifiers venv",
        env={"TOOLGYM_VERIFIERS_VENV": "{venv}"},
    ),
    Pairing(
        "NeMo Gym",
        "nemo-gym",
        ("tests/envs/adapters/test_nemo_gym.py",),
        own_venv="its servers run in NeMo Gym's venv (Python >= 3.13.14 from 0.5 on; installed on 3.13.0 "
        "with --ignore-requires-python)",
        python="python3.13",
        pip_args=("--ignore-requires-python",),
        env={"TOOLGYM_NEMO_GYM_VENV": "{venv}"},
    ),
)


@dataclass
class Checked:
    pairing: Pairing
    version: str = "-"
    outcome: str = "-"
    seconds: float = 0.0
    note: str = ""


def overlay(venv: Path) -> None:
    """A venv without pip whose Python sees toolgym's venv behind its own packages."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--clear", str(venv)], check=True)
    purelib = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    ours = sysconfig.get_paths()["purelib"]
    Path(purelib, "toolgym.pth").write_text(f"import site; site.addsitedir({ours!r})\n", encoding="utf-8")


def interpreter(name: str) -> str:
    """A Python by command name (`python3.13`): TOOLGYM_PYTHON_<version> if set, else on PATH (pyenv
    shims answer only for the versions selected), else pyenv's own copy of that version."""
    given = os.environ.get("TOOLGYM_PYTHON_" + name.removeprefix("python").replace(".", "_"))
    if given:
        return given
    found = shutil.which(name)
    if found and subprocess.run([found, "--version"], capture_output=True, check=False).returncode == 0:
        return found
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    copies = sorted(pyenv.glob(f"{name.removeprefix('python')}.*/bin/{name}"))
    return str(copies[-1]) if copies else name


def install(pairing: Pairing, venv: Path) -> str:
    """The newest release in the pairing's venv; its installed version."""
    if pairing.python is None:
        overlay(venv)
        pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")]
    else:
        subprocess.run([interpreter(pairing.python), "-m", "venv", "--clear", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip"]
    subprocess.run([*pip, "install", "--quiet", "--upgrade", *pairing.pip_args, pairing.dist], check=True)
    probe = f"import importlib.metadata as m; print(m.version({pairing.dist!r}))"
    return subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe], check=True, capture_output=True, text=True
    ).stdout.strip()


def ours(dist: str) -> str | None:
    """The release of `dist` in toolgym's own venv (None: not installed there)."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def run_tests(pairing: Pairing, venv: Path, *, in_ours: bool = False) -> str:
    """The pairing's tests, on the overlay's Python (or toolgym's: told where the library's own venv
    is, or `in_ours` when the newest release is the one toolgym's venv has: the overlay adds nothing,
    and a code sandbox, which reads its interpreter's own site-packages, would not see the packages
    behind an overlay); pytest's summary counts."""
    toolgyms = pairing.python is not None or bool(pairing.env) or in_ours
    python = sys.executable if toolgyms else str(venv / "bin" / "python")
    environ = {**os.environ, **{k: v.format(venv=venv) for k, v in pairing.env.items()}}
    done = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", *pairing.tests],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        check=False,
    )
    counts = ", ".join(
        f"{n} {kind}"
        for n, kind in PYTEST_SUMMARY.findall(done.stdout.splitlines()[-1] if done.stdout else "")
    )
    return counts or f"exit {done.returncode}"


def check(pairing: Pairing) -> Checked:
    venv = VENVS / re.sub(r"[^a-z0-9]+", "-", pairing.dist.lower())
    started = time.perf_counter()
    result = Checked(pairing)
    try:
        result.version = install(pairing, venv)
    except subprocess.CalledProcessError as exc:
        result.outcome, result.note = "not installed", f"pip exited {exc.returncode}"
        return result
    same = pairing.python is None and not pairing.env and result.version == ours(pairing.dist)
    result.outcome = run_tests(pairing, venv, in_ours=same)
    if same:
        result.note = "the release toolgym's venv has: run there"
    result.seconds = time.perf_counter() - started
    return result


def kept_rows(doc: Path, replaced: set[str]) -> dict[str, str]:
    """The table rows of an earlier run (by library) that this run does not check again."""
    if not doc.is_file():
        return {}
    rows: dict[str, str] = {}
    for line in doc.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 5 and cells[0] not in ("library", "---"):
            rows[cells[0]] = line
    return {name: line for name, line in rows.items() if name not in replaced}


def render(results: list[Checked], kept: dict[str, str] | None = None) -> str:
    day = datetime.now(UTC).date().isoformat()
    lines = [
        "# Newest releases, checked",
        "",
        f"`make newest` (scripts/newest_releases.py) on {day}: each library at its newest release on PyPI that",
        "day, in a venv of its own that sees toolgym's venv behind its own packages, and the tests of",
        "toolgym's pairing with it run there. Regenerated by the script; not part of `make test`.",
        "",
        "| library | release | tests | outcome | own venv, and why |",
        "|---|---|---|---|---|",
    ]
    fresh = {r.pairing.name: r for r in results}
    earlier = kept or {}
    for pairing in PAIRINGS:  # the pairings' order, whichever run checked each
        r = fresh.get(pairing.name)
        if r is None:
            if pairing.name in earlier:
                lines.append(earlier[pairing.name])
            continue
        tests = ", ".join(f"`{t}`" for t in r.pairing.tests)
        note = r.pairing.own_venv or "no: an overlay on toolgym's venv"
        outcome = r.outcome + (f" ({r.note})" if r.note else "")
        lines.append(f"| {r.pairing.name} | {r.version} | {tests} | {outcome} | {note} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--only", help="comma-separated distributions (default: every pairing)")
    p.add_argument(
        "--doc", type=Path, default=DOC, help="the table's document (default docs/newest-releases.md)"
    )
    args = p.parse_args(argv)
    chosen = [x for x in PAIRINGS if not args.only or x.dist in args.only.split(",")]
    if not chosen:
        p.error(f"--only names no pairing; pairings: {', '.join(x.dist for x in PAIRINGS)}")
    results = []
    for pairing in chosen:
        print(f"newest: {pairing.dist} ...", flush=True)
        results.append(check(pairing))
        print(
            json.dumps({"dist": pairing.dist, "version": results[-1].version, "outcome": results[-1].outcome})
        )
    # a run of some libraries (--only) keeps the other rows of the document as they were
    kept = kept_rows(args.doc, {r.pairing.name for r in results}) if args.only else {}
    args.doc.write_text(render(results, kept), encoding="utf-8")
    print(f"written to {args.doc}")
    return 0 if all("failed" not in r.outcome and "error" not in r.outcome for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
