"""Plug-ins through entry points (toolgym/plugins.py): a package on sys.path adds to every registry,
and a broken one, or one whose name is taken, is one line naming it, never the built-ins' loss.

The packages here are real distributions to importlib.metadata: a `*.dist-info` folder (METADATA,
entry_points.txt) beside their modules, on sys.path (PYTHONPATH for the CLI)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolgym import plugins
from toolgym.envs.demo import bundled_task_sets
from toolgym.evaluation.suites import SUITES, get_suite
from toolgym.mocks.apps import ALL_APPS, get_app
from toolgym.mocks.simulated.app import bundled_libraries
from toolgym.mocks.world import check_app
from toolgym.protocols import PROTOCOLS, get_protocol
from toolgym.toolservers.models import backend_statuses
from toolgym.toolservers.registry import default_toolset

GOOD_MODULE = '''
from pathlib import Path
from typing import Any

from toolgym import tool
from toolgym.mocks import App, insert_rows, ok, read
from toolgym.evaluation.base import SuiteResult
from toolgym.protocols.react import ReActProtocol
from toolgym.toolservers.gta.backends import BackendStatus


class PingApp(App):
    name = "ping_app"
    description = "answers pings"
    version = "1"
    schema = "CREATE TABLE ping_rows (k TEXT PRIMARY KEY, v INTEGER NOT NULL);"

    def seed(self, db: Any, rng: Any, clock: Any) -> None:
        insert_rows(db, "ping_rows", [{"k": "a", "v": rng.randint(1, 9)}])

    @read
    def ping(self) -> dict[str, Any]:
        """Ping."""
        return ok(pong=True)


class Banking(PingApp):  # a second "banking": the built-in keeps the name
    name = "banking"


@tool(name="Echo")
def echo(text: str) -> str:
    return text


class CountSuite:
    name = "count_suite"

    def score(self, traces: Any, tasks: Any, mode: Any) -> SuiteResult:
        return SuiteResult(suite=self.name, mode=mode, metrics={"n": float(len(traces))})


class Shout(ReActProtocol):
    name = "shout"


def rows() -> list[BackendStatus]:
    return [BackendStatus("Echo", "builtin", True, "echoes", True)]


TASKS = Path(__file__).with_name("tasks.jsonl")
DOCS_PATH = Path(__file__).with_name("docs.json")
'''

ENTRY_POINTS = """
[toolgym.apps]
ping = good_plugin:PingApp
banking = good_plugin:Banking
broken = broken_plugin:Anything
[toolgym.tools]
echo = good_plugin:echo
[toolgym.models]
echo = good_plugin:rows
[toolgym.tasks]
pings = good_plugin:TASKS
broken = broken_plugin:TASKS
[toolgym.suites]
count = good_plugin:CountSuite
not_a_suite = good_plugin:echo
[toolgym.simulated]
things = good_plugin:DOCS_PATH
[toolgym.protocols]
shout = good_plugin:Shout
react = good_plugin:Shout
"""


def _distribution(root: Path) -> Path:
    """A package `good-plugin` (modules good_plugin, broken_plugin) laid out as an installed one."""
    root.mkdir(exist_ok=True)
    (root / "good_plugin.py").write_text(GOOD_MODULE, encoding="utf-8")
    (root / "broken_plugin.py").write_text('raise ImportError("no module named nowhere")\n', encoding="utf-8")
    (root / "docs.json").write_text(
        '[{"type": "function", "function": {"name": "get_thing", "description": "A thing.", "parameters": '
        '{"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}}}]',
        encoding="utf-8",
    )
    task = (
        '{"id": "ping-1", "query": "Ping?", "apps": ["ping_app"], "tools": ["ping"], "golden": '
        '[{"action": {"type": "final_answer", "text": "pong"}}], "answer": {"whitelist": [["pong"]]}}\n'
    )
    (root / "tasks.jsonl").write_text(task, encoding="utf-8")
    info = root / "good_plugin-0.3.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: good-plugin\nVersion: 0.3\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(textwrap.dedent(ENTRY_POINTS), encoding="utf-8")
    return root


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = _distribution(tmp_path / "site")
    monkeypatch.syspath_prepend(str(root))
    plugins.refresh()
    try:
        yield root
    finally:
        monkeypatch.undo()
        for name in ("good_plugin", "broken_plugin"):
            sys.modules.pop(name, None)
        plugins.refresh()


def test_an_installed_package_adds_to_every_registry(installed: Path) -> None:
    assert get_app("ping_app").__module__ == "good_plugin"
    assert check_app("ping_app") == []
    assert bundled_task_sets()["pings"] == installed / "tasks.jsonl"
    assert "Echo" in default_toolset().names
    assert ("Echo", "builtin") in {(r.tool, r.backend) for r in backend_statuses()}
    assert get_suite("count_suite").name == "count_suite"
    assert get_protocol("shout").name == "shout"
    assert "things" in bundled_libraries()
    assert ALL_APPS.owner("ping_app").package == "good-plugin"


def test_broken_and_clashing_plugins_are_one_line_each_and_the_builtins_stay(installed: Path) -> None:
    # every registry read once
    assert get_app("banking").__module__ == "toolgym.mocks.apps.banking"
    assert {"demo", "mtu", "pings"} <= set(bundled_task_sets())
    assert {"gta", "mtu", "count_suite"} <= set(SUITES)
    assert PROTOCOLS["react"].__module__ == "toolgym.protocols.react"
    assert "not_a_suite" not in SUITES and "broken" not in bundled_task_sets()
    lines = plugins.problems()
    assert all("\n" not in line and "package good-plugin 0.3, entry point toolgym." in line for line in lines)
    by_entry = {line.split("entry point ", 1)[1].split(" =", 1)[0]: line for line in lines}
    assert set(by_entry) == {
        "toolgym.apps: banking",
        "toolgym.apps: broken",
        "toolgym.tasks: broken",
        "toolgym.suites: not_a_suite",
        "toolgym.protocols: react",
    }
    assert "ImportError: no module named nowhere" in by_entry["toolgym.apps: broken"]
    assert "'banking' is taken by toolgym" in by_entry["toolgym.apps: banking"]
    assert "not a MetricSuite" in by_entry["toolgym.suites: not_a_suite"]


def test_the_cli_says_one_line_and_lists_the_builtins(tmp_path: Path) -> None:
    root = _distribution(tmp_path / "site")
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "300"}
    done = subprocess.run(
        [sys.executable, "-m", "toolgym.cli", "tasks"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "demo" in done.stdout and "pings" in done.stdout
    problems = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(problems) == 1, done.stderr
    assert problems[0].startswith(
        "toolgym: plug-in skipped (package good-plugin 0.3, entry point toolgym.tasks: broken"
    )
    assert problems[0].endswith("ImportError: no module named nowhere")
