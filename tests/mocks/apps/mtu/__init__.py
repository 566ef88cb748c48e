"""Helpers shared by the MTU app tests: a world per app on the task clock, and error checks."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tests.mocks.apps import expect_error
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
    means an argument error) and the state unchanged."""
    kind = ErrorKind.ARGUMENT_ERROR if code is None else ErrorKind.TOOL_ERROR
    return expect_error(world, api, code, kind, **arguments)


def count_rows(world: MockWorld, table: str, **where: Any) -> int:
    return len(world.rows(table, where))
