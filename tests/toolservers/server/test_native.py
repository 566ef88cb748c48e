"""The native JSON API on a real uvicorn server: schemas, calls, typed errors and their status
codes, files, limits (size, concurrency, queue, timeout), loading, devices, tokens, metrics."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from toolgym.mocks.world import MockWorld
from toolgym.tools import BaseTool, ToolContext, tool
from toolgym.toolservers.gta.calculator import calculator
from toolgym.toolservers.gta.drawing import drawbox
from toolgym.toolservers.server import (
    ServerConfig,
    ServerThread,
    ToolConfig,
    ToolProvider,
    create_app,
    static,
)
from toolgym.toolservers.server.config import BatchConfig
from toolgym.toolservers.server.providers import DeviceError, app_providers

from .helpers import Gate, fails, flip, metrics, png_bytes, running, size, wait_for


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with running([calculator, drawbox, flip, size, fails]) as url:
        yield url


@pytest.fixture(scope="module")
def http(server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server) as client:
        yield client


def call(http: httpx.Client, name: str, arguments: Any, **extra: Any) -> httpx.Response:
    return http.post(f"/v1/tools/{name}/call", json={"arguments": arguments, **extra})


def test_health_ready_version(http: httpx.Client) -> None:
    assert http.get("/v1/health").json() == {"status": "ok"}
    ready = http.get("/v1/ready")
    assert ready.status_code == 200
    assert ready.json() == {
        "ready": True,
        "tools": dict.fromkeys(["Calculator", "DrawBox", "Flip", "Size", "Fails"], "ready"),
    }
    version = http.get("/v1/version").json()
    assert version["api_version"] == "1"
    assert version["faces"] == ["native", "agentlego", "mcp"]
    assert version["tools"]["Calculator"] == calculator.version


def test_tool_list_publishes_the_tools_own_schemas(http: httpx.Client) -> None:
    tools = {t["name"]: t for t in http.get("/v1/tools").json()["tools"]}
    assert list(tools) == ["Calculator", "DrawBox", "Flip", "Size", "Fails"]
    for t in (calculator, drawbox, flip, size):
        d = tools[t.name]
        assert d["parameters"] == t.parameters_schema()
        assert d["returns"] == t.returns_schema()
        assert d["description"] == t.description
        assert d["category"] == t.category
    assert tools["DrawBox"]["file_params"] == {"image": "image"}
    assert tools["Calculator"]["limits"]["max_concurrency"] == 4  # the server default
    one = http.get("/v1/tools/Size").json()
    assert one["returns_spec"] == [{"type": "int", "description": None}, {"type": "int", "description": None}]
    missing = http.get("/v1/tools/Nope")
    assert missing.status_code == 404 and missing.json()["error"]["kind"] == "unknown_tool"


def test_call_result_is_the_in_process_observation(http: httpx.Client) -> None:
    r = call(http, "Calculator", {"expression": "290 // 5"}, seed=3, task_id="t1")
    assert r.status_code == 200
    body = r.json()
    assert body["ok"] is True
    assert (body["type"], body["text"], body["content"], body["error"]) == ("tool_result", "58", "58", None)
    assert body["latency_ms"] >= 0


@pytest.mark.parametrize(
    ("name", "arguments", "status", "kind"),
    [
        ("Calculator", {"expression": "1/0"}, 400, "tool_error"),
        ("Fails", {"reason": "because"}, 400, "tool_error"),
        ("Calculator", {"expr": "1"}, 422, "argument_error"),
        ("Calculator", {"expression": 5}, 422, "argument_error"),
        ("DrawBox", {"image": "no-such-file.png", "bbox": "(1, 1, 2, 2)"}, 422, "argument_error"),
        ("Nope", {}, 404, "unknown_tool"),
    ],
)
def test_errors_are_typed_with_matching_status(
    http: httpx.Client, name: str, arguments: dict[str, Any], status: int, kind: str
) -> None:
    r = call(http, name, arguments)
    assert r.status_code == status
    body = r.json()
    assert body["ok"] is False
    assert body["error"]["kind"] == kind
    assert body["text"] == f"{kind}: {body['error']['message']}"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "not JSON"),
        (b"[1, 2]", "JSON object"),
        (b'{"arguments": [1]}', "arguments must be a JSON object"),
        (b'{"arguments": {}, "seed": "x"}', "seed must be an integer"),
        (b'{"arguments": {}, "clock": "yesterday"}', "ISO 8601"),
        (b'{"arguments": {}, "clock": "2024-01-01T00:00:00"}', "time zone"),
        (b'{"arguments": {}, "surprise": 1}', "unknown fields"),
    ],
)
def test_malformed_call_envelopes_are_argument_errors(http: httpx.Client, body: bytes, message: str) -> None:
    r = http.post("/v1/tools/Calculator/call", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 422
    assert r.json()["error"]["kind"] == "argument_error"
    assert message in r.json()["error"]["message"]
    # the server lost nothing: the next call works
    assert call(http, "Calculator", {"expression": "2+2"}).json()["content"] == "4"


def test_files_upload_download_and_use(http: httpx.Client) -> None:
    data = png_bytes()
    sha = hashlib.sha256(data).hexdigest()
    assert http.head(f"/v1/files/{sha}").status_code == 404
    wrong = http.put(f"/v1/files/{'0' * 64}", content=data, headers={"Content-Type": "image/png"})
    assert wrong.status_code == 400 and "hashes to" in wrong.json()["error"]["message"]
    assert http.head(f"/v1/files/{sha}").status_code == 404  # a refused upload stores nothing
    put = http.put(
        f"/v1/files/{sha}",
        params={"name": "image/red.png"},
        content=data,
        headers={"Content-Type": "image/png"},
    )
    assert put.status_code == 201
    assert put.json() == {"sha256": sha, "media_type": "image/png", "name": "image/red.png"}
    got = http.get(f"/v1/files/{sha}")
    assert got.content == data and got.headers["content-type"] == "image/png"
    assert http.head(f"/v1/files/{sha}").status_code == 200
    r = call(http, "Size", {"image": f"file:{sha}"})
    assert r.json()["content"] == [40, 20]
    flipped = call(http, "Flip", {"image": "image/red.png", "times": 1}).json()
    handle = flipped["files"][0]
    assert flipped["content"] == handle
    assert flipped["text"] == f"image file:{handle['sha256']}"
    out = http.get(f"/v1/files/{handle['sha256']}").content
    assert hashlib.sha256(out).hexdigest() == handle["sha256"]
    # multipart upload of the same bytes gives the same handle
    posted = http.post("/v1/files", files={"file": ("again.png", data, "image/png")})
    assert posted.status_code == 201 and posted.json()["sha256"] == sha
    assert http.post("/v1/files", content=b"raw").status_code == 415


def test_unknown_file_handle_answers_409_with_the_missing_hashes(http: httpx.Client) -> None:
    sha = hashlib.sha256(b"never uploaded").hexdigest()
    r = call(http, "Size", {"image": f"file:{sha}"})
    assert r.status_code == 409
    assert r.json()["missing_files"] == [sha]
    assert r.json()["error"]["kind"] == "argument_error"


def test_request_size_limits_per_tool(http: httpx.Client) -> None:
    # under the server default (32 MiB) a 40 kB expression reaches the tool, which refuses it
    big = "1+" * 20_000 + "1"
    r = call(http, "Calculator", {"expression": big})
    assert r.status_code == 400 and "characters" in r.json()["error"]["message"]
    with running([calculator], tools_config={"Calculator": ToolConfig(max_request_bytes=4096)}) as url:
        small = httpx.post(f"{url}/v1/tools/Calculator/call", json={"arguments": {"expression": big}})
        assert small.status_code == 413
        assert small.json()["error"]["kind"] == "argument_error"
        assert (
            httpx.post(f"{url}/v1/tools/Calculator/call", json={"arguments": {"expression": "6*7"}}).json()[
                "content"
            ]
            == "42"
        )


def test_metrics_count_calls_errors_and_latency() -> None:
    with running([calculator, fails]) as url:
        for expression in ("1+1", "2+2", "1/0"):
            httpx.post(f"{url}/v1/tools/Calculator/call", json={"arguments": {"expression": expression}})
        httpx.post(f"{url}/v1/tools/Calculator/call", json={"arguments": {}})
        m = metrics(url, "Calculator")
        assert m["calls"] == 4
        assert m["errors"] == 2
        assert m["errors_by_kind"] == {"argument_error": 1, "tool_error": 1}
        assert m["latency_ms"]["window"] == 4
        assert 0 < m["latency_ms"]["p50"] <= m["latency_ms"]["max"]
        assert metrics(url, "Fails")["calls"] == 0


def test_concurrency_limit_queue_and_overload() -> None:
    gate = Gate()
    config = ServerConfig(tools_config={"Gated": ToolConfig(max_concurrency=2, max_queue=3)})
    with running([gate.tool()], config) as url, ThreadPoolExecutor(8) as pool:
        try:
            futures = [
                pool.submit(
                    httpx.post,
                    f"{url}/v1/tools/Gated/call",
                    json={"arguments": {"label": str(i)}},
                    timeout=30,
                )
                for i in range(5)
            ]
            wait_for(
                lambda: metrics(url, "Gated")["waiting"] == 3 and metrics(url, "Gated")["in_flight"] == 2
            )
            assert gate.running == 2  # the limit holds: two run, three wait
            extra = httpx.post(f"{url}/v1/tools/Gated/call", json={"arguments": {}}, timeout=30)
            assert extra.status_code == 503
            assert extra.json()["error"]["kind"] == "infra_error"
            assert metrics(url, "Gated")["rejected"] == 1
        finally:
            gate.release()
        results = [f.result().json()["content"] for f in futures]
    assert sorted(results) == [f"done {i}" for i in range(5)]
    assert gate.most == 2


def test_timeout_answers_408_and_keeps_the_slot_until_the_thread_ends() -> None:
    gate = Gate()
    config = ServerConfig(tools_config={"Gated": ToolConfig(timeout_s=0.2, max_concurrency=1)})
    with running([gate.tool()], config) as url:
        try:
            r = httpx.post(f"{url}/v1/tools/Gated/call", json={"arguments": {}}, timeout=30)
            assert r.status_code == 408
            assert r.json()["error"]["kind"] == "timeout"
            # the timed-out call still runs in its thread and holds the only slot
            assert metrics(url, "Gated")["in_flight"] == 1
        finally:
            gate.release()
        wait_for(lambda: metrics(url, "Gated")["in_flight"] == 0)
        ok = httpx.post(f"{url}/v1/tools/Gated/call", json={"arguments": {"label": "later"}}, timeout=30)
        assert ok.json()["content"] == "done later"


def test_subset_of_tools_and_bad_configs() -> None:
    with running([calculator, drawbox, fails], tools=["Calculator"]) as url:
        names = [t["name"] for t in httpx.get(f"{url}/v1/tools").json()["tools"]]
        assert names == ["Calculator"]
        assert httpx.post(f"{url}/v1/tools/DrawBox/call", json={"arguments": {}}).status_code == 404
    with pytest.raises(ValueError, match="no such tools"):
        create_app([calculator], ServerConfig(tools=["OCR"]))
    with pytest.raises(ValueError, match="does not host"):
        create_app([calculator], ServerConfig(tools_config={"OCR": ToolConfig(max_concurrency=1)}))

    @tool(name="v1")
    def reserved() -> str:
        """A name the server's own routes use."""
        return ""

    with pytest.raises(ValueError, match="reserved"):
        create_app([reserved])


