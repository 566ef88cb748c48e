"""`toolgym new app|tool|tasks|suite NAME`: a plug-in package that installs with `pip install -e`
and whose tests pass as generated (docs/plugins.md).

The package is `toolgym-<name>` (import name `toolgym_<name>`): a pyproject.toml declaring the
entry points (toolgym.plugins), the module, a task file its oracle solves, a README and tests that
use toolgym's pytest plugin (`check_app` and a state-hash determinism test for an app). Its
tests record their tool calls to a cassette on the first run and replay it after.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from enum import StrEnum
from pathlib import Path
from string import Template
from typing import Annotated

import typer


class Kind(StrEnum):
    app = "app"
    tool = "tool"
    tasks = "tasks"
    suite = "suite"


NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")


def _words(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def package_files(kind: Kind, name: str) -> dict[str, str]:
    """The files of a `kind` package named `name`, by path inside its folder."""
    if not NAME.fullmatch(name):
        raise ValueError(
            f"a plug-in name is lowercase letters, digits and underscores, starting with a letter "
            f"(at most 40), not {name!r}"
        )
    words = _words(name)
    values = {
        "name": name,
        "pkg": f"toolgym_{name}",
        "dist": f"toolgym-{name.replace('_', '-')}",
        "cls": f"{words}App",
        "tool": words,
        "suite_cls": f"{words}Suite",
        "kind": kind.value,
    }
    pkg = values["pkg"]
    chosen = _KINDS[kind]
    files = {
        "pyproject.toml": _PYPROJECT + chosen["entry_points"],
        "README.md": _README + chosen["readme"],
        f"{pkg}/__init__.py": _INIT,
        f"{pkg}/tasks.jsonl": chosen["tasks"],
        f"tests/test_{name}.py": chosen["test"],
    }
    if "module" in chosen:
        files[f"{pkg}/{chosen['module_name']}"] = chosen["module"]
    if "conftest" in chosen:
        files["tests/conftest.py"] = chosen["conftest"]
    return {path: Template(text).substitute(values) for path, text in files.items()}


def check_free(kind: Kind, name: str, taken: Mapping[str, str]) -> None:
    """ValueError, naming what has it, when a name the package would register is taken: `taken`
    maps each registered app, tool, task set and suite name to what has it. Every kind registers
    a task set `name`; a tool package also its tool, named in CamelCase (`word_count`: WordCount)."""
    names = [name, _words(name)] if kind is Kind.tool else [name]
    for wanted in names:
        if wanted in taken:
            raise ValueError(f"{wanted!r} is taken: {taken[wanted]} has it; choose another name")


def write_package(kind: Kind, name: str, parent: Path, taken: Mapping[str, str] | None = None) -> Path:
    """Writes the package into `parent/toolgym-<name>` (which must not exist yet); returns it.
    A name in `taken` (`check_free`) is refused before anything is written."""
    files = package_files(kind, name)
    check_free(kind, name, taken or {})
    root = parent / f"toolgym-{name.replace('_', '-')}"
    if root.exists():
        raise FileExistsError(f"{root}: exists already; choose another name or --dir")
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


# the registered names and what has each: the registries live below the roof, and this module
# imports nothing of toolgym, so the `toolgym` command hands them in (`register`)
_taken: Callable[[], Mapping[str, str]] | None = None


def new_command(
    kind: Annotated[Kind, typer.Argument(help="what the package adds: app, tool, tasks or suite")],
    name: Annotated[str, typer.Argument(help="its name: lowercase letters, digits, underscores")],
    directory: Annotated[
        Path, typer.Option("--dir", help="where the package's folder goes (default: here)")
    ] = Path("."),
) -> None:
    """Write a plug-in package (an app, a tool, a task set or a metric suite) that installs with
    `pip install -e` and passes its own tests; docs/plugins.md goes on from there."""
    root = write_package(kind, name, directory, _taken() if _taken is not None else None)
    print(f"wrote {root}/ ({kind.value} {name!r}); next:")
    print(f"  pip install -e {root}")
    print(f"  (cd {root} && pytest)")
    print(f"  toolgym run --tasks {name} --agent oracle --out runs/{name}")


def register(app: typer.Typer, *, taken: Callable[[], Mapping[str, str]]) -> None:
    """Add `new` to the toolgym CLI; `taken()` gives every registered app, tool, task set and
    suite name and what has it (`toolgym new` refuses them)."""
    global _taken
    _taken = taken
    app.command(name="new")(new_command)


# ---- templates ($name, $pkg, $dist, $cls, $tool, $suite_cls: string.Template) ---------------------

_PYPROJECT = """\
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "$dist"
version = "0.1.0"
description = "A toolgym plug-in: the $kind $name."
requires-python = ">=3.11"
dependencies = ["toolgym"]

