"""The session table: its capacity limit, each session's lane and activity, closing on the lane
after the running call, the owners kept after close, and the idle reaper, which leaves a session
alone while one of its calls runs."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest

from toolgym.envs.service.catalog import Catalog, ServiceError
from toolgym.envs.service.environment import ToolgymEnvironment
from toolgym.envs.service.sessions import CapacityError, SessionTable
from toolgym.envs.service.workers import Workers


def _table(catalog: Catalog, tmp_path: Path, **options: object) -> tuple[SessionTable, list[str]]:
    closed: list[str] = []
    table = SessionTable(
        lambda sid: ToolgymEnvironment(catalog, tmp_path, sid),
        Workers(idle_s=0.5, name="test-session-table"),  # its own threads, gone soon after
        on_close=closed.append,
        **options,  # type: ignore[arg-type]
    )
    return table, closed


def test_capacity_one_id_and_close_after_the_running_call(catalog: Catalog, tmp_path: Path) -> None:
    table, closed = _table(catalog, tmp_path, max_sessions=2)
    release = threading.Event()

    async def main() -> None:
        a = table.open("alice", "http")
        table.open("bob", "ws")
        with pytest.raises(CapacityError) as full:
            table.open("carol", "http")
        assert (full.value.status, full.value.kind, full.value.active, full.value.most) == (
            503,
            "capacity",
            2,
            2,
        )
        assert full.value.message == "Server at capacity: 2/2 sessions active. Cannot accept new connections."
        assert a.env.session_id == a.id  # one id: the table's, the observations', the trace folder's
        running = asyncio.ensure_future(table.run(a, release.wait, 30))
        await asyncio.sleep(0.05)
        assert a.busy
        closing = asyncio.ensure_future(table.close(a.id))
        await asyncio.sleep(0.05)
        assert closed == [a.id] and a.id not in table.sessions  # out of the table at once...
        assert not closing.done()  # ...its env closes on its lane, after the running call
        release.set()
        assert await running is True
        await closing
        with pytest.raises(ServiceError) as gone:
            await table.run(a, lambda: None)
        assert (gone.value.status, gone.value.kind) == (410, "session_closed")
        assert table.owned(a.id, "alice") and not table.owned(a.id, "bob")  # its traces stay alice's
        table.open("carol", "http")  # the slot is free again
        await table.stop()

    asyncio.run(main())


def test_the_idle_reaper_closes_idle_sessions_not_busy_ones(
    catalog: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("toolgym.envs.service.sessions.MIN_REAP_INTERVAL_S", 0.05)
    table, closed = _table(catalog, tmp_path, idle_timeout_s=0.2)
    release = threading.Event()

    async def main() -> None:
        idle, busy, touched = (table.open(c, "http") for c in ("a", "b", "c"))
        call = asyncio.ensure_future(table.run(busy, release.wait, 30))
        deadline = time.monotonic() + 0.6
        while time.monotonic() < deadline:  # activity keeps `touched` open
            table.touch(touched.id)
            await asyncio.sleep(0.02)
        assert closed == [idle.id]
        release.set()
        await call
        for _ in range(100):  # the call done, `busy` is idle from then on
            if busy.id in closed:
                break
            await asyncio.sleep(0.05)
        assert closed == [idle.id, busy.id] and list(table.sessions) == [touched.id]
        await table.stop()

    asyncio.run(main())
