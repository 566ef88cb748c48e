"""Session-wide test settings."""

from __future__ import annotations

import os
import tempfile

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # toolgym's disk caches (toolgym.cache) go to a folder of this session, never the user's
    # ~/.cache: a test must compute what it checks, not read what an earlier run stored
    if "TOOLGYM_CACHE_DIR" not in os.environ:
        os.environ["TOOLGYM_CACHE_DIR"] = tempfile.mkdtemp(prefix="toolgym-test-cache-")
