"""MTU contacts: add_new_contact, search_contact, delete_contact, delete_contact_number,
delete_contact_email, update_contact_information (generated APIs) and ShareLocation (SGD).

The user's address book: a contact has a unique name, any number of phone numbers and emails
(ordered: the first is the primary) and an address. A name finds a contact by full name, or by a
first name only one contact has (several are a 409). Sharing a location records who got which
place.
"""

from __future__ import annotations

import random
import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import App, Volatile, format_id, read, set_counter, write
from toolgym.mocks.apps.mtu._common import (
    FIRST_NAMES,
    LAST_NAMES,
    canon,
    finalize_tools,
    phone,
    street_address,
)
from toolgym.mocks.responses import bad_request, conflict, not_found, ok
from toolgym.mocks.seeding import insert_rows, name_grid
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

FAMILY: Final = ("Mom", "Dad", "Grandma", "Boss")
DOMAINS: Final = ("gmail.com", "outlook.com", "yahoo.com", "work.example.com")
NEW_INFO_KEYS: Final = {
    "contact_name": "contact_name",
    "name": "contact_name",
    "new_name": "contact_name",
    "phone_number": "phone_number",
    "phone": "phone_number",
    "new_phone_number": "phone_number",
    "email": "email",
    "new_email": "email",
    "email_address": "email",
    "address": "address",
    "new_address": "address",
}


def _digits(number: str) -> str:
    return re.sub(r"\D", "", number)


def check_phone(param: str, number: str) -> str:
    if not 7 <= len(_digits(number)) <= 15:
        raise bad_request(f"{param!r} is not a phone number: {number!r}", param=param)
    return number.strip()


def check_email(param: str, email: str) -> str:
    if not re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", email.strip()):
        raise bad_request(f"{param!r} is not an email address: {email!r}", param=param)
    return email.strip().lower()


