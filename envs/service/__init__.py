"""The env service: ToolEnv sessions over HTTP and WebSocket in OpenEnv's wire protocol.

- `toolgym env-server` (`commands.py`) serves sessions; the server (`app.py`: the HTTP routes,
  `websocket.py`: the WebSockets, `sessions.py`: the session table, `environment.py`: a session,
  `wire.py`: the protocol's types) is toolgym's own code on fastapi and imports no openenv, so it
  installs and runs beside any OpenEnv release (`openenv-core` 0.3, `openenv` 0.10).
- `RemoteToolEnv` (`client.py`) is a `gymnasium.Env` on a session of that server. It speaks the
  wire protocol itself (websockets, httpx); a dead server is an `infra_error` observation, never
  an exception.
"""
