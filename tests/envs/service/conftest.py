"""Fixtures of the env-service tests: the catalog (built once) and a served app per test."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolgym.envs.service.catalog import Catalog

from .support import Served, env_server, serve


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return Catalog.build()


@pytest.fixture
def served(catalog: Catalog, tmp_path: Path) -> Iterator[Served]:
    from toolgym.envs.service.app import create_app

    trace_dir = tmp_path / "traces"
    server = serve(create_app(catalog, trace_dir=trace_dir))
    try:
        yield Served(server.url, trace_dir, server)
    finally:
        server.stop()


@pytest.fixture
def server_process(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    """`toolgym env-server` in its own process, to be killed by the test."""
    with env_server(tmp_path / "traces", "--max-sessions", "128") as started:  # room for 100 idle sessions
        yield started
