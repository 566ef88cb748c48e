"""toolgym.mocks.rewards: the golden replay holds a chain to what its steps say (`expect_error`).
The state assertions and collateral damage are tested with the world in test_world.py."""

from __future__ import annotations

from typing import Any

import pytest

from toolgym.actions import ToolCall
from toolgym.errors import ErrorKind
from toolgym.mocks.rewards import (
    GoldenReplayError,
    golden_expectations,
    replay_calls,
    replay_golden,
    replay_golden_state_hash,
)
from toolgym.tasks import GoldenStep

PAY = ToolCall(
    name="transfer", arguments={"from_account_id": "ACC-10001", "to_account_id": "ACC-10002", "amount": 3.5}
)
# the natural chain of "try, get the 404, explain": an account that does not exist
NO_SUCH_ACCOUNT = ToolCall(name="transfer", arguments={**PAY.arguments, "from_account_id": "ACC-NOPE"})


def steps(*pairs: tuple[ToolCall, Any]) -> list[GoldenStep]:
    return [GoldenStep(action=call, expect_error=expected) for call, expected in pairs]


def test_a_failure_the_step_expects_is_allowed_and_changes_nothing() -> None:
    plain = replay_golden_state_hash(["banking"], 0, golden_calls=steps((PAY, None)))
    tried = replay_golden_state_hash(
        ["banking"], 0, golden_calls=steps((NO_SUCH_ACCOUNT, ErrorKind.TOOL_ERROR), (PAY, None))
    )
    assert tried == plain


def test_an_unexpected_failure_names_the_step_the_call_and_what_happened() -> None:
    with pytest.raises(GoldenReplayError) as caught:
        replay_golden(["banking"], 0, golden_calls=steps((PAY, None), (NO_SUCH_ACCOUNT, None)))
    error = caught.value
    assert error.index == 1 and error.expected is None and error.call == NO_SUCH_ACCOUNT
    assert str(error).startswith('golden call #1 transfer({"amount":3.5,"from_account_id":"ACC-NOPE"')
    assert "failed (tool_error): " in str(error) and "ACC-NOPE" in str(error).split("failed", 1)[1]


def test_an_expected_failure_that_did_not_happen_is_an_error() -> None:
    with pytest.raises(
        GoldenReplayError,
        match=r"golden call #0 transfer\(.*\) was expected to fail with "
        r"tool_error \(expect_error\) but succeeded",
    ):
        replay_golden(["banking"], 0, golden_calls=steps((PAY, ErrorKind.TOOL_ERROR)))


def test_a_failure_of_another_kind_than_expected_is_an_error() -> None:
    wrong_type = ToolCall(name="transfer", arguments={**PAY.arguments, "amount": "lots"})
    with pytest.raises(GoldenReplayError, match="failed with argument_error, expected tool_error"):
        replay_golden(["banking"], 0, golden_calls=steps((wrong_type, ErrorKind.TOOL_ERROR)))


def test_without_strict_the_chain_is_applied_whatever_was_expected() -> None:
    world = replay_golden(["banking"], 0, golden_calls=steps((PAY, ErrorKind.TOOL_ERROR)), strict=False)
    try:
        assert world.state_hash() == replay_golden_state_hash(["banking"], 0, golden_calls=[PAY])
    finally:
        world.close()


def test_the_chain_s_places_skip_other_actions_and_dicts_may_expect_errors() -> None:
    from toolgym.actions import FinalAnswer

    chain: list[Any] = [
        GoldenStep(action=FinalAnswer(text="first")),
        GoldenStep(action=NO_SUCH_ACCOUNT, expect_error=ErrorKind.TOOL_ERROR),
        {"name": "transfer", "arguments": PAY.arguments, "expect_error": "tool_error"},
        PAY,
    ]
    assert golden_expectations(chain) == [
        (1, NO_SUCH_ACCOUNT, ErrorKind.TOOL_ERROR),
        (2, PAY, ErrorKind.TOOL_ERROR),
        (3, PAY, None),
    ]


def test_a_call_of_a_tool_beside_the_apps_is_no_part_of_the_replay() -> None:
    """A task may call a registered tool (a converter, OCR) beside its apps: the world has no such
    tool and the call cannot touch its state, so the replay leaves it to the episode (before:
    unknown_tool, and the chain of pantry-convert-003 read as failing)."""
    convert = ToolCall(name="ConvertUnits", arguments={"value": 3.5, "source": "usd", "target": "eur"})
    assert replay_golden_state_hash(["banking"], 0, golden_calls=steps((PAY, None), (convert, None))) == (
        replay_golden_state_hash(["banking"], 0, golden_calls=steps((PAY, None)))
    )
    world = replay_golden(["banking"], 0)
    try:
        assert [o.tool for o in replay_calls(world, steps((convert, None), (PAY, None)))] == ["transfer"]
    finally:
        world.close()
