"""Tests of the mock apps, one module per app module (tests/ + the source path, test_ prefix), and
the call helpers every group's tests use."""

from __future__ import annotations

from typing import Any

from toolgym.actions import Observation, ToolCall
from toolgym.errors import ErrorKind
from toolgym.mocks.world import MockWorld


def ok_call(world: MockWorld, name: str, /, **arguments: Any) -> dict[str, Any]:
    """Run an API through step() as the env would and insist that it succeeded."""
    obs = world.step(ToolCall(name=name, arguments=arguments))
    assert obs.error is None, obs.text
    assert isinstance(obs.content, dict) and obs.content["status"] == "success"
    return obs.content


def expect_error(
    world: MockWorld,
    name: str,
    /,
    code: int | None = None,
    kind: ErrorKind = ErrorKind.TOOL_ERROR,
    **arguments: Any,
) -> Observation:
    """Run a call that must fail with a typed error (and, for tool errors, an HTTP-like code)
    and must leave the state exactly as it was."""
    before = world.state_hash()
    obs = world.step(ToolCall(name=name, arguments=arguments))
    assert obs.error is not None, f"{name} succeeded: {obs.text}"
    assert obs.error.kind == kind, obs.text
    if code is not None:
        assert isinstance(obs.content, dict) and obs.content["code"] == code, obs.text
    assert world.state_hash() == before
    assert world.store.full_hash() == before
    return obs
