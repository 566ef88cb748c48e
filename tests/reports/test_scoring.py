"""A metric suite that fails (reports/scoring.py, evaluation/suites.py `score_suite`): a real
plug-in package's suite that raises, and one that returns the wrong type, are each one line naming
the suite, its package and its entry point; the other suites' results are still computed, printed
and written to eval.fixed.json; `toolgym eval` exits non-zero."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.pantry import install_pantry, registered
from toolgym.cli import app, main

SHAKY = """
from toolgym.evaluation import SuiteResult


class Raising:
    name = "raising"

    def score(self, traces, tasks, mode):
        return SuiteResult(suite=self.name, mode=mode, metrics={"share": 1 / (len(traces) - len(traces))})


class WrongType:
    name = "wrong_type"

    def score(self, traces, tasks, mode):
        return {"solved": 1.0}
"""


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Path]:
    """examples/pantry and a package `shaky-suites` (two suites) installed in this process."""
    root = install_pantry(tmp_path / "site")
    (root / "shaky_suites.py").write_text(SHAKY, encoding="utf-8")
    info = root / "shaky_suites-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: shaky-suites\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        textwrap.dedent(
            """
            [toolgym.suites]
            raising = shaky_suites:Raising
            wrong_type = shaky_suites:WrongType
            """
        ),
        encoding="utf-8",
    )
    try:
        with registered(root):
            yield root
    finally:
        sys.modules.pop("shaky_suites", None)


def test_a_failing_suite_is_named_with_its_package_and_the_others_are_written(
    site: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    ran = CliRunner().invoke(app, ["run", "--tasks", "pantry", "--agent", "oracle", "--out", str(run)])
    assert ran.exit_code == 0, ran.output
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        main(["eval", "--suite", "raising,pantry_stock,wrong_type", str(run)])
    assert done.value.code == 1
    out = capsys.readouterr().out
    raising = [line for line in out.splitlines() if line.startswith("raising: not scored")]
    wrong = [line for line in out.splitlines() if line.startswith("wrong_type: not scored")]
    assert raising == [
        "raising: not scored: suite 'raising' (package shaky-suites 0.1, entry point toolgym.suites: "
        "raising = shaky_suites:Raising) failed: ZeroDivisionError: division by zero"
    ]
    assert wrong == [
        "wrong_type: not scored: suite 'wrong_type' (package shaky-suites 0.1, entry point "
        "toolgym.suites: wrong_type = shaky_suites:WrongType) returned a dict, not a SuiteResult"
    ]
    assert " pantry_stock (fixed " in out and "│ solved " in out  # the good suite's table, printed
    written = json.loads((run / "eval.fixed.json").read_text(encoding="utf-8"))
    assert written["results"]["pantry_stock"]["metrics"]["solved"] == 1.0
    assert set(written["failures"]) == {"raising", "wrong_type"}