def test_token_required_beyond_loopback_and_checked_when_set() -> None:
    with pytest.raises(ValidationError, match="beyond loopback"):
        ServerConfig(host="0.0.0.0")
    with pytest.raises(ValidationError, match="at least 16"):
        ServerConfig(token="short")
    assert ServerConfig(host="0.0.0.0", token="x" * 16).host == "0.0.0.0"
    assert ServerConfig(host="::1").host == "::1"
    token = "s3cret-token-0123456789"
    with running([calculator], token=token) as url:
        assert httpx.get(f"{url}/v1/health").status_code == 200  # liveness stays public
        assert httpx.get(f"{url}/openapi.json").status_code == 200  # AgentLego clients fetch it bare
        denied = httpx.post(f"{url}/v1/tools/Calculator/call", json={"arguments": {"expression": "1"}})
        assert denied.status_code == 401 and denied.json()["error"]["kind"] == "infra_error"
        assert httpx.get(f"{url}/v1/tools", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert httpx.post(f"{url}/Calculator", data={"expression": "1"}).status_code == 401
        ok = httpx.post(
            f"{url}/v1/tools/Calculator/call",
            json={"arguments": {"expression": "7*6"}},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert ok.json()["content"] == "42"


def _counting_provider(
    name: str, devices: tuple[str, ...] = ("cpu",), fail: bool = False
) -> tuple[ToolProvider, dict[str, Any]]:
    state: dict[str, Any] = {"warmups": 0, "device": None}

    def build(device: str) -> BaseTool:
        state["device"] = device

        @tool(name=name)
        def model_tool(text: str) -> str:
            """Answers with the device its model was placed on."""
            return f"{text} on {device} after {state['warmups']} warm-up(s)"

        return model_tool

    def warmup(_t: BaseTool) -> None:
        state["warmups"] += 1
        if fail:
            raise FileNotFoundError(f"model weights for {name} are missing: run `toolgym models pull {name}`")

    return ToolProvider(name, build, devices=devices, warmup=warmup), state


def test_eager_and_lazy_loading_and_device_placement() -> None:
    eager, eager_state = _counting_provider("Eager", devices=("cpu", "cuda"))
    lazy, lazy_state = _counting_provider("Lazy")
    config = ServerConfig(
        tools_config={"Eager": ToolConfig(device="cuda:1"), "Lazy": ToolConfig(load="lazy")},
    )
    with running([eager, lazy], config) as url:
        assert eager_state == {"warmups": 1, "device": "cuda:1"}  # loaded before the first request
        assert lazy_state["warmups"] == 0
        assert httpx.get(f"{url}/v1/ready").json()["tools"] == {"Eager": "ready", "Lazy": "lazy"}
        described = {t["name"]: t for t in httpx.get(f"{url}/v1/tools").json()["tools"]}
        assert (described["Eager"]["device"], described["Eager"]["loaded"]) == ("cuda:1", True)
        assert (described["Lazy"]["load"], described["Lazy"]["loaded"]) == ("lazy", False)
        r = httpx.post(f"{url}/v1/tools/Lazy/call", json={"arguments": {"text": "hi"}})
        assert r.json()["content"] == "hi on cpu after 1 warm-up(s)"
        httpx.post(f"{url}/v1/tools/Lazy/call", json={"arguments": {"text": "again"}})
        assert lazy_state["warmups"] == 1  # once, not per call
        assert metrics(url, "Lazy")["load_s"] is not None
    with pytest.raises(DeviceError, match="supports: cpu"):
        create_app(
            [_counting_provider("CpuOnly")[0]],
            ServerConfig(tools_config={"CpuOnly": ToolConfig(device="cuda")}),
        )


def test_failed_model_load_eager_stops_the_server_lazy_is_an_infra_error() -> None:
    broken, _ = _counting_provider("Broken", fail=True)
    with pytest.raises(RuntimeError, match="toolgym models pull Broken"):
        ServerThread(create_app([broken])).start()
    broken, state = _counting_provider("Broken", fail=True)
    with running([broken], ServerConfig(load="lazy")) as url:
        r = httpx.post(f"{url}/v1/tools/Broken/call", json={"arguments": {"text": "x"}})
        assert r.status_code == 503
        assert r.json()["error"]["kind"] == "infra_error"
        assert "toolgym models pull Broken" in r.json()["error"]["message"]
        assert httpx.get(f"{url}/v1/ready").json()["tools"] == {"Broken": "failed"}
        httpx.post(f"{url}/v1/tools/Broken/call", json={"arguments": {"text": "x"}})
        assert state["warmups"] == 2  # a failed load is tried again on the next call


def test_mock_app_world_served_as_is() -> None:
    world = MockWorld(["banking"])
    before = world.state_hash()
    with running(app_providers(["banking"])) as url:
        tools = {t["name"] for t in httpx.get(f"{url}/v1/tools").json()["tools"]}
        assert {"get_balance", "transfer"} <= tools
        balance = httpx.post(
            f"{url}/v1/tools/get_balance/call", json={"arguments": {"account_id": "ACC-10001"}}
        )
        assert balance.status_code == 200
        assert balance.json()["content"] == world.call("get_balance", account_id="ACC-10001")
        moved = httpx.post(
            f"{url}/v1/tools/transfer/call",
            json={
                "arguments": {"from_account_id": "ACC-10001", "to_account_id": "ACC-10002", "amount": 25.0}
            },
        )
        assert moved.json()["content"]["status"] == "success"
        after = httpx.post(
            f"{url}/v1/tools/get_balance/call", json={"arguments": {"account_id": "ACC-10001"}}
        )
        assert after.json()["content"] != balance.json()["content"]  # the served world really changed
        unknown = httpx.post(f"{url}/v1/tools/get_balance/call", json={"arguments": {"account_id": "ACC-0"}})
        assert unknown.json()["ok"] is False
    assert world.state_hash() == before  # a separate world is untouched


def test_mock_app_calls_run_one_at_a_time() -> None:
    gate = Gate()
    first_app, second_app = gate.tool("AppA", category="app"), gate.tool("AppB", category="app")
    with running([first_app, second_app]) as url, ThreadPoolExecutor(2) as pool:
        try:
            first = pool.submit(httpx.post, f"{url}/v1/tools/AppA/call", json={"arguments": {}}, timeout=30)
            wait_for(lambda: gate.running == 1)
            second = pool.submit(httpx.post, f"{url}/v1/tools/AppB/call", json={"arguments": {}}, timeout=30)
            # AppB's own limit would let it run; it waits because both share one world
            wait_for(lambda: metrics(url, "AppB")["waiting"] == 1)
            assert gate.running == 1
        finally:
            gate.release()
        assert first.result().json()["content"] == second.result().json()["content"] == "done x"
    assert gate.most == 1


def test_provider_defaults_sit_under_server_config() -> None:
    provider = static(calculator, defaults=ToolConfig(max_concurrency=1, timeout_s=5))
    config = ServerConfig(
        defaults=ToolConfig(max_concurrency=8, timeout_s=30, batch=BatchConfig(max_batch_size=2)),
        tools_config={"Calculator": ToolConfig(timeout_s=9)},
    )
    resolved = config.tool_config("Calculator", provider.defaults)
    assert (resolved.max_concurrency, resolved.timeout_s, resolved.device) == (1, 9, "cpu")
    assert resolved.batch == BatchConfig(max_batch_size=2)


def test_config_file_toml(tmp_path: Any) -> None:
    path = tmp_path / "server.toml"
    path.write_text(
        '[server]\nport = 9999\ntools = ["Calculator", "OCR"]\nload = "lazy"\n'
        "[defaults]\ntimeout_s = 12\n"
        '[tools.OCR]\nmax_concurrency = 1\ndevice = "cpu"\nbatch = { max_batch_size = 4, max_wait_ms = 2 }\n'
    )
    config = ServerConfig.load_file(path, port=1234)
    assert (config.port, config.tools, config.load) == (1234, ["Calculator", "OCR"], "lazy")
    ocr = config.tool_config("OCR")
    assert (ocr.max_concurrency, ocr.timeout_s, ocr.batch) == (
        1,
        12,
        BatchConfig(max_batch_size=4, max_wait_ms=2),
    )
    (tmp_path / "bad.json").write_text('{"tools": {"OCR": {"max_concurrency": 0}}}')
    with pytest.raises(ValidationError):
        ServerConfig.load_file(tmp_path / "bad.json")


def test_context_reaches_the_tool() -> None:
    @tool(name="Ctx")
    def ctx_tool(ctx: ToolContext) -> dict[str, Any]:
        """Reports what the env lent it."""
        return {"seed": ctx.seed, "clock": ctx.clock.isoformat(), "task": ctx.task_id}

    with running([ctx_tool]) as url:
        r = httpx.post(
            f"{url}/v1/tools/Ctx/call",
            json={"arguments": {}, "seed": 7, "clock": "2025-03-01T12:00:00+00:00", "task_id": "t-9"},
        )
        assert r.json()["content"] == {"seed": 7, "clock": "2025-03-01T12:00:00+00:00", "task": "t-9"}


def test_blocking_calls_do_not_block_other_tools() -> None:
    gate = Gate()
    with running([gate.tool(), calculator]) as url, ThreadPoolExecutor(1) as pool:
        try:
            held = pool.submit(httpx.post, f"{url}/v1/tools/Gated/call", json={"arguments": {}}, timeout=30)
            wait_for(lambda: gate.running == 1)
            quick = httpx.post(f"{url}/v1/tools/Calculator/call", json={"arguments": {"expression": "3*3"}})
            assert quick.json()["content"] == "9"
            assert not held.done()
        finally:
            gate.release()
        assert held.result().json()["content"] == "done x"


def _no_server_path(text: str, *dirs: object) -> None:
    for d in dirs:
        assert str(d) not in text, text
    assert "/tmp/" not in text and "toolgym-files-" not in text and 'File "' not in text, text


def test_errors_never_name_server_paths_or_other_clients_files(tmp_path: Any) -> None:
    store = tmp_path / "files"
    with running([size, flip], ServerConfig(files_dir=store)) as url:
        secret = png_bytes(8, 8, "blue")
        sha = hashlib.sha256(secret).hexdigest()
        # client A uploads a file under a telling name
        a = httpx.put(
            f"{url}/v1/files/{sha}?name=secret-plan.png",
            content=secret,
            headers={"content-type": "image/png"},
        )
        assert a.status_code == 201
        # client B guesses: a generic miss that names nothing it did not send (no listing of the
        # store's files, no basename matching, no directory)
        for guess in ("images/secret-plan.png", "nope.png", "secret", str(store / sha[:2] / sha)):
            r = httpx.post(f"{url}/v1/tools/Size/call", json={"arguments": {"image": guess}})
            assert r.status_code == 422 and r.json()["error"]["kind"] == "argument_error"
            message = r.json()["error"]["message"]
            assert "no file" in message and "pass the handle" in message
            assert "secret-plan" not in message.replace(guess, "") and sha not in message.replace(guess, "")
            _no_server_path(message.replace(guess, ""), store)
        # the handle itself (knowing the content) still works
        ok = httpx.post(f"{url}/v1/tools/Size/call", json={"arguments": {"image": f"file:{sha}"}})
        assert ok.status_code == 200 and ok.json()["content"] == [8, 8]
        # a tool failing on a stored file (PIL names the blob's path in its message): no path
        junk = b"not an image at all"
        junk_sha = hashlib.sha256(junk).hexdigest()
        httpx.put(f"{url}/v1/files/{junk_sha}", content=junk, headers={"content-type": "image/png"})
        for face in (f"{url}/v1/tools/Size/call", f"{url}/v1/tools/Flip/call"):
            r = httpx.post(face, json={"arguments": {"image": f"file:{junk_sha}"}})
            assert r.status_code == 400 and r.json()["error"]["kind"] == "tool_error"
            _no_server_path(r.json()["error"]["message"], store)
            _no_server_path(r.json()["text"], store)
        legacy = httpx.post(f"{url}/Size", data={"image": f"file:{junk_sha}"})
        assert legacy.status_code == 400
        _no_server_path(legacy.text, store)
        for missing in (f"{url}/v1/files/{'0' * 64}", f"{url}/v1/files/../../etc/passwd", f"{url}/v1/nope"):
            r = httpx.get(missing)
            assert r.status_code == 404
            _no_server_path(r.text, store)
