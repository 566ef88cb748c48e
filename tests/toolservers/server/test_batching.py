"""Batching: the async batcher on its own, BatchedTool, and batched calls through a real server."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import numpy as np
import pytest

from toolgym.errors import ArgumentError, ToolError
from toolgym.files import FileStore
from toolgym.tools import ToolContext, tool
from toolgym.toolservers.server import BatchConfig, BatchedTool, Batcher, ServerConfig, ToolConfig
from toolgym.toolservers.server.batching import QueueFull
from toolgym.toolservers.server.providers import synthetic_providers
from toolgym.toolservers.server.synthetic import SyntheticEmbedder, make_embed_tool

from .helpers import metrics, running, wait_for


def test_items_waiting_together_run_as_one_batch() -> None:
    sizes: list[int] = []

    def double(items: list[int]) -> list[int]:
        sizes.append(len(items))
        return [2 * i for i in items]

    async def main() -> list[int]:
        batcher: Batcher[int, int] = Batcher(double, max_batch_size=8, max_wait_ms=0)
        try:
            return list(await asyncio.gather(*(batcher.submit(i) for i in range(10))))
        finally:
            await batcher.aclose()

    assert asyncio.run(main()) == [2 * i for i in range(10)]
    assert sizes == [8, 2]  # all ten queued before the worker ran: one full batch, then the rest


def test_calls_arriving_while_a_batch_runs_join_the_next_one() -> None:
    sizes: list[int] = []
    gate = threading.Event()

    def slow(items: list[int]) -> list[int]:
        sizes.append(len(items))
        if len(sizes) == 1:
            gate.wait(10)
        return items

    async def main() -> list[int]:
        batcher: Batcher[int, int] = Batcher(slow, max_batch_size=16, max_wait_ms=0)
        first = asyncio.ensure_future(batcher.submit(0))
        while batcher.running == 0:
            await asyncio.sleep(0.001)
        rest = [asyncio.ensure_future(batcher.submit(i)) for i in range(1, 6)]
        await asyncio.sleep(0)
        assert batcher.waiting == 5
        gate.set()
        out = [await first, *[await r for r in rest]]
        await batcher.aclose()
        return out

    assert asyncio.run(main()) == [0, 1, 2, 3, 4, 5]
    assert sizes == [1, 5]


def test_max_wait_collects_a_trickle_and_failures_stay_per_item() -> None:
    def check(items: list[int]) -> Sequence[int | BaseException]:
        return [ValueError(f"odd {i}") if i % 2 else i for i in items]

    async def main() -> list[Any]:
        batcher: Batcher[int, int] = Batcher(check, max_batch_size=4, max_wait_ms=50)
        tasks = []
        for i in range(4):
            tasks.append(asyncio.ensure_future(batcher.submit(i)))
            await asyncio.sleep(0)
        results = await asyncio.gather(*tasks, return_exceptions=True)
        await batcher.aclose()
        assert batcher.stats.batches == 1 and batcher.stats.largest == 4
        return list(results)

    results = asyncio.run(main())
    assert results[0] == 0 and results[2] == 2
    assert isinstance(results[1], ValueError) and str(results[1]) == "odd 1"
    assert isinstance(results[3], ValueError)


def test_whole_batch_failure_reaches_every_caller_and_queue_bound_holds() -> None:
    def broken(items: list[int]) -> list[int]:
        raise RuntimeError("device lost")

    def short(items: list[int]) -> list[int]:
        return items[:-1]

    async def main() -> None:
        batcher: Batcher[int, int] = Batcher(broken, max_wait_ms=0)
        outcomes = await asyncio.gather(batcher.submit(1), batcher.submit(2), return_exceptions=True)
        assert all(isinstance(o, RuntimeError) and "device lost" in str(o) for o in outcomes)
        await batcher.aclose()
        wrong: Batcher[int, int] = Batcher(short, max_wait_ms=0)
        with pytest.raises(RuntimeError, match="returned 0 results for 1"):
            await wrong.submit(1)
        await wrong.aclose()
        full: Batcher[int, int] = Batcher(lambda xs: xs, max_queue=2, max_wait_ms=0)
        a = asyncio.ensure_future(full.submit(1))
        b = asyncio.ensure_future(full.submit(2))
        await asyncio.sleep(0)  # both queued; the worker has not taken them yet
        with pytest.raises(QueueFull):
            await full.submit(3)
        assert [await a, await b] == [1, 2]
        await full.aclose()

    asyncio.run(main())


def test_a_caller_that_gave_up_is_dropped_from_the_batch() -> None:
    seen: list[list[int]] = []
    gate = threading.Event()

    def record(items: list[int]) -> list[int]:
        seen.append(items)
        if len(seen) == 1:
            gate.wait(10)
        return items

    async def main() -> None:
        batcher: Batcher[int, int] = Batcher(record, max_batch_size=8, max_wait_ms=0)
        first = asyncio.ensure_future(batcher.submit(0))
        while batcher.running == 0:
            await asyncio.sleep(0.001)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(batcher.submit(1), 0.01)
        kept = asyncio.ensure_future(batcher.submit(2))
        await asyncio.sleep(0)
        gate.set()
        assert [await first, await kept] == [0, 2]
        await batcher.aclose()

    asyncio.run(main())
    assert seen == [[0], [2]]


def test_batched_tool_validates_each_call_alone() -> None:
    @tool(name="Upper")
    def upper(text: str) -> str:
        """Upper-case a text."""
        return text.upper()

    batches: list[int] = []

    def run(calls: list[dict[str, Any]]) -> list[Any]:
        batches.append(len(calls))
        return [ToolError("empty") if not c["text"] else c["text"].upper() for c in calls]

    batched = BatchedTool(upper, run)
    ctx = ToolContext(files=FileStore())
    results = batched.invoke_batch(
        [({"text": "a"}, ctx), ({"txt": "b"}, ctx), ({"text": ""}, ctx), ({"text": "d"}, ctx)]
    )
    assert results[0] == "A" and results[3] == "D"
    assert isinstance(results[1], ArgumentError) and isinstance(results[2], ToolError)
    assert batches == [3]  # the malformed call never reached the backend
    assert batched.invoke({"text": "x"}, ctx) == "X"
    with pytest.raises(ToolError, match="empty"):
        batched.invoke({"text": ""}, ctx)
    assert batched.parameters_schema() == upper.parameters_schema()


def test_synthetic_embedder_is_deterministic_alone_or_batched() -> None:
    engine = SyntheticEmbedder(width=64, layers=2, dim=8)
    texts = ["the quick brown fox", "jumps over", "", "the quick brown fox"]
    together = engine.embed(texts)
    alone = np.stack([engine.embed([t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(together[[0, 1, 3]], axis=1), 1.0, atol=1e-5)
    assert not together[2].any()  # no words, no signal
    np.testing.assert_array_equal(together[0], together[3])
    tool_ = make_embed_tool(engine)
    ctx = ToolContext(files=FileStore())
    with pytest.raises(ToolError, match="exceeds"):
        tool_.invoke({"text": "x" * 20_000}, ctx)


def test_server_batches_calls_that_wait_for_the_same_backend() -> None:
    gate = threading.Event()
    sizes: list[int] = []

    @tool(name="Echo")
    def echo(text: str) -> str:
        """Echo a text."""
        return text

    def run(calls: list[dict[str, Any]]) -> list[Any]:
        sizes.append(len(calls))
        if len(sizes) == 1:
            gate.wait(10)  # the first batch holds the backend while the others queue
        return [f"echo {c['text']}" for c in calls]

    config = ServerConfig(
        tools_config={
            "Echo": ToolConfig(max_concurrency=1, batch=BatchConfig(max_batch_size=8, max_wait_ms=0))
        }
    )
    with running([BatchedTool(echo, run)], config) as url, ThreadPoolExecutor(9) as pool:
        try:
            first = pool.submit(
                httpx.post, f"{url}/v1/tools/Echo/call", json={"arguments": {"text": "0"}}, timeout=30
            )
            wait_for(lambda: len(sizes) == 1)
            rest = [
                pool.submit(
                    httpx.post, f"{url}/v1/tools/Echo/call", json={"arguments": {"text": str(i)}}, timeout=30
                )
                for i in range(1, 9)
            ]
            wait_for(lambda: metrics(url, "Echo")["waiting"] == 9)  # 8 queued + the one in the held batch
        finally:
            gate.set()
        answers = [f.result().json()["content"] for f in [first, *rest]]
        batching = metrics(url, "Echo")["batching"]
    assert answers == [f"echo {i}" for i in range(9)]
    assert sizes == [1, 8]
    assert batching == {"batches": 2, "items": 9, "mean_size": 4.5, "largest": 8}


def test_synthetic_tool_served_with_and_without_batching_gives_the_same_vectors() -> None:
    texts = [f"text number {i}" for i in range(6)]
    results = {}
    for batch in (None, BatchConfig(max_batch_size=4, max_wait_ms=1)):
        config = ServerConfig(tools_config={"SyntheticEmbed": ToolConfig(batch=batch)})
        with running(synthetic_providers(), config) as url, ThreadPoolExecutor(6) as pool:
            replies = list(
                pool.map(
                    lambda t: httpx.post(
                        f"{url}/v1/tools/SyntheticEmbed/call", json={"arguments": {"text": t}}, timeout=60
                    ),
                    texts,
                )
            )
            results[batch is not None] = np.array([r.json()["content"] for r in replies])
            m = metrics(url, "SyntheticEmbed")
            assert m["calls"] == 6 and m["errors"] == 0
            assert ("batching" in m) == (batch is not None)
    assert results[True].shape == (6, 32)
    np.testing.assert_allclose(results[True], results[False], atol=2e-5)
