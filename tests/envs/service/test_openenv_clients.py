"""`toolgym env-server` against OpenEnv's own clients, each from its own venv, and toolgym's venv
with the newest OpenEnv installed beside it (issue 39).

- openenv-core 0.3's `GenericEnvClient` (toolgym's dev extra, in toolgym's venv) and the newest
  `openenv`'s (a venv of `pip install openenv` and nothing else) drive `toolgym env-server`,
  started from toolgym's venv on 127.0.0.1, sync and async: each gets the in-process episode's
  observations and rewards, and the server writes the runner's trace.
- A venv of `pip install -e '<checkout>[service]' openenv` (pip resolves both; mcp goes to 1.x,
  which OpenEnv pins): `pip check` finds nothing broken, `toolgym env-server` serves that venv's
  OpenEnv client, OpenEnv's own MCP pieces import, and `toolgym mcp` refuses in one line naming
  the `mcp` extra.

The venvs are built once under TOOLGYM_TEST_VENVS (default ~/.cache/toolgym/test-venvs) and
built again a week later (to pick up a newer OpenEnv) or when pyproject.toml changes; the tests
are skipped, with the reason, when PyPI cannot be reached.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolgym.envs.service.catalog import Catalog
from toolgym.toolservers.mcp_sdk import MCP_EXTRA

from .support import TASK_ID, TASK_SET, env_server, fetch_trace, golden_outputs, local_env, reference_trace

# a venv build downloads and installs ~100-150 packages (pip's cache makes a rebuild quicker)
pytestmark = pytest.mark.timeout(3000)

CACHE = Path(os.environ.get("TOOLGYM_TEST_VENVS") or Path.home() / ".cache" / "toolgym" / "test-venvs")
MAX_AGE_S = 7 * 86400
BUILD_TIMEOUT_S = 2400

# run by a client venv's python: one episode with GenericEnvClient, sync then async
CLIENT = """
import asyncio, json, sys
from importlib.metadata import PackageNotFoundError, version
from openenv.core.generic_client import GenericEnvClient

url, task, tasks, outputs = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
reset = {"seed": 0, "task_id": task, "config": {"tasks": tasks}, "agent": "oracle"}
# a token (argv[5]) goes in the handshake's headers: openenv 0.10's client takes them (0.3's cannot)
options = {"headers": {"Authorization": f"Bearer {sys.argv[5]}"}} if len(sys.argv) > 5 else {}

def row(result):
    return [result.observation["text"], result.reward, result.done]

def sync_episode():
    with GenericEnvClient(base_url=url, **options).sync() as env:
        rows = [row(env.reset(**reset))] + [row(env.step({"text": raw})) for raw in outputs]
        return rows, env.state()

async def async_episode():
    async with GenericEnvClient(base_url=url, **options) as env:
        rows = [row(await env.reset(**reset))]
        for raw in outputs:
            rows.append(row(await env.step({"text": raw})))
        return rows, await env.state()

def release():
    for name in ("openenv", "openenv-core"):
        try:
            return f"{name} {version(name)}"
        except PackageNotFoundError:
            pass

