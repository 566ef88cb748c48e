"""The mtu_cross templates: each gives tasks that pass `toolgym check`, no query names an id the user
could not know, and generation is deterministic."""

from __future__ import annotations

from tests.authoring.templates.mtu_checks import (
    assert_deterministic,
    assert_every_template_passes,
    assert_no_secret_ids,
    generated,
)
from toolgym.authoring.templates.mtu_cross import TEMPLATES


def test_every_template_gives_checked_tasks_without_secret_ids() -> None:
    assert_no_secret_ids(assert_every_template_passes(TEMPLATES))


def test_same_arguments_same_tasks() -> None:
    assert_deterministic(TEMPLATES)


def _values(found: object) -> set[str]:
    """Every scalar of a tool result, as text."""
    if isinstance(found, dict):
        return {v for x in found.values() for v in _values(x)}
    if isinstance(found, list):
        return {v for x in found for v in _values(x)}
    return {str(found)}


# chains whose first call decides between values the query gives (the forecast picks the alarm's
# time or the thermostat's setting) or that read two apps side by side: nothing is carried over
DECIDED = {"mtu.cross.weather_alarm", "mtu.cross.weather_thermostat", "mtu.cross.trip_weather"}


def test_later_calls_use_what_earlier_calls_returned() -> None:
    from toolgym.actions import ToolCall
    from toolgym.mocks.world import MockWorld

    result = generated(TEMPLATES, 1)
    assert {len(t.metadata["apps"]) for t in result.all_tasks} == {2, 3}
    assert {t.name for t in TEMPLATES} > DECIDED
    for task in result.all_tasks:
        world = MockWorld(list(task.apps or ()), seed=task.seed, clock=task.clock)
        try:
            returned: set[str] = set()
            carried = False
            for step in task.golden:
                action = step.action
                if not isinstance(action, ToolCall):
                    continue
                given = {str(v) for v in action.arguments.values()}
                # an argument the query does not say, that an earlier call returned
                carried |= any(v in returned and v not in task.query for v in given)
                returned |= _values(world.step(action).content)
            assert carried or task.metadata["template"] in DECIDED, task.query
        finally:
            world.close()
