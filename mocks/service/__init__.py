"""The mock apps over HTTP: a FastAPI service with one isolated MockWorld per session (reset,
checkpoint, restore, fork, hash, diff, scores; an idle reaper; limits), and a client whose
`RemoteMockWorld` is a `toolgym.world.World` for ToolEnv.

    from toolgym.mocks.service import MockServiceClient, ThreadedServer, create_app

    with ThreadedServer(create_app()) as url:
        world = MockServiceClient(url).world(["banking"])

Run a server: `toolgym lab mock-server --port 8100` (or `python -m toolgym.mocks.service`).
"""

from toolgym.http import InsecureBindError, check_bind
from toolgym.mocks.service.app import ServiceConfig, ServiceError, SessionManager, create_app
from toolgym.mocks.service.client import (
    MockServiceClient,
    MockServiceError,
    RemoteMockWorld,
    SessionLost,
)
from toolgym.mocks.service.server import ThreadedServer, serve

__all__ = [
    "InsecureBindError",
    "MockServiceClient",
    "MockServiceError",
    "RemoteMockWorld",
    "ServiceConfig",
    "ServiceError",
    "SessionLost",
    "SessionManager",
    "ThreadedServer",
    "check_bind",
    "create_app",
    "serve",
]
