"""Fixtures for the container tests: a real Docker daemon (started here if none runs and we may)
and the toolgym images (built if missing or out of date; `.ci/run` builds them beforehand).

When no daemon can be had, the Docker tests skip with a reason that starts with
"DOCKER UNAVAILABLE" (listed by `pytest -ra`, and as a warning); nothing else skips them.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from toolgym.toolservers.hosting.container import ContainerHost, DockerUnavailable, start_dockerd
from toolgym.toolservers.hosting.images import DEFAULT_IMAGES, ImageBuilder

_unavailable: list[str] = []


@pytest.fixture(scope="session")
def docker_client() -> Any:
    if _unavailable:
        pytest.skip(_unavailable[0])
    try:
        return start_dockerd(wait_s=30)
    except DockerUnavailable as exc:
        reason = f"DOCKER UNAVAILABLE, container tests NOT run: {exc}"
        _unavailable.append(reason)
        print(f"\n{'!' * 78}\n{reason}\n{'!' * 78}", file=sys.stderr)
        warnings.warn(reason, stacklevel=1)  # also in pytest's warnings summary
        pytest.skip(reason)


@pytest.fixture(scope="session")
def images(docker_client: Any) -> dict[str, str]:
    """The CPU images, built now if missing or outdated (minutes on a fresh machine)."""
    builder = ImageBuilder(docker_client, log=lambda line: print(line, file=sys.stderr))
    return builder.ensure(DEFAULT_IMAGES)


@pytest.fixture(scope="session")
def container_backend(docker_client: Any, images: dict[str, str]) -> Iterator[ContainerHost]:
    backend = ContainerHost(docker_client)
    yield backend
    backend.close()
