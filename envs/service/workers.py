"""The threads that run the env service's session calls, off the event loop.

Every reset and step runs in a worker thread, never on the event loop: a step's cost is unknown
until it has run (a mock-app call that pages 50 rows takes ~30 ms, a step may hold a hundred
calls), and on the loop it would hold every other session's answers meanwhile. What the loop
does per call is parse small bodies, hand the call over and send the answer.

`Workers` is an elastic pool: a call that finds no idle thread starts one, and a thread idle for
`idle_s` ends, so idle sessions hold no thread (a thread per session would hold one for the
session's whole life). `Lane` is one session's queue on the pool: its calls run one
at a time in the order given (its world's SQLite connection is used by one thread at a time), on
whichever worker is free. The hand-over is a queue put and a `call_soon_threadsafe`, about half
the CPU of `loop.run_in_executor` on a `ThreadPoolExecutor` (35 against 70 µs a round trip on
one core, measured).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from toolgym.envs.service.catalog import ServiceError

T = TypeVar("T")

# a worker thread with nothing to do for this long ends (a session stepping less often than this
# starts a thread per step, ~0.1 ms, only while no other session keeps a worker busy)
WORKER_IDLE_S = 10.0


class _Job:
    """A call and the event loop's future its outcome goes to."""

    __slots__ = ("args", "fn", "future")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], future: asyncio.Future[Any]) -> None:
        self.fn, self.args, self.future = fn, args, future

    def run(self) -> None:
        try:
            outcome: tuple[Any, BaseException | None] = (self.fn(*self.args), None)
        except BaseException as exc:
            outcome = (None, exc)
        with contextlib.suppress(RuntimeError):  # a closed loop (the server stopped): nobody waits
            self.future.get_loop().call_soon_threadsafe(_settle, self.future, *outcome)


def _settle(future: asyncio.Future[Any], result: Any, exc: BaseException | None) -> None:
    if future.cancelled():  # the awaiting request went away; the call still ran, in order
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(result)


class Workers:
    """Threads started on demand and ended after `idle_s` idle. `run` runs a call on its own;
    `lane()` gives a queue whose calls run one at a time."""

    def __init__(self, idle_s: float = WORKER_IDLE_S, name: str = "toolgym-session") -> None:
        self.idle_s = idle_s
        self.name = name
        self._jobs: queue.SimpleQueue[tuple[Lane | None, _Job | None]] = queue.SimpleQueue()
        # idle workers that no call has claimed yet: a call that claims one hands its job to the
        # queue, where exactly one idle worker picks it up; a call that finds none starts a thread
        # with the job in hand (a count under a lock: a Semaphore costs a call a few µs more)
        self._lock = threading.Lock()
        self._idle = 0
        self._threads = 0
        self._shutdown = False

    @property
    def threads(self) -> int:
        """Worker threads alive now (busy or idle)."""
        return self._threads

    def lane(self) -> Lane:
        return Lane(self)

    async def run(self, fn: Callable[..., T], /, *args: Any) -> T:
        """`fn(*args)` on a worker, on its own (no lane); awaited on the event loop."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._start(None, _Job(fn, args, future))
        return await future

    def shutdown(self) -> None:
        """Idle workers end now, busy ones after their call (not waited for: a call may block on a
        remote tool; the threads are daemons)."""
        self._shutdown = True
        with self._lock:
            idle, self._idle = self._idle, 0
        for _ in range(idle):
            self._jobs.put((None, None))

    def _start(self, lane: Lane | None, job: _Job) -> None:
        """Runs `job` on an idle worker or a new one (a lane's next job only, see Lane)."""
        if self._shutdown:
            raise ServiceError("capacity", "the server is shutting down", 503)
        with self._lock:
            claimed = self._idle > 0
            if claimed:
                self._idle -= 1
            else:
                self._threads += 1
        if claimed:
            self._jobs.put((lane, job))
            return
        thread = threading.Thread(target=self._work, args=(lane, job), name=self.name, daemon=True)
        try:
            thread.start()
        except RuntimeError as exc:  # the OS gives no more threads
            with self._lock:
                self._threads -= 1
            raise ServiceError("capacity", f"the server cannot start a thread: {exc}", 503) from None

    def _work(self, lane: Lane | None, job: _Job | None) -> None:
        try:
            while job is not None:
                while job is not None:  # the job, then its lane's next ones, on this thread
                    job.run()
                    job = lane.next_job() if lane is not None else None
                with self._lock:
                    self._idle += 1
                try:
                    lane, job = self._jobs.get(timeout=self.idle_s)
                except queue.Empty:
                    with self._lock:
                        unclaimed = self._idle > 0
                        if unclaimed:  # no call has claimed this worker: it ends
                            self._idle -= 1
                    if unclaimed:
                        return
                    lane, job = self._jobs.get()  # one has: its job is on the way
        finally:
            with self._lock:
                self._threads -= 1


class Lane:
    """One session's calls, one at a time in the order given, on its pool's workers."""

    def __init__(self, workers: Workers) -> None:
        self._workers = workers
        self._lock = threading.Lock()
        self._pending: deque[_Job] = deque()
        self._running = False

    async def run(self, fn: Callable[..., T], /, *args: Any) -> T:
        """`fn(*args)` on a worker, after the lane's earlier calls; awaited on the event loop."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._add(_Job(fn, args, future))
        return await future

    def _add(self, job: _Job) -> None:
        with self._lock:
            if self._running:
                self._pending.append(job)
                return
            self._running = True
        try:
            self._workers._start(self, job)
        except BaseException:
            with self._lock:
                self._running = False
            raise

    def next_job(self) -> _Job | None:
        """The lane's next call once its current one is done (None: the lane is free)."""
        with self._lock:
            if self._pending:
                return self._pending.popleft()
            self._running = False
            return None
