"""`toolgym generate` as a user runs it (issue 36, item 4): the real command in a subprocess writes
the same bytes twice, a holdout file beside the training file with no template in both, a summary
of what it made; the file it writes passes `toolgym check` (the real command too) and the oracle's
run (`toolgym run --agent oracle`); a bad app name is one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from toolgym.authoring.commands.generate import holdout_path


def _toolgym(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolgym.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )


def _templates(path: Path) -> set[str]:
    return {
        json.loads(line)["metadata"]["template"] for line in path.read_text(encoding="utf-8").splitlines()
    }


def test_generate_writes_checked_deterministic_tasks_and_a_holdout(tmp_path: Path) -> None:
    args = ["generate", "--apps", "banking,ctool_zh", "--n", "40", "--seed", "1", "--holdout", "0.2"]
    first = _toolgym(*args, "--out", "a/tasks.jsonl", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    second = _toolgym(*args, "--out", "b.jsonl", "--jobs", "1", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    out, held = tmp_path / "a" / "tasks.jsonl", tmp_path / "a" / "tasks.holdout.jsonl"
    assert holdout_path(out) == held
    assert out.read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert held.read_bytes() == (tmp_path / "b.holdout.jsonl").read_bytes()
    assert _templates(out) and _templates(held) and not _templates(out) & _templates(held)
    lines = out.read_text(encoding="utf-8").splitlines() + held.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 40
    for expected in ("tasks: 40 of 40 asked", "distinct queries: 40", "chain lengths:", "apps:", "dropped"):
        assert expected in first.stdout, first.stdout
    assert "held-out tasks to" in first.stdout and "holdout.jsonl" in first.stdout
    checked = _toolgym("check", str(out), str(held), cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    run = _toolgym("run", "--agent", "oracle", "--tasks", str(out), "--out", "runs/oracle", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "= 100.0%" in run.stdout, run.stdout


def test_category_keeps_the_behaviour_templates_and_the_tasks_pass_the_oracle(tmp_path: Path) -> None:
    args = ["generate", "--apps", "banking,ctool", "--n", "8", "--jobs", "1", "--out", "cat.jsonl"]
    made = _toolgym(*args, "--category", "insufficient_info,hidden_precondition", cwd=tmp_path)
    assert made.returncode == 0, made.stdout + made.stderr
    tasks = [json.loads(line) for line in (tmp_path / "cat.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(tasks) == 8 and {t["category"] for t in tasks} == {"insufficient_info", "hidden_precondition"}
    assert all(t["minefields"] for t in tasks if t["category"] == "insufficient_info")
    assert all(t["metadata"]["blocked_by"] for t in tasks if t["category"] == "hidden_precondition")
    assert "categories: hidden_precondition 4, insufficient_info 4" in made.stdout, made.stdout
    run = _toolgym("run", "--agent", "oracle", "--tasks", "cat.jsonl", "--out", "runs/cat", cwd=tmp_path)
    assert run.returncode == 0 and "= 100.0%" in run.stdout, run.stdout + run.stderr
    none = _toolgym(
        "generate", "--apps", "teval", "--n", "2", "--out", "x.jsonl", "--category", "canon", cwd=tmp_path
    )
    assert none.returncode == 2 and "no templates of categories canon" in none.stderr + none.stdout
    assert "hidden_precondition, insufficient_info" in none.stderr + none.stdout


def test_an_unknown_app_is_one_line(tmp_path: Path) -> None:
    result = _toolgym("generate", "--apps", "bankng", "--n", "3", "--out", "x.jsonl", cwd=tmp_path)
    assert result.returncode == 2
    assert "no app or app group 'bankng'" in result.stderr + result.stdout
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "x.jsonl").exists()


def test_rewritten_queries_are_recorded_and_replay_to_the_same_file(tmp_path: Path) -> None:
    from tests.authoring.test_rewrite import polite
    from tests.models.fake_openai import FakeOpenAI, serve

    args = ["generate", "--apps", "banking", "--n", "8", "--rewrite-model", "fake-model"]
    with serve(FakeOpenAI(script=polite)) as fake:
        live = _toolgym(*args, "--rewrite-base-url", fake.base_url, "--out", "live.jsonl", cwd=tmp_path)
    assert live.returncode == 0, live.stdout + live.stderr
    assert "rephrased: 8 of 8 queries" in live.stdout
    tape = tmp_path / "live.rewrites.cassette"
    assert tape.is_file()
    queries = [
        json.loads(line)["query"]
        for line in (tmp_path / "live.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert all(q.startswith("Hello! ") for q in queries)
    replay = _toolgym(
        *args,
        "--rewrite-cassette",
        str(tape),
        "--rewrite-cassette-mode",
        "replay",
        "--out",
        "again.jsonl",
        cwd=tmp_path,
    )
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert (tmp_path / "again.jsonl").read_bytes() == (tmp_path / "live.jsonl").read_bytes()
