"""Helpers shared by the MTU app tests: a world per app on the task clock, and error checks."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from toolgym.actions import Observation, ToolCall
from toolgym.errors import ErrorKind
from toolgym.mocks.app import App
from toolgym.mocks.apps.mtu import MTU_APPS
from toolgym.mocks.world import MockWorld

CLOCK = datetime(2024, 1, 1, tzinfo=UTC)
APPS: dict[str, type[App]] = {cls.name: cls for cls in MTU_APPS}


def make_world(*names: str) -> MockWorld:
    return MockWorld([APPS[n] for n in names], seed=0, clock=CLOCK)


def step(world: MockWorld, api: str, /, **arguments: Any) -> Observation:
    return world.step(ToolCall(name=api, arguments=arguments))


def fails(world: MockWorld, api: str, code: int | None, /, **arguments: Any) -> Observation:
    """Call an API that must fail: a typed error observation (the HTTP-like code when given; None
    means an argument error) and the state hash unchanged."""
    before = world.state_hash()
    obs = step(world, api, **arguments)
    assert obs.error is not None, obs.text
    if code is None:
        assert obs.error.kind == ErrorKind.ARGUMENT_ERROR, obs.text
    else:
        assert obs.error.kind == ErrorKind.TOOL_ERROR, obs.text
        assert obs.content["code"] == code, obs.text
    assert world.state_hash() == before
    return obs


def count_rows(world: MockWorld, table: str, **where: Any) -> int:
    return len(world.rows(table, where))
