"""RemoteToolSet: a real server's tools in ToolEnv, side by side with in-process tools and mock
apps; remote failures are infra errors, never the agent's fault."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.toolservers.server.helpers import Gate, running
from toolgym.actions import FinalAnswer, ToolCall
from toolgym.envs.agents import OracleAgent
from toolgym.envs.demo import demo_tasks_path
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.errors import InfraError
from toolgym.files import FileStore
from toolgym.tasks import AnswerSpec, Task, TaskFile, TaskSet
from toolgym.tools import ToolContext, ToolSet
from toolgym.toolservers.clients import RemoteToolSet
from toolgym.toolservers.gta.calculator import calculator
from toolgym.toolservers.gta.drawing import addtext, drawbox
from toolgym.toolservers.server import ServerConfig, ServerThread, ToolConfig, create_app
from toolgym.toolservers.server.providers import builtin_providers

DEMO_TASKS = ["receipt-total", "solve-system", "mark-total", "caption-cat"]
TOKEN = "remote-client-token-0123"


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with running(builtin_providers(), token=TOKEN) as url:
        yield url


@pytest.fixture(scope="module")
def remote(server: str) -> Iterator[RemoteToolSet]:
    with RemoteToolSet(server, token=TOKEN) as tools:
        yield tools


def _episode_view(trace: Path) -> list[Any]:
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    return [
        (r.get("actions"), r.get("observations"), r.get("error_kinds"))
        for r in lines
        if r.get("type") == "step"
    ]


def test_demo_tasks_score_and_observe_the_same_remote_and_in_process(
    remote: RemoteToolSet, tmp_path: Path
) -> None:
    from toolgym.toolservers.registry import default_toolset

    tasks = TaskSet.load(demo_tasks_path())
    local = ToolEnv(default_toolset(), tasks)
    far = ToolEnv(remote, tasks)
    assert set(remote.names) >= {"Calculator", "OCR", "DrawBox", "AddText", "Solver", "Plot"}
    for task_id in DEMO_TASKS:
        task = tasks[task_id]
        a = run_episode(local, OracleAgent(local.protocol), task, seed=0, trace_dir=tmp_path / "local")
        b = run_episode(far, OracleAgent(far.protocol), task, seed=0, trace_dir=tmp_path / "remote")
        assert a.reward == b.reward == 1.0, task_id
        assert b.error_counts == {}
        assert a.trace_path is not None and b.trace_path is not None
        assert _episode_view(a.trace_path) == _episode_view(b.trace_path), task_id
    backends = {t.name: t.backend for t in remote}
    assert backends["OCR"] == "remote:rapidocr"


def test_one_env_mixes_local_tools_a_remote_server_and_mock_apps(server: str) -> None:
    with RemoteToolSet(server, token=TOKEN, tools=["DrawBox"]) as remote:
        assert remote.names == ["DrawBox"]
        tools = ToolSet([calculator]).merged(remote)
        task = Task(
            id="mixed",
            query="Box the receipt, add 2+2, check a balance, move money.",
            tools=["Calculator", "DrawBox", "get_balance", "transfer"],
            apps=["banking"],
            files=[TaskFile(name="image/receipt.png", path="images/receipt.png")],
            answer=AnswerSpec(whitelist=[["done"]]),
        )
        env = ToolEnv(tools, TaskSet([task], base_dir=demo_tasks_path().parent.parent))
        _, info = env.reset(seed=0)
        assert info["tools"] == ["Calculator", "DrawBox", "get_balance", "transfer"]
        before = info["state_hash"]
        _, _, _, _, i1 = env.step(
            ToolCall(name="DrawBox", arguments={"image": "image/receipt.png", "bbox": "(10, 10, 60, 60)"})
        )
        _, _, _, _, i2 = env.step(ToolCall(name="Calculator", arguments={"expression": "2+2"}))
        _, _, _, _, i3 = env.step(
            ToolCall(
                name="transfer",
                arguments={"from_account_id": "ACC-10001", "to_account_id": "ACC-10002", "amount": 5.0},
            )
        )
        _, reward, terminated, _, _ = env.step(FinalAnswer(text="done"))
        assert [i["error_kind"] for i in (i1, i2, i3)] == [None, None, None]
        boxed = i1["observations"][0]["files"][0]
        assert f"file:{boxed['sha256']}" in env.files  # the remote result landed in the episode's store
        assert i2["observations"][0]["content"] == "4"
        assert i3["state_hash"] != before and i3["state_diff"]
        assert terminated and reward == 1.0
        env.close()


def test_server_failures_are_infra_errors_in_the_env() -> None:
    task = Task(id="t", query="q", tools=["Calculator"], answer=AnswerSpec(whitelist=[["x"]]))
    thread = ServerThread(create_app([calculator]))
    url = thread.start()
    remote = RemoteToolSet(url)
    env = ToolEnv(remote, [task])
    env.reset(seed=0)
    _, _, _, _, ok = env.step(ToolCall(name="Calculator", arguments={"expression": "1+1"}))
    assert ok["error_kind"] is None
    thread.stop()  # the server dies mid-episode
    _, _, _, _, down = env.step(ToolCall(name="Calculator", arguments={"expression": "1+1"}))
    assert down["error_kind"] == "infra_error"
    assert "Calculator at" in down["observations"][0]["error"]["message"]
    assert down["error_counts"] == {"infra_error": 1}  # counted apart from the agent's own errors
    remote.close()
    with pytest.raises(InfraError, match="ConnectError"):
        RemoteToolSet(url)


def test_status_codes_map_to_the_right_kinds() -> None:
    gate = Gate()
    config = ServerConfig(
        token=TOKEN,
        tools_config={
            "Gated": ToolConfig(timeout_s=0.3, max_concurrency=1, max_queue=0),
        },
    )
    ctx = ToolContext(files=FileStore())
    with running([gate.tool(), calculator], config) as url, RemoteToolSet(url, token=TOKEN) as remote:
        try:
            timed_out = remote.call(ToolCall(name="Gated", arguments={}), ctx)
            assert timed_out.error_kind is not None and timed_out.error_kind.value == "timeout"
            busy = remote.call(ToolCall(name="Gated", arguments={}), ctx)  # the slot is still held
            assert busy.error_kind is not None and busy.error_kind.value == "infra_error"
            assert "wait" in busy.text
        finally:
            gate.release()
        client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"})
        with RemoteToolSet(url, client=client) as revoked:
            client.headers["Authorization"] = "Bearer not-the-token-at-all"  # e.g. a rotated token
            refused = revoked.call(ToolCall(name="Calculator", arguments={"expression": "1"}), ctx)
        assert refused.error_kind is not None and refused.error_kind.value == "infra_error"
        bad = remote.call(ToolCall(name="Calculator", arguments={"expr": "1"}), ctx)
        assert bad.error_kind is not None and bad.error_kind.value == "argument_error"
        assert bad == ToolSet([calculator]).call(ToolCall(name="Calculator", arguments={"expr": "1"}), ctx)
    with pytest.raises(InfraError, match="401"), running([calculator], token=TOKEN) as url:
        RemoteToolSet(url)


def test_a_server_that_never_answers_is_an_infra_error() -> None:
    gate = Gate()
    ctx = ToolContext(files=FileStore())
    with running([gate.tool()]) as url, RemoteToolSet(url, call_timeout_s=0.3) as remote:
        try:
            hung = remote.call(ToolCall(name="Gated", arguments={}), ctx)
        finally:
            gate.release()
    assert hung.error_kind is not None and hung.error_kind.value == "infra_error"
    assert "no answer in time" in hung.text


def test_files_upload_once_and_again_after_a_server_restart(tmp_path: Path) -> None:
    requests: list[str] = []
    files = FileStore()
    ctx = ToolContext(files=files)
    image = files.put_path(
        demo_tasks_path().parent.parent / "images" / "receipt.png", name="image/receipt.png"
    )
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    first = ServerThread(create_app([drawbox, addtext]), port=port)
    url = first.start()
    client = httpx.Client(
        base_url=url, event_hooks={"request": [lambda r: requests.append(f"{r.method} {r.url.path}")]}
    )
    remote = RemoteToolSet(url, client=client)
    try:
        for label in ("a", "b"):
            obs = remote.call(
                ToolCall(name="AddText", arguments={"image": image.ref, "text": label, "position": "mt"}), ctx
            )
            assert obs.error is None
        assert requests.count(f"PUT /v1/files/{image.sha256}") == 1  # uploaded once for both calls
        first.stop()
        second = ServerThread(create_app([drawbox, addtext]), port=port)  # same address, empty store
        second.start()
        try:
            again = remote.call(
                ToolCall(name="DrawBox", arguments={"image": image.ref, "bbox": "(1, 1, 20, 20)"}), ctx
            )
            assert again.error is None
            assert requests.count(f"PUT /v1/files/{image.sha256}") == 2  # the 409 made it upload again
        finally:
            second.stop()
    finally:
        remote.close()


def test_concurrent_calls_through_one_toolset(remote: RemoteToolSet) -> None:
    ctx = ToolContext(files=FileStore())
    with ThreadPoolExecutor(8) as pool:
        results = list(
            pool.map(
                lambda i: remote.call(ToolCall(name="Calculator", arguments={"expression": f"{i}*{i}"}), ctx),
                range(32),
            )
        )
    assert [r.content for r in results] == [str(i * i) for i in range(32)]


def test_unknown_tools_requested_from_a_server() -> None:
    with running([calculator]) as url, pytest.raises(InfraError, match="does not serve"):
        RemoteToolSet(url, tools=["OCR"])
