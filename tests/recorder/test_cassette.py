"""Cassettes: record then replay for every kind of tool (typed in-process, file in / file out,
generative, remote over real HTTP, mock apps on real SQLite), strict misses, secrets, modes."""

from __future__ import annotations

import hashlib
import io
import json
import sqlite3
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Annotated, Any

import httpx
import numpy as np
import pytest
from PIL import Image as PILImage

import toolgym.fixtures
from tests.recorder.toolsets import bank_task
from toolgym import FinalAnswer, Task, ToolCall, ToolEnv, ToolSet, tool
from toolgym.actions import Observation
from toolgym.errors import ErrorKind, InfraError, ToolError
from toolgym.files import FileHandle, FileStore
from toolgym.recorder.cassette import (
    REDACTED,
    Cassette,
    CassetteError,
    CassetteMode,
    CassetteToolSet,
    Secrets,
    StateBinding,
)
from toolgym.tools import FileParam, ReturnSpec, SchemaTool, ToolContext
from toolgym.toolservers.gta.calculator import calculator
from toolgym.toolservers.gta.drawing import addtext, drawbox

IMAGES = Path(toolgym.fixtures.__file__).parent / "images"


def file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fresh_ctx(seed: int = 0) -> ToolContext:
    store = FileStore()
    store.put_path(IMAGES / "receipt.png", name="image/receipt.png")
    return ToolContext(files=store, seed=seed)


def run_calls(
    tools: ToolSet, path: Path | None, mode: CassetteMode, calls: list[ToolCall], ctx: ToolContext, **kw: Any
) -> tuple[list[Observation], Cassette]:
    cassette = Cassette(path, mode=mode, **kw)
    wrapped = cassette.wrap(tools)
    cassette.start_episode()
    try:
        return [wrapped.call(c, ctx) for c in calls], cassette
    finally:
        cassette.close()


