"""`toolgym env-server` refuses what it must before serving (running it is test_client's)."""

from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from toolgym.cli import app


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
