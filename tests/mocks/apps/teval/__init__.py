"""Tests of the T-Eval mock apps; helpers shared by the modules."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from toolgym.actions import Observation, ToolCall
from toolgym.errors import ErrorKind
from toolgym.mocks.apps.teval import resolve_app_names, teval_prefixes
from toolgym.mocks.world import MockWorld

CLOCK = datetime(2024, 1, 1, tzinfo=UTC)


def make_world(*apps: str, seed: int = 0, clock: datetime = CLOCK) -> MockWorld:
    return MockWorld(resolve_app_names(apps), seed=seed, clock=clock, prefixes=teval_prefixes(apps))


def call(world: MockWorld, name: str, **arguments: Any) -> dict[str, Any]:
    """A call that must succeed; its JSON result."""
    obs = world.step(ToolCall(name=name, arguments=arguments))
    assert obs.error is None, obs.text
    assert isinstance(obs.content, dict) and obs.content["status"] == "success", obs.content
    return obs.content


def fails(
    world: MockWorld,
    name: str,
    code: int | None = None,
    kind: ErrorKind = ErrorKind.TOOL_ERROR,
    **arguments: Any,
) -> Observation:
    """A call that must fail with `kind` (and HTTP-like `code`) and leave the state as it was."""
    before = world.state_hash()
    obs = world.step(ToolCall(name=name, arguments=arguments))
    assert obs.error is not None, obs.text
    assert obs.error.kind == kind, obs.text
    if code is not None:
        assert obs.content["code"] == code, obs.content
    assert world.state_hash() == before
    return obs
