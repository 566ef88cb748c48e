"""The ctool templates in English: each gives tasks that pass `toolgym check`; no query names a
friend's, track's or place's id; the redirect asks for the address it then uses."""

from __future__ import annotations

from tests.authoring.templates.template_checks import assert_every_template_passes, assert_no_query_names
from toolgym.actions import AskUser, ToolCall
from toolgym.authoring.templates.ctool import TEMPLATES, templates


def test_every_template_gives_checked_tasks_that_name_no_found_id() -> None:
    result = assert_every_template_passes(TEMPLATES)
    assert_no_query_names(result, [("music_tracks", "track_id"), ("maps_places", "place_id")])
    assert {t.metadata["lang"] for t in result.all_tasks} == {"en"}
    redirect = next(
        t for t in result.all_tasks if t.metadata["template"] == "ctool.express.redirect_ask_address"
    )
    assert redirect.user is not None
    address = redirect.user.known["new_address"]
    assert isinstance(redirect.golden[0].action, AskUser)
    change = redirect.golden[1].action
    assert isinstance(change, ToolCall) and change.arguments["new_address"] == address


def test_the_two_languages_share_their_templates() -> None:
    english, chinese = templates("en"), templates("zh")
    assert [t.name.removeprefix("ctool.") for t in english] == [
        t.name.removeprefix("ctool_zh.") for t in chinese
    ]
    assert all(t.apps[0] + "_zh" == z.apps[0] for t, z in zip(english, chinese, strict=True))
