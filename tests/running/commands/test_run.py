"""`toolgym run --config` and `--print-config`: a committed TOML reproduces a run byte for byte,
run.json records the resolved configuration and is itself a config file, and printing the
configuration runs nothing. In process (typer's runner): the command is the CLI's own."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.cli_text import flat
from toolgym.cli import app
from toolgym.running.trials import RunSummary

TASKS = ["--tasks", "mtu", "--task-id", "mtu-balance-002", "--task-id", "mtu-transfer-011"]


def traces(run: Path) -> dict[str, bytes]:
    return {p.relative_to(run).as_posix(): p.read_bytes() for p in sorted(run.rglob("*.jsonl"))}


def test_a_committed_config_file_reproduces_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    printed = runner.invoke(app, ["run", "--print-config", *TASKS, "--trials", "2", "--out", "runs/a"])
    assert printed.exit_code == 0, printed.output
    assert not (tmp_path / "runs").exists()  # printing runs nothing
    assert 'out = "runs/a"' in printed.stdout and "trials = 2" in printed.stdout
    experiment = tmp_path / "experiment"
    experiment.mkdir()
    (experiment / "run.toml").write_text(printed.stdout, encoding="utf-8")

    first = runner.invoke(app, ["run", "--config", str(experiment / "run.toml")])
    assert first.exit_code == 0, first.output
    run_a = experiment / "runs" / "a"  # the file's paths are relative to its folder
    summary = RunSummary.load(run_a)
    assert len(summary.episodes) == 4 and summary.run_config is not None
    assert summary.run_config["trials"] == 2 and "out" not in summary.run_config  # what ran, not where
    assert summary.task_sources[0]["source"] == "mtu" and summary.task_sources[0]["registered"]

    # the same file into another folder, and the run's own run.json as the config: the same bytes
    again = runner.invoke(
        app, ["run", "--config", str(experiment / "run.toml"), "--out", str(tmp_path / "b")]
    )
    from_json = runner.invoke(app, ["run", "--config", str(run_a / "run.json"), "--out", str(tmp_path / "c")])
    assert again.exit_code == 0 and from_json.exit_code == 0, again.output + from_json.output
    assert traces(run_a) == traces(tmp_path / "b") == traces(tmp_path / "c") != {}
    # an option given beside --config wins, and the resolved configuration says so
    shown = runner.invoke(
        app, ["run", "--config", str(experiment / "run.toml"), "--trials", "5", "--print-config"]
    )
    assert "trials = 5" in shown.stdout and "mtu-balance-002" in shown.stdout


def test_config_mistakes_are_one_line_and_leave_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.toml").write_text('tasks = ["mtu"]\n[llm]\ntimeout = -5\n', encoding="utf-8")
    for args, message in [
        (["--config", "run.toml"], "run.toml: llm.timeout: Input should be greater than 0 (got -5)"),
        (["--agent", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--timeout", "-5"],
         "Invalid value for '--timeout': Input should be greater than 0 (got -5.0)"),
        (["--config", "none.toml"], "none.toml: No such file or directory"),
    ]:  # fmt: skip
        result = CliRunner().invoke(app, ["run", *args, "--out", "x"])
        assert result.exit_code == 2, result.output
        assert message in flat(result.output), result.output
        assert not (tmp_path / "x").exists()


def test_run_json_keeps_the_resolved_configuration_and_the_task_sources(tmp_path: Path) -> None:
    tasks = tmp_path / "mine.jsonl"
    source = Path(__file__).resolve().parents[3] / "fixtures" / "mock_tasks" / "mtu.jsonl"
    tasks.write_text(source.read_text(encoding="utf-8").splitlines(keepends=True)[0], encoding="utf-8")
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", "--tasks", str(tasks), "--preset", "mtu", "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert data["run_config"]["preset"] == "mtu" and data["run_config"]["tasks"] == [str(tasks)]
    [recorded] = data["task_sources"]
    assert recorded["source"] == str(tasks) and not recorded["registered"]
    import hashlib

    assert recorded["digest"] == hashlib.sha256(tasks.read_bytes()).hexdigest()
    assert recorded["format"] == "toolgym" and recorded["name"] == "mine"


# ---- Ctrl-C stops spending -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("placement", "held_at_once", "answer_after_the_signal"),
    [
        (["--concurrency", "4"], 4, True),
        (["--workers", "2"], 2, True),
        (["--workers", "2", "--ray"], 2, False),
    ],
    ids=["threads", "processes", "ray"],
)
def test_ctrl_c_sends_no_model_request_after_the_signal_and_counts_what_was_spent(
    tmp_path: Path, placement: list[str], held_at_once: int, answer_after_the_signal: bool
) -> None:
    """Each episode in flight (on threads, worker processes or Ray actors) gets a quick first
    answer (a tool call), then its second request is held by the server. Ctrl-C; once the run says
    it is stopping, the held answers are released: no episode may go on to send its next request,
    and the first answers' tokens are counted, in process as on the workers. (Ray's actors hear of
    the cancel a driver round trip later: there the held answers never come, the actors abandon
    them.)"""
    if "--ray" in placement:
        pytest.importorskip("ray")
    import signal
    import threading
    import time

    from tests.models.fake_openai import FakeOpenAI, Reply, calls, serve
    from tests.running.test_commands import WAIT_S, llm_args, start, wait_for

    release = threading.Event()
    arrivals: list[float] = []
    held = 0
    lock = threading.Lock()

    def script(body: Mapping[str, Any]) -> Reply:
        nonlocal held
        with lock:
            arrivals.append(time.monotonic())
        messages = body["messages"]
        if not any(m["role"] == "assistant" for m in messages):
            return calls(("get_weather", {"city": "Paris"}))
        with lock:
            held += 1
        release.wait(WAIT_S)
        return calls(("get_weather", {"city": "Rome"}))  # would ask for a third turn

    out = tmp_path / "run"
    fake = FakeOpenAI(script, models=("fake-model",))
    with serve(fake):
        proc = start(*llm_args(fake, out, "--tasks", "mtu", *placement), cwd=tmp_path)
        wait_for(lambda: held == held_at_once, "a second request held in each episode in flight")
        signalled = time.monotonic()
        proc.send_signal(signal.SIGINT)
        assert proc.stderr is not None
        while "SIGINT: stopping" not in (said := proc.stderr.readline()):  # the run took the signal
            assert said, "the run ended without saying it stops"  # (Ray warns on stderr first)
        if answer_after_the_signal:
            release.set()  # the held answers arrive now: nothing may follow them
        stdout, stderr = proc.communicate(timeout=WAIT_S)
        after = [t for t in arrivals if t > signalled]
        release.set()
    assert proc.returncode == 130, stdout + stderr
    assert "Traceback" not in stdout + stderr
    assert after == [] and len(arrivals) == 2 * held_at_once
    stopped = RunSummary.load(out)
    assert stopped.stopped == "interrupted by SIGINT" and stopped.episodes == []
    # the answered requests are the run's spending, though no episode finished; on workers the
    # episodes of their batches that never started are cancelled too, with nothing spent
    spent = [c["usage"] for c in stopped.cancelled if "usage" in c]
    assert len(spent) == held_at_once and all(u["requests"] == 1 for u in spent)
    assert stopped.usage["requests"] == held_at_once and stopped.usage["prompt_tokens"] > 0
    assert (
        f"resume with: toolgym run --config {out / 'run.json'} --out {out} {shlex.join(placement)}" in stdout
    )


def test_a_resumed_run_counts_what_its_cancelled_first_attempt_spent(tmp_path: Path) -> None:
    """Ctrl-C while the episode waits for its second answer: run.json lists it as cancelled with the
    first answer's tokens. The resume runs it again from the start, and the run's usage counts
    both attempts: every answer the run took, once."""
    import signal
    import threading

    from tests.models.fake_openai import FakeOpenAI, Reply, calls, serve, text
    from tests.running.test_commands import WAIT_S, llm_args, start, toolgym, wait_for

    holding, release = threading.Event(), threading.Event()
    held = 0

    def script(body: Mapping[str, Any]) -> Reply:
        nonlocal held
        if not any(m["role"] == "assistant" for m in body["messages"]):
            return calls(("get_weather", {"city": "Paris"}))
        if holding.is_set():  # the first attempt: its second answer never comes in time
            held += 1
            release.wait(WAIT_S)
        return text("It is sunny in Paris.")

    out = tmp_path / "run"
    holding.set()
    with serve(FakeOpenAI(script, models=("fake-model",))) as fake:
        proc = start(*llm_args(fake, out, "--tasks", "mtu", "--task-id", "mtu-weather-001"), cwd=tmp_path)
        wait_for(lambda: held == 1, "the episode's second request held")
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=WAIT_S)
        assert proc.returncode == 130, stdout + stderr
        [cut] = RunSummary.load(out).cancelled
        assert cut["usage"]["requests"] == 1 and cut["usage"]["prompt_tokens"] > 0
        holding.clear()
        release.set()
        [line] = [line for line in stdout.splitlines() if line.startswith("resume with: ")]
        resumed = toolgym(*shlex.split(line.removeprefix("resume with: "))[1:], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    run = RunSummary.load(out)
    [again] = run.episodes
    assert run.cancelled == [] and again.usage is not None and again.usage["requests"] == 2
    for count in ("requests", "prompt_tokens", "completion_tokens", "total_tokens"):
        assert run.usage[count] == again.usage[count] + cut["usage"][count]
    assert run.earlier_attempts == cut["usage"]  # the first attempt, kept across the resume
    stored = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert stored["usage"] == run.usage and stored["usage"]["requests"] == 3


IMPATIENT = """
import os, signal, time
from toolgym.actions import FinalAnswer