print(json.dumps({"client": release(), "sync": sync_episode(), "async": asyncio.run(async_episode())}))
"""


# run by the venv of both: the releases installed, once OpenEnv's own MCP pieces (on fastmcp and
# the SDK it pins) have imported
VERSIONS = """
import json
from importlib.metadata import version
import openenv.core.env_server.mcp_environment
print(json.dumps([version("toolgym"), version("openenv"), version("mcp")]))
"""


# ---- the venvs ----------------------------------------------------------------------------------
def _pypi_unreachable() -> str | None:
    """Why PyPI cannot be asked for OpenEnv's releases now (None: it can)."""
    try:
        run = subprocess.run(
            [sys.executable, "-m", "pip", "index", "versions", "openenv", "--disable-pip-version-check"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        return "PyPI did not answer within 120 s"
    if run.returncode != 0:
        said = [line for line in run.stderr.splitlines() if not line.startswith("WARNING")]
        return f"PyPI is not reachable: {' '.join(said)[-300:] or 'pip index failed'}"
    return None


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One builder of a venv at a time (pytest-xdist workers share the cache)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def built_venv(name: str, requirements: list[str], key: str) -> Path:
    """The python of the cached venv `name` holding `requirements` (built again when `key`
    changes or a week on); skips the test when PyPI is unreachable and there is none to use."""
    folder = CACHE / name
    python = folder / "bin" / "python"
    stamp = folder / ".toolgym-built"
    with _locked(CACHE / f"{name}.lock"):
        fresh = stamp.is_file() and time.time() - stamp.stat().st_mtime < MAX_AGE_S
        if fresh and stamp.read_text() == key:
            return python
        reason = _pypi_unreachable()
        if reason is not None:
            pytest.skip(f"cannot build the {name} venv: {reason}")
        shutil.rmtree(folder, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, timeout=300)
        # --no-compile: byte-compiling every installed module took 40% of a build's CPU time
        # (60 s against 36 s for `openenv`); the tests import a small part of it
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile"]
        run = subprocess.run(
            [*pip, *requirements], capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, cwd=Path.cwd()
        )
        assert run.returncode == 0, f"pip install {requirements}: {run.stderr[-4000:]}"
        stamp.write_text(key)
    return python


@pytest.fixture(scope="module")
def openenv_venv() -> Path:
    """A venv of the newest `openenv` and nothing else."""
    return built_venv("openenv", ["openenv"], "openenv")


@pytest.fixture(scope="module")
def beside_venv() -> Path:
    """A venv of toolgym's service extra and the newest `openenv`, resolved together by pip."""
    key = hashlib.sha256(Path("pyproject.toml").read_bytes()).hexdigest()
    return built_venv("toolgym-and-openenv", ["-e", f"{Path.cwd()}[service]", "openenv"], key)


def _run(python: Path, code: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`code` run by `python` in a clean environment: no PYTHONPATH, so a venv sees only itself."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [str(python), "-c", code, *args], capture_output=True, text=True, timeout=timeout, env=env
    )


# ---- the episode --------------------------------------------------------------------------------
def _drive(python: Path, url: str, catalog: Catalog, tmp_path: Path, token: str | None = None) -> str:
    """OpenEnv's client under `python` runs the oracle's episode on the server at `url` (with
    `token`, if given), sync and async: each sees what the in-process env returns, and the trace
    is the runner's. Returns the client's release."""
    local = local_env(catalog)
    outputs = golden_outputs(local)
    obs, _ = local.reset(seed=0, options={"task": TASK_ID})
    expected: list[list[Any]] = [[obs, None, False]]
    for raw in outputs:
        obs, reward, terminated, truncated, _ = local.step(raw)
        expected.append([obs, reward, terminated or truncated])
    local.close()
    run = _run(python, CLIENT, url, TASK_ID, TASK_SET, json.dumps(outputs), *([token] if token else []))
    assert run.returncode == 0, run.stderr[-4000:]
    out = json.loads(run.stdout)
    reference = reference_trace(catalog, tmp_path)
    for mode in ("sync", "async"):
        rows, state = out[mode]
        assert rows == expected, mode
        assert state["step_count"] == len(outputs) and state["done"] is True, mode
        assert fetch_trace(url, state["session_id"], state["trace"], token) == reference, mode
    return str(out["client"])


def test_openenv_core_03_client_from_toolgyms_venv(tmp_path: Path, catalog: Catalog) -> None:
    with env_server(tmp_path / "traces") as (url, _, _):
        client = _drive(Path(sys.executable), url, catalog, tmp_path)
    assert client.startswith("openenv-core 0.3."), client


def test_newest_openenv_client_from_a_venv_of_its_own(
    tmp_path: Path, catalog: Catalog, openenv_venv: Path
) -> None:
    """The newest client sends a token too (`headers=`): the server here asks for one."""
    token = "openenv-client-token-0123"
    with env_server(tmp_path / "traces", "--token", token) as (url, _, _):
        client = _drive(openenv_venv, url, catalog, tmp_path, token)
    assert client.startswith("openenv "), client


def test_toolgym_service_and_the_newest_openenv_in_one_venv(
    tmp_path: Path, catalog: Catalog, beside_venv: Path
) -> None:
    """pip resolves `toolgym[service]` and `openenv` together, with mcp 1.x; both work there,
    and toolgym's MCP features say in one line what they need."""
    check = subprocess.run(
        [str(beside_venv), "-m", "pip", "check", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    versions = _run(beside_venv, VERSIONS)
    assert versions.returncode == 0, versions.stderr[-4000:]
    _, openenv, mcp = json.loads(versions.stdout)
    assert int(mcp.split(".")[0]) < 2, mcp  # the combination the issue is about
    with env_server(tmp_path / "traces", python=str(beside_venv)) as (url, _, _):
        client = _drive(beside_venv, url, catalog, tmp_path)
    assert client == f"openenv {openenv}"
    refused = _run(
        beside_venv, "from toolgym.cli import main\nmain(['mcp', '--tasks', 'ctool'])", timeout=120
    )
    assert refused.returncode == 2, refused.stderr[-4000:]
    [line] = refused.stderr.strip().splitlines()
    assert f"not the installed mcp {mcp}" in line and MCP_EXTRA in line, line