[tool.setuptools.packages.find]
include = ["$pkg*"]

[tool.setuptools.package-data]
"$pkg" = ["*.jsonl"]

[tool.pytest.ini_options]
testpaths = ["tests"]
# the first run calls the tools live and records tests/cassettes/; later runs replay them
# (commit the cassettes; in CI use --toolgym-record-mode=none to refuse new recordings)
addopts = "--toolgym-record-mode=once"

# what this package adds to toolgym (docs/plugins.md lists every group)
[project.entry-points."toolgym.tasks"]
$name = "$pkg:TASKS"
"""

_INIT = '''\
"""toolgym plug-in $dist: the $kind $name."""

from pathlib import Path

# the task set `--tasks $name` names (entry point toolgym.tasks)
TASKS = Path(__file__).with_name("tasks.jsonl")
'''

_CONFTEST = '''\
"""The tools the pytest plugin's env offers beside the mock worlds."""

import pytest

from toolgym import ToolSet


@pytest.fixture
def toolgym_tools() -> ToolSet:
    from toolgym.toolservers.registry import default_toolset

    return default_toolset().subset(["Calculator"])
'''

_README = """\
# $dist

A [toolgym](https://github.com/) plug-in made by `toolgym new $kind $name`: once installed,
toolgym finds what it adds through its entry points (pyproject.toml), wherever it looks for its
own: `toolgym tasks`, `toolgym tools`, `toolgym run --tasks $name`, `toolgym eval --suite`,
`toolgym mcp --apps`, the env server's catalog.

    pip install -e .
    pytest                                   # records tests/cassettes/ on the first run
    toolgym run --tasks $name --agent oracle --out runs/$name
    toolgym record --tasks $name --out golden/$name     # a golden set: traces and a cassette
    toolgym replay golden/$name                          # replays it, no live tool call

"""

_EPISODE_TEST = '''

@pytest.mark.toolgym(tasks="$name")
def test_the_oracle_solves_every_task(toolgym_env: ToolEnv) -> None:
    """The task file and what it runs agree: each golden chain gets the full reward."""
    assert len(toolgym_env.tasks) > 0
    for task in toolgym_env.tasks:
        result = run_episode(toolgym_env, OracleAgent(toolgym_env.protocol), task)
        assert result.reward == 1.0, (task.id, result.final_answer, result.scores)
'''

_APP_MODULE = '''\
"""$cls: a notebook as a mock app (toolgym's app template: mocks/README.md in toolgym).

Reads and writes run on the world's SQLite store: every write is in the state hash, the diffs,
checkpoints and cassettes. seed() may use only `rng` and `clock`, so a seed always gives one world.
"""

from __future__ import annotations

import random
from datetime import datetime
from typing import Annotated, Any

from toolgym import Param
from toolgym.mocks import App, format_id, insert_rows, ok, read, set_counter, write

TOPICS = ("groceries", "travel", "work", "ideas", "books")
N_NOTES = 20


