"""Templates of the `banking` app: balances, history, transfers, deposits, bills; asks and refusals.

A user knows their own customer id and account numbers, never a bill, transaction or transfer id.
"""

from __future__ import annotations

from typing import Any

from toolgym.authoring.generate import Draft, Skip, Template
from toolgym.authoring.templates.common import money, plain, round_amount

APP = ("banking",)
ACTIVE = "SELECT * FROM bank_accounts WHERE status = 'active' ORDER BY account_id"


def _customer_with(d: Draft, *types: str) -> dict[str, Any]:
    """A customer with an active account of each of `types` (checking, savings)."""
    having = " AND ".join(
        f"EXISTS (SELECT 1 FROM bank_accounts a WHERE a.customer_id = c.customer_id"
        f" AND a.account_type = '{t}' AND a.status = 'active')"
        for t in types
    )
    return d.pick(f"SELECT * FROM bank_customers c WHERE {having or '1'} ORDER BY customer_id")


def _account(accounts: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    for a in accounts:
        if a["account_type"] == kind and a["status"] == "active":
            return a
    raise Skip(f"no active {kind} account")


def balance(d: Draft) -> None:
    account = d.pick(ACTIVE)["account_id"]
    d.knows(account)
    d.query(
        [
            "What's the balance on my account {a}?",
            "How much money is in account {a} right now?",
            "Can you check the current balance of {a} for me?",
            "I'd like to know how much I have in {a}.",
            "Please tell me the balance of my bank account {a}.",
        ],
        a=account,
    )
    result = d.call("get_balance", account_id=account)
    d.answer(f"Account {account} has a balance of ${money(result['balance'])}.", plain(result["balance"]))


def total_across_accounts(d: Draft) -> None:
    customer = _customer_with(d, "checking")["customer_id"]
    d.knows(customer)
    d.query(
        [
            "I'm customer {c}. How much money do I have across all my accounts together?",
            "What is the combined balance of all my accounts? My customer ID is {c}.",
            "Customer {c} here: add up the balances of my accounts, please.",
        ],
        c=customer,
    )
    result = d.call("list_accounts", customer_id=customer)
    total = round(sum(a["balance"] for a in result["accounts"]), 2)
    d.answer(
        f"Across your {len(result['accounts'])} accounts you have ${money(total)} in total.", plain(total)
    )


def last_transaction(d: Draft) -> None:
    kind = d.choice(["checking", "savings"])
    customer = _customer_with(d, kind)["customer_id"]
    d.knows(customer)
    d.query(
        [
            "I'm customer {c}. What was the most recent transaction on my {k} account?",
            "Customer {c}: what's the last thing that went through my {k} account, and how much was it?",
            "Could you show me the latest transaction on my {k} account? My customer ID is {c}.",
        ],
        c=customer,
        k=kind,
    )
    account = _account(d.call("list_accounts", customer_id=customer)["accounts"], kind)
    txns = d.call("get_transactions", account_id=account["account_id"], page_size=1)["transactions"]
    if not txns:
        raise Skip("no transactions")
    t = txns[0]
    d.answer(
        f"The latest transaction on your {kind} account {account['account_id']} was a {t['kind'].replace('_', ' ')}"
        f" of ${money(abs(t['amount']))} on {t['posted_at'][:10]}.",
        plain(abs(t["amount"])),
        t["posted_at"][:10],
    )


def merchant_spending(d: Draft) -> None:
    row = d.pick(
        "SELECT account_id, counterparty FROM bank_transactions WHERE kind = 'card_purchase'"
        " GROUP BY account_id, counterparty ORDER BY account_id, counterparty"
    )
    account, merchant = row["account_id"], row["counterparty"]
    d.knows(account)
    d.query(
        [
            "How much have I spent at {m} with my card on account {a}?",
            "What's the total of my card purchases at {m} on account {a}?",
            "Add up everything I paid at {m} from account {a}, please.",
        ],
        m=merchant,
        a=account,
    )
    txns = d.call("get_transactions", account_id=account, kind="card_purchase", page_size=100)["transactions"]
    spent = round(-sum(t["amount"] for t in txns if t["counterparty"] == merchant), 2)
    count = sum(1 for t in txns if t["counterparty"] == merchant)
    d.answer(f"You spent ${money(spent)} at {merchant} in {count} card purchases.", plain(spent))


def deposits_in_range(d: Draft) -> None:
    account = d.pick(ACTIVE)["account_id"]
    days = d.rows(
        "SELECT DISTINCT substr(posted_at, 1, 10) AS day FROM bank_transactions WHERE account_id = ?"
        " AND kind = 'deposit' ORDER BY day",
        account,
    )
    if len(days) < 2:
        raise Skip("too few deposits")
    i = d.rng.randrange(len(days) - 1)
    start, end = days[i]["day"], days[d.rng.randrange(i + 1, len(days))]["day"]
    d.knows(account)
    d.query(
        [
            "How much was deposited into account {a} between {s} and {e}?",
            "What's the total of the deposits to {a} from {s} to {e}, inclusive?",
        ],
        a=account,
        s=start,
        e=end,
    )
    txns = d.call(
        "get_transactions", account_id=account, kind="deposit", start_date=start, end_date=end, page_size=100
    )["transactions"]
    total = round(sum(t["amount"] for t in txns), 2)
    d.answer(
        f"{len(txns)} deposits totalling ${money(total)} reached {account} in that period.", plain(total)
    )


def bills_due(d: Draft) -> None:
    customer = d.pick(
        "SELECT DISTINCT customer_id FROM bank_bills WHERE status = 'due' ORDER BY customer_id"
    )["customer_id"]
    d.knows(customer)
    d.query(
        [
            "I'm customer {c}. How much do I still owe on my unpaid bills?",
            "Which of my bills are still due, and what do they add up to? Customer ID {c}.",
            "Customer {c} here: what's the total of the bills I haven't paid yet?",
        ],
        c=customer,
    )
    bills = d.call("list_bills", customer_id=customer, status="due")["bills"]
    total = round(sum(b["amount"] for b in bills), 2)
    payees = ", ".join(b["payee"] for b in bills)
    count = f"{len(bills)} bill{'s' if len(bills) > 1 else ''}"
    d.answer(f"You have {count} due ({payees}), ${money(total)} in total.", plain(total))


def move_money(d: Draft, source: dict[str, Any], target: dict[str, Any], amount: float) -> dict[str, Any]:
    """Transfers `amount` dollars between two accounts; the result holds both new balances."""
    return d.call(
        "transfer", from_account_id=source["account_id"], to_account_id=target["account_id"], amount=amount
    )


def transfer(d: Draft) -> None:
    customer = _customer_with(d, "checking", "savings")["customer_id"]
    accounts = d.rows(
        "SELECT * FROM bank_accounts WHERE customer_id = ? AND status = 'active' ORDER BY account_id",
        customer,
    )
    source, target = (accounts[0], accounts[1]) if d.rng.random() < 0.5 else (accounts[1], accounts[0])
    amount = round_amount(d.rng, 10, min(500, source["balance_cents"] // 100))
    d.knows(source["account_id"], target["account_id"])
    d.query(
        [
            "Please move ${x} from {a} to {b}.",
            "Transfer ${x} from my account {a} into {b}.",
            "Can you send ${x} from {a} over to my other account {b}?",
            "I need ${x} moved from account {a} to account {b}.",
        ],
        x=amount,
        a=source["account_id"],
        b=target["account_id"],
    )
    result = move_money(d, source, target, float(amount))
    d.answer(
        f"Done: ${amount} moved from {source['account_id']} to {target['account_id']}; "
        f"{source['account_id']} now holds ${money(result['from_balance'])}.",
        plain(result["from_balance"]),
    )


def move_to_savings(d: Draft) -> None:
    customer = _customer_with(d, "checking", "savings")["customer_id"]
    way = d.choice([("checking", "savings"), ("savings", "checking")])
    d.knows(customer)
    accounts = d.call("list_accounts", customer_id=customer)["accounts"]
    source, target = _account(accounts, way[0]), _account(accounts, way[1])
    amount = round_amount(d.rng, 20, min(800, int(source["balance"])), 10)
    d.query(
        [
            "I'm customer {c}. Please move ${x} from my {f} account to my {t} account.",
            "Customer {c} here: transfer ${x} from {f} to {t}.",
            "Could you put ${x} from my {f} into my {t}? My customer ID is {c}.",
        ],
        c=customer,
        x=amount,
        f=way[0],
        t=way[1],
    )
    result = move_money(d, source, target, float(amount))
    d.answer(
        f"I moved ${amount} from your {way[0]} to your {way[1]} account; your {way[1]} balance is now"
        f" ${money(result['to_balance'])}.",
        plain(result["to_balance"]),
    )


def deposit(d: Draft) -> None:
    account = d.pick(ACTIVE)["account_id"]
    amount = round_amount(d.rng, 20, 2000, 10)
    d.knows(account)
    d.query(
        [
            "I'd like to deposit ${x} in cash into account {a}.",
            "Please add a cash deposit of ${x} to {a}.",
            "Deposit ${x} into my account {a}, please.",
        ],
        x=amount,
        a=account,
    )
    result = d.call("deposit", account_id=account, amount=float(amount))
    d.answer(
        f"Deposited ${amount}; {account} now holds ${money(result['balance'])}.", plain(result["balance"])
    )


def _due_bill(d: Draft) -> tuple[dict[str, Any], str]:
    bill = d.pick(
        "SELECT b.*, p.name AS payee FROM bank_bills b JOIN bank_payees p USING (payee_id)"
        " WHERE b.status = 'due' AND (SELECT count(*) FROM bank_bills o JOIN bank_payees q USING (payee_id)"
        " WHERE o.customer_id = b.customer_id AND o.status = 'due' AND q.name = p.name) = 1"
        " ORDER BY b.bill_id"
    )
    return bill, bill["payee"]


def _pay(d: Draft, customer: str, payee: str) -> dict[str, Any]:
    bills = d.call("list_bills", customer_id=customer, status="due")["bills"]
    bill = next((b for b in bills if b["payee"] == payee), None)
    if bill is None:
        raise Skip("no such due bill")
    checking = _account(d.call("list_accounts", customer_id=customer)["accounts"], "checking")
    paid = d.call("pay_bill", bill_id=bill["bill_id"], from_account_id=checking["account_id"])
    return {"amount": bill["amount"], "balance": paid["balance"], "account": checking["account_id"]}


def pay_bill(d: Draft) -> None:
    bill, payee = _due_bill(d)
    customer = bill["customer_id"]
    d.knows(customer)
    d.query(
        [
            "I'm customer {c}. Please pay my {p} bill from my checking account.",
            "Customer {c}: settle the bill from {p} using my checking account.",
            "Can you pay the {p} bill that's due? Take it from my checking. Customer ID {c}.",
        ],
        c=customer,
        p=payee,
    )
    paid = _pay(d, customer, payee)
    d.answer(
        f"Paid your {payee} bill of ${money(paid['amount'])} from {paid['account']}; the balance is now"
        f" ${money(paid['balance'])}.",
        plain(paid["amount"]),
    )


def pay_bill_ask(d: Draft) -> None:
    bill, payee = _due_bill(d)
    d.query(
        [
            "Please pay my {p} bill from my checking account.",
            "I need to pay the {p} bill that's due, out of checking.",
            "Could you settle my {p} bill? Use my checking account.",
        ],
        p=payee,
    )
    customer = d.ask(
        "customer_id", bill["customer_id"], "Sure. What is your customer ID?", keywords=["customer number"]
    )
    paid = _pay(d, customer, payee)
    d.answer(
        f"Paid your {payee} bill of ${money(paid['amount'])} from your checking account {paid['account']}.",
        plain(paid["amount"]),
    )


def transfer_ask_amount(d: Draft) -> None:
    customer = _customer_with(d, "checking", "savings")["customer_id"]
    accounts = d.rows(
        "SELECT * FROM bank_accounts WHERE customer_id = ? AND status = 'active' ORDER BY account_type",
        customer,
    )
    checking, savings = accounts[0], accounts[1]
    amount = round_amount(d.rng, 20, min(600, checking["balance_cents"] // 100), 10)
    d.knows(checking["account_id"], savings["account_id"])
    d.query(
        [
            "I want to move some money from my checking {a} to my savings {b}.",
            "Please make a transfer from {a} into my savings account {b}.",
        ],
        a=checking["account_id"],
        b=savings["account_id"],
    )
    said = d.ask("amount", f"${amount}", "How much would you like to transfer?", keywords=["how much"])
    result = move_money(d, checking, savings, float(amount))
    d.answer(
        f"Transferred {said} to {savings['account_id']}; its balance is now ${money(result['to_balance'])}.",
        plain(result["to_balance"]),
    )


def refuse_close(d: Draft) -> None:
    account = d.pick(ACTIVE)["account_id"]
    d.knows(account)
    d.query(
        [
            "Please close my account {a} for good.",
            "I want to shut down account {a} today.",
            "Can you close {a}? I don't use it any more.",
        ],
        a=account,
    )
    d.refuse((), f"I'm sorry, I can't close account {account}: none of my tools can close an account.")


def refuse_transfer(d: Draft) -> None:
    source, target = d.rng.sample(d.rows(ACTIVE), 2)
    amount = round_amount(d.rng, 10, 300, 5)
    d.knows(source["account_id"], target["account_id"])
    d.query(
        [
            "Send ${x} from account {a} to account {b}.",
            "Please transfer ${x} from {a} to {b} right away.",
        ],
        x=amount,
        a=source["account_id"],
        b=target["account_id"],
    )
    d.refuse(["transfer"], "I'm sorry, I cannot make transfers here: no transfer tool is available to me.")


def refuse_pay_bill(d: Draft) -> None:
    bill, payee = _due_bill(d)
    d.knows(bill["customer_id"])
    d.query(
        ["I'm customer {c}; please pay my {p} bill now.", "Customer {c}: pay off the {p} bill, please."],
        c=bill["customer_id"],
        p=payee,
    )
    d.refuse(["pay_bill"], f"I'm unable to pay the {payee} bill: I have no tool that pays bills.")


TEMPLATES = [
    Template("banking.balance", APP, balance),
    Template("banking.total_across_accounts", APP, total_across_accounts),
    Template("banking.last_transaction", APP, last_transaction),
    Template("banking.merchant_spending", APP, merchant_spending),
    Template("banking.deposits_in_range", APP, deposits_in_range),
    Template("banking.bills_due", APP, bills_due),
    Template("banking.transfer", APP, transfer),
    Template("banking.move_between_own_accounts", APP, move_to_savings),
    Template("banking.deposit", APP, deposit),
    Template("banking.pay_bill", APP, pay_bill),
    Template("banking.pay_bill_ask_customer", APP, pay_bill_ask),
    Template("banking.transfer_ask_amount", APP, transfer_ask_amount),
    Template("banking.refuse_close_account", APP, refuse_close),
    Template("banking.refuse_transfer", APP, refuse_transfer),
    Template("banking.refuse_pay_bill", APP, refuse_pay_bill),
]
