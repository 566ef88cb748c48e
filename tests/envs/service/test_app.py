"""The env service through openenv-core's own clients and plain HTTP: a mock-app episode gives the
same observations, reward and trace bytes as in-process; bad input gets typed errors and changes
nothing; the service stays up."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip(
    "openenv.core.generic_client",
    reason="these tests drive the service with openenv-core's client (the dev extra)",
)

from openenv.core.generic_client import GenericEnvClient
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from toolgym.envs.service.app import create_app
from toolgym.envs.service.catalog import Catalog
from toolgym.envs.tool_env import ToolEnv
from toolgym.http import Credentials
from toolgym.protocols.base import MAX_OUTPUT_CHARS
from toolgym.tasks import TaskSet
from toolgym.tools import ToolSet
from toolgym.toolservers.gta.calculator import calculator
from toolgym.toolservers.server import ServerConfig, ServerThread
from toolgym.toolservers.server import create_app as create_tool_server
from toolgym.trace import read_trace

from .support import (
    GATE_TASKS,
    TASK_ID,
    TASK_SET,
    Gate,
    Served,
    env_server,
    fetch_trace,
    golden_outputs,
    local_env,
    reference_trace,
    serve,
    without_timing,
)

RESET = {"task_id": TASK_ID, "config": {"tasks": TASK_SET}, "seed": 0, "agent": "oracle"}


def test_generic_env_client_sync_matches_in_process(served: Served, catalog: Catalog, tmp_path: Path) -> None:
    local = local_env(catalog)
    obs, info = local.reset(seed=0, options={"task": TASK_ID})
    with GenericEnvClient(base_url=served.url).sync() as remote:
        result = remote.reset(**RESET)
        assert result.observation["text"] == obs
        assert without_timing(result.observation["info"]) == without_timing(info)
        assert result.done is False
        for raw in golden_outputs(local):
            obs, reward, terminated, truncated, info = local.step(raw)
            result = remote.step({"text": raw})
            assert result.observation["text"] == obs
            assert result.reward == reward
            assert result.done == (terminated or truncated)
            assert result.observation["terminated"] == terminated
            assert without_timing(result.observation["info"]) == without_timing(info)
        assert result.reward == 1.0  # the oracle solved it, state included
        state = remote.state()
        assert state["task_id"] == TASK_ID and state["step_count"] == 2 and state["done"] is True
        assert state["state_hash"] == info["state_hash"]
        assert state["error_counts"] == {}
        session_id, trace = state["session_id"], state["trace"]
    local.close()
    # the trace the service wrote is the runner's, byte for byte, and stays fetchable after close
    assert fetch_trace(served.url, session_id, trace) == reference_trace(catalog, tmp_path)


def test_a_strict_session_writes_the_runners_strict_trace(
    served: Served, catalog: Catalog, tmp_path: Path
) -> None:
    """A session with `strict_arguments` writes what `toolgym run --strict-arguments` writes, its
    header saying so (verify and replay re-run such a trace strictly), byte for byte."""
    outputs = golden_outputs(local_env(catalog))
    with GenericEnvClient(base_url=served.url).sync() as remote:
        remote.reset(**{**RESET, "config": {"tasks": TASK_SET, "strict_arguments": True}})
        for raw in outputs:
            remote.step({"text": raw})
        state = remote.state()
    trace = fetch_trace(served.url, state["session_id"], state["trace"])
    assert json.loads(trace.splitlines()[0])["env_config"]["strict_arguments"] is True
    assert trace == reference_trace(catalog, tmp_path, strict=True)
    assert trace != reference_trace(catalog, tmp_path / "lax")


def test_a_task_run_again_in_a_session_gives_the_runners_trace(
    served: Served, catalog: Catalog, tmp_path: Path
) -> None:
    """A session's second episode of a mock-app task runs on the event loop, reset included
    (environment.py, `inline_reset`): the same answers and trace bytes as its first, over both
    transports."""
    reference = reference_trace(catalog, tmp_path)
    outputs = golden_outputs(local_env(catalog))
    with GenericEnvClient(base_url=served.url).sync() as remote:
        for _ in range(2):
            remote.reset(**RESET)
            for raw in outputs:
                result = remote.step({"text": raw})
            assert result.done and result.reward == 1.0
            state = remote.state()
            assert fetch_trace(served.url, state["session_id"], state["trace"]) == reference
    with httpx.Client(base_url=served.url) as http:
        session: dict[str, str] = {}
        for _ in range(2):
            opened = http.post("/reset", json={**RESET, **session}).json()
            session = {"session_id": opened["observation"]["session_id"]}
            for raw in outputs:
                answer = http.post("/step", json={**session, "action": {"text": raw}}).json()
            assert answer["done"] and answer["reward"] == 1.0
            state = http.get("/state", params=session).json()
            assert fetch_trace(served.url, state["session_id"], state["trace"]) == reference


def test_generic_env_client_async_with_openai_messages(served: Served, catalog: Catalog) -> None:
    local = local_env(catalog, "openai")

    async def episode() -> list[tuple[str, Any, bool]]:
        seen = []
        async with GenericEnvClient(base_url=served.url) as remote:
            await remote.reset(**{**RESET, "config": {"tasks": TASK_SET, "protocol": "openai"}})
            for message in golden_outputs(local):
                result = await remote.step({"message": message})
                seen.append((result.observation["text"], result.reward, result.done))
        return seen

    seen = asyncio.run(episode())
    local.reset(seed=0, options={"task": TASK_ID})
    expected = []
    for message in golden_outputs(local):
        obs, reward, terminated, truncated, _ = local.step(message)
        expected.append((obs, reward, terminated or truncated))
    local.close()
    assert seen == expected


def test_structured_actions_and_seeded_pick(served: Served, catalog: Catalog) -> None:
    local = local_env(catalog)
    task = local.tasks[TASK_ID]
    with GenericEnvClient(base_url=served.url).sync() as remote:
        first = remote.reset(config={"tasks": TASK_SET}, seed=7)
        again = remote.reset(seed=7)  # the session keeps its config; same seed, same pick
        assert first.observation["info"]["task_id"] == again.observation["info"]["task_id"]
        remote.reset(task_id=TASK_ID, seed=0)
        for step in task.golden:
            result = remote.step({"action": step.action.model_dump(mode="json")})
        assert result.done and result.reward == 1.0
    local.close()


def test_http_sessions_speak_openenv_bodies(served: Served, catalog: Catalog, tmp_path: Path) -> None:
    local = local_env(catalog)
    with httpx.Client(base_url=served.url) as http:
        reset = http.post("/reset", json=RESET).json()
        assert set(reset) == {"observation", "reward", "done"}  # openenv's ResetResponse
        session_id = reset["observation"]["session_id"]
        for raw in golden_outputs(local):
            response = http.post("/step", json={"session_id": session_id, "action": {"text": raw}})
            assert response.status_code == 200, response.text
            body = response.json()
            assert set(body) == {"observation", "reward", "done"}
        assert body["done"] is True and body["reward"] == 1.0
        state = http.get("/state", params={"session_id": session_id}).json()
        assert state["step_count"] == 2
        [row] = http.get("/sessions").json()["sessions"]  # openenv's session table counts the steps
        assert row["session_id"] == session_id and row["step_count"] == 2 and row["transport"] == "http"
        listing = http.get(f"/sessions/{session_id}/traces").json()
        assert listing["traces"] == [state["trace"]]
        assert http.post("/close", json={"session_id": session_id}).json()["closed"] is True
        assert http.get("/sessions").json()["sessions"] == []
        catalog_view = http.get("/catalog").json()
        assert TASK_SET in catalog_view["task_sets"] and "task" in catalog_view["rewards"]
        schema = http.get("/schema").json()
        assert {"text", "message", "action"} <= set(schema["action"]["properties"])
        assert {"state_hash", "error_counts", "trace"} <= set(schema["state"]["properties"])
    local.close()
    assert fetch_trace(served.url, session_id, state["trace"]) == reference_trace(catalog, tmp_path)


def test_many_sessions_are_isolated(served: Served, catalog: Catalog) -> None:
    """Two sessions on the same task: a write in one leaves the other's world untouched."""
    local = local_env(catalog)
    write = golden_outputs(local)[0]
    with GenericEnvClient(base_url=served.url).sync() as a, GenericEnvClient(base_url=served.url).sync() as b:
        a.reset(**RESET)
        b.reset(**RESET)
        before = b.state()["state_hash"]
        a.step({"text": write})
        assert a.state()["state_hash"] != before
        assert b.state()["state_hash"] == before
        assert a.state()["session_id"] != b.state()["session_id"]
    local.close()


