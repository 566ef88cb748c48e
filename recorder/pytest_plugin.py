"""toolgym's pytest plugin (entry point `pytest11`: active once toolgym is installed): test an agent
against ToolEnv with its tool calls recorded to a cassette beside the test and replayed in CI.

    @pytest.mark.toolgym(tasks="mtu", apps=["mtu_banking"], seed=0, protocol="openai")
    def test_agent(toolgym_env):
        obs, info = toolgym_env.reset(options={"task": "mtu-balance-002"})
        ...

Fixtures: `toolgym_env` (a ToolEnv over the marker's tasks, with the cassette as its tool layer),
`toolgym_world` (a MockWorld of the marker's apps and seed), `toolgym_cassette` (the test's
cassette), `toolgym_tools` (the tools beside the worlds: by default the registered tools, toolgym's
and plug-ins', that the marker's tasks name, or all of them for tasks without apps; override it in
a conftest to give your own) and `toolgym_record_mode`.

Record modes, named and behaving as in pytest-recording (vcrpy's record modes):
  none          replay only (the default, for CI): a call with no recording fails the test, naming
                the test and the call that would have gone live
  once          record when the test has no cassette yet; else replay as `none` does
  new_episodes  replay what is recorded, record the rest
  all           call every tool live and record it (re-recording what is there)
`--toolgym-record-mode` chooses; without it, pytest-recording's `--record-mode` when that plugin
is installed. Cassettes live beside the test: `<test dir>/cassettes/<module>/<test>.sqlite`.
Secrets never reach a cassette: arguments named like keys or auth headers (`api_key`,
`authorization`, `token`, ...) and the values of environment variables named `*_API_KEY`,
`*_TOKEN`, `*_SECRET` are scrubbed (toolgym.recorder.cassette.Secrets).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, get_args

import pytest

from toolgym.envs.tool_env import ToolEnv, default_world_factory
from toolgym.recorder.cassette import DEFAULT_SECRET_ARGS, Cassette, CassetteMode, Secrets
from toolgym.tasks import Task, TaskSet
from toolgym.tools import DEFAULT_CLOCK, ToolSet
from toolgym.world import World

RecordMode = Literal["none", "once", "new_episodes", "all"]
RECORD_MODES: tuple[str, ...] = get_args(RecordMode)
MARKER = "toolgym"
SECRET_ENV = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)
_CASSETTES = pytest.StashKey[Cassette]()
_TASKS: pytest.StashKey[TaskSet | None] = pytest.StashKey()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("toolgym", "toolgym cassettes")
    group.addoption(
        "--toolgym-record-mode",
        choices=RECORD_MODES,
        default=None,
        help="record mode of toolgym cassettes: none (replay only, the default), once, new_episodes, "
        "all; default: pytest-recording's --record-mode when it is installed",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(tasks=None, apps=(), seed=0, protocol='react', max_steps=10): the task set "
        "(a bundled name or a file), mock apps and seed of toolgym's fixtures",
    )


def record_mode(config: pytest.Config) -> RecordMode:
    """`--toolgym-record-mode`, else pytest-recording's `--record-mode`, else `none`."""
    chosen = config.getoption("toolgym_record_mode", None)
    if chosen is None:
        chosen = config.getoption("record_mode", None)  # pytest-recording's option, when installed
    if chosen is None:
        return "none"
    if chosen not in RECORD_MODES:
        raise pytest.UsageError(
            f"toolgym cassettes know the record modes {', '.join(RECORD_MODES)}, not {chosen!r}"
        )
    mode: RecordMode = chosen
    return mode


def cassette_path(node: pytest.Item) -> Path:
    """`<test dir>/cassettes/<module>/<test name>.sqlite`, as pytest-recording lays out its files."""
    module = Path(str(node.path))
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", node.name)
    return module.parent / "cassettes" / module.stem / f"{name}.sqlite"


def cassette_mode(mode: RecordMode, exists: bool) -> CassetteMode:
    """The toolgym cassette mode of a record mode."""
    if mode == "none":
        return "replay"
    if mode == "once":
        return "replay" if exists else "record"
    if mode == "new_episodes":
        return "record_missing"
    return "record"


def secrets() -> Secrets:
    """Key-like argument names and the values of key-like environment variables."""
    names = tuple(sorted(v for v, value in os.environ.items() if SECRET_ENV.search(v) and len(value) >= 4))
    return Secrets(arg_names=DEFAULT_SECRET_ARGS, env_vars=names)


