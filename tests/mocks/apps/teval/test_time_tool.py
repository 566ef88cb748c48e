"""T-Eval’s TimeTool (toolgym.mocks.apps.teval.time_tool) on its seeded data (real SQLite)."""

from __future__ import annotations

from datetime import timedelta

from tests.mocks.apps.teval import call, make_world


def test_time_follows_the_simulated_clock() -> None:
    world = make_world("teval_time")
    assert call(world, "get_curr_time")["time"] == "2024-01-01 00:00"
    assert call(world, "get_weekday")["weekday"] == "Monday"
    world.advance_clock(timedelta(days=4, hours=13, minutes=5))
    assert call(world, "get_curr_time")["time"] == "2024-01-05 13:05"
    assert call(world, "get_weekday")["weekday"] == "Friday"
