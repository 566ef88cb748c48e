"""`toolgym run / eval / report` through the real command line, in a subprocess: any agent,
Ctrl-C and SIGTERM on a run driving a slow local model server, resume, kill -9 checkpoints,
preflight, the circuit breaker, CI output, eval's trace selection and stale results, and the
README's everyday loop and example agent as written."""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]  # in the dev install (accelerate and trl need it)
import pytest

from tests.models.fake_openai import FakeOpenAI, Fault, Reply, calls, serve, text
from toolgym.envs.demo import demo_tasks_path, mock_task_paths
from toolgym.envs.rollouts import STAGING_PREFIX, staging_root
from toolgym.files import FILES_PREFIX, FileStore, owned_prefix
from toolgym.running.trials import RunSummary, run_trials
from toolgym.tasks import TaskSet
from toolgym.toolservers.registry import default_toolset

REPO = Path(__file__).resolve().parents[2]
MTU_TASKS = 19  # the bundled mtu set
WAIT_S = 120.0  # an upper bound for a wait on a busy machine, never a measured figure


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "COLUMNS")}
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


def toolgym_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "toolgym.cli", *args]


def toolgym(*args: str, cwd: Path, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real command, its output in pipes (not a terminal, as in CI)."""
    return subprocess.run(
        toolgym_argv(*args), cwd=cwd, env=dict(env or cli_env()), capture_output=True, text=True, timeout=600
    )


def start(*args: str, cwd: Path, env: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        toolgym_argv(*args),
        cwd=cwd,
        env=dict(env or cli_env()),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def assert_no_traceback(*outputs: str) -> None:
    for output in outputs:
        assert "Traceback" not in output and 'File "' not in output, output


def answer_at_once(body: Mapping[str, Any]) -> Reply:
    return text("done")


def llm_args(fake: FakeOpenAI, out: Path, *extra: str) -> list[str]:
    return [
        "run",
        "--agent",
        "llm",
        "--base-url",
        fake.base_url,
        "--model",
        "fake-model",
        "--out",
        str(out),
        *extra,
    ]


def resume_line(output: str) -> list[str]:
    """The printed resume command, as arguments for this interpreter."""
    line = next(line for line in output.splitlines() if line.startswith("resume with: "))
    words = shlex.split(line.removeprefix("resume with: "))
    assert words[0] == "toolgym"
    return words[1:]


def summary(out: Path) -> RunSummary:
    return RunSummary.load(out)


# ---- cancel and resume -------------------------------------------------------------------------
def test_ctrl_c_stops_a_parallel_run_and_the_printed_command_resumes_it(tmp_path: Path) -> None:
    out = tmp_path / "run"
    fake = FakeOpenAI(answer_at_once, reply_delay_s=60.0, models=("fake-model",))
    with serve(fake):
        proc = start(*llm_args(fake, out, "--tasks", "mtu", "--concurrency", "4"), cwd=tmp_path)
        wait_for(lambda: fake.in_flight == 4, "four requests in flight")
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=WAIT_S)  # long before the 60 s replies
        assert proc.returncode == 130, stdout + stderr
        assert_no_traceback(stdout, stderr)
        stopped = summary(out)
        assert stopped.stopped == "interrupted by SIGINT" and stopped.episodes == []
        assert len(stopped.cancelled) == 4  # the four in flight, marked
        assert stopped.resume is not None and "--out" in stopped.resume
        assert "stopped: interrupted by SIGINT" in stdout
        requests_before = len(fake.requests)
        assert requests_before == 4  # no episode started after the signal

        fake.reply_delay_s = 0.0
        resumed = toolgym(*resume_line(stdout), cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        done = summary(out)
        assert len(done.episodes) == MTU_TASKS and done.stopped is None and done.cancelled == []
        assert done.resume is None
        assert len(fake.requests) == requests_before + MTU_TASKS

        # the same command again: every episode is kept, none runs
        again = toolgym(*resume_line(stdout), cwd=tmp_path)
        assert again.returncode == 0 and len(fake.requests) == requests_before + MTU_TASKS

        # another config into the same folder is refused, in one line, unless --overwrite
        other = toolgym(*llm_args(fake, out, "--tasks", "mtu", "--temperature", "0.5"), cwd=tmp_path)
        assert other.returncode == 2 and "another config" in other.stderr
        assert len(other.stderr.strip().splitlines()) == 1, other.stderr
        fresh = toolgym(
            *llm_args(fake, out, "--tasks", "mtu", "--temperature", "0.5", "--overwrite", "--limit", "3"),
            cwd=tmp_path,
        )
        assert fresh.returncode == 0, fresh.stderr
        assert [e.task_id for e in summary(out).episodes] == [e.task_id for e in done.episodes[:3]]


def test_sigterm_stops_a_run_on_worker_processes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    fake = FakeOpenAI(answer_at_once, reply_delay_s=60.0)
    with serve(fake):
        proc = start(*llm_args(fake, out, "--tasks", "mtu", "--workers", "2"), cwd=tmp_path)
        wait_for(lambda: fake.in_flight == 2, "both workers in a request")
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 128 + signal.SIGTERM, stdout + stderr
    assert_no_traceback(stdout, stderr)
    stopped = summary(out)
    assert stopped.stopped == "interrupted by SIGTERM" and stopped.episodes == []
    assert len(stopped.cancelled) >= 2  # the batches the workers held


def test_kill_9_loses_only_the_episodes_in_flight(tmp_path: Path) -> None:
    out = tmp_path / "run"
    fake = FakeOpenAI(answer_at_once, reply_delay_s=0.3)
    with serve(fake):
        proc = start(*llm_args(fake, out, "--tasks", "mtu"), cwd=tmp_path)

        def checkpointed() -> bool:
            try:
                return len(summary(out).episodes) >= 3
            except (OSError, ValueError, KeyError):
                return False

        wait_for(checkpointed, "three episodes in run.json")
        proc.kill()
        proc.communicate(timeout=WAIT_S)
        kept = summary(out).episodes  # run.json is whole: written atomically after every episode
        assert all((out / str(e.trace)).is_file() for e in kept)
        asked = len(fake.requests)
        resumed = toolgym(*llm_args(fake, out, "--tasks", "mtu"), cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert len(fake.requests) - asked == MTU_TASKS - len(kept)  # one request per episode not kept
    assert len(summary(out).episodes) == MTU_TASKS


# ---- kill -9: what a killed run leaves (issue 34) ------------------------------------------------
RUN_MARK = "TOOLGYM_TEST_RUN"  # in the environment of a run: every process it starts inherits it
GONE_S = 20.0  # the bound the issue sets for a killed run's processes to go, generous for a loaded box
WORKERS_RUN = ("run", "--tasks", "ctool", "--tasks", "mtu", "--trials", "40", "--workers", "2")


def marked(mark: str) -> list[psutil.Process]:
    """The live processes started with `RUN_MARK=mark` in their environment: a run and all it
    started (Python's forkserver and resource tracker, the pool's workers), whoever their parent
    is now; zombies are dead (only not reaped yet) and left out."""
    found = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if process.environ().get(RUN_MARK) == mark and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
    return found


def episodes_in(out: Path) -> int:
    try:
        return len(summary(out).episodes)
    except (OSError, ValueError, KeyError):
        return 0


def staging_of(pids: Iterable[int]) -> list[Path]:
    """The staging folders of the worker processes `pids` (named after their pid)."""
    root = Path(staging_root() or tempfile.gettempdir())
    prefixes = tuple(f"{STAGING_PREFIX}{pid}-" for pid in pids)
    return sorted(p for p in root.iterdir() if p.name.startswith(prefixes)) if prefixes else []


def next_run(out: Path) -> None:
    """A short run after a killed one (in this process, which stays alive)."""
    tasks = TaskSet.load(next(p for p in mock_task_paths() if p.stem == "mtu"))
    first = TaskSet([next(iter(tasks))], base_dir=tasks.base_dir)
    done = run_trials([("mtu", first)], "oracle", out=out, toolset=default_toolset())
    assert [e.success for e in done.episodes] == [True]


def test_kill_9_of_a_run_on_worker_processes_leaves_no_process_behind(tmp_path: Path) -> None:
    """Its workers, forkserver and resource tracker go within seconds (they used to wait for
    work for good, 2 x 110 MiB per kill), and the next run leaves no staging folder of theirs."""
    mark = secrets.token_hex(8)
    proc = start(*WORKERS_RUN, "--out", str(tmp_path / "run"), cwd=tmp_path, env=cli_env(**{RUN_MARK: mark}))
    try:
        wait_for(lambda: episodes_in(tmp_path / "run") >= 1 and len(marked(mark)) >= 5, "two workers at work")
        tree = {p.pid for p in psutil.Process(proc.pid).children(recursive=True)}
        run = {p.pid: p.ppid() for p in marked(mark)}
        workers = [pid for pid, parent in run.items() if pid != proc.pid and parent != proc.pid]
        assert tree <= set(run) and len(tree) >= 4 and len(workers) == 2  # the mark finds them all
    finally:
        proc.kill()
        proc.communicate(timeout=WAIT_S)
    deadline = time.monotonic() + GONE_S
    while marked(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = marked(mark)
    assert left == [], [(p.pid, p.ppid(), " ".join(p.cmdline())[:120]) for p in left]
    next_run(tmp_path / "next")
    assert staging_of(workers) == []


def test_the_next_run_removes_the_staging_folders_a_killed_runs_workers_left(tmp_path: Path) -> None:
    """The whole run killed at once (kill -9 of its process group: the workers had no time to
    clean up): the next run removes their staging folders, and keeps a live process's."""
    mark = secrets.token_hex(8)
    proc = subprocess.Popen(
        toolgym_argv(*WORKERS_RUN, "--out", str(tmp_path / "run")),
        cwd=tmp_path,
        env=cli_env(**{RUN_MARK: mark}),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group, which the kill takes whole
    )
    try:
        wait_for(lambda: len(staging_of(p.pid for p in marked(mark))) == 2, "both workers staging episodes")
        killed = staging_of(p.pid for p in marked(mark))
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=WAIT_S)
    wait_for(lambda: marked(mark) == [], "the killed run's processes gone")
    assert all(folder.is_dir() for folder in killed)
    live = Path(tempfile.mkdtemp(prefix=owned_prefix(STAGING_PREFIX), dir=staging_root()))  # this process's
    try:
        next_run(tmp_path / "next")
        assert [folder for folder in killed if folder.exists()] == [] and live.is_dir()
    finally:
        shutil.rmtree(live, ignore_errors=True)


