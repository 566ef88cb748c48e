"""Tool retrieval, as CToolEval compares it with the gold tools: a retriever ranks the tools a task
could be offered by their descriptions against its query, the episode is offered the top k
(`toolgym run --retriever top10`), and `toolgym eval` scores the rankings with NDCG@k and
recall@k against the task's gold APIs (the tools its golden chain calls), beside the same
numbers for the gold-tools setting (the task's own `tools` list).

Retrievers: `embedding` ranks by cosine similarity with the offline sentence-transformers
embedder of the `ml` extra (all-MiniLM-L6-v2, or the model TOOLGYM_EMBEDDING_MODEL names: a
multilingual model there for Chinese queries), `bm25` by Okapi BM25 over words and, for Chinese
and other unspaced scripts, character unigrams and bigrams. `auto` takes the embedder when it
is installed and BM25 when it is not, and the run records which one ranked.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

from toolgym.actions import ToolCall
from toolgym.evaluation.base import EvaluationError, SuiteResult, mean
from toolgym.files import write_atomically
from toolgym.tasks import Task, TaskSet
from toolgym.tools import ToolSet

RETRIEVAL_FILE: Final = "retrieval.json"  # what `run --retriever` writes into the run directory
KINDS: Final = ("auto", "embedding", "bm25")
REPORTED_K: Final = (1, 3, 5, 10)
_SPEC = re.compile(r"^(?:(?P<kind>[a-z0-9]+):)?top(?P<k>[1-9]\d*)$")
_HAN_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_WORDS = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class RetrieverSpec:
    kind: str
    k: int


def parse_retriever(text: str) -> RetrieverSpec:
    """'top10', 'bm25:top5', 'embedding:top3'; a bad one is a ValueError saying what is allowed."""
    m = _SPEC.match(text.strip().lower())
    if m is None or (m.group("kind") or "auto") not in KINDS:
        raise ValueError(f"expected topK with an optional retriever ({'|'.join(KINDS)}:topK), got {text!r}")
    return RetrieverSpec(m.group("kind") or "auto", int(m.group("k")))


class Retriever(Protocol):
    name: str

    def rank(self, query: str, documents: Sequence[str]) -> list[int]:
        """Document indices, best first (ties keep document order)."""


def tokens(text: str) -> list[str]:
    """Lower-cased words of spaced scripts (snake_case split), and for Han runs every character
    and every pair of neighbouring characters (Chinese has no spaces between words)."""
    norm = unicodedata.normalize("NFKC", text).casefold()
    out: list[str] = []
    for run in _HAN_RUN.findall(norm):
        out.extend(run)
        out.extend(run[i : i + 2] for i in range(len(run) - 1))
    out.extend(w for w in _WORDS.findall(_HAN_RUN.sub(" ", norm)))
    return out


class BM25Retriever:
    """Okapi BM25 (k1 1.5, b 0.75, the non-negative idf log(1 + (N - n + 0.5) / (n + 0.5)))."""

    name = "bm25"

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b

    def rank(self, query: str, documents: Sequence[str]) -> list[int]:
        docs = [Counter(tokens(d)) for d in documents]
        if not docs:
            return []
        avg = mean([sum(d.values()) for d in docs]) or 1.0
        df = Counter(t for d in docs for t in d)
        n = len(docs)
        terms = set(tokens(query))
        scores = []
        for d in docs:
            length = sum(d.values())
            score = 0.0
            for t in terms:
                tf = d.get(t, 0)
                if tf:
                    idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                    score += idf * tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * length / avg))
            scores.append(score)
        return sorted(range(n), key=lambda i: (-scores[i], i))


class EmbeddingRetriever:
    """Cosine similarity of query and descriptions with the configured offline embedder."""

    def __init__(self, model: str | None = None) -> None:
        from toolgym.evaluation.metrics.similarity import get_embedder

        self._embedder = get_embedder(model)  # ModelUnavailableError when ml is not installed
        self.name = f"embedding:{self._embedder.name}"

    def rank(self, query: str, documents: Sequence[str]) -> list[int]:
        if not documents:
            return []
        vectors = self._embedder.encode([query, *documents])
        sims = vectors[1:] @ vectors[0]
        return sorted(range(len(documents)), key=lambda i: (-round(float(sims[i]), 6), i))


def make_retriever(kind: str) -> tuple[Retriever, str | None]:
    """The retriever for a kind, and a note when `auto` fell back to BM25."""
    from toolgym.evaluation.metrics.similarity import INSTALL_HINT, ModelUnavailableError

    if kind == "bm25":
        return BM25Retriever(), None
    try:
        return EmbeddingRetriever(), None
    except ModelUnavailableError as exc:
        if kind == "embedding":
            raise
        return BM25Retriever(), f"no embedding model here ({exc}); ranked with BM25 instead ({INSTALL_HINT})"


def tool_documents(toolset: ToolSet, task: Task) -> dict[str, str]:
    """Name -> text to match for every tool the task's episode could be offered: the run's
    tools and its mock apps' APIs (from the app classes: no world is built)."""
    from toolgym.mocks.app import app_apis
    from toolgym.mocks.apps import get_app

    docs = {t.name: t.description for t in toolset}
    for app in task.apps or []:
        for api in app_apis(get_app(app)):
            docs[api.name] = api.tool.description
    return {name: f"{name.replace('_', ' ')}: {text}" for name, text in docs.items()}


