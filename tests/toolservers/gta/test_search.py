"""GoogleSearch: BM25 ranking over the bundled corpus, the AgentLego output layout, bad input, and
the Serper backend against a real HTTP server on 127.0.0.1 that speaks Serper's JSON."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from scripts import make_corpus
from toolgym.actions import ToolCall
from toolgym.errors import ErrorKind
from toolgym.files import FileStore
from toolgym.tools import ToolContext, ToolSet
from toolgym.toolservers.gta.config import ModelConfig
from toolgym.toolservers.gta.search import (
    DEFAULT_CORPUS,
    NO_RESULT,
    BM25Index,
    OfflineSearch,
    Passage,
    load_corpus,
    make_google_search_tool,
    parse_serper,
    snippet,
    tokenize,
)

RESULT = re.compile(r"^(\d+) - (.+?): \((toolgym://corpus/[a-z0-9-]+)\) (.+)$")


@pytest.fixture(scope="module")
def search() -> ToolSet:
    return ToolSet([make_google_search_tool(ModelConfig())])


def run(toolset: ToolSet, **arguments: Any) -> Any:
    return toolset.call(ToolCall(name="GoogleSearch", arguments=arguments), ToolContext(files=FileStore()))


def titles(text: str) -> list[str]:
    out = []
    for block in text.split("\n\n"):
        m = RESULT.match(block)
        assert m, f"not in AgentLego's layout: {block!r}"
        out.append(m.group(2))
    return out


@pytest.mark.parametrize(
    ("query", "top", "fact"),
    [
        ("capital of Australia", "Australia", "Canberra"),
        ("What is the tallest building in the world?", "Burj Khalifa", "828 metres"),
        ("who discovered penicillin", "Alexander Fleming", "1928"),
        ("how many bones does an adult human have", "Human skeleton", "206"),
        ("currency of Japan", "Japan", "yen"),
        ("When did the Titanic sink?", "Titanic", "15 April 1912"),
        ("atomic number of gold", "Gold", "79"),
        ("which planet has rings", "Saturn", "rings"),
        ("Eiffel Tower height", "Eiffel Tower", "330 metres"),
        ("first person to walk on the moon", "Apollo 11", "Neil Armstrong"),
    ],
)
def test_bm25_puts_the_answering_passage_first(search: ToolSet, query: str, top: str, fact: str) -> None:
    obs = run(search, query=query, k=3)
    assert obs.error is None
    found = titles(obs.text)
    assert found[0] == top
    assert fact in obs.text.split("\n\n")[0]
    assert 1 <= len(found) <= 3  # only passages sharing a word with the query are results


def test_k_limits_the_results_and_numbering_starts_at_one(search: ToolSet) -> None:
    obs = run(search, query="river in Europe")
    numbers = [int(RESULT.match(b).group(1)) for b in obs.text.split("\n\n")]  # type: ignore[union-attr]
    assert numbers == list(range(1, 11))  # GTA's default k is 10
    one = run(search, query="river in Europe", k=1)
    assert one.text == obs.text.split("\n\n")[0]


def test_same_query_same_page_and_stop_words_alone_find_nothing(search: ToolSet) -> None:
    assert run(search, query="largest lake", k=5).text == run(search, query="largest lake", k=5).text
    assert run(search, query="the of and what is", k=5).text == NO_RESULT
    assert run(search, query="qwertyuiop zxcvbnm", k=5).text == NO_RESULT


@pytest.mark.parametrize(
    ("arguments", "kind", "needle"),
    [
        ({"query": "   "}, ErrorKind.TOOL_ERROR, "empty"),
        ({"query": "x" * 1001}, ErrorKind.TOOL_ERROR, "too long"),
        ({"query": "moon", "k": 0}, ErrorKind.TOOL_ERROR, "between 1 and 50"),
        ({"query": "moon", "k": 51}, ErrorKind.TOOL_ERROR, "between 1 and 50"),
        ({"query": "moon", "k": "many"}, ErrorKind.ARGUMENT_ERROR, "k"),
        ({"k": 3}, ErrorKind.ARGUMENT_ERROR, "query"),
        ({"query": "moon", "lang": "en"}, ErrorKind.ARGUMENT_ERROR, "lang"),
    ],
)
def test_bad_arguments_are_typed_errors(
    search: ToolSet, arguments: dict[str, Any], kind: ErrorKind, needle: str
) -> None:
    obs = run(search, **arguments)
    assert obs.error is not None and obs.error.kind == kind
    assert needle in obs.error.message


def test_bm25_scores_follow_term_frequency_and_rarity() -> None:
    passages = [
        Passage("a", "Apples", "apple apple apple pie", ""),
        Passage("b", "Pie", "apple pie with cream", ""),
        Passage("c", "Cream", "cream and sugar", ""),
    ]
    index = BM25Index(passages)
    ranked = [p.id for p, _ in index.search("apple", 3)]
    assert ranked == ["a", "b"]  # c has no apple; a has more of it
    scores = dict((p.id, s) for p, s in index.search("cream sugar", 3))
    assert scores["c"] > scores["b"] > 0  # sugar is rare: only c has it
    assert tokenize("The Moons of Countries") == ["moon", "country"]


def test_snippet_keeps_short_text_and_picks_matching_sentences() -> None:
    assert snippet("Short text.", "anything") == "Short text."
    text = " ".join(f"Sentence number {i} is filler." for i in range(20)) + " The answer is forty-two."
    out = snippet(text, "what is the answer", limit=80)
    assert "answer is forty-two" in out and len(out) <= 80


def test_bundled_corpus_is_what_the_generator_writes() -> None:
    rows = [json.loads(line) for line in DEFAULT_CORPUS.read_text(encoding="utf-8").splitlines()]
    assert rows == make_corpus.passages()
    assert len(rows) >= 250
    assert len({r["id"] for r in rows}) == len(rows)
    assert all(r["url"] == f"toolgym://corpus/{r['id']}" for r in rows)


def test_custom_corpus_and_broken_corpora(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        json.dumps(
            {"id": "x1", "title": "Widget", "text": "A widget costs 3 dollars.", "url": "https://w.example/1"}
        )
        + "\n",
        encoding="utf-8",
    )
    tools = ToolSet([make_google_search_tool(ModelConfig(search_corpus=corpus))])
    assert (
        run(tools, query="widget price").text == "1 - Widget: (https://w.example/1) A widget costs 3 dollars."
    )

    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "x", "title": "no text"}\n', encoding="utf-8")
    obs = run(ToolSet([make_google_search_tool(ModelConfig(search_corpus=broken))]), query="x")
    assert obs.error is not None and obs.error.kind == ErrorKind.TOOL_ERROR
    assert "broken.jsonl:1" in obs.error.message
    with pytest.raises(Exception, match="not found"):
        load_corpus(tmp_path / "missing.jsonl")
    missing = OfflineSearch(tmp_path / "missing.jsonl")
    assert not missing.usable() and "TOOLGYM_SEARCH_CORPUS" in (missing.problem() or "")


# ---- Serper -------------------------------------------------------------------------------------
class FakeSerper(BaseHTTPRequestHandler):
    """Serper's /search endpoint: checks the key, records the request, answers the set payload."""

    requests: ClassVar[list[dict[str, Any]]] = []
    status: ClassVar[int] = 200
    payload: ClassVar[Any] = {}

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        FakeSerper.requests.append(
            {"path": self.path, "key": self.headers.get("X-API-KEY"), "body": json.loads(body)}
        )
        if self.headers.get("X-API-KEY") != "k-123":
            self._send(403, {"message": "Unauthorized."})
        else:
            self._send(FakeSerper.status, FakeSerper.payload)

    def _send(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode() if not isinstance(payload, bytes) else payload
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def serper() -> Iterator[str]:
    FakeSerper.requests.clear()
    FakeSerper.status = 200
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeSerper)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


