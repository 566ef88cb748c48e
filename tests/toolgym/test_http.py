"""The HTTP toolkit both servers share: strict JSON parsing, and both apps built on its
middleware (real servers on 127.0.0.1)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from toolgym import http
from toolgym.http import MAX_JSON_DEPTH, BodyError, parse_json
from toolgym.mocks.service import ServiceConfig, ThreadedServer
from toolgym.mocks.service import create_app as mock_app
from toolgym.toolservers.gta.calculator import calculator
from toolgym.toolservers.server import ServerConfig, create_app

from .http_probes import trickle_headers

TOKEN = "http-toolkit-token-0123456789"


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"1" + b"0" * 5000, "out of range"),  # past Python's int-str digit limit
        (b"[" * 100_000, "recursion"),
        (b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1), "nests deeper"),
        (b'{"a": NaN}', "not JSON"),
        (b'{"a": Infinity}', "not JSON"),
        (b'{"a": 1e400}', "out of range"),
        (b'{"a": ' + b"9" * 400 + b".0}", "out of range"),
        (b'"\xff\xfe"', "not JSON"),
        (b'"\\ud800"', "not JSON"),  # a lone surrogate could never be encoded back
        (b"{} trailing", "not JSON"),
        (b"", "not JSON"),
    ],
)
def test_parse_json_refuses_what_python_would_choke_on(body: bytes, why: str) -> None:
    with pytest.raises(BodyError, match=why):
        parse_json(body)


def test_parse_json_accepts_plain_json() -> None:
    deep: object = 1
    for _ in range(MAX_JSON_DEPTH):
        deep = [deep]
    assert parse_json(str(deep).replace(" ", "").encode()) == deep
    assert parse_json(b'{"n": 12345678901234567890123, "f": 1e300, "s": "\\u00e9"}') == {
        "n": 12345678901234567890123,
        "f": 1e300,
        "s": "é",
    }


def _middleware(app: object) -> set[type]:
    return {m.cls for m in app.user_middleware}  # type: ignore[attr-defined]


def test_both_servers_are_built_on_the_toolkit() -> None:
    tool_server = create_app([calculator], ServerConfig(token=TOKEN))
    service = mock_app(ServiceConfig(token=TOKEN))
    for app in (tool_server, service):
        stack = _middleware(app)
        for piece in (http.BearerAuth, http.BodyLimit, http.BodyTimeout):
            assert any(issubclass(cls, piece) for cls in stack), (app, piece)


def test_mock_service_answers_framework_errors_in_its_envelope() -> None:
    with ThreadedServer(mock_app(ServiceConfig(token=TOKEN))) as url:
        denied = httpx.get(f"{url}/sessions")
        assert denied.status_code == 401 and denied.headers["www-authenticate"] == "Bearer"
        assert denied.json() == {
            "error": {"kind": "unauthorized", "message": "missing or wrong bearer token"}
        }
        auth = {"Authorization": f"bearer {TOKEN}"}  # the scheme is case-insensitive
        assert httpx.get(f"{url}/sessions", headers=auth).status_code == 200
        missing = httpx.get(f"{url}/no/such/route", headers=auth)
        assert missing.status_code == 404 and missing.json()["error"]["kind"] == "not_found"
        wrong = httpx.put(f"{url}/sessions", headers=auth)
        assert wrong.status_code == 405 and wrong.json()["error"]["kind"] == "method_not_allowed"


def test_one_bind_rule_for_every_server() -> None:
    from toolgym.http import MIN_TOKEN_CHARS, InsecureBindError, check_bind

    check_bind("127.0.0.1", None)
    check_bind("::1", None)
    check_bind("0.0.0.0", "t" * MIN_TOKEN_CHARS)
    with pytest.raises(InsecureBindError, match="beyond loopback"):
        check_bind("0.0.0.0", None)
    with pytest.raises(InsecureBindError, match="at least 16"):
        check_bind("0.0.0.0", "short")


# ---- one guard for every server: DNS rebinding, web pages, content types -------------------------
@dataclass
class Served:
    """A real toolgym server on 127.0.0.1 and a request that does something on it."""

    name: str
    url: str
    path: str  # POST here with `body` acts (runs a tool, opens a session)
    body: bytes
    read_path: str  # GET here reads what the server holds


@contextmanager
def _served(name: str) -> Iterator[Served]:
    from toolgym.envs.mcp_server import http_app, make_config
    from toolgym.envs.service.app import create_app as env_app
    from toolgym.envs.service.catalog import Catalog
    from toolgym.reports.viewer import serve_viewer

    if name == "viewer":
        with serve_viewer([], {}) as url:
            yield Served(name, url.rstrip("/"), "/", b"{}", "/")
        return
    if name == "serve-model":  # transformers serve's app behind the guard; no model pinned, none loaded
        from toolgym.models.serve_model import model_server_app, model_server_exposure, transformers_app

        served = model_server_app(transformers_app(None), model_server_exposure())
        with http.ServerThread(served) as url:  # an unexpected field: transformers' own 422
            yield Served(name, url, "/v1/chat/completions", b'{"return_token_ids":true}', "/health")
        return
    if name == "mcp":
        app, close_all = http_app(make_config(apps=["banking"]))
        try:
            with http.ServerThread(app) as url:
                yield Served(name, url, "/mcp", b'{"jsonrpc":"2.0","id":1,"method":"ping"}', "/mcp")
        finally:
            close_all()
        return
    apps: dict[str, Callable[[], Any]] = {
        "tool server": lambda: create_app([calculator], ServerConfig()),
        "mock service": lambda: mock_app(ServiceConfig()),
        "env service": lambda: env_app(Catalog.build()),
    }
    acts = {
        "tool server": ("/v1/tools/Calculator/call", b'{"arguments":{"expression":"6*7"}}', "/v1/tools"),
        "mock service": ("/sessions", b'{"apps":["banking"]}', "/sessions"),
        "env service": ("/close", b'{"session_id":"none"}', "/sessions"),
    }
    with http.ServerThread(apps[name]()) as url:
        path, body, read_path = acts[name]
        yield Served(name, url, path, body, read_path)


SERVERS = [
    "tool server",
    "env service",
    "mock service",
    "mcp",
    "viewer",
    pytest.param(
        "serve-model",
        marks=pytest.mark.skipif(
            importlib.util.find_spec("transformers") is None, reason="transformers comes with toolgym[ml]"
        ),
    ),
]
JSON = {"content-type": "application/json"}


@pytest.mark.parametrize("name", SERVERS)
def test_every_server_refuses_rebinding_and_cross_site_requests(name: str) -> None:
    with _served(name) as served, httpx.Client(base_url=served.url, timeout=120) as client:
        # the audit's repro: a page's text/plain POST under a rebound name
        rebound = client.post(
            served.path, content=served.body, headers={"content-type": "text/plain", "host": "evil.example"}
        )
        assert rebound.status_code == 421, rebound.text
        assert client.get(served.read_path, headers={"host": "evil.example:80"}).status_code == 421
        # a cross-site POST a browser sends without a preflight: text/plain, or a form
        for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
            plain = client.post(served.path, content=served.body, headers={"content-type": kind})
            assert plain.status_code == 415, (kind, plain.text)
        # a JSON request another origin's page sends (after a preflight nobody answers)
        foreign = {**JSON, "origin": "http://evil.example"}
        assert client.post(served.path, content=served.body, headers=foreign).status_code == 403
        null = {**JSON, "origin": "null"}  # sandboxed frames and file: pages
        assert client.post(served.path, content=served.body, headers=null).status_code == 403
        other_port = {**JSON, "origin": "http://127.0.0.1:1"}  # another local page is another origin
        assert client.post(served.path, content=served.body, headers=other_port).status_code == 403
        no_cors = {"sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors"}  # an <img>, a <script>
        assert client.get(served.read_path, headers=no_cors).status_code == 403
        # the server's own page, and programs, pass
        same = {**JSON, "origin": served.url}
        refused = (403, 415, 421)
        assert client.post(served.path, content=served.body, headers=same).status_code not in refused
        assert client.get(served.read_path, headers={"accept": "application/json"}).status_code not in refused


@pytest.mark.parametrize("name", ["tool server", "env service", "mock service"])
def test_deep_json_is_a_4xx_on_every_session_server(name: str) -> None:
    deep = b"[" * 5000 + b"]" * 5000
    with _served(name) as served:
        answer = httpx.post(f"{served.url}{served.path}", content=deep, headers=JSON)
        assert 400 <= answer.status_code < 500, answer.text


def test_host_rule_follows_the_bind() -> None:
    loopback = http.HostRule.for_bind("127.0.0.1")
    assert all(loopback.allows(h) for h in ("127.0.0.1:8765", "localhost:1", "[::1]:80", "LOCALHOST"))
    assert not any(loopback.allows(h) for h in ("evil.example", "10.0.0.5:80", "127.0.0.1.nip.io"))
    wildcard = http.HostRule.for_bind("0.0.0.0", ["lab.example"])
    assert (
        wildcard.allows("10.1.2.3:8765") and wildcard.allows("lab.example:1") and wildcard.allows("[fe80::1]")
    )
    assert not wildcard.allows("evil.example")
    assert http.HostRule.for_bind(None).allows("toolgym.sock")  # a unix socket: no browser reaches it


def test_credentials_name_each_client(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("# clients\nalice alice-token-0123456789\n\nbob   bob-token-0123456789xx\n")
    credentials = http.Credentials.of(tokens_file=tokens)
    assert credentials is not None and credentials.clients == ["alice", "bob"]
    assert credentials.client(b"bob-token-0123456789xx") == "bob"
    assert credentials.client(b"nobody's token 0123") is None
    tokens.write_text("alice short\n")
    with pytest.raises(http.InsecureBindError, match="at least 16"):
        http.Credentials.of(tokens_file=tokens)
    tokens.write_text("alice alice-token-0123456789 extra\n")
    with pytest.raises(http.InsecureBindError, match=r"tokens:1: a client line is `NAME TOKEN`"):
        http.Credentials.of(tokens_file=tokens)


# ---- the commands' servers: header deadline, one line when refused --------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def _command_server(argv: list[str], port: int, ready_path: str) -> Iterator[str]:
    """`toolgym ARGV` in its own process with a 1 s header deadline, until it answers."""
    env = {**os.environ, http.HEADER_TIMEOUT_ENV: "1"}
    toolgym = str(Path(sys.executable).with_name("toolgym"))
    process = subprocess.Popen([toolgym, *argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(url + ready_path, timeout=5)
                break
            except httpx.TransportError:
                assert process.poll() is None, process.stderr.read() if process.stderr else b""
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.3)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def _oracle_run(out: Path) -> None:
    toolgym = str(Path(sys.executable).with_name("toolgym"))
    argv = [toolgym, "run", "--agent", "oracle", "--tasks", "demo", "--limit", "1", "--out", str(out)]
    subprocess.run(argv, check=True, capture_output=True, timeout=300)


@pytest.mark.parametrize("command", ["env-server", "mcp --http", "view"])
def test_every_commands_server_closes_connections_whose_headers_trickle(command: str, tmp_path: Path) -> None:
    port = _free_port()
    if command == "view":  # the viewer serves a run with at least one finished trace
        _oracle_run(tmp_path / "run")
    argv = {
        "env-server": ["env-server", "--port", str(port), "--trace-dir", str(tmp_path / "traces")],
        "mcp --http": ["mcp", "--http", "--apps", "banking", "--port", str(port)],
        "view": ["view", str(tmp_path / "run"), "--port", str(port)],
    }[command]
    with _command_server(argv, port, "/health" if command == "env-server" else "/") as url:
        closed, answer = trickle_headers(url, "/")
        assert closed and answer == b""
        assert httpx.get(url + "/", headers={"host": "evil.example"}, timeout=30).status_code == 421


def test_serve_beyond_loopback_without_a_token_is_one_line() -> None:
    toolgym = str(Path(sys.executable).with_name("toolgym"))
    env = {k: v for k, v in os.environ.items() if k != "TOOLGYM_TOKEN"} | {"COLUMNS": "80"}  # as on CI
    result = subprocess.run(
        [toolgym, "serve", "--host", "0.0.0.0", "--tools", "Calculator"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert "beyond loopback" in result.stderr and "ValidationError" not in result.stderr


# ---- a real browser on another origin ----------------------------------------------------------------
CHROMIUM = Path("/usr/bin/chromium")

ATTACK_PAGE = """<!doctype html><title>elsewhere</title><script>
// what any page may send without asking (no preflight), plus a preflighted JSON POST and a read
async function attack(tools, env) {
  const upload = new FormData();
  upload.append("file", new Blob(["planted by a web page"], {type: "text/plain"}), "planted.txt");
  const simple = {method: "POST", mode: "no-cors", headers: {"content-type": "text/plain"}};
  const tries = [
    fetch(tools + "/v1/files", {method: "POST", mode: "no-cors", body: upload}),
    fetch(tools + "/v1/tools/Calculator/call", {...simple, body: '{"arguments":{"expression":"6*7"}}'}),
    fetch(env + "/reset", {...simple, body: '{"config":{"tasks":"mtu"}}'}),
    fetch(env + "/reset", {method: "POST", headers: {"content-type": "application/json"},
      body: '{"config":{"tasks":"mtu"}}'}),
    fetch(env + "/sessions").then(r => r.text()),
    new Promise(done => {
      const ws = new WebSocket(env.replace("http", "ws") + "/ws");
      ws.onopen = () => { ws.send('{"type":"reset","data":{"config":{"tasks":"mtu"}}}'); };
      ws.onmessage = m => done("ws read: " + m.data.slice(0, 40));
      ws.onerror = () => done("ws refused");
      ws.onclose = () => done("ws closed");
    }),
  ];
  const results = await Promise.allSettled(tries);
  return results.map(r => r.status + ":" + String(r.status === "fulfilled" ? (r.value.type || r.value) : ""));
}
</script>"""

PLANTED = hashlib.sha256(b"planted by a web page").hexdigest()


@pytest.mark.skipif(
    not CHROMIUM.exists(), reason="Debian's chromium is not installed (apt-get install chromium)"
)
def test_a_page_on_another_origin_in_a_real_browser_changes_nothing() -> None:
    """Headless chromium on a page of another origin (another port of 127.0.0.1, as a local dev
    server would be) sends what a page may send without asking (a multipart upload, text/plain
    bodies), a preflighted JSON POST, a cross-origin read and a WebSocket to the tool server and
    the env service: no file is stored, no session is opened, nothing is read."""
    from playwright.sync_api import sync_playwright
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse
    from starlette.routing import Route

    from toolgym.envs.service.app import create_app as env_app
    from toolgym.envs.service.catalog import Catalog

    page_app = Starlette(routes=[Route("/", lambda _: HTMLResponse(ATTACK_PAGE))])
    with (
        http.ServerThread(page_app) as elsewhere,
        http.ServerThread(create_app([calculator], ServerConfig())) as tools,
        http.ServerThread(env_app(Catalog.build())) as env,
        sync_playwright() as p,
    ):
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.goto(elsewhere + "/")
            outcomes = page.evaluate("([tools, env]) => attack(tools, env)", [tools, env])
        finally:
            browser.close()
        assert not any("ws read" in o or '"sessions"' in o for o in outcomes), outcomes
        assert httpx.head(f"{tools}/v1/files/{PLANTED}", timeout=30).status_code == 404, outcomes
        assert httpx.get(f"{env}/sessions", timeout=30).json()["sessions"] == [], outcomes


def test_the_header_deadline_never_closes_an_upgraded_websocket() -> None:
    """The deadline armed when a connection opens is for its request headers: once the connection
    became a WebSocket it is the WebSocket's, which lives past the deadline (it closed every
    WebSocket of every server `header_timeout_s` after its handshake, a RemoteToolEnv episode too)."""
    from starlette.applications import Starlette
    from starlette.routing import WebSocketRoute
    from starlette.websockets import WebSocket
    from websockets.sync.client import connect

    async def echo(websocket: WebSocket) -> None:
        await websocket.accept()
        while True:
            await websocket.send_text(await websocket.receive_text())

    deadline_s = 0.5
    app = Starlette(routes=[WebSocketRoute("/ws", echo)])
    with (
        http.ServerThread(app, header_timeout_s=deadline_s) as url,
        connect(url.replace("http", "ws") + "/ws") as ws,
    ):
        ws.send("before the deadline")
        assert ws.recv(timeout=30) == "before the deadline"
        time.sleep(4 * deadline_s)
        ws.send("after it")
        assert ws.recv(timeout=30) == "after it"
    with http.ServerThread(app, header_timeout_s=deadline_s) as url:  # a half-sent request still is closed
        closed, answer = trickle_headers(url, "/ws")
        assert closed and answer == b""
