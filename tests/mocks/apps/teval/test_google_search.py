"""T-Eval’s GoogleSearch (toolgym.mocks.apps.teval.google_search) on its seeded data (real SQLite)."""

from __future__ import annotations

from datetime import date

from tests.mocks.apps.teval import call, fails
from toolgym.mocks.apps.teval.google_search import easter
from toolgym.mocks.world import MockWorld


def test_google_search_ranks_relevant_pages(world: MockWorld) -> None:
    top = call(world, "serper_search", query="What is the capital of Australia?")["content"]
    assert len(top) == 3 and "Canberra" in top[0]["snippet"]
    assert set(top[0]) == {"title", "link", "snippet"}
    easter_2024 = call(world, "serper_search", query="When is Easter Sunday 2024")["content"][0]["snippet"]
    assert "March 31, 2024" in easter_2024
    assert call(world, "serper_search", query="xylophone zebra quasar")["content"] == []
    fails(world, "serper_search", 400, query="the of")


def test_easter_dates() -> None:
    assert [easter(y) for y in (2023, 2024, 2025)] == [date(2023, 4, 9), date(2024, 3, 31), date(2025, 4, 20)]
