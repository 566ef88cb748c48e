"""Banking: customers, checking and savings accounts, transactions, payees and bills.

Semantics: a transfer really moves money between two accounts and writes a transaction on each;
no account ever goes negative (checked by the API with a 422, and by a CHECK constraint as a
backstop); frozen and closed accounts cannot move money (409); paying a bill debits the account,
marks the bill paid and cannot happen twice. Money is stored in integer cents and shown in dollars.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, Final

from toolgym.mocks.app import App, format_id, read, set_counter, write
from toolgym.mocks.clock import format_time
from toolgym.mocks.responses import (
    AppError,
    bad_request,
    conflict,
    from_cents,
    ok,
    paginate,
    parse_date,
    positive_cents,
    unprocessable,
)
from toolgym.mocks.seeding import insert_rows, pick_name
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

ACCOUNT_TYPES: Final = ("checking", "savings")
ACCOUNT_STATUSES: Final = ("active", "frozen", "closed")
TXN_KINDS: Final = (
    "deposit",
    "withdrawal",
    "card_purchase",
    "transfer_in",
    "transfer_out",
    "bill_payment",
    "fee",
)
BILL_STATUSES: Final = ("due", "paid")
PAYEES: Final = (
    ("City Power & Light", "utilities"),
    ("Clearwater Utilities", "utilities"),
    ("Skyline Mobile", "phone"),
    ("FiberNet Internet", "internet"),
    ("Harbor Insurance", "insurance"),
    ("Summit Credit Card", "credit_card"),
    ("Greenfield Property Mgmt", "rent"),
    ("Metro Transit Pass", "transport"),
)
MERCHANTS: Final = (
    "FreshMart",
    "Corner Cafe",
    "BookNook",
    "FuelStop",
    "CinemaMax",
    "PharmaPlus",
    "HomeGoods",
)
FIRST_NAMES: Final = (
    "Amir",
    "Bella",
    "Carlos",
    "Dana",
    "Elif",
    "Felix",
    "Grace",
    "Hugo",
    "Isla",
    "Jonas",
    "Kira",
    "Liam",
)
LAST_NAMES: Final = (
    "Anders",
    "Baker",
    "Chen",
    "Diaz",
    "Evans",
    "Fischer",
    "Gupta",
    "Haddad",
    "Ito",
    "Jensen",
)

N_CUSTOMERS: Final = 60
N_BILLS: Final = 100
HISTORY_DAYS: Final = 90


class BankingApp(App):
    name = "banking"
    description = "A retail bank: accounts and balances, transfers, transaction history, bill payments."
    version = "1"
    schema = f"""
    CREATE TABLE bank_customers (
        customer_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        email TEXT NOT NULL UNIQUE
    );
    CREATE TABLE bank_accounts (
        account_id TEXT PRIMARY KEY,
        customer_id TEXT NOT NULL,
        account_type TEXT NOT NULL CHECK (account_type IN ('checking', 'savings')),
        nickname TEXT NOT NULL,
        currency TEXT NOT NULL DEFAULT 'USD',
        balance_cents INTEGER NOT NULL CHECK (balance_cents >= 0),
        status TEXT NOT NULL CHECK (status IN ('active', 'frozen', 'closed')),
        opened_at TEXT NOT NULL
    );
    CREATE INDEX bank_accounts_customer ON bank_accounts(customer_id);
    CREATE TABLE bank_transactions (
        txn_id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL,
        posted_at TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ({", ".join(f"'{k}'" for k in TXN_KINDS)})),
        amount_cents INTEGER NOT NULL,
        balance_after_cents INTEGER NOT NULL,
        counterparty TEXT,
        memo TEXT NOT NULL DEFAULT '',
        reference TEXT
    );
    CREATE INDEX bank_transactions_account ON bank_transactions(account_id, posted_at);
    CREATE TABLE bank_payees (
        payee_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        category TEXT NOT NULL
    );
    CREATE TABLE bank_bills (
        bill_id TEXT PRIMARY KEY,
        customer_id TEXT NOT NULL,
        payee_id TEXT NOT NULL,
        amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
        due_date TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('due', 'paid')),
        paid_at TEXT,
        paid_from TEXT,
        txn_id TEXT
    );
    """

    # ---- seed data ---------------------------------------------------------------------------
    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        customers: list[dict[str, Any]] = []
        accounts: list[dict[str, Any]] = []
        history: list[dict[str, Any]] = []
        account_no = 10000
        for i in range(1, N_CUSTOMERS + 1):
            first, last = pick_name(rng, FIRST_NAMES, LAST_NAMES)
            customer_id = format_id("CUST", i, 4)
            customers.append(
                {
                    "customer_id": customer_id,
                    "name": f"{first} {last}",
                    "email": f"{first}.{last}{i}@mail.test".lower(),
                }
            )
            kinds = ["checking"] + (["savings"] if rng.random() < 0.6 else [])
            for kind in kinds:
                account_no += 1
                account_id = f"ACC-{account_no}"
                opened = clock - timedelta(days=rng.randint(HISTORY_DAYS + 1, 2000))
                balance, events = self._history(rng, clock, kind)
                status = "frozen" if rng.random() < 0.04 else "active"
                accounts.append(
                    {
                        "account_id": account_id,
                        "customer_id": customer_id,
                        "account_type": kind,
                        "nickname": f"{first}'s {kind}",
                        "currency": "USD",
                        "balance_cents": balance,
                        "status": status,
                        "opened_at": format_time(opened),
                    }
                )
                history.extend({"account_id": account_id, **e} for e in events)
        # transaction ids follow posting time across all accounts, as a real ledger's would
        history.sort(key=lambda t: (t["posted_at"], t["account_id"]))
        for n, t in enumerate(history, 1):
            t["txn_id"] = format_id("TXN", n)
        insert_rows(db, "bank_customers", customers)
        insert_rows(db, "bank_accounts", accounts)
        insert_rows(db, "bank_transactions", history)
        set_counter(db, "TXN", len(history))
        set_counter(db, "TRF", 0)

        payees = [
            {"payee_id": format_id("PAYEE", i, 3), "name": n, "category": c}
            for i, (n, c) in enumerate(PAYEES, 1)
        ]
        insert_rows(db, "bank_payees", payees)
        bills = []
        by_customer: dict[str, list[str]] = {}
        for a in accounts:
            by_customer.setdefault(a["customer_id"], []).append(a["account_id"])
        for i in range(1, N_BILLS + 1):
            customer = rng.choice(customers)["customer_id"]
            paid = rng.random() < 0.3
            due = clock + timedelta(days=rng.randint(-20, 30))
            bills.append(
                {
                    "bill_id": format_id("BILL", i, 5),
                    "customer_id": customer,
                    "payee_id": rng.choice(payees)["payee_id"],
                    "amount_cents": rng.randrange(1500, 40000, 5),
                    "due_date": due.date().isoformat(),
                    "status": "paid" if paid else "due",
                    "paid_at": format_time(due - timedelta(days=3)) if paid else None,
                    "paid_from": by_customer[customer][0] if paid else None,
                    "txn_id": None,
                }
            )
        insert_rows(db, "bank_bills", bills)

    @staticmethod
    def _history(rng: random.Random, clock: datetime, kind: str) -> tuple[int, list[dict[str, Any]]]:
        """A plausible 90-day history for one account; the balance never dips below zero."""
        start = clock - timedelta(days=HISTORY_DAYS)
        balance = rng.randrange(20000, 800000, 100)
        events: list[dict[str, Any]] = [
            {
                "posted_at": format_time(start),
                "kind": "deposit",
                "amount_cents": balance,
                "balance_after_cents": balance,
                "counterparty": None,
                "memo": "Opening balance carried forward",
                "reference": None,
            }
        ]
        when = start
        for _ in range(rng.randint(4, 14)):
            when += timedelta(days=rng.randint(1, 8), minutes=rng.randint(0, 1439))
            if when >= clock:
                break
            if kind == "checking" and rng.random() < 0.3:
                amount, what, who = rng.randrange(150000, 450000, 100), "deposit", "Payroll ACME Corp"
            elif kind == "savings":
                amount, what, who = rng.randrange(500, 50000, 100), "deposit", "Interest and savings"
            else:
                amount = -min(balance, rng.randrange(300, 25000, 1))
                what, who = "card_purchase", rng.choice(MERCHANTS)
            if amount == 0:
                continue
            balance += amount
            events.append(
                {
                    "posted_at": format_time(when),
                    "kind": what,
                    "amount_cents": amount,
                    "balance_after_cents": balance,
                    "counterparty": who,
                    "memo": "",
                    "reference": None,
                }
            )
        return balance, events

    # ---- helpers -----------------------------------------------------------------------------
    def _account(self, account_id: str) -> dict[str, Any]:
        return self.get_or_404("bank_accounts", "account_id", account_id, what="account")

    @staticmethod
    def _account_view(a: dict[str, Any]) -> dict[str, Any]:
        return {
            "account_id": a["account_id"],
            "account_type": a["account_type"],
            "nickname": a["nickname"],
            "currency": a["currency"],
            "balance": from_cents(a["balance_cents"]),
            "status": a["status"],
        }

    @staticmethod
    def _require_active(a: dict[str, Any]) -> None:
        if a["status"] != "active":
            raise conflict(f"account {a['account_id']} is {a['status']}", account_id=a["account_id"])

    def _post(
        self,
        account: dict[str, Any],
        kind: str,
        amount: int,
        counterparty: str | None,
        memo: str,
        reference: str | None,
        txn_id: str | None = None,
    ) -> tuple[str, int]:
        """Move `amount` cents (signed) on an account and log it; 422 if the balance would go negative."""
        balance = account["balance_cents"] + amount
        if balance < 0:
            raise unprocessable(
                f"insufficient funds in {account['account_id']}:"
                f" balance {from_cents(account['balance_cents'])}, needs {from_cents(-amount)}",
                account_id=account["account_id"],
            )
        txn_id = txn_id or self.next_id("TXN")
        self.execute(
            "UPDATE bank_accounts SET balance_cents = ? WHERE account_id = ?",
            (balance, account["account_id"]),
        )
        self.execute(
            "INSERT INTO bank_transactions(txn_id, account_id, posted_at, kind, amount_cents,"
            " balance_after_cents, counterparty, memo, reference) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                txn_id,
                account["account_id"],
                self.now_iso(),
                kind,
                amount,
                balance,
                counterparty,
                memo,
                reference,
            ),
        )
        return txn_id, balance

    # ---- accounts ------------------------------------------------------------------------------
    @read
    def list_accounts(
        self, customer_id: Annotated[str, Param("customer id, e.g. CUST-0001")]
    ) -> dict[str, Any]:
        """The customer's accounts with their balances."""
        customer = self.get_or_404("bank_customers", "customer_id", customer_id, what="customer")
        rows = self.rows(
            "SELECT * FROM bank_accounts WHERE customer_id = ? ORDER BY account_id", (customer_id,)
        )
        return ok(
            customer_id=customer_id, name=customer["name"], accounts=[self._account_view(a) for a in rows]
        )

    @read
    def get_balance(self, account_id: Annotated[str, Param("account id, e.g. ACC-10001")]) -> dict[str, Any]:
        """The current balance of one account."""
        a = self._account(account_id)
        return ok(
            account_id=account_id,
            balance=from_cents(a["balance_cents"]),
            currency=a["currency"],
            account_status=a["status"],
        )

    @write
    def transfer(
        self,
        from_account_id: Annotated[str, Param("account to take the money from")],
        to_account_id: Annotated[str, Param("account to put the money into")],
        amount: Annotated[float, Param("amount in dollars, > 0, at most two decimals")],
        memo: Annotated[str, Param("a note shown on both transactions")] = "",
    ) -> dict[str, Any]:
        """Move money from one account to another. Fails without any effect if funds are insufficient."""
        cents = positive_cents("amount", amount)
        if from_account_id == to_account_id:
            raise bad_request("cannot transfer to the same account")
        source, target = self._account(from_account_id), self._account(to_account_id)
        self._require_active(source)
        self._require_active(target)
        reference = self.next_id("TRF")
        out_id, in_id = self.next_ids("TXN", 2)
        _, source_balance = self._post(source, "transfer_out", -cents, to_account_id, memo, reference, out_id)
        _, target_balance = self._post(target, "transfer_in", cents, from_account_id, memo, reference, in_id)
        return ok(
            transfer_id=reference,
            from_account_id=from_account_id,
            to_account_id=to_account_id,
            amount=from_cents(cents),
            from_balance=from_cents(source_balance),
            to_balance=from_cents(target_balance),
            transaction_ids=[out_id, in_id],
        )

    @write
    def deposit(
        self,
        account_id: Annotated[str, Param("account id")],
        amount: Annotated[float, Param("amount in dollars, > 0")],
        memo: Annotated[str, Param("a note on the transaction")] = "Cash deposit",
    ) -> dict[str, Any]:
        """Deposit cash into an account."""
        cents = positive_cents("amount", amount)
        account = self._account(account_id)
        self._require_active(account)
        txn_id, balance = self._post(account, "deposit", cents, None, memo, None)
        return ok(account_id=account_id, transaction_id=txn_id, balance=from_cents(balance))

    @read
    def get_transactions(
        self,
        account_id: Annotated[str, Param("account id")],
        kind: Annotated[str | None, Param("only this kind of transaction", enum=TXN_KINDS)] = None,
        start_date: Annotated[str | None, Param("first day, YYYY-MM-DD (inclusive)")] = None,
        end_date: Annotated[str | None, Param("last day, YYYY-MM-DD (inclusive)")] = None,
        page: Annotated[int, Param("1-based page number")] = 1,
        page_size: Annotated[int, Param("transactions per page, 1-100")] = 20,
    ) -> dict[str, Any]:
        """An account's transactions, newest first, optionally filtered by kind and date range."""
        self._account(account_id)
        sql = "SELECT * FROM bank_transactions WHERE account_id = ?"
        params: list[Any] = [account_id]
        if kind is not None:
            sql += " AND kind = ?"
            params.append(kind)
        start = parse_date("start_date", start_date) if start_date is not None else None
        end = parse_date("end_date", end_date) if end_date is not None else None
        if start is not None and end is not None and start > end:
            raise bad_request("start_date is after end_date")
        if start is not None:
            sql += " AND substr(posted_at, 1, 10) >= ?"
            params.append(start.isoformat())
        if end is not None:
            sql += " AND substr(posted_at, 1, 10) <= ?"
            params.append(end.isoformat())
        rows = self.rows(sql + " ORDER BY posted_at DESC, txn_id DESC", params)
        page_rows = paginate(rows, page, page_size)
        return ok(
            account_id=account_id,
            total=len(rows),
            page=page,
            transactions=[
                {
                    "txn_id": t["txn_id"],
                    "posted_at": t["posted_at"],
                    "kind": t["kind"],
                    "amount": from_cents(t["amount_cents"]),
                    "balance_after": from_cents(t["balance_after_cents"]),
                    "counterparty": t["counterparty"],
                    "memo": t["memo"],
                }
                for t in page_rows
            ],
        )

    # ---- bills -----------------------------------------------------------------------------------
    @read
    def list_payees(self) -> dict[str, Any]:
        """The billers a customer can pay."""
        return ok(payees=self.rows("SELECT payee_id, name, category FROM bank_payees ORDER BY payee_id"))

    @read
    def list_bills(
        self,
        customer_id: Annotated[str, Param("customer id")],
        status: Annotated[str | None, Param("only bills with this status", enum=BILL_STATUSES)] = None,
    ) -> dict[str, Any]:
        """The customer's bills, by due date."""
        self.get_or_404("bank_customers", "customer_id", customer_id, what="customer")
        sql = (
            "SELECT b.bill_id, p.name AS payee, b.amount_cents, b.due_date, b.status, b.paid_at"
            " FROM bank_bills b JOIN bank_payees p USING (payee_id) WHERE b.customer_id = ?"
        )
        params: list[Any] = [customer_id]
        if status is not None:
            sql += " AND b.status = ?"
            params.append(status)
        rows = self.rows(sql + " ORDER BY b.due_date, b.bill_id", params)
        return ok(
            bills=[
                {
                    "bill_id": r["bill_id"],
                    "payee": r["payee"],
                    "amount": from_cents(r["amount_cents"]),
                    "due_date": r["due_date"],
                    "status": r["status"],
                    "paid_at": r["paid_at"],
                }
                for r in rows
            ]
        )

    @write
    def pay_bill(
        self,
        bill_id: Annotated[str, Param("bill id, e.g. BILL-00012")],
        from_account_id: Annotated[str, Param("account to pay from; must belong to the bill's customer")],
    ) -> dict[str, Any]:
        """Pay a due bill in full from one of the customer's accounts."""
        bill = self.get_or_404("bank_bills", "bill_id", bill_id, what="bill")
        account = self._account(from_account_id)
        if bill["status"] == "paid":
            raise conflict(f"bill {bill_id} is already paid")
        if account["customer_id"] != bill["customer_id"]:
            raise AppError(
                403, f"account {from_account_id} does not belong to the customer of bill {bill_id}"
            )
        self._require_active(account)
        payee = self.scalar("SELECT name FROM bank_payees WHERE payee_id = ?", (bill["payee_id"],))
        txn_id, balance = self._post(
            account, "bill_payment", -bill["amount_cents"], payee, f"Bill {bill_id}", bill_id
        )
        self.execute(
            "UPDATE bank_bills SET status = 'paid', paid_at = ?, paid_from = ?, txn_id = ? WHERE bill_id = ?",
            (self.now_iso(), from_account_id, txn_id, bill_id),
        )
        return ok(bill_id=bill_id, bill_status="paid", transaction_id=txn_id, balance=from_cents(balance))