def retrieve(task: Task, toolset: ToolSet, retriever: Retriever) -> list[str]:
    """Every candidate tool of the task, best first for its query."""
    docs = tool_documents(toolset, task)
    names = list(docs)
    return [names[i] for i in retriever.rank(task.query, [docs[n] for n in names])]


def with_retrieved_tools(
    sets: Sequence[tuple[str, TaskSet]], toolset: ToolSet, spec: RetrieverSpec
) -> tuple[list[tuple[str, TaskSet]], dict[str, Any]]:
    """The task sets with each task offered its top k retrieved tools, and the record of the
    rankings (what `RETRIEVAL_FILE` holds)."""
    retriever, note = make_retriever(spec.kind)
    ranked: dict[str, list[str]] = {}
    out = []
    for name, task_set in sets:
        tasks = []
        for task in task_set:
            order = retrieve(task, toolset, retriever)
            ranked[task.id] = order
            tasks.append(task.model_copy(update={"tools": order[: spec.k]}))
        out.append((name, TaskSet(tasks, base_dir=task_set.base_dir)))
    record: dict[str, Any] = {"retriever": retriever.name, "k": spec.k, "ranked": ranked}
    if note:
        record["note"] = note
    return out, record


def write_retrieval(out: Path, record: Mapping[str, Any]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / RETRIEVAL_FILE
    write_atomically(path, json.dumps(record, ensure_ascii=False, indent=1) + "\n")
    return path


# ---- scoring ---------------------------------------------------------------------------------------


def gold_apis(task: Task) -> list[str]:
    """The distinct tools the task's golden chain calls, in order."""
    return list(dict.fromkeys(g.action.name for g in task.golden if isinstance(g.action, ToolCall)))


def ndcg_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Binary-relevance NDCG@k: each gold tool in the top k gains 1 / log2(rank + 1)."""
    wanted = set(gold)
    if not wanted:
        raise ValueError("NDCG needs at least one gold tool")
    dcg = sum(1 / math.log2(i + 2) for i, name in enumerate(ranked[:k]) if name in wanted)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(wanted))))
    return dcg / ideal


def recall_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    wanted = set(gold)
    if not wanted:
        raise ValueError("recall needs at least one gold tool")
    return len(wanted & set(ranked[:k])) / len(wanted)


def score_retrieval(record: Mapping[str, Any], tasks: Mapping[str, Task]) -> SuiteResult:
    """NDCG@k and recall@k of the run's rankings (k = 1, 3, 5, 10 and the run's k) and, beside
    them, of the gold-tools setting (each task's own `tools` list, in its order), over the tasks
    whose golden chain calls a tool."""
    ranked = record.get("ranked")
    k_run = record.get("k")
    if not isinstance(ranked, dict) or not isinstance(k_run, int):
        raise EvaluationError(f"{RETRIEVAL_FILE} needs 'ranked' (task id -> tool names) and 'k'")
    ks = sorted({*REPORTED_K, k_run})
    values: dict[str, list[float]] = {}
    per_task: dict[str, dict[str, float]] = {}
    skipped = 0
    for task_id, order in ranked.items():
        task = tasks.get(task_id)
        gold = gold_apis(task) if task is not None else []
        if task is None or not gold:
            skipped += 1
            continue
        got: dict[str, float] = {}
        for k in ks:
            got[f"NDCG@{k}"] = ndcg_at_k(order, gold, k)
            got[f"Recall@{k}"] = recall_at_k(order, gold, k)
            got[f"gold/NDCG@{k}"] = ndcg_at_k(task.tools or gold, gold, k)
            got[f"gold/Recall@{k}"] = recall_at_k(task.tools or gold, gold, k)
        per_task[task_id] = got
        for key, value in got.items():
            values.setdefault(key, []).append(value)
    if not per_task:
        raise EvaluationError("no ranked task has gold APIs (tool calls in its golden chain)")
    metrics = {key: 100 * mean(v) for key, v in sorted(values.items(), key=lambda kv: _metric_order(kv[0]))}
    notes = [
        f"rankings by {record.get('retriever')}; episodes were offered the top {k_run}",
        "gold/...: the gold-tools setting (each task's own tool list), as CToolEval compares them",
    ]
    if record.get("note"):
        notes.append(str(record["note"]))
    return SuiteResult(
        suite="retrieval",
        mode="fixed",
        metrics=metrics,
        per_task=per_task,
        counts={"tasks": len(per_task), "skipped_without_gold": skipped},
        notes=notes,
    )


def _metric_order(key: str) -> tuple[int, int, str]:
    setting, _, metric = key.rpartition("/")
    name, _, k = metric.partition("@")
    return (1 if setting else 0, int(k), name)


def load_retrieval(directory: Path) -> dict[str, Any] | None:
    path = directory / RETRIEVAL_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise EvaluationError(f"{path}: not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise EvaluationError(f"{path}: expected an object")
    return data
