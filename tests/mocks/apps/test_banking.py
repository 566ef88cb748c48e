"""The banking app's behaviour on its seeded data (real SQLite)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolgym.actions import ToolCall
from toolgym.errors import ErrorKind
from toolgym.mocks.apps.banking import N_BILLS, N_CUSTOMERS
from toolgym.mocks.responses import AppError
from toolgym.mocks.world import MockWorld

CLOCK = datetime(2024, 6, 15, 8, 0, tzinfo=UTC)


@pytest.fixture
def world() -> MockWorld:
    return MockWorld(["banking"], seed=0, clock=CLOCK)


def balance(world: MockWorld, account_id: str) -> int:
    return int(world.rows("bank_accounts", {"account_id": account_id})[0]["balance_cents"])


def active_accounts(world: MockWorld) -> list[dict[str, Any]]:
    return world.rows("bank_accounts", {"status": "active"})


def total_money(world: MockWorld) -> int:
    return int(world.store.conn.execute("SELECT sum(balance_cents) FROM bank_accounts").fetchone()[0])


def test_seed_is_consistent(world: MockWorld) -> None:
    assert len(world.rows("bank_customers")) == N_CUSTOMERS
    assert len(world.rows("bank_bills")) == N_BILLS
    accounts = world.rows("bank_accounts")
    assert len(accounts) >= N_CUSTOMERS and all(a["balance_cents"] >= 0 for a in accounts)
    assert any(a["status"] == "frozen" for a in accounts)
    # every balance is the last balance_after of its ledger, and the ledger adds up
    for a in accounts:
        ledger = world.store.conn.execute(
            "SELECT amount_cents, balance_after_cents FROM bank_transactions WHERE account_id = ?"
            " ORDER BY posted_at, txn_id",
            (a["account_id"],),
        ).fetchall()
        running = 0
        for amount, after in ledger:
            running += amount
            assert running == after >= 0
        assert running == a["balance_cents"]
    assert len(world.rows("bank_transactions")) > 500


def test_list_accounts_and_balance(world: MockWorld) -> None:
    result = world.call("list_accounts", customer_id="CUST-0001")
    assert result["status"] == "success" and result["accounts"]
    first = result["accounts"][0]
    got = world.call("get_balance", account_id=first["account_id"])
    assert got["balance"] == first["balance"] and got["currency"] == "USD"
    for name, args in (
        ("list_accounts", {"customer_id": "CUST-9999"}),
        ("get_balance", {"account_id": "ACC-1"}),
    ):
        obs = world.step(ToolCall(name=name, arguments=args))
        assert obs.content["code"] == 404


def test_transfer_really_moves_money(world: MockWorld) -> None:
    src, dst = (a["account_id"] for a in active_accounts(world)[:2])
    b_src, b_dst, total = balance(world, src), balance(world, dst), total_money(world)
    result = world.call("transfer", from_account_id=src, to_account_id=dst, amount=123.45, memo="rent share")
    assert result["transfer_id"] == "TRF-000001"
    assert balance(world, src) == b_src - 12345 and balance(world, dst) == b_dst + 12345
    assert result["from_balance"] * 100 == pytest.approx(b_src - 12345)
    assert total_money(world) == total
    out_txn, in_txn = (world.rows("bank_transactions", {"txn_id": t})[0] for t in result["transaction_ids"])
    assert (out_txn["kind"], out_txn["amount_cents"], out_txn["memo"]) == (
        "transfer_out",
        -12345,
        "rent share",
    )
    assert (in_txn["kind"], in_txn["amount_cents"]) == ("transfer_in", 12345)
    assert out_txn["posted_at"] == CLOCK.isoformat()
    diff = world.take_diff()
    assert len(diff["bank_accounts"]["changed"]) == 2 and len(diff["bank_transactions"]["added"]) == 2


def test_transfer_never_overdraws(world: MockWorld) -> None:
    src, dst = (a["account_id"] for a in active_accounts(world)[:2])
    before = world.state_hash()
    too_much = (balance(world, src) + 1) / 100
    obs = world.step(
        ToolCall(
            name="transfer", arguments={"from_account_id": src, "to_account_id": dst, "amount": too_much}
        )
    )
    assert obs.error_kind == ErrorKind.TOOL_ERROR and obs.content["code"] == 422
    assert world.state_hash() == before
    everything = balance(world, src) / 100
    world.call("transfer", from_account_id=src, to_account_id=dst, amount=everything)
    assert balance(world, src) == 0


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"amount": -5}, 400),
        ({"amount": 0}, 400),
        ({"amount": 1.234}, 400),
        ({"amount": float("inf")}, 400),
        ({"to_account_id": "SAME"}, 400),
        ({"to_account_id": "ACC-00000"}, 404),
        ({"from_account_id": "ACC-00000"}, 404),
        ({"to_account_id": "FROZEN"}, 409),
        ({"amount": "lots"}, None),  # ill-typed: pydantic's argument_error before any app code
    ],
)
def test_bad_transfers_change_nothing(world: MockWorld, args: dict[str, Any], code: int | None) -> None:
    src, dst = (a["account_id"] for a in active_accounts(world)[:2])
    frozen = world.rows("bank_accounts", {"status": "frozen"})[0]["account_id"]
    call = {"from_account_id": src, "to_account_id": dst, "amount": 10, **args}
    call = {
        k: {"SAME": src, "FROZEN": frozen}.get(v, v) if isinstance(v, str) else v for k, v in call.items()
    }
    before = (world.state_hash(), world.store.log_length())
    obs = world.step(ToolCall(name="transfer", arguments=call))
    if code is None:
        assert obs.error_kind == ErrorKind.ARGUMENT_ERROR
    else:
        assert obs.error_kind == ErrorKind.TOOL_ERROR
        assert obs.content["status"] == "error" and obs.content["code"] == code
    assert (world.state_hash(), world.store.log_length()) == before


def test_transaction_history_filters_and_pages(world: MockWorld) -> None:
    account = max(
        world.rows("bank_accounts"),
        key=lambda a: len(world.rows("bank_transactions", {"account_id": a["account_id"]})),
    )["account_id"]
    everything = world.call("get_transactions", account_id=account, page_size=100)
    posted = [t["posted_at"] for t in everything["transactions"]]
    assert posted == sorted(posted, reverse=True) and everything["total"] == len(posted)
    deposits = world.call("get_transactions", account_id=account, kind="deposit", page_size=100)
    assert deposits["transactions"] and all(t["kind"] == "deposit" for t in deposits["transactions"])
    start = (CLOCK - timedelta(days=30)).date().isoformat()
    recent = world.call("get_transactions", account_id=account, start_date=start, page_size=100)
    assert all(t["posted_at"][:10] >= start for t in recent["transactions"])
    assert recent["total"] <= everything["total"]
    page2 = world.call("get_transactions", account_id=account, page=2, page_size=2)["transactions"]
    assert page2 == everything["transactions"][2:4]
    for args in (
        {"kind": "gift"},
        {"start_date": "yesterday"},
        {"start_date": "2024-05-02", "end_date": "2024-05-01"},
    ):
        obs = world.step(ToolCall(name="get_transactions", arguments={"account_id": account, **args}))
        assert obs.content["code"] == 400, args


def _due_bill(world: MockWorld) -> tuple[dict[str, Any], str]:
    for bill in world.rows("bank_bills", {"status": "due"}):
        mine = [
            a
            for a in world.rows("bank_accounts", {"customer_id": bill["customer_id"], "status": "active"})
            if a["balance_cents"] >= bill["amount_cents"]
        ]
        if mine:
            return bill, mine[0]["account_id"]
    raise AssertionError("no payable bill in the seed")


def test_pay_bill_once(world: MockWorld) -> None:
    bill, account = _due_bill(world)
    before = balance(world, account)
    listed = world.call("list_bills", customer_id=bill["customer_id"], status="due")["bills"]
    assert bill["bill_id"] in [b["bill_id"] for b in listed]
    paid = world.call("pay_bill", bill_id=bill["bill_id"], from_account_id=account)
    assert paid["bill_status"] == "paid"
    assert balance(world, account) == before - bill["amount_cents"]
    row = world.rows("bank_bills", {"bill_id": bill["bill_id"]})[0]
    assert (row["status"], row["paid_from"], row["txn_id"]) == ("paid", account, paid["transaction_id"])
    snapshot = world.state_hash()
    again = world.step(
        ToolCall(name="pay_bill", arguments={"bill_id": bill["bill_id"], "from_account_id": account})
    )
    assert again.content["code"] == 409 and world.state_hash() == snapshot


def test_pay_bill_refusals(world: MockWorld) -> None:
    bill, account = _due_bill(world)
    stranger = next(
        a["account_id"] for a in world.rows("bank_accounts") if a["customer_id"] != bill["customer_id"]
    )
    before = world.state_hash()
    cases = [
        ({"bill_id": "BILL-99999", "from_account_id": account}, 404),
        ({"bill_id": bill["bill_id"], "from_account_id": "ACC-0"}, 404),
        ({"bill_id": bill["bill_id"], "from_account_id": stranger}, 403),
    ]
    for args, code in cases:
        obs = world.step(ToolCall(name="pay_bill", arguments=args))
        assert obs.content["code"] == code, args
    world.call(
        "transfer", from_account_id=account, to_account_id=stranger, amount=balance(world, account) / 100
    )
    broke = world.step(
        ToolCall(name="pay_bill", arguments={"bill_id": bill["bill_id"], "from_account_id": account})
    )
    assert broke.content["code"] == 422
    world.reset(seed=0, clock=CLOCK)
    assert world.state_hash() == before


def test_deposit_and_payees(world: MockWorld) -> None:
    account = active_accounts(world)[0]["account_id"]
    before = balance(world, account)
    result = world.call("deposit", account_id=account, amount=50)
    assert balance(world, account) == before + 5000 and result["transaction_id"].startswith("TXN-")
    payees = world.call("list_payees")["payees"]
    assert len(payees) >= 5 and all({"payee_id", "name", "category"} <= set(p) for p in payees)
    with pytest.raises(AppError):
        world.call("deposit", account_id=account, amount=0)


ACCOUNTS = [f"ACC-{n}" for n in range(10001, 10011)]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from(ACCOUNTS), st.sampled_from(ACCOUNTS), st.integers(-100, 2_000_000)),
        max_size=25,
    )
)
def test_property_money_is_conserved_and_never_negative(transfers: list[tuple[str, str, int]]) -> None:
    world = MockWorld(["banking"], seed=0, clock=CLOCK)
    total = total_money(world)
    for src, dst, cents in transfers:
        world.step(
            ToolCall(
                name="transfer",
                arguments={"from_account_id": src, "to_account_id": dst, "amount": cents / 100},
            )
        )
        assert min(a["balance_cents"] for a in world.rows("bank_accounts")) >= 0
    assert total_money(world) == total
    ledger = world.store.conn.execute(
        "SELECT coalesce(sum(amount_cents), 0) FROM bank_transactions"
    ).fetchone()[0]
    seeded = (
        MockWorld(["banking"], seed=0, clock=CLOCK)
        .store.conn.execute("SELECT sum(amount_cents) FROM bank_transactions")
        .fetchone()[0]
    )
    assert ledger == seeded  # transfers add a -x and a +x
    world.close()
