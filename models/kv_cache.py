"""A key/value cache for generating on CPU that writes each step in place.

transformers' `DynamicLayer` grows its keys and values with `torch.cat` at every generated token:
a copy of the whole cache per token and layer, about a third of a decode step of SmolLM2-135M on
two CPU threads, by torch's profiler, at a 1,000-token prompt). `GrowingLayer` writes the new
positions into a buffer with room to spare and hands attention views of its filled part. The
values attention reads, their shapes and the kernels are the same, so the logits are bit for bit
those of `DynamicLayer` (tests/models/test_kv_cache.py checks it on the real model); only the
copying goes. What that buys a whole turn is small: bench/bench_kv_cache.py, the two caches
interleaved on real react prompts of 700 to 2,400 tokens, measured 1.03-1.04x on one thread and
0.88-1.21x (noise around a small gain) on two (bench/RESULTS.md).

`growing_cache(config)` is the cache to pass to `generate` (`cache=`): transformers'
own `DynamicCache` for the model, with its full-attention layers made growing (sliding-window
and other kinds of layer are kept as transformers makes them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from transformers.cache_utils import DynamicCache, DynamicLayer

if TYPE_CHECKING:
    import torch

SPARE_POSITIONS = 256  # room made beyond what is written: one reallocation per 256 generated tokens


class GrowingLayer(DynamicLayer):  # type: ignore[no-untyped-call]  # transformers' class is untyped
    """`DynamicLayer` whose keys and values are views of buffers written in place. Anything that
    replaces them from outside (a crop, a reset, beam reordering) is noticed at the next update:
    the buffers are then made again from what the layer holds."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]
        self._rooms: tuple[torch.Tensor, torch.Tensor] | None = None

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        keys, values = self.keys, self.values
        assert keys is not None and values is not None  # made by lazy_initialization
        used, added = self.get_seq_length(), int(key_states.shape[-2])
        if self._rooms is None or not self._backs(keys, values, used) or used + added > self._capacity():
            length = used + added + SPARE_POSITIONS
            self._rooms = (_room(keys, key_states, used, length), _room(values, value_states, used, length))
        keys_room, values_room = self._rooms
        keys_room[..., used : used + added, :] = key_states
        values_room[..., used : used + added, :] = value_states
        self.keys = keys_room[..., : used + added, :]
        self.values = values_room[..., : used + added, :]
        return self.keys, self.values

    def _capacity(self) -> int:
        return 0 if self._rooms is None else int(self._rooms[0].shape[-2])

    def _backs(self, keys: torch.Tensor, values: torch.Tensor, used: int) -> bool:
        """Whether the buffers hold exactly these keys and values (nothing replaced them)."""
        if self._rooms is None or used == 0:
            return False
        keys_room, values_room = self._rooms
        return (
            keys.data_ptr() == keys_room.data_ptr()
            and values.data_ptr() == values_room.data_ptr()
            and keys.shape[:-2] == keys_room.shape[:-2]
            and int(keys.shape[-2]) == used
        )


def _room(current: torch.Tensor, new: torch.Tensor, used: int, length: int) -> torch.Tensor:
    """A buffer of `length` positions shaped like `new`, holding `current`'s first `used`."""
    room = new.new_empty((*new.shape[:-2], length, new.shape[-1]))
    if used:
        room[..., :used, :] = current
    return room


def growing_cache(config: Any) -> DynamicCache:
    """transformers' DynamicCache for a model of `config`, its full-attention layers growing."""
    cache = DynamicCache(config=config)
    if cache.layers:
        cache.layers = [GrowingLayer() if type(layer) is DynamicLayer else layer for layer in cache.layers]
    else:  # layers made as they are first used
        cache.layer_class_to_replicate = GrowingLayer
    return cache