class Impatient:  # no `name`: the run calls it by its class name
    def start(self, task, observation, info):
        pass
    def act(self, observation, info):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C ...
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGINT)  # ... and Ctrl-C again
        time.sleep(30)
        return FinalAnswer(text="too late")

def make(protocol):
    return Impatient()
"""


def test_a_second_ctrl_c_still_writes_why_the_run_stopped_and_how_to_resume(tmp_path: Path) -> None:
    from tests.running.test_commands import WAIT_S, start

    (tmp_path / "impatient.py").write_text(IMPATIENT, encoding="utf-8")
    out = tmp_path / "run"
    proc = start("run", "--agent", "impatient:make", "--tasks", "demo", "--out", str(out), cwd=tmp_path)
    stdout, stderr = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 130, stdout + stderr
    assert "Traceback" not in stderr
    stopped = RunSummary.load(out)
    assert stopped.stopped == "interrupted by SIGINT" and len(stopped.cancelled) == 1
    assert stopped.resume == f"toolgym run --config {out / 'run.json'} --out {out}"
    assert f"resume with: {stopped.resume}" in stdout


STOPPER = """
import os, signal
from toolgym.envs.agents import OracleAgent

class Stopper(OracleAgent):  # the oracle, who presses Ctrl-C as the task STOP_AT starts
    name = "stopper"
    def start(self, task, observation, info):
        super().start(task, observation, info)
        if task.id == os.environ.get("STOP_AT"):
            os.kill(os.getpid(), signal.SIGINT)

