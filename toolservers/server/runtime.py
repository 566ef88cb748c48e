"""The part of the server every face shares: tools, their limits, loading, batching, metrics.

`ToolRuntime.call` runs one call the way `ToolSet.call` does in-process (same validation, same
result conversion, same typed errors), plus the serving concerns: a concurrency limit and a
queue bound per tool, a timeout (queueing included), lazy loading and batching.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from toolgym.actions import Observation, ToolCall
from toolgym.errors import HTTP_STATUS, ErrorKind, ToolgymError, redact_paths
from toolgym.files import HANDLE_PREFIX, FileHandle, FileStore
from toolgym.tools import DEFAULT_CLOCK, BaseTool, ToolContext, result_observation, to_json_value

from .batching import Batcher, BatchInvocable, QueueFull
from .config import RESERVED_NAMES, ResolvedToolConfig, ServerConfig
from .metrics import ToolMetrics
from .providers import ToolProvider
from .store import OwnedStore, server_store

T = TypeVar("T")

# HTTP status of each outcome (the one table in toolgym.errors); the body always carries the kind
STATUS_BY_KIND: dict[ErrorKind | None, int] = {None: 200, **{k: v for k, v in HTTP_STATUS.items()}}


@dataclass(frozen=True)
class CallOutcome:
    observation: Observation
    latency_s: float
    status: int
    missing_files: tuple[str, ...] = ()

    @property
    def error_kind(self) -> ErrorKind | None:
        return self.observation.error_kind


@dataclass
class ToolEntry:
    provider: ToolProvider
    config: ResolvedToolConfig
    tool: BaseTool
    limiter: asyncio.Semaphore | None = None
    batcher: Batcher[tuple[Mapping[str, Any], ToolContext], Observation] | None = None
    metrics: ToolMetrics = field(default_factory=ToolMetrics)
    warm: bool = False
    load_lock: asyncio.Lock | None = None

    def describe(self) -> dict[str, Any]:
        t, cfg = self.tool, self.config
        return {
            "name": t.name,
            "description": t.description,
            "category": t.category,
            "mutates_state": t.mutates_state,
            "version": t.version,
            "backend": t.backend,
            "parameters": t.parameters_schema(),
            "returns": t.returns_schema(),
            "returns_spec": [r.model_dump(mode="json") for r in t.returns],
            "file_params": t.file_params,
            "device": cfg.device,
            "load": cfg.load,
            "loaded": self.warm,
            "limits": {
                "max_concurrency": cfg.max_concurrency,
                "max_queue": cfg.max_queue,
                "timeout_s": cfg.timeout_s,
                "max_request_bytes": cfg.max_request_bytes,
                "batch": None if cfg.batch is None else cfg.batch.model_dump(),
                "inline": cfg.inline,
            },
        }


def _error(kind: ErrorKind, message: str, name: str, data: Any = None) -> Observation:
    # every failure a client sees passes here: no server path may reach it
    return Observation.from_error(kind, redact_paths(message), tool=name, content=to_json_value(data))


def execute(t: BaseTool, arguments: Mapping[str, Any], ctx: ToolContext) -> Observation:
    """One call, exactly as `ToolSet.call` does it: every failure becomes a typed observation."""
    try:
        value = t.invoke(arguments, ctx)
    except ToolgymError as exc:
        return _error(exc.kind, exc.message, t.name, exc.data)
    except Exception as exc:  # the tool's own failure: reported, never raised out of the server
        return _error(ErrorKind.TOOL_ERROR, f"{type(exc).__name__}: {exc}", t.name)
    return result_observation(ToolCall.model_construct(name=t.name, arguments=dict(arguments)), value)


def _observe(t: BaseTool, arguments: Mapping[str, Any], value: Any) -> Observation:
    if isinstance(value, ToolgymError):
        return _error(value.kind, value.message, t.name, value.data)
    if isinstance(value, Exception):
        return _error(ErrorKind.TOOL_ERROR, f"{type(value).__name__}: {value}", t.name)
    return result_observation(ToolCall.model_construct(name=t.name, arguments=dict(arguments)), value)


class ToolRuntime:
    """Tools by name with their serving state. Build it, `await start()` inside the event loop
    that will serve (eager tools warm up there), `await aclose()` at the end."""

    def __init__(
        self, providers: Sequence[ToolProvider], config: ServerConfig, files: FileStore | None = None
    ) -> None:
        self.config = config
        # a store this server makes under the temp folder goes when it stops; a given one stays
        self._own_store: OwnedStore | None = None
        if files is None:
            files, self._own_store = server_store(config.files_dir)
        self.files = files
        by_name: dict[str, ToolProvider] = {}
        for p in providers:
            if p.name in by_name:
                raise ValueError(f"two providers for tool {p.name!r}")
            by_name[p.name] = p
        wanted = config.tools if config.tools is not None else list(by_name)
        unknown = [n for n in wanted if n not in by_name]
        if unknown:
            raise ValueError(f"no such tools: {unknown}; available: {sorted(by_name)}")
        stray = sorted(set(config.tools_config) - set(wanted))
        if stray:
            raise ValueError(f"settings for tools this server does not host: {stray}")
        self.entries: dict[str, ToolEntry] = {}
        for name in wanted:
            if name in RESERVED_NAMES or "/" in name or not name.strip():
                raise ValueError(f"tool name {name!r} cannot be served (reserved or not a URL segment)")
            provider = by_name[name]
            cfg = config.tool_config(name, provider.defaults)
            entry = ToolEntry(provider, cfg, provider.make(cfg.device))
            entry.warm = provider.warmup is None
            self.entries[name] = entry
        self.executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=config.max_workers, thread_name_prefix="toolgym-tool"
        )
        self.ready = False
        self.started_at: float | None = None
        self.startup_error: str | None = None

    # ---- lifecycle ---------------------------------------------------------------------
    async def start(self) -> None:
        app_lock: asyncio.Semaphore | None = asyncio.Semaphore(1) if self.config.serialize_apps else None
        for entry in self.entries.values():
            entry.load_lock = asyncio.Lock()
            cfg = entry.config
            if entry.tool.category == "app" and app_lock is not None:
                entry.limiter = app_lock  # one shared world's database: one call at a time
            else:
                entry.limiter = asyncio.Semaphore(cfg.max_concurrency)
            if cfg.batch is not None and isinstance(entry.tool, BatchInvocable):
                entry.batcher = Batcher(
                    self._batch_fn(entry.tool),
                    max_batch_size=cfg.batch.max_batch_size,
                    max_wait_ms=cfg.batch.max_wait_ms,
                    max_concurrent=cfg.max_concurrency,
                    max_queue=cfg.max_queue,
                    executor=self.executor,
                )
        for entry in self.entries.values():
            if entry.config.load == "eager":
                error = await self._warm(entry)
                if error is not None:
                    raise RuntimeError(f"tool {entry.tool.name!r} failed to load: {error}")
        self.ready = True
        self.started_at = time.time()

    async def aclose(self) -> None:
        for entry in self.entries.values():
            if entry.batcher is not None:
                await entry.batcher.aclose()
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.ready = False
        if self._own_store is not None:
            self._own_store.remove()

    async def _warm(self, entry: ToolEntry) -> str | None:
        """Run the provider's warm-up once; the error text if it failed (tried again next call)."""
        if entry.warm:
            return None
        assert entry.load_lock is not None
        async with entry.load_lock:
            if entry.warm:
                return None
            warmup = entry.provider.warmup
            assert warmup is not None
            started = time.perf_counter()
            try:
                await asyncio.get_running_loop().run_in_executor(self.executor, warmup, entry.tool)
            except Exception as exc:
                entry.metrics.load_error = redact_paths(f"{type(exc).__name__}: {exc}")
                return entry.metrics.load_error
            entry.metrics.load_s = time.perf_counter() - started
            entry.metrics.load_error = None
            entry.warm = True
            return None

    def _batch_fn(
        self, t: BaseTool
    ) -> Any:  # Callable[[list[tuple[args, ctx]]], list[Observation]], run in a worker thread
        invoker: BatchInvocable = t  # type: ignore[assignment]

        def run(items: list[tuple[Mapping[str, Any], ToolContext]]) -> list[Observation]:
            try:
                values = invoker.invoke_batch(items)
            except Exception as exc:  # the whole batch failed: each call reports it
                values = [exc] * len(items)
            return [_observe(t, args, v) for (args, _), v in zip(items, values, strict=True)]

        return run

    async def in_thread(self, fn: Callable[..., T], *args: Any) -> T:
        """Run blocking work (file writes, image encoding) off the event loop."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, functools.partial(fn, *args))

    async def store(
        self, data: bytes, *, name: str | None = None, media_type: str | None = None
    ) -> FileHandle:
        return await self.in_thread(
            functools.partial(self.files.put_bytes, name=name, media_type=media_type), data
        )

    # ---- calls -------------------------------------------------------------------------
    def missing_files(self, t: BaseTool, arguments: Mapping[str, Any]) -> tuple[str, ...]:
        """sha256s of `file:` handles in file arguments that this server's store lacks."""
        missing = []
        for pname in t.file_params:
            ref = arguments.get(pname)
            if isinstance(ref, str) and ref.startswith(HANDLE_PREFIX) and ref not in self.files:
                missing.append(ref[len(HANDLE_PREFIX) :])
        return tuple(missing)

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any],
        *,
        seed: int = 0,
        clock: datetime = DEFAULT_CLOCK,
        task_id: str | None = None,
    ) -> CallOutcome:
        started = time.perf_counter()
        entry = self.entries.get(name)
        if entry is None:
            obs = _error(
                ErrorKind.UNKNOWN_TOOL,
                f"unknown tool {name!r}; available: {', '.join(self.entries)}",
                name,
            )
            return CallOutcome(obs, time.perf_counter() - started, 404)
        if not isinstance(arguments, Mapping):
            obs = _error(
                ErrorKind.ARGUMENT_ERROR,
                f"{name}: arguments must be a JSON object, got {type(arguments).__name__}",
                name,
            )
            return self._done(entry, obs, started)
        missing = self.missing_files(entry.tool, arguments)
        if missing:
            obs = _error(
                ErrorKind.ARGUMENT_ERROR,
                f"{name}: this server has no file {', '.join(HANDLE_PREFIX + m for m in missing)}; upload it first",
                name,
                {"missing_files": list(missing)},
            )
            return CallOutcome(obs, time.perf_counter() - started, 409, missing)
        if not entry.warm:
            error = await self._warm(entry)
            if error is not None:
                obs = _error(ErrorKind.INFRA_ERROR, f"tool {name!r} could not be loaded: {error}", name)
                return self._done(entry, obs, started)
        ctx = ToolContext(files=self.files, seed=seed, clock=clock, task_id=task_id)
        cfg = entry.config
        if cfg.inline:
            return self._done(entry, execute(entry.tool, arguments, ctx), started)
        try:
            async with asyncio.timeout(cfg.timeout_s):
                if entry.batcher is not None:
                    obs = await self._run_batched(entry, arguments, ctx)
                else:
                    obs = await self._run_threaded(entry, arguments, ctx)
        except TimeoutError:
            obs = _error(ErrorKind.TIMEOUT, f"{name} did not finish within {cfg.timeout_s:g} s", name)
        except Overloaded as exc:
            entry.metrics.rejected += 1
            obs = _error(ErrorKind.INFRA_ERROR, str(exc), name)
        return self._done(entry, obs, started)

    def _done(self, entry: ToolEntry, obs: Observation, started: float) -> CallOutcome:
        latency = time.perf_counter() - started
        kind = obs.error_kind
        entry.metrics.record(latency, None if kind is None else kind.value)
        return CallOutcome(obs, latency, STATUS_BY_KIND[kind])

    async def _run_threaded(
        self, entry: ToolEntry, arguments: Mapping[str, Any], ctx: ToolContext
    ) -> Observation:
        limiter = entry.limiter
        assert limiter is not None
        metrics = entry.metrics
        if limiter.locked() and metrics.waiting >= entry.config.max_queue:
            raise Overloaded(f"{entry.tool.name}: {metrics.waiting} calls already wait; try again later")
        metrics.waiting += 1
        try:
            await limiter.acquire()
        finally:
            metrics.waiting -= 1
        loop = asyncio.get_running_loop()
        try:
            future = self.executor.submit(execute, entry.tool, arguments, ctx)
        except RuntimeError:  # executor shut down
            limiter.release()
            raise Overloaded("the server is shutting down") from None
        metrics.in_flight += 1

        def finished(_f: concurrent.futures.Future[Observation]) -> None:
            # the slot is held until the thread really ends, even when the caller timed out
            def release() -> None:
                metrics.in_flight -= 1
                limiter.release()

            with contextlib.suppress(RuntimeError):  # the loop is gone (shutdown)
                loop.call_soon_threadsafe(release)

        future.add_done_callback(finished)
        return await asyncio.shield(asyncio.wrap_future(future))

    async def _run_batched(
        self, entry: ToolEntry, arguments: Mapping[str, Any], ctx: ToolContext
    ) -> Observation:
        batcher = entry.batcher
        assert batcher is not None
        entry.metrics.waiting += 1
        try:
            return await batcher.submit((arguments, ctx))
        except QueueFull as exc:
            raise Overloaded(f"{entry.tool.name}: {exc}; try again later") from None
        finally:
            entry.metrics.waiting -= 1

    # ---- description -------------------------------------------------------------------
    def describe(self) -> list[dict[str, Any]]:
        return [e.describe() for e in self.entries.values()]

    def metrics(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, e in self.entries.items():
            snap = e.metrics.snapshot()
            if e.batcher is not None:
                snap["batching"] = e.batcher.stats.snapshot()
            out[name] = snap
        return out

    def readiness(self) -> dict[str, Any]:
        tools = {
            name: ("ready" if e.warm else ("failed" if e.metrics.load_error else "lazy"))
            for name, e in self.entries.items()
        }
        return {"ready": self.ready, "tools": tools}


class Overloaded(Exception):
    """The tool's queue is full or the server is stopping."""
