"""The commands: `toolgym serve --backend docker`, `toolgym lab up`, `toolgym lab images`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

import httpx
from typer.testing import CliRunner

from toolgym.actions import ToolCall
from toolgym.cli import app as cli_app
from toolgym.files import FileStore
from toolgym.tools import ToolContext
from toolgym.toolservers.clients.remote import RemoteToolSet
from toolgym.toolservers.hosting.container import LABEL
from toolgym.toolservers.hosting.process import free_port

TOKEN = "cli-test-token-0123456789abcdef"


def _toolgym(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "TOOLGYM_TOKEN": TOKEN}
    return subprocess.Popen(
        [sys.executable, "-m", "toolgym.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _endpoints(proc: subprocess.Popen[str], n: int, timeout_s: float = 120) -> list[list[str]]:
    """The first `n` endpoint lines the command prints (kind, where, token, backend:id)."""
    assert proc.stdout is not None
    lines: list[list[str]] = []
    deadline = time.monotonic() + timeout_s
    while len(lines) < n:
        line = proc.stdout.readline()
        if not line:
            assert proc.stderr is not None
            raise AssertionError(f"command ended: {proc.wait()} {proc.stderr.read()[-2000:]}")
        if "\t" in line:
            lines.append(line.rstrip("\n").split("\t"))
        assert time.monotonic() < deadline
    return lines


def _stop(proc: subprocess.Popen[str]) -> int:
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_serve_with_the_docker_backend(docker_client: Any, images: dict[str, str]) -> None:
    port = free_port()
    proc = _toolgym("serve", "--backend", "docker", "--port", str(port), "--tools", "Calculator")
    try:
        [(kind, url, token, where)] = _endpoints(proc, 1)
        assert (kind, url, token) == ("tools", f"http://127.0.0.1:{port}", f"token={TOKEN}")
        assert where.startswith("docker:")
        remote = RemoteToolSet(url, token=TOKEN)
        obs = remote.call(
            ToolCall(name="Calculator", arguments={"expression": "6 * 7"}), ToolContext(FileStore())
        )
        assert obs.text == "42"
        assert httpx.get(f"{url}/v1/tools").status_code == 401  # the token is enforced
        container = docker_client.containers.get(where.split(":")[1])
        bindings = container.attrs["HostConfig"]["PortBindings"]
        assert bindings == {"8000/tcp": [{"HostIp": "127.0.0.1", "HostPort": str(port)}]}
    finally:
        _stop(proc)
    left = docker_client.containers.list(all=True, filters={"label": LABEL})
    assert [c for c in left if c.id.startswith(where.split(":")[1])] == []  # removed on Ctrl-C


def test_lab_up_with_the_process_backend() -> None:
    proc = _toolgym("lab", "up", "--backend", "process", "--no-network")
    try:
        [(kind, where, token, backend)] = _endpoints(proc, 1)
        assert kind == "mocks" and where.startswith("unix:") and backend.startswith("process:")
        sock = where.removeprefix("unix:")
        with httpx.Client(transport=httpx.HTTPTransport(uds=sock), base_url="http://x") as client:
            assert client.get("/health").json()["status"] == "ok"
            auth = {"authorization": f"Bearer {token.removeprefix('token=')}"}
            assert client.post("/sessions", json={"apps": ["banking"]}, headers=auth).status_code == 201
    finally:
        _stop(proc)
    assert not os.path.exists(sock)  # stopped and cleaned up


def test_lab_images_lists_the_images(docker_client: Any, images: dict[str, str]) -> None:
    result = CliRunner().invoke(cli_app, ["lab", "images"])
    assert result.exit_code == 0, result.output
    for name in ("base", "toolserver", "mockserver", "toolserver-gpu"):
        assert name in result.output
