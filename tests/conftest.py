"""Session-wide test settings."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

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
