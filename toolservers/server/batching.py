"""Batching: calls that wait for the same model backend run as one batch.

`Batcher` collects submitted items and calls `batch_fn(items)` once per batch, in a worker thread.
A batch starts as soon as the backend is free: it takes every item already waiting (up to
`max_batch_size`) and, if that is fewer, waits at most `max_wait_ms` for more. So one client
sees no batching delay beyond `max_wait_ms`, and under load the calls that queued while the
previous batch ran go together.

`BatchedTool` makes a tool from a per-item tool (its schema, validation and file handling) and a
batch entry point `batch_fn(list_of_validated_kwargs) -> list_of_results`; the server batches the
calls of any tool that has `invoke_batch`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from toolgym.tools import BaseTool, ToolContext, WrappedTool

T = TypeVar("T")
R = TypeVar("R")


@runtime_checkable
class BatchInvocable(Protocol):
    def invoke_batch(self, calls: Sequence[tuple[Mapping[str, Any], ToolContext]]) -> list[Any]:
        """One result per call, in order; a failed call's entry is the exception it raised."""
        ...


@dataclass
class BatchStats:
    batches: int = 0
    items: int = 0
    largest: int = 0
    sizes: dict[int, int] = field(default_factory=dict)

    def add(self, size: int) -> None:
        self.batches += 1
        self.items += size
        self.largest = max(self.largest, size)
        self.sizes[size] = self.sizes.get(size, 0) + 1

    def snapshot(self) -> dict[str, Any]:
        return {
            "batches": self.batches,
            "items": self.items,
            "mean_size": round(self.items / self.batches, 3) if self.batches else 0.0,
            "largest": self.largest,
        }


class QueueFull(Exception):
    """More items wait than the batcher accepts."""


class Batcher(Generic[T, R]):
    """Collects items and runs `batch_fn` on up to `max_batch_size` of them at once.

    `batch_fn` runs in `executor` (a thread), returns one result per item; an entry that is an
    exception fails that item only; an exception raised by `batch_fn` fails the whole batch.
    At most `max_concurrent` batches run at once (one per model replica)."""

    def __init__(
        self,
        batch_fn: Callable[[list[T]], Sequence[R | BaseException]],
        *,
        max_batch_size: int = 16,
        max_wait_ms: float = 1.0,
        max_concurrent: int = 1,
        max_queue: int = 1024,
        executor: concurrent.futures.Executor | None = None,
    ) -> None:
        if max_batch_size < 1 or max_concurrent < 1:
            raise ValueError("max_batch_size and max_concurrent must be at least 1")
        self.batch_fn = batch_fn
        self.max_batch_size = max_batch_size
        self.max_wait_s = max_wait_ms / 1000
        self.max_concurrent = max_concurrent
        self.max_queue = max_queue
        self.executor = executor
        self.stats = BatchStats()
        self._pending: deque[tuple[T, asyncio.Future[R]]] = deque()
        self._wakeup: asyncio.Event | None = None
        self._workers: list[asyncio.Task[None]] = []
        self._running = 0

    @property
    def waiting(self) -> int:
        return len(self._pending)

    @property
    def running(self) -> int:
        return self._running

    def _ensure_workers(self) -> asyncio.Event:
        if self._wakeup is None:
            self._wakeup = asyncio.Event()
            self._workers = [asyncio.create_task(self._worker()) for _ in range(self.max_concurrent)]
        return self._wakeup

    async def submit(self, item: T) -> R:
        """The item's result; raises what the batch raised for it. Cancelling the caller (a
        timeout) drops the item if its batch has not started yet."""
        wakeup = self._ensure_workers()
        if len(self._pending) >= self.max_queue:
            raise QueueFull(f"{len(self._pending)} calls already wait for this backend")
        fut: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._pending.append((item, fut))
        wakeup.set()
        return await fut

    def _take(self, batch: list[tuple[T, asyncio.Future[R]]]) -> None:
        while self._pending and len(batch) < self.max_batch_size:
            item, fut = self._pending.popleft()
            if not fut.done():  # a caller that gave up (timeout) is skipped
                batch.append((item, fut))

    async def _worker(self) -> None:
        assert self._wakeup is not None
        loop = asyncio.get_running_loop()
        while True:
            while not self._pending:
                self._wakeup.clear()
                await self._wakeup.wait()
            batch: list[tuple[T, asyncio.Future[R]]] = []
            self._take(batch)
            if batch and len(batch) < self.max_batch_size and self.max_wait_s > 0:
                deadline = loop.time() + self.max_wait_s
                while len(batch) < self.max_batch_size:
                    remaining = deadline - loop.time()
                    if remaining <= 0:
                        break
                    self._wakeup.clear()
                    try:
                        await asyncio.wait_for(self._wakeup.wait(), remaining)
                    except TimeoutError:
                        break
                    self._take(batch)
            if not batch:
                continue
            self.stats.add(len(batch))
            self._running += 1
            try:
                results = await loop.run_in_executor(self.executor, self.batch_fn, [i for i, _ in batch])
                if len(results) != len(batch):
                    raise RuntimeError(
                        f"batch function returned {len(results)} results for {len(batch)} items"
                    )
            except Exception as exc:  # the whole batch failed: every caller sees why
                for _, fut in batch:
                    if not fut.done():
                        fut.set_exception(exc)
            else:
                for (_, fut), result in zip(batch, results, strict=True):
                    if fut.done():
                        continue
                    if isinstance(result, BaseException):
                        fut.set_exception(result)
                    else:
                        fut.set_result(result)
            finally:
                self._running -= 1

    async def aclose(self) -> None:
        for task in self._workers:
            task.cancel()
        for task in self._workers:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._workers = []
        self._wakeup = None
        while self._pending:
            _, fut = self._pending.popleft()
            if not fut.done():
                fut.set_exception(RuntimeError("the server is shutting down"))


class BatchedTool(WrappedTool):
    """A tool whose calls can run as a batch: `inner` gives the schema, argument validation and
    file resolution; `batch_fn(kwargs_list)` runs validated calls together and returns one result
    (or exception) per call. A single call is a batch of one."""

    def __init__(self, inner: BaseTool, batch_fn: Callable[[list[dict[str, Any]]], Sequence[Any]]) -> None:
        super().__init__(inner)
        self.batch_fn = batch_fn

    def invoke(self, arguments: Mapping[str, Any], ctx: ToolContext) -> Any:
        result = self.invoke_batch([(arguments, ctx)])[0]
        if isinstance(result, BaseException):
            raise result
        return result

    def invoke_batch(self, calls: Sequence[tuple[Mapping[str, Any], ToolContext]]) -> list[Any]:
        results: list[Any] = [None] * len(calls)
        ready: list[tuple[int, dict[str, Any]]] = []
        for i, (arguments, ctx) in enumerate(calls):
            try:
                ready.append((i, self.inner.resolve_files(self.inner.validate(arguments), ctx)))
            except Exception as exc:  # a bad call fails alone; the others still run
                results[i] = exc
        if ready:
            outputs = list(self.batch_fn([kwargs for _, kwargs in ready]))
            if len(outputs) != len(ready):
                raise RuntimeError(
                    f"{self.name}: batch returned {len(outputs)} results for {len(ready)} calls"
                )
            for (i, _), out in zip(ready, outputs, strict=True):
                results[i] = out
        return results
