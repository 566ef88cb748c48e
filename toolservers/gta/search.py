"""GTA's GoogleSearch over two backends: an offline BM25 engine on a bundled corpus, and Serper.

The offline engine ranks the passages of `toolgym/fixtures/search_corpus/passages.jsonl` (a few
hundred encyclopedic passages written for toolgym: countries, elements, landmarks, science,
units, ...) with Okapi BM25 (k1=1.5, b=0.75) over lower-cased word tokens with English stop words
removed and a light plural folding; the title counts twice. Ties are broken by passage id, so a
query always gives the same page. A corpus of your own (same JSONL fields: id, title, text, url)
is set with TOOLGYM_SEARCH_CORPUS.

Serper (https://serper.dev) is used when TOOLGYM_SEARCH_BACKEND=serper and SERPER_API_KEY is set.

Both answer in AgentLego's GoogleSearch layout (answer box, knowledge graph, then organic results),
`1 - Title: (link) snippet`, one result per paragraph.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import toolgym.fixtures
from toolgym.errors import ToolError
from toolgym.tools import Param, Tool, tool

from .backends import Backend, Lazy, post_json_api
from .config import ModelConfig

DESCRIPTION = "The tool can search the input query text from Google and return the related results."
NO_RESULT = "No good Google Search Result was found"
MAX_K = 50
MAX_QUERY_CHARS = 1000
SNIPPET_CHARS = 300
DEFAULT_CORPUS = Path(toolgym.fixtures.__file__).resolve().parent / "search_corpus" / "passages.jsonl"

_STOP_WORDS_TEXT = """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves"""
_STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())
_TOKEN = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*")


def _fold(word: str) -> str:
    """Light plural folding so that 'moons' finds 'moon' and 'countries' finds 'country'."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    return [_fold(t) for t in _TOKEN.findall(text.lower()) if t not in _STOP_WORDS]


@dataclass(frozen=True)
class Passage:
    id: str
    title: str
    text: str
    url: str


@dataclass(frozen=True)
class SearchResult:
    title: str
    snippet: str
    link: str
    score: float = 0.0


class CorpusError(ToolError):
    """The search corpus file is missing or malformed."""


def load_corpus(path: Path) -> list[Passage]:
    if not path.is_file():
        raise CorpusError(f"search corpus not found: {path} (set TOOLGYM_SEARCH_CORPUS to a JSONL file)")
    passages = []
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                passages.append(
                    Passage(str(row["id"]), str(row["title"]), str(row["text"]), str(row.get("url", "")))
                )
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise CorpusError(
                    f"{path}:{lineno}: a passage needs JSON fields id, title, text ({exc})"
                ) from None
    if not passages:
        raise CorpusError(f"search corpus {path} has no passages")
    return passages


class BM25Index:
    """Okapi BM25 over passages (title tokens counted twice, since titles name the subject)."""

    def __init__(self, passages: list[Passage], *, k1: float = 1.5, b: float = 0.75) -> None:
        self.passages = passages
        self.k1 = k1
        self.b = b
        self._tf: list[Counter[str]] = []
        df: Counter[str] = Counter()
        for p in passages:
            tokens = tokenize(p.title) * 2 + tokenize(p.text)
            tf = Counter(tokens)
            self._tf.append(tf)
            df.update(tf.keys())
        self._len = [sum(tf.values()) for tf in self._tf]
        self._avg = sum(self._len) / max(len(self._len), 1)
        n = len(passages)
        # the BM25+ style floor keeps idf positive for terms in more than half the passages
        self._idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}

    def scores(self, query: str) -> list[tuple[float, int]]:
        terms = tokenize(query)
        out = []
        for i, tf in enumerate(self._tf):
            score = 0.0
            norm = self.k1 * (1 - self.b + self.b * self._len[i] / self._avg)
            for t in terms:
                f = tf.get(t, 0)
                if f:
                    score += self._idf[t] * f * (self.k1 + 1) / (f + norm)
            if score > 0:
                out.append((score, i))
        return out

    def search(self, query: str, k: int) -> list[tuple[Passage, float]]:
        ranked = sorted(self.scores(query), key=lambda s: (-s[0], self.passages[s[1]].id))
        return [(self.passages[i], score) for score, i in ranked[:k]]


def snippet(text: str, query: str, limit: int = SNIPPET_CHARS) -> str:
    """The passage itself when short; else its sentences that share most words with the query."""
    if len(text) <= limit:
        return text
    terms = set(tokenize(query))
    sentences = re.split(r"(?<=[.!?])\s+", text)
    ranked = sorted(range(len(sentences)), key=lambda i: (-len(terms & set(tokenize(sentences[i]))), i))
    chosen: list[int] = []
    total = 0
    for i in ranked:
        if total + len(sentences[i]) + 1 > limit and chosen:
            break
        chosen.append(i)
        total += len(sentences[i]) + 1
    out = " ".join(sentences[i] for i in sorted(chosen))
    return out if len(out) <= limit else out[: limit - 3].rstrip() + "..."


