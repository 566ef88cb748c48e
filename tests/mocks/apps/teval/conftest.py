"""Fixtures shared by the T-Eval app tests."""

from __future__ import annotations

import pytest

from tests.mocks.apps.teval import make_world
from toolgym.mocks.world import MockWorld


@pytest.fixture(scope="module")
def world() -> MockWorld:
    """The search and film apps in one world (read-only APIs: one world serves a whole module)."""
    return make_world(
        "teval_arxiv", "teval_scholar", "teval_google_search", "teval_douban", "teval_tmdb", "teval_polygon"
    )
