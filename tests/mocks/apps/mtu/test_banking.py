"""MTU Banking app (toolgym.mocks.apps.mtu.banking) on its seeded data (real SQLite)."""

from __future__ import annotations

from tests.mocks.apps.mtu import count_rows, fails, make_world
from toolgym.mocks.world import MockWorld


def cents(world: MockWorld, account: str) -> int:
    return int(world.rows("mtu_banking_accounts", {"account_number": account})[0]["balance_cents"])


def test_transfers_move_money_and_never_overdraw() -> None:
    world = make_world("mtu_banking")
    total = sum(a["balance_cents"] for a in world.rows("mtu_banking_accounts"))
    checking, savings = cents(world, "123456"), cents(world, "7891011")
    assert world.call("get_account_balance", account_number="123456")["balance"] == f"${checking / 100:,.2f}"
    done = world.call(
        "transfer_funds",
        account_number="123456",
        source_account="checking",
        destination_account="savings",
        amount=500,
        transfer_speed="now",
    )
    assert done["transfer_status"] == "completed"
    assert cents(world, "123456") == checking - 50000 and cents(world, "7891011") == savings + 50000
    assert sum(a["balance_cents"] for a in world.rows("mtu_banking_accounts")) == total
    recent = world.call("get_recent_transactions", account_number="123456", transaction_type="transfer")
    assert recent["transactions"][0]["amount"] == -500
    fails(
        world,
        "transfer_funds",
        422,
        account_number="123456",
        source_account="checking",
        destination_account="savings",
        amount=10**7,
        transfer_speed="now",
    )
    fails(
        world,
        "transfer_funds",
        400,
        account_number="123456",
        source_account="checking",
        destination_account="savings",
        amount=5,
        transfer_speed="later",
    )
    fails(
        world,
        "transfer_funds",
        404,
        account_number="000",
        source_account="checking",
        destination_account="savings",
        amount=5,
        transfer_speed="now",
    )
    scheduled = world.call(
        "transfer_funds",
        account_number="17528472632",
        source_account="checking",
        destination_account="savings",
        amount=50,
        transfer_speed="scheduled",
        schedule_time="2024-01-05T09:00:00",
    )
    assert scheduled["transfer_id"] and count_rows(world, "mtu_banking_scheduled") == 1
    world.call("freeze_bank_account", account_number="239267492492", freeze_reason="fraud")
    fails(world, "freeze_bank_account", 409, account_number="239267492492")
    fails(
        world,
        "transfer_funds",
        409,
        account_number="239267492492",
        source_account="checking",
        destination_account="savings",
        amount=1,
        transfer_speed="now",
    )
    fails(world, "get_recent_transactions", 400, account_number="123456", transaction_type="gift")


def test_sgd_bank_and_payments() -> None:
    world = make_world("mtu_banking")
    before = world.call("CheckBalance", account_type="checking")["balance"]
    sent = world.call("TransferMoney", account_type="checking", amount=20, recipient_account_name="Philip")
    assert sent["balance"] == before - 20
    fails(world, "TransferMoney", 404, account_type="checking", amount=20, recipient_account_name="Nobody")
    fails(world, "CheckBalance", 400, account_type="crypto")
    wallet = world.rows("mtu_banking_wallet")[0]["app_balance_cents"]
    world.call(
        "MakePayment", payment_method="app balance", amount=20, receiver="John", private_visibility=True
    )
    assert world.rows("mtu_banking_wallet")[0]["app_balance_cents"] == wallet - 2000
    fails(world, "MakePayment", 422, payment_method="app balance", amount=10**5, receiver="John")
    fails(world, "MakePayment", 404, payment_method="debit card", amount=1, receiver="Stranger")
    world.call("RequestPayment", receiver="Rachel", amount=15.5)
    fails(world, "RequestPayment", 409, receiver="rachel", amount=15.5)
