"""T-Eval ArxivSearch: search ~500 synthetic arXiv papers across ten fields.

Semantics: the query is split into words; a paper scores 3 per word in its title, 2 per word in
its authors, 1 per word in its abstract (all words of a quoted phrase must appear together in
the title or abstract); the 3 best-scoring papers come back, newer first on ties. An arXiv id
(e.g. 2311.01234) finds that paper. Nothing published after the simulated clock is visible. No
match is a success with an empty list, as on arxiv.org.
"""

from __future__ import annotations

import random
import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import read
from toolgym.mocks.apps.teval.common import TevalApp, word_hits, words
from toolgym.mocks.apps.teval.corpus import make_paper, person
from toolgym.mocks.responses import bad_request, ok
from toolgym.mocks.seeding import insert_rows
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

N_PAPERS: Final = 500
MAX_RESULTS: Final = 3
ARXIV_ID: Final = re.compile(r"\d{4}\.\d{5}")


class ArxivSearch(TevalApp):
    name = "teval_arxiv"
    teval_tool: ClassVar[str] = "ArxivSearch"
    description = (
        "Search information from Arxiv.org Useful for when you need to answer questions about Physics,"
        " Mathematics, Computer Science, Quantitative Biology, Quantitative Finance, Statistics, Electrical"
        " Engineering, and Economics from scientific articles on arxiv.org"
    )
    schema = """
    CREATE TABLE teval_arxiv_papers (
        arxiv_id TEXT PRIMARY KEY,
        category TEXT NOT NULL,
        field TEXT NOT NULL,
        published TEXT NOT NULL,
        title TEXT NOT NULL,
        authors TEXT NOT NULL,
        summary TEXT NOT NULL
    );
    """

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        rows: list[dict[str, Any]] = []
        seen: set[str] = set()
        while len(rows) < N_PAPERS:
            paper = make_paper(rng)
            if paper.title in seen:
                continue
            seen.add(paper.title)
            published = (clock - timedelta(days=rng.randint(1, 1800))).date()
            # arXiv ids: YYMM.NNNNN of the submission month, unique within it
            arxiv_id = f"{published:%y%m}.{len(rows) * 37 % 100000:05d}"
            authors = ", ".join(dict.fromkeys(person(rng) for _ in range(rng.randint(1, 5))))
            rows.append(
                {
                    "arxiv_id": arxiv_id,
                    "category": paper.category,
                    "field": paper.field,
                    "published": published.isoformat(),
                    "title": paper.title,
                    "authors": authors,
                    "summary": paper.summary,
                }
            )
        insert_rows(db, "teval_arxiv_papers", rows)

    @read
    def get_arxiv_article_information(
        self, query: Annotated[str, Param("the content of search query")]
    ) -> dict[str, Any]:
        """Run Arxiv search and get the article meta information."""
        if not query.strip():
            raise bad_request("query must not be empty")
        today = self.now().date().isoformat()
        papers = self.rows("SELECT * FROM teval_arxiv_papers WHERE published <= ?", (today,))
        ids = ARXIV_ID.findall(query)
        if ids:
            hits = [p for p in papers if p["arxiv_id"] in ids]
        else:
            terms = words(query)
            phrases = [p.lower() for p in re.findall(r'"([^"]+)"', query)]
            scored: list[tuple[int, dict[str, Any]]] = []
            for p in papers:
                text = (p["title"] + " " + p["summary"]).lower()
                if any(ph not in text for ph in phrases):
                    continue
                score = 3 * word_hits(terms, p["title"]) + 2 * word_hits(terms, p["authors"])
                score += word_hits(terms, p["summary"])
                if score or (phrases and not terms):
                    scored.append((score, p))
            # best score first, newest first among equals (two stable sorts)
            scored.sort(key=lambda s: (s[1]["published"], s[1]["arxiv_id"]), reverse=True)
            scored.sort(key=lambda s: s[0], reverse=True)
            hits = [p for _, p in scored]
        return ok(
            content=[
                {
                    "published": p["published"],
                    "title": p["title"],
                    "authors": p["authors"],
                    "summary": p["summary"],
                }
                for p in hits[:MAX_RESULTS]
            ]
        )
