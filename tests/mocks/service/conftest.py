"""A real mock service (uvicorn on 127.0.0.1, an ephemeral port) per test module or test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from toolgym.mocks.service import MockServiceClient, ServiceConfig, ThreadedServer, create_app

TOKEN = "test-token-0123456789abcdef"


@pytest.fixture(scope="module")
def service_url() -> Iterator[str]:
    with ThreadedServer(create_app(ServiceConfig(max_sessions=64))) as url:
        yield url


@pytest.fixture
def client(service_url: str) -> Iterator[MockServiceClient]:
    with MockServiceClient(service_url) as c:
        yield c
        for s in c.sessions():  # each test leaves the shared server empty
            c.delete_session(s["session_id"])
