"""The banking calls the step benches replay: reads and writes of the bundled banking app, and
the mixed sequence (every `every`-th step a write, the writes moving money back and forth)."""

from __future__ import annotations

from toolgym.actions import ToolCall


def banking_calls() -> tuple[list[ToolCall], list[ToolCall]]:
    reads = [
        ToolCall(name="get_balance", arguments={"account_id": "ACC-10001"}),
        ToolCall(name="list_accounts", arguments={"customer_id": "CUST-0002"}),
        ToolCall(name="get_transactions", arguments={"account_id": "ACC-10002", "page_size": 5}),
        ToolCall(name="list_bills", arguments={"customer_id": "CUST-0003"}),
    ]
    writes = [
        ToolCall(
            name="transfer",
            arguments={"from_account_id": "ACC-10001", "to_account_id": "ACC-10002", "amount": 1.0},
        ),
        ToolCall(name="deposit", arguments={"account_id": "ACC-10003", "amount": 2.5}),
        ToolCall(
            name="transfer",
            arguments={"from_account_id": "ACC-10002", "to_account_id": "ACC-10001", "amount": 1.0},
        ),
    ]
    return reads, writes


def mixed_calls(n: int, every: int) -> list[tuple[str, ToolCall]]:
    """n steps as (kind, call): every `every`-th a write, in turn, the rest reads, in turn."""
    reads, writes = banking_calls()
    return [
        ("write", writes[(i // every) % len(writes)])
        if i % every == every - 1
        else ("read", reads[i % len(reads)])
        for i in range(n)
    ]