# ---- in-process tools, files in and out ----------------------------------------------------------------
def test_typed_tool_round_trip_and_key_is_canonical(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    calls = [ToolCall(name="Calculator", arguments={"expression": "290 // 5"}, call_id="a")]
    recorded, tape = run_calls(ToolSet([calculator]), path, "record", calls, fresh_ctx())
    assert recorded[0].content == "58" and tape.stats.recorded == 1 and tape.stats.live_calls == 1
    # another call id, same request: the recorded answer carries the new call id
    again = [ToolCall(name="Calculator", arguments={"expression": "290 // 5"}, call_id="b")]
    replayed, tape = run_calls(ToolSet([calculator]), path, "replay", again, fresh_ctx())
    assert replayed[0] == recorded[0].model_copy(update={"call_id": "b"})
    assert tape.stats.live_calls == 0 and tape.stats.hits == 1


def test_argument_order_does_not_change_the_key(tmp_path: Path) -> None:
    tape = Cassette(tmp_path / "c.sqlite", mode="record")
    ctx, binding = fresh_ctx(), StateBinding()
    one = tape.request_key(
        drawbox, ToolCall(name="DrawBox", arguments={"image": "x", "bbox": "(1, 2, 3, 4)"}), ctx, binding
    )
    two = tape.request_key(
        drawbox, ToolCall(name="DrawBox", arguments={"bbox": "(1, 2, 3, 4)", "image": "x"}), ctx, binding
    )
    assert Cassette.key_hash(one) == Cassette.key_hash(two)
    tape.close()


def test_file_outputs_are_stored_and_restored_into_a_fresh_store(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    tools = ToolSet([drawbox, addtext])
    box = ToolCall(name="DrawBox", arguments={"image": "image/receipt.png", "bbox": "(30, 480, 490, 525)"})
    ctx = fresh_ctx()
    [drawn], _ = run_calls(tools, path, "record", [box], ctx)
    assert drawn.error is None and len(drawn.files) == 1
    original = ctx.files.get(drawn.files[0]).read_bytes()
    label = ToolCall(
        name="AddText", arguments={"image": drawn.files[0].ref, "text": "TOTAL", "position": "mt"}
    )
    [labelled], _ = run_calls(tools, path, "record", [label], ctx)
    assert labelled.error is None

    # a new store holds only the task's image: replay must bring the drawn image back, so the
    # second call (which names the drawn file by its handle) finds it and hits too
    replay_ctx = fresh_ctx()
    (again_drawn, again_labelled), tape = run_calls(tools, path, "replay", [box, label], replay_ctx)
    assert again_drawn == drawn and again_labelled == labelled
    assert replay_ctx.files.get(drawn.files[0]).read_bytes() == original
    assert (
        replay_ctx.files.get(labelled.files[0]).read_bytes() == ctx.files.get(labelled.files[0]).read_bytes()
    )
    assert tape.stats.live_calls == 0 and tape.stats.hits == 2


def test_input_file_content_is_part_of_the_key(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    box = ToolCall(name="DrawBox", arguments={"image": "image/receipt.png", "bbox": "(1, 1, 20, 20)"})
    run_calls(ToolSet([drawbox]), path, "record", [box], fresh_ctx())
    other = FileStore()
    other.put_path(IMAGES / "memo.png", name="image/receipt.png")  # same name, other bytes
    [obs], tape = run_calls(ToolSet([drawbox]), path, "replay", [box], ToolContext(files=other))
    assert obs.error is not None and obs.error.kind is ErrorKind.INFRA_ERROR
    assert tape.misses[0].nearest[0].differs == ["files"]


# ---- generative tools record their seed --------------------------------------------------------------
CALLS: list[str] = []


@tool(name="Noise", category="creativity")
def noise(width: int, ctx: ToolContext) -> Annotated[FileHandle, FileParam("image")]:
    """A random image from the episode seed (a stand-in for text-to-image)."""
    CALLS.append("Noise")
    pixels = np.random.default_rng(ctx.seed).integers(0, 256, (8, width, 3), dtype=np.uint8)
    buf = io.BytesIO()
    PILImage.fromarray(pixels).save(buf, format="PNG")
    return ctx.files.put_bytes(buf.getvalue(), name=f"noise_{ctx.seed}.png", media_type="image/png")


def test_generative_tool_replays_per_seed(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    call = ToolCall(name="Noise", arguments={"width": 16})
    ctx = fresh_ctx(seed=1)
    [made], _ = run_calls(ToolSet([noise]), path, "record", [call], ctx)
    before = len(CALLS)
    replay_ctx = fresh_ctx(seed=1)
    [again], tape = run_calls(ToolSet([noise]), path, "replay", [call], replay_ctx)
    assert again == made and len(CALLS) == before and tape.stats.live_calls == 0
    assert replay_ctx.files.get(made.files[0]).read_bytes() == ctx.files.get(made.files[0]).read_bytes()
    with sqlite3.connect(path) as conn:
        (response,) = conn.execute("SELECT response_json FROM entries").fetchone()
    assert json.loads(response)["seed"] == 1
    [other], tape = run_calls(ToolSet([noise]), path, "replay", [call], fresh_ctx(seed=2))
    assert other.error_kind is ErrorKind.INFRA_ERROR and tape.misses[0].nearest[0].differs == ["seed"]


# ---- errors --------------------------------------------------------------------------------------------
RUNS: list[str] = []


@tool
def flaky(mode: str) -> str:
    """Fails in the way it is told to."""
    RUNS.append(mode)
    if mode == "tool":
        raise ToolError("no such order", data={"status": 404})
    if mode == "infra":
        raise InfraError("backend unreachable")
    if mode == "crash":
        raise ZeroDivisionError("division by zero")
    return "fine"


def test_errors_replay_as_the_same_errors_but_infra_errors_are_not_recorded(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    calls = [
        ToolCall(name="flaky", arguments={"mode": "tool"}),
        ToolCall(name="flaky", arguments={"mode": "crash"}),
        ToolCall(name="flaky", arguments={"mood": "typo"}),
        ToolCall(name="flaky", arguments={"mode": "infra"}),
    ]
    recorded, tape = run_calls(ToolSet([flaky]), path, "record", calls, fresh_ctx())
    kinds = [o.error_kind for o in recorded]
    assert kinds == [
        ErrorKind.TOOL_ERROR,
        ErrorKind.TOOL_ERROR,
        ErrorKind.ARGUMENT_ERROR,
        ErrorKind.INFRA_ERROR,
    ]
    assert recorded[0].content == {"status": 404}
    assert tape.stats.recorded == 3 and tape.stats.not_recorded == 1
    runs = len(RUNS)
    replayed, tape = run_calls(ToolSet([flaky]), path, "replay", calls, fresh_ctx())
    assert replayed[:3] == recorded[:3] and len(RUNS) == runs
    assert replayed[3].error_kind is ErrorKind.INFRA_ERROR and "cassette miss" in replayed[3].text
    assert tape.stats.misses == 1 and tape.stats.live_calls == 0


def test_arguments_without_canonical_json_are_never_recorded(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    call = ToolCall(name="Calculator", arguments={"expression": float("nan")})
    [live], tape = run_calls(ToolSet([calculator]), path, "record", [call], fresh_ctx())
    assert (
        live.error_kind is ErrorKind.ARGUMENT_ERROR
        and tape.stats.not_recorded == 1
        and tape.stats.live_calls == 1
    )
    [obs], tape = run_calls(ToolSet([calculator]), path, "replay", [call], fresh_ctx())
    assert obs.error_kind is ErrorKind.INFRA_ERROR and "canonical JSON" in obs.text and tape.stats.misses == 1


# ---- strict replay ---------------------------------------------------------------------------------------
def test_strict_miss_names_the_nearest_keys_and_never_raises(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    recorded = [
        ToolCall(name="Calculator", arguments={"expression": e}) for e in ("1 + 1", "2 * 3", "100 / 7")
    ]
    run_calls(ToolSet([calculator]), path, "record", recorded, fresh_ctx())
    wanted = ToolCall(name="Calculator", arguments={"expression": "2 * 4"}, call_id="c9")
    [obs], tape = run_calls(ToolSet([calculator]), path, "replay", [wanted], fresh_ctx())
    assert obs.error is not None and obs.error.kind is ErrorKind.INFRA_ERROR and obs.call_id == "c9"
    assert tape.stats.misses == 1 and tape.stats.live_calls == 0
    nearest = tape.misses[0].nearest
    assert nearest[0].key["arguments"]["expression"] == "2 * 3"
    assert all(n.differs == ["arguments"] for n in nearest) and len(nearest) == 3
    assert "nearest recorded keys" in obs.text and '"2 * 3"' in obs.text
    assert obs.content["cassette_miss"]["key"]["arguments"] == {"expression": "2 * 4"}


def test_a_new_tool_version_never_replays_an_old_answer(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    call = ToolCall(name="Calculator", arguments={"expression": "1 + 1"})
    run_calls(ToolSet([calculator]), path, "record", [call], fresh_ctx())
    newer = SchemaTool(
        "Calculator", calculator.parameters_schema(), lambda args, ctx: "2", version="2", backend="builtin"
    )
    [obs], tape = run_calls(ToolSet([newer]), path, "replay", [call], fresh_ctx())
    assert obs.error_kind is ErrorKind.INFRA_ERROR and tape.misses[0].nearest[0].differs == ["version"]


def test_replay_leaves_the_cassette_file_untouched(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    call = ToolCall(name="Calculator", arguments={"expression": "3 + 4"})
    run_calls(ToolSet([calculator]), path, "record", [call], fresh_ctx())
    before = file_sha(path)
    run_calls(
        ToolSet([calculator]),
        path,
        "replay",
        [call, ToolCall(name="Calculator", arguments={"expression": "0"})],
        fresh_ctx(),
    )
    assert file_sha(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.sqlite"]  # no WAL or journal left behind


def test_bad_cassettes_and_settings_are_refused(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="does not exist"):
        Cassette(tmp_path / "missing.sqlite", mode="replay")
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t(x)")
    with pytest.raises(CassetteError, match="not a readable toolgym cassette"):
        Cassette(other, mode="replay")
    with pytest.raises(CassetteError, match="unknown cassette mode"):
        Cassette(tmp_path / "c.sqlite", mode="rewind")  # type: ignore[arg-type]
    with pytest.raises(CassetteError, match="needs a cassette file"):
        Cassette(None, mode="record")
    with pytest.raises(CassetteError, match="at least"):
        Secrets(values=("ab",))


# ---- modes -----------------------------------------------------------------------------------------------
def test_record_missing_replays_hits_and_records_misses(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    first = ToolCall(name="Calculator", arguments={"expression": "6 * 7"})
    second = ToolCall(name="Calculator", arguments={"expression": "6 * 8"})
    run_calls(ToolSet([calculator]), path, "record", [first], fresh_ctx())
    [a, b], tape = run_calls(ToolSet([calculator]), path, "record_missing", [first, second], fresh_ctx())
    assert (a.content, b.content) == ("42", "48")
    assert (tape.stats.hits, tape.stats.live_calls, tape.stats.recorded) == (1, 1, 1)
    _, tape = run_calls(ToolSet([calculator]), path, "replay", [first, second], fresh_ctx())
    assert tape.stats.hits == 2 and tape.stats.misses == 0


def test_live_mode_calls_through_and_stores_nothing(tmp_path: Path) -> None:
    runs = len(RUNS)
    [obs], tape = run_calls(
        ToolSet([flaky]), None, "live", [ToolCall(name="flaky", arguments={"mode": "ok"})], fresh_ctx()
    )
    assert obs.content == "fine" and len(RUNS) == runs + 1 and tape.stats.live_calls == 1 and len(tape) == 0


COUNTER = {"value": 0}


@tool(mutates_state=True)
def bump(by: int) -> int:
    """A stateful tool with no state hash (like a remote app): the n-th identical call is keyed apart."""
    COUNTER["value"] += by
    return COUNTER["value"]


def test_stateful_tool_without_a_state_hash_is_keyed_by_call_order(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    calls = [ToolCall(name="bump", arguments={"by": 1})] * 2
    COUNTER["value"] = 0
    recorded, _ = run_calls(ToolSet([bump]), path, "record", calls, fresh_ctx())
    assert [o.content for o in recorded] == [1, 2]
    COUNTER["value"] = 100
    tape = Cassette(path, mode="replay")
    wrapped = tape.wrap(ToolSet([bump]))
    for _ in range(2):  # every episode starts counting again
        tape.start_episode()
        assert [wrapped.call(c, fresh_ctx()).content for c in calls] == [1, 2]
    tape.close()
    assert COUNTER["value"] == 100 and tape.stats.live_calls == 0


def test_envs_in_threads_can_share_a_cassette(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    calls = [ToolCall(name="Calculator", arguments={"expression": f"{i} * 3"}) for i in range(40)]
    with Cassette(path, mode="record") as tape:
        wrapped = tape.wrap(ToolSet([calculator]))
        with ThreadPoolExecutor(4) as pool:
            recorded = list(pool.map(lambda c: wrapped.call(c, fresh_ctx()), calls))
        assert tape.stats.recorded == 40
    with Cassette(path, mode="replay") as tape:
        wrapped = tape.wrap(ToolSet([calculator]))
        with ThreadPoolExecutor(4) as pool:
            replayed = list(pool.map(lambda c: wrapped.call(c, fresh_ctx()), calls * 3))
        assert replayed == recorded * 3 and tape.stats.hits == 120 and tape.stats.live_calls == 0


def test_wrapping_survives_subset_and_merge(tmp_path: Path) -> None:
    tape = Cassette(tmp_path / "c.sqlite", mode="record")
    wrapped = tape.wrap(ToolSet([calculator, flaky]))
    assert isinstance(wrapped.subset(["Calculator"]), CassetteToolSet)
    assert isinstance(wrapped.merged(ToolSet([bump])), CassetteToolSet)
    assert wrapped.to_openai() == ToolSet([calculator, flaky]).to_openai()
    unknown = wrapped.call(ToolCall(name="nope"), fresh_ctx())
    assert unknown.error_kind is ErrorKind.UNKNOWN_TOOL and tape.stats.live_calls == 0
    tape.close()


# ---- a remote tool over real HTTP, with secrets ---------------------------------------------------------
API_KEY = "sk-live-0123456789abcdef"
TOKEN = "tok-env-9f8e7d6c5b4a"


class _Server(ThreadingHTTPServer):
    hits = 0


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.hits += 1
        if body.get("api_key") != API_KEY:
            status, payload = 401, {"error": "bad api key"}
        else:
            status = 200
            payload = {"upper": body["text"].upper(), "session": self.headers.get("X-Token", "")}
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass


@pytest.fixture
def server() -> Iterator[_Server]:
    srv = _Server(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def remote_tool(url: str, token: str) -> SchemaTool:
    def call(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        try:
            response = httpx.post(url, json=arguments, headers={"X-Token": token}, timeout=5)
        except httpx.TransportError as exc:
            raise InfraError(f"remote tool unreachable: {exc}") from None
        if response.status_code >= 400:
            raise ToolError(f"HTTP {response.status_code}", data=response.json())
        return response.json()

    schema = {
        "properties": {"text": {"type": "string"}, "api_key": {"type": "string"}},
        "required": ["text", "api_key"],
    }
    return SchemaTool("Shout", schema, call, returns=[ReturnSpec(type="object")])


def test_remote_tool_round_trip_over_http_with_secrets_kept_out(
    tmp_path: Path, server: _Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLGYM_TEST_TOKEN", TOKEN)
    secrets = Secrets(env_vars=("TOOLGYM_TEST_TOKEN",))
    url = f"http://127.0.0.1:{server.server_address[1]}/shout"
    tools = ToolSet([remote_tool(url, TOKEN)])
    path = tmp_path / "c.sqlite"
    calls = [
        ToolCall(name="Shout", arguments={"text": "hello", "api_key": API_KEY}),
        ToolCall(name="Shout", arguments={"text": "hello", "api_key": "wrong-key-000"}),
    ]
    live, tape = run_calls(tools, path, "record", calls, fresh_ctx(), secrets=secrets)
    assert live[0].content == {"upper": "HELLO", "session": TOKEN}
    assert live[1].error_kind is ErrorKind.TOOL_ERROR and server.hits == 2
    # both calls have the same key once the key is redacted: the second (a 401) overwrote the first
    assert tape.stats.recorded == 2 and len(Cassette(path, mode="replay")) == 1
    stored = path.read_bytes()
    assert API_KEY.encode() not in stored and TOKEN.encode() not in stored and b"wrong-key" not in stored

    path2 = tmp_path / "c2.sqlite"
    run_calls(tools, path2, "record", calls[:1], fresh_ctx(), secrets=secrets)
    hits = server.hits
    # replay with another key value: secrets are not part of the key, and the server is not asked
    [obs], tape = run_calls(
        tools,
        path2,
        "replay",
        [ToolCall(name="Shout", arguments={"text": "hello", "api_key": "other-key"})],
        fresh_ctx(),
        secrets=secrets,
    )
    assert obs.content == {"upper": "HELLO", "session": REDACTED}
    assert server.hits == hits and tape.stats.live_calls == 0


def test_remote_infra_error_is_not_recorded(tmp_path: Path, server: _Server) -> None:
    url = f"http://127.0.0.1:{server.server_address[1]}/shout"
    server.shutdown()
    server.server_close()
    call = ToolCall(name="Shout", arguments={"text": "hi", "api_key": API_KEY})
    [obs], tape = run_calls(
        ToolSet([remote_tool(url, "t0k3n")]), tmp_path / "c.sqlite", "record", [call], fresh_ctx()
    )
    assert obs.error_kind is ErrorKind.INFRA_ERROR
    assert tape.stats.not_recorded == 1 and tape.stats.recorded == 0


# ---- mock apps: stateful tools on real SQLite -----------------------------------------------------------


def drive(env: ToolEnv, task: Task, actions: list[Any]) -> list[dict[str, Any]]:
    _, info = env.reset(seed=0, options={"task": task})
    infos = [{"state_hash": info["state_hash"]}]
    for action in actions:
        *_, step_info = env.step(action)
        infos.append({k: step_info.get(k) for k in ("observations", "state_hash", "state_diff", "scores")})
    return infos


def test_mock_app_writes_replay_with_the_same_state_hashes_and_diffs(tmp_path: Path) -> None:
    task, a, b = bank_task()
    actions: list[Any] = [
        ToolCall(name="get_balance", arguments={"account_id": a}),
        ToolCall(name="transfer", arguments={"from_account_id": a, "to_account_id": b, "amount": 12.5}),
        ToolCall(name="get_balance", arguments={"account_id": a}),  # same request, new state
        ToolCall(name="transfer", arguments={"from_account_id": a, "to_account_id": a, "amount": 1}),
        FinalAnswer(text="done"),
    ]
    path = tmp_path / "c.sqlite"
    with Cassette(path, mode="record") as tape:
        recorded = drive(ToolEnv(ToolSet(), [task], cassette=tape), task, actions)
    first, second = recorded[1]["observations"][0]["content"], recorded[3]["observations"][0]["content"]
    assert second["balance"] == pytest.approx(first["balance"] - 12.5)
    assert recorded[2]["state_diff"] and recorded[4]["observations"][0]["error"]["kind"] == "tool_error"
    with Cassette(path, mode="replay") as tape:
        replayed = drive(ToolEnv(ToolSet(), [task], cassette=tape), task, actions)
        assert tape.stats.live_calls == 0 and tape.stats.hits == 4 and tape.stats.misses == 0
    assert replayed == recorded
    live = drive(ToolEnv(ToolSet(), [task]), task, actions)
    assert live == recorded


def test_replayed_writes_leave_the_world_where_a_live_run_does(tmp_path: Path) -> None:
    """Counters and ids too: a live call after replayed writes gets the ids a live run gets."""
    task, a, b = bank_task()
    move = ToolCall(name="transfer", arguments={"from_account_id": a, "to_account_id": b, "amount": 3})
    again = ToolCall(name="transfer", arguments={"from_account_id": b, "to_account_id": a, "amount": 1})
    path = tmp_path / "c.sqlite"
    with Cassette(path, mode="record") as tape:
        drive(ToolEnv(ToolSet(), [task], cassette=tape), task, [move])
    with Cassette(path, mode="record_missing") as tape:
        mixed = drive(ToolEnv(ToolSet(), [task], cassette=tape), task, [move, again])
        assert (tape.stats.hits, tape.stats.live_calls) == (1, 1)
    live = drive(ToolEnv(ToolSet(), [task]), task, [move, again])
    assert mixed == live
    assert (
        mixed[2]["observations"][0]["content"]["transfer_id"]
        != mixed[1]["observations"][0]["content"]["transfer_id"]
    )


# ---- simulated users' LLM calls ------------------------------------------------------------------
class EchoUserLLM:
    """A user LLM in-process: replies with the last message it was sent, or fails."""

    model = "echo-user"

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls = 0

    def chat(self, messages: Any, *, seed: int | None) -> str:
        self.calls += 1
        if self.fail:
            raise InfraError("endpoint down")
        return f"you said: {messages[-1]['content']} (seed {seed})"


def test_user_llm_calls_record_replay_and_fill_in(tmp_path: Path) -> None:
    path = tmp_path / "users.sqlite"
    ask = [{"role": "system", "content": "play the user"}, {"role": "user", "content": "key sk-secret-42?"}]
    secrets = Secrets(values=("sk-secret-42",))
    live = EchoUserLLM()
    with Cassette(path, mode="record", secrets=secrets) as cassette:
        user = cassette.wrap_user_llm(live)
        assert user.model == "echo-user"
        assert user.chat(ask, seed=3) == "you said: key sk-secret-42? (seed 3)"
        # a failed call is not an answer: it propagates and nothing is stored
        with pytest.raises(InfraError):
            cassette.wrap_user_llm(EchoUserLLM(fail=True)).chat(ask, seed=4)
        assert cassette.stats.recorded == 1 and len(cassette) == 1
        assert cassette.stats.live_calls == 2 and cassette.stats.not_recorded == 1
    stored = sqlite3.connect(path).execute("SELECT key_json, response_json FROM entries").fetchall()
    assert "sk-secret-42" not in json.dumps(stored) and REDACTED in stored[0][0]
    offline = EchoUserLLM(fail=True)
    with Cassette(path, mode="replay", secrets=secrets) as replay:
        user = replay.wrap_user_llm(offline)
        assert user.chat(ask, seed=3) == f"you said: key {REDACTED}? (seed 3)"
        with pytest.raises(InfraError, match="cassette miss in strict replay"):
            user.chat(ask, seed=5)  # another seed is another request
        assert offline.calls == 0 and replay.stats.hits == 1 and replay.stats.misses == 1
    fresh = EchoUserLLM()
    with Cassette(path, mode="record_missing", secrets=secrets) as both:
        user = both.wrap_user_llm(fresh)
        user.chat(ask, seed=3)
        user.chat(ask, seed=5)
        assert fresh.calls == 1 and both.stats.hits == 1 and both.stats.recorded == 1
    with Cassette(None, mode="live") as passthrough:
        assert passthrough.wrap_user_llm(fresh).chat(ask, seed=1).endswith("(seed 1)")
        assert passthrough.stats.live_calls == 1
