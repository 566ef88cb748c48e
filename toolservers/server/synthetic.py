"""A synthetic batchable backend: a seeded random MLP that embeds text.

It exists to measure and test batching, not to embed meaningfully. It behaves like a real model
at small batch sizes: a call streams every weight matrix through the CPU once (about 24 MB), so
one text costs nearly as much as sixteen, and batching pays off the way it does for a model on
a GPU. Output is deterministic: the same text gives the same vector, alone or in a batch (up to
float rounding, so vectors are rounded to 5 decimals).
"""

from __future__ import annotations

import hashlib
import threading
from typing import Annotated, cast

import numpy as np

from toolgym.errors import ToolError
from toolgym.tools import Param, tool

from .batching import BatchedTool

MAX_TEXT_CHARS = 10_000


class SyntheticEmbedder:
    """`layers` dense layers of `width` x `width` float32 weights (seeded), ReLU between them,
    then a projection to `dim` and L2 normalisation. Input: hashed word counts."""

    name = "synthetic-mlp"

    def __init__(self, width: int = 1024, layers: int = 6, dim: int = 32, seed: int = 0) -> None:
        self.width, self.layers, self.dim, self.seed = width, layers, dim, seed
        self._weights: list[np.ndarray] | None = None
        self._lock = threading.Lock()

    def load(self) -> None:
        with self._lock:
            if self._weights is None:
                rng = np.random.default_rng(self.seed)
                scale = np.float32(np.sqrt(2.0 / self.width))
                weights = [
                    (rng.standard_normal((self.width, self.width), dtype=np.float32) * scale)
                    for _ in range(self.layers)
                ]
                weights.append(rng.standard_normal((self.width, self.dim), dtype=np.float32) * scale)
                self._weights = weights

    @property
    def loaded(self) -> bool:
        return self._weights is not None

    def features(self, text: str) -> np.ndarray:
        x = np.zeros(self.width, dtype=np.float32)
        for word in text.lower().split():
            digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
            h = int.from_bytes(digest, "little")
            x[h % self.width] += 1.0 if (h >> 63) & 1 else -1.0
        return x

    def embed(self, texts: list[str]) -> np.ndarray:
        """One row per text; a batch runs each layer as one matrix product."""
        self.load()
        assert self._weights is not None
        x = np.stack([self.features(t) for t in texts]) if texts else np.zeros((0, self.width), np.float32)
        for w in self._weights[:-1]:
            x = np.maximum(x @ w, 0.0)
        out = x @ self._weights[-1]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.asarray(out / np.where(norms == 0, 1.0, norms))


def make_embed_tool(backend: SyntheticEmbedder | None = None) -> BatchedTool:
    """The `SyntheticEmbed` tool over `backend`, with a batch entry point (the server batches its
    calls when the tool's config has `batch`; otherwise each call is a batch of one)."""
    engine = backend or SyntheticEmbedder()

    @tool(name="SyntheticEmbed", category="operation", backend=engine.name)
    def embed(text: Annotated[str, Param("the text to embed")]) -> list[float]:
        """Embed a text as a unit vector (a synthetic benchmark backend: random weights)."""
        result = run_batch([{"text": text}])[0]
        if isinstance(result, Exception):
            raise result
        return cast(list[float], result)

    def run_batch(calls: list[dict[str, object]]) -> list[object]:
        results: list[object] = [None] * len(calls)
        texts: list[tuple[int, str]] = []
        for i, kwargs in enumerate(calls):
            text = str(kwargs["text"])
            if len(text) > MAX_TEXT_CHARS:
                results[i] = ToolError(f"text of {len(text)} characters exceeds {MAX_TEXT_CHARS}")
            else:
                texts.append((i, text))
        if texts:
            vectors = engine.embed([t for _, t in texts])
            for (i, _), vec in zip(texts, vectors, strict=True):
                results[i] = [round(float(v), 5) for v in vec]
        return results

    return BatchedTool(embed, run_batch)