class $cls(App):
    name = "$name"
    description = "A notebook: read a note, list notes by topic, add a note."
    version = "1"  # bump when behaviour changes (cassettes are keyed by it)
    schema = """
    CREATE TABLE ${name}_notes (
        note_id TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        topic TEXT NOT NULL,
        body TEXT NOT NULL
    );
    """

    def seed(self, db: Any, rng: random.Random, clock: datetime) -> None:
        rows = [
            {
                "note_id": format_id("NOTE", i),
                "title": f"Note {i}",
                "topic": TOPICS[i % len(TOPICS)],
                "body": f"written {clock.date().isoformat()}, {rng.randint(1, 9)} lines",
            }
            for i in range(1, N_NOTES + 1)
        ]
        insert_rows(db, "${name}_notes", rows)
        set_counter(db, "NOTE", N_NOTES)  # next_id("NOTE") continues after the seeded notes

    @read
    def get_note(self, note_id: Annotated[str, Param("the note's id, e.g. NOTE-000001")]) -> dict[str, Any]:
        """Read one note."""
        return ok(note=self.get_or_404("${name}_notes", "note_id", note_id, what="note"))

    @read
    def list_notes(
        self, topic: Annotated[str, Param("only notes of this topic", enum=TOPICS)]
    ) -> dict[str, Any]:
        """The notes of a topic, oldest first."""
        notes = self.rows("SELECT * FROM ${name}_notes WHERE topic = ? ORDER BY note_id", [topic])
        return ok(notes=notes, count=len(notes))

    @write
    def add_note(
        self,
        title: Annotated[str, Param("the note's title")],
        topic: Annotated[str, Param("its topic", enum=TOPICS)],
        body: Annotated[str, Param("what it says")],
    ) -> dict[str, Any]:
        """Add a note; returns its id."""
        note_id = self.next_id("NOTE")
        self.execute(
            "INSERT INTO ${name}_notes (note_id, title, topic, body) VALUES (?, ?, ?, ?)",
            (note_id, title, topic, body),
        )
        return ok(note_id=note_id)
'''

_APP_TASKS = (
    '{"id": "$name-read-001", "category": "read", "query": "What is the title of note NOTE-000003?", '
    '"apps": ["$name"], "tools": ["get_note", "list_notes", "add_note"], "golden": [{"action": '
    '{"type": "tool_call", "name": "get_note", "arguments": {"note_id": "NOTE-000003"}}}, {"action": '
    '{"type": "final_answer", "text": "Note NOTE-000003 is titled Note 3."}}], "answer": {"whitelist": '
    '[["Note 3"]]}, "clock": "2024-01-01T00:00:00Z", "seed": 0}\n'
    '{"id": "$name-write-002", "category": "write", "query": "Add a groceries note titled Weekend '
    'saying: milk, eggs, bread.", "apps": ["$name"], "tools": ["get_note", "list_notes", "add_note"], '
    '"golden": [{"action": {"type": "tool_call", "name": "add_note", "arguments": {"title": "Weekend", '
    '"topic": "groceries", "body": "milk, eggs, bread"}}}, {"action": {"type": "final_answer", "text": '
    '"Added note NOTE-000021."}}], "answer": {"whitelist": [["NOTE-000021"]]}, "expected_state": '
    '[{"kind": "field_equals", "table": "${name}_notes", "where": {"note_id": "NOTE-000021"}, "field": '
    '"title", "value": "Weekend"}], "clock": "2024-01-01T00:00:00Z", "seed": 0}\n'
)

_APP_TEST = (
    '''\
"""$cls: sound, deterministic, and its tasks solvable (toolgym's pytest plugin: toolgym_world,
toolgym_env; the `toolgym` marker names the apps and tasks)."""

import pytest

from toolgym import ToolEnv
from toolgym.envs.agents import OracleAgent
from toolgym.envs.runner import run_episode
from toolgym.mocks import MockWorld, check_app
from $pkg.app import $cls


def test_the_app_is_sound() -> None:
    assert check_app($cls) == []
    assert check_app("$name") == []  # and registered: toolgym finds it by name


@pytest.mark.toolgym(apps=["$name"], seed=0)
def test_the_same_calls_give_the_same_state_hash(toolgym_world: MockWorld) -> None:
    seeded = toolgym_world.state_hash()
    added = toolgym_world.call("add_note", title="Plan", topic="work", body="ship it")
    assert added["note_id"] == "NOTE-000021"
    assert toolgym_world.state_hash() != seeded  # a write is in the state
    with MockWorld(["$name"], seed=0) as again:
        assert again.state_hash() == seeded
        again.call("add_note", title="Plan", topic="work", body="ship it")
        assert again.state_hash() == toolgym_world.state_hash()
        again.call("add_note", title="Other", topic="work", body="ship it")
        assert again.state_hash() != toolgym_world.state_hash()


