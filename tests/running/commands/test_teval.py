"""`toolgym teval-answer --limit N` answers the first N data, and says how far it got on stderr:
a local model's loading and turns as they go, the last line once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.models.real_model import needs_model
from tests.running.test_commands import cli_env, toolgym
from toolgym.cli import app


@pytest.fixture(scope="module")
def subsets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """T-Eval's subsets from the oracle's run of the bundled teval set."""
    root = tmp_path_factory.mktemp("teval")
    runner = CliRunner()
    ran = runner.invoke(app, ["run", "--tasks", "teval", "--out", str(root / "oracle")])
    assert ran.exit_code == 0, ran.output
    built = runner.invoke(app, ["teval-subsets", str(root / "oracle"), "--out", str(root / "subsets")])
    assert built.exit_code == 0, built.output
    return root / "subsets"


def answered(out: Path) -> dict[str, int]:
    return {p.stem: len(json.loads(p.read_text(encoding="utf-8"))) for p in sorted(out.glob("*.json"))}


def test_limit_answers_the_first_n_data_in_order(subsets: Path, tmp_path: Path) -> None:
    first_file = json.loads((subsets / "instruct_v2.json").read_text(encoding="utf-8"))
    small = len(first_file) + 2  # past the first subset's end: the next subset gives the rest
    result = CliRunner().invoke(
        app, ["teval-answer", str(subsets), "--limit", str(small), "--out", str(tmp_path / "a")]
    )
    assert result.exit_code == 0, result.output
    counts = answered(tmp_path / "a")
    assert sum(counts.values()) == small and counts["instruct_v2"] == len(first_file)
    kept = json.loads((tmp_path / "a" / "instruct_v2.json").read_text(encoding="utf-8"))
    assert list(kept) == list(first_file)  # each file's data in its order


def test_threads_are_for_the_in_process_model(subsets: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["teval-answer", str(subsets), "--threads", "2", "--out", str(tmp_path / "a")]
    )
    assert result.exit_code == 2 and "--threads is for the in-process model" in result.output
    assert not (tmp_path / "a").exists()


@needs_model
def test_a_local_model_answers_n_data_and_says_how_far_it_got(subsets: Path, tmp_path: Path) -> None:
    """The real command off a terminal: two data answered by the real model; its loading, then
    each turn, then the items, on stderr; the last progress line once."""
    result = toolgym(
        "teval-answer", str(subsets), "--agent", "hf:smollm2", "--limit", "2", "--max-tokens", "8",
        "--threads", "1", "--out", str(tmp_path / "a"), cwd=tmp_path, env=cli_env(TOOLGYM_PROGRESS_EVERY="0.2"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert sum(answered(tmp_path / "a").values()) == 2
    lines = result.stderr.splitlines()
    loading = next(i for i, line in enumerate(lines) if line.startswith("model: loading SmolLM2"))
    first_turn = next(i for i, line in enumerate(lines) if line.startswith("turn: item 1/2, step 1 ("))
    assert loading < first_turn
    assert [line for line in lines if line.startswith("progress: 2/2 items")] == [lines[-1]]
    assert "progress:" not in result.stdout  # stdout: what was written, and how to score it
