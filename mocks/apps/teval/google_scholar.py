"""T-Eval GoogleScholar: ~600 synthetic papers by ~150 researchers, with citation counts.

Semantics: search scores the query's words against title (3), authors (2) and snippet (1) and
returns the 5 best, more cited first on ties, as parallel lists. Authors have Scholar-like ids;
get_author_id finds one by full name (case-insensitive) or by all the words of the name (initials
allowed, "A Zhang"), the most cited on ambiguity; get_author_information lists their 3 most cited articles. get_citation_format
builds the MLA citation from the stored authors, title, venue, volume, year and pages. Unknown ids
and names are 404s. Papers published after the simulated clock's year are not visible.
"""

from __future__ import annotations

import random
import string
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Final

from toolgym.mocks.app import read
from toolgym.mocks.apps.teval.common import TevalApp, norm, word_hits, words
from toolgym.mocks.apps.teval.corpus import (
    AFFILIATIONS,
    FIELDS,
    FIRST_NAMES,
    LAST_NAMES,
    VENUES,
    make_paper,
)
from toolgym.mocks.responses import bad_request, not_found, ok
from toolgym.mocks.seeding import insert_rows, name_grid
from toolgym.tools import Param

if TYPE_CHECKING:
    from sqlite_utils import Database

N_AUTHORS: Final = 150
N_PAPERS: Final = 600
MAX_RESULTS: Final = 5
ID_CHARS: Final = string.ascii_letters + string.digits + "-_"


def _initials(name: str) -> str:
    """'Ada Zhang' -> 'A Zhang', as Scholar prints authors."""
    first, _, last = name.rpartition(" ")
    return f"{first[:1]} {last}" if first else last


def mla(authors: list[str], title: str, venue: str, volume: int, year: int, pages: str) -> str:
    """MLA 9: Last, First, and First Last. "Title." Venue, vol. N, Year, pp. X-Y."""

    def inverted(name: str) -> str:
        first, _, last = name.rpartition(" ")
        return f"{last}, {first}" if first else last

    if len(authors) == 1:
        who = inverted(authors[0])
    elif len(authors) == 2:
        who = f"{inverted(authors[0])}, and {authors[1]}"
    else:
        who = f"{inverted(authors[0])}, et al"
    return f'{who}. "{title}." {venue}, vol. {volume}, {year}, pp. {pages}.'


