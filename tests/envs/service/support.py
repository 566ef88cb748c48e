"""Helpers of the env-service tests: real uvicorn servers on loopback ports, the bundled mock-app
task set, an in-process ToolEnv on the same tools as the reference, a tool that blocks on demand."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from toolgym.envs.agents import OracleAgent, golden_action
from toolgym.envs.runner import run_episode, strict_arguments
from toolgym.envs.service.catalog import Catalog
from toolgym.envs.tool_env import ToolEnv
from toolgym.mocks.service.server import ThreadedServer
from toolgym.tasks import Task
from toolgym.tools import ToolSet, tool
from toolgym.toolservers.hosting.base import wait_healthy
from toolgym.toolservers.hosting.process import free_port as free_port

TASK_SET = "ctool"
TASK_ID = "ctool-express-cancel-002"  # a write: state hash, diff and a state-scored reward


@dataclass
class Served:
    url: str
    trace_dir: Path
    server: ThreadedServer


def serve(app: Any, ws_max_size: int | None = None) -> ThreadedServer:
    server = ThreadedServer(app)
    if ws_max_size is not None:
        server.server.config.ws_max_size = ws_max_size  # read when uvicorn starts
    server.start()
    return server


@contextlib.contextmanager
def env_server(
    trace_dir: Path,
    *options: str,
    env: dict[str, str] | None = None,
    soft_file_limit: int | None = None,
    python: str = sys.executable,
    prelude: str = "",
) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    """`toolgym env-server` in its own process (with `options`, extra `env` variables, and a
    lower soft limit on open files to start with), run by `python` after `prelude` (Python code):
    its URL, process and trace folder."""
    port = free_port()
    command = [
        python,
        "-c",
        f"{prelude}\nimport sys\nfrom toolgym.cli import main\nmain(sys.argv[1:])",
        "env-server",
        "--port",
        str(port),
        "--trace-dir",
        str(trace_dir),
    ]
    if soft_file_limit is not None:  # as a shell's `ulimit -Sn N` would leave it
        command = ["sh", "-c", f'ulimit -Sn {soft_file_limit} && exec "$@"', "sh", *command]
    proc = subprocess.Popen(
        [*command, *options],
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(Path.cwd()), os.environ.get("PYTHONPATH", "")]),
            **(env or {}),
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


def files_open_under(folder: Path) -> list[str]:
    """The files this process has open under `folder` (/proc/self/fd)."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own descriptor is gone by now
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith(str(folder)):
                found.append(target)
    return found


def local_env(catalog: Catalog, protocol: str = "react") -> ToolEnv:
    return ToolEnv(catalog.tools, catalog.task_set(TASK_SET), protocol=protocol)


def golden_outputs(env: ToolEnv, task_id: str = TASK_ID) -> list[Any]:
    """The oracle's raw outputs for a task, in the env's protocol (what OracleAgent sends: each
    golden action in the form the protocol's prompt asks for)."""
    task: Task = env.tasks[task_id]
    return [env.protocol.format_action(golden_action(step.action, env.protocol)) for step in task.golden]


def reference_trace(
    catalog: Catalog, tmp_path: Path, protocol: str = "react", *, strict: bool = False
) -> bytes:
    """The trace `run_episode` writes for the oracle on TASK_ID, seed 0 (what a session writes);
    `strict`: under `strict_arguments()`, as `toolgym run --strict-arguments` runs it."""
    env = local_env(catalog, protocol)
    with strict_arguments(strict):
        result = run_episode(
            env, OracleAgent(env.protocol), env.tasks[TASK_ID], seed=0, trace_dir=tmp_path / "local"
        )
    env.close()
    assert result.trace_path is not None
    return result.trace_path.read_bytes()


def fetch_trace(url: str, session_id: str, name: str, token: str | None = None) -> bytes:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = httpx.get(f"{url}/sessions/{session_id}/traces/{name}", headers=headers, timeout=60)
    assert response.status_code == 200, response.text
    return response.content


def without_timing(info: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in info.items() if k not in ("timing", "session_id")}


class Gate:
    """A tool that blocks until released: makes "a step still running" a fact, not a race."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

        @tool(name="Wait", description="Waits until the test releases it.")
        def wait(note: str) -> str:
            self.entered.set()
            self.release.wait(30)
            return note

        self.tools = ToolSet([wait])


GATE_TASKS = '{"id": "wait-1", "query": "wait, then answer", "tools": ["Wait"]}\n'
