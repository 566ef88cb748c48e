"""The banking templates: each gives tasks that pass `toolgym check`; no query names a bill,
transaction or transfer id; a transfer's expected_state moves both balances; the ask leaves the
customer id out; a refusal withholds the tool it needs."""

from __future__ import annotations

from tests.authoring.templates.template_checks import assert_every_template_passes, assert_no_query_names
from toolgym.actions import AskUser, ToolCall
from toolgym.authoring.templates.banking import TEMPLATES


def test_every_template_gives_checked_tasks_that_name_no_found_id() -> None:
    result = assert_every_template_passes(TEMPLATES)
    assert_no_query_names(result, [("bank_bills", "bill_id"), ("bank_transactions", "txn_id")])
    by_template = {t.metadata["template"]: t for t in result.all_tasks}

    transfer = by_template["banking.transfer"]
    call = transfer.golden[0].action
    assert isinstance(call, ToolCall) and call.name == "transfer"
    moved = {
        a["where"]["account_id"]
        for a in transfer.expected_state
        if a["table"] == "bank_accounts" and a.get("field") == "balance_cents"
    }
    assert moved == {call.arguments["from_account_id"], call.arguments["to_account_id"]}

    ask = by_template["banking.pay_bill_ask_customer"]
    assert ask.user is not None and ask.user.must_not_volunteer == ["customer_id"]
    assert isinstance(ask.golden[0].action, AskUser)
    customer = ask.user.known["customer_id"]
    assert customer not in ask.query
    bills = ask.golden[1].action
    assert isinstance(bills, ToolCall) and bills.arguments["customer_id"] == customer

    refusal = by_template["banking.refuse_transfer"]
    assert refusal.tools is not None and "transfer" not in refusal.tools and "get_balance" in refusal.tools

    chain = by_template["banking.pay_bill"]
    calls = [s.action for s in chain.golden if isinstance(s.action, ToolCall)]
    assert [c.name for c in calls] == ["list_bills", "list_accounts", "pay_bill"]
    assert calls[2].arguments["bill_id"].startswith("BILL-")  # found by the first call, not told
