"""The shopping templates: each gives tasks that pass `toolgym check`; no query names a product id
(a person names a product by what it is); a reorder carries the items get_order returned into
add_to_cart, one call each, then checks out."""

from __future__ import annotations

from tests.authoring.templates.template_checks import assert_every_template_passes, assert_no_query_names
from toolgym.actions import ToolCall
from toolgym.authoring.templates.shopping import TEMPLATES
from toolgym.mocks.world import MockWorld


def test_every_template_gives_checked_tasks_that_name_no_product_id() -> None:
    result = assert_every_template_passes(TEMPLATES)
    assert_no_query_names(result, [("shop_products", "product_id")])


def test_a_reorder_adds_what_the_old_order_held() -> None:
    result = assert_every_template_passes([t for t in TEMPLATES if t.name == "shopping.reorder_past_order"])
    for task in result.all_tasks:
        calls = [s.action for s in task.golden if isinstance(s.action, ToolCall)]
        assert calls[0].name == "get_order" and calls[-1].name == "place_order"
        with MockWorld(task.apps or [], seed=task.seed) as world:
            items = world.call("get_order", **calls[0].arguments)["order"]["items"]
        added = [(c.arguments["product_id"], c.arguments["quantity"]) for c in calls[1:-1]]
        assert added == [(i["product_id"], i["quantity"]) for i in items]