class ContactsApp(App):
    name = "mtu_contacts"
    description = "The user's contacts: add, search, update, delete, and share a location (MTU-Bench)."
    version = "1"
    schema = """
    CREATE TABLE mtu_contacts_contacts (
        contact_id TEXT PRIMARY KEY,
        contact_name TEXT NOT NULL UNIQUE COLLATE NOCASE,
        address TEXT,
        created_at TEXT NOT NULL
    );
    CREATE TABLE mtu_contacts_phones (
        phone_id TEXT PRIMARY KEY,
        contact_id TEXT NOT NULL REFERENCES mtu_contacts_contacts(contact_id),
        phone_number TEXT NOT NULL,
        position INTEGER NOT NULL
    );
    CREATE INDEX mtu_contacts_phones_contact ON mtu_contacts_phones(contact_id, position);
    CREATE TABLE mtu_contacts_emails (
        email_id TEXT PRIMARY KEY,
        contact_id TEXT NOT NULL REFERENCES mtu_contacts_contacts(contact_id),
        email TEXT NOT NULL,
        position INTEGER NOT NULL
    );
    CREATE INDEX mtu_contacts_emails_contact ON mtu_contacts_emails(contact_id, position);
    CREATE TABLE mtu_contacts_shares (
        share_id TEXT PRIMARY KEY,
        contact_id TEXT NOT NULL REFERENCES mtu_contacts_contacts(contact_id),
        location TEXT NOT NULL,
        shared_at TEXT NOT NULL
    );
    """
    volatile: ClassVar[Volatile] = {
        "mtu_contacts_contacts": ["created_at"],
        "mtu_contacts_shares": ["shared_at"],
    }

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        names = list(FAMILY)
        pairs = name_grid(FIRST_NAMES, LAST_NAMES)
        names += rng.sample(pairs, 140)
        contacts: list[dict[str, Any]] = []
        phones: list[dict[str, Any]] = []
        emails: list[dict[str, Any]] = []
        for i, name in enumerate(names, 1):
            contact_id = format_id("CON", i, 4)
            contacts.append(
                {
                    "contact_id": contact_id,
                    "contact_name": name,
                    "address": street_address(rng) if rng.random() < 0.5 else None,
                    "created_at": (clock - timedelta(days=rng.randint(1, 900))).isoformat(),
                }
            )
            for pos in range(1, rng.choice((1, 1, 1, 2, 2, 3)) + 1):
                phones.append(
                    {
                        "phone_id": format_id("PH", len(phones) + 1),
                        "contact_id": contact_id,
                        "phone_number": phone(rng),
                        "position": pos,
                    }
                )
            handle = re.sub(r"[^a-z]", ".", name.lower())
            for pos in range(1, rng.choice((0, 1, 1, 2)) + 1):
                emails.append(
                    {
                        "email_id": format_id("EM", len(emails) + 1),
                        "contact_id": contact_id,
                        "email": f"{handle}{'' if pos == 1 else pos}@{rng.choice(DOMAINS)}",
                        "position": pos,
                    }
                )
        insert_rows(db, "mtu_contacts_contacts", contacts)
        insert_rows(db, "mtu_contacts_phones", phones)
        insert_rows(db, "mtu_contacts_emails", emails)
        set_counter(db, "CON", len(contacts))
        set_counter(db, "PH", len(phones))
        set_counter(db, "EM", len(emails))
        set_counter(db, "SHARE", 0)

    # ---- helpers -------------------------------------------------------------------------------
    def _contact(self, name: str) -> dict[str, Any]:
        exact = self.row(
            "SELECT * FROM mtu_contacts_contacts WHERE contact_name = ? COLLATE NOCASE", (name.strip(),)
        )
        if exact is not None:
            return exact
        first = canon(name)
        rows = [
            r
            for r in self.rows("SELECT * FROM mtu_contacts_contacts ORDER BY contact_id")
            if canon(r["contact_name"]).split(" ")[0] == first
        ]
        if not rows:
            raise not_found("contact", name)
        if len(rows) > 1:
            raise conflict(
                f"{len(rows)} contacts are called {name}; give the full name",
                contacts=[r["contact_name"] for r in rows],
            )
        return rows[0]

    def _view(self, c: dict[str, Any]) -> dict[str, Any]:
        numbers = [
            r["phone_number"]
            for r in self.rows(
                "SELECT phone_number FROM mtu_contacts_phones WHERE contact_id = ? ORDER BY position, phone_id",
                (c["contact_id"],),
            )
        ]
        emails = [
            r["email"]
            for r in self.rows(
                "SELECT email FROM mtu_contacts_emails WHERE contact_id = ? ORDER BY position, email_id",
                (c["contact_id"],),
            )
        ]
        return {
            "contact_name": c["contact_name"],
            "phone_number": numbers[0] if numbers else None,
            "phone_numbers": numbers,
            "email": emails[0] if emails else None,
            "emails": emails,
            "address": c["address"],
        }

    def _renumber(self, table: str, contact_id: str) -> None:
        key = "phone_id" if table == "mtu_contacts_phones" else "email_id"
        rows = self.rows(
            f"SELECT {key} FROM {table} WHERE contact_id = ? ORDER BY position, {key}", (contact_id,)
        )
        for pos, r in enumerate(rows, 1):
            self.execute(f"UPDATE {table} SET position = ? WHERE {key} = ?", (pos, r[key]))

    def _add_phone(self, contact_id: str, number: str) -> None:
        pos = int(
            self.scalar(
                "SELECT coalesce(max(position), 0) FROM mtu_contacts_phones WHERE contact_id = ?",
                (contact_id,),
            )
        )
        self.execute(
            "INSERT INTO mtu_contacts_phones VALUES (?, ?, ?, ?)",
            (self.next_id("PH"), contact_id, number, pos + 1),
        )

    def _add_email(self, contact_id: str, email: str) -> None:
        pos = int(
            self.scalar(
                "SELECT coalesce(max(position), 0) FROM mtu_contacts_emails WHERE contact_id = ?",
                (contact_id,),
            )
        )
        self.execute(
            "INSERT INTO mtu_contacts_emails VALUES (?, ?, ?, ?)",
            (self.next_id("EM"), contact_id, email, pos + 1),
        )

    # ---- APIs --------------------------------------------------------------------------------------
    @write(name="add_new_contact")
    def add_new_contact(
        self,
        contact_name: Annotated[str, Param("the new contact's full name")],
        phone_number: Annotated[str, Param("their phone number")],
        email: Annotated[str | None, Param("their email address")] = None,
        address: Annotated[str | None, Param("their address")] = None,
    ) -> dict[str, Any]:
        """Create a new contact."""
        name = contact_name.strip()
        if not name:
            raise bad_request("contact_name is empty")
        if self.row("SELECT 1 FROM mtu_contacts_contacts WHERE contact_name = ? COLLATE NOCASE", (name,)):
            raise conflict(f"a contact called {name} exists already")
        number = check_phone("phone_number", phone_number)
        contact_id = self.next_id("CON", 4)
        self.execute(
            "INSERT INTO mtu_contacts_contacts VALUES (?, ?, ?, ?)",
            (contact_id, name, address, self.now_iso()),
        )
        self._add_phone(contact_id, number)
        if email:
            self._add_email(contact_id, check_email("email", email))
        contact = self.get_or_404("mtu_contacts_contacts", "contact_id", contact_id)
        return ok(creation_status=f"created contact {name}", contact_id=contact_id, **self._view(contact))

    @read(name="search_contact")
    def search_contact(
        self,
        contact_name: Annotated[str | None, Param("full or partial name")] = None,
        phone_number: Annotated[str | None, Param("a phone number")] = None,
        email: Annotated[str | None, Param("an email address")] = None,
    ) -> dict[str, Any]:
        """Search the contact list by name, phone number or email."""
        if not (contact_name or phone_number or email):
            raise bad_request("search_contact needs contact_name, phone_number or email")
        rows = self.rows("SELECT * FROM mtu_contacts_contacts ORDER BY contact_name, contact_id")
        views = [self._view(r) for r in rows]
        if contact_name:
            words = canon(contact_name).split(" ")
            views = [v for v in views if all(w in canon(v["contact_name"]).split(" ") for w in words)]
        if phone_number:
            digits = _digits(phone_number)
            views = [v for v in views if any(_digits(n).endswith(digits) for n in v["phone_numbers"])]
        if email:
            views = [v for v in views if canon(email) in [e.lower() for e in v["emails"]]]
        first = {k: views[0][k] for k in ("contact_name", "phone_number", "email")} if views else {}
        return ok(count=len(views), contacts=views, **first)

    @write(name="delete_contact")
    def delete_contact(
        self, contact_name: Annotated[str, Param("full name of the contact")]
    ) -> dict[str, Any]:
        """Delete a contact permanently."""
        c = self._contact(contact_name)
        for table in ("mtu_contacts_phones", "mtu_contacts_emails"):
            self.execute(f"DELETE FROM {table} WHERE contact_id = ?", (c["contact_id"],))
        self.execute("DELETE FROM mtu_contacts_contacts WHERE contact_id = ?", (c["contact_id"],))
        return ok(deletion_status=f"deleted contact {c['contact_name']}")

    @write(name="delete_contact_number")
    def delete_contact_number(
        self,
        contact_name: Annotated[str | None, Param("full name of the contact")] = None,
        contact_number: Annotated[str | None, Param("the number to delete")] = None,
        number_order: Annotated[int, Param("which number (1 = first) when no number is given")] = 1,
    ) -> dict[str, Any]:
        """Delete one phone number of a contact (by the number, or by its position)."""
        if contact_name:
            c = self._contact(contact_name)
        elif contact_number:
            match = [
                r
                for r in self.rows(
                    "SELECT contact_id, phone_number FROM mtu_contacts_phones ORDER BY phone_id"
                )
                if _digits(r["phone_number"]) == _digits(contact_number)
            ]
            if not match:
                raise not_found("phone number", contact_number)
            c = self.get_or_404("mtu_contacts_contacts", "contact_id", match[0]["contact_id"])
        else:
            raise bad_request("delete_contact_number needs contact_name or contact_number")
        rows = self.rows(
            "SELECT * FROM mtu_contacts_phones WHERE contact_id = ? ORDER BY position, phone_id",
            (c["contact_id"],),
        )
        if contact_number:
            target = next((r for r in rows if _digits(r["phone_number"]) == _digits(contact_number)), None)
            if target is None:
                raise not_found(f"number of {c['contact_name']}", contact_number)
        else:
            if not 1 <= number_order <= len(rows):
                raise not_found(f"number #{number_order} of {c['contact_name']}", f"they have {len(rows)}")
            target = rows[number_order - 1]
        self.execute("DELETE FROM mtu_contacts_phones WHERE phone_id = ?", (target["phone_id"],))
        self._renumber("mtu_contacts_phones", c["contact_id"])
        return ok(
            deletion_status=f"deleted {target['phone_number']} from {c['contact_name']}", **self._view(c)
        )

    @write(name="delete_contact_email")
    def delete_contact_email(
        self,
        contact_name: Annotated[str | None, Param("full name of the contact")] = None,
        contact_email: Annotated[str | None, Param("the email to delete")] = None,
        email_order: Annotated[int | None, Param("which email (1 = primary) when no email is given")] = None,
    ) -> dict[str, Any]:
        """Delete one email address of a contact (by the address, or by its position)."""
        if contact_name:
            c = self._contact(contact_name)
        elif contact_email:
            row = self.row(
                "SELECT contact_id FROM mtu_contacts_emails WHERE email = ? ORDER BY email_id",
                (canon(contact_email),),
            )
            if row is None:
                raise not_found("email", contact_email)
            c = self.get_or_404("mtu_contacts_contacts", "contact_id", row["contact_id"])
        else:
            raise bad_request("delete_contact_email needs contact_name or contact_email")
        rows = self.rows(
            "SELECT * FROM mtu_contacts_emails WHERE contact_id = ? ORDER BY position, email_id",
            (c["contact_id"],),
        )
        if contact_email:
            target = next((r for r in rows if r["email"] == canon(contact_email)), None)
            if target is None:
                raise not_found(f"email of {c['contact_name']}", contact_email)
        else:
            order = email_order or 1
            if not 1 <= order <= len(rows):
                raise not_found(f"email #{order} of {c['contact_name']}", f"they have {len(rows)}")
            target = rows[order - 1]
        self.execute("DELETE FROM mtu_contacts_emails WHERE email_id = ?", (target["email_id"],))
        self._renumber("mtu_contacts_emails", c["contact_id"])
        return ok(deletion_status=f"deleted {target['email']} from {c['contact_name']}", **self._view(c))

    @write(name="update_contact_information")
    def update_contact_information(
        self,
        name: Annotated[str, Param("the contact's name as stored")],
        new_information: Annotated[
            dict[str, Any], Param("new details: contact_name, phone_number, email and/or address")
        ],
        phone_number: Annotated[str | None, Param("the number to replace (none: add the new number)")] = None,
        email: Annotated[str | None, Param("the email to replace (none: add the new email)")] = None,
    ) -> dict[str, Any]:
        """Change a contact's name, numbers, emails or address, or add more of them."""
        c = self._contact(name)
        changes: dict[str, str] = {}
        for key, value in new_information.items():
            field = NEW_INFO_KEYS.get(canon(key).replace(" ", "_"))
            if field is None:
                raise bad_request(
                    f"new_information: unknown field {key!r}; use {sorted(set(NEW_INFO_KEYS.values()))}"
                )
            if not isinstance(value, str) or not value.strip():
                raise bad_request(f"new_information.{key} must be a non-empty string")
            changes[field] = value.strip()
        if not changes:
            raise bad_request("new_information is empty")
        if "contact_name" in changes:
            clash = self.row(
                "SELECT 1 FROM mtu_contacts_contacts WHERE contact_name = ? COLLATE NOCASE AND contact_id != ?",
                (changes["contact_name"], c["contact_id"]),
            )
            if clash:
                raise conflict(f"a contact called {changes['contact_name']} exists already")
            self.execute(
                "UPDATE mtu_contacts_contacts SET contact_name = ? WHERE contact_id = ?",
                (changes["contact_name"], c["contact_id"]),
            )
        if "address" in changes:
            self.execute(
                "UPDATE mtu_contacts_contacts SET address = ? WHERE contact_id = ?",
                (changes["address"], c["contact_id"]),
            )
        if "phone_number" in changes:
            number = check_phone("new_information.phone_number", changes["phone_number"])
            if phone_number:
                old = next(
                    (
                        r
                        for r in self.rows(
                            "SELECT * FROM mtu_contacts_phones WHERE contact_id = ? ORDER BY phone_id",
                            (c["contact_id"],),
                        )
                        if _digits(r["phone_number"]) == _digits(phone_number)
                    ),
                    None,
                )
                if old is None:
                    raise not_found(f"number of {c['contact_name']}", phone_number)
                self.execute(
                    "UPDATE mtu_contacts_phones SET phone_number = ? WHERE phone_id = ?",
                    (number, old["phone_id"]),
                )
            else:
                self._add_phone(c["contact_id"], number)
        if "email" in changes:
            address = check_email("new_information.email", changes["email"])
            if email:
                old = self.row(
                    "SELECT * FROM mtu_contacts_emails WHERE contact_id = ? AND email = ? ORDER BY email_id",
                    (c["contact_id"], canon(email)),
                )
                if old is None:
                    raise not_found(f"email of {c['contact_name']}", email)
                self.execute(
                    "UPDATE mtu_contacts_emails SET email = ? WHERE email_id = ?", (address, old["email_id"])
                )
            else:
                self._add_email(c["contact_id"], address)
        updated = self.get_or_404("mtu_contacts_contacts", "contact_id", c["contact_id"])
        return ok(
            update_status=f"updated {sorted(changes)} of {updated['contact_name']}", **self._view(updated)
        )

    @write(name="ShareLocation")
    def share_location(
        self,
        location: Annotated[str, Param("the place or address to share")],
        contact_name: Annotated[str, Param("who to send it to")],
    ) -> dict[str, Any]:
        """Send a location to a contact."""
        if not location.strip():
            raise bad_request("location is empty")
        c = self._contact(contact_name)
        share_id = self.next_id("SHARE")
        self.execute(
            "INSERT INTO mtu_contacts_shares VALUES (?, ?, ?, ?)",
            (share_id, c["contact_id"], location.strip(), self.now_iso()),
        )
        return ok(share_id=share_id, location=location.strip(), contact_name=c["contact_name"])


finalize_tools(ContactsApp)
