"""T-Eval’s Email (toolgym.mocks.apps.teval.email) on its seeded data (real SQLite)."""

from __future__ import annotations

from tests.mocks.apps.teval import call, fails, make_world
from toolgym.errors import ErrorKind


def test_email_send_stores_the_message() -> None:
    world = make_world("teval_email")
    before = len(world.rows("teval_email_sent"))
    result = call(world, "send", address="bob@example.com, carol@example.org", title="Lunch", body="Noon?")
    assert "bob@example.com" in result["state"]
    rows = world.rows("teval_email_sent", {"title": "Lunch"})
    assert len(rows) == 1 and rows[0]["address"] == "bob@example.com, carol@example.org"
    assert rows[0]["body"] == "Noon?" and rows[0]["attachment"] is None
    assert len(world.rows("teval_email_sent")) == before + 1


def test_email_show_filters_unread_and_sorts() -> None:
    world = make_world("teval_email")
    unread = call(world, "show", only_unread=True)["emails"]
    everything = call(world, "show", only_unread=False)["emails"]
    stored = world.rows("teval_email_inbox", {"unread": 1})
    assert 0 < len(unread) == min(20, len(stored))
    assert {(e["title"], e["time"]) for e in unread} <= {(r["title"], r["time"]) for r in stored}
    assert len(everything) == 20 < len(world.rows("teval_email_inbox"))
    times = [e["time"] for e in everything]
    assert times == sorted(times, reverse=True)
    assert set(everything[0]) == {"sender", "title", "content", "time"}


def test_email_errors_change_nothing() -> None:
    world = make_world("teval_email", "teval_file")
    fails(world, "send", 400, address="not-an-address", title="x")
    fails(world, "send", 400, address="a@example.com", title="   ")
    fails(world, "send", 400, address="a@example.com", title="x", attachment="relative/file.txt")
    fails(world, "send", 404, address="a@example.com", title="x", attachment="/home/user/missing.pdf")
    fails(world, "send", kind=ErrorKind.ARGUMENT_ERROR, address="a@example.com")
    # with the disk in the world, an existing attachment goes through
    call(world, "send", address="a@example.com", title="todo", attachment="/home/user/desktop/todo.txt")
    assert world.rows("teval_email_sent", {"title": "todo"})[0]["attachment"] == "/home/user/desktop/todo.txt"
