"""MTU library: get_book_status, renew_books, reserve_book, get_late_fees, apply_for_membership
and make_payment (generated APIs).

Books have copies in formats; members borrow copies for 21 days. Overdue loans accrue late fees
(25 cents a day, at most $10 a book) that were charged up to today; renewing adds 14 days and a
50-cent fee, at most twice, and not when someone else is waiting for the book (409). A copy can
be reserved only when none is on the shelf (409). Payments settle the oldest fees first; paying
more than is owed is a 422.
"""

from __future__ import annotations

import random
import re
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Volatile, format_id, read, set_counter, write
from toolgym.mocks.apps.mtu._common import CITIES, FIRST_NAMES, LAST_NAMES, canon, choice, finalize_tools
from toolgym.mocks.responses import (
    bad_request,
    conflict,
    from_cents,
    not_found,
    ok,
    positive_cents,
    unprocessable,
)
from toolgym.mocks.seeding import insert_rows, person_name
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

BOOKS: Final = (
    ("War and Peace", "Leo Tolstoy", 1869),
    ("Anna Karenina", "Leo Tolstoy", 1878),
    ("Life of Pi", "Yann Martel", 2001),
    ("Twenty Thousand Leagues Under the Sea", "Jules Verne", 1870),
    ("Around the World in Eighty Days", "Jules Verne", 1872),
    ("To Kill a Mockingbird", "Harper Lee", 1960),
    ("A Song of Ice and Fire", "George R. R. Martin", 1996),
    ("Pride and Prejudice", "Jane Austen", 1813),
    ("Emma", "Jane Austen", 1815),
    ("Moby Dick", "Herman Melville", 1851),
    ("Great Expectations", "Charles Dickens", 1861),
    ("Oliver Twist", "Charles Dickens", 1838),
    ("Jane Eyre", "Charlotte Bronte", 1847),
    ("Wuthering Heights", "Emily Bronte", 1847),
    ("The Odyssey", "Homer", -700),
    ("Don Quixote", "Miguel de Cervantes", 1605),
    ("Crime and Punishment", "Fyodor Dostoevsky", 1866),
    ("The Brothers Karamazov", "Fyodor Dostoevsky", 1880),
    ("Frankenstein", "Mary Shelley", 1818),
    ("Dracula", "Bram Stoker", 1897),
    ("The Time Machine", "H. G. Wells", 1895),
    ("The War of the Worlds", "H. G. Wells", 1898),
    ("Treasure Island", "Robert Louis Stevenson", 1883),
    ("Little Women", "Louisa May Alcott", 1868),
    ("The Picture of Dorian Gray", "Oscar Wilde", 1890),
    ("Alice's Adventures in Wonderland", "Lewis Carroll", 1865),
    ("The Adventures of Tom Sawyer", "Mark Twain", 1876),
    ("Adventures of Huckleberry Finn", "Mark Twain", 1884),
    ("The Count of Monte Cristo", "Alexandre Dumas", 1844),
    ("The Three Musketeers", "Alexandre Dumas", 1844),
    ("Les Miserables", "Victor Hugo", 1862),
    ("Madame Bovary", "Gustave Flaubert", 1857),
    ("The Great Gatsby", "F. Scott Fitzgerald", 1925),
    ("Ulysses", "James Joyce", 1922),
    ("Middlemarch", "George Eliot", 1871),
    ("Sense and Sensibility", "Jane Austen", 1811),
    ("The Hound of the Baskervilles", "Arthur Conan Doyle", 1902),
    ("Heart of Darkness", "Joseph Conrad", 1899),
    ("The Jungle Book", "Rudyard Kipling", 1894),
    ("Gulliver's Travels", "Jonathan Swift", 1726),
)
FORMATS: Final = ("hardcover", "paperback", "ebook", "audiobook")
FORMAT_WORDS: Final = {
    "hard cover": "hardcover",
    "paper back": "paperback",
    "e-book": "ebook",
    "audio book": "audiobook",
}
PAYMENT_METHODS: Final = ("credit card", "debit card", "paypal", "cash")
LIBRARY_TOWN: Final = "New York"  # residents join free; others pay a monthly fee
MONTHLY_FEE_CENTS: Final = 500
LOAN_DAYS: Final = 21
RENEWAL_DAYS: Final = 14
RENEWAL_FEE_CENTS: Final = 50
MAX_RENEWALS: Final = 2
LATE_FEE_PER_DAY_CENTS: Final = 25
LATE_FEE_CAP_CENTS: Final = 1000
KNOWN_MEMBERS: Final = (123456, 1245521)  # library numbers quoted in MTU's dialogues