def _marker(request: pytest.FixtureRequest) -> dict[str, Any]:
    marker = request.node.get_closest_marker(MARKER)
    if marker is None:
        return {}
    if marker.args:
        raise pytest.UsageError(f"@pytest.mark.{MARKER} takes keyword arguments only")
    known = {"tasks", "apps", "seed", "protocol", "max_steps"}
    unknown = set(marker.kwargs) - known
    if unknown:
        raise pytest.UsageError(f"@pytest.mark.{MARKER}: unknown arguments {sorted(unknown)}")
    return dict(marker.kwargs)


@pytest.fixture
def toolgym_record_mode(request: pytest.FixtureRequest) -> RecordMode:
    return record_mode(request.config)


@pytest.fixture
def toolgym_cassette(
    request: pytest.FixtureRequest, toolgym_record_mode: RecordMode, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cassette]:
    """The test's cassette, in the mode its record mode gives. In `none` a test with no cassette
    replays an empty one, so its first tool call fails the test with what would have gone live."""
    path = cassette_path(request.node)
    mode = cassette_mode(toolgym_record_mode, path.is_file())
    if mode == "replay" and not path.is_file():
        empty = tmp_path_factory.mktemp("toolgym-cassette") / path.name
        Cassette(empty, mode="record").close()
        cassette = Cassette(empty, mode="replay", secrets=secrets())
    else:
        cassette = Cassette(path, mode=mode, secrets=secrets())
    request.node.stash[_CASSETTES] = cassette
    try:
        yield cassette
    finally:
        cassette.close()


@pytest.fixture
def toolgym_tools(request: pytest.FixtureRequest) -> ToolSet:
    """The tools offered beside the mock worlds: the registered tools the marker's tasks name (all
    of them for a task without apps; none without tasks). Override in a conftest to test your own."""
    from toolgym.toolservers.registry import tools_beside_worlds

    tasks = marker_tasks(request)
    return tools_beside_worlds(tasks) if tasks is not None else ToolSet()


def marker_tasks(request: pytest.FixtureRequest) -> TaskSet | None:
    """The marker's task set (a registered set's name or a file), restricted to its apps if it
    names any; None without one. Read once per test."""
    from toolgym.envs.demo import resolve_task_set

    stash: pytest.Stash = request.node.stash
    if _TASKS in stash:
        return stash[_TASKS]
    options = _marker(request)
    tasks: TaskSet | None = None
    if options.get("tasks") is not None:
        try:
            tasks = resolve_task_set(options["tasks"])
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
        apps = set(options.get("apps") or ())
        if apps:
            tasks = TaskSet([t for t in tasks if t.apps and set(t.apps) <= apps], base_dir=tasks.base_dir)
    stash[_TASKS] = tasks
    return tasks


@pytest.fixture
def toolgym_world(request: pytest.FixtureRequest) -> Iterator[World]:
    """A MockWorld of the marker's apps at its seed (the env's default world factory builds it)."""
    options = _marker(request)
    apps = list(options.get("apps") or [])
    if not apps:
        raise pytest.UsageError(f"toolgym_world needs apps: @pytest.mark.{MARKER}(apps=[...])")
    world = default_world_factory(
        Task(id="toolgym-world", query="", apps=apps, seed=int(options.get("seed", 0)), clock=DEFAULT_CLOCK)
    )
    assert world is not None
    try:
        yield world
    finally:
        world.close()


@pytest.fixture
def toolgym_env(
    request: pytest.FixtureRequest, toolgym_cassette: Cassette, toolgym_tools: ToolSet
) -> Iterator[ToolEnv]:
    """A ToolEnv over the marker's task set (restricted to its apps, if given) with the test's
    cassette; every tool call goes through it."""
    options = _marker(request)
    env = ToolEnv(
        toolgym_tools,
        marker_tasks(request),
        protocol=str(options.get("protocol", "react")),
        max_steps=int(options.get("max_steps", 10)),
        cassette=toolgym_cassette,
    )
    try:
        yield env
    finally:
        env.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A call the cassette could not replay fails the test, with what would have gone live: that
    is the cause, even when the test then failed on the miss's error observation."""
    try:
        return (yield)
    finally:
        cassette = item.stash.get(_CASSETTES, None)
        if cassette is not None and cassette.misses:
            calls = "\n".join(miss.describe() for miss in cassette.misses)
            pytest.fail(
                f"{item.nodeid}: {len(cassette.misses)} tool call(s) would have gone live in replay "
                f"(cassette {cassette_path(item)}; record with --toolgym-record-mode=once):\n{calls}",
                pytrace=False,
            )
