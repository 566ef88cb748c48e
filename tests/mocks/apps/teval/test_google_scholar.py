"""T-Eval’s GoogleScholar (toolgym.mocks.apps.teval.google_scholar) on its seeded data (real SQLite)."""

from __future__ import annotations

from tests.mocks.apps.teval import call, fails
from toolgym.mocks.world import MockWorld


def test_scholar_search_author_and_citation_chain(world: MockWorld) -> None:
    found = call(world, "search_google_scholar", query="option pricing")
    assert 1 <= len(found["title"]) <= 5
    assert (
        len(found["cited_by"]) == len(found["organic_id"]) == len(found["snipets"]) == len(found["pub_info"])
    )
    assert all(
        "option pricing" in (t + s).lower() for t, s in zip(found["title"], found["snipets"], strict=True)
    )
    paper = world.rows("teval_scholar_papers", {"organic_id": found["organic_id"][0]})[0]
    citation = call(world, "get_citation_format", q=paper["organic_id"])["citation"]
    assert (
        f'"{paper["title"]}."' in citation and f"{paper['year']}" in citation and paper["venue"] in citation
    )
    lead = world.rows("teval_scholar_authorship", {"organic_id": paper["organic_id"], "position": 0})[0]
    name = world.rows("teval_scholar_authors", {"author_id": lead["author_id"]})[0]["name"]
    assert citation.startswith(f"{name.split()[1]}, {name.split()[0]}")
    author_id = call(world, "get_author_id", mauthors=name.upper())["author_id"]
    assert author_id == lead["author_id"]
    info = call(world, "get_author_information", author_id=author_id)
    assert info["name"] == name and len(info["articles"]) <= 3
    cites = [a["cited_by"] for a in info["articles"]]
    assert cites == sorted(cites, reverse=True)
    fails(world, "get_author_id", 404, mauthors="Nobody Atall")
    fails(world, "get_author_information", 404, author_id="xxxxxxxxxxxx")
    fails(world, "get_citation_format", 404, q="nope")
