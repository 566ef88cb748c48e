"""Golden folders are portable (recorder/golden.py): golden.json names each set by its one name,
its source (a registered set's name, or a path relative to the folder) and its digest, never an
absolute path. A golden set recorded where a plug-in (examples/pantry) is installed replays and
verifies from a copy of the folder where the same set is installed elsewhere; a task file that
changed since is refused in one line naming the set and both digests; an old golden.json (format
1: the sets' absolute paths) is still read."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.pantry import install_pantry, registered
from toolgym.cli import app, main
from toolgym.envs.task_sets import TaskSource
from toolgym.recorder.golden import MANIFEST, GoldenManifest

runner = CliRunner()


def _record(golden: Path, *tasks: str) -> None:
    recorded = runner.invoke(
        app, ["record", *(a for t in tasks for a in ("--tasks", t)), "--out", str(golden)]
    )
    assert recorded.exit_code == 0, recorded.output


def _replay(golden: Path, out: Path) -> str:
    replayed = runner.invoke(app, ["replay", str(golden), "--out", str(out)])
    assert replayed.exit_code == 0, replayed.output
    assert "4/4 byte-identical" in replayed.output and "live tool calls: 0;" in replayed.output
    return replayed.output


def test_a_golden_set_replays_from_another_venv_and_a_changed_set_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = install_pantry(tmp_path / "venv-a")
    golden = tmp_path / "golden"
    with registered(first):
        _record(golden, "pantry")
    manifest = GoldenManifest.load(golden)
    assert manifest is not None
    recorded = manifest.sets["pantry"]
    assert isinstance(recorded, TaskSource) and (recorded.source, recorded.registered) == ("pantry", True)
    assert str(tmp_path) not in (golden / MANIFEST).read_text(encoding="utf-8")

    # the folder moves, the venv it was recorded in goes: the same set is installed elsewhere
    moved = tmp_path / "elsewhere" / "golden"
    shutil.copytree(golden, moved)
    shutil.rmtree(golden)
    shutil.rmtree(first)
    second = install_pantry(tmp_path / "venv-b")
    with registered(second):
        _replay(moved, tmp_path / "replayed")
        verified = runner.invoke(app, ["verify", str(moved)])
        assert verified.exit_code == 0 and "4 ok, 0 drifted" in verified.output, verified.output

        tasks = second / "pantry_env" / "tasks.jsonl"
        tasks.write_text(tasks.read_text(encoding="utf-8").replace("How many", "How much"), encoding="utf-8")
        now = hashlib.sha256(tasks.read_bytes()).hexdigest()
        with pytest.raises(SystemExit) as done:
            main(["replay", str(moved), "--out", str(tmp_path / "refused")])
    assert done.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert "task set 'pantry'" in lines[0] and "changed since the golden recording" in lines[0]
    assert f"sha256 {recorded.digest[:12]} then, {now[:12]} now" in lines[0]
    assert not (tmp_path / "refused").exists()


def test_a_golden_set_of_an_unregistered_file_moves_with_its_file(tmp_path: Path) -> None:
    """A file given by path is kept relative to the golden folder: both move together."""
    project = tmp_path / "project"
    with registered(install_pantry(tmp_path / "site")) as site:
        (project / "sets").mkdir(parents=True)
        shutil.copy(site / "pantry_env" / "tasks.jsonl", project / "sets" / "kitchen.jsonl")
        _record(project / "golden", str(project / "sets" / "kitchen.jsonl"))
        manifest = json.loads((project / "golden" / MANIFEST).read_text(encoding="utf-8"))
        assert manifest["sets"]["kitchen"]["source"] == "../sets/kitchen.jsonl"
        assert sorted(p.name for p in (project / "golden").iterdir() if p.is_dir()) == ["kitchen"]
        shutil.move(project, tmp_path / "moved")
        _replay(tmp_path / "moved" / "golden", tmp_path / "replayed")


def test_an_old_golden_json_with_absolute_paths_is_still_read(tmp_path: Path) -> None:
    """Format 1, as toolgym wrote it before: sets by file stem, absolute paths, traces in `tasks/`."""
    golden = tmp_path / "golden"
    with registered(install_pantry(tmp_path / "site")) as site:
        _record(golden, "pantry")
        (golden / "pantry").rename(golden / "tasks")
        manifest = json.loads((golden / MANIFEST).read_text(encoding="utf-8"))
        manifest.update(format=1, sets={"tasks": str((site / "pantry_env" / "tasks.jsonl").resolve())})
        (golden / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
        _replay(golden, tmp_path / "replayed")