def test_the_next_run_removes_the_file_store_of_a_killed_in_process_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run in one process keeps its episodes' files (images tools drew) in a temporary folder;
    kill -9 leaves it, and the next run removes it, but not the store of a live process."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "run"
    proc = start(
        "run",
        "--tasks",
        "mtu",
        "--trials",
        "200",
        "--out",
        str(out),
        cwd=tmp_path,
        env=cli_env(TMPDIR=str(tmp)),
    )
    try:
        wait_for(lambda: episodes_in(out) >= 1, "an episode in run.json")
    finally:
        proc.kill()
        proc.communicate(timeout=WAIT_S)
    killed = sorted(p for p in tmp.iterdir() if p.name.startswith(FILES_PREFIX))
    assert killed and all(folder.is_dir() for folder in killed)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    live = FileStore()  # this process's, as a run beside the next one has
    try:
        next_run(tmp_path / "next")
        assert sorted(p for p in tmp.iterdir() if p.name.startswith(FILES_PREFIX)) == [live.root]
    finally:
        live.close()


def test_retry_aborted_reruns_only_the_aborted_episodes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    failing = {"on": True}

    def script(body: Mapping[str, Any]) -> Reply | Fault:
        first = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return Fault(status=500) if failing["on"] and "door" in first.lower() else text("done")

    fake = FakeOpenAI(script)
    with serve(fake):
        first = toolgym(*llm_args(fake, out, "--tasks", "mtu", "--max-retries", "0"), cwd=tmp_path)
        assert first.returncode == 1 and "--retry-aborted" in first.stdout
        aborted = [e.task_id for e in summary(out).aborted]
        assert aborted
        failing["on"] = False
        asked = len(fake.requests)
        plain = toolgym(*llm_args(fake, out, "--tasks", "mtu", "--max-retries", "0"), cwd=tmp_path)
        assert plain.returncode == 1 and len(fake.requests) == asked  # aborted ones are kept by default
        retried = toolgym(
            *llm_args(fake, out, "--tasks", "mtu", "--max-retries", "0", "--retry-aborted"), cwd=tmp_path
        )
    assert retried.returncode == 0, retried.stdout
    assert len(fake.requests) - asked == len(aborted) and summary(out).aborted == []