@pytest.mark.toolgym(apps=["$name"], seed=0)
def test_reads_see_the_seeded_notes(toolgym_world: MockWorld) -> None:
    listed = toolgym_world.call("list_notes", topic="groceries")
    assert listed["count"] == 4 and {n["topic"] for n in listed["notes"]} == {"groceries"}
    assert toolgym_world.call("get_note", note_id="NOTE-000003")["note"]["title"] == "Note 3"
'''
    + _EPISODE_TEST
)

_TOOL_MODULE = '''\
"""$tool: a tool of your own, declared with toolgym's @tool (its parameters and schema come from
the signature)."""

from __future__ import annotations

from typing import Annotated

from toolgym import Param, tool


@tool(name="$tool", category="logic", description="Counts the words and characters of a text.")
def $name(text: Annotated[str, Param("the text to count")]) -> dict[str, int]:
    return {"words": len(text.split()), "characters": len(text)}
'''

_TOOL_TASKS = (
    '{"id": "$name-count-001", "category": "tool", "query": "How many words are in: the quick brown fox '
    'jumps?", "tools": ["$tool"], "golden": [{"action": {"type": "tool_call", "name": "$tool", '
    '"arguments": {"text": "the quick brown fox jumps"}}}, {"action": {"type": "final_answer", "text": '
    '"It has 5 words."}}], "answer": {"whitelist": [["5"]]}, "clock": "2024-01-01T00:00:00Z", "seed": 0}\n'
)

_TOOL_CONFTEST = '''\
"""The tools the pytest plugin's env offers: this package's."""

import pytest

from toolgym import ToolSet
from $pkg.tools import $name


@pytest.fixture
def toolgym_tools() -> ToolSet:
    return ToolSet([$name])
'''

_TOOL_TEST = (
    '''\
"""$tool: its answers, and its tasks solved through the pytest plugin's env (toolgym_env)."""

import pytest

from toolgym import FileStore, ToolContext, ToolEnv, ToolSet
from toolgym.envs.agents import OracleAgent
from toolgym.envs.runner import run_episode
from toolgym.toolservers.registry import default_toolset
from $pkg.tools import $name


def test_it_counts() -> None:
    assert $name.invoke({"text": "a b  c"}, ToolContext(files=FileStore())) == {"words": 3, "characters": 6}


def test_it_is_registered() -> None:
    assert "$tool" in default_toolset().names
    assert ToolSet([$name]).to_openai()[0]["function"]["name"] == "$tool"
'''
    + _EPISODE_TEST
)

_CALC_TASKS = (
    '{"id": "$name-multiply-001", "category": "arithmetic", "query": "What is 12 times 7?", "tools": '
    '["Calculator"], "golden": [{"action": {"type": "tool_call", "name": "Calculator", "arguments": '
    '{"expression": "12*7"}}}, {"action": {"type": "final_answer", "text": "12 times 7 is 84."}}], '
    '"answer": {"whitelist": [["84"]]}, "clock": "2024-01-01T00:00:00Z", "seed": 0}\n'
    '{"id": "$name-add-002", "category": "arithmetic", "query": "What is 1250 plus 375?", "tools": '
    '["Calculator"], "golden": [{"action": {"type": "tool_call", "name": "Calculator", "arguments": '
    '{"expression": "1250+375"}}}, {"action": {"type": "final_answer", "text": "It is 1625."}}], '
    '"answer": {"whitelist": [["1625"]]}, "clock": "2024-01-01T00:00:00Z", "seed": 0}\n'
)

_TASKS_TEST = (
    '''\
"""The task set $name: it loads, is registered, and its golden chains solve it (toolgym_env)."""

import pytest

from toolgym import TaskSet, ToolEnv
from toolgym.envs.agents import OracleAgent
from toolgym.envs.demo import resolve_task_set
from toolgym.envs.runner import run_episode
from $pkg import TASKS


def test_the_set_is_registered() -> None:
    assert [t.id for t in resolve_task_set("$name")] == [t.id for t in TaskSet.load(TASKS)]
