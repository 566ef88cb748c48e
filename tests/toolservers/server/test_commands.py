"""`toolgym serve`: configuration errors from the CLI, and a real server process it starts."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from typer.testing import CliRunner

from toolgym.cli import app


def test_refuses_to_bind_beyond_loopback_without_a_token() -> None:
    result = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--port", "0"])
    assert result.exit_code == 2
    assert "beyond loopback" in result.output


def test_unknown_tools_and_bad_devices_are_refused() -> None:
    runner = CliRunner()
    unknown = runner.invoke(app, ["serve", "--port", "0", "--tools", "Calculator,NoSuchTool"])
    assert unknown.exit_code == 1 and "NoSuchTool" in unknown.output
    device = runner.invoke(app, ["serve", "--port", "0", "--tools", "OCR", "--device", "cuda:0"])
    assert device.exit_code == 1 and "supports: cpu" in device.output


def test_bad_config_file_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "server.toml"
    config.write_text("[tools.Calculator]\nmax_concurrency = 0\n")
    result = CliRunner().invoke(app, ["serve", "--config", str(config)])
    assert result.exit_code == 2 and "bad server configuration" in result.output


def test_serve_runs_a_server_process_with_a_subset_of_tools(tmp_path: Path) -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    token = "cli-server-token-0123456789"
    env = {**os.environ, "TOOLGYM_TOKEN": token}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolgym.cli",
            "serve",
            "--port",
            str(port),
            "--tools",
            "Calculator,SyntheticEmbed",
            "--lazy",
            "--no-mcp",
            "--log-level",
            "warning",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {token}"}
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/v1/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            assert time.monotonic() < deadline, "server did not come up"
            time.sleep(0.1)
        version = httpx.get(f"{url}/v1/version").json()
        assert version["faces"] == ["native", "agentlego"]
        assert sorted(version["tools"]) == ["Calculator", "SyntheticEmbed"]
        ready = httpx.get(f"{url}/v1/ready").json()
        assert ready["tools"] == {"Calculator": "ready", "SyntheticEmbed": "lazy"}
        r = httpx.post(
            f"{url}/v1/tools/Calculator/call", json={"arguments": {"expression": "2**5"}}, headers=headers
        )
        assert r.json()["content"] == "32"
        assert httpx.post(f"{url}/v1/tools/Calculator/call", json={"arguments": {}}).status_code == 401
        assert httpx.post(f"{url}/mcp", json={}, headers=headers).status_code == 404  # --no-mcp
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode in (0, 130)  # uvicorn re-raises the interrupt after a clean shutdown
    assert f"toolgym server on http://127.0.0.1:{port}" in out
