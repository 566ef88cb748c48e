"""A third-party environment as a stranger ships it (issue 29, item 3): examples/pantry, a package
written against toolgym's public API only (an app with reads and writes, a tool, a task set, a
suite), built into a wheel and installed beside a wheel of this checkout's toolgym into a fresh
venv; every command of toolgym there finds what it adds and runs it end to end: `tasks`, `tools`,
`run`, `eval`, `record`/`replay`, `mcp` and `env-server`.

The venv gets toolgym's dependencies from this interpreter's site-packages through a .pth line
that only puts that folder on sys.path: the .pth files there (this checkout's editable install of
toolgym among them) are not read, so the toolgym the venv imports is the wheel's. Nothing is
downloaded."""

from __future__ import annotations

import ast
import importlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.toolgym.test_layout import BUILD_INPUTS

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "pantry"
# what a source tree of toolgym needs to build its wheel
TOOLGYM_INPUTS = BUILD_INPUTS
# the public API: these packages' __all__ (a name from anywhere else is a private import)
PUBLIC = ("toolgym", "toolgym.mocks", "toolgym.evaluation")
TASK_IDS = ["pantry-convert-003", "pantry-read-001", "pantry-restock-004", "pantry-write-002"]


@dataclass(frozen=True)
class Venv:
    python: Path
    work: Path

    @property
    def toolgym(self) -> list[str]:
        return [str(self.python.parent / "toolgym")]

    def run(self, args: list[str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "COLUMNS": "300", "TOOLGYM_CACHE": "0"}
        env.pop("PYTHONPATH", None)
        return subprocess.run(
            args, cwd=self.work, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )


def _wheel(source: Path, out: Path) -> Path:
    """The wheel built from `source` (a copy: the build's own files stay out of the checkout)."""
    pip = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out)]
    built = subprocess.run([*pip, "."], cwd=source, capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr
    (wheel,) = out.glob("*.whl")
    return wheel


def _copy(entries: tuple[str, ...], source: Path, into: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    into.mkdir(parents=True)
    for entry in entries:
        path = source / entry
        if path.is_dir():
            shutil.copytree(path, into / entry, symlinks=True, ignore=ignore)
        else:
            shutil.copy2(path, into / entry)
    return into


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    work = tmp_path_factory.mktemp("third_party")
    toolgym_wheel = _wheel(_copy(TOOLGYM_INPUTS, ROOT, work / "src" / "toolgym"), work / "wheels" / "toolgym")
    pantry_files = tuple(p.name for p in EXAMPLE.iterdir())
    pantry_wheel = _wheel(_copy(pantry_files, EXAMPLE, work / "src" / "pantry"), work / "wheels" / "pantry")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(work / "venv")], check=True)
    python = work / "venv" / "bin" / "python"
    probe = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    purelib = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, check=True)
    # a bare path: this interpreter's packages on sys.path, its .pth files unread
    Path(purelib.stdout.strip(), "toolgym-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    venv = Venv(python, work)
    pip = [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index"]
    installed = venv.run([*pip, str(toolgym_wheel), str(pantry_wheel)])
    assert installed.returncode == 0, installed.stderr
    return venv


def _imports(path: Path) -> Iterator[tuple[str, str]]:
    """(module, name) of every `from toolgym... import name` in a file, ("toolgym.x", "") for a
    plain `import toolgym.x`."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "toolgym":
            yield from ((node.module or "", alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            yield from ((a.name, "") for a in node.names if a.name.split(".")[0] == "toolgym")


def test_the_package_uses_only_the_public_api() -> None:
    used = [(m, n) for path in sorted(EXAMPLE.rglob("*.py")) for m, n in _imports(path)]
    assert {m for m, _ in used} >= {"toolgym", "toolgym.mocks", "toolgym.evaluation"}
    private = [f"{m}:{n}" for m, n in used if m not in PUBLIC or n not in importlib.import_module(m).__all__]
    assert private == []


def test_it_runs_from_a_wheel_in_a_fresh_venv(venv: Venv) -> None:
    listed = venv.run([*venv.toolgym, "tasks"])
    assert listed.returncode == 0 and not listed.stderr, listed.stderr
    rows = {row.split("│")[1].strip(): row for row in listed.stdout.splitlines() if row.count("│") > 2}
    # both sets' files lie in the venv: toolgym and the package are the wheels', not the checkout
    site = venv.python.parents[1] / "lib"
    assert str(site) in rows["demo"] and str(site) in rows["pantry"] and " 4 " in rows["pantry"]

    # pantry-convert-003 calls the package's tool (ConvertUnits) beside its app
    ran = venv.run(
        [*venv.toolgym, "run", "--tasks", "pantry", "--agent", "oracle", "--out", "runs/pantry", "--json"]
    )
    assert ran.returncode == 0, ran.stderr
    episodes = json.loads(ran.stdout)["episodes"]
    assert sorted(e["task_id"] for e in episodes if e["reward"] == 1.0) == TASK_IDS
    scored = venv.run([*venv.toolgym, "eval", "--suite", "pantry_stock", "runs/pantry", "--json"])
    assert scored.returncode == 0, scored.stderr
    assert json.loads(scored.stdout)["results"]["pantry_stock"]["metrics"] == {
        "solved": 1.0,
        "tool_calls": 1.25,
    }


def test_a_golden_set_records_and_replays(venv: Venv) -> None:
    recorded = venv.run([*venv.toolgym, "record", "--tasks", "pantry", "--out", "golden/pantry"])
    assert recorded.returncode == 0, recorded.stderr
    golden = sorted((venv.work / "golden" / "pantry").rglob("pantry-*.jsonl"))
    assert [p.name.split(".")[0] for p in golden] == TASK_IDS
    replayed = venv.run([*venv.toolgym, "replay", "golden/pantry", "--out", "runs/replay"])
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    again = sorted((venv.work / "runs" / "replay").rglob("pantry-*.jsonl"))
    assert [p.read_bytes() for p in again] == [p.read_bytes() for p in golden]


def test_mcp_serves_the_app(venv: Venv) -> None:
    """`toolgym mcp --apps pantry`, driven by the mcp SDK's own stdio client: a write, then a read
    that sees it."""
    client = (
        "import sys, anyio\n"
        "from mcp import Client\n"
        "from mcp.client.stdio import StdioServerParameters\n"
        "async def main():\n"
        "    server = StdioServerParameters(command=sys.argv[1], args=['mcp', '--apps', 'pantry'])\n"
        "    async with Client(server) as c:\n"
        "        names = sorted(t.name for t in (await c.list_tools()).tools)\n"
        "        await c.call_tool('use_item', {'item': 'pepper', 'grams': 15})\n"
        "        got = await c.call_tool('get_item', {'item': 'pepper'})\n"
        "        print(names, got.structured_content['result']['item']['grams'])\n"
        "anyio.run(main)\n"
    )
    served = venv.run([str(venv.python), "-c", client, *venv.toolgym])
    assert served.returncode == 0, served.stderr
    assert served.stdout.split() == [
        "['final_answer',",
        "'get_item',",
        "'list_shelf',",
        "'restock',",
        "'use_item']",
        "25",
    ]


def test_the_env_server_serves_the_task_set(venv: Venv, unused_port: int) -> None:
    """`toolgym env-server` offers the set like a bundled one; RemoteToolEnv plays its golden
    chains over HTTP and gets the full reward."""
    args = [*venv.toolgym, "env-server", "--port", str(unused_port), "--trace-dir", "runs/env-service"]
    env = {**os.environ, "TOOLGYM_CACHE": "0"}
    server = subprocess.Popen(args, cwd=venv.work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    client = (
        "import sys, time\n"
        "from toolgym import TaskSet\n"
        "from toolgym.envs.service.client import RemoteToolEnv\n"
        "from toolgym.protocols import get_protocol\n"
        "import pantry_env\n"
        "react = get_protocol('react')\n"
        "remote = RemoteToolEnv(sys.argv[1], config={'tasks': 'pantry'}, transport='http', agent='oracle')\n"
        "for task in TaskSet.load(pantry_env.TASKS):\n"
        "    remote.reset(options={'task': task.id})\n"
        "    for step in task.golden:\n"
        "        _, reward, done, _, _ = remote.step(react.format_action(step.action))\n"
        "    print(task.id, reward, done)\n"
        "remote.close()\n"
    )
    try:
        _wait_for_port(unused_port, server)
        played = venv.run([str(venv.python), "-c", client, f"http://127.0.0.1:{unused_port}"])
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert played.returncode == 0, played.stderr
    assert sorted(played.stdout.splitlines()) == [f"{task_id} 1.0 True" for task_id in TASK_IDS]
    assert len(list((venv.work / "runs" / "env-service").rglob("*.jsonl"))) == len(TASK_IDS)


def _wait_for_port(port: int, server: subprocess.Popen[bytes], limit_s: float = 120) -> None:
    import socket

    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(
                f"env-server exited: {server.stderr.read().decode() if server.stderr else ''}"
            )
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"env-server did not listen on {port} within {limit_s} s")


@pytest.fixture
def unused_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port
