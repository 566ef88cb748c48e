"""A cancel stops the in-process model (`--agent hf:...`) between two tokens: the turn it cuts short
raises LLMCancelled with what it spent, and a run's episode is listed as cancelled with its tokens
counted. On the real SmolLM2-135M-Instruct (tests/models/real_model.py); the model is loaded
once per process (`load_model`'s cache), and each generation is cut after its first tokens."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.models.real_model import needs_model
from toolgym.envs.rollouts import Cancel
from toolgym.models.hf_agent import HFChatClient, HFModel, load_model
from toolgym.models.hf_models import parse_hf_spec
from toolgym.models.llm import LLMCancelled
from toolgym.running.config import LLMOptions, RunConfig
from toolgym.running.plan import run

WAIT_S = 120.0  # an upper bound for a wait on a busy machine, never a measured figure
MAX_TOKENS = 200  # far more than a cut-short turn makes


@pytest.fixture(scope="module")
def smollm2() -> HFModel:
    return load_model(parse_hf_spec("hf:smollm2"))


def when_generating(model: HFModel, then: Callable[[], None]) -> threading.Thread:
    """A thread that calls `then` once the model is generating (it holds its lock meanwhile)."""
    event = threading.Event()

    def watch() -> None:
        while not model._lock.locked():  # the one sign that a turn is under way
            if event.wait(0.005):
                return
        then()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


@needs_model
def test_a_cancel_stops_a_turn_between_two_tokens_and_says_what_it_spent(smollm2: HFModel) -> None:
    client = HFChatClient(parse_hf_spec("hf:smollm2", max_new_tokens=MAX_TOKENS), smollm2)
    messages = [{"role": "user", "content": "Count from 1 to 500, one number per line."}]
    watcher = when_generating(smollm2, client.cancel)
    with pytest.raises(LLMCancelled) as cut:  # raised only when the cancel stopped the generation
        client.complete(messages)
    watcher.join(WAIT_S)
    spent = cut.value.usage
    assert spent is not None and spent.requests == 1
    assert spent.prompt_tokens == len(smollm2.render(messages))
    assert 1 <= spent.completion_tokens < MAX_TOKENS
    assert client.usage == spent  # the client's total counts the cut turn
    with pytest.raises(LLMCancelled, match="not generated"):  # no turn starts after the cancel
        client.complete(messages)
    assert client.usage.requests == 1


@needs_model
def test_a_cancelled_run_lists_the_episode_cut_short_with_its_tokens(
    smollm2: HFModel, tmp_path: Path
) -> None:
    config = RunConfig(
        agent="hf:smollm2",
        tasks=["mtu"],
        task_ids=["mtu-weather-001"],
        trials=2,
        out=tmp_path / "run",
        llm=LLMOptions(max_tokens=MAX_TOKENS),
    )
    cancel = Cancel(grace_s=WAIT_S)  # the cut episode reports long before: nothing is left behind
    watcher = when_generating(smollm2, lambda: cancel.set("stopped by the test"))
    results = run(config, cancel=cancel)
    watcher.join(WAIT_S)
    summary = results.summary
    assert summary.stopped == "stopped by the test" and summary.episodes == []
    [cut] = summary.cancelled  # the second trial never started: nothing of it to resume but itself
    assert (cut["trial"], cut["task_id"]) == (0, "mtu-weather-001")
    assert cut["usage"]["requests"] == 1 and cut["usage"]["prompt_tokens"] > 0
    assert 1 <= cut["usage"]["completion_tokens"] < MAX_TOKENS
    assert summary.usage["completion_tokens"] == cut["usage"]["completion_tokens"]
