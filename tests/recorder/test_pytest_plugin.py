"""toolgym's pytest plugin, run by pytester: fixtures, the marker, and the four record modes of
pytest-recording with a real tool, a real cassette beside the test and real mock worlds."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-env-SECRET-0123456789"
ARG_SECRET = "sk-arg-SECRET-abcdef"

CONFTEST = '''
import os
from pathlib import Path

import pytest

from toolgym.tools import ToolSet, tool

CALLS = Path(__file__).with_name("calls.log")


@tool(name="lookup", description="The weather of a city.")
def lookup(city: str, api_key: str, authorization: str) -> str:
    """The weather of a city."""
    with CALLS.open("a") as fh:
        fh.write(city + "\\n")
    return f"{city}: sunny; caller token {os.environ['WEATHER_API_KEY']}"


@pytest.fixture
def toolgym_tools():
    return ToolSet([lookup])
'''

TESTS = f'''
import os

import pytest

from toolgym.actions import ToolCall
from toolgym.tasks import Task

TASK = Task(id="weather", query="How is the weather?", tools=["lookup"])


def test_weather(toolgym_env):
    toolgym_env.reset(options={{"task": TASK}})
    city = os.environ.get("CITY", "Paris")
    call = ToolCall(name="lookup", arguments={{"city": city, "api_key": "{ARG_SECRET}",
                                               "authorization": "Bearer {ARG_SECRET}"}})
    obs, *_ = toolgym_env.step(call)
    assert f"{{city}}: sunny" in obs


@pytest.mark.toolgym(tasks="mtu", apps=["mtu_banking"], seed=0, protocol="openai")
def test_bank(toolgym_env, toolgym_world):
    assert all(set(t.apps) <= {{"mtu_banking"}} for t in toolgym_env.tasks)
    toolgym_env.reset(options={{"task": "mtu-balance-002"}})
    message = {{"role": "assistant", "tool_calls": [{{"id": "c1", "type": "function",
               "function": {{"name": "get_account_balance", "arguments": '{{"account_number": "123456"}}'}}}}]}}
    obs, *_ = toolgym_env.step(message)
    assert "4,825.50" in obs
    accounts = toolgym_world.rows("mtu_banking_accounts", {{"account_number": "123456"}})
    assert accounts
'''


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    # the plugin is loaded by name (-p), the way its pytest11 entry point loads it once toolgym is
    # installed; autoload off so an installed entry point cannot register it a second time
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("WEATHER_API_KEY", SECRET)
    monkeypatch.delenv("CITY", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_agent=TESTS)
    return pytester


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "toolgym.recorder.pytest_plugin", "-p", "no:cacheprovider", *args)


def _calls(pytester: pytest.Pytester) -> list[str]:
    log = pytester.path / "calls.log"
    return log.read_text().split() if log.exists() else []


def test_record_modes(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    cassette = project.path / "cassettes" / "test_agent" / "test_weather.sqlite"

    # none (the default) without a recording: the test fails with its name and the call, nothing live
    first = _run(project, "-k", "weather")
    first.assert_outcomes(failed=1)
    first.stdout.fnmatch_lines(["*test_agent.py::test_weather: 1 tool call(s) would have gone live*"])
    assert '"city":"Paris"' in first.stdout.str() and _calls(project) == []

    # once: records the missing cassette beside the test
    _run(project, "--toolgym-record-mode=once").assert_outcomes(passed=2)
    assert cassette.is_file() and _calls(project) == ["Paris"]
    stored = cassette.read_bytes()
    assert SECRET.encode() not in stored and ARG_SECRET.encode() not in stored  # nor any key or header
    assert b"[REDACTED]" in stored

    # none: replays, no live call
    _run(project).assert_outcomes(passed=2)
    assert _calls(project) == ["Paris"]

    # once with a cassette: replay only, so a new call fails
    monkeypatch.setenv("CITY", "Rome")
    _run(project, "--toolgym-record-mode=once", "-k", "weather").assert_outcomes(failed=1)
    assert _calls(project) == ["Paris"]

    # new_episodes: replays what is there, records the new call
    _run(project, "--toolgym-record-mode=new_episodes", "-k", "weather").assert_outcomes(passed=1)
    assert _calls(project) == ["Paris", "Rome"]
    _run(project, "-k", "weather").assert_outcomes(passed=1)
    monkeypatch.setenv("CITY", "Paris")
    _run(project, "-k", "weather").assert_outcomes(passed=1)
    assert _calls(project) == ["Paris", "Rome"]

    # all: every call live (and recorded again)
    _run(project, "--toolgym-record-mode=all", "-k", "weather").assert_outcomes(passed=1)
    assert _calls(project) == ["Paris", "Rome", "Paris"]


def test_pytest_recording_record_mode_is_reused(project: pytest.Pytester) -> None:
    pytest.importorskip("pytest_recording")
    result = _run(project, "-p", "pytest_recording.plugin", "--record-mode=once", "-k", "weather")
    result.assert_outcomes(passed=1)
    assert _calls(project) == ["Paris"]
    assert (project.path / "cassettes" / "test_agent" / "test_weather.sqlite").is_file()


def test_bad_marker_and_mode_are_usage_errors(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(
        test_bad="""