SERPER_PAYLOAD = {
    "answerBox": {"answer": "Canberra"},
    "knowledgeGraph": {
        "title": "Canberra",
        "type": "Capital of Australia",
        "description": "Canberra is the capital city of Australia.",
        "attributes": {"Population": "about 470,000"},
    },
    "organic": [
        {
            "title": "Canberra - Wikipedia",
            "link": "https://en.wikipedia.org/wiki/Canberra",
            "snippet": "Canberra is the capital.",
        },
        {"title": "Visit Canberra", "link": "https://visitcanberra.com.au", "snippet": "Things to do."},
        {"title": "Third", "link": "https://third.example", "snippet": "Not wanted with k=2."},
    ],
}


def serper_tools(url: str, key: str | None = "k-123") -> ToolSet:
    config = ModelConfig.from_env(
        {"TOOLGYM_SEARCH_BACKEND": "serper", "SERPER_API_KEY": key or "", "TOOLGYM_SERPER_URL": url}
    )
    return ToolSet([make_google_search_tool(config)])


def test_serper_request_and_answer_layout(serper: str) -> None:
    FakeSerper.payload = SERPER_PAYLOAD
    obs = run(serper_tools(serper), query="capital of australia", k=2)
    assert obs.error is None
    assert FakeSerper.requests == [
        {"path": "/search", "key": "k-123", "body": {"q": "capital of australia", "num": 2}}
    ]
    assert obs.text.split("\n\n") == [
        "1 - Answer box: Canberra",
        "2 - Canberra knowledge graph: Capital of Australia. Canberra is the capital city of Australia."
        "(Population: about 470,000)",
        "3 - Canberra - Wikipedia: (https://en.wikipedia.org/wiki/Canberra) Canberra is the capital.",
        "4 - Visit Canberra: (https://visitcanberra.com.au) Things to do.",
    ]