'''
    + _EPISODE_TEST
)

_SUITE_MODULE = '''\
"""$suite_cls: a metric suite of your own (toolgym's MetricSuite: a `name` and
`score(traces, tasks, mode)`), read by `toolgym eval --suite $name`."""

from __future__ import annotations

from collections.abc import Sequence

from toolgym import TaskSet, Trace
from toolgym.evaluation import Mode, SuiteResult


class $suite_cls:
    name = "$name"

    def score(self, traces: Sequence[Trace], tasks: TaskSet | None, mode: Mode) -> SuiteResult:
        """The share of episodes solved (reward 1) and the mean number of steps."""
        finished = [t for t in traces if t.end is not None]
        per_task = {
            t.header.task_id: {"solved": float(t.end.reward >= 1.0), "steps": float(t.end.steps)}
            for t in finished
            if t.end is not None
        }
        n = max(len(per_task), 1)
        metrics = {
            "solved": sum(s["solved"] for s in per_task.values()) / n,
            "steps": sum(s["steps"] for s in per_task.values()) / n,
        }
        return SuiteResult(suite=self.name, mode=mode, metrics=metrics, per_task=per_task,
                           counts={"episodes": len(finished)})
'''

_SUITE_TEST = (
    '''\
"""$suite_cls: registered, and scoring the traces of the oracle on this package's tasks."""

from pathlib import Path

import pytest

from toolgym import ToolEnv
from toolgym.envs.agents import OracleAgent
from toolgym.envs.runner import run_episode
from toolgym.evaluation.suites import get_suite
from toolgym.trace import read_trace
from $pkg.suite import $suite_cls


def test_the_suite_is_registered() -> None:
    assert isinstance(get_suite("$name"), $suite_cls)


@pytest.mark.toolgym(tasks="$name")
def test_it_scores_the_oracle_s_traces(toolgym_env: ToolEnv, tmp_path: Path) -> None:
    for task in toolgym_env.tasks:
        run_episode(toolgym_env, OracleAgent(toolgym_env.protocol), task, trace_dir=tmp_path)
    traces = [read_trace(p) for p in sorted(tmp_path.glob("*.jsonl"))]
    result = $suite_cls().score(traces, toolgym_env.tasks, "fixed")
    assert result.metrics["solved"] == 1.0
    assert result.counts["episodes"] == len(toolgym_env.tasks) == 2
'''
    + _EPISODE_TEST
)

_KINDS: dict[Kind, dict[str, str]] = {
    Kind.app: {
        "module_name": "app.py",
        "module": _APP_MODULE,
        "tasks": _APP_TASKS,
        "test": _APP_TEST,
        "entry_points": '\n[project.entry-points."toolgym.apps"]\n$name = "$pkg.app:$cls"\n',
        "readme": "The app `$name` (`$pkg/app.py`): tasks name it in `apps`; `toolgym mcp --apps $name` "
        "serves it.\n",
    },
    Kind.tool: {
        "module_name": "tools.py",
        "module": _TOOL_MODULE,
        "tasks": _TOOL_TASKS,
        "test": _TOOL_TEST,
        "conftest": _TOOL_CONFTEST,
        "entry_points": '\n[project.entry-points."toolgym.tools"]\n$name = "$pkg.tools:$name"\n',
        "readme": "The tool `$tool` (`$pkg/tools.py`): `toolgym tools` lists it, `toolgym serve` hosts it.\n",
    },
    Kind.tasks: {
        "tasks": _CALC_TASKS,
        "conftest": _CONFTEST,
        "test": _TASKS_TEST,
        "entry_points": "",
        "readme": "The task set `$name` (`$pkg/tasks.jsonl`) over toolgym's Calculator.\n",
    },
    Kind.suite: {
        "module_name": "suite.py",
        "module": _SUITE_MODULE,
        "tasks": _CALC_TASKS,
        "conftest": _CONFTEST,
        "test": _SUITE_TEST,
        "entry_points": '\n[project.entry-points."toolgym.suites"]\n$name = "$pkg.suite:$suite_cls"\n',
        "readme": "The metric suite `$name` (`$pkg/suite.py`): `toolgym eval --suite $name runs/$name`.\n",
    },
}
