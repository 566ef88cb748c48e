"""Golden directories recorded once per test session through the real `toolgym record` command."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolgym.cli import app
from toolgym.envs.demo import demo_tasks_path, mock_task_paths


def _record(out: Path, task_paths: list[Path]) -> Path:
    args = ["record", "--out", str(out)]
    for p in task_paths:
        args += ["--tasks", str(p)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="session")
def demo_golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo set (OCR, Calculator, Solver, Plot, DrawBox, AddText on real images), recorded live."""
    return _record(tmp_path_factory.mktemp("golden") / "demo", [demo_tasks_path()])


@pytest.fixture(scope="session")
def mock_golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every bundled mock-app task set (real SQLite worlds, writes included), recorded live."""
    return _record(tmp_path_factory.mktemp("golden") / "mocks", mock_task_paths())
