"""The HTTP toolkit both servers share: strict JSON parsing, and both apps built on its
middleware (real servers on 127.0.0.1)."""

from __future__ import annotations

import httpx
import pytest

from toolgym import http
from toolgym.http import MAX_JSON_DEPTH, BodyError, parse_json
from toolgym.mocks.service import ServiceConfig, ThreadedServer
from toolgym.mocks.service import create_app as mock_app
from toolgym.toolservers.gta.calculator import calculator
from toolgym.toolservers.server import ServerConfig, create_app

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
