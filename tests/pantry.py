"""examples/pantry, a real plug-in package, laid out as an installed distribution: its modules and
a `*.dist-info` holding its pyproject's entry points, in a folder that goes on sys.path (what `pip
install` puts in site-packages, without a venv or a build). Moving the folder moves the set's file,
as a second venv would."""

from __future__ import annotations

import shutil
import sys
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from toolgym import plugins

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "pantry"


def install_pantry(site: Path) -> Path:
    """examples/pantry's package and metadata in `site`; returns `site`."""
    shutil.copytree(EXAMPLE / "pantry_env", site / "pantry_env", ignore=shutil.ignore_patterns("__pycache__"))
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    info = site / f"pantry_env-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n", encoding="utf-8"
    )
    groups = "".join(
        f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in entries.items())
        for group, entries in project["entry-points"].items()
    )
    (info / "entry_points.txt").write_text(groups, encoding="utf-8")
    return site


def _forget() -> None:
    for name in [m for m in sys.modules if m == "pantry_env" or m.startswith("pantry_env.")]:
        del sys.modules[name]
    plugins.refresh()


@contextmanager
def registered(site: Path) -> Iterator[Path]:
    """The package in `site` installed in this process (sys.path, the registries read again)."""
    sys.path.insert(0, str(site))
    _forget()
    try:
        yield site
    finally:
        sys.path.remove(str(site))
        _forget()
