"""The MCP SDK as an optional dependency (the `mcp` extra): without it, or with a 1.x (what
OpenEnv 0.10 pins), toolgym's MCP features say so in one line naming the extra, and the rest
runs: the tool server serves its other faces and answers /mcp with a 501 that says why, the other
remote-tool clients import. Each case runs in a fresh interpreter: a missing SDK is
`sys.modules['mcp'] = None`, a 1.x is a site folder whose `mcp` is release 1.30.0 without the 2.x
names (no download: the real 1.x is tests/envs/service/test_openenv_venvs.py's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolgym.toolservers.mcp_sdk import MCP_EXTRA, mcp_problem

# the tool server with the calculator, its /mcp and a native call, and the MCP client importer
PROBE = """
import json, httpx
from toolgym.toolservers.mcp_sdk import mcp_problem
from toolgym.toolservers.gta.calculator import calculator
from toolgym.toolservers.server import ServerThread, create_app
out = {"problem": mcp_problem()}
with ServerThread(create_app([calculator])) as url:
    mcp = httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=30)
    call = httpx.post(f"{url}/v1/tools/Calculator/call", json={"arguments": {"expression": "6*7"}}, timeout=30)
    faces = httpx.get(f"{url}/v1/version", timeout=30).json().get("faces")
out.update(mcp=[mcp.status_code, mcp.json()], call=call.json()["content"], faces=faces)
try:
    from toolgym.toolservers.clients import mcp_tools
except ImportError as exc:
    out["importer"] = [type(exc).__name__, str(exc)]
import toolgym.toolservers.clients as clients
out["others"] = callable(clients.RemoteToolSet) and callable(clients.openapi_tools)
print(json.dumps(out))
"""


def fake_mcp_1x(site: Path) -> dict[str, str]:
    """A site folder whose `mcp` is a 1.x as toolgym sees one (release 1.30.0, no `MCPError`,
    no `Client`), and the environment that puts it before the installed SDK."""
    (site / "mcp").mkdir(parents=True)
    (site / "mcp" / "__init__.py").write_text("class McpError(Exception):  # 1.x's name\n    pass\n")
    dist = site / "mcp-1.30.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mcp\nVersion: 1.30.0\n")
    return {"PYTHONPATH": os.pathsep.join([str(site), str(Path.cwd())])}


def _python(code: str, env: dict[str, str], prelude: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", f"{prelude}\n{code}"],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONPATH": str(Path.cwd()), **env},
    )


CASES = ["missing", "1.x"]


def _case(case: str, tmp_path: Path) -> tuple[dict[str, str], str, str]:
    """(environment, prelude, what the line says) for a missing or a 1.x SDK."""
    if case == "missing":
        return {}, "import sys; sys.modules['mcp'] = None", "which is not installed"
    return fake_mcp_1x(tmp_path / "site"), "", "not the installed mcp 1.30.0"


def test_the_dev_install_has_a_usable_sdk() -> None:
    assert mcp_problem() is None


@pytest.mark.parametrize("case", CASES)
def test_without_a_usable_sdk_the_tool_server_serves_its_other_faces(case: str, tmp_path: Path) -> None:
    env, prelude, says = _case(case, tmp_path)
    run = _python(PROBE, env, prelude)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert says in out["problem"] and MCP_EXTRA in out["problem"]
    status, body = out["mcp"]
    assert status == 501 and body["error"]["message"] == out["problem"]
    assert out["call"] == "42" and out["faces"] == ["native", "agentlego"]
    assert out["importer"] == ["MCPUnavailable", out["problem"]]
    assert out["others"] is True


@pytest.mark.parametrize("case", CASES)
def test_without_a_usable_sdk_toolgym_mcp_is_one_line_naming_the_extra(case: str, tmp_path: Path) -> None:
    env, prelude, says = _case(case, tmp_path)
    run = _python("from toolgym.cli import main\nmain(['mcp', '--tasks', 'ctool'])", env, prelude)
    assert run.returncode == 2, run.stderr
    [line] = run.stderr.strip().splitlines()
    assert line.startswith("cannot start the MCP server: ") and says in line and MCP_EXTRA in line
