"""T-Eval Email: the user's mailbox (inbox and sent mail).

Semantics: `send` validates every recipient address (400) and a non-empty title (400) and stores
the message in the sent folder. An attachment must be an absolute path; when the FileOperation app
shares the world the file must exist on its disk (404). `show` lists the inbox newest first, at
most the 20 newest messages, optionally only the unread ones. Seeded: contacts and ~150 inbox
messages over the last two months, the newest ones unread.
"""

from __future__ import annotations

import random
import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import Volatile, read, set_counter, write
from toolgym.mocks.apps.teval.common import TevalApp
from toolgym.mocks.apps.teval.file_operation import FileOperation
from toolgym.mocks.responses import bad_request, not_found, ok
from toolgym.mocks.seeding import insert_rows
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

OWNER: Final = "me@mailbox.example.com"
SHOW_LIMIT: Final = 20
ADDRESS_RE: Final = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
# name, address, the kinds of message they send (see _message)
CONTACTS: Final = (
    ("Alice Johnson", "alice.johnson@acme-corp.com", "meeting status lunch"),
    ("Bob Martinez", "bob.martinez@acme-corp.com", "meeting invoice status"),
    ("Chen Wei", "chen.wei@acme-corp.com", "meeting status lunch"),
    ("Diana Prince", "diana.prince@northwind.io", "meeting invoice"),
    ("Ethan Brooks", "ethan.brooks@northwind.io", "invoice status"),
    ("Fatima Khan", "fatima.khan@globex.net", "meeting status"),
    ("George Li", "george.li@globex.net", "meeting invoice lunch"),
    ("Hannah Schmidt", "hannah.schmidt@initech.org", "status lunch"),
    ("Ivan Petrov", "ivan.petrov@initech.org", "meeting invoice"),
    ("Julia Rossi", "julia.rossi@umbrella.dev", "meeting status lunch"),
    ("Kenji Sato", "kenji.sato@umbrella.dev", "status invoice"),
    ("Laura Chen", "laura.chen@university.edu", "meeting lunch"),
    ("IT Helpdesk", "helpdesk@acme-corp.com", "password"),
    ("TravelNow", "bookings@travelnow.example.com", "trip"),
    ("City Library", "notices@citylibrary.example.org", "library"),
)
PROJECTS: Final = ("Apollo", "Borealis", "Cascade", "Delta", "Everest", "Falcon")


def _message(rng: random.Random, sender: str, kinds: str, when: datetime) -> tuple[str, str]:
    """A (title, content) pair whose details are drawn from rng and the message's own date."""
    project = rng.choice(PROJECTS)
    meet = when + timedelta(days=rng.randint(1, 6))
    kind = rng.choice(kinds.split())
    if kind == "meeting":
        return (
            f"Meeting about project {project}",
            f"Hi, can we meet on {meet:%A, %B %d} at {rng.randint(9, 16)}:00 to discuss {project}?"
            f" Regards, {sender}",
        )
    if kind == "invoice":
        amount = rng.randint(80, 4000)
        return (
            f"Invoice #{rng.randint(10000, 99999)} for {project}",
            f"Please find the invoice of ${amount}.00 for project {project}, due {meet:%Y-%m-%d}.",
        )
    if kind == "status":
        pct = rng.randint(10, 95)
        return (
            f"{project} status update",
            f"Project {project} is {pct}% complete. Next milestone on {meet:%Y-%m-%d}. - {sender}",
        )
    if kind == "password":
        return (
            "Password expiry notice",
            f"Your account password expires on {meet:%Y-%m-%d}. Please change it before then.",
        )
    if kind == "trip":
        city = rng.choice(("Paris", "Tokyo", "New York", "Berlin", "Sydney", "Toronto"))
        return (
            f"Your trip to {city} is confirmed",
            f"Booking {rng.randint(100000, 999999)}: flight to {city} departing {meet:%Y-%m-%d %H:00}.",
        )
    if kind == "library":
        return (
            "Library book due soon",
            f"The book you borrowed is due on {meet:%Y-%m-%d}. You can renew it online.",
        )
    return (
        f"Lunch on {meet:%A}?",
        f"Want to grab lunch on {meet:%A} near the office? Let me know. {sender}",
    )