def make(protocol):
    return Stopper(protocol)
"""


def test_the_printed_resume_command_finishes_a_stopped_run_as_if_never_stopped(tmp_path: Path) -> None:
    """Ctrl-C in the middle of a run; the command it prints, run as printed, finishes the run: the
    traces and run.json are the bytes of a run that was never stopped."""

    from tests.running.test_commands import cli_env, toolgym

    (tmp_path / "stopper.py").write_text(STOPPER, encoding="utf-8")
    args = ["run", "--agent", "stopper:make", "--tasks", "mtu", "--trials", "2", "--limit", "1:7"]
    stopped = toolgym(*args, "--out", "stopped", cwd=tmp_path, env=cli_env(STOP_AT="mtu-door-003"))
    assert stopped.returncode == 130, stopped.stdout + stopped.stderr
    left = RunSummary.load(tmp_path / "stopped")
    assert left.stopped == "interrupted by SIGINT" and 0 < len(left.episodes) < 6
    [line] = [line for line in stopped.stdout.splitlines() if line.startswith("resume with: ")]
    command = shlex.split(line.removeprefix("resume with: "))
    run = tmp_path / "stopped"
    assert command == ["toolgym", "run", "--config", str(run / "run.json"), "--out", str(run)]

    resumed = toolgym(*command[1:], cwd=tmp_path)
    never_stopped = toolgym(*args, "--out", "whole", cwd=tmp_path)
    assert resumed.returncode == 0 and never_stopped.returncode == 0, resumed.stdout + never_stopped.stdout
    assert traces(tmp_path / "stopped") == traces(tmp_path / "whole") != {}
    assert len(traces(tmp_path / "whole")) == 6
    assert (tmp_path / "stopped" / "run.json").read_bytes() == (tmp_path / "whole" / "run.json").read_bytes()


def test_strict_arguments_refuse_a_number_for_a_string_parameter(tmp_path: Path) -> None:
    call = {"type": "tool_call", "name": "get_account_balance", "arguments": {"account_number": 123456}}
    answer = {"type": "final_answer", "text": "$4,825.50"}
    script = tmp_path / "script.jsonl"
    script.write_text(
        json.dumps({"task_id": "mtu-balance-002", "actions": [call, answer]}) + "\n", encoding="utf-8"
    )
    kinds = {}
    for strict in (False, True):
        out = tmp_path / f"run-{strict}"
        args = ["run", "--agent", f"scripted:{script}", "--tasks", "mtu", "--task-id", "mtu-balance-002"]
        result = CliRunner().invoke(app, [*args, "--out", str(out), *(["--strict-arguments"] * strict)])
        assert result.exit_code == 0, result.output
        [trace] = out.rglob("*.jsonl")
        first_step = json.loads(trace.read_text(encoding="utf-8").splitlines()[1])
        kinds[strict] = (first_step["observations"][0].get("error") or {}).get("kind")
        assert RunSummary.load(out).settings.get("strict_arguments", False) is strict
    assert kinds == {False: None, True: "argument_error"}


def test_reward_mode_milestones_runs_dense_rewards_and_records_them(tmp_path: Path) -> None:
    out = tmp_path / "dense"
    args = ["run", "--tasks", "mtu", "--task-id", "mtu-transfer-011", "--reward-mode", "milestones"]
    result = CliRunner().invoke(app, [*args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert RunSummary.load(out).settings["reward_mode"] == "milestones"
    [trace] = out.rglob("*.jsonl")
    lines = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["env_config"]["reward_mode"] == "milestones"
    assert lines[-1]["scores"]["milestone_progress"] == 1.0 and len(lines[-1]["milestones"]) == 4
    plain = tmp_path / "plain"
    assert CliRunner().invoke(app, [*args[:-2], "--out", str(plain)]).exit_code == 0
    [trace] = plain.rglob("*.jsonl")
    lines = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    assert "reward_mode" not in lines[0]["env_config"] and "milestones" not in lines[-1]
    bad = CliRunner().invoke(app, [*args[:-1], "dense", "--out", str(tmp_path / "bad")])
    assert bad.exit_code == 2 and "--reward-mode" in flat(bad.output) and "dense" in flat(bad.output)


NAMELESS = """
from toolgym.actions import FinalAnswer

