"""Breakdowns every suite result gets: scores per task category and error kinds as tables, in
`eval`'s output, its JSON and the report."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from toolgym.cli import app
from toolgym.evaluation.base import SuiteResult, by_category, error_kinds
from toolgym.evaluation.metrics.mtu import score_mtu_files
from toolgym.tasks import Task

DATA = Path(__file__).resolve().parents[1] / "data" / "mtu-bench"


def test_scores_are_averaged_per_category() -> None:
    tasks = {
        "a": Task(id="a", query="q", category="TG"),
        "b": Task(id="b", query="q", category="TG"),
        "c": Task(id="c", query="q", category="RS"),
        "d": Task(id="d", query="q"),
    }
    result = SuiteResult(
        suite="s",
        mode="fixed",
        metrics={},
        per_task={
            "a": {"ok": 1.0, "steps": 3.0},
            "b": {"ok": 0.0, "steps": 5.0},
            "c": {"ok": 1.0},
            "d": {"ok": 0.5},
            "unknown": {"ok": 0.0},
        },
    )
    assert by_category(result, tasks) == {
        "-": {"ok": 25.0},  # no category, and a task the set does not hold
        "RS": {"ok": 100.0},
        "TG": {"ok": 50.0, "steps": 4.0},  # steps are no fractions: a plain mean
    }


def test_error_kinds_are_read_from_counts() -> None:
    counts = {
        "S-S/errors/action": 2,
        "S-S/errors/format": 1,
        "errors/action": 4,
        "S-S/items": 9,
        "myerrors/x": 1,
    }
    assert error_kinds(counts) == {"S-S": {"action": 2, "format": 1}, "all": {"action": 4}}


def test_mtu_errors_split_into_action_parameter_and_format() -> None:
    result = score_mtu_files(DATA / "S-S_eval.jsonl", DATA / "S-S_gpt4_response.jsonl", "fixed")
    items = result.counts["S-S/items"]
    split = error_kinds(result.counts)["S-S"]
    # every failed turn has exactly one kind: the errors add up to the turns that failed PS
    failed = round(items * (1 - result.metrics["PS"] / 100))
    assert sum(split.values()) == failed and split["action"] == round(
        items * (1 - result.metrics["TS"] / 100)
    )
    assert split["parameter"] > 0


def test_eval_prints_and_saves_the_breakdowns(tmp_path: Path) -> None:
    mtu_tasks = Path(__file__).resolve().parents[2] / "fixtures" / "mock_tasks" / "mtu.jsonl"
    demo = CliRunner().invoke(app, ["run", "--tasks", str(mtu_tasks), "--out", str(tmp_path / "mock")])
    assert demo.exit_code == 0, demo.output
    scored = CliRunner().invoke(
        app, ["eval", str(tmp_path / "mock"), "--tasks", str(mtu_tasks), "--suite", "mtu"]
    )
    assert scored.exit_code == 0, scored.output
    assert "per category" in scored.output and "errors by kind" in scored.output
    saved = json.loads((tmp_path / "mock" / "eval.fixed.json").read_text(encoding="utf-8"))["results"]["mtu"]
    assert len(saved["by_category"]) > 1
    report = CliRunner().invoke(app, ["report", str(tmp_path / "mock"), "--tasks", str(mtu_tasks)])
    assert report.exit_code == 0, report.output
    page = (tmp_path / "mock" / "report.html").read_text(encoding="utf-8")
    assert "per category (mean per-task score" in page and "errors by kind" in page
