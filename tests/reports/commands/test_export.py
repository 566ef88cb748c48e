"""`toolgym export` writes files that load, or nothing: every format it writes loads with
`datasets`, an export with no record says why and writes no file (exit 2), and a missing extra
is named as pip spells it."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.reports.test_export import TASK_IDS, TASKS, TokenOracle, WrongAnswer
from toolgym.cli import app
from toolgym.envs.agents import OracleAgent
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.tools import ToolSet


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Trial 0 the oracle, trial 1 a wrong answer, trial 2 the oracle with token ids."""
    out = tmp_path_factory.mktemp("run")
    env = ToolEnv(ToolSet(), TASKS, protocol="openai")
    for trial, agent in enumerate(
        [OracleAgent(env.protocol), WrongAnswer(env.protocol), TokenOracle(env.protocol)]
    ):
        for task_id in TASK_IDS:
            run_episode(env, agent, TASKS[task_id], seed=0, trace_dir=out / f"trial-{trial}" / "mtu")
    env.close()
    return out


def export(run: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["export", str(run), "--tasks", "mtu", *args])
    return result.exit_code, " ".join(result.stdout.split()), " ".join(result.stderr.split())


@pytest.mark.parametrize(
    ("fmt", "records"), [("openai", 9), ("hf", 9), ("sharegpt", 9), ("preference", 3), ("tokens", 3)]
)
def test_every_export_file_loads_with_datasets(run_dir: Path, tmp_path: Path, fmt: str, records: int) -> None:
    datasets = pytest.importorskip("datasets")
    out = tmp_path / f"{fmt}.jsonl"
    code, said, errors = export(run_dir, "--format", fmt, "--out", str(out))
    assert code == 0, said + errors
    assert len(datasets.load_dataset("json", data_files=str(out), split="train")) == records


def test_an_empty_export_says_why_and_writes_no_file(run_dir: Path, tmp_path: Path) -> None:
    oracle_only = tmp_path / "oracle"
    shutil.copytree(run_dir / "trial-0", oracle_only / "trial-0")
    out = tmp_path / "x.jsonl"
    cases = [
        (run_dir, ["--format", "preference", "--passed-only"], "no preference records: a pair is a task's best and worst trial when their rewards differ"),
        (oracle_only, ["--format", "tokens"], "no tokens records: none of the 3 episodes kept token ids"),
        (run_dir, ["--min-reward", "2"], f"nothing to export from {run_dir}: 9 traces, none passes the filters"),
    ]  # fmt: skip
    for run, args, reason in cases:
        code, said, errors = export(run, *args, "--out", str(out))
        assert code == 2 and reason in errors and errors.endswith("no file written"), said + errors
        assert not out.exists()


def test_otel_without_its_extra_names_the_extra(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)  # as if not installed
    code, said, errors = export(run_dir, "--format", "otel")
    assert code == 2 and "pip install 'toolgym[otel]'" in errors, said + errors
    assert not (run_dir / "export.otel.jsonl").exists()


def test_export_report_eval_and_view_of_a_folder_without_traces_exit_2_and_write_nothing(
    tmp_path: Path,
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for args in (
        ["export", str(empty)],
        ["report", str(empty)],
        ["eval", str(empty), "--suite", "mtu"],
        ["view", str(empty), "--export", str(tmp_path / "view.html")],
    ):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert result.stderr.strip().splitlines() == [
            f"error: {empty} holds no finished traces; nothing written"
        ]
        assert list(empty.iterdir()) == [] and not (tmp_path / "view.html").exists()