def test_serper_failures_are_infra_errors_not_the_agents(serper: str) -> None:
    obs = run(serper_tools(serper, key="wrong"), query="q")
    assert obs.error is not None and obs.error.kind == ErrorKind.INFRA_ERROR and "403" in obs.error.message
    FakeSerper.status = 500
    FakeSerper.payload = {"message": "boom"}
    obs = run(serper_tools(serper), query="q")
    assert obs.error is not None and obs.error.kind == ErrorKind.INFRA_ERROR and "500" in obs.error.message
    FakeSerper.status = 200
    FakeSerper.payload = b"<html>not json</html>"
    obs = run(serper_tools(serper), query="q")
    assert (
        obs.error is not None and obs.error.kind == ErrorKind.INFRA_ERROR and "not JSON" in obs.error.message
    )
    # nothing listens on port 9 of the loopback: connection refused
    obs = run(serper_tools("http://127.0.0.1:9"), query="q")
    assert obs.error is not None and obs.error.kind == ErrorKind.INFRA_ERROR


def test_serper_needs_a_key_and_is_never_chosen_by_a_key_alone() -> None:
    obs = run(serper_tools("http://127.0.0.1:9", key=None), query="q")
    assert obs.error is not None and obs.error.kind == ErrorKind.TOOL_ERROR
    assert "SERPER_API_KEY" in obs.error.message
    only_key = make_google_search_tool(ModelConfig.from_env({"SERPER_API_KEY": "k-123"}))
    assert only_key.backend == "offline"


def test_parse_serper_tolerates_missing_and_odd_fields() -> None:
    assert parse_serper({}, 5) == NO_RESULT
    out = parse_serper({"organic": [{"title": "T"}, "junk", {"snippet": "s", "attributes": {"a": 1}}]}, 5)
    assert out == "1 - T:\n\n2 - s (a: 1)"
