"""The behaviour-category templates (authoring/templates/categories.py): each gives tasks that pass
`toolgym check` and carry their category; a refusal looks first at most, says it cannot be done,
and forbids faking it; a hidden precondition's write really fails on the untouched world with the
typed error the metadata records, and the golden chain makes the other write first.
`generate(..., categories=...)` keeps only those templates."""

from __future__ import annotations

import pytest

from tests.authoring.templates.template_checks import (
    assert_deterministic,
    assert_every_template_passes,
    generated,
)
from toolgym.actions import ToolCall
from toolgym.authoring.generate import generate, template_categories, templates_for
from toolgym.authoring.templates import TEMPLATES as REGISTERED
from toolgym.authoring.templates.categories import INSUFFICIENT, PRECONDITION, TEMPLATES
from toolgym.mocks.world import MockWorld
from toolgym.tasks import Task


def by_category(tasks: list[Task], category: str) -> list[Task]:
    return [t for t in tasks if t.category == category]


def test_every_template_gives_checked_tasks_of_its_category() -> None:
    result = assert_every_template_passes(TEMPLATES)
    tasks = result.all_tasks
    assert {t.category for t in tasks} == {INSUFFICIENT, PRECONDITION}
    assert {t.metadata["shape"] for t in by_category(tasks, INSUFFICIENT)} == {"refuse"}
    assert {t.metadata["shape"] for t in by_category(tasks, PRECONDITION)} == {"write"}
    assert all(t.name in REGISTERED for t in TEMPLATES)  # the toolgym.templates entry point


def test_a_refusal_says_it_cannot_be_done_and_forbids_faking_it() -> None:
    tasks = by_category(generated(TEMPLATES).all_tasks, INSUFFICIENT)
    for task in tasks:
        assert task.answer is not None and task.answer.whitelist and task.answer.blacklist
        assert "cannot" in task.answer.whitelist[0] and "successfully" in task.answer.blacklist[0]
        assert task.minefields and all(m.call is None or m.call.outcome == "any" for m in task.minefields)
    by_template = {t.metadata["template"]: t for t in tasks}
    parcel = by_template["ctool.express.insufficient_unknown_parcel"]
    (lookup, answer) = parcel.golden
    assert isinstance(lookup.action, ToolCall) and lookup.action.name == "get_shipment"
    assert lookup.expect_error == "tool_error" and answer.action.type == "final_answer"
    amount = by_template["banking.insufficient_no_amount"]
    assert amount.answer is not None and amount.answer.whitelist is not None
    assert ["amount", "how much"] in amount.answer.whitelist
    order = by_template["shopping.insufficient_unknown_order"]
    assert any(
        m.state is not None and m.state.values == {"status": "cancelled"} for m in order.minefields or []
    )


def test_a_precondition_blocks_the_write_until_the_chain_changes_the_state() -> None:
    tasks = by_category(generated(TEMPLATES).all_tasks, PRECONDITION)
    assert len(tasks) == 2 * len([t for t in TEMPLATES if t.category == PRECONDITION])
    for task in tasks:
        calls = [s.action for s in task.golden if isinstance(s.action, ToolCall)]
        target = calls[-1]
        with MockWorld(task.apps or [], seed=task.seed, clock=task.clock) as world:
            skipped = world.step(target)  # the asked-for write, without the precondition
            assert skipped.error is not None and skipped.error.kind == "tool_error"
            assert skipped.error.message == task.metadata["blocked_by"]
            for call in calls:
                assert world.step(call).error is None, (task.id, call.name)
    reasons = " ".join(t.metadata["blocked_by"] for t in tasks)
    for why in (
        "is not a member of",
        "insufficient funds",
        "insufficient wallet balance",
        "no music is playing",
    ):
        assert why in reasons


def test_the_same_arguments_give_the_same_tasks() -> None:
    assert_deterministic(TEMPLATES)


def test_generate_keeps_the_templates_of_the_categories_asked_for() -> None:
    assert {INSUFFICIENT, PRECONDITION} <= set(template_categories())
    result = generate(["ctool"], 6, seed=1, jobs=1, categories=[PRECONDITION])
    assert len(result.tasks) == 6 and {t.category for t in result.tasks} == {PRECONDITION}
    assert {t.metadata["template"] for t in result.tasks} <= {t.name for t in TEMPLATES}
    behaviour = {t.category for t in TEMPLATES}  # the dynamic templates have a category of their own
    assert {t.name for t in templates_for(["messaging"]) if t.category in behaviour} == {
        t.name for t in TEMPLATES if t.apps == ("messaging",)
    }
    with pytest.raises(ValueError, match="no templates of categories canonicalization for apps banking"):
        generate(["banking"], 3, categories=["canonicalization"])