class GoogleScholar(TevalApp):
    name = "teval_scholar"
    teval_tool: ClassVar[str] = "GoogleScholar"
    description = "Plugin for google scholar search"
    schema = """
    CREATE TABLE teval_scholar_authors (
        author_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        affiliation TEXT NOT NULL,
        website TEXT NOT NULL,
        field TEXT NOT NULL
    );
    CREATE TABLE teval_scholar_papers (
        organic_id TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        snippet TEXT NOT NULL,
        venue TEXT NOT NULL,
        volume INTEGER NOT NULL,
        pages TEXT NOT NULL,
        year INTEGER NOT NULL,
        cited_by INTEGER NOT NULL
    );
    CREATE TABLE teval_scholar_authorship (
        organic_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        author_id TEXT NOT NULL,
        PRIMARY KEY (organic_id, position)
    );
    CREATE INDEX teval_scholar_authorship_author ON teval_scholar_authorship(author_id);
    """

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        names = name_grid(FIRST_NAMES, LAST_NAMES)
        authors: list[dict[str, Any]] = []
        used_ids: set[str] = set()

        def new_id() -> str:
            while True:
                ident = "".join(rng.choice(ID_CHARS) for _ in range(12))
                if ident not in used_ids:
                    used_ids.add(ident)
                    return ident

        fields = sorted(FIELDS)
        for name in rng.sample(names, N_AUTHORS):
            first, last = name.split(" ")
            org = rng.choice(AFFILIATIONS)
            authors.append(
                {
                    "author_id": new_id(),
                    "name": name,
                    "affiliation": f"Professor, {org}" if rng.random() < 0.4 else f"Researcher, {org}",
                    "website": f"https://{first.lower()}{last.lower()}.github.io",
                    "field": rng.choice(fields),
                }
            )
        by_field: dict[str, list[dict[str, Any]]] = {f: [] for f in fields}
        for a in authors:
            by_field[a["field"]].append(a)
        papers: list[dict[str, Any]] = []
        links: list[dict[str, Any]] = []
        titles: set[str] = set()
        while len(papers) < N_PAPERS:
            lead = rng.choice(authors)
            paper = make_paper(rng, lead["field"])
            if paper.title in titles:
                continue
            titles.add(paper.title)
            peers = [a for a in by_field[lead["field"]] if a is not lead]
            team = [lead, *rng.sample(peers, min(len(peers), rng.randint(0, 3)))]
            year = clock.year - min(18, int(rng.expovariate(1 / 5)))
            first_page = rng.randint(1, 900)
            organic_id = new_id()
            papers.append(
                {
                    "organic_id": organic_id,
                    "title": paper.title,
                    "snippet": paper.summary,
                    "venue": rng.choice(VENUES),
                    "volume": max(1, year - 1980 + rng.randint(0, 20)),
                    "pages": f"{first_page}-{first_page + rng.randint(6, 30)}",
                    "year": year,
                    # older papers had longer to collect citations; a heavy tail makes a few famous
                    "cited_by": int(rng.paretovariate(1.2) * (clock.year - year + 1) * 4),
                }
            )
            links.extend(
                {"organic_id": organic_id, "position": i, "author_id": a["author_id"]}
                for i, a in enumerate(team)
            )
        insert_rows(db, "teval_scholar_authors", authors)
        insert_rows(db, "teval_scholar_papers", papers)
        insert_rows(db, "teval_scholar_authorship", links)

    # ---- helpers --------------------------------------------------------------------------------
    def _authors_of(self, organic_id: str) -> list[str]:
        rows = self.rows(
            "SELECT a.name FROM teval_scholar_authorship s JOIN teval_scholar_authors a USING (author_id)"
            " WHERE s.organic_id = ? ORDER BY s.position",
            (organic_id,),
        )
        return [r["name"] for r in rows]

    def _visible_papers(self) -> list[dict[str, Any]]:
        return self.rows(
            "SELECT p.*, group_concat(a.name, ', ') AS author_names FROM teval_scholar_papers p"
            " JOIN teval_scholar_authorship s USING (organic_id) JOIN teval_scholar_authors a USING (author_id)"
            " WHERE p.year <= ? GROUP BY p.organic_id",
            (self.now().year,),
        )

    # ---- APIs -----------------------------------------------------------------------------------
    @read
    def search_google_scholar(self, query: Annotated[str, Param("search query content")]) -> dict[str, Any]:
        """Search for scholarly articles on Google Scholar (the 5 best matches)"""
        terms = words(query)
        if not terms:
            raise bad_request("query must contain at least one word")
        scored = []
        for p in self._visible_papers():
            score = 3 * word_hits(terms, p["title"]) + 2 * word_hits(terms, p["author_names"])
            score += word_hits(terms, p["snippet"])
            if score:
                scored.append((score, p["cited_by"], p["organic_id"], p))
        scored.sort(key=lambda s: (-s[0], -s[1], s[2]))
        top = [s[3] for s in scored[:MAX_RESULTS]]
        return ok(
            title=[p["title"] for p in top],
            cited_by=[p["cited_by"] for p in top],
            organic_id=[p["organic_id"] for p in top],
            snipets=[p["snippet"] for p in top],
            pub_info=[
                f"{', '.join(_initials(n) for n in self._authors_of(p['organic_id']))} - {p['venue']}, {p['year']}"
                for p in top
            ],
        )

    @read
    def get_author_information(
        self, author_id: Annotated[str, Param("unique ID of the author")]
    ) -> dict[str, Any]:
        """Search for an author's information by author's id provided by get_author_id."""
        author = self.get_or_404("teval_scholar_authors", "author_id", author_id.strip(), what="author")
        articles = self.rows(
            "SELECT p.title, p.venue, p.year, p.cited_by FROM teval_scholar_papers p"
            " JOIN teval_scholar_authorship s USING (organic_id)"
            " WHERE s.author_id = ? AND p.year <= ? ORDER BY p.cited_by DESC, p.organic_id LIMIT 3",
            (author["author_id"], self.now().year),
        )
        return ok(
            name=author["name"],
            affliation=author["affiliation"],
            articles=[
                {"title": a["title"], "publication": f"{a['venue']}, {a['year']}", "cited_by": a["cited_by"]}
                for a in articles
            ],
            website=author["website"],
        )

    @read
    def get_citation_format(
        self, q: Annotated[str, Param("ID of an individual Google Scholar organic search result")]
    ) -> dict[str, Any]:
        """get MLA citation format by an identification of organic result's id"""
        p = self.get_or_404("teval_scholar_papers", "organic_id", q.strip(), what="organic result")
        return ok(
            citation=mla(
                self._authors_of(p["organic_id"]), p["title"], p["venue"], p["volume"], p["year"], p["pages"]
            )
        )

    @read
    def get_author_id(self, mauthors: Annotated[str, Param("the name of the author")]) -> dict[str, Any]:
        """The getAuthorId function is used to get the author's id by his or her name."""
        wanted = norm(mauthors)
        if not wanted:
            raise bad_request("mauthors must name an author")
        rows = self.rows(
            "SELECT a.author_id, a.name, coalesce(sum(p.cited_by), 0) AS citations FROM teval_scholar_authors a"
            " LEFT JOIN teval_scholar_authorship s USING (author_id)"
            " LEFT JOIN teval_scholar_papers p USING (organic_id) GROUP BY a.author_id"
            " ORDER BY citations DESC, a.author_id"
        )
        exact = [r for r in rows if r["name"].lower() == wanted]
        parts = wanted.replace(",", " ").replace(".", " ").split()

        def fits(name: str) -> bool:
            # every given word is a word of the name, or the initial of one ("A Zhang")
            have = name.lower().split()
            return all(p in have or (len(p) == 1 and any(h[0] == p for h in have)) for p in parts)

        loose = [r for r in rows if fits(r["name"])]
        found = next(iter(exact or loose), None)
        if found is None:
            raise not_found("author", mauthors)
        return ok(author_id=found["author_id"])
