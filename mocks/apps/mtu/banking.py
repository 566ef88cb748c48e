"""MTU banking ("mtu_banking", separate from the `banking` app): transfer_funds,
get_account_balance, get_recent_transactions, freeze_bank_account (generated APIs), CheckBalance,
TransferMoney (SGD banks) and RequestPayment, MakePayment (SGD payments).

Accounts have numbers, a type and an owner; the user ("me") owns checking 123456 and savings
7891011. Money really moves and is logged on both sides; balances never go negative (422),
frozen accounts move nothing (409), a scheduled transfer waits in a queue. Payments go from the
user's app balance, debit card (the checking account) or credit card (a limit), to friends.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Volatile, format_id, read, set_counter, write
from toolgym.mocks.apps.mtu._common import FIRST_NAMES, LAST_NAMES, Flag, canon, finalize_tools, flag
from toolgym.mocks.responses import (
    bad_request,
    conflict,
    from_cents,
    not_found,
    ok,
    positive_cents,
    unprocessable,
)
from toolgym.mocks.seeding import insert_rows, name_grid
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

ACCOUNT_TYPES: Final = ("checking", "savings")
TXN_TYPES: Final = ("deposit", "withdrawal", "transfer", "payment", "purchase", "fee")
SPEEDS: Final = ("now", "scheduled")
PAYMENT_METHODS: Final = ("app balance", "debit card", "credit card")
USER_ID: Final = "CUST-0001"
USER_ACCOUNTS: Final = {"checking": "123456", "savings": "7891011"}
# account numbers people quote in MTU's dialogues belong to other customers here
KNOWN_NUMBERS: Final = ("17528472632", "239267492492", "112233456", "82746453535")
CREDIT_LIMIT_CENTS: Final = 500000
MERCHANTS: Final = (
    "FreshMart",
    "Corner Cafe",
    "FuelStop",
    "CinemaMax",
    "PharmaPlus",
    "OnlineShop",
    "Metro Transit",
)


class MtuBankingApp(App):
    name = "mtu_banking"
    description = (
        "A bank and a payment app: balances, transfers, transactions, freezes, payments (MTU-Bench)."
    )
    version = "1"
    schema = """
    CREATE TABLE mtu_banking_accounts (
        account_number TEXT PRIMARY KEY,
        customer_id TEXT NOT NULL,
        holder_name TEXT NOT NULL,
        account_type TEXT NOT NULL CHECK (account_type IN ('checking', 'savings')),
        balance_cents INTEGER NOT NULL CHECK (balance_cents >= 0),
        status TEXT NOT NULL CHECK (status IN ('active', 'frozen')),
        freeze_reason TEXT
    );
    CREATE INDEX mtu_banking_accounts_customer ON mtu_banking_accounts(customer_id);
    CREATE TABLE mtu_banking_transactions (
        txn_id TEXT PRIMARY KEY,
        account_number TEXT NOT NULL REFERENCES mtu_banking_accounts(account_number),
        posted_at TEXT NOT NULL,
        transaction_type TEXT NOT NULL,
        amount_cents INTEGER NOT NULL,
        balance_after_cents INTEGER NOT NULL,
        description TEXT NOT NULL
    );
    CREATE INDEX mtu_banking_transactions_account ON mtu_banking_transactions(account_number, posted_at);
    CREATE TABLE mtu_banking_scheduled (
        transfer_id TEXT PRIMARY KEY,
        from_account TEXT NOT NULL,
        to_account TEXT NOT NULL,
        amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
        scheduled_for TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('scheduled', 'done', 'cancelled'))
    );
    CREATE TABLE mtu_banking_friends (
        name TEXT PRIMARY KEY
    );
    CREATE TABLE mtu_banking_wallet (
        wallet_id TEXT PRIMARY KEY,
        app_balance_cents INTEGER NOT NULL CHECK (app_balance_cents >= 0),
        credit_used_cents INTEGER NOT NULL CHECK (credit_used_cents >= 0)
    );
    CREATE TABLE mtu_banking_payments (
        payment_id TEXT PRIMARY KEY,
        direction TEXT NOT NULL CHECK (direction IN ('sent', 'requested')),
        receiver TEXT NOT NULL,
        amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
        payment_method TEXT,
        private_visibility INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('completed', 'pending')),
        created_at TEXT NOT NULL
    );
    """
    volatile: ClassVar[Volatile] = {"mtu_banking_payments": ["created_at"]}

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        accounts: list[dict[str, Any]] = []
        txns: list[dict[str, Any]] = []
        used: set[str] = set(USER_ACCOUNTS.values()) | set(KNOWN_NUMBERS)
        known = list(KNOWN_NUMBERS)
        people = rng.sample(name_grid(FIRST_NAMES, LAST_NAMES), 60)
        for i, holder in enumerate(["Alex Morgan", *people], 1):
            customer_id = format_id("CUST", i, 4)
            # the user and the owners of the quoted numbers have both kinds of account
            both = i <= 1 + len(KNOWN_NUMBERS) or rng.random() < 0.6
            kinds = ["checking", "savings"] if both else ["checking"]
            for kind in kinds:
                if i == 1:
                    number = USER_ACCOUNTS[kind]
                elif known and kind == "checking":
                    number = known.pop(0)
                else:
                    number = str(rng.randint(10**9, 10**11))
                    while number in used:
                        number = str(rng.randint(10**9, 10**11))
                used.add(number)
                balance = (
                    rng.randint(200, 30000) * 100
                    if i > 1
                    else {"checking": 482_550, "savings": 1_250_000}[kind]
                )
                history = self._history(rng, clock, number, kind, balance, len(txns))
                txns.extend(history)
                accounts.append(
                    {
                        "account_number": number,
                        "customer_id": customer_id,
                        "holder_name": holder,
                        "account_type": kind,
                        "balance_cents": balance,
                        "status": "frozen" if i > 1 and rng.random() < 0.05 else "active",
                        "freeze_reason": None,
                    }
                )
        for a in accounts:
            if a["status"] == "frozen":
                a["freeze_reason"] = "suspected fraud"
        insert_rows(db, "mtu_banking_accounts", accounts)
        insert_rows(db, "mtu_banking_transactions", txns)
        set_counter(db, "BTX", len(txns))
        set_counter(db, "SCH", 0)
        set_counter(db, "PAY", 0)
        friends = sorted(set(rng.sample(FIRST_NAMES, 20)) | {"John", "Philip", "Rachel"})
        insert_rows(db, "mtu_banking_friends", [{"name": n} for n in friends])
        insert_rows(
            db,
            "mtu_banking_wallet",
            [{"wallet_id": "me", "app_balance_cents": 35_000, "credit_used_cents": 120_000}],
        )

    @staticmethod
    def _history(
        rng: random.Random, clock: datetime, number: str, kind: str, balance: int, offset: int
    ) -> list[dict[str, Any]]:
        """Ninety days of activity that ends at `balance` and never dips below zero."""
        events: list[tuple[datetime, str, int, str]] = []
        when = clock - timedelta(days=90)
        while True:
            when += timedelta(days=rng.randint(2, 9), minutes=rng.randint(0, 1439))
            if when >= clock:
                break
            if kind == "savings":
                events.append((when, "deposit", rng.randint(20, 500) * 100, "Savings deposit"))
            elif rng.random() < 0.25:
                events.append((when, "deposit", rng.randint(1500, 4000) * 100, "Payroll ACME Corp"))
            else:
                kind_of = rng.choice(("purchase", "purchase", "withdrawal", "payment"))
                events.append((when, kind_of, -rng.randint(5, 300) * 100, rng.choice(MERCHANTS)))
        # walk back from today's balance; an opening deposit covers whatever came out before
        running = balance
        befores = []
        for ev in reversed(events):
            befores.append(running)
            running -= ev[2]
        opening = max(running, 0)
        rows = [
            {
                "txn_id": "",
                "account_number": number,
                "posted_at": (clock - timedelta(days=91)).isoformat(),
                "transaction_type": "deposit",
                "amount_cents": opening,
                "balance_after_cents": opening,
                "description": "Opening balance",
            }
        ]
        after = opening
        for ev in events:
            after += ev[2]
            if after < 0:  # a purchase the account could not cover never happened
                after -= ev[2]
                continue
            rows.append(
                {
                    "txn_id": "",
                    "account_number": number,
                    "posted_at": ev[0].isoformat(),
                    "transaction_type": ev[1],
                    "amount_cents": ev[2],
                    "balance_after_cents": after,
                    "description": ev[3],
                }
            )
        if after != balance:  # settle to today's balance
            rows.append(
                {
                    "txn_id": "",
                    "account_number": number,
                    "posted_at": (clock - timedelta(hours=1)).isoformat(),
                    "transaction_type": "deposit" if balance > after else "withdrawal",
                    "amount_cents": balance - after,
                    "balance_after_cents": balance,
                    "description": "Branch adjustment",
                }
            )
        for n, r in enumerate(rows, offset + 1):
            r["txn_id"] = format_id("BTX", n, 7)
        return rows

    # ---- helpers -------------------------------------------------------------------------------
    def _account(self, number: str) -> dict[str, Any]:
        return self.get_or_404("mtu_banking_accounts", "account_number", number.strip(), what="account")

    def _owned(self, customer_id: str, ref: str, param: str) -> dict[str, Any]:
        """An account named by type ("checking") among the customer's, or by its number."""
        if canon(ref) in ACCOUNT_TYPES:
            found = self.row(
                "SELECT * FROM mtu_banking_accounts WHERE customer_id = ? AND account_type = ? ORDER BY account_number",
                (customer_id, canon(ref)),
            )
            if found is None:
                raise not_found(f"{canon(ref)} account ({param})", customer_id)
            return found
        return self._account(ref)

    def _post(self, account: dict[str, Any], kind: str, cents: int, description: str) -> int:
        """Move `cents` (signed) on an account and log it; 409 if frozen, 422 if it would go negative."""
        fresh = self._account(account["account_number"])
        if fresh["status"] != "active":
            raise conflict(f"account {fresh['account_number']} is frozen")
        balance = int(fresh["balance_cents"]) + cents
        if balance < 0:
            raise unprocessable(
                f"insufficient funds in {fresh['account_number']}: balance {from_cents(fresh['balance_cents'])},"
                f" needs {from_cents(-cents)}"
            )
        self.execute(
            "UPDATE mtu_banking_accounts SET balance_cents = ? WHERE account_number = ?",
            (balance, fresh["account_number"]),
        )
        self.execute(
            "INSERT INTO mtu_banking_transactions VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                self.next_id("BTX", 7),
                fresh["account_number"],
                self.now_iso(),
                kind,
                cents,
                balance,
                description,
            ),
        )
        return balance

    @staticmethod
    def _amount(value: float) -> int:
        return positive_cents("amount", value)

    @staticmethod
    def _money(cents: int) -> str:
        return f"${cents / 100:,.2f}"

    # ---- generated APIs ------------------------------------------------------------------------
    @write(name="transfer_funds")
    def transfer_funds(
        self,
        account_number: Annotated[str, Param("the customer's account number")],
        source_account: Annotated[str, Param("account to debit: checking, savings or an account number")],
        destination_account: Annotated[
            str, Param("account to credit: checking, savings or an account number")
        ],
        amount: Annotated[float, Param("amount in dollars")],
        transfer_speed: Annotated[str, Param("now, or scheduled (with schedule_time)", enum=SPEEDS)],
        schedule_time: Annotated[str | None, Param("when, YYYY-MM-DDTHH:MM:SS (scheduled transfers)")] = None,
    ) -> dict[str, Any]:
        """Transfer money between accounts, now or at a scheduled time."""
        owner = self._account(account_number)
        source = self._owned(owner["customer_id"], source_account, "source_account")
        target = self._owned(owner["customer_id"], destination_account, "destination_account")
        if source["customer_id"] != owner["customer_id"]:
            raise bad_request(
                f"the source account {source['account_number']} is not {owner['holder_name']}'s"
            )
        if source["account_number"] == target["account_number"]:
            raise bad_request("source and destination are the same account")
        cents = self._amount(amount)
        if transfer_speed == "scheduled":
            if not schedule_time:
                raise bad_request("a scheduled transfer needs schedule_time")
            try:
                when = datetime.fromisoformat(schedule_time)
            except ValueError:
                raise bad_request(
                    f"schedule_time must be YYYY-MM-DDTHH:MM:SS, got {schedule_time!r}"
                ) from None
            when = when if when.tzinfo else when.replace(tzinfo=self.now().tzinfo)
            if when <= self.now():
                raise unprocessable("schedule_time is in the past")
            if source["status"] != "active" or target["status"] != "active":
                raise conflict("a frozen account cannot take part in a transfer")
            if source["balance_cents"] < cents:  # checked when scheduling; the queue runs it later
                raise unprocessable(f"insufficient funds in {source['account_number']}")
            transfer_id = self.next_id("SCH")
            self.execute(
                "INSERT INTO mtu_banking_scheduled VALUES (?, ?, ?, ?, ?, 'scheduled')",
                (transfer_id, source["account_number"], target["account_number"], cents, when.isoformat()),
            )
            return ok(
                transfer_status=f"scheduled for {when.isoformat()}",
                transfer_id=transfer_id,
                amount=from_cents(cents),
            )
        src_balance = self._post(source, "transfer", -cents, f"Transfer to {target['account_number']}")
        dst_balance = self._post(target, "transfer", cents, f"Transfer from {source['account_number']}")
        return ok(
            transfer_status="completed",
            amount=from_cents(cents),
            source_account=source["account_number"],
            destination_account=target["account_number"],
            source_balance=from_cents(src_balance),
            destination_balance=from_cents(dst_balance)
            if target["customer_id"] == owner["customer_id"]
            else None,
        )

    @read(name="get_account_balance")
    def get_account_balance(
        self, account_number: Annotated[str, Param("the account number")]
    ) -> dict[str, Any]:
        """The current balance of an account."""
        a = self._account(account_number)
        return ok(
            balance=self._money(a["balance_cents"]),
            balance_amount=from_cents(a["balance_cents"]),
            account_type=a["account_type"],
            account_status=a["status"],
        )

    @read(name="get_recent_transactions")
    def get_recent_transactions(
        self,
        account_number: Annotated[str, Param("the account number")],
        transaction_type: Annotated[str, Param("only this type, or all", enum=("all", *TXN_TYPES))] = "all",
    ) -> dict[str, Any]:
        """The ten most recent transactions of an account, newest first."""
        self._account(account_number)
        sql, params = (
            "SELECT * FROM mtu_banking_transactions WHERE account_number = ?",
            [account_number.strip()],
        )
        if transaction_type != "all":
            sql += " AND transaction_type = ?"
            params.append(transaction_type)
        rows = self.rows(sql + " ORDER BY posted_at DESC, txn_id DESC LIMIT 10", params)
        return ok(
            transactions=[
                {
                    "date": r["posted_at"][:10],
                    "type": r["transaction_type"],
                    "amount": from_cents(r["amount_cents"]),
                    "description": r["description"],
                    "balance_after": from_cents(r["balance_after_cents"]),
                }
                for r in rows
            ]
        )

    @write(name="freeze_bank_account")
    def freeze_bank_account(
        self,
        account_number: Annotated[str, Param("the account to freeze")],
        freeze_reason: Annotated[str | None, Param("why, e.g. suspected fraud")] = None,
    ) -> dict[str, Any]:
        """Put a hold on an account so that no money moves in or out."""
        a = self._account(account_number)
        if a["status"] == "frozen":
            raise conflict(f"account {a['account_number']} is already frozen")
        self.execute(
            "UPDATE mtu_banking_accounts SET status = 'frozen', freeze_reason = ? WHERE account_number = ?",
            (freeze_reason or "requested by the customer", a["account_number"]),
        )
        return ok(
            freeze_status=f"account {a['account_number']} is frozen", account_number=a["account_number"]
        )

    # ---- SGD banks -----------------------------------------------------------------------------
    @read(name="CheckBalance")
    def check_balance(
        self, account_type: Annotated[str, Param("checking or savings", enum=ACCOUNT_TYPES)]
    ) -> dict[str, Any]:
        """Check the balance of the user's checking or savings account."""
        a = self._owned(USER_ID, account_type, "account_type")
        return ok(account_type=account_type, balance=from_cents(a["balance_cents"]))

    @write(name="TransferMoney")
    def transfer_money(
        self,
        account_type: Annotated[str, Param("the user's account to pay from", enum=ACCOUNT_TYPES)],
        amount: Annotated[float, Param("amount in dollars")],
        recipient_account_name: Annotated[str, Param("the recipient's name")],
        recipient_account_type: Annotated[
            str, Param("the recipient's account", enum=ACCOUNT_TYPES)
        ] = "checking",
    ) -> dict[str, Any]:
        """Transfer money from the user's account to another person's account at the bank."""
        cents = self._amount(amount)
        source = self._owned(USER_ID, account_type, "account_type")
        key = canon(recipient_account_name)
        holders = self.rows(
            "SELECT * FROM mtu_banking_accounts WHERE account_type = ? AND customer_id != ? ORDER BY account_number",
            (recipient_account_type, USER_ID),
        )
        matches = [h for h in holders if canon(h["holder_name"]) == key] or [
            h for h in holders if canon(h["holder_name"]).split(" ")[0] == key
        ]
        if not matches:
            raise not_found(f"{recipient_account_type} account of", recipient_account_name)
        if len(matches) > 1:
            raise conflict(
                f"{len(matches)} customers are called {recipient_account_name}",
                names=[m["holder_name"] for m in matches],
            )
        target = matches[0]
        balance = self._post(source, "transfer", -cents, f"Transfer to {target['holder_name']}")
        self._post(target, "transfer", cents, "Transfer from Alex Morgan")
        return ok(
            account_type=account_type,
            recipient_account_type=recipient_account_type,
            amount=from_cents(cents),
            recipient_account_name=target["holder_name"],
            balance=from_cents(balance),
        )

    # ---- SGD payments ----------------------------------------------------------------------------
    def _friend(self, name: str) -> str:
        found = self.row("SELECT name FROM mtu_banking_friends WHERE lower(name) = ?", (canon(name),))
        if found is None:
            raise not_found("contact in the payment app", name)
        return str(found["name"])

    @write(name="RequestPayment")
    def request_payment(
        self,
        receiver: Annotated[str, Param("who should pay")],
        amount: Annotated[float, Param("amount in dollars")],
        private_visibility: Annotated[Flag, Param("True to hide the request from the feed")] = "False",
    ) -> dict[str, Any]:
        """Request money from a contact."""
        who = self._friend(receiver)
        cents = self._amount(amount)
        private = bool(flag("private_visibility", private_visibility))
        pending = self.row(
            "SELECT payment_id FROM mtu_banking_payments WHERE direction = 'requested' AND receiver = ?"
            " AND amount_cents = ? AND status = 'pending' ORDER BY payment_id",
            (who, cents),
        )
        if pending is not None:
            raise conflict(
                f"{who} already has a pending request for {from_cents(cents)} ({pending['payment_id']})"
            )
        payment_id = self.next_id("PAY")
        self.execute(
            "INSERT INTO mtu_banking_payments VALUES (?, 'requested', ?, ?, NULL, ?, 'pending', ?)",
            (payment_id, who, cents, int(private), self.now_iso()),
        )
        return ok(request_id=payment_id, receiver=who, amount=from_cents(cents), private_visibility=private)

    @write(name="MakePayment")
    def make_payment_sgd(
        self,
        payment_method: Annotated[str, Param("app balance, debit card or credit card", enum=PAYMENT_METHODS)],
        amount: Annotated[float, Param("amount in dollars")],
        receiver: Annotated[str, Param("who to pay")],
        private_visibility: Annotated[Flag, Param("True to hide the payment from the feed")] = "False",
    ) -> dict[str, Any]:
        """Send money to a contact from the app balance, debit card or credit card."""
        who = self._friend(receiver)
        cents = self._amount(amount)
        private = bool(flag("private_visibility", private_visibility))
        wallet = self.get_or_404("mtu_banking_wallet", "wallet_id", "me", what="wallet")
        if payment_method == "app balance":
            if wallet["app_balance_cents"] < cents:
                raise unprocessable(
                    f"the app balance is {from_cents(wallet['app_balance_cents'])}, not enough"
                )
            self.execute(
                "UPDATE mtu_banking_wallet SET app_balance_cents = app_balance_cents - ? WHERE wallet_id = 'me'",
                (cents,),
            )
        elif payment_method == "debit card":
            self._post(
                self._owned(USER_ID, "checking", "payment_method"), "payment", -cents, f"Payment to {who}"
            )
        else:
            if wallet["credit_used_cents"] + cents > CREDIT_LIMIT_CENTS:
                raise unprocessable("the payment would go over the credit card's limit")
            self.execute(
                "UPDATE mtu_banking_wallet SET credit_used_cents = credit_used_cents + ? WHERE wallet_id = 'me'",
                (cents,),
            )
        payment_id = self.next_id("PAY")
        self.execute(
            "INSERT INTO mtu_banking_payments VALUES (?, 'sent', ?, ?, ?, ?, 'completed', ?)",
            (payment_id, who, cents, payment_method, int(private), self.now_iso()),
        )
        return ok(
            payment_id=payment_id,
            payment_method=payment_method,
            amount=from_cents(cents),
            receiver=who,
            private_visibility=private,
        )


finalize_tools(MtuBankingApp)