def format_results(results: list[SearchResult], *, extras: list[str] | None = None) -> str:
    """AgentLego's layout: one numbered paragraph per item, `N - Title: (link) snippet`."""
    items = list(extras or [])
    for r in results:
        head = f"{r.title}: " if r.title else ""
        link = f"({r.link}) " if r.link else ""
        items.append(f"{head}{link}{r.snippet}")
    if not items:
        return NO_RESULT
    return "\n\n".join(f"{i} - {' '.join(item.split())}" for i, item in enumerate(items, 1))


# ---- backends ---------------------------------------------------------------------------------------
class OfflineSearch(Backend):
    """BM25 over the bundled (or configured) corpus; deterministic."""

    name = "offline"
    tool = "GoogleSearch"

    def __init__(self, corpus: Path | None = None) -> None:
        self.corpus = corpus or DEFAULT_CORPUS
        self._index: Lazy[BM25Index] = Lazy(lambda: BM25Index(load_corpus(self.corpus)))

    def problem(self) -> str | None:
        if not self.corpus.is_file():
            return f"search corpus not found: {self.corpus} (set TOOLGYM_SEARCH_CORPUS to a JSONL file)"
        return None

    def describe(self) -> str:
        return f"BM25 over {self.corpus.name}" + (
            "" if self.corpus == DEFAULT_CORPUS else f" ({self.corpus})"
        )

    def search(self, query: str, k: int) -> str:
        index = self._index.get()
        hits = index.search(query, k)
        return format_results(
            [SearchResult(p.title, snippet(p.text, query), p.url, round(s, 4)) for p, s in hits]
        )


class SerperSearch(Backend):
    """Google results through the Serper API (needs SERPER_API_KEY and network access)."""

    name = "serper"
    tool = "GoogleSearch"

    def __init__(
        self, api_key: str | None, url: str = "https://google.serper.dev", timeout_s: float = 30.0
    ) -> None:
        self.api_key = api_key
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s

    def problem(self) -> str | None:
        if not self.api_key:
            return "no API key: set SERPER_API_KEY (and TOOLGYM_SEARCH_BACKEND=serper to use it)"
        return None

    def describe(self) -> str:
        return f"Serper API at {self.url} (key set)"

    def search(self, query: str, k: int) -> str:
        self.require()
        payload = post_json_api(
            "Serper",
            f"{self.url}/search",
            self.timeout_s,
            json={"q": query, "num": k},
            headers={"X-API-KEY": self.api_key or "", "Content-Type": "application/json"},
        )
        return parse_serper(payload, k)


def parse_serper(payload: Mapping[str, Any], k: int) -> str:
    """Serper's JSON to AgentLego's text: answer box, knowledge graph, then the organic results."""
    extras: list[str] = []
    box = payload.get("answerBox")
    if isinstance(box, Mapping) and box:
        answer = box.get("answer") or box.get("snippet") or box.get("snippetHighlighted") or ""
        if isinstance(answer, list):
            answer = " ".join(map(str, answer))
        extras.append(f"Answer box: {answer}")
    kg = payload.get("knowledgeGraph")
    if isinstance(kg, Mapping) and kg:
        content = f"{kg['title']} knowledge graph: " if kg.get("title") else "Knowledge graph: "
        if kg.get("type"):
            content += f"{kg['type']}. "
        if kg.get("description"):
            content += str(kg["description"])
        attributes = kg.get("attributes")
        if isinstance(attributes, Mapping) and attributes:
            content += "(" + ", ".join(f"{a}: {v}" for a, v in attributes.items()) + ")"
        extras.append(content)
    results = []
    organic = payload.get("organic")
    for item in organic[:k] if isinstance(organic, list) else []:
        if not isinstance(item, Mapping):
            continue
        text = str(item.get("snippet", ""))
        attributes = item.get("attributes")
        if isinstance(attributes, Mapping) and attributes:
            text += " (" + ", ".join(f"{a}: {v}" for a, v in attributes.items()) + ")"
        results.append(SearchResult(str(item.get("title", "")), text, str(item.get("link", ""))))
    return format_results(results, extras=extras)


SearchBackend = OfflineSearch | SerperSearch


def search_backends(config: ModelConfig) -> list[SearchBackend]:
    return [
        OfflineSearch(config.search_corpus),
        SerperSearch(config.serper_api_key, config.serper_url, config.http_timeout_s),
    ]


def make_google_search_tool(config: ModelConfig | None = None) -> Tool:
    """GTA's GoogleSearch over the backend that TOOLGYM_SEARCH_BACKEND selects (default: offline)."""
    cfg = config or ModelConfig()
    backends = {b.name: b for b in search_backends(cfg)}
    engine = backends[cfg.search_backend]

    @tool(name="GoogleSearch", category="operation", description=DESCRIPTION, backend=engine.name)
    def google_search(query: str, k: Annotated[int, Param("Select the first k results")] = 10) -> str:
        if not query.strip():
            raise ToolError("the query is empty")
        if len(query) > MAX_QUERY_CHARS:
            raise ToolError(f"the query is too long ({len(query)} characters; at most {MAX_QUERY_CHARS})")
        if not 1 <= k <= MAX_K:
            raise ToolError(f"k must be between 1 and {MAX_K}, got {k}")
        engine.require()
        return engine.search(query, k)

    return google_search