# ---- bad input ----------------------------------------------------------------------------------
def error_of(response: httpx.Response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["kind"]


def test_bad_http_input_is_typed_and_changes_nothing(
    served: Served, catalog: Catalog, tmp_path: Path
) -> None:
    local = local_env(catalog)
    raws = golden_outputs(local)
    with httpx.Client(base_url=served.url) as http:
        session_id = http.post("/reset", json=RESET).json()["observation"]["session_id"]
        state = http.get("/state", params={"session_id": session_id}).json()
        bad_steps: list[Any] = [
            {"session_id": session_id},  # no action
            {"session_id": session_id, "action": "text"},  # not an object
            {"session_id": session_id, "action": {}},  # none of text, message, action
            {"session_id": session_id, "action": {"text": "a", "message": {"role": "assistant"}}},
            {"session_id": session_id, "action": {"action": {"type": "tool_call"}}},  # no name
            {"session_id": session_id, "action": {"action": []}},
            {"session_id": session_id, "action": {"text": "a", "bogus": 1}},
            {"session_id": session_id, "action": {"text": "a"}, "bogus": 1},
            {"action": {"text": "a"}},  # no session
            [1, 2],
        ]
        for body in bad_steps:
            assert error_of(http.post("/step", json=body)) == (422, "argument_error"), body
        assert error_of(
            http.post("/step", content=b"{not json", headers={"content-type": "application/json"})
        ) == (422, "argument_error")
        assert error_of(http.post("/step", json={"session_id": "nope-nope", "action": {"text": "a"}})) == (
            404,
            "unknown_session",
        )
        assert error_of(http.get("/state")) == (422, "argument_error")
        assert error_of(http.post("/reset", json={"session_id": session_id, "task_id": "no-such-task"})) == (
            422,
            "argument_error",
        )
        assert error_of(
            http.post("/reset", json={"session_id": session_id, "config": {"tasks": "/etc"}})
        ) == (
            422,
            "argument_error",
        )
        assert error_of(http.post("/reset", json={"session_id": session_id, "seed": -1})) == (
            422,
            "argument_error",
        )
        assert error_of(http.get(f"/sessions/{session_id}/traces/..%2F..%2Fetc"))[0] == 404
        assert error_of(http.get("/sessions/..%2F..%2Fetc/traces"))[0] == 404
        assert error_of(http.get(f"/sessions/{session_id}/traces/.."))[0] == 404
        assert http.get("/state", params={"session_id": session_id}).json() == state  # nothing ran
        for raw in raws:  # the episode goes on and its trace holds only the real steps
            assert (
                http.post("/step", json={"session_id": session_id, "action": {"text": raw}}).status_code
                == 200
            )
        done_state = http.get("/state", params={"session_id": session_id}).json()
        assert error_of(http.post("/step", json={"session_id": session_id, "action": {"text": raws[0]}})) == (
            409,
            "episode_over",
        )
        assert http.get("/state", params={"session_id": session_id}).json() == done_state
        http.post("/close", json={"session_id": session_id})
        assert error_of(http.post("/step", json={"session_id": session_id, "action": {"text": "a"}})) == (
            404,
            "unknown_session",
        )
        assert http.get("/health").json()["status"] == "healthy"
    local.close()
    trace = fetch_trace(served.url, session_id, state["trace"])
    assert trace == reference_trace(catalog, tmp_path)


def test_bad_websocket_input_is_typed_and_changes_nothing(served: Served, catalog: Catalog) -> None:
    local = local_env(catalog)
    with connect(served.url.replace("http://", "ws://") + "/ws") as ws:

        def ask(message: Any) -> dict[str, Any]:
            ws.send(message if isinstance(message, str) else json.dumps(message))
            reply: dict[str, Any] = json.loads(ws.recv(timeout=30))
            return reply

        assert "[not_reset]" in ask({"type": "step", "data": {"text": "a"}})["data"]["message"]
        assert ask({"type": "reset", "data": RESET})["type"] == "observation"
        state = ask({"type": "state"})
        for bad, code in (
            ("{not json", "INVALID_JSON"),
            ({"type": "step", "data": {"bogus": 1}}, "VALIDATION_ERROR"),
            ({"type": "step", "data": {"text": "a", "message": {"content": "b"}}}, "VALIDATION_ERROR"),
            ({"type": "step"}, "VALIDATION_ERROR"),
            ({"type": "fly"}, "UNKNOWN_TYPE"),
            ({"type": "mcp", "data": {}}, "UNKNOWN_TYPE"),
            ("[1, 2]", "UNKNOWN_TYPE"),
        ):
            reply = ask(bad)
            assert reply["type"] == "error" and reply["data"]["code"] == code, bad
        assert ask({"type": "state"}) == state
        # an oversized model output is the agent's format_error, as in-process; the world is untouched
        reply = ask({"type": "step", "data": {"text": "x" * (MAX_OUTPUT_CHARS + 1)}})
        assert reply["data"]["observation"]["info"]["error_kinds"] == ["format_error"]
        assert ask({"type": "state"})["data"]["state_hash"] == state["data"]["state_hash"]
    local.close()


def test_websocket_frames_nested_deep_or_not_utf8_get_typed_errors_and_keep_the_session(
    served: Served, catalog: Catalog
) -> None:
    """What HTTP refuses with a 422 (a body nested past 64 levels, bytes that are not UTF-8),
    the WebSocket refuses with an error frame typed the same (`[argument_error]`), and the
    session and its connection go on: the episode ends as in-process."""
    local = local_env(catalog)
    raws = golden_outputs(local)
    deep_data = {"type": "step", "data": {"text": "a", "x": json.loads("[" * 600 + "]" * 600)}}
    with connect(served.url.replace("http://", "ws://") + "/ws") as ws:

        def ask(message: str | bytes) -> dict[str, Any]:
            ws.send(message)
            reply: dict[str, Any] = json.loads(ws.recv(timeout=30))
            return reply

        assert ask(json.dumps({"type": "reset", "data": RESET}))["type"] == "observation"
        state = ask('{"type": "state"}')
        for bad in (
            json.dumps(deep_data),  # 500+ deep in data
            "[" * 1100 + "]" * 1100,  # 1000+ deep anywhere
            b'\xff\xfe{"type": "state"}',  # a binary frame that is not UTF-8
            "{not json",
        ):
            reply = ask(bad)
            assert reply["type"] == "error", bad[:40]
            assert reply["data"]["code"] == "INVALID_JSON", reply
            assert reply["data"]["message"].startswith("[argument_error] "), reply
        assert ask(b'{"type": "state"}') == state  # a binary frame of UTF-8 JSON is a message
        for raw in raws:
            reply = ask(json.dumps({"type": "step", "data": {"text": raw}}))
        assert reply["type"] == "observation" and reply["data"]["reward"] == 1.0
    with httpx.Client(base_url=served.url) as http:  # HTTP: the same refusal, typed the same
        session_id = http.post("/reset", json=RESET).json()["observation"]["session_id"]
        body = json.dumps({"session_id": session_id, "action": deep_data["data"]})
        refused = http.post("/step", content=body, headers={"content-type": "application/json"})
        assert error_of(refused) == (422, "argument_error")
    local.close()


# a client that opens a fresh session for each expensive step: 100 calls that page 50 tracks
# each (an input of 8098 characters; ~1-3 s of server work a step, a 3 MB answer)
ATTACKER = """
import json, sys, time
from websockets.sync.client import connect
url, rounds = sys.argv[1], int(sys.argv[2])
call = {"type": "tool_call", "name": "search_tracks", "arguments": {"page_size": 50}}
step = json.dumps({"type": "step", "data": {"action": [call] * 100}})
reset = {"task_id": "ctool-music-playlist-012", "seed": 0, "config": {"tasks": "ctool"}}
windows = []
for _ in range(rounds):
    with connect(url, max_size=None) as ws:
        ws.send(json.dumps({"type": "reset", "data": reset}))
        assert json.loads(ws.recv(timeout=120))["type"] == "observation"
        started = time.monotonic()
        ws.send(step)
        reply = ws.recv(timeout=300)
        windows.append([started, time.monotonic()])
        assert reply.startswith('{"type":"observation"'), reply[:300]
print(json.dumps(windows))
"""


def test_an_expensive_step_of_one_client_never_stalls_another_session(
    catalog: Catalog, tmp_path: Path
) -> None:
    """Issue 34: an attacker process opens a fresh session for each expensive step (~1-3 s of
    server work each); meanwhile another client steps its own episode. Every step runs off the
    server's event loop, so the victim's steps that start during an attack step take a fraction
    of it: p99 under a quarter of the attack step's time (a generous bound for the loaded 2-core
    VM, where the victim's steps take ~2-50 ms and the attack's 1-3 s; on the code before, the
    loop ran each fresh session's first step and the victim waited the attack step out)."""
    local = local_env(catalog)
    raws = golden_outputs(local)
    local.close()
    # toolgym.http's header deadline closes a WebSocket 15 s after its handshake (a bug of the
    # toolkit's, reported): these connections may live longer on a loaded machine
    slow_headers = {"TOOLGYM_HEADER_TIMEOUT_S": "600"}
    with env_server(tmp_path / "traces", env=slow_headers) as (url, _, _):
        ws_url = url.replace("http://", "ws://") + "/ws"
        attacker = subprocess.Popen([sys.executable, "-c", ATTACKER, ws_url, "2"], stdout=subprocess.PIPE)
        steps: list[tuple[float, float]] = []  # the victim's (start, seconds)
        with connect(ws_url) as ws:
            while attacker.poll() is None:
                ws.send(json.dumps({"type": "reset", "data": RESET}))
                ws.recv(timeout=300)
                for raw in raws:
                    started = time.monotonic()
                    ws.send(json.dumps({"type": "step", "data": {"text": raw}}))
                    assert json.loads(ws.recv(timeout=300))["type"] == "observation"
                    steps.append((started, time.monotonic() - started))
        out, _ = attacker.communicate(timeout=60)
    assert attacker.returncode == 0
    windows = json.loads(out)
    during = sorted(s for started, s in steps if any(a <= started < b for a, b in windows))
    attack_s = min(b - a for a, b in windows)
    assert during, "no victim step started during an attack step"
    p99 = during[min(len(during) - 1, int(len(during) * 0.99))]
    assert p99 < attack_s / 4, (
        f"victim p99 {p99 * 1000:.0f} ms over {len(during)} steps; attack step {attack_s:.2f} s"
    )


def test_websocket_message_over_the_limit_closes_only_that_session(catalog: Catalog, tmp_path: Path) -> None:
    server = serve(create_app(catalog, trace_dir=tmp_path), ws_max_size=64 * 1024)
    try:
        ws_url = server.url.replace("http://", "ws://") + "/ws"
        with connect(ws_url) as ws:
            ws.send(json.dumps({"type": "reset", "data": RESET}))
            ws.recv(timeout=30)
            ws.send(json.dumps({"type": "step", "data": {"text": "x" * 100_000}}))
            with pytest.raises(ConnectionClosed):
                ws.recv(timeout=30)
        with GenericEnvClient(base_url=server.url).sync() as other:  # the service is alive
            assert other.reset(**RESET).done is False
    finally:
        server.stop()


def test_http_body_over_the_limit_is_413(catalog: Catalog, tmp_path: Path) -> None:
    server = serve(create_app(catalog, trace_dir=tmp_path, max_body_bytes=4096))
    try:
        with httpx.Client(base_url=server.url) as http:
            session_id = http.post("/reset", json=RESET).json()["observation"]["session_id"]
            state = http.get("/state", params={"session_id": session_id}).json()
            big = {"session_id": session_id, "action": {"text": "x" * 10_000}}
            assert http.post("/step", json=big).status_code == 413
            assert http.get("/state", params={"session_id": session_id}).json() == state
    finally:
        server.stop()


def test_concurrent_steps_on_one_session(tmp_path: Path) -> None:
    gate = Gate()
    tasks = tmp_path / "gate.jsonl"
    tasks.write_text(GATE_TASKS)
    catalog = Catalog.build(task_files=[tasks], tools=gate.tools)
    server = serve(create_app(catalog, trace_dir=tmp_path / "traces"))
    try:
        with httpx.Client(base_url=server.url, timeout=30) as http:
            reset = http.post("/reset", json={"config": {"tasks": "gate"}, "task_id": "wait-1"}).json()
            session_id = reset["observation"]["session_id"]
            call = 'Thought: wait\nAction: Wait\nAction Input: {"note": "hi"}'
            first: list[httpx.Response] = []
            runner = threading.Thread(
                target=lambda: first.append(
                    http.post("/step", json={"session_id": session_id, "action": {"text": call}})
                )
            )
            runner.start()
            assert gate.entered.wait(30)  # the first step is inside the tool now
            second = http.post("/step", json={"session_id": session_id, "action": {"text": call}})
            assert error_of(second) == (409, "session_busy")
            gate.release.set()
            runner.join(30)
            assert first[0].status_code == 200
            state = http.get("/state", params={"session_id": session_id}).json()
            assert state["step_count"] == 1  # only the first step ran
    finally:
        gate.release.set()
        server.stop()


def test_session_limit_and_bearer_token(catalog: Catalog, tmp_path: Path) -> None:
    token = "s3cret-token-0123456789"
    server = serve(create_app(catalog, trace_dir=tmp_path, token=token, max_sessions=1))
    auth = {"Authorization": f"Bearer {token}"}
    try:
        with httpx.Client(base_url=server.url) as http:
            assert http.get("/health").status_code == 200  # public
            assert http.post("/reset", json=RESET).status_code == 401
            opened = http.post("/reset", json=RESET, headers=auth)
            assert opened.status_code == 200
            assert error_of(http.post("/reset", json=RESET, headers=auth)) == (503, "capacity")
            ws_url = server.url.replace("http://", "ws://") + "/ws"
            with pytest.raises(InvalidStatus):
                connect(ws_url)
            with connect(ws_url, additional_headers=auth) as ws:  # authorised, but the one slot is taken
                assert json.loads(ws.recv(timeout=30))["data"]["code"] == "CAPACITY_REACHED"
            session_id = opened.json()["observation"]["session_id"]
            http.post("/close", json={"session_id": session_id}, headers=auth)
            assert http.post("/reset", json=RESET, headers=auth).status_code == 200
    finally:
        server.stop()


def test_idle_sessions_are_reaped(catalog: Catalog, tmp_path: Path) -> None:
    server = serve(create_app(catalog, trace_dir=tmp_path, idle_timeout_s=0.5))
    try:
        with httpx.Client(base_url=server.url) as http:
            session_id = http.post("/reset", json=RESET).json()["observation"]["session_id"]
            # openenv's reaper wakes every max(timeout / 4, 5) seconds
            for _ in range(300):
                if not http.get("/sessions").json()["sessions"]:
                    break
                threading.Event().wait(0.05)
            assert http.get("/sessions").json()["sessions"] == []
            assert error_of(http.post("/step", json={"session_id": session_id, "action": {"text": "a"}})) == (
                404,
                "unknown_session",
            )
        trace = next((tmp_path / session_id).iterdir())
        end = read_trace(trace).end
        assert end is not None and end.status == "aborted"
    finally:
        server.stop()


def test_tools_of_a_remote_tool_server(tmp_path: Path) -> None:
    """A session's tools may live on a `toolgym serve` server (the operator's --tool-server)."""
    tasks = tmp_path / "calc.jsonl"
    tasks.write_text('{"id": "calc-1", "query": "290 // 5?", "tools": ["Calculator"]}\n')
    call = 'Thought: divide\nAction: Calculator\nAction Input: {"expression": "290 // 5"}'
    with ServerThread(create_tool_server([calculator], ServerConfig(mcp=False))) as tool_url:
        catalog = Catalog.build(task_files=[tasks], tools=ToolSet(), tool_servers=[tool_url])
        assert catalog.tools.names == ["Calculator"]
        server = serve(create_app(catalog, trace_dir=tmp_path / "traces"))
        try:
            with GenericEnvClient(base_url=server.url).sync() as remote:
                remote.reset(task_id="calc-1", config={"tasks": "calc"})
                result = remote.step({"text": call})
        finally:
            server.stop()
    env = ToolEnv(ToolSet([calculator]), TaskSet.load(tasks))
    env.reset(options={"task": "calc-1"})
    obs, *_ = env.step(call)
    env.close()
    assert result.observation["text"] == obs and "58" in obs


# ---- the session's user ----------------------------------------------------------------------
MULTITURN_RESET = {"task_id": "multiturn-transfer-022", "seed": 0, "agent": "oracle"}
ASK = {
    "action": {
        "action": {"type": "ask_user", "text": "What is your account number, and how much should I move?"}
    }
}


def test_a_session_chooses_its_user_and_llm_is_the_operators(tmp_path: Path) -> None:
    from tests.models.fake_openai import FakeOpenAI, text
    from tests.models.fake_openai import serve as serve_openai
    from toolgym.models.llm import ChatClient, LLMConfig
    from toolgym.models.users import ChatUserLLM

    fake = FakeOpenAI(lambda _body: text("It's account 123456, and $150."))
    with serve_openai(fake), ChatClient(LLMConfig(base_url=fake.base_url, model="user-model")) as client:
        catalog = Catalog.build(user_llm=ChatUserLLM(client))
        server = serve(create_app(catalog, trace_dir=tmp_path / "traces"))
        try:
            with httpx.Client(base_url=server.url) as http:
                assert http.get("/catalog").json()["users"] == ["rule", "scripted", "llm"]
                replies = {}
                for user in ("rule", "scripted", "llm"):
                    config = {"tasks": "multiturn", "user": user}
                    reset = http.post("/reset", json={**MULTITURN_RESET, "config": config}).json()
                    session_id = reset["observation"]["session_id"]
                    response = http.post("/step", json={"session_id": session_id, **ASK})
                    assert response.status_code == 200, response.text
                    step = response.json()
                    replies[user] = step["observation"]
                    state = http.get("/state", params={"session_id": session_id}).json()
                    assert state["config"]["user"] == user
                    http.post("/close", json={"session_id": session_id})
                bad = http.post(
                    "/reset", json={**MULTITURN_RESET, "config": {"tasks": "multiturn", "user": "x"}}
                )
                assert error_of(bad) == (422, "argument_error") and "no user 'x'" in bad.text
        finally:
            server.stop()
    assert replies["rule"]["text"] == "Observation: Account number: 123456. Amount: $150."
    assert replies["rule"]["info"]["user"]["simulator"] == "rule_based"
    assert replies["scripted"]["info"]["user"]["simulator"] == "scripted"
    assert replies["llm"]["text"] == "Observation: It's account 123456, and $150."
    assert replies["llm"]["info"]["user"]["simulator"] == "llm:user-model"
    (request,) = fake.requests  # only the llm session reached the operator's endpoint
    assert request["model"] == "user-model"


def test_without_an_operator_user_llm_a_session_cannot_choose_one(served: Served) -> None:
    config = {"tasks": "multiturn", "user": "llm", "tools": []}
    with httpx.Client(base_url=served.url) as http:
        assert http.get("/catalog").json()["users"] == ["rule", "scripted"]
        # a client cannot bring its own endpoint either: the config knows no such field
        for bad in (config, {**config, "user": "rule", "user_base_url": "http://127.0.0.1:9/v1"}):
            response = http.post("/reset", json={**MULTITURN_RESET, "config": bad})
            assert error_of(response) == (422, "argument_error"), response.text
        assert http.get("/sessions").json()["sessions"] == []


def test_each_client_sees_and_drives_only_its_own_sessions(catalog: Catalog, tmp_path: Path) -> None:
    """Two clients with their own tokens: neither lists, steps, reads or closes the other's
    session, over HTTP or over the WebSocket, nor reads its traces; a wrong token gets nothing."""
    tokens = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789xyz"}
    server = serve(create_app(catalog, trace_dir=tmp_path / "traces", token=Credentials(tokens)))
    auth = {name: {"Authorization": f"Bearer {token}"} for name, token in tokens.items()}
    try:
        with (
            httpx.Client(base_url=server.url, headers=auth["alice"], timeout=120) as alice,
            httpx.Client(base_url=server.url, headers=auth["bob"], timeout=120) as bob,
        ):
            opened = alice.post("/reset", json={"config": {"tasks": TASK_SET}, "task_id": TASK_ID})
            sid = opened.json()["observation"]["session_id"]
            assert [s["session_id"] for s in alice.get("/sessions").json()["sessions"]] == [sid]
            assert bob.get("/sessions").json()["sessions"] == []
            action = {"session_id": sid, "action": {"text": "Final Answer: mine"}}
            for answer in (
                bob.post("/step", json=action),
                bob.get("/state", params={"session_id": sid}),
                bob.post("/reset", json={"session_id": sid}),
                bob.post("/close", json={"session_id": sid}),
                bob.get(f"/sessions/{sid}/traces"),
            ):
                assert answer.status_code == 404 and answer.json()["error"]["kind"] == "unknown_session"
            assert alice.post("/step", json=action).status_code == 200  # still alice's, untouched
            assert alice.get(f"/sessions/{sid}/traces").status_code == 200
            assert bob.get(f"/sessions/{sid}/traces").status_code == 404  # traces outlive the session
            with connect(server.url.replace("http", "ws") + "/ws", additional_headers=auth["bob"]) as ws:
                ws.send(
                    json.dumps({"type": "reset", "data": {"config": {"tasks": TASK_SET}, "task_id": TASK_ID}})
                )
                ws_sid = json.loads(ws.recv())["data"]["observation"]["session_id"]
                assert [s["transport"] for s in alice.get("/sessions").json()["sessions"]] == ["http"]
                assert [s["transport"] for s in bob.get("/sessions").json()["sessions"]] == ["ws"]
                assert bob.get(f"/sessions/{ws_sid}/traces").status_code == 200
                assert alice.get(f"/sessions/{ws_sid}/traces").status_code == 404
            stranger = httpx.get(
                f"{server.url}/sessions", headers={"Authorization": "Bearer not-a-token-0123456"}
            )
            assert stranger.status_code == 401
    finally:
        server.stop()
