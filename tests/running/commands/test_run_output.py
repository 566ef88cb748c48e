"""What `toolgym run` prints while it runs: off a terminal (CI, a pipe) plain lines on stderr,
a model's loading and each turn (episode, step, tokens, seconds per turn, ETA), a "still working"
line whenever the interval passes without one, and the last progress line once; worker processes
(`--workers`) write their model's lines to the stderr they share with the driver.

The intervals here are made short (TOOLGYM_PROGRESS_EVERY) so a test waits for no 10 s line; only
the order of lines is asserted, never how long anything took."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.models.real_model import needs_model
from tests.running.test_commands import cli_env, toolgym
from toolgym.models.activity import Activity, doing
from toolgym.running.commands.run_output import RunProgress, placement_options
from toolgym.running.config import RunConfig

HF_RUN = ["run", "--agent", "hf:smollm2", "--tasks", "teval", "--limit", "1", "--max-steps", "2"]
HF_RUN += ["--max-tokens", "32", "--threads", "1"]


def index_of(lines: list[str], start: str) -> int:
    return next(i for i, line in enumerate(lines) if line.startswith(start))


def test_a_long_turn_is_said_while_it_runs_and_the_last_line_once(capsys: pytest.CaptureFixture[str]) -> None:
    """The heartbeat names the turn under way (its episode and step) before the turn ends; the
    turn's end says its tokens; the final progress line is printed once (it was printed twice)."""
    seen = ""
    with RunProgress(2, every_s=0.2, turns_per_item=3) as progress:
        with doing(Activity("turn", "m", step=1)) as turn:
            deadline = time.monotonic() + 60  # a bound for a loaded machine, not a measurement
            while "still working" not in seen and time.monotonic() < deadline:
                time.sleep(0.05)
                seen += capsys.readouterr().err
            turn.prompt_tokens, turn.completion_tokens = 500, 16
        progress.advance()
        progress.advance()
    captured = capsys.readouterr()
    lines = (seen + captured.err).splitlines()
    assert captured.out == ""  # stdout is for the command's results (--json)
    assert index_of(lines, "still working: episode 1/2, step 1, ") < index_of(lines, "turn: ")
    assert lines[index_of(lines, "turn: ")].startswith("turn: episode 1/2, step 1 (500+16 tokens), ")
    assert [line for line in lines if line.startswith("progress: 2/2 episodes")] == [lines[-1]]


def test_the_resume_command_keeps_the_thread_count() -> None:
    assert placement_options(RunConfig(agent="hf:smollm2", threads=2)) == ["--threads", "2"]


@needs_model
def test_a_model_run_off_a_terminal_says_what_it_does_before_the_episode_ends(tmp_path: Path) -> None:
    """A real run of the real model, its output in pipes: the model's loading and a line naming
    the turn under way come before the episode's end; the JSON alone on stdout; the last line once."""
    result = toolgym(
        *HF_RUN,
        "--json",
        "--out",
        str(tmp_path / "run"),
        cwd=tmp_path,
        env=cli_env(TOOLGYM_PROGRESS_EVERY="0.2"),
    )
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)["episodes"]) == 1
    lines = result.stderr.splitlines()
    episode_end = index_of(lines, "progress: 1/1 episodes")
    assert index_of(lines, "model: loading SmolLM2") < index_of(lines, "still working: episode 1/1, step 1 (")
    assert index_of(lines, "still working: episode 1/1, step 1 (") < index_of(
        lines, "turn: episode 1/1, step 1 ("
    )
    assert index_of(lines, "turn: episode 1/1, step 1 (") < episode_end
    assert sum(line.startswith("progress: 1/1 episodes") for line in lines) == 1


@needs_model
def test_a_worker_process_says_what_its_model_does(tmp_path: Path) -> None:
    """--workers: the model loads and generates in a worker process, whose lines reach the
    driver's stderr before the episode is back."""
    result = toolgym(
        *HF_RUN, "--workers", "2", "--out", str(tmp_path / "run"), cwd=tmp_path,
        env=cli_env(TOOLGYM_PROGRESS_EVERY="0.2"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = [
        line.split(": ", 1)[1] if line.startswith("worker ") else line for line in result.stderr.splitlines()
    ]
    episode_end = index_of(lines, "progress: 1/1 episodes")
    assert index_of(lines, "loading SmolLM2") < index_of(lines, "still working: step 1 (") < episode_end
