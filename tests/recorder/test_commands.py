"""`toolgym record / verify / replay` end to end on the demo set and the mock-app sets."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from tests.cli_text import flat
from toolgym.cli import app
from toolgym.envs.demo import bundled_task_sets, demo_tasks_path
from toolgym.envs.task_sets import TaskSource
from toolgym.recorder.cassette import Cassette
from toolgym.recorder.golden import (
    EnvPool,
    GoldenManifest,
    TaskIndex,
    find_traces,
    replay_traces,
)
from toolgym.recorder.verify import verify_trace
from toolgym.tasks import TaskSet
from toolgym.tools import SchemaTool, ToolContext, ToolSet
from toolgym.toolservers.registry import builtin_tools
from toolgym.trace import read_trace

from .toolsets import changed_calculator

runner = CliRunner()


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_record_writes_golden_traces_cassette_and_manifest(demo_golden: Path) -> None:
    manifest = GoldenManifest.load(demo_golden)
    assert manifest is not None and manifest.cassette == "cassette.sqlite" and manifest.agent == "oracle"
    # the set by its one name, source and digest: no absolute path ties the folder to this venv
    demo = manifest.sets["demo"]
    assert isinstance(demo, TaskSource) and demo.registered and demo.source == "demo"
    assert demo.digest == sha(demo_tasks_path()) and "/" not in (demo_golden / "golden.json").read_text()
    traces = sorted((demo_golden / "demo").glob("*.jsonl"))
    assert len(traces) == len(TaskSet.load(demo_tasks_path()))
    for path in traces:
        trace = read_trace(path)
        assert trace.header.golden and trace.end is not None and trace.end.reward == 1.0
    with Cassette(demo_golden / "cassette.sqlite", mode="replay") as tape:
        assert {k["tool"] for k in tape.recorded_keys()} == {
            "OCR",
            "Calculator",
            "Solver",
            "Plot",
            "DrawBox",
            "AddText",
        }


def test_replay_command_makes_no_live_calls_and_byte_identical_traces(
    demo_golden: Path, tmp_path: Path
) -> None:
    before = sha(demo_golden / "cassette.sqlite")
    result = runner.invoke(app, ["replay", str(demo_golden), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "live tool calls: 0;" in result.output and "misses: 0" in result.output
    golden = sorted((demo_golden / "demo").glob("*.jsonl"))
    assert f"{len(golden)}/{len(golden)} byte-identical" in result.output
    for path in golden:
        assert (tmp_path / "demo" / path.name).read_bytes() == path.read_bytes()
    assert sha(demo_golden / "cassette.sqlite") == before


def poisoned_toolset(calls: list[str]) -> ToolSet:
    """The built-in tools' names, versions and schemas, but running one fails: proof that replay
    never reaches a tool."""

    def refuse(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        calls.append(canonical := repr(arguments))
        raise AssertionError(f"a live tool call during replay: {canonical}")

    return ToolSet(
        SchemaTool(
            t.name,
            t.parameters_schema(),
            refuse,
            description=t.description,
            returns=t.returns,
            category=t.category,
            mutates_state=t.mutates_state,
            version=t.version,
            backend=t.backend,
        )
        for t in builtin_tools()
    )


def test_hundred_replays_of_the_demo_set_are_byte_identical(demo_golden: Path, tmp_path: Path) -> None:
    traces = list(find_traces([demo_golden / "demo"]))
    golden = {p.name: p.read_bytes() for p in traces}
    calls: list[str] = []
    tools = poisoned_toolset(calls)
    index = TaskIndex.for_traces(demo_golden)
    with Cassette(demo_golden / "cassette.sqlite", mode="replay") as tape:
        pool = EnvPool(tools, tape)
        try:
            for _ in range(100):
                report = replay_traces(traces, tape, tmp_path, toolset=tools, index=index, pool=pool)
                assert report.identical == len(traces), [e for e in report.episodes if not e.identical]
                for episode in report.episodes:
                    assert episode.replayed is not None
                    assert episode.replayed.read_bytes() == golden[episode.golden.name]
        finally:
            pool.close()
        assert tape.stats.live_calls == 0 and tape.stats.misses == 0 and not calls
        tool_calls = sum(
            a["type"] == "tool_call" for p in traces for s in read_trace(p).steps for a in s.actions
        )
        assert tape.stats.hits == 100 * tool_calls


def test_mock_app_sets_replay_with_state_byte_identical(mock_golden: Path, tmp_path: Path) -> None:
    traces = list(find_traces([mock_golden]))
    assert any(s.state_diff for p in traces for s in read_trace(p).steps)  # writes are in there
    result = runner.invoke(app, ["replay", str(mock_golden), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "live tool calls: 0;" in result.output
    assert f"{len(traces)}/{len(traces)} byte-identical" in result.output


def test_verify_passes_on_unchanged_tools(demo_golden: Path, mock_golden: Path) -> None:
    # the whole demo set against its cassette, the mock sets and one demo trace against live tools
    from_tape = runner.invoke(
        app, ["verify", str(demo_golden), "--cassette", str(demo_golden / "cassette.sqlite")]
    )
    assert from_tape.exit_code == 0, from_tape.output
    assert "12 ok, 0 drifted" in from_tape.output
    live = runner.invoke(
        app, ["verify", str(mock_golden), str(demo_golden / "demo" / "receipt-change.seed0.jsonl")]
    )
    assert live.exit_code == 0, live.output


def test_verify_fails_a_golden_trace_cut_mid_line_and_names_file_and_line(
    demo_golden: Path, tmp_path: Path
) -> None:
    shutil.copytree(demo_golden, tmp_path / "g")
    trace = tmp_path / "g" / "demo" / "receipt-change.seed0.jsonl"
    data = trace.read_bytes()
    lines = data.splitlines(keepends=True)
    trace.write_bytes(data[: len(lines[0]) + len(lines[1]) + len(lines[2]) // 2])  # `head -c`: mid-line 3
    result = runner.invoke(app, ["verify", str(trace), "--cassette", str(tmp_path / "g" / "cassette.sqlite")])
    assert result.exit_code == 1, result.output
    out = " ".join(result.output.split())
    assert f"INCOMPLETE {trace}:3: incomplete trace: the file ends in the middle of line 3" in out
    assert "(1 steps checked)" in out and "0 ok, 1 drifted or failed" in out


def test_verify_catches_a_changed_tool_output_and_names_the_step(demo_golden: Path) -> None:
    trace = demo_golden / "demo" / "receipt-change.seed0.jsonl"
    result = runner.invoke(
        app, ["verify", str(trace), "--toolset", "tests.recorder.toolsets:changed_calculator"]
    )
    assert result.exit_code == 1, result.output
    out = result.output
    assert "DRIFT" in out and "step 1: identical" in out and "step 2: DRIFT" in out
    assert "step 2: observations[0].content" in out and "-6.5" in out and "+6.50" in out
    pool = EnvPool(changed_calculator())
    try:
        verdict = verify_trace(trace, pool, TaskIndex.for_traces(demo_golden))
    finally:
        pool.close()
    drift = verdict.first_drift
    assert drift is not None and (drift.step, drift.field, drift.expected, drift.got) == (
        2,
        "observations[0].content",
        "6.5",
        "6.50",
    )


def test_replay_miss_fails_loudly_with_the_nearest_keys(demo_golden: Path, tmp_path: Path) -> None:
    tape = tmp_path / "cassette.sqlite"
    shutil.copy(demo_golden / "cassette.sqlite", tape)
    with sqlite3.connect(tape) as conn:
        deleted = conn.execute("DELETE FROM entries WHERE key_json LIKE '%30.00 - 23.50%'").rowcount
    assert deleted == 1
    result = runner.invoke(
        app, ["replay", str(demo_golden / "demo"), "--cassette", str(tape), "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 1, result.output
    out = result.output
    assert "misses: 1" in out and "live tool calls: 0;" in out
    assert "no recording for Calculator" in out and "differs in arguments" in out
    assert "DIFFERENT" in out and "receipt-change" in out


def test_record_with_a_custom_agent_and_record_missing(tmp_path: Path) -> None:
    tasks = tmp_path / "solve.jsonl"
    TaskSet([TaskSet.load(demo_tasks_path())["solve-system"]]).dump(tasks)
    out = tmp_path / "g"
    base = ["record", "--tasks", str(tasks), "--out", str(out), "--protocol", "json"]
    result = runner.invoke(
        app, [*base, "--agent", "tests.recorder.agents:stumbling_oracle", "--mode", "live"]
    )
    assert result.exit_code == 0, result.output
    manifest = GoldenManifest.load(out)
    assert manifest is not None and manifest.cassette is None and manifest.agent == "stumbling-oracle"
    trace = read_trace(out / "solve" / "solve-system.seed0.jsonl")
    assert trace.header.protocol == "json" and trace.steps[0].error_kinds == ["format_error"]
    assert trace.end is not None and trace.end.reward == 1.0
    assert not (out / "cassette.sqlite").exists()
    first = runner.invoke(app, [*base, "--mode", "record_missing"])
    assert first.exit_code == 0 and "1 responses recorded, 0 replayed, 1 live calls" in first.output
    second = runner.invoke(app, [*base, "--mode", "record_missing"])
    assert second.exit_code == 0 and "0 responses recorded, 1 replayed, 0 live calls" in second.output
    bad = runner.invoke(app, [*base, "--mode", "replay"])
    assert bad.exit_code != 0
    missing = runner.invoke(app, [*base, "--agent", "tests.recorder.nowhere:agent"])
    assert missing.exit_code == 2 and "--agent" in missing.output
    replayed = runner.invoke(app, ["replay", str(out), "--out", str(tmp_path / "r")])
    assert replayed.exit_code == 0 and "1/1 byte-identical" in replayed.output, replayed.output


def test_record_with_a_scripted_agent(tmp_path: Path) -> None:
    task = TaskSet.load(demo_tasks_path())["solve-system"]
    tasks = tmp_path / "solve.jsonl"
    TaskSet([task]).dump(tasks)
    script = tmp_path / "script.jsonl"
    actions = [g.action.model_dump(mode="json") for g in task.golden]
    script.write_text(json.dumps({"task_id": task.id, "actions": actions}) + "\n", encoding="utf-8")
    out = tmp_path / "g"
    result = runner.invoke(
        app,
        [
            "record",
            "--tasks",
            str(tasks),
            "--out",
            str(out),
            "--agent",
            f"scripted:{script}",
            "--protocol",
            "openai",
        ],
    )
    assert result.exit_code == 0, result.output
    trace = read_trace(out / "solve" / "solve-system.seed0.jsonl")
    assert trace.header.agent == "scripted" and trace.end is not None and trace.end.reward == 1.0
    assert isinstance(trace.steps[0].raw, dict)  # an OpenAI assistant message
    replayed = runner.invoke(app, ["replay", str(out), "--out", str(tmp_path / "r")])
    assert replayed.exit_code == 0 and "1/1 byte-identical" in replayed.output, replayed.output
    script.write_text('{"task_id": "solve-system"}\n', encoding="utf-8")
    broken = runner.invoke(
        app, ["record", "--tasks", str(tasks), "--out", str(out), "--agent", f"scripted:{script}"]
    )
    # the script is read when the agent is named: a bad line is a bad --agent, before any episode
    assert broken.exit_code == 2 and "not a script line" in broken.output, broken.output


def test_a_faulted_golden_set_replays_byte_identical_with_zero_live_calls(tmp_path: Path) -> None:
    """`record --faults`: the headers name the plan, replay re-injects it outside the cassette."""
    from toolgym.envs.demo import mock_task_paths

    mtu = TaskSet.load(next(p for p in mock_task_paths() if p.stem == "mtu"))
    chosen = (
        "mtu-balance-002",
        "mtu-flight-chain-007",
        "mtu-home-chain-010",
        "mtu-transfer-011",
        "mtu-lock-014",
    )
    tasks = tmp_path / "mtu.jsonl"
    tasks.write_text("".join(mtu[t].model_dump_json() + "\n" for t in chosen))
    plan = tmp_path / "flaky.json"
    rules = [
        {"tools": "*", "kind": "outage", "steps": [2, 2]},
        {"kind": "http_503", "rate": 0.4},
        {"kind": "truncate", "rate": 0.3},
    ]
    plan.write_text(json.dumps({"rules": rules}))
    golden = tmp_path / "golden"
    result = runner.invoke(
        app, ["record", "--out", str(golden), "--tasks", str(tasks), "--faults", str(plan)]
    )
    assert result.exit_code == 0, result.output
    traces = sorted((golden / "mtu").glob("*.jsonl"))
    lines = [json.loads(line) for path in traces for line in path.read_text().splitlines()]
    assert all(r["env_config"]["faults"][0]["name"] == "flaky" for r in lines if r["record"] == "header")
    kinds = {f["kind"] for r in lines if r["record"] == "step" for f in r["faults"] or []}
    assert kinds == {"http_503", "truncate", "outage"}
    result = runner.invoke(app, ["replay", str(golden), "--out", str(tmp_path / "replayed")])
    assert result.exit_code == 0, result.output
    assert "live tool calls: 0;" in result.output and "misses: 0" in result.output
    assert f"{len(traces)}/{len(traces)} byte-identical" in result.output
    for path in traces:
        assert (tmp_path / "replayed" / "mtu" / path.name).read_bytes() == path.read_bytes()


def test_record_refuses_a_bad_fault_plan_before_writing(tmp_path: Path) -> None:
    for data in (
        {"rules": [{"kind": "http_503", "rate": 1.5}]},
        {"rules": [{"tools": "Calculater", "kind": "error"}]},
    ):
        plan = tmp_path / "bad.json"
        plan.write_text(json.dumps(data))
        out = tmp_path / "golden"
        result = runner.invoke(
            app, ["record", "--out", str(out), "--tasks", str(demo_tasks_path()), "--faults", str(plan)]
        )
        assert result.exit_code == 2, result.output
        assert not out.exists()


def test_tasks_take_bundled_set_names_as_run_does(tmp_path: Path) -> None:
    out = tmp_path / "g"
    recorded = runner.invoke(app, ["record", "--tasks", "teval", "--out", str(out)])
    assert recorded.exit_code == 0, recorded.output
    manifest = GoldenManifest.load(out)
    assert manifest is not None and set(manifest.sets) == {"teval"}
    traces = sorted((out / "teval").glob("*.jsonl"))
    assert traces and len(traces) == len(TaskSet.load(bundled_task_sets()["teval"]))
    verified = runner.invoke(app, ["verify", str(out), "--tasks", "teval"])
    assert verified.exit_code == 0, verified.output
    replayed = runner.invoke(app, ["replay", str(out), "--tasks", "teval", "--out", str(tmp_path / "r")])
    assert replayed.exit_code == 0 and f"{len(traces)}/{len(traces)} byte-identical" in replayed.output
    unknown = runner.invoke(app, ["record", "--tasks", "no-such-set", "--out", str(tmp_path / "x")])
    assert unknown.exit_code == 2 and "no such task set file or bundled set: no-such-set" in unknown.output


def test_record_refuses_a_task_whose_golden_chain_fails(tmp_path: Path) -> None:
    """Issue 36: a golden chain that fails where it does not say so is no golden task; record
    refuses it before any episode, in one line naming its file:line, id and failing call."""
    mtu = bundled_task_sets()["mtu"].read_text(encoding="utf-8").splitlines()
    transfer = next(line for line in mtu if "mtu-transfer-011" in line)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(transfer.replace('"123456", "source', '"999999", "source') + "\n", encoding="utf-8")
    result = runner.invoke(app, ["record", "--tasks", str(tasks), "--out", str(tmp_path / "golden")])
    assert result.exit_code == 2, result.output
    said = flat(result.output)
    assert f"{tasks}:1: mtu-transfer-011: golden call #0 transfer_funds(" in said
    assert "account '999999' not found" in said
    assert not (tmp_path / "golden").exists()


def oracle_runs_that_verify(out: Path, *options: str) -> list[Path]:
    """`toolgym run` of the oracle on two mtu tasks with `options` into `out`, which `toolgym verify`
    passes; the two traces."""
    args = ["run", "--tasks", "mtu", "--limit", "2", "--agent", "oracle", *options, "--out", str(out)]
    assert runner.invoke(app, args).exit_code == 0
    traces = sorted(out.rglob("*.seed0.jsonl"))
    verified = runner.invoke(app, ["verify", str(out), "--tasks", "mtu"])
    assert len(traces) == 2 and verified.exit_code == 0 and "2 ok" in verified.output, verified.output
    return traces


def test_verify_re_runs_a_trace_in_the_reward_mode_its_header_names(tmp_path: Path) -> None:
    """A run with dense rewards is verified with them (before, verify re-ran it under final rewards
    and reported its milestone progress as drift); a header naming another mode drifts, one naming
    a mode no env takes is a one-line error."""
    out = tmp_path / "runs"
    traces = oracle_runs_that_verify(out, "--reward-mode", "milestones")
    assert read_trace(traces[0]).header.env_config["reward_mode"] == "milestones"

    lines = traces[0].read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    for value, says in (("final", "milestone_progress"), ("dense", "'reward_mode' must be one of")):
        header["env_config"]["reward_mode"] = value
        traces[0].write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
        verified = runner.invoke(app, ["verify", str(out), "--tasks", "mtu"])
        assert verified.exit_code == 1 and says in flat(verified.output), verified.output
        assert "1 ok, 1 drifted or failed" in flat(verified.output)


def test_verify_re_runs_a_strict_run_strictly(tmp_path: Path) -> None:
    """`toolgym run --strict-arguments`: a number for a string parameter was an argument_error.
    Its header says the run was strict, so verify re-runs it so and finds it identical (before,
    verify coerced the number and reported the error gone as drift)."""
    script = tmp_path / "script.jsonl"
    call = {"type": "tool_call", "name": "get_account_balance", "arguments": {"account_number": 123456}}
    answer = {"type": "final_answer", "text": "Account 123456 has a balance of $4,825.50."}
    script.write_text(json.dumps({"task_id": "mtu-balance-002", "actions": [call, answer]}) + "\n")
    out = tmp_path / "runs"
    args = ["run", "--tasks", "mtu", "--task-id", "mtu-balance-002", "--agent", f"scripted:{script}"]
    assert runner.invoke(app, [*args, "--strict-arguments", "--out", str(out)]).exit_code == 0
    (trace_path,) = out.rglob("*.seed0.jsonl")
    trace = read_trace(trace_path)
    assert trace.header.env_config["strict_arguments"] is True
    assert trace.steps[0].error_kinds == ["argument_error"]
    verified = runner.invoke(app, ["verify", str(out), "--tasks", "mtu"])
    assert verified.exit_code == 0 and "1 ok" in verified.output, verified.output

    lines = trace_path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    for value, says in ((False, "argument_error"), ("yes", "'strict_arguments' must be true or false")):
        header["env_config"]["strict_arguments"] = value
        trace_path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
        verified = runner.invoke(app, ["verify", str(out), "--tasks", "mtu"])
        assert verified.exit_code == 1 and says in flat(verified.output), verified.output


def test_verify_re_records_a_step_mode_run_and_names_a_changed_step(tmp_path: Path) -> None:
    """`toolgym run --mode step` writes predictions that never ran: verify re-records them on the
    task's golden chain and compares them step by step (before, it stepped them through an
    end-to-end env and reported every observation as drift). A changed step is named; a trace
    over another golden chain than the task's is a one-line error."""
    out = tmp_path / "runs"
    traces = oracle_runs_that_verify(out, "--mode", "step")
    assert read_trace(traces[0]).header.env_config["mode"] == "teacher_forced"

    lines = traces[0].read_text(encoding="utf-8").splitlines()
    step = json.loads(lines[1])
    step["error_kinds"] = ["format_error"]
    traces[0].write_text("\n".join([lines[0], json.dumps(step), *lines[2:]]) + "\n", encoding="utf-8")
    verified = runner.invoke(app, ["verify", str(out), "--tasks", "mtu"])
    assert verified.exit_code == 1 and "step 1: error_kinds" in flat(verified.output), verified.output

    header = json.loads(lines[0])
    header["env_config"]["golden_steps"] = 7
    traces[0].write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    verified = runner.invoke(app, ["verify", str(out), "--tasks", "mtu"])
    assert verified.exit_code == 1 and "on the task's own golden chain only" in flat(verified.output)
