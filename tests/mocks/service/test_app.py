"""The mock service over real HTTP: sessions, isolation, rollback over the API, limits, auth,
typed errors for bad input, the reaper."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest
from typer.testing import CliRunner

from toolgym.actions import ToolCall
from toolgym.cli import app as cli_app
from toolgym.http import Credentials
from toolgym.mocks.service import (
    InsecureBindError,
    MockServiceClient,
    MockServiceError,
    ServiceConfig,
    SessionLost,
    SessionManager,
    ThreadedServer,
    check_bind,
    create_app,
)
from toolgym.mocks.world import MockWorld
from toolgym.tasks import TaskUseError

from .conftest import TOKEN

TRANSFER = {"from_account_id": "ACC-10001", "to_account_id": "ACC-10002", "amount": 25.0}


def test_health_and_apps(client: MockServiceClient) -> None:
    health = client.health()
    assert health["status"] == "ok" and health["service"] == "toolgym-mocks"
    names = [a["name"] for a in client.apps()]
    assert "banking" in names and "shopping" in names and names == sorted(names)


def test_session_lifecycle(client: MockServiceClient) -> None:
    clock = datetime(2024, 5, 1, tzinfo=UTC)
    info = client.create_session(["banking", "shopping"], seed=3, clock=clock)
    sid = info["session_id"]
    assert info["apps"] == ["banking", "shopping"] and info["seed"] == 3
    assert info["clock"] == clock.isoformat()
    assert info["state_hash"] == MockWorld(["banking", "shopping"], seed=3, clock=clock).state_hash()
    assert [s["session_id"] for s in client.sessions()] == [sid]
    tools = client.request("GET", f"/sessions/{sid}/tools")["tools"]
    by_name = {t["name"]: t for t in tools}
    assert by_name["transfer"]["mutates_state"] is True and by_name["get_balance"]["mutates_state"] is False
    assert by_name["transfer"]["parameters"]["required"] == ["from_account_id", "to_account_id", "amount"]
    client.delete_session(sid)
    assert client.sessions() == []
    with pytest.raises(SessionLost, match="no session"):  # a deleted session: a typed 404
        client.request("GET", f"/sessions/{sid}/state_hash")


def test_unknown_session_is_typed(client: MockServiceClient, service_url: str) -> None:
    r = httpx.post(f"{service_url}/sessions/nope/call", json={"name": "get_balance", "arguments": {}})
    assert r.status_code == 404
    assert r.json() == {
        "error": {"kind": "unknown_session", "message": "no session 'nope' (deleted, reaped or never made)"}
    }


def test_remote_world_matches_local_world(client: MockServiceClient) -> None:
    """Same calls, same observations, hashes and diffs as in-process, failures included."""
    remote, local = client.world(["banking"]), MockWorld(["banking"])
    calls = [
        ToolCall(name="get_balance", arguments={"account_id": "ACC-10001"}),
        ToolCall(name="transfer", arguments=TRANSFER),
        ToolCall(name="transfer", arguments={**TRANSFER, "amount": 10**9}),  # insufficient funds: 422
        ToolCall(name="transfer", arguments={"from_account_id": 5}),  # argument_error
        ToolCall(name="no_such_api", arguments={}),  # unknown_tool
    ]
    for call in calls:
        assert remote.step(call) == local.step(call)
        assert remote.state_hash() == local.state_hash()
        assert remote.take_diff() == local.take_diff()
    assert remote.rows("bank_accounts", {"account_id": "ACC-10001"}) == local.rows(
        "bank_accounts", {"account_id": "ACC-10001"}
    )
    remote.close()
    local.close()


def test_reset_checkpoint_restore_fork_over_the_api(client: MockServiceClient) -> None:
    world = client.world(["banking"])
    start = world.state_hash()
    world.checkpoint("start")
    world.call("transfer", **TRANSFER)
    after_one = world.state_hash()
    world.checkpoint("one")
    world.call("transfer", **TRANSFER)
    assert world.state_hash() not in (start, after_one)

    child = world.fork()  # an independent copy, checkpoints included
    assert child.session_id != world.session_id and child.state_hash() == world.state_hash()
    child.call("deposit", account_id="ACC-10003", amount=5.0)
    assert child.state_hash() != world.state_hash()

    world.restore("one")
    assert world.state_hash() == after_one
    world.restore("start")  # restoring drops later checkpoints
    assert world.state_hash() == start
    with pytest.raises(KeyError, match="one"):
        world.restore("one")
    child.restore("one")  # the fork kept its own copy of the checkpoints
    assert child.state_hash() == after_one

    world.call("transfer", **TRANSFER)
    world.reset(seed=0, clock=world.start)
    assert world.state_hash() == start
    world.reset(seed=7, clock=world.start)
    assert world.state_hash() == MockWorld(["banking"], seed=7).state_hash()
    child.close()
    world.close()


def test_concurrent_sessions_stay_isolated(service_url: str) -> None:
    """Many threads, one session each, interleaved on one server: every session ends exactly
    where the same calls take an in-process world."""
    n_sessions, n_calls = 8, 6
    results: dict[int, str] = {}
    errors: list[BaseException] = []

    def episode(i: int) -> None:
        try:
            with MockServiceClient(service_url) as c:
                world = c.world(["banking"], seed=i % 2)
                for k in range(n_calls):
                    world.call("transfer", **{**TRANSFER, "amount": float(i + k + 1)})
                results[i] = world.state_hash()
                world.close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=episode, args=(i,)) for i in range(n_sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for i in range(n_sessions):
        local = MockWorld(["banking"], seed=i % 2)
        for k in range(n_calls):
            local.call("transfer", **{**TRANSFER, "amount": float(i + k + 1)})
        assert results[i] == local.state_hash(), i
        local.close()


def test_bad_requests_are_typed_and_lose_nothing(client: MockServiceClient, service_url: str) -> None:
    world = client.world(["banking"])
    world.call("transfer", **TRANSFER)
    before = world.state_hash()
    sid = world.session_id
    with pytest.raises(MockServiceError) as err:
        client.create_session(["no-such-app"])
    assert err.value.status == 400 and err.value.kind == "bad_request" and "no-such-app" in err.value.message
    bad_bodies = [
        ("POST", "/sessions", b"{not json"),
        ("POST", "/sessions", b'{"apps": []}'),
        ("POST", f"/sessions/{sid}/call", b'{"name": "transfer", "arguments": [1, 2]}'),
        ("POST", f"/sessions/{sid}/call", b'{"name": "transfer", "surprise": 1}'),
        ("POST", f"/sessions/{sid}/checkpoint", b'{"name": ""}'),
        ("POST", f"/sessions/{sid}/rows", b'{"table": "no_such_table"}'),
        ("POST", f"/sessions/{sid}/reset", b'{"seed": "abc"}'),
    ]
    for method, path, body in bad_bodies:
        r = httpx.request(
            method, service_url + path, content=body, headers={"content-type": "application/json"}
        )
        assert r.status_code in (400, 422), (path, body, r.status_code)
        assert r.json()["error"]["kind"] == "bad_request", r.text
    assert world.state_hash() == before  # nothing applied, nothing lost
    assert client.request("GET", f"/sessions/{sid}/state_hash")["state_hash"] == before
    world.close()


def test_score_matches_in_process_scoring(client: MockServiceClient) -> None:
    from toolgym.mocks.rewards import check_assertions, replay_golden
    from toolgym.tasks import GoldenStep, Task

    task = Task(
        id="t",
        query="q",
        apps=["banking"],
        golden=[GoldenStep(action=ToolCall(name="transfer", arguments=TRANSFER))],
        expected_state=[
            {"kind": "count", "table": "bank_transactions", "where": {"account_id": "ACC-10001"}, "n": 1}
        ],
    )
    world = client.world(["banking"])
    assert world.state_scores(task) == {"state_match": 0.0, "assertions": 0.0, "state": 0.0}
    world.call("transfer", **TRANSFER)
    golden = replay_golden(["banking"], 0, task.clock, task.golden)
    local_report = check_assertions(golden, task.expected_state)
    assert world.state_scores(task) == {
        "state_match": 1.0,
        "assertions": local_report.score,
        "state": float(local_report.passed),
    }
    broken = task.model_copy(update={"golden": [GoldenStep(action=ToolCall(name="transfer", arguments={}))]})
    assert world.state_scores(broken)["golden_error"] == 1.0
    typo = task.model_copy(update={"expected_state": [{"kind": "row_exists", "table": "nope"}]})
    with pytest.raises(TaskUseError, match="nope"):  # the task's mistake, named with the task
        world.state_scores(typo)
    golden.close()
    world.close()


# ---- limits, auth ----------------------------------------------------------------------------------
def test_score_holds_the_golden_chain_to_its_expected_errors(client: MockServiceClient) -> None:
    from toolgym.errors import ErrorKind
    from toolgym.tasks import GoldenStep, Task

    missing = ToolCall(name="transfer", arguments={**TRANSFER, "from_account_id": "ACC-NOPE"})
    pay = ToolCall(name="transfer", arguments=TRANSFER)
    tried = Task(
        id="t",
        query="q",
        apps=["banking"],
        golden=[GoldenStep(action=missing, expect_error=ErrorKind.TOOL_ERROR), GoldenStep(action=pay)],
    )
    world = client.world(["banking"])
    world.call("transfer", **TRANSFER)
    # the failure the chain expects is allowed: the chain's end state is the transfer's
    assert world.state_scores(tried)["state_match"] == 1.0
    # the same call expected to fail but succeeding: the chain is broken
    meant_to_fail = tried.model_copy(
        update={"golden": [GoldenStep(action=pay, expect_error=ErrorKind.TOOL_ERROR)]}
    )
    assert world.state_scores(meant_to_fail)["golden_error"] == 1.0
    # a bad assertion (a task built in code, never read from a file) is a short line, no pydantic dump
    bad_kind = tried.model_copy(update={"expected_state": [{"kind": "row_exist", "table": "bank_accounts"}]})
    with pytest.raises(TaskUseError) as caught:
        world.state_scores(bad_kind)
    message = str(caught.value)
    assert message.startswith("t: expected_state[0]: unknown kind 'row_exist'")
    assert "validation error" not in message and "errors.pydantic.dev" not in message
    world.close()


@pytest.fixture
def small_service() -> Iterator[str]:
    config = ServiceConfig(max_sessions=2, max_checkpoints=2, max_body_bytes=2048, token=TOKEN)
    with ThreadedServer(create_app(config)) as url:
        yield url


def test_session_limit_checkpoint_limit_and_body_limit(small_service: str) -> None:
    with MockServiceClient(small_service, token=TOKEN) as c:
        a = c.world(["banking"])
        b = a.fork()
        with pytest.raises(MockServiceError) as err:
            c.create_session(["banking"])
        assert (err.value.status, err.value.kind) == (429, "too_many_sessions")
        with pytest.raises(MockServiceError) as err:
            a.fork()
        assert err.value.status == 429
        a.checkpoint("x")
        a.checkpoint("y")
        a.checkpoint("x")  # re-using a name is fine
        with pytest.raises(MockServiceError, match="at most 2 checkpoints"):
            a.checkpoint("z")
        headers = {"authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
        big = b'{"name": "get_balance", "arguments": {"account_id": "' + b"x" * 4096 + b'"}}'
        r = httpx.post(f"{small_service}/sessions/{a.session_id}/call", content=big, headers=headers)
        assert r.status_code == 413 and r.json()["error"]["kind"] == "too_large"

        def chunks() -> Iterator[bytes]:  # no content-length: the limit counts streamed bytes
            yield big[:1000]
            yield big[1000:]

        r = httpx.post(f"{small_service}/sessions/{a.session_id}/call", content=chunks(), headers=headers)
        assert r.status_code == 413
        b.close()
        c.create_session(["banking"])  # a freed slot can be used again
        a.close()


def test_token_required_except_health(small_service: str) -> None:
    assert httpx.get(f"{small_service}/health").status_code == 200
    for headers in ({}, {"authorization": "Bearer wrong-token-0123456789"}, {"authorization": TOKEN}):
        r = httpx.get(f"{small_service}/sessions", headers=headers)
        assert r.status_code == 401 and r.json()["error"]["kind"] == "unauthorized"
    with (
        MockServiceClient(small_service, token="wrong-token-0123456789") as c,
        pytest.raises(MockServiceError),
    ):
        c.create_session(["banking"])
    with MockServiceClient(small_service, token=TOKEN) as c:
        assert c.sessions() == []


def test_binding_beyond_loopback_needs_a_token() -> None:
    with pytest.raises(InsecureBindError):
        check_bind("0.0.0.0", None)
    check_bind("0.0.0.0", TOKEN)
    check_bind("127.0.0.1", None)
    check_bind("::1", None)
    result = CliRunner().invoke(cli_app, ["lab", "mock-server", "--host", "0.0.0.0", "--port", "1"], env={})
    assert result.exit_code == 2 and "without a token" in result.output


# ---- the reaper ------------------------------------------------------------------------------------
def test_reaper_closes_idle_sessions_only() -> None:
    now = [1000.0]
    manager = SessionManager(ServiceConfig(idle_timeout_s=60), now=lambda: now[0])
    old = manager.create(["banking"], 0, datetime(2024, 1, 1, tzinfo=UTC))
    now[0] += 50
    fresh = manager.create(["banking"], 0, datetime(2024, 1, 1, tzinfo=UTC))
    now[0] += 20  # old idle 70 s, fresh idle 20 s
    assert manager.reap() == [old.sid]
    assert [s.sid for s in manager.list()] == [fresh.sid]
    now[0] += 50
    manager.get(fresh.sid)  # a request keeps it alive
    now[0] += 50
    assert manager.reap() == []
    now[0] += 11
    assert manager.reap() == [fresh.sid] and len(manager) == 0 and manager.reaped_total == 2


def test_reaped_session_is_rebuilt_by_the_client() -> None:
    # the service's clock is the test's: the session goes idle when the test says so, and the one
    # the client rebuilds cannot go idle again however slow the machine (a 0.2 s timeout did)
    now = [1000.0]
    config = ServiceConfig(idle_timeout_s=60, reap_interval_s=0.05)
    with ThreadedServer(create_app(config, now=lambda: now[0])) as url, MockServiceClient(url) as c:
        world = c.world(["banking"])
        world.call("transfer", **TRANSFER)
        world.checkpoint("after")
        state, first = world.state_hash(), world.session_id
        now[0] += 61
        deadline = time.monotonic() + 20
        while c.sessions() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert c.sessions() == []  # the reaper closed it
        # the next operation finds the session gone and rebuilds it from the journal
        assert world.call("get_balance", account_id="ACC-10001")["status"] == "success"
        assert world.session_id != first and world.recoveries == 1
        assert world.state_hash() == state
        world.restore("after")  # checkpoints came back too
        assert world.state_hash() == state
        world.close()


def test_each_client_sees_and_drives_only_its_own_sessions() -> None:
    """Two clients with their own tokens: neither lists, calls, resets, forks, reads or deletes the
    other's session (an unknown session to it), and a wrong token gets nothing."""
    tokens = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789xyz"}
    config = ServiceConfig(credentials=Credentials(tokens))
    with ThreadedServer(create_app(config)) as url:
        alice, bob = (
            httpx.Client(base_url=url, headers={"Authorization": f"Bearer {tokens[n]}"}, timeout=60)
            for n in ("alice", "bob")
        )
        with alice, bob:
            sid = alice.post("/sessions", json={"apps": ["banking"]}).json()["session_id"]
            before = alice.get(f"/sessions/{sid}/state_hash").json()
            assert [s["session_id"] for s in alice.get("/sessions").json()["sessions"]] == [sid]
            assert bob.get("/sessions").json()["sessions"] == []
            for answer in (
                bob.get(f"/sessions/{sid}"),
                bob.post(f"/sessions/{sid}/call", json={"name": "get_balance", "arguments": {}}),
                bob.post(f"/sessions/{sid}/reset"),
                bob.post(f"/sessions/{sid}/fork"),
                bob.post(f"/sessions/{sid}/rows", json={"table": "accounts"}),
                bob.get(f"/sessions/{sid}/state_hash"),
                bob.delete(f"/sessions/{sid}"),
            ):
                assert answer.status_code == 404 and answer.json()["error"]["kind"] == "unknown_session"
            assert alice.get(f"/sessions/{sid}/state_hash").json() == before  # alive and unchanged
            forked = alice.post(f"/sessions/{sid}/fork").json()["session_id"]
            assert {s["session_id"] for s in alice.get("/sessions").json()["sessions"]} == {sid, forked}
            assert bob.get("/sessions").json()["sessions"] == []
        stranger = httpx.get(f"{url}/sessions", headers={"Authorization": "Bearer not-a-token-0123456"})
        assert stranger.status_code == 401
