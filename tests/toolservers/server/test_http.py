"""The tool server against hostile clients (real servers on 127.0.0.1): headers or a body sent too
slowly get the connection closed while everyone else is served; malformed bodies of any shape
get a typed 4xx, never a 500 (hypothesis, bounded)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from urllib.parse import urlencode

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.toolgym.http_probes import (
    CONTENT_TYPES,
    FUZZ,
    NASTY_BODIES,
    bodies,
    idle_connection,
    json_objects,
    json_values,
    trickle_body,
    trickle_headers,
)
from toolgym.errors import ErrorKind
from toolgym.tools import tool
from toolgym.toolservers.gta.calculator import calculator
from toolgym.toolservers.server import ServerConfig

from .helpers import running


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with running([calculator], ServerConfig(header_timeout_s=0.5, body_timeout_s=0.5)) as url:
        yield url


def _call_works(url: str) -> bool:
    r = httpx.post(f"{url}/v1/tools/Calculator/call", json={"arguments": {"expression": "6*7"}}, timeout=30)
    return r.status_code == 200 and r.json()["content"] == "42"


def test_headers_sent_too_slowly_close_the_connection(server: str) -> None:
    closed, answer = trickle_headers(server, "/v1/tools/Calculator/call")
    assert closed and answer == b""
    assert _call_works(server)


def test_a_connection_that_sends_nothing_is_closed(server: str) -> None:
    assert idle_connection(server)
    assert _call_works(server)


@pytest.mark.parametrize("path", ["/v1/tools/Calculator/call", "/Calculator", "/mcp"])
def test_a_body_sent_too_slowly_is_refused_and_closed(server: str, path: str) -> None:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    closed, answer = trickle_body(server, path, headers)
    assert closed
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert b'"kind":"timeout"' in answer
    assert _call_works(server)


def test_slow_clients_do_not_block_others(server: str) -> None:
    results: list[bool] = []
    slow = [
        threading.Thread(target=lambda: results.append(trickle_headers(server, "/v1/health")[0]))
        for _ in range(8)
    ]
    for t in slow:
        t.start()
    assert all(_call_works(server) for _ in range(5))  # while the slow ones hang on
    for t in slow:
        t.join()
    assert results == [True] * 8


# ---- malformed bodies: a typed 4xx, never a 500 ----------------------------------------------------
@tool(name="Echo", category="operation")
def echo(text: str, times: int = 1, scale: float = 1.0, tags: list[str] | None = None) -> str:
    """Echo the arguments back."""
    return f"{text}|{times}|{scale}|{tags}"


JSON = {"content-type": "application/json"}  # what programs send with a body (web pages cannot)

CALL_FIELDS = {
    "arguments": json_values
    | json_objects({"text": json_values, "times": json_values, "scale": json_values, "tags": json_values}),
    "seed": json_values,
    "clock": json_values | st.just("2024-05-01T00:00:00+00:00"),
    "task_id": json_values,
}
FORM_FIELDS = {"text": st.text(max_size=10), "times": st.text(max_size=5), "tags": st.text(max_size=10)}


@pytest.fixture(scope="module")
def fuzzed() -> Iterator[str]:
    with running([echo, calculator], ServerConfig(max_workers=4)) as url:
        yield url


def _typed_native_error(r: httpx.Response) -> None:
    body = r.json()
    assert body["ok"] is False, body
    assert body["error"]["kind"] in {k.value for k in ErrorKind}, body
    assert isinstance(body["error"]["message"], str)


@FUZZ
@given(
    body=bodies(json_objects(CALL_FIELDS)),
    content_type=st.sampled_from(CONTENT_TYPES),
    tool_name=st.sampled_from(["Echo", "Calculator", "Nope"]),
)
def test_native_calls_with_malformed_bodies_get_typed_4xx(
    fuzzed: str, body: bytes, content_type: str, tool_name: str
) -> None:
    r = httpx.post(
        f"{fuzzed}/v1/tools/{tool_name}/call",
        content=body,
        headers={"content-type": content_type},
        timeout=30,
    )
    assert r.status_code < 500, r.text
    if r.status_code >= 400:
        _typed_native_error(r)


def test_an_agentlego_field_that_parses_to_nan_is_a_422_that_echoes_it(fuzzed: str) -> None:
    """A list field's JSON parse of "NaN" is a float NaN; the error echoes it as text (it was a 500:
    strict JSON cannot write NaN). Found by the fuzzer below."""
    for body, content_type in ((b'{"text":"a","tags":"NaN"}', "application/json"), (b"text=a&tags=NaN", "")):
        r = httpx.post(f"{fuzzed}/Echo", content=body, headers={"content-type": content_type}, timeout=30)
        assert r.status_code == 422, r.text
        assert r.json()["detail"][0]["loc"] == ["body", "tags"] and r.json()["detail"][0]["input"] == "nan"


@FUZZ
@given(
    body=bodies(json_objects(FORM_FIELDS))
    | st.dictionaries(st.sampled_from(["text", "times", "scale", "tags"]), st.text(max_size=12)).map(
        lambda d: urlencode(d).encode()
    ),
    content_type=st.sampled_from(CONTENT_TYPES),
)
def test_agentlego_calls_with_malformed_bodies_get_typed_4xx(
    fuzzed: str, body: bytes, content_type: str
) -> None:
    r = httpx.post(f"{fuzzed}/Echo", content=body, headers={"content-type": content_type}, timeout=30)
    assert r.status_code < 500, r.text
    if r.status_code >= 400:
        assert "detail" in r.json(), r.text  # AgentLego's (FastAPI's) envelope


@FUZZ
@given(body=bodies(json_objects({"jsonrpc": json_values, "id": json_values, "method": json_values})))
def test_mcp_with_malformed_bodies_never_fails_the_server(fuzzed: str, body: bytes) -> None:
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    r = httpx.post(f"{fuzzed}/mcp", content=body, headers=headers, timeout=30)
    assert r.status_code < 500, r.text


@FUZZ
@given(
    body=st.binary(max_size=64) | st.sampled_from(NASTY_BODIES), content_type=st.sampled_from(CONTENT_TYPES)
)
def test_uploads_with_malformed_bodies_get_typed_4xx(fuzzed: str, body: bytes, content_type: str) -> None:
    r = httpx.post(f"{fuzzed}/v1/files", content=body, headers={"content-type": content_type}, timeout=30)
    assert r.status_code < 500, r.text
    assert r.status_code >= 400  # never a valid multipart upload
    _typed_native_error(r)


def test_the_server_lives_on_after_the_fuzzing(fuzzed: str) -> None:
    for body in NASTY_BODIES:
        assert (
            httpx.post(f"{fuzzed}/v1/tools/Echo/call", content=body, headers=JSON, timeout=30).status_code
            < 500
        )
    assert _call_works(fuzzed)
    ok = httpx.post(
        f"{fuzzed}/v1/tools/Echo/call", json={"arguments": {"text": "hi", "times": 2}}, timeout=30
    )
    assert ok.status_code == 200 and ok.json()["content"] == "hi|2|1.0|None"