import pytest

@pytest.mark.toolgym(task_set="mtu")
def test_marked(toolgym_env):
    pass
"""
    )
    result = _run(pytester)
    assert result.ret != 0
    assert "@pytest.mark.toolgym: unknown arguments ['task_set']" in result.stdout.str()
    wrong = _run(pytester, "--toolgym-record-mode=sometimes")
    assert wrong.ret == pytest.ExitCode.USAGE_ERROR


def test_entry_point_is_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["entry-points"]["pytest11"] == {"toolgym": "toolgym.recorder.pytest_plugin"}


MIXED_TASKS = (
    '{"id": "bank-and-calc", "query": "My balance, and 6 times 7?", "apps": ["mtu_banking"], '
    '"tools": ["get_account_balance", "Calculator"]}\n'
    '{"id": "names-a-ghost", "query": "Teleport me.", "apps": ["mtu_banking"], '
    '"tools": ["get_account_balance", "Teleport"]}\n'
)
MIXED_TESTS = """
from pathlib import Path

import pytest

from toolgym.actions import ToolCall

TASKS = str(Path(__file__).with_name("mixed.jsonl"))


@pytest.mark.toolgym(tasks=TASKS)
def test_mixed(toolgym_env):
    toolgym_env.reset(options={"task": "bank-and-calc"})
    assert [t.name for t in toolgym_env.offered] == ["get_account_balance", "Calculator"]
    obs, *_ = toolgym_env.step(ToolCall(name="Calculator", arguments={"expression": "6*7"}))
    assert "42" in obs
    obs, *_ = toolgym_env.step(ToolCall(name="get_account_balance", arguments={"account_number": "123456"}))
    assert "4,825.50" in obs


@pytest.mark.toolgym(tasks=TASKS)
def test_ghost(toolgym_env):
    toolgym_env.reset(options={"task": "names-a-ghost"})
"""


def test_the_env_offers_the_registered_tools_a_task_names(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No `toolgym_tools` override: a task with an app and a registered tool (Calculator) gets
    both; a task naming a tool that exists nowhere fails in one line naming its file, line and id."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    (pytester.path / "mixed.jsonl").write_text(MIXED_TASKS, encoding="utf-8")
    pytester.makepyfile(test_mixed=MIXED_TESTS)
    result = _run(pytester, "--toolgym-record-mode=once")
    result.assert_outcomes(passed=1, failed=1)
    ghost = [line for line in result.stdout.lines if line.startswith("E ") and "names-a-ghost" in line]
    assert len(ghost) == 1, ghost
    assert ghost[0].endswith("mixed.jsonl:2: names-a-ghost: tools not in this registry: ['Teleport']")
