"""T-Eval’s PPT (toolgym.mocks.apps.teval.ppt) on its seeded data (real SQLite)."""

from __future__ import annotations

import json

from tests.mocks.apps.teval import call, fails, make_world


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
