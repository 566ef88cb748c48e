"""MTU Library app (toolgym.mocks.apps.mtu.library) on its seeded data (real SQLite)."""

from __future__ import annotations

from tests.mocks.apps.mtu import fails, make_world


def test_library_loans_fees_and_holds() -> None:
    world = make_world("mtu_library")
    fees = world.call("get_late_fees", library_ID=123456)
    assert fees["late_fees"] > 0
    loans = world.rows("mtu_library_loans", {"library_number": 123456})
    title = world.store.conn.execute(
        "SELECT b.title FROM mtu_library_copies c JOIN mtu_library_books b USING (book_id) WHERE c.copy_id = ?",
        (loans[-1]["copy_id"],),
    ).fetchone()[0]
    renewed = world.call("renew_books", library_number=123456, book_names=title)
    assert renewed["renewal_period"] == 14
    assert renewed["total_amount_due"] == round(fees["total_owed"] + 0.5, 2)
    world.call("renew_books", library_number=123456, book_names=title)
    fails(world, "renew_books", 409, library_number=123456, book_names=title)  # renewed twice already
    fails(world, "renew_books", 404, library_number=123456, book_names="Moby Dick and Emma")
    owed = world.call("get_late_fees", library_ID=123456)["total_owed"]
    paid = world.call(
        "make_payment", account_number="123456", payment_amount=owed, payment_method="Credit Card"
    )
    assert paid["remaining_balance"] == 0
    fails(world, "make_payment", 422, account_number="123456", payment_amount=1, payment_method="paypal")
    status = world.call("get_book_status", book_title=title)
    assert status["book_status"] in ("in stock", "checked out", "reserved")
    out = next(
        b["title"]
        for b in world.rows("mtu_library_books")
        if world.call("get_book_status", book_title=b["title"])["book_status"] == "checked out"
    )
    world.call("reserve_book", book_title=out, card_number=1245521)
    fails(world, "reserve_book", 409, book_title=out, card_number=1245521)
    shelf = next(
        b["title"]
        for b in world.rows("mtu_library_books")
        if world.call("get_book_status", book_title=b["title"])["book_status"] == "in stock"
    )
    fails(world, "reserve_book", 409, book_title=shelf, card_number=1245521)
    fails(world, "reserve_book", 400, book_title=out, card_number=1245521, book_format="scroll")
    fails(world, "get_late_fees", 404, library_ID=42)
    joined = world.call("apply_for_membership", city_of_residence="Atlanta")
    assert joined["membership_fee"] == 5.0
    assert world.call("get_late_fees", library_ID=joined["library_number"])["total_owed"] == 5.0
    assert world.call("apply_for_membership", city_of_residence="New York")["membership_fee"] == 0
