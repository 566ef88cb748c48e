"""Email, FileOperation, ReserveMeeting, TimeTool and PPT: stateful office tools (real SQLite)."""

from __future__ import annotations

import json
from datetime import timedelta

from tests.mocks.teval import CLOCK, call, fails, make_world
from toolgym.errors import ErrorKind
from toolgym.mocks.world import MockWorld


# ---- Email ------------------------------------------------------------------------------------
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


# ---- FileOperation ----------------------------------------------------------------------------
def test_files_write_read_and_overwrite() -> None:
    world = make_world("teval_file")
    call(world, "write_file", file_path="/home/user/notes/new.txt", text="first")
    assert call(world, "read_file", file_path="notes/new.txt")["text"] == "first"  # relative to home
    call(world, "write_file", file_path="~/notes/new.txt", text="second")
    assert call(world, "read_file", file_path="/home/user/notes/../notes/new.txt")["text"] == "second"
    assert len(world.rows("teval_file_files", {"path": "/home/user/notes/new.txt"})) == 1
    seeded = world.rows("teval_file_files", {"path": "/home/user/documents/reports/report_2023-12.md"})[0]
    assert call(world, "read_file", file_path=seeded["path"])["text"] == seeded["text"]


def test_files_errors_change_nothing() -> None:
    world = make_world("teval_file")
    fails(world, "read_file", 404, file_path="/home/user/nothing.txt")
    fails(world, "read_file", 409, file_path="/home/user/documents")
    fails(world, "write_file", 404, file_path="/home/user/no/such/dir/a.txt", text="x")
    fails(world, "write_file", 409, file_path="/home/user/notes", text="x")
    fails(world, "write_file", 400, file_path="/home/user/notes/", text="x")
    fails(world, "write_file", kind=ErrorKind.ARGUMENT_ERROR, file_path="/tmp/a.txt")


# ---- ReserveMeeting ---------------------------------------------------------------------------
def _today_bookings(world: MockWorld, room: str) -> list[tuple[int, int]]:
    rows = world.rows("teval_meeting_bookings", {"room_id": room, "date": CLOCK.date().isoformat()})
    return [(r["start_minute"], r["end_minute"]) for r in rows]


def test_empty_rooms_are_the_ones_without_overlap() -> None:
    world = make_world("teval_meeting")
    for start, end in (("09:00", "10:00"), ("10:15", "10:45"), ("13:00", "16:00"), ("20:00", "21:00")):
        s = int(start[:2]) * 60 + int(start[3:])
        e = int(end[:2]) * 60 + int(end[3:])
        rooms = call(world, "get_empty_room_with_time", start_time=start, end_time=end)["rooms"]
        for room in ("101", "102", "103"):
            clash = any(a < e and b > s for a, b in _today_bookings(world, room))
            assert (room in rooms) == (not clash), (room, start, end)
    status = call(world, "get_room_status")["rooms"]
    assert [r["room_id"] for r in status] == ["101", "102", "103"]
    assert all(len(r["booked"]) == len(_today_bookings(world, r["room_id"])) for r in status)


def test_reserving_takes_the_room_and_double_booking_conflicts() -> None:
    world = make_world("teval_meeting")
    assert "101" in call(world, "get_empty_room_with_time", start_time="18:00", end_time="19:00")["rooms"]
    assert "101" in call(world, "reserve", room_id="101", start_time="18:00", end_time="19:00")["state"]
    assert "101" not in call(world, "get_empty_room_with_time", start_time="18:30", end_time="18:45")["rooms"]
    assert "101" in call(world, "get_empty_room_with_time", start_time="19:00", end_time="19:30")["rooms"]
    fails(world, "reserve", 409, room_id="101", start_time="18:30", end_time="20:00")
    call(world, "reserve", room_id="101", start_time="19:00", end_time="19:30")  # back to back is fine


