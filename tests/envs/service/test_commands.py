"""`toolgym env-server` refuses what it must before serving (running it is test_client's)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from toolgym.cli import app
from toolgym.envs.service.catalog import Catalog

from .support import TASK_ID, TASK_SET, golden_outputs, local_env, without_timing


def test_generic_env_client_against_the_command(
    server_process: tuple[str, subprocess.Popen[bytes], Path], catalog: Catalog
) -> None:
    """`toolgym env-server` in its own process: openenv-core's client gets the in-process episode."""
    from openenv.core.generic_client import GenericEnvClient

    url, _, trace_dir = server_process
    local = local_env(catalog)
    obs, info = local.reset(seed=0, options={"task": TASK_ID})
    with GenericEnvClient(base_url=url).sync() as remote:
        result = remote.reset(seed=0, task_id=TASK_ID, config={"tasks": TASK_SET})
        assert result.observation["text"] == obs
        for raw in golden_outputs(local):
            obs, reward, terminated, truncated, info = local.step(raw)
            result = remote.step({"text": raw})
            assert (result.observation["text"], result.reward, result.done) == (
                obs,
                reward,
                terminated or truncated,
            )
            assert without_timing(result.observation["info"]) == without_timing(info)
        session_id = remote.state()["session_id"]
    local.close()
    assert result.reward == 1.0
    assert list((trace_dir / session_id).glob("*.jsonl"))


def test_no_token_beyond_loopback() -> None:
    result = CliRunner().invoke(app, ["env-server", "--host", "0.0.0.0"], env={"TOOLGYM_TOKEN": ""})
    assert result.exit_code == 2
    assert "token" in result.output


def test_without_openenv_the_command_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['openenv'] = None\n"
        "from typer.testing import CliRunner\n"
        "from toolgym.cli import app\n"
        "print(CliRunner().invoke(app, ['env-server']).output)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "pip install 'toolgym[service]'" in " ".join(out.split())


def test_unreachable_tool_server() -> None:
    result = CliRunner().invoke(app, ["env-server", "--tool-server", "http://127.0.0.1:1"])
    assert result.exit_code == 2
    assert "cannot start the env service" in result.output


def test_bad_default_task_set() -> None:
    result = CliRunner().invoke(app, ["env-server", "--default-tasks", "nope"])
    assert result.exit_code == 2
    assert "nope" in result.output


def test_without_openenv_the_server_names_the_extra_and_the_client_still_imports() -> None:
    code = (
        "import sys; sys.modules['openenv'] = None\n"
        "import toolgym.envs.service.client\n"
        "try:\n    import toolgym.envs.service.app\nexcept ImportError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "pip install 'toolgym[service]'" in out
