"""Fixtures of the env-service tests: the catalog (built once) and a served app per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from toolgym.envs.service.catalog import Catalog

from .support import Served, serve


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return Catalog.build()


@pytest.fixture
def served(catalog: Catalog, tmp_path: Path) -> Iterator[Served]:
    pytest.importorskip("openenv", reason="the env service needs openenv-core (toolgym[service])")
    from toolgym.envs.service.app import create_app

    trace_dir = tmp_path / "traces"
    server = serve(create_app(catalog, trace_dir=trace_dir))
    try:
        yield Served(server.url, trace_dir, server)
    finally:
        server.stop()
