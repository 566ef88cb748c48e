"""Offline sentence embeddings: the bundled all-MiniLM-L6-v2, and a clear error for a model that
is not on this machine (nothing is downloaded)."""

from __future__ import annotations

import pytest

from toolgym.evaluation.metrics.similarity import (
    ModelUnavailableError,
    SentenceEmbedder,
    cosine_blocks,
    cosine_matrix,
    get_embedder,
    max_similarity,
    pair_similarities,
)

pytest.importorskip("sentence_transformers", reason="embeddings need the ml extra")


def test_bundled_model_ranks_paraphrases_first() -> None:
    embedder = get_embedder()
    assert embedder.name == "all-MiniLM-L6-v2" and get_embedder() is embedder
    sims = cosine_matrix(
        embedder, ["a cat sleeping on a sofa"], ["a kitten asleep on a couch", "stock prices fell"]
    )
    assert sims.shape == (1, 2) and sims[0, 0] > 0.6 > sims[0, 1] >= 0.0
    assert pair_similarities(embedder, ["same text"], ["same text"]) == [pytest.approx(1.0, abs=1e-6)]
    assert max_similarity(embedder, "an orange cat", ["a ginger cat", "a truck"]) > 0.6
    assert max_similarity(embedder, "x", []) == 0.0
    names, args = cosine_blocks(embedder, [(["a", "b"], ["a"]), (["c"], [])])
    assert names.shape == (2, 1) and args.shape == (1, 0)
    with pytest.raises(ValueError):
        pair_similarities(embedder, ["a"], [])


def test_missing_model_is_an_error_naming_what_provides_it() -> None:
    with pytest.raises(ModelUnavailableError, match=r"toolgym\[ml\]"):
        SentenceEmbedder("no-such-org/no-such-model-for-toolgym")
