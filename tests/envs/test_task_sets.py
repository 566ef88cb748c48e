"""A task set's one name (envs/task_sets.py): a plug-in's set (examples/pantry, whose file is
pantry_env/tasks.jsonl, registered as `pantry`) is `pantry` in `toolgym tasks`, in run's trace
folders, rows and run.json, in record's folders and golden.json, in demo's folders and in what
export writes; a file given by path that no one registered is named by its stem."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.pantry import install_pantry, registered
from toolgym.cli import app
from toolgym.envs.demo import default_task_paths, mock_task_paths
from toolgym.envs.task_sets import NamedTaskFile, named_task_files, set_name_of
from toolgym.recorder.golden import GoldenManifest

runner = CliRunner()


@pytest.fixture
def pantry(tmp_path: Path) -> Iterator[Path]:
    """The pantry set's file, its package registered in this process."""
    with registered(install_pantry(tmp_path / "site")) as site:
        yield site / "pantry_env" / "tasks.jsonl"


def _folders(root: Path) -> set[str]:
    """The folders traces were written to under `root`."""
    return {p.parent.name for p in root.rglob("*.jsonl") if p.parent != root}


def test_a_registered_file_is_its_set_and_any_other_file_its_stem(pantry: Path, tmp_path: Path) -> None:
    assert named_task_files(["pantry"]) == [NamedTaskFile("pantry", pantry, "pantry")]
    # the registered set's file given by path is still that set, whatever its folder is called
    assert named_task_files([str(pantry)]) == [NamedTaskFile("pantry", pantry, "pantry")]
    mine = tmp_path / "mine" / "tasks.jsonl"
    mine.parent.mkdir()
    shutil.copy(pantry, mine)
    assert named_task_files([str(mine)]) == [NamedTaskFile("tasks", mine, None)]
    # toolgym's default sets keep the names `toolgym tasks` lists (demo's file is demo/tasks.jsonl)
    assert [n.name for n in named_task_files(None)] == ["demo", *(p.stem for p in mock_task_paths())]
    assert set_name_of(default_task_paths()[0]) == "demo"


def test_every_command_names_a_plugin_set_by_its_registered_name(pantry: Path, tmp_path: Path) -> None:
    listed = runner.invoke(app, ["tasks"])
    assert listed.exit_code == 0 and "│ pantry " in listed.output, listed.output

    run = tmp_path / "run"
    ran = runner.invoke(app, ["run", "--tasks", "pantry", "--agent", "oracle", "--out", str(run)])
    assert ran.exit_code == 0, ran.output
    assert "│ pantry " in ran.output and "pantry_env" not in ran.output  # the run's table
    assert _folders(run) == {"pantry"}
    summary = json.loads((run / "run.json").read_text(encoding="utf-8"))
    assert {e["task_set"] for e in summary["episodes"]} == {"pantry"}
    assert [(s["name"], s["source"], s["registered"]) for s in summary["task_sources"]] == [
        ("pantry", "pantry", True)
    ]
    exported = runner.invoke(app, ["export", str(run), "--out", str(tmp_path / "x.jsonl")])
    assert exported.exit_code == 0, exported.output
    records = [json.loads(line) for line in (tmp_path / "x.jsonl").read_text(encoding="utf-8").splitlines()]
    assert records and {r["metadata"]["task_set"] for r in records} == {"pantry"}
    scored = runner.invoke(app, ["eval", str(run)])
    assert scored.exit_code == 0, scored.output

    golden = tmp_path / "golden"
    recorded = runner.invoke(app, ["record", "--tasks", "pantry", "--out", str(golden)])
    assert recorded.exit_code == 0, recorded.output
    assert _folders(golden) == {"pantry"}
    manifest = GoldenManifest.load(golden)
    assert manifest is not None and list(manifest.sets) == ["pantry"]

    demo = tmp_path / "demo"
    ran_demo = runner.invoke(app, ["demo", "--tasks", "pantry", "--out", str(demo), "--jobs", "1"])
    assert ran_demo.exit_code == 0, ran_demo.output
    assert _folders(demo) == {"pantry"}
