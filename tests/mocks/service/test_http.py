"""The mock service against hostile clients (real servers on 127.0.0.1): malformed bodies of any
shape get a typed 4xx, never a 500, and a failed write leaves the session's state as it was
(hypothesis, bounded); headers or a body sent too slowly get the connection closed while
everyone else is served."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

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
from toolgym.mocks.service import ServiceConfig, ThreadedServer, create_app

TRANSFER = {"from_account_id": "ACC-10001", "to_account_id": "ACC-10002", "amount": 25.0}
JSON = {"content-type": "application/json"}  # what programs send with a body (web pages cannot)

CALL_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "name": json_values | st.sampled_from(["transfer", "deposit", "pay_bill", "get_balance", "nope"]),
    "arguments": json_values
    | json_objects(
        {
            "from_account_id": json_values | st.just("ACC-10001"),
            "to_account_id": json_values | st.just("ACC-10002"),
            "account_id": json_values | st.just("ACC-10001"),
            "amount": json_values,
            "memo": json_values,
            "bill_id": json_values,
        }
    ),
    "call_id": json_values,
}
# the other endpoints' bodies, each with its own fields (well- or ill-typed)
OTHER_FIELDS: dict[str, dict[str, st.SearchStrategy[Any]]] = {
    "": {"apps": json_values | st.just(["banking"]), "seed": json_values, "clock": json_values},
    "/reset": {"seed": json_values, "clock": json_values},
    "/checkpoint": {"name": json_values},
    "/restore": {"name": json_values},
    "/rows": {"table": json_values, "where": json_values},
    "/score": {"golden": json_values, "expected_state": json_values, "seed": json_values},
}


def _typed(r: httpx.Response) -> None:
    body = r.json()
    assert isinstance(body["error"]["kind"], str) and isinstance(body["error"]["message"], str), body


@pytest.fixture(scope="module")
def service() -> Iterator[str]:
    config = ServiceConfig(max_sessions=32, header_timeout_s=0.5, body_timeout_s=0.5)
    with ThreadedServer(create_app(config)) as url:
        yield url


@pytest.fixture(scope="module")
def session(service: str) -> str:
    r = httpx.post(f"{service}/sessions", json={"apps": ["banking"]})
    assert r.status_code == 201
    return str(r.json()["session_id"])


def _hash(service: str, sid: str) -> str:
    return str(httpx.get(f"{service}/sessions/{sid}/state_hash").json()["state_hash"])


@FUZZ
@given(body=bodies(json_objects(CALL_FIELDS)), content_type=st.sampled_from(CONTENT_TYPES))
def test_calls_with_malformed_bodies_are_typed_and_failed_writes_change_nothing(
    service: str, session: str, body: bytes, content_type: str
) -> None:
    before = _hash(service, session)
    r = httpx.post(
        f"{service}/sessions/{session}/call", content=body, headers={"content-type": content_type}, timeout=30
    )
    assert r.status_code < 500, r.text
    if r.status_code >= 400:
        _typed(r)
        assert _hash(service, session) == before
        return
    answer = r.json()
    if answer["observation"]["error"] is not None:  # the API refused it: a failed write changes nothing
        assert answer["state_hash"] == before == _hash(service, session)


@FUZZ
@given(
    endpoint=st.sampled_from(sorted(OTHER_FIELDS)),
    data=st.data(),
    content_type=st.sampled_from(CONTENT_TYPES),
)
def test_other_endpoints_with_malformed_bodies_get_typed_4xx(
    service: str, session: str, endpoint: str, data: st.DataObject, content_type: str
) -> None:
    body = data.draw(bodies(json_objects(OTHER_FIELDS[endpoint])), label="body")
    path = "/sessions" if endpoint == "" else f"/sessions/{session}{endpoint}"
    r = httpx.post(f"{service}{path}", content=body, headers={"content-type": content_type}, timeout=30)
    assert r.status_code < 500, r.text
    if r.status_code >= 400:
        _typed(r)
    elif endpoint == "":  # a session it did make: leave room for the next examples
        httpx.delete(f"{service}/sessions/{r.json()['session_id']}")


def test_the_service_lives_on_and_failed_writes_leave_the_state(service: str, session: str) -> None:
    before = _hash(service, session)
    for body in NASTY_BODIES:
        r = httpx.post(f"{service}/sessions/{session}/call", content=body, headers=JSON, timeout=30)
        assert r.status_code == 422 and r.json()["error"]["kind"] == "bad_request", body[:40]
    assert _hash(service, session) == before
    ok = httpx.post(f"{service}/sessions/{session}/call", json={"name": "transfer", "arguments": TRANSFER})
    assert ok.status_code == 200 and ok.json()["observation"]["error"] is None
    assert ok.json()["state_hash"] != before


# ---- slow clients ----------------------------------------------------------------------------------
def test_headers_sent_too_slowly_close_the_connection(service: str, session: str) -> None:
    closed, answer = trickle_headers(service, f"/sessions/{session}/call")
    assert closed and answer == b""
    assert idle_connection(service)
    assert httpx.get(f"{service}/health").status_code == 200


@pytest.mark.parametrize("path", ["/sessions/{sid}/call", "/sessions/{sid}/reset", "/sessions"])
def test_a_body_sent_too_slowly_is_refused_and_closed(service: str, session: str, path: str) -> None:
    before = _hash(service, session)
    closed, answer = trickle_body(service, path.format(sid=session), {"Content-Type": "application/json"})
    assert closed
    assert answer.startswith(b"HTTP/1.1 408 ") and b'"kind":"timeout"' in answer
    assert _hash(service, session) == before
