"""The cross-app templates: each gives tasks that pass `toolgym check` over two or three apps, and
what one app returned decides what the next is asked (an order's total moved to savings, a cart's
total moved to checking, an order's status choosing the message)."""

from __future__ import annotations

from tests.authoring.templates.template_checks import assert_every_template_passes
from toolgym.actions import ToolCall
from toolgym.authoring.templates.cross import TEMPLATES
from toolgym.mocks.world import MockWorld
from toolgym.tasks import Task


def _calls(task: Task) -> list[ToolCall]:
    return [s.action for s in task.golden if isinstance(s.action, ToolCall)]


def test_every_template_gives_checked_tasks_across_apps() -> None:
    result = assert_every_template_passes(TEMPLATES)
    spans = {len(t.metadata["apps"]) for t in result.all_tasks if t.metadata["shape"] != "refuse"}
    assert spans == {2, 3}
    by_template: dict[str, list[Task]] = {}
    for task in result.all_tasks:
        by_template.setdefault(task.metadata["template"], []).append(task)
    for task in by_template["cross.buy_and_set_aside"]:
        calls = _calls(task)
        with MockWorld(task.apps or [], seed=task.seed) as world:
            for call in calls[:3]:
                placed = world.call(call.name, **call.arguments)
        assert calls[-1].name == "transfer" and calls[-1].arguments["amount"] == placed["order"]["total"]
    for task in by_template["cross.order_news_to_friend"]:
        calls = _calls(task)
        with MockWorld(task.apps or [], seed=task.seed) as world:
            status = world.call("track_order", **calls[0].arguments)["order_status"]
        sent = calls[-1].arguments["content"]
        assert sent == (
            "Your gift is on the way!"
            if status in ("shipped", "delivered")
            else "Your gift hasn't shipped yet."
        )
