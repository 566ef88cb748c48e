"""`toolgym run --notifications`: the verbosity of tasks with events goes into the run's config
(run.json, and so a `--config` rerun), its settings (a resume must match) and the traces' headers;
a value no env takes is a one-line usage error that leaves nothing behind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from tests.cli_text import flat
from tests.dynamic_tasks import LUNCH_ID, write_dynamic_set
from toolgym.cli import app
from toolgym.running.trials import RunSummary


def header(run: Path) -> dict[str, Any]:
    trace = run / "trial-0" / "dynamic" / f"{LUNCH_ID}.seed0.jsonl"
    first: dict[str, Any] = json.loads(trace.read_text(encoding="utf-8").splitlines()[0])
    return first


def test_the_verbosity_is_in_run_json_and_the_headers_and_a_config_rerun_keeps_it(tmp_path: Path) -> None:
    tasks = write_dynamic_set(tmp_path / "tasks")
    runner = CliRunner()
    low = tmp_path / "low"
    result = runner.invoke(app, ["run", "--tasks", str(tasks), "--notifications", "low", "--out", str(low)])
    assert result.exit_code == 0, result.output
    summary = RunSummary.load(low)
    assert summary.settings["notifications"] == "low"
    assert summary.run_config is not None and summary.run_config["notifications"] == "low"
    assert header(low)["env_config"] == {"max_steps": 10, "notifications": "low"}
    again = tmp_path / "again"
    rerun = runner.invoke(app, ["run", "--config", str(low / "run.json"), "--out", str(again)])
    assert rerun.exit_code == 0, rerun.output
    assert header(again) == header(low)
    plain = tmp_path / "plain"
    assert runner.invoke(app, ["run", "--tasks", str(tasks), "--out", str(plain)]).exit_code == 0
    assert "notifications" not in header(plain)["env_config"]
    assert "notifications" not in RunSummary.load(plain).settings


def test_a_verbosity_no_env_takes_is_a_usage_error(tmp_path: Path) -> None:
    tasks = write_dynamic_set(tmp_path / "tasks")
    out = tmp_path / "bad"
    result = CliRunner().invoke(
        app, ["run", "--tasks", str(tasks), "--notifications", "loud", "--out", str(out)]
    )
    assert (
        result.exit_code == 2 and "--notifications" in flat(result.output) and "loud" in flat(result.output)
    )
    assert not out.exists()
