"""Tests of the T-Eval mock apps; helpers shared by the modules."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.mocks.apps import expect_error as fails
from tests.mocks.apps import ok_call as call
from toolgym.mocks.apps.teval import resolve_app_names, teval_prefixes
from toolgym.mocks.world import MockWorld

CLOCK = datetime(2024, 1, 1, tzinfo=UTC)


def make_world(*apps: str, seed: int = 0, clock: datetime = CLOCK) -> MockWorld:
    return MockWorld(resolve_app_names(apps), seed=seed, clock=clock, prefixes=teval_prefixes(apps))


__all__ = ["CLOCK", "call", "fails", "make_world"]
