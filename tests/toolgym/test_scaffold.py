"""`toolgym new`: each kind of package installs with `pip install -e` into a fresh venv, passes its
own tests as generated, and every command of toolgym in that venv finds what it adds.

One venv for the module: it sees this interpreter's packages (toolgym, its dependencies) through a
.pth line, as `--system-site-packages` would for a base interpreter; nothing is downloaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.pantry import install_pantry, registered
from toolgym.cli import main
from toolgym.scaffold import Kind

NAMES = {Kind.app: "notebook", Kind.tool: "word_count", Kind.tasks: "arith", Kind.suite: "solved_share"}


def _run(args: list[str], *, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "300", "TOOLGYM_CACHE": "0"}
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the venv's python, the folder of the generated packages), all four installed."""
    work = tmp_path_factory.mktemp("plugins")
    for kind, name in NAMES.items():
        with pytest.raises(SystemExit) as done:
            main(["new", kind.value, name, "--dir", str(work)])
        assert done.value.code == 0
    # --without-pip: the venv's own (older) setuptools would shadow the one that builds editables
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(work / "venv")], check=True)
    python = work / "venv" / "bin" / "python"
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=work)
    ours = sysconfig.get_paths()["purelib"]
    Path(purelib.stdout.strip(), "toolgym-base.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    packages = [
        arg for name in NAMES.values() for arg in ("-e", str(work / f"toolgym-{name.replace('_', '-')}"))
    ]
    pip = [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index"]
    installed = _run([*pip, *packages], cwd=work)
    assert installed.returncode == 0, installed.stderr
    return python, work


@pytest.mark.parametrize("kind", list(Kind))
def test_a_generated_package_passes_its_own_tests(venv: tuple[Path, Path], kind: Kind) -> None:
    python, work = venv
    root = work / f"toolgym-{NAMES[kind].replace('_', '-')}"
    tested = _run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=root)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert " passed" in tested.stdout and "skipped" not in tested.stdout
    # the first run recorded the episodes' tool calls: the golden set its CI replays
    assert list((root / "tests" / "cassettes").rglob("*.sqlite"))


def test_every_command_finds_the_plugins(venv: tuple[Path, Path]) -> None:
    python, work = venv
    toolgym = [str(python), "-m", "toolgym.cli"]
    listed = _run([*toolgym, "tasks"], cwd=work)
    assert listed.returncode == 0 and not listed.stderr, listed.stderr
    assert {"demo", "notebook", "word_count", "arith", "solved_share"} <= {
        row.split("│")[1].strip() for row in listed.stdout.splitlines() if row.count("│") > 2
    }
    tools = _run([*toolgym, "tools", "--format", "openai"], cwd=work)
    assert {"WordCount", "Calculator"} <= {t["function"]["name"] for t in json.loads(tools.stdout)}

    out = work / "runs" / "all"
    sets = ["--tasks", "notebook", "--tasks", "word_count", "--tasks", "arith"]
    ran = _run([*toolgym, "run", *sets, "--agent", "oracle", "--out", str(out), "--json"], cwd=work)
    assert ran.returncode == 0, ran.stderr
    episodes = json.loads(ran.stdout)["episodes"]
    assert sorted(e["task_id"] for e in episodes if e["reward"] == 1.0) == [
        "arith-add-002",
        "arith-multiply-001",
        "notebook-read-001",
        "notebook-write-002",
        "word_count-count-001",
    ]
    scored = _run([*toolgym, "eval", "--suite", "solved_share", str(out), "--json"], cwd=work)
    assert scored.returncode == 0, scored.stderr
    assert '"solved": 1.0' in scored.stdout

    # the app by name wherever apps are named: check_app, a world (mcp --apps builds one), the
    # env server's catalog and the tool server's
    probe = (
        "from toolgym.mocks import MockWorld, check_app\n"
        "from toolgym.envs.service.catalog import Catalog\n"
        "from toolgym.toolservers.server.providers import catalog\n"
        "assert check_app('notebook') == []\n"
        "assert 'add_note' in MockWorld(['notebook']).tools.names\n"
        "c = Catalog.build()\n"
        "assert {'notebook', 'arith'} <= set(c.task_paths) and 'WordCount' in c.tools.names\n"
        "assert 'WordCount' in [p.name for p in catalog()]\n"
        "print('ok')\n"
    )
    probed = _run([str(python), "-c", probe], cwd=work)
    assert probed.stdout.strip() == "ok", probed.stderr


def test_mcp_serves_the_plugin_app(venv: tuple[Path, Path]) -> None:
    """`toolgym mcp --apps notebook` in the venv, driven by the mcp SDK's own stdio client."""
    python, work = venv
    client = (
        "import sys, anyio\n"
        "from mcp import Client\n"
        "from mcp.client.stdio import StdioServerParameters\n"
        "async def main():\n"
        "    server = StdioServerParameters(command=sys.executable,"
        " args=['-m', 'toolgym.cli', 'mcp', '--apps', 'notebook'])\n"
        "    async with Client(server) as c:\n"
        "        names = [t.name for t in (await c.list_tools()).tools]\n"
        "        added = await c.call_tool('add_note', {'title': 'x', 'topic': 'work', 'body': 'y'})\n"
        "        print(sorted(names), added.structured_content['result']['note_id'])\n"
        "anyio.run(main)\n"
    )
    served = _run([str(python), "-c", client], cwd=work)
    assert served.returncode == 0, served.stderr
    assert served.stdout.split() == [
        "['add_note',",
        "'final_answer',",
        "'get_note',",
        "'list_notes']",
        "NOTE-000021",
    ]


@pytest.mark.parametrize(
    ("kind", "name", "holder"),
    [
        ("app", "banking", "the app 'banking' of package toolgym"),
        ("tasks", "mtu", "the task set 'mtu' of package toolgym"),
        ("suite", "gta", "the suite 'gta' of package toolgym"),
        ("tool", "calculator", "the tool 'Calculator' of package toolgym"),  # its tool: Calculator
    ],
)
def test_new_refuses_a_taken_name_in_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, name: str, holder: str
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["new", kind, name, "--dir", str(tmp_path)])
    assert done.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and f"is taken: {holder} has it" in lines[0], lines
    assert list(tmp_path.iterdir()) == []


def test_new_refuses_a_name_an_installed_plugin_has(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with registered(install_pantry(tmp_path / "site")), pytest.raises(SystemExit) as done:
        main(["new", "tasks", "pantry_stock", "--dir", str(out)])
    assert done.value.code == 2
    assert "the suite 'pantry_stock' of package pantry-env has it" in capsys.readouterr().err
    assert list(out.iterdir()) == []
