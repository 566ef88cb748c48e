"""The service's worker threads: a lane runs a session's calls one at a time in order, lanes run
side by side, errors reach the caller, and threads end when idle."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import pytest

from toolgym.envs.service.workers import Lane, Workers


def _wait_for(condition: Callable[[], bool], timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return False


def test_a_lane_runs_its_calls_one_at_a_time_in_order() -> None:
    workers = Workers(idle_s=5)
    lane = workers.lane()
    order: list[int] = []
    running = [0]
    overlapped = threading.Event()

    def call(i: int) -> int:
        running[0] += 1
        if running[0] > 1:
            overlapped.set()
        time.sleep(0.002)
        order.append(i)
        running[0] -= 1
        return i * i

    async def main() -> list[int]:
        return list(await asyncio.gather(*(lane.run(call, i) for i in range(20))))

    assert asyncio.run(main()) == [i * i for i in range(20)]
    assert order == list(range(20)) and not overlapped.is_set()
    workers.shutdown()


def test_lanes_run_side_by_side_and_errors_reach_the_caller() -> None:
    workers = Workers(idle_s=5)
    release = threading.Event()
    blocked, free = workers.lane(), workers.lane()

    def fail() -> None:
        raise ValueError("refused")

    async def main() -> None:
        stuck = asyncio.ensure_future(blocked.run(release.wait, 30))
        assert await free.run(lambda: "done") == "done"  # while the other lane's call blocks
        with pytest.raises(ValueError, match="refused"):
            await free.run(fail)
        assert await free.run(lambda: 1) == 1  # the lane goes on after an error
        release.set()
        assert await stuck is True

    asyncio.run(main())
    assert asyncio.run(workers.run(lambda: 7)) == 7  # a call of no lane
    workers.shutdown()


def test_idle_workers_end_and_come_back_when_needed() -> None:
    # a name of its own: env servers that other tests in this process started keep their workers
    workers = Workers(idle_s=0.1, name="toolgym-test-idle-workers")
    lanes = [workers.lane() for _ in range(8)]
    gate = threading.Barrier(8, timeout=30)

    async def main() -> None:  # eight calls that must all run at once: eight threads
        await asyncio.gather(*(lane.run(gate.wait) for lane in lanes))

    asyncio.run(main())
    assert workers.threads == 8
    assert _wait_for(lambda: workers.threads == 0), f"{workers.threads} workers still alive"
    # the count drops in the thread's last lines: the thread itself ends a moment later
    assert _wait_for(lambda: not [t for t in threading.enumerate() if t.name == workers.name])
    assert asyncio.run(_one(lanes[0])) == "again"  # a new worker for the next call
    workers.shutdown()
    assert _wait_for(lambda: workers.threads == 0)


async def _one(lane: Lane) -> str:
    return await lane.run(lambda: "again")
