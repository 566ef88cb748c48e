"""models/prefix_cache.py: a turn that repeats an earlier prompt's start takes its keys and values
from the store and computes what a cold turn computes, bit for bit; the store is bounded, starts
over with another thread count, and prefills at once a model whose layers it cannot cut."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests.models.real_model import needs_model
from toolgym.models.prefix_cache import CHUNK, PrefixStore, _all_full_attention, chunked_part, shared_chunks

if TYPE_CHECKING:
    from toolgym.models.hf_agent import HFModel
    from toolgym.models.hf_models import HFConfig


def test_the_chunked_part_stops_at_the_last_whole_chunk_before_the_prompts_last_token() -> None:
    assert [chunked_part(n) for n in (0, 1, CHUNK, CHUNK + 1, 2 * CHUNK + 7)] == [0, 0, 0, CHUNK, 2 * CHUNK]


def test_a_kept_prefix_is_shared_in_whole_chunks_within_the_boundary() -> None:
    kept = tuple(range(3 * CHUNK))
    same_start = [*range(2 * CHUNK), -1, *range(2 * CHUNK + 1, 4 * CHUNK)]
    assert shared_chunks(kept, same_start, 3 * CHUNK) == 2 * CHUNK  # the third chunk differs
    assert shared_chunks(kept, list(range(4 * CHUNK)), 3 * CHUNK) == 3 * CHUNK
    assert shared_chunks(kept, list(range(4 * CHUNK)), 2 * CHUNK) == 2 * CHUNK  # never past the boundary
    assert shared_chunks(kept, [-1, *range(1, 4 * CHUNK)], 3 * CHUNK) == 0


def test_only_models_whose_every_layer_attends_to_all_earlier_positions_are_cut() -> None:
    assert _all_full_attention(SimpleNamespace(layer_types=["full_attention"] * 2))
    assert not _all_full_attention(SimpleNamespace(layer_types=["full_attention", "sliding_attention"]))
    assert _all_full_attention(SimpleNamespace(sliding_window=None))
    assert not _all_full_attention(SimpleNamespace(sliding_window=4096))


def test_a_prompt_prefilled_at_once_is_never_kept_for_chunks() -> None:
    """A sliding-window model's prompt goes to `generate` whole: its keys were not computed chunk
    by chunk, so a later turn taking them would not compute a cold turn's logits."""
    import torch

    from toolgym.models.kv_cache import GrowingLayer

    layer = GrowingLayer()
    layer.update(torch.zeros(1, 1, 2 * CHUNK + 1, 4), torch.zeros(1, 1, 2 * CHUNK + 1, 4))
    cache: Any = SimpleNamespace(layers=[layer])
    prompt = list(range(2 * CHUNK + 1))
    store = PrefixStore()
    store.keep(SimpleNamespace(config=SimpleNamespace(sliding_window=4096)), prompt, cache)
    assert not store._kept
    store.keep(SimpleNamespace(config=SimpleNamespace(sliding_window=None)), prompt, cache)
    assert list(store._kept) == [tuple(prompt[: 2 * CHUNK])]


def smollm2_config() -> HFConfig:
    from toolgym.models.hf_models import parse_hf_spec

    return parse_hf_spec("hf:smollm2", max_new_tokens=12, threads=1)


@pytest.fixture
def smollm2() -> Iterator[HFModel]:
    """The process's model (other tests' too), its store given back as it was."""
    from toolgym.models.hf_agent import load_model

    model = load_model(smollm2_config())
    store = model.prefixes
    yield model
    model.prefixes = store


def _turns(model: HFModel) -> tuple[list[int], list[int]]:
    """An episode's first two prompts: the second repeats the first, reply and observation added."""
    first = [
        {"role": "system", "content": "You are an assistant with tools. Answer in the format asked. " * 60},
        {"role": "user", "content": "What is the balance of account 123456?"},
    ]
    later = [
        *first,
        {"role": "assistant", "content": "Action: get_account_balance"},
        {"role": "user", "content": "Observation: " + "The balance is 42 dollars. " * 40},
    ]
    return model.render(first), model.render(later)


@needs_model
def test_a_warm_turn_gives_the_cold_turns_tokens_and_logprobs_bit_for_bit(smollm2: HFModel) -> None:
    config = smollm2_config()
    first, later = _turns(smollm2)
    assert later[: len(first)] == first and chunked_part(len(first)) >= CHUNK
    smollm2.prefixes = store = PrefixStore()
    smollm2.generate(first, config)
    computed = store.computed
    warm = smollm2.generate(later, config)
    assert store.reused == chunked_part(len(first))  # the first prompt's chunks, taken
    assert store.computed - computed == chunked_part(len(later)) - chunked_part(len(first))
    smollm2.prefixes = PrefixStore()
    cold = smollm2.generate(later, config)
    assert smollm2.prefixes.reused == 0
    assert warm.completion_ids == cold.completion_ids and warm.logprobs == cold.logprobs
    smollm2.prefixes = PrefixStore(capacity=0)  # the prompt at once: another rounding, the same model
    at_once = smollm2.generate(later, config)
    assert at_once.completion_ids == cold.completion_ids
    assert at_once.logprobs == pytest.approx(cold.logprobs, abs=1e-3)


@needs_model
def test_the_store_keeps_the_latest_prompts_and_starts_over_with_another_thread_count(
    smollm2: HFModel,
) -> None:
    first, later = _turns(smollm2)
    store = PrefixStore(capacity=1)
    for prompt in (first, later):
        cache = store.prefilled(smollm2.model, prompt, 1)
        assert cache.get_seq_length() == chunked_part(len(prompt))
        store.keep(smollm2.model, prompt, cache)
    assert store.reused == chunked_part(len(first))
    assert len(store._kept) == 1 and next(iter(store._kept)) == tuple(later[: chunked_part(len(later))])
    again = store.prefilled(smollm2.model, later, 1)
    assert store.reused == chunked_part(len(first)) + chunked_part(len(later))
    assert again.get_seq_length() == chunked_part(len(later))
    store.prefilled(smollm2.model, later, 2)  # another count may round otherwise: nothing reused
    assert store.reused == chunked_part(len(first)) + chunked_part(len(later)) and not store._kept