def test_the_default_run_directory_is_new_each_time(tmp_path: Path) -> None:
    for _ in range(2):
        result = toolgym("run", "--tasks", "demo", "--task-id", "solve-system", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
    runs = sorted((tmp_path / "runs").iterdir())
    assert len(runs) == 2 and all(re.fullmatch(r"run-\d{8}-\d{6}(-\d+)?", p.name) for p in runs)


# ---- fail fast -----------------------------------------------------------------------------------
def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_preflight_fails_fast_on_a_dead_server_a_wrong_key_or_model(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    result = toolgym("run", "--agent", "llm", "--base-url", dead, "--model", "m", "--out", "x", cwd=tmp_path)
    assert result.returncode == 2 and "cannot reach the model server" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "x").exists()

    fake = FakeOpenAI(answer_at_once, api_key="sk-right", models=("fake-model",))
    with serve(fake):
        wrong_key = toolgym(
            *llm_args(fake, tmp_path / "a"), cwd=tmp_path, env=cli_env(OPENAI_API_KEY="sk-wrong")
        )
        assert wrong_key.returncode == 2 and "refused the API key (HTTP 401)" in wrong_key.stderr
        args = ["run", "--agent", "llm", "--base-url", fake.base_url, "--model", "gpt-nope", "--out", "b"]
        wrong_model = toolgym(*args, cwd=tmp_path, env=cli_env(OPENAI_API_KEY="sk-right"))
        assert wrong_model.returncode == 2 and "'gpt-nope' is not served" in wrong_model.stderr
        assert "fake-model" in wrong_model.stderr
        assert fake.requests == []  # no chat request went out
        # OPENAI_API_KEY is read by default
        right = toolgym(
            *llm_args(fake, tmp_path / "c", "--tasks", "mtu", "--limit", "1"),
            cwd=tmp_path,
            env=cli_env(OPENAI_API_KEY="sk-right"),
        )
        assert right.returncode == 0, right.stderr
        assert fake.headers[-1]["authorization"] == "Bearer sk-right"
    for r in (result, wrong_key, wrong_model):
        assert_no_traceback(r.stdout, r.stderr)


def test_the_circuit_breaker_stops_a_run_of_failing_episodes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    fake = FakeOpenAI(lambda body: Fault(status=503))
    with serve(fake):
        args = llm_args(fake, out, "--tasks", "mtu", "--max-retries", "0", "--max-consecutive-aborts", "3")
        result = toolgym(*args, cwd=tmp_path)
    assert result.returncode == 1, result.stdout
    stopped = summary(out)
    assert stopped.stopped is not None and "3 episodes in a row aborted" in stopped.stopped
    assert len(stopped.aborted) == 3 and len(fake.requests) == 3  # not 19 episodes of retries
    assert "resume with:" in result.stdout


# ---- any agent -----------------------------------------------------------------------------------
def readme_block(marker: str) -> str:
    """The first fenced code block after an HTML comment marker in the README."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    after = readme[readme.index(f"<!-- {marker}") :]
    match = re.search(r"```[a-z]*\n(.*?)```", after, re.S)
    assert match is not None
    return match.group(1)


def test_the_readme_example_agent_runs_through_toolgym_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_agent.py").write_text(readme_block("example-agent"), encoding="utf-8")
    out = tmp_path / "run"
    args = [
        "run",
        "--agent",
        "my_agent:make",
        "--tasks",
        "demo",
        "--task-id",
        "receipt-total",
        "--trials",
        "2",
    ]
    result = toolgym(*args, "--out", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    run = summary(out)
    assert run.agent == "my_agent:make" and len(run.episodes) == 2
    assert all(e.success for e in run.episodes)  # OCR of the receipt holds its total
    header = json.loads((out / str(run.episodes[0].trace)).read_text().splitlines()[0])
    assert header["agent"] == "read-aloud"
    # the same name in the Python runner and in `toolgym record`
    monkeypatch.chdir(tmp_path)  # the current directory is importable, as for the command
    demo = TaskSet.load(demo_tasks_path())
    sets = [("demo", TaskSet([demo["receipt-total"]], base_dir=demo.base_dir))]
    assert run_trials(sets, "my_agent:make", out=tmp_path / "py").episodes[0].success
    recorded = toolgym(
        "record",
        "--agent",
        "my_agent:make",
        "--tasks",
        str(demo_tasks_path()),
        "--out",
        "golden",
        cwd=tmp_path,
    )
    assert recorded.returncode in (0, 1), recorded.stderr  # agents that fail some tasks still record
    assert (tmp_path / "golden" / "golden.json").is_file()


def test_a_scripted_agent_and_bad_agent_names(tmp_path: Path) -> None:
    script = tmp_path / "script.jsonl"
    actions = [
        {"type": "tool_call", "name": "Solver", "arguments": {"command": "x"}},
        {"type": "final_answer", "text": "(4, 2) and (-4, -2)"},
    ]
    script.write_text(json.dumps({"task_id": "solve-system", "actions": actions}) + "\n", encoding="utf-8")
    out = tmp_path / "run"
    ok = toolgym(
        "run",
        "--agent",
        f"scripted:{script}",
        "--tasks",
        "demo",
        "--task-id",
        "solve-system",
        "--out",
        str(out),
        cwd=tmp_path,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert summary(out).agent == f"scripted:{script}" and summary(out).episodes[0].steps == 2
    for agent, message in [
        ("nosuch", "use package.module:attr"),
        ("no_module_here:make", "No module named"),
        ("scripted:/nonexistent.jsonl", "no such script file"),
    ]:
        bad = toolgym("run", "--agent", agent, "--out", str(tmp_path / "bad"), cwd=tmp_path)
        assert bad.returncode == 2 and message in bad.stderr, bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1


# ---- both OpenAI APIs through the openai SDK ------------------------------------------------------
def test_the_llm_agent_calls_v1_responses_and_v1_chat_completions(tmp_path: Path) -> None:
    """`--api responses --protocol responses` against the local server's /v1/responses, then the
    same task over /v1/chat/completions: both solve it, and run.json holds each API's token counts."""
    ocr, calc = ("OCR", {"image": "image/fish_oil.png"}), ("Calculator", {"expression": "290 // 5"})
    script = {"family of 5": [calls(ocr, calc), text("It lasts 58 days.")]}
    fake = FakeOpenAI(script, models=("fake-model",))
    task = ("--tasks", str(demo_tasks_path()), "--task-id", "fish-oil-days")
    with serve(fake):
        responses = toolgym(
            *llm_args(fake, tmp_path / "responses", *task, "--api", "responses", "--protocol", "responses"),
            cwd=tmp_path,
        )
        sent_to_responses = list(fake.requests)
        chat = toolgym(*llm_args(fake, tmp_path / "chat", *task, "--api", "chat"), cwd=tmp_path)
        mismatch = toolgym(
            *llm_args(fake, tmp_path / "x", *task, "--protocol", "responses", "--api", "chat"), cwd=tmp_path
        )
    assert responses.returncode == 0, responses.stdout + responses.stderr
    assert chat.returncode == 0, chat.stdout + chat.stderr
    # every request went to /v1/responses: Responses input items with call ids answered in order
    assert len(sent_to_responses) == 2 and all("input" in r for r in sent_to_responses)
    outputs = [i for i in sent_to_responses[1]["input"] if i.get("type") == "function_call_output"]
    assert [o["call_id"] for o in outputs] == ["fake_0_0", "fake_0_1"]
    assert all("messages" in r for r in fake.requests[2:])  # then /v1/chat/completions
    for name, api in (("responses", "responses"), ("chat", "chat")):
        run = summary(tmp_path / name)
        assert run.settings["api"] == api and [e.success for e in run.episodes] == [True]
        assert run.usage["requests"] == 2 and run.usage["prompt_tokens"] > 0
        assert run.usage["completion_tokens"] > 0 and run.usage["retries"] == 0
        header = json.loads((tmp_path / name / str(run.episodes[0].trace)).read_text().splitlines()[0])
        assert header["protocol"] == ("responses" if api == "responses" else "openai")
    assert mismatch.returncode == 2 and "over /v1/chat/completions, not 'responses'" in mismatch.stderr
    assert_no_traceback(responses.stderr, chat.stderr, mismatch.stderr)


# ---- CI output -----------------------------------------------------------------------------------
def test_a_piped_run_logs_progress_keeps_headers_and_prints_json(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = toolgym(
        "run", "--tasks", "mtu", "--trials", "2", "--out", str(out), "--json",
        cwd=tmp_path, env=cli_env(TOOLGYM_PROGRESS_EVERY="0"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)  # stdout is the JSON alone
    assert len(data["episodes"]) == 2 * MTU_TASKS and data["agent"] == "oracle"
    lines = [line for line in result.stderr.splitlines() if line.startswith("progress: ")]
    assert lines[-1].startswith(f"progress: {2 * MTU_TASKS}/{2 * MTU_TASKS} episodes")
    assert re.search(r"progress: \d+/38 episodes, [\d.]+/s, ETA \d+ s, 0 aborted", lines[0])
    header = next(line for line in result.stderr.splitlines() if "category" in line)
    assert all(word in header for word in ("steps", "errors", "reward", "passed"))
    assert (out / "run.json").read_text().startswith("{\n  ")  # indented


# ---- eval ----------------------------------------------------------------------------------------
def test_eval_scores_only_the_named_run_and_report_flags_stale_results(tmp_path: Path) -> None:
    for name, task_set in (("a", "mtu"), ("b", "teval")):
        made = toolgym("run", "--tasks", task_set, "--out", f"runs/{name}", cwd=tmp_path)
        assert made.returncode == 0, made.stderr
    bogus = toolgym("eval", "runs/a", "--suite", "mtu,bogus", cwd=tmp_path)
    assert bogus.returncode == 2 and "unknown metric suite bogus" in bogus.stderr
    assert not (tmp_path / "runs/a/eval.fixed.json").exists() and "traces in" not in bogus.stdout

    # a folder with no traces of its own is nothing to score: one line, exit 2, no file written
    parent = toolgym("eval", "runs", "--suite", "mtu", "--json", cwd=tmp_path)
    assert parent.returncode == 2 and parent.stdout == ""
    assert parent.stderr.strip().splitlines() == [
        "error: runs holds no finished traces (2 other runs below it: --recursive reads them); nothing written"
    ]
    assert not (tmp_path / "runs/eval.fixed.json").exists()
    both = toolgym("eval", "runs", "--suite", "mtu", "--recursive", "--json", cwd=tmp_path)
    scored = json.loads(both.stdout)
    assert scored["traces"] == MTU_TASKS + 20
    assert scored["results"]["mtu"]["counts"]["skipped_other_benchmark"] == 20  # the teval run's
    assert any("teval 20" in note for note in scored["results"]["mtu"]["notes"])

    result = toolgym("eval", "runs/a", "--suite", "mtu,teval", "--json", cwd=tmp_path)
    assert result.returncode == 1  # teval has nothing to score in an mtu run, and says so
    payload = json.loads(result.stdout)
    assert (
        payload["traces"] == MTU_TASKS
        and "none of the 19 traces is a teval task" in payload["failures"]["teval"]
    )
    report = toolgym("report", "runs/a", cwd=tmp_path)
    assert report.returncode == 0 and "stale" not in report.stdout
    html = (tmp_path / "runs/a/report.html").read_text(encoding="utf-8")
    assert 'href="#metric-TN"' in html and 'id="metric-TN"' in html  # metric names link to the glossary

    # the run grows (resumed with one more task set): the old scores are flagged, not shown
    again = toolgym("run", "--tasks", "mtu", "--tasks", "teval", "--out", "runs/a", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "note: eval.fixed.json, report.html describe the run before these episodes" in again.stdout
    stale = toolgym("report", "runs/a", cwd=tmp_path)
    assert "eval.fixed.json is stale" in stale.stdout and f"{MTU_TASKS + 20} episodes" in stale.stdout
    html = (tmp_path / "runs/a/report.html").read_text(encoding="utf-8")
    assert "mtu suite (fixed mode)" not in html and "is stale" in html
    # --overwrite starts the run over: its eval results and report go with it
    fresh = toolgym("run", "--tasks", "mtu", "--out", "runs/a", "--overwrite", "--limit", "1", cwd=tmp_path)
    assert fresh.returncode == 0 and not list((tmp_path / "runs/a").glob("eval.*.json"))
    assert not (tmp_path / "runs/a/report.html").exists()


def test_eval_names_a_trace_cut_short_and_scores_only_the_whole_ones(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from toolgym.cli import app
    from toolgym.toolservers.registry import default_toolset

    mtu = TaskSet.load(REPO / "fixtures" / "mock_tasks" / "mtu.jsonl")
    tasks = TaskSet([t for t in mtu if t.id in ("mtu-balance-002", "mtu-door-003")], base_dir=mtu.base_dir)
    out = tmp_path / "run"
    run_trials([("mtu", tasks)], "oracle", out=out, toolset=default_toolset())
    cut = out / "trial-0" / "mtu" / "mtu-door-003.seed0.jsonl"
    lines = cut.read_bytes().splitlines(keepends=True)
    cut.write_bytes(b"".join(lines[:-1]) + lines[-1][:25])  # `head -c`: the end record torn
    result = CliRunner().invoke(app, ["eval", str(out), "--suite", "mtu"])
    assert result.exit_code == 1, result.output  # the results are incomplete
    said = " ".join(result.output.split())
    where = f"{cut}:{len(lines)}: incomplete trace: the file ends in the middle of line {len(lines)}"
    assert "1 incomplete traces (no end record), not scored:" in said and where in said
    assert "1 traces in" in said
    payload = json.loads((out / "eval.fixed.json").read_text(encoding="utf-8"))
    assert payload["traces"] == 1 and payload["incomplete"] == [f"{where} (cut short), no end record"]


def test_eval_explain_prints_every_metric_with_its_paper(tmp_path: Path) -> None:
    result = toolgym("eval", "--explain", cwd=tmp_path)
    assert result.returncode == 0
    for metric in ("TN", "SR", "P_F1", "Ans+I", "ToolMatch", "instruct", "IF"):
        assert re.search(rf"^  {re.escape(metric)} ", result.stdout, re.M), metric
    for paper in ("GTA:", "T-Eval:", "MTU-Bench:", "ToolEyes:", "CToolEval:"):
        assert paper in result.stdout


# ---- the README's everyday loop -------------------------------------------------------------------
def test_the_readme_everyday_loop_runs_as_written(tmp_path: Path) -> None:
    lines = [line for line in readme_block("everyday-loop").splitlines() if line.strip()]
    assert len(lines) == 5
    for line in lines:
        words = shlex.split(line, comments=True)
        assert words[0] == "toolgym"
        result = toolgym(*words[1:], cwd=tmp_path)
        assert result.returncode == 0, f"{line}\n{result.stdout}\n{result.stderr}"
    # where the README says each one writes
    assert (tmp_path / "runs/mtu/run.json").is_file()
    assert len(list((tmp_path / "runs/mtu/trial-0/mtu").glob("*.jsonl"))) == MTU_TASKS
    assert json.loads((tmp_path / "runs/mtu/eval.fixed.json").read_text())["results"]["mtu"]["metrics"]
    assert (tmp_path / "runs/mtu/report.html").is_file()


def test_the_readme_agent_loops_run_as_written(tmp_path: Path) -> None:
    """The SDK loop (schemas from env.offered, the SDK's message into step, tool messages back) and
    the async rollout, each a file of the README's block as written, against a local server."""
    import textwrap

    def script(body: Mapping[str, Any]) -> Reply:
        messages = body["messages"]
        first = next(m["content"] for m in messages if m["role"] == "user")
        if "bank account 123456" in first and not any(m["role"] == "assistant" for m in messages):
            return calls(("get_account_balance", {"account_number": "123456"}))
        return text("Your balance is $4,825.50.")

    fake = FakeOpenAI(script, models=("M",))
    with serve(fake):
        env = cli_env(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-test")
        for marker, said in (("agent-loop:", "reward 1.0"), ("agent-loop-async:", "mean reward")):
            (tmp_path / "loop.py").write_text(textwrap.dedent(readme_block(marker)), encoding="utf-8")
            ran = subprocess.run(
                [sys.executable, "loop.py"],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert ran.returncode == 0 and said in ran.stdout, ran.stdout + ran.stderr
    # the SDK loop answered the tool call with its tool message, paired by id
    first, second = fake.requests[0], fake.requests[1]["messages"]
    assert "get_account_balance" in [t["function"]["name"] for t in first["tools"]]  # env.offered's schemas
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == second[-2]["tool_calls"][0]["id"]
    assert len(list((tmp_path / "runs/async").rglob("*.jsonl"))) == 4 * MTU_TASKS


def test_version(tmp_path: Path) -> None:
    result = toolgym("--version", cwd=tmp_path)
    assert result.returncode == 0 and re.fullmatch(r"toolgym \S+\n", result.stdout)


# ---- step mode and T-Eval's subsets from commands only ---------------------------------------------
def eval_json(run: Path, suite: str, tasks: str, cwd: Path) -> dict[str, Any]:
    result = toolgym("eval", str(run), "--suite", suite, "--tasks", tasks, "--json", cwd=cwd)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)["results"][suite]  # type: ignore[no-any-return]


def test_run_mode_step_gives_mtus_step_metrics_at_100_for_the_oracle_on_worker_processes(
    tmp_path: Path,
) -> None:
    out = tmp_path / "step"
    ran = toolgym(
        "run", "--mode", "step", "--tasks", "mtu", "--workers", "2", "--out", str(out), cwd=tmp_path
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert summary(out).settings["mode"] == "step" and len(summary(out).episodes) == MTU_TASKS
    header = json.loads(next((out / "trial-0" / "mtu").glob("*.jsonl")).read_text().splitlines()[0])
    assert header["env_config"]["mode"] == "teacher_forced"
    result = eval_json(out, "mtu", "mtu", tmp_path)
    # each golden step of the 19 tasks is a turn (46 turns, 22 of them answers or questions: no call)
    assert result["metrics"] == {
        "TS": 100.0,
        "PS": 100.0,
        "ATS": 100.0,
        "SATS": 100.0,
        "SR": 100.0,
        "TPR": 100.0,
    }
    assert result["counts"]["step/items"] == 46 and result["counts"]["step/no_call_gold"] == 22
    # the same directory cannot be resumed as an end-to-end run
    again = toolgym("run", "--tasks", "mtu", "--out", str(out), cwd=tmp_path)
    assert again.returncode == 2 and "mode" in again.stderr


def test_run_mode_step_scores_an_llm_that_errs_with_gta_and_mtu_step_metrics(tmp_path: Path) -> None:
    """A scripted model server errs at given golden steps; teacher forcing sends it the golden
    history (not its own mistakes), and eval's step metrics are exact."""
    weather = 'Action: GetWeather\nAction Input: {"city": "Boston", "date": "2024-01-04"}'  # wrong argument
    find = 'Action: FindRestaurants\nAction Input: {"cuisine": "Mexican", "city": "Seattle"}'  # right
    ride = 'Action: GetRide\nAction Input: {"destination": "El Fiesta"}'  # wrong tool
    script = {
        "weather be like in New York": [text(weather), text("Final Answer: cloudy, 46 F")],
        "best-rated Mexican restaurant": [text(find), text(ride), text("Final Answer: booked El Fiesta")],
        "pepperoni pizza": [text("Sure, ordering it now.")],  # prose: a format error
        "x^2 + y^2 = 20": [
            text('Action: Solver\nAction Input: {"command": "print(1)"}'),  # right tool, wrong arguments
            text("Final Answer: (4, 2) and (-4, -2)"),
        ],
    }
    fake = FakeOpenAI(script, models=("fake-model",))
    ids = ["mtu-weather-001", "mtu-restaurant-chain-006", "mtu-no-tool-019"]
    with serve(fake):
        mtu = toolgym(
            *llm_args(fake, tmp_path / "run-mtu", "--mode", "step", "--protocol", "react", "--tasks", "mtu"),
            *[a for i in ids for a in ("--task-id", i)],
            cwd=tmp_path,
        )
        assert mtu.returncode == 0, mtu.stdout + mtu.stderr
        sent = [r for r in fake.requests if "New York" in r["messages"][1]["content"]]
        gta = toolgym(
            *llm_args(fake, tmp_path / "run-gta", "--mode", "step", "--protocol", "react", "--tasks", "demo"),
            "--task-id",
            "solve-system",
            cwd=tmp_path,
        )
        assert gta.returncode == 0, gta.stdout + gta.stderr
    # the second turn saw the golden call (New York), not the model's wrong one (Boston)
    assert [m["role"] for m in sent[1]["messages"]] == ["system", "user", "assistant", "user"]
    assert '"city": "New York"' in sent[1]["messages"][2]["content"] and "Boston" not in str(
        sent[1]["messages"]
    )
    # MTU, turn by turn (TS, PS): weather (1, 0) (1, 1); restaurant (1, 1) (0, 0) (1, 1); pizza (0, 0)
    e = math.exp(-1)
    ats, sats, tpr = [
        100 * (0.5 + 2 / 3 + 0) / 3,
        100 * ((1 - e) / 2 + (2 - e) / 3 + 0) / 3,
        100 * (1 / 3) / 3,
    ]
    expected = {"TS": 100 * 4 / 6, "PS": 100 * 3 / 6, "ATS": ats, "SATS": sats, "SR": 0.0, "TPR": tpr}
    assert eval_json(tmp_path / "run-mtu", "mtu", "mtu", tmp_path)["metrics"] == {
        k: round(v, 2) for k, v in expected.items()
    }
    # GTA: both steps parse, the Solver call has the wrong arguments, the answer is right
    metrics = eval_json(tmp_path / "run-gta", "gta", "demo", tmp_path)["metrics"]
    assert metrics == {"InstAcc": 100.0, "ToolAcc": 100.0, "ArgAcc": 0.0, "SummAcc": 100.0}


def test_teval_subsets_answered_by_an_agent_and_scored_from_commands_only(tmp_path: Path) -> None:
    """reference run -> teval-subsets -> teval-answer (the oracle; a model server that errs on
    retrieve and review in string format) -> eval --teval-results."""
    from toolgym.evaluation.loaders.teval_subsets import chat_messages, golden_prediction

    task = ("--tasks", "teval", "--task-id", "teval-weather-today-001")
    ran = toolgym("run", *task, "--out", str(tmp_path / "ref"), cwd=tmp_path)
    built = toolgym("teval-subsets", str(tmp_path / "ref"), "--out", str(tmp_path / "subsets"), cwd=tmp_path)
    assert ran.returncode == 0 and built.returncode == 0, ran.stderr + built.stderr
    wrong = {"retrieve_str_v2": "get_weekday", "review_str_v2": "Answer: E"}
    replies: dict[str, str] = {}
    for path in sorted((tmp_path / "subsets").glob("*.json")):
        for datum in json.loads(path.read_text(encoding="utf-8")).values():
            key = json.dumps(chat_messages(datum))
            replies[key] = wrong.get(path.stem, golden_prediction(path.stem, datum))
    fake = FakeOpenAI(lambda body: text(replies[json.dumps(body["messages"])]), models=("fake-model",))

    def answer(answers: Path, *agent: str) -> list[Path]:
        answered = toolgym(
            "teval-answer", str(tmp_path / "subsets"), "--out", str(answers), *agent, cwd=tmp_path
        )
        assert answered.returncode == 0, answered.stdout + answered.stderr
        return sorted(answers.glob("*.json"))

    # the oracle answers each datum with its ground truth (files that score 100, test_teval_subsets)
    for path in answer(tmp_path / "oracle"):
        for datum in json.loads(path.read_text(encoding="utf-8")).values():
            assert datum["prediction"] == golden_prediction(path.stem, datum)
    with serve(fake):
        files = answer(
            tmp_path / "llm", "--agent", "llm", "--base-url", fake.base_url, "--model", "fake-model"
        )
    assert len(files) == 9 and len(fake.requests) == 10  # every subset, one request per datum
    result = toolgym("eval", *[a for p in files for a in ("--teval-results", str(p))], "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    metrics = json.loads(result.stdout)["results"]["teval:results"]["metrics"]
    # the two string-format mistakes halve retrieve and review; the other four dimensions are whole
    assert {k: v for k, v in metrics.items() if v != 100.0} == {
        "retrieve": 50.0,
        "retrieve/str": 0.0,
        "review": 50.0,
        "review/str": 0.0,
        "overall": pytest.approx((4 * 100 + 50 + 50) / 6, abs=1e-9),  # the mean of the six dimensions
    }
    assert {"instruct", "plan", "reason", "understand", "reason/str", "understand/str"} <= set(metrics)
