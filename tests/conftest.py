"""Session-wide test settings."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import process as futures_process

import pytest

POOL_WIND_DOWN_S = 15.0

_made_cache_dir: str | None = None


def pytest_configure(config: pytest.Config) -> None:
    # toolgym's disk caches (toolgym.cache) go to a folder of this session, never the user's
    # ~/.cache: a test must compute what it checks, not read what an earlier run stored
    global _made_cache_dir
    if "TOOLGYM_CACHE_DIR" not in os.environ:
        _made_cache_dir = tempfile.mkdtemp(prefix="toolgym-test-cache-")
        os.environ["TOOLGYM_CACHE_DIR"] = _made_cache_dir


def pytest_unconfigure(config: pytest.Config) -> None:
    global _made_cache_dir
    if _made_cache_dir is not None:
        shutil.rmtree(_made_cache_dir, ignore_errors=True)
        os.environ.pop("TOOLGYM_CACHE_DIR", None)
        _made_cache_dir = None


def _pool_threads() -> set[threading.Thread]:
    """The live manager threads of this process's `ProcessPoolExecutor`s (the interpreter joins
    each at exit, and each waits for its workers' calls to end)."""
    return {t for t in list(futures_process._threads_wakeups) if t.is_alive()}


@pytest.fixture(autouse=True)
def _no_pool_left_running() -> Iterator[None]:
    """A test that leaves a process pool with a busy worker fails, and its workers are ended: at
    exit the interpreter would otherwise wait for them for good (a CI run that never ends)."""
    before = _pool_threads()
    yield
    left = _pool_threads() - before
    for thread in left:
        thread.join(POOL_WIND_DOWN_S)
    stuck = [t for t in left if t.is_alive()]
    for thread in stuck:
        for worker in dict(getattr(thread, "processes", None) or {}).values():
            worker.kill()
    assert not stuck, f"the test left {len(stuck)} process pool(s) running (their workers are now killed)"