def test_meeting_errors_change_nothing() -> None:
    world = make_world("teval_meeting")
    fails(world, "reserve", 404, room_id="104", start_time="18:00", end_time="19:00")
    fails(world, "reserve", 400, room_id="101", start_time="19:00", end_time="18:00")
    fails(world, "reserve", 400, room_id="101", start_time="7pm", end_time="8pm")
    fails(world, "get_empty_room_with_time", 400, start_time="25:00", end_time="26:00")
    fails(world, "reserve", kind=ErrorKind.ARGUMENT_ERROR, room_id=101, start_time="18:00", end_time="19:00")
    world.advance_clock(timedelta(hours=12))  # noon: the morning has passed
    fails(world, "reserve", 422, room_id="101", start_time="11:00", end_time="11:30")


# ---- TimeTool ---------------------------------------------------------------------------------
def test_time_follows_the_simulated_clock() -> None:
    world = make_world("teval_time")
    assert call(world, "get_curr_time")["time"] == "2024-01-01 00:00"
    assert call(world, "get_weekday")["weekday"] == "Monday"
    world.advance_clock(timedelta(days=4, hours=13, minutes=5))
    assert call(world, "get_curr_time")["time"] == "2024-01-05 13:05"
    assert call(world, "get_weekday")["weekday"] == "Friday"


# ---- PPT --------------------------------------------------------------------------------------
def test_ppt_builds_and_saves_a_presentation() -> None:
    world = make_world("teval_ppt")
    call(world, "create_file", theme="dark", abs_location="/home/user/talk.pptx")
    call(world, "add_text_page", title="Agenda", bullet_items="Intro[SPAN] Results [SPAN]Outlook")
    image = call(world, "get_image", keywords="solar panel, energy")["picture_url"]
    assert image.startswith("/images/library/solar_panel_")
    call(world, "add_text_image_page", title="Energy", bullet_items="Clean power", image=image)
    call(world, "save_file")
    pres = world.rows("teval_ppt_presentations", {"abs_location": "/home/user/talk.pptx"})
    assert len(pres) == 1 and pres[0]["state"] == "saved" and pres[0]["theme"] == "Dark"
    slides = world.rows("teval_ppt_slides", {"pres_id": pres[0]["pres_id"]})
    assert [s["page_no"] for s in slides] == [1, 2]
    assert json.loads(slides[0]["bullet_items"]) == ["Intro", "Results", "Outlook"]
    assert slides[1]["layout"] == "text_image" and slides[1]["image"] == image
    # nothing is open any more
    fails(world, "add_text_page", 409, title="Late", bullet_items="x")


def test_ppt_saving_over_a_location_replaces_the_old_file() -> None:
    world = make_world("teval_ppt")
    old = world.rows("teval_ppt_presentations")[0]
    call(world, "create_file", theme="Light", abs_location=old["abs_location"])
    call(world, "add_text_page", title="New", bullet_items="only page")
    call(world, "save_file")
    now = world.rows("teval_ppt_presentations", {"abs_location": old["abs_location"]})
    assert len(now) == 1 and now[0]["pres_id"] != old["pres_id"] and now[0]["theme"] == "Light"
    assert world.rows("teval_ppt_slides", {"pres_id": old["pres_id"]}) == []


def test_ppt_errors_change_nothing() -> None:
    world = make_world("teval_ppt", "teval_file")
    fails(world, "save_file", 409)
    fails(world, "add_text_page", 409, title="x", bullet_items="y")
    fails(world, "create_file", 400, theme="Pink", abs_location="/home/user/a.pptx")
    fails(world, "create_file", 400, theme="Default", abs_location="slides.pptx")
    fails(world, "create_file", 400, theme="Default", abs_location="/home/user/a.docx")
    fails(world, "get_image", 404, keywords="zzzz")
    call(world, "create_file", theme="Default", abs_location="/home/user/a.pptx")
    fails(world, "create_file", 409, theme="Default", abs_location="/home/user/b.pptx")
    fails(world, "save_file", 422)  # no page yet
    fails(world, "add_text_image_page", 404, title="x", bullet_items="y", image="/home/user/nope.png")
    # a file on the shared disk is a valid image path too
    call(world, "write_file", file_path="/home/user/desktop/chart.png", text="(image bytes)")
    call(world, "add_text_image_page", title="Chart", bullet_items="y", image="/home/user/desktop/chart.png")