class LibraryApp(App):
    name = "mtu_library"
    description = (
        "A public library: book availability, loans and renewals, holds, fees, membership (MTU-Bench)."
    )
    version = "1"
    schema = """
    CREATE TABLE mtu_library_members (
        library_number INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        city_of_residence TEXT NOT NULL,
        membership_fee_cents INTEGER NOT NULL,
        joined_at TEXT NOT NULL
    );
    CREATE TABLE mtu_library_books (
        book_id TEXT PRIMARY KEY,
        title TEXT NOT NULL UNIQUE,
        author TEXT NOT NULL,
        year INTEGER NOT NULL
    );
    CREATE TABLE mtu_library_copies (
        copy_id TEXT PRIMARY KEY,
        book_id TEXT NOT NULL REFERENCES mtu_library_books(book_id),
        format TEXT NOT NULL
    );
    CREATE TABLE mtu_library_loans (
        loan_id TEXT PRIMARY KEY,
        copy_id TEXT NOT NULL REFERENCES mtu_library_copies(copy_id),
        library_number INTEGER NOT NULL REFERENCES mtu_library_members(library_number),
        checked_out TEXT NOT NULL,
        due_date TEXT NOT NULL,
        renewals INTEGER NOT NULL DEFAULT 0,
        returned_at TEXT
    );
    CREATE INDEX mtu_library_loans_member ON mtu_library_loans(library_number);
    CREATE TABLE mtu_library_reservations (
        reservation_id TEXT PRIMARY KEY,
        book_id TEXT NOT NULL REFERENCES mtu_library_books(book_id),
        card_number INTEGER NOT NULL REFERENCES mtu_library_members(library_number),
        format TEXT,
        status TEXT NOT NULL CHECK (status IN ('waiting', 'fulfilled', 'cancelled')),
        created_at TEXT NOT NULL
    );
    CREATE TABLE mtu_library_fees (
        fee_id TEXT PRIMARY KEY,
        library_number INTEGER NOT NULL REFERENCES mtu_library_members(library_number),
        kind TEXT NOT NULL CHECK (kind IN ('late', 'renewal', 'membership')),
        description TEXT NOT NULL,
        amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
        paid_cents INTEGER NOT NULL DEFAULT 0 CHECK (paid_cents BETWEEN 0 AND amount_cents),
        created_at TEXT NOT NULL
    );
    CREATE INDEX mtu_library_fees_member ON mtu_library_fees(library_number);
    CREATE TABLE mtu_library_payments (
        payment_id TEXT PRIMARY KEY,
        library_number INTEGER NOT NULL,
        amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
        payment_method TEXT NOT NULL,
        paid_at TEXT NOT NULL
    );
    """
    volatile: ClassVar[Volatile] = {
        "mtu_library_reservations": ["created_at"],
        "mtu_library_payments": ["paid_at"],
    }

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        today = clock.date()
        numbers = list(KNOWN_MEMBERS)
        while len(numbers) < 220:
            n = rng.randint(100000, 999999)
            if n not in numbers:
                numbers.append(n)
        members = [
            {
                "library_number": n,
                "name": person_name(rng, FIRST_NAMES, LAST_NAMES),
                "city_of_residence": LIBRARY_TOWN if rng.random() < 0.7 else rng.choice(CITIES).name,
                "membership_fee_cents": 0,
                "joined_at": (clock - timedelta(days=rng.randint(30, 3000))).isoformat(),
            }
            for n in numbers
        ]
        for m in members:
            m["membership_fee_cents"] = 0 if m["city_of_residence"] == LIBRARY_TOWN else MONTHLY_FEE_CENTS
        insert_rows(db, "mtu_library_members", members)
        insert_rows(
            db,
            "mtu_library_books",
            [
                {"book_id": format_id("BK", i, 4), "title": t, "author": a, "year": y}
                for i, (t, a, y) in enumerate(BOOKS, 1)
            ],
        )
        copies: list[dict[str, Any]] = []
        for i in range(1, len(BOOKS) + 1):
            for fmt in rng.sample(FORMATS, rng.randint(1, 3)):
                for _ in range(rng.randint(1, 3)):
                    copies.append(
                        {
                            "copy_id": format_id("CP", len(copies) + 1, 5),
                            "book_id": format_id("BK", i, 4),
                            "format": fmt,
                        }
                    )
        insert_rows(db, "mtu_library_copies", copies)
        loans: list[dict[str, Any]] = []
        fees: list[dict[str, Any]] = []
        # known members always have loans (one overdue) so that their questions have answers
        borrowers = [*KNOWN_MEMBERS, *rng.sample(numbers[2:], 40)]
        free = list(copies)
        rng.shuffle(free)
        for k, n in enumerate(borrowers):
            for j in range(rng.randint(1, 3) if k >= 2 else 2):
                if not free:
                    break
                copy = free.pop()
                overdue = (k < 2 and j == 0) or rng.random() < 0.3
                due = (
                    today - timedelta(days=rng.randint(1, 30))
                    if overdue
                    else today + timedelta(days=rng.randint(1, 20))
                )
                loan_id = format_id("LN", len(loans) + 1, 5)
                loans.append(
                    {
                        "loan_id": loan_id,
                        "copy_id": copy["copy_id"],
                        "library_number": n,
                        "checked_out": (due - timedelta(days=LOAN_DAYS)).isoformat(),
                        "due_date": due.isoformat(),
                        "renewals": 0,
                        "returned_at": None,
                    }
                )
                if overdue:
                    fees.append(self._late_fee(len(fees) + 1, n, loan_id, due, today, copy["book_id"], clock))
        insert_rows(db, "mtu_library_loans", loans)
        insert_rows(db, "mtu_library_fees", fees)
        # a waiting list on some books that are all out
        on_loan = {c["copy_id"] for c in copies} - {c["copy_id"] for c in free}
        out_books = sorted({c["book_id"] for c in copies if c["copy_id"] in on_loan})
        reservations = [
            {
                "reservation_id": format_id("RSV", i, 5),
                "book_id": b,
                "card_number": rng.choice(numbers[2:]),
                "format": None,
                "status": "waiting",
                "created_at": (clock - timedelta(days=rng.randint(1, 20))).isoformat(),
            }
            for i, b in enumerate(rng.sample(out_books, min(8, len(out_books))), 1)
        ]
        insert_rows(db, "mtu_library_reservations", reservations)
        set_counter(db, "LN", len(loans))
        set_counter(db, "FEE", len(fees))
        set_counter(db, "RSV", len(reservations))
        set_counter(db, "LPAY", 0)
        set_counter(db, "MEMBER", 999999)

    @staticmethod
    def _late_fee(
        n: int, member: int, loan_id: str, due: date, today: date, book_id: str, clock: datetime
    ) -> dict[str, Any]:
        days = (today - due).days
        return {
            "fee_id": format_id("FEE", n),
            "library_number": member,
            "kind": "late",
            "description": f"{days} days late: {book_id} ({loan_id})",
            "amount_cents": min(days * LATE_FEE_PER_DAY_CENTS, LATE_FEE_CAP_CENTS),
            "paid_cents": 0,
            "created_at": clock.isoformat(),
        }

    # ---- helpers -------------------------------------------------------------------------------
    def _member(self, number: int | str) -> dict[str, Any]:
        text = str(number).strip()
        if not text.isdigit():
            raise bad_request(f"a library number is digits, got {number!r}")
        return self.get_or_404("mtu_library_members", "library_number", int(text), what="library account")

    def _book(self, title: str) -> dict[str, Any]:
        found = self.row("SELECT * FROM mtu_library_books WHERE lower(title) = ?", (canon(title),))
        if found is None:
            raise not_found("book", title)
        return found

    def _copies(self, book_id: str) -> list[dict[str, Any]]:
        return self.rows(
            "SELECT c.copy_id, c.format, l.loan_id, l.due_date, l.library_number FROM mtu_library_copies c"
            " LEFT JOIN mtu_library_loans l ON l.copy_id = c.copy_id AND l.returned_at IS NULL"
            " WHERE c.book_id = ? ORDER BY c.copy_id",
            (book_id,),
        )

    def _owed(self, number: int) -> int:
        return int(
            self.scalar(
                "SELECT coalesce(sum(amount_cents - paid_cents), 0) FROM mtu_library_fees WHERE library_number = ?",
                (number,),
            )
        )

    def _fee(self, number: int, kind: str, cents: int, description: str) -> None:
        self.execute(
            "INSERT INTO mtu_library_fees VALUES (?, ?, ?, ?, ?, 0, ?)",
            (self.next_id("FEE"), number, kind, description, cents, self.now_iso()),
        )

    # ---- APIs --------------------------------------------------------------------------------------
    @read(name="get_book_status")
    def get_book_status(self, book_title: Annotated[str, Param("the book's title")]) -> dict[str, Any]:
        """Whether a book is in stock, checked out or reserved, per format."""
        book = self._book(book_title)
        copies = self._copies(book["book_id"])
        available = [c for c in copies if c["loan_id"] is None]
        waiting = int(
            self.scalar(
                "SELECT count(*) FROM mtu_library_reservations WHERE book_id = ? AND status = 'waiting'",
                (book["book_id"],),
            )
        )
        status = "in stock" if available else "reserved" if waiting else "checked out"
        due = sorted(c["due_date"] for c in copies if c["loan_id"] is not None)
        return ok(
            book_status=status,
            title=book["title"],
            author=book["author"],
            available_formats=sorted({c["format"] for c in available}),
            copies_total=len(copies),
            copies_available=len(available),
            reservations_waiting=waiting,
            next_due_date=due[0] if due and not available else None,
        )

    @write(name="renew_books")
    def renew_books(
        self,
        library_number: Annotated[int, Param("the library account number")],
        book_names: Annotated[str, Param("titles to renew, separated by commas or 'and'")],
    ) -> dict[str, Any]:
        """Extend the loans of books the member has checked out."""
        member = self._member(library_number)
        titles = [t.strip() for t in re.split(r",|\band\b|;", book_names) if t.strip()]
        if not titles:
            raise bad_request("book_names names no book")
        renewed = []
        for title in titles:
            book = self._book(title)
            loan = self.row(
                "SELECT l.* FROM mtu_library_loans l JOIN mtu_library_copies c USING (copy_id)"
                " WHERE c.book_id = ? AND l.library_number = ? AND l.returned_at IS NULL ORDER BY l.loan_id",
                (book["book_id"], member["library_number"]),
            )
            if loan is None:
                raise not_found(f"loan of {book['title']} on account", member["library_number"])
            if loan["renewals"] >= MAX_RENEWALS:
                raise conflict(f"{book['title']} has been renewed {MAX_RENEWALS} times already")
            others = self.scalar(
                "SELECT count(*) FROM mtu_library_reservations WHERE book_id = ? AND status = 'waiting' AND card_number != ?",
                (book["book_id"], member["library_number"]),
            )
            if int(others):
                raise conflict(f"someone is waiting for {book['title']}; it cannot be renewed")
            start = max(date.fromisoformat(loan["due_date"]), self.now().date())
            due = start + timedelta(days=RENEWAL_DAYS)
            self.execute(
                "UPDATE mtu_library_loans SET due_date = ?, renewals = renewals + 1 WHERE loan_id = ?",
                (due.isoformat(), loan["loan_id"]),
            )
            self._fee(member["library_number"], "renewal", RENEWAL_FEE_CENTS, f"renewal of {book['title']}")
            renewed.append({"title": book["title"], "new_due_date": due.isoformat()})
        return ok(
            renewal_period=RENEWAL_DAYS,
            renewed=renewed,
            total_amount_due=from_cents(self._owed(member["library_number"])),
        )

    @write(name="reserve_book")
    def reserve_book(
        self,
        book_title: Annotated[str, Param("the book's title")],
        card_number: Annotated[int, Param("the member's library card number")],
        book_format: Annotated[str | None, Param("hardcover, paperback, ebook or audiobook")] = None,
    ) -> dict[str, Any]:
        """Put a hold on a book that is out, to be told when it comes back."""
        member = self._member(card_number)
        book = self._book(book_title)
        fmt = choice("book_format", book_format, FORMATS, FORMAT_WORDS) if book_format else None
        copies = [c for c in self._copies(book["book_id"]) if fmt is None or c["format"] == fmt]
        if not copies:
            raise not_found(f"{fmt} copy of", book["title"])
        if any(c["loan_id"] is None for c in copies):
            raise conflict(
                f"{book['title']} is on the shelf{f' as {fmt}' if fmt else ''}; no reservation needed"
            )
        dup = self.row(
            "SELECT reservation_id FROM mtu_library_reservations WHERE book_id = ? AND card_number = ? AND status = 'waiting'",
            (book["book_id"], member["library_number"]),
        )
        if dup is not None:
            raise conflict(f"already on the waiting list ({dup['reservation_id']})")
        place = 1 + int(
            self.scalar(
                "SELECT count(*) FROM mtu_library_reservations WHERE book_id = ? AND status = 'waiting'",
                (book["book_id"],),
            )
        )
        reservation_id = self.next_id("RSV", 5)
        self.execute(
            "INSERT INTO mtu_library_reservations VALUES (?, ?, ?, ?, 'waiting', ?)",
            (reservation_id, book["book_id"], member["library_number"], fmt, self.now_iso()),
        )
        return ok(
            reservation_status=f"reserved; number {place} on the waiting list",
            reservation_id=reservation_id,
            expected_by=min(c["due_date"] for c in copies),
        )

    @read(name="get_late_fees")
    def get_late_fees(
        self, library_ID: Annotated[int, Param("the library account number")]
    ) -> dict[str, Any]:
        """The late fees a member owes, with the books they are for."""
        member = self._member(library_ID)
        rows = self.rows(
            "SELECT * FROM mtu_library_fees WHERE library_number = ? AND kind = 'late' AND paid_cents < amount_cents"
            " ORDER BY created_at, fee_id",
            (member["library_number"],),
        )
        return ok(
            late_fees=from_cents(sum(r["amount_cents"] - r["paid_cents"] for r in rows)),
            breakdown=[
                {"description": r["description"], "owed": from_cents(r["amount_cents"] - r["paid_cents"])}
                for r in rows
            ],
            total_owed=from_cents(self._owed(member["library_number"])),
        )

    @write(name="apply_for_membership")
    def apply_for_membership(
        self, city_of_residence: Annotated[str, Param("the city the applicant lives in")]
    ) -> dict[str, Any]:
        """Apply for a library membership: free for residents of the town, a monthly fee otherwise."""
        city = city_of_residence.strip()
        if not city:
            raise bad_request("city_of_residence is empty")
        resident = canon(city) in (canon(LIBRARY_TOWN), "nyc", "new york city")
        fee = 0 if resident else MONTHLY_FEE_CENTS
        number = self.store.next_counter("MEMBER")  # library numbers are plain integers
        self.execute(
            "INSERT INTO mtu_library_members VALUES (?, ?, ?, ?, ?)",
            (number, "new member", city, fee, self.now_iso()),
        )
        if fee:
            self._fee(number, "membership", fee, "first month of membership")
        return ok(
            membership_status="approved",
            library_number=number,
            membership_fee=from_cents(fee),
            application_link=f"https://library.example.org/membership/{number}",
        )

    @write(name="make_payment")
    def make_payment(
        self,
        account_number: Annotated[str, Param("the library account number")],
        payment_amount: Annotated[float, Param("amount in dollars")],
        payment_method: Annotated[str, Param("credit card, debit card, paypal or cash")],
    ) -> dict[str, Any]:
        """Pay library fees (late, renewal or membership fees), oldest first."""
        member = self._member(account_number)
        method = choice(
            "payment_method",
            payment_method,
            PAYMENT_METHODS,
            {"credit": "credit card", "debit": "debit card"},
        )
        cents = positive_cents("payment_amount", payment_amount)
        owed = self._owed(member["library_number"])
        if cents > owed:
            raise unprocessable(f"the account owes {from_cents(owed)}; {from_cents(cents)} is too much")
        left = cents
        for fee in self.rows(
            "SELECT * FROM mtu_library_fees WHERE library_number = ? AND paid_cents < amount_cents ORDER BY created_at, fee_id",
            (member["library_number"],),
        ):
            part = min(left, fee["amount_cents"] - fee["paid_cents"])
            self.execute(
                "UPDATE mtu_library_fees SET paid_cents = paid_cents + ? WHERE fee_id = ?",
                (part, fee["fee_id"]),
            )
            left -= part
            if not left:
                break
        payment_id = self.next_id("LPAY")
        self.execute(
            "INSERT INTO mtu_library_payments VALUES (?, ?, ?, ?, ?)",
            (payment_id, member["library_number"], cents, method, self.now_iso()),
        )
        return ok(
            payment_status="successful",
            payment_id=payment_id,
            amount_paid=from_cents(cents),
            remaining_balance=from_cents(owed - cents),
        )


finalize_tools(LibraryApp)
