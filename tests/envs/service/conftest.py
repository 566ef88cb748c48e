"""Fixtures of the env-service tests: the catalog (built once) and a served app per test."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolgym.envs.service.catalog import Catalog
from toolgym.toolservers.hosting.base import wait_healthy

from .support import Served, free_port, serve


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


@pytest.fixture
def server_process(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    """`toolgym env-server` in its own process, to be killed by the test."""
    pytest.importorskip("openenv", reason="the env service needs openenv-core (toolgym[service])")
    port = free_port()
    trace_dir = tmp_path / "traces"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolgym.cli",
            "env-server",
            "--port",
            str(port),
            "--trace-dir",
            str(trace_dir),
            "--max-sessions",
            "128",  # room for the idle-sessions test
        ],
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(Path.cwd()), os.environ.get("PYTHONPATH", "")]),
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(
            url, timeout_s=120, alive=lambda: proc.poll() is None, logs=lambda: "", what="env-server"
        )
        yield url, proc, trace_dir
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
