"""The keys and values of a prompt's start, kept from one turn for the next.

An agent's turn k+1 is sent everything turn k was, plus the reply and what came back: on a CPU,
the prefill of the whole prompt is most of a turn (SmolLM2-135M on one AVX2 core: ~20 s for a
3,000-token prompt, against ~2 s for 16 new tokens), and all but its last few hundred tokens were
computed the turn before. `PrefixStore` keeps them.

A kept prefix must give the logits a cold turn gives, bit for bit: a trace may not depend on which
turn ran first, or on what else a served model answered in between. Attention and matrix products
over 3,000 positions at once do not round the way they do over 256 at a time, so a prompt is never
prefilled at once: positions [0, B) go through the model in chunks of CHUNK, whose boundaries are
fixed multiples of CHUNK (B is the last boundary before the prompt's last token), and `generate`
prefills [B, end) and decodes as before. A cold turn computes every chunk; a warm one takes the
chunks of the longest kept prefix it shares and computes the rest: the same operations on the
same values, only fewer of them done now. The threads torch uses are part of the key (another
count can round otherwise), and a model with other kinds of layer than full attention (sliding
windows: a cut prefix is not theirs to keep) is prefilled at once, never kept.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from toolgym.models.kv_cache import GrowingLayer, growing_cache

if TYPE_CHECKING:
    import torch
    from transformers.cache_utils import DynamicCache

CHUNK = 256  # positions per prefill chunk: what a warm turn may recompute of the shared part
KEPT_PROMPTS = 4  # prompts kept per model: an episode's latest, and some for interleaved ones


class PrefixStore:
    """A model's kept prompt prefixes (keys and values per layer), the latest `capacity` prompts."""

    def __init__(self, capacity: int = KEPT_PROMPTS) -> None:
        self.capacity = capacity
        self._kept: OrderedDict[tuple[int, ...], list[tuple[torch.Tensor, torch.Tensor]]] = OrderedDict()
        self._threads: int | None = None
        self.reused = 0  # positions taken from kept prefixes, over the store's life (for benchmarks)
        self.computed = 0  # positions prefilled in chunks

    def prefilled(self, model: Any, prompt_ids: Sequence[int], threads: int) -> DynamicCache:
        """A cache for `generate` holding the prompt's chunked part: the longest kept prefix it
        shares, then the chunks computed now. `generate`, given it, prefills the rest."""
        import torch

        if threads != self._threads:  # another thread count may round otherwise: start over
            self._kept.clear()
            self._threads = threads
        cache = growing_cache(model.config)
        boundary = self._chunked(model, prompt_ids)
        if not boundary:
            return cache
        start = self._restore(prompt_ids, boundary, cache)
        for begin in range(start, boundary, CHUNK):
            ids = torch.tensor([list(prompt_ids[begin : begin + CHUNK])])
            model(
                input_ids=ids,
                position_ids=torch.arange(begin, begin + CHUNK).unsqueeze(0),
                cache=cache,
                use_cache=True,
                logits_to_keep=1,  # the logits of a chunk are nobody's: the LM head once, not 256 times
            )
        self.reused += start
        self.computed += boundary - start
        return cache

    def keep(self, model: Any, prompt_ids: Sequence[int], cache: DynamicCache) -> None:
        """After a generation: the chunked part of its prompt kept (copies), the oldest dropped.
        Only what `prefilled` chunked: a prompt prefilled at once must never be taken for chunks."""
        boundary = self._chunked(model, prompt_ids)
        layers = [layer for layer in cache.layers if isinstance(layer, GrowingLayer)]
        if not boundary or not layers or len(layers) != len(cache.layers):
            return
        kept: list[tuple[torch.Tensor, torch.Tensor]] = []
        for layer in layers:
            keys, values = layer.keys, layer.values
            assert keys is not None and values is not None  # written by the generation
            kept.append((keys[..., :boundary, :].clone(), values[..., :boundary, :].clone()))
        key = tuple(prompt_ids[:boundary])
        self._kept.pop(key, None)
        self._kept[key] = kept
        while len(self._kept) > self.capacity:
            self._kept.popitem(last=False)

    def _chunked(self, model: Any, prompt_ids: Sequence[int]) -> int:
        """Where the prompt's chunks end (0: the prompt is prefilled at once, nothing kept): the one
        decision `prefilled` and `keep` share."""
        if not self.capacity or not _all_full_attention(model.config):
            return 0
        return chunked_part(len(prompt_ids))

    def _restore(self, prompt_ids: Sequence[int], boundary: int, cache: DynamicCache) -> int:
        """The longest kept prefix (in whole chunks, within `boundary`) written into `cache`;
        the positions it covers (0: none)."""
        best_key, best = None, 0
        for key in self._kept:
            shared = shared_chunks(key, prompt_ids, boundary)
            if shared > best:
                best_key, best = key, shared
        if best_key is None:
            return 0
        self._kept.move_to_end(best_key)
        for index, (keys, values) in enumerate(self._kept[best_key]):
            cache.update(keys[..., :best, :], values[..., :best, :], index)
        return best

    def clear(self) -> None:
        self._kept.clear()


def chunked_part(length: int) -> int:
    """How much of a `length`-token prompt is prefilled in chunks: the whole chunks before its last
    token (`generate` is left at least that one, whose logits start the reply)."""
    return max(length - 1, 0) // CHUNK * CHUNK


def shared_chunks(kept: Sequence[int], prompt_ids: Sequence[int], boundary: int) -> int:
    """The positions, in whole chunks and within `boundary`, where `kept` and the prompt agree."""
    shared, limit = 0, min(len(kept), boundary)
    while shared + CHUNK <= limit and list(kept[shared : shared + CHUNK]) == list(
        prompt_ids[shared : shared + CHUNK]
    ):
        shared += CHUNK
    return shared


def _all_full_attention(config: Any) -> bool:
    """Whether every layer of the model attends to every earlier position (no sliding window, no
    state of another kind): the caches whose cut prefix is a prefix's cache."""
    types = getattr(config, "layer_types", None)
    if types is not None:
        return all(kind == "full_attention" for kind in types)
    return getattr(config, "sliding_window", None) is None
