"""The env service: ToolEnv sessions over HTTP and WebSocket in OpenEnv's wire protocol.

- `toolgym env-server` (`commands.py`) serves sessions; the server (`app.py`, `environment.py`)
  is built on openenv-core's own server pieces and needs the optional extra:
  `pip install 'toolgym[service]'`.
- `RemoteToolEnv` (`client.py`) is a `gymnasium.Env` on a session of that server. It speaks the
  wire protocol itself (websockets, httpx), so a trainer needs no openenv install to use it; a
  dead server is an `infra_error` observation, never an exception.

Importing this package imports no openenv: the server modules import it when they are used.
"""

from __future__ import annotations

OPENENV_MISSING = (
    "the toolgym env service needs openenv-core, an optional dependency: pip install 'toolgym[service]'"
)

__all__ = ["OPENENV_MISSING"]
