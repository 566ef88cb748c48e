"""T-Eval’s ArxivSearch (toolgym.mocks.apps.teval.arxiv) on its seeded data (real SQLite)."""

from __future__ import annotations

from tests.mocks.apps.teval import call, fails
from toolgym.mocks.world import MockWorld


def test_arxiv_search_matches_the_query(world: MockWorld) -> None:
    papers = call(world, "get_arxiv_article_information", query="quantum error correction")["content"]
    assert len(papers) == 3
    for p in papers:
        assert "quantum error correction" in (p["title"] + " " + p["summary"]).lower()
        assert set(p) == {"published", "title", "authors", "summary"}
    assert call(world, "get_arxiv_article_information", query="zzzz qqqq")["content"] == []
    one = world.rows("teval_arxiv_papers")[42]
    by_id = call(world, "get_arxiv_article_information", query=f"arXiv:{one['arxiv_id']}")["content"]
    assert [p["title"] for p in by_id] == [one["title"]]
    fails(world, "get_arxiv_article_information", 400, query="  ")
