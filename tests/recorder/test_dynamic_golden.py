"""A world that moves under the recorder: a cassette records `tests.dynamic_tasks`'s episode and
replays it strictly (zero live calls, no misses: the env's own `wait` and `current_time` run, the
app calls come from the cassette, the events fire again) to the same bytes; `toolgym record /
replay / verify` do the same at the verbosity the header names, and refuse one they do not know."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.cli_text import flat
from tests.dynamic_tasks import LUNCH_ID, lunch_task, write_dynamic_set
from toolgym.cli import app
from toolgym.envs.agents import OracleAgent
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.recorder.cassette import Cassette
from toolgym.recorder.golden import TraceAgent
from toolgym.toolservers.registry import default_toolset
from toolgym.trace import read_trace

runner = CliRunner()
TRACE = f"{LUNCH_ID}.seed0.jsonl"


def test_a_cassette_replays_a_world_that_moves_with_no_live_call(tmp_path: Path) -> None:
    task = lunch_task()
    with Cassette(tmp_path / "tape.sqlite", mode="record") as tape:
        env = ToolEnv(default_toolset(), [task], cassette=tape)
        recorded = run_episode(env, OracleAgent(env.protocol), task, seed=0, trace_dir=tmp_path / "recorded")
        env.close()
        assert tape.stats.live_calls == 1  # send_message; the env's wait and current_time are never recorded
    assert recorded.trace_path is not None
    trace = read_trace(recorded.trace_path)
    assert {e.get("id") for s in trace.steps for e in s.events or []} == {
        "nudge",
        "reply",
        "ping",
        "quarter-past",
    }
    with Cassette(tmp_path / "tape.sqlite", mode="replay") as tape:
        env = ToolEnv(default_toolset(), [task], cassette=tape)
        replayed = run_episode(env, TraceAgent(trace), task, seed=0, trace_dir=tmp_path / "replayed")
        env.close()
        assert tape.stats.live_calls == 0 and tape.stats.misses == 0 and tape.stats.hits == 1
    assert replayed.trace_path is not None
    assert replayed.trace_path.read_bytes() == recorded.trace_path.read_bytes()


@pytest.mark.parametrize("verbosity", ["medium", "low", "high"])
def test_record_replay_and_verify_a_world_that_moves(tmp_path: Path, verbosity: str) -> None:
    tasks = write_dynamic_set(tmp_path / "tasks")
    golden = tmp_path / "golden"
    result = runner.invoke(
        app, ["record", "--out", str(golden), "--tasks", str(tasks), "--notifications", verbosity]
    )
    assert result.exit_code == 0, result.output
    path = golden / "dynamic" / TRACE
    header = read_trace(path).header
    assert header.env_config.get("notifications") == (None if verbosity == "medium" else verbosity)
    result = runner.invoke(app, ["replay", str(golden), "--out", str(tmp_path / "replayed")])
    assert result.exit_code == 0, result.output
    assert "live tool calls: 0;" in result.output and "misses: 0" in result.output
    assert "1/1 byte-identical" in result.output
    assert (tmp_path / "replayed" / "dynamic" / TRACE).read_bytes() == path.read_bytes()
    result = runner.invoke(app, ["verify", str(golden)])
    assert result.exit_code == 0, result.output


def test_a_header_at_another_verbosity_or_a_bad_one_fails_replay_and_verify(tmp_path: Path) -> None:
    """Replayed at the header's verbosity, a trace whose header was changed to another one no
    longer matches (verify names the step's events), and one no env takes is a one-line error."""
    tasks = write_dynamic_set(tmp_path / "tasks")
    golden = tmp_path / "golden"
    assert runner.invoke(app, ["record", "--out", str(golden), "--tasks", str(tasks)]).exit_code == 0
    path = golden / "dynamic" / TRACE
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    for value, says in (("high", "events"), ("loud", "notifications")):
        header["env_config"]["notifications"] = value
        path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
        replayed = runner.invoke(app, ["replay", str(golden), "--out", str(tmp_path / value)])
        assert replayed.exit_code != 0 and "0/1 byte-identical" in replayed.output
        verified = runner.invoke(app, ["verify", str(golden)])
        assert verified.exit_code == 1 and says in flat(verified.output), verified.output


def test_record_refuses_a_verbosity_no_env_takes_before_writing(tmp_path: Path) -> None:
    out = tmp_path / "golden"
    tasks = write_dynamic_set(tmp_path / "tasks")
    result = runner.invoke(
        app, ["record", "--out", str(out), "--tasks", str(tasks), "--notifications", "loud"]
    )
    assert (
        result.exit_code == 2 and "--notifications" in flat(result.output) and "loud" in flat(result.output)
    )
    assert not out.exists()
