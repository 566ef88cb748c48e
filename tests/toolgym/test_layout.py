"""The floor plan's mechanics (ARCHITECTURE.md): the root folders are subpackages of `toolgym`
through links in toolgym/, each module has one import path, and a built wheel carries them all."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUBPACKAGES = (
    "authoring",
    "envs",
    "evaluation",
    "fixtures",
    "mocks",
    "models",
    "recorder",
    "reports",
    "running",
    "toolservers",
)
# what a source tree needs to build a wheel (tests, bench, docs and caches stay behind)
BUILD_INPUTS = ("pyproject.toml", "README.md", "toolgym", *SUBPACKAGES)


def _run(
    args: list[str], *, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_root_folder_is_a_subpackage_and_nothing_else(name: str) -> None:
    link = ROOT / "toolgym" / name
    assert link.is_symlink() and os.readlink(link) == f"../{name}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    second = _run([sys.executable, "-c", f"import {name}"], cwd=ROOT, env=env)
    assert second.returncode != 0
    assert f"import toolgym.{name}, not {name}" in second.stderr
    first = _run([sys.executable, "-c", f"import toolgym.{name}"], cwd=ROOT, env=env)
    assert first.returncode == 0, first.stderr


def test_built_wheel_carries_every_module_under_one_path(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for entry in BUILD_INPUTS:
        path = ROOT / entry
        if path.is_dir():
            shutil.copytree(path, src / entry, symlinks=True, ignore=ignore)
        else:
            shutil.copy2(path, src / entry)
    wheels = tmp_path / "wheels"
    built = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheels),
            ".",
        ],
        cwd=src,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = wheels.glob("toolgym-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        f"toolgym/{p.relative_to(ROOT).as_posix()}" for d in SUBPACKAGES for p in (ROOT / d).rglob("*.py")
    }
    expected |= {f"toolgym/{p.name}" for p in (ROOT / "toolgym").glob("*.py")}
    assert expected <= names, sorted(expected - names)[:10]
    assert not any(n.startswith(tuple(f"{d}/" for d in SUBPACKAGES)) for n in names)  # no top-level twins

    target = tmp_path / "site"
    installed = _run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
        cwd=tmp_path,
    )
    assert installed.returncode == 0, installed.stderr
    probe = "import toolgym.envs.tool_env as m, toolgym.evaluation.suites, toolgym.cli; print(m.__file__)"
    ran = _run([sys.executable, "-c", probe], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(target)})
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == str(target / "toolgym" / "envs" / "tool_env.py")
