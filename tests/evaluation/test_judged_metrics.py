"""The judged metrics end to end: T-Eval's end-to-end win rate, CToolEval's open-ended score and
ToolEyes' answer organisation (with its turn-limit factor), asked of a real OpenAI-compatible HTTP
judge (tests/models/fake_openai.py) through a cassette, then replayed with the server stopped:
the same scores, zero LLM calls."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.evaluation.helpers import run_e2e
from tests.models.fake_openai import FakeOpenAI, Reply, serve, text
from toolgym.actions import Action, FinalAnswer, ToolCall
from toolgym.cli import app
from toolgym.envs.agents import OracleAgent
from toolgym.evaluation.base import SuiteResult
from toolgym.evaluation.loaders.mtu import RecordedAgent
from toolgym.evaluation.metrics.ctooleval import CToolEvalSuite
from toolgym.evaluation.metrics.judge import JudgeError, OpenAIJudge, RecordedJudge
from toolgym.evaluation.metrics.tooleyes import ToolEyesSuite
from toolgym.evaluation.metrics.winrate import parse_preference, win_rate
from toolgym.recorder.cassette import JUDGE_TOOL, Cassette
from toolgym.running.trials import load_traces, run_trials
from toolgym.tasks import Task, TaskSet
from toolgym.tools import ToolSet
from toolgym.trace import Trace

CTOOL = Path(__file__).resolve().parents[2] / "fixtures" / "mock_tasks" / "ctool.jsonl"
TASK_IDS = ("ctool-express-track-001", "ctool-maps-reverse-005")
WRONG_ANSWER = "I could not find out."


def open_ended(task: Task) -> Task:
    """The task as an open-ended one: its golden answer is the reference."""
    return task.model_copy(update={"metadata": {**task.metadata, "ctooleval": {"type": "open_ended"}}})


@pytest.fixture(scope="module")
def tasks() -> TaskSet:
    loaded = TaskSet.load(CTOOL)
    return TaskSet([open_ended(loaded[i]) for i in TASK_IDS], base_dir=loaded.base_dir)


def judge_reply(body: Mapping[str, Any]) -> Reply:
    """The judge's script: a pairwise question prefers the solution without the wrong answer;
    any other question gets 8 out of 10."""
    system, user = body["messages"][0]["content"], body["messages"][-1]["content"]
    if "compare two assistants" in system:
        first = user.split("Solution B:")[0]
        return text(f"Reason: one answered.\nPreferred: {'B' if WRONG_ANSWER in first else 'A'}")
    return text("Scoring Reason: covers the request.\nEvaluation Score: 8")


@pytest.fixture(scope="module")
def runs(tasks: TaskSet, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("runs")
    sets = [("ctool", tasks)]
    run_trials(sets, lambda env, trial: OracleAgent(env.protocol), out=root / "candidate")
    outputs: dict[str, list[Any]] = {t.id: [FinalAnswer(text=WRONG_ANSWER)] for t in tasks}
    run_trials(sets, lambda env, trial: RecordedAgent(outputs), out=root / "reference")
    return root / "candidate", root / "reference"


def _traces(folder: Path) -> list[Trace]:
    return [t.trace for t in load_traces(folder)[0]]


def _judged(judge: RecordedJudge, tasks: TaskSet, runs: tuple[Path, Path]) -> dict[str, SuiteResult]:
    candidate, reference = _traces(runs[0]), _traces(runs[1])
    return {
        "winrate": win_rate(candidate, reference, tasks, judge),
        "ctooleval": CToolEvalSuite(judge).score(candidate, tasks, "fixed"),
        "tooleyes": ToolEyesSuite(judge).score(candidate, tasks, "fixed"),
    }


def test_judged_scores_replay_with_no_llm(tasks: TaskSet, runs: tuple[Path, Path], tmp_path: Path) -> None:
    cassette_path = tmp_path / "judge.sqlite"
    with serve(FakeOpenAI(judge_reply)) as server:
        url = server.base_url
        recording = RecordedJudge(OpenAIJudge(url, "judge-model"), Cassette(cassette_path, "record"))
        try:
            recorded = _judged(recording, tasks, runs)
        finally:
            recording.close()
        asked = len(server.requests)
    assert asked == recording.requests > 0
    assert recorded["winrate"].metrics == {"WinRate": 100.0}
    assert recorded["winrate"].counts["wins"] == 2 * len(tasks)  # both orders of each pair
    assert recorded["ctooleval"].metrics["OpenEndedScore"] == pytest.approx(80.0)
    assert recorded["tooleyes"].metrics["AO"] == pytest.approx(80.0)  # answered within the limit
    with Cassette(cassette_path, "replay") as check:
        assert len(list(check.recorded_keys(JUDGE_TOOL))) == asked  # every question, once
    # the server is stopped: a question that reached it would fail
    replaying = RecordedJudge(OpenAIJudge(url, "judge-model"), Cassette(cassette_path, "replay"))
    try:
        replayed = _judged(replaying, tasks, runs)
    finally:
        replaying.close()
    assert replaying.requests == 0 and replaying.cassette.stats.live_calls == 0
    assert replaying.cassette.stats.hits == asked
    for name, result in recorded.items():
        assert replayed[name].metrics == result.metrics, name
        assert replayed[name].per_task == result.per_task, name
    # another judge model asks other questions: a miss in strict replay is a typed error
    other = RecordedJudge(OpenAIJudge(url, "another-model"), Cassette(cassette_path, "replay"))
    try:
        with pytest.raises(JudgeError, match="cassette miss"):
            win_rate(_traces(runs[0]), _traces(runs[1]), tasks, other)
    finally:
        other.close()


def test_winrate_command_replays_from_the_cassette(
    tasks: TaskSet, runs: tuple[Path, Path], tmp_path: Path
) -> None:
    task_file = tmp_path / "tasks.jsonl"
    task_file.write_text("".join(t.model_dump_json() + "\n" for t in tasks), encoding="utf-8")
    cassette_path = tmp_path / "judge.sqlite"
    args = ["winrate", str(runs[0]), "--reference", str(runs[1]), "--tasks", str(task_file)]
    env = {
        "TOOLGYM_JUDGE_MODEL": "judge-model",
        "TOOLGYM_JUDGE_CACHE": str(tmp_path / "verdicts.sqlite"),
        "TOOLGYM_JUDGE_CASSETTE": str(cassette_path),
        "COLUMNS": "200",
    }
    with serve(FakeOpenAI(judge_reply)) as server:
        url = server.base_url
        recorded = CliRunner().invoke(
            app, [*args, "--out", str(tmp_path / "a.json")], env={**env, "TOOLGYM_JUDGE_BASE_URL": url}
        )
        asked = len(server.requests)
    assert recorded.exit_code == 0, recorded.output
    assert "WinRate: 100.00" in recorded.output and asked == 2 * len(tasks)
    replay_env = {
        **env,
        "TOOLGYM_JUDGE_BASE_URL": url,
        "TOOLGYM_JUDGE_CASSETTE_MODE": "replay",
        "TOOLGYM_JUDGE_CACHE": str(tmp_path / "fresh-verdicts.sqlite"),  # no verdict cache to lean on
    }
    replayed = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "b.json")], env=replay_env)
    assert replayed.exit_code == 0, replayed.output
    assert (tmp_path / "a.json").read_text() == (tmp_path / "b.json").read_text()
    missing = CliRunner().invoke(app, args, env={k: v for k, v in env.items() if k != "TOOLGYM_JUDGE_MODEL"})
    assert missing.exit_code == 2 and "needs a judge" in missing.output


def test_answer_organisation_counts_the_turn_limit(tasks: TaskSet, tmp_path: Path) -> None:
    task = tasks[TASK_IDS[0]]
    call = task.golden[0].action
    assert isinstance(call, ToolCall)
    outputs: list[Action] = [call, call]  # the step limit comes before any answer
    trace = run_e2e(ToolSet(), tasks, task, outputs, tmp_path)
    assert trace.end is not None and trace.end.status == "truncated"
    with serve(FakeOpenAI(judge_reply)) as server:
        judge = RecordedJudge(OpenAIJudge(server.base_url, "judge-model"), Cassette(None, "live"))
        fixed = ToolEyesSuite(judge).score([trace], tasks, "fixed")
        compat = ToolEyesSuite(judge).score([trace], tasks, "compat")
    assert fixed.metrics["AO"] == 0.0  # the paper's p_AO: no answer within the limit
    assert compat.metrics["AO"] == pytest.approx(80.0)  # ToolEyes' code keeps p_AO at 1


def test_open_ended_without_a_judge_is_counted_not_scored(tasks: TaskSet, runs: tuple[Path, Path]) -> None:
    result = CToolEvalSuite().score(_traces(runs[0]), tasks, "fixed")
    assert "OpenEndedScore" not in result.metrics
    assert result.counts["open_ended_unscored"] == len(tasks)
    assert any("need a judge" in n for n in result.notes)


def test_preference_lines() -> None:
    assert parse_preference("Reason: x\nPreferred: B") == "B"
    assert parse_preference("Preferred: **tie**") == "tie"
    assert parse_preference("Preferred: a") == "A"
    assert parse_preference("I like the first one") is None