class Email(TevalApp):
    name = "teval_email"
    teval_tool: ClassVar[str] = "Email"
    description = "Plugin for email operation"
    schema = """
    CREATE TABLE teval_email_inbox (
        email_id TEXT PRIMARY KEY,
        sender TEXT NOT NULL,
        sender_name TEXT NOT NULL,
        title TEXT NOT NULL,
        content TEXT NOT NULL,
        time TEXT NOT NULL,
        unread INTEGER NOT NULL CHECK (unread IN (0, 1))
    );
    CREATE TABLE teval_email_sent (
        email_id TEXT PRIMARY KEY,
        address TEXT NOT NULL,
        title TEXT NOT NULL,
        body TEXT NOT NULL,
        attachment TEXT,
        time TEXT NOT NULL
    );
    """
    # a message's id and time are bookkeeping: sending the same mail later is the same outcome
    volatile: ClassVar[Volatile] = {"teval_email_sent": ["email_id", "time"]}

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        inbox: list[dict[str, Any]] = []
        stamps = sorted(
            (clock - timedelta(minutes=rng.randint(30, 60 * 24 * 60)) for _ in range(150)), reverse=True
        )
        for i, when in enumerate(stamps):
            name, address, kinds = rng.choice(CONTACTS)
            title, content = _message(rng, name, kinds, when)
            inbox.append(
                {
                    "email_id": f"IN-{len(stamps) - i:05d}",
                    "sender": address,
                    "sender_name": name,
                    "title": title,
                    "content": content,
                    "time": when.strftime("%Y-%m-%d %H:%M"),
                    # the newest mail is mostly unread, older mail mostly read
                    "unread": int(rng.random() < (0.7 if i < 15 else 0.03)),
                }
            )
        insert_rows(db, "teval_email_inbox", inbox)
        sent = []
        for i in range(40):
            when = clock - timedelta(minutes=rng.randint(60, 60 * 24 * 60))
            name, address, kinds = rng.choice(CONTACTS[:12])  # replies go to people
            title, body = _message(rng, "me", kinds, when)
            sent.append(
                {
                    "email_id": f"MAIL-{i + 1:06d}",
                    "address": address,
                    "title": "Re: " + title,
                    "body": body,
                    "attachment": None,
                    "time": when.strftime("%Y-%m-%d %H:%M"),
                }
            )
        insert_rows(db, "teval_email_sent", sent)
        set_counter(db, "MAIL", len(sent))

    def _has_disk(self) -> bool:
        return (
            self.row("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'teval_file_files'")
            is not None
        )

    @write
    def send(
        self,
        address: Annotated[str, Param("the email address to send (several: separated by commas)")],
        title: Annotated[str, Param("title of email, not NULL")],
        body: Annotated[str, Param("the content of the email")] = "",
        attachment: Annotated[str | None, Param("path of the attachment file")] = None,
    ) -> dict[str, Any]:
        """send email"""
        recipients = [a.strip() for a in address.split(",") if a.strip()]
        if not recipients:
            raise bad_request("address must name at least one recipient")
        bad = [a for a in recipients if not ADDRESS_RE.fullmatch(a)]
        if bad:
            raise bad_request(f"invalid email address: {', '.join(bad)}")
        if not title.strip():
            raise bad_request("title must not be empty")
        if attachment is not None:
            attachment = attachment.strip()
            if not attachment.startswith(("/", "~")):
                raise bad_request(f"attachment must be an absolute path, got {attachment!r}")
            if self._has_disk():
                path = FileOperation.resolve(attachment)
                if self.row("SELECT path FROM teval_file_files WHERE path = ?", (path,)) is None:
                    raise not_found("attachment file", path)
                attachment = path
        self.execute(
            "INSERT INTO teval_email_sent(email_id, address, title, body, attachment, time)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (
                self.next_id("MAIL"),
                ", ".join(recipients),
                title,
                body,
                attachment,
                self.now().strftime("%Y-%m-%d %H:%M"),
            ),
        )
        return ok(state=f"email sent to {', '.join(recipients)}")

    @read
    def show(
        self,
        only_unread: Annotated[bool, Param("whether to show only unread emails in the inbox")],
    ) -> dict[str, Any]:
        """show the emails in the inbox (the 20 newest, newest first)"""
        sql = "SELECT sender, title, content, time FROM teval_email_inbox"
        if only_unread:
            sql += " WHERE unread = 1"
        emails = self.rows(sql + " ORDER BY time DESC, email_id DESC LIMIT ?", (SHOW_LIMIT,))
        return ok(emails=emails)