class Nameless:  # no `name`
    def start(self, task, observation, info):
        pass
    def act(self, observation, info):
        return FinalAnswer(text="58")

def make(protocol):
    return Nameless()

def make_without_protocol():
    return Nameless()
"""


def test_a_newcomers_agent_mistakes_are_one_line_and_a_missing_name_is_the_class_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # the current directory is importable, as for the command
    (tmp_path / "nameless.py").write_text(NAMELESS, encoding="utf-8")
    task = ["--tasks", "demo", "--task-id", "fish-oil-days"]
    bad = CliRunner().invoke(app, ["run", "--agent", "nameless:make_without_protocol", *task, "--out", "bad"])
    assert bad.exit_code == 2 and not (tmp_path / "bad").exists()
    said = flat(bad.output)
    assert "make_without_protocol() cannot take the env's protocol" in said, said
    good = CliRunner().invoke(app, ["run", "--agent", "nameless:make", *task, "--out", "good"])
    assert good.exit_code == 0, good.output
    [trace] = (tmp_path / "good").rglob("*.jsonl")
    assert json.loads(trace.read_text(encoding="utf-8").splitlines()[0])["agent"] == "Nameless"


def test_a_task_whose_golden_chain_fails_is_refused_before_any_episode(tmp_path: Path) -> None:
    """Issue 36: every agent would score 0 on a task whose own golden chain fails where it does
    not say so; run refuses it in one line (file:line, task id, the failing call), any agent."""
    mtu = (Path(__file__).resolve().parents[3] / "fixtures" / "mock_tasks" / "mtu.jsonl").read_text()
    transfer = next(line for line in mtu.splitlines() if "mtu-transfer-011" in line)
    tasks = tmp_path / "mine.jsonl"
    tasks.write_text(transfer.replace('"123456", "source', '"999999", "source') + "\n", encoding="utf-8")
    script = tmp_path / "script.jsonl"  # an agent of your own: refused all the same
    script.write_text(
        json.dumps({"task_id": "mtu-transfer-011", "actions": [{"type": "final_answer", "text": "?"}]})
    )
    for agent in ["oracle", f"scripted:{script}"]:
        result = CliRunner().invoke(
            app, ["run", "--tasks", str(tasks), "--agent", agent, "--out", str(tmp_path / "x")]
        )
        assert result.exit_code == 2, result.output
        said = flat(result.output)
        assert f"{tasks}:1: mtu-transfer-011: golden call #0 transfer_funds(" in said, said
        assert "account '999999' not found" in said
        assert not (tmp_path / "x").exists()
