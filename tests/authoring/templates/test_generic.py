"""The generic read templates of an app no template covers, on a bundled app's real world: tasks
that pass `toolgym check`, parameters taken from the app's own columns, requests read from the
API's description."""

from __future__ import annotations

from tests.authoring.templates.template_checks import assert_every_template_passes
from toolgym.actions import ToolCall
from toolgym.authoring.templates.generic import _what, fallback_templates
from toolgym.mocks.world import MockWorld


def test_a_bundled_app_gets_checked_read_tasks_from_its_own_apis() -> None:
    templates = fallback_templates("mtu_weather")
    assert [t.name for t in templates] == ["mtu_weather.generic.GetWeather"]
    result = assert_every_template_passes(templates)
    for task in result.all_tasks:
        assert task.metadata["shape"] == "read"
        call = task.golden[0].action
        assert isinstance(call, ToolCall)
        assert all(str(v) in task.query for v in call.arguments.values())


def test_a_request_reads_the_description_without_its_verb() -> None:
    with MockWorld(["mtu_alarms"]) as world:
        assert _what(world.tools.get("GetAlarms")) == "the alarms the user has set"
