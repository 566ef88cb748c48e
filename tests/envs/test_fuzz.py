"""Fuzzing whole episodes (issue 10, item 6): random and malformed actions through all three
protocols on mock-app tasks (real SQLite worlds) and demo tasks (the built-in tools).

Invariants, checked on every example:
- `step` returns (gymnasium's 5-tuple; the runner unpacks it) and never raises;
- a step whose observations are all errors leaves the state hash unchanged;
- reset restores the task's initial state hash (episodes share one env and one world);
- the trace the runner wrote reads back: every line JSON (the one JSONL reader), strict UTF-8,
  and `read_trace` gives a complete trace with one step per `env.step`.

Bounded and reproducible: `derandomize=True` (examples derive from the test, no database), a
fixed number of examples, no deadline.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.hostile import REPLY_FRAGMENTS
from toolgym.actions import Action, AskUser, FinalAnswer, NoCall, ToolCall
from toolgym.envs.demo import demo_tasks_path, mock_task_paths
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.jsonl import read_jsonl
from toolgym.tasks import Task, TaskSet
from toolgym.trace import read_trace

PROTOCOLS = ("react", "json", "openai")
# mock-app tasks whose tools read and write (shipments, bank transfers, smart home, weather)
MOCK_TASKS = ("ctool-express-cancel-002", "mtu-balance-002", "mtu-door-003", "teval-weather-today-001")
# demo tasks on offline tools; random arguments never name a task file, so OCR is not run
DEMO_TASKS = ("solve-system", "receipt-total")

FUZZ = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class HugeInt(int):
    """10**5000 (past Python's int->str limit) with a repr hypothesis can print."""

    def __repr__(self) -> str:
        return "HugeInt(10**5000)"


class Deep(dict[str, Any]):
    """A dict nested `levels` deep, with a repr hypothesis can print."""

    def __init__(self, levels: int) -> None:
        super().__init__()
        self.levels = levels
        node: dict[str, Any] = self
        for _ in range(levels - 1):
            node["a"] = {}
            node = node["a"]

    def __repr__(self) -> str:
        return f"Deep({self.levels})"


@cache
def _task_sets() -> dict[str, TaskSet]:
    mock = [t for p in mock_task_paths() for t in TaskSet.load(p) if t.id in MOCK_TASKS]
    demo = TaskSet.load(demo_tasks_path())
    return {
        "mock": TaskSet(mock),
        "demo": TaskSet([demo[i] for i in DEMO_TASKS], base_dir=demo.base_dir),
    }


_ENVS: dict[tuple[str, str], ToolEnv] = {}


def _env(kind: str, protocol: str) -> ToolEnv:
    """One env per (task kind, protocol) for the whole module: episodes reuse its worlds, which
    is what makes "reset restores the initial hash" a real check."""
    if (kind, protocol) not in _ENVS:
        tasks = _task_sets()[kind]
        if kind == "demo":
            from toolgym.toolservers.registry import default_toolset

            _ENVS[kind, protocol] = ToolEnv(default_toolset(), tasks, protocol=protocol)
        else:
            _ENVS[kind, protocol] = ToolEnv(tasks=tasks, protocol=protocol)
    return _ENVS[kind, protocol]


@pytest.fixture(scope="module", autouse=True)
def _close_envs() -> Iterator[None]:
    yield
    for env in _ENVS.values():
        env.close()
    _ENVS.clear()


_INITIAL: dict[tuple[str, str, str], str | None] = {}


# ---- strategies ------------------------------------------------------------------------------
_LABELS = REPLY_FRAGMENTS
# long fragments, built on draw so that strategy reprs stay short
_LONG_LABELS = ("9" * 5000, '{"a":' * 200, '{"a":' * 3000)
_ODD_VALUES: list[Any] = [
    math.nan,
    math.inf,
    HugeInt(10**5000),
    b"\xff\x00",
    {1, 2},
    object(),
    "\ud800",
    {"\udfff": 1},
    Deep(100),
    Deep(2000),
]
_LONG_TEXT = ("9" * 5000, "x" * 20_000)


def _pick(pool: tuple[Any, ...] | list[Any]) -> st.SearchStrategy[Any]:
    """An element of `pool` by index: the strategy's repr does not print the (huge) values."""
    return st.integers(min_value=0, max_value=len(pool) - 1).map(pool.__getitem__)


def _leaves(values: list[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**9), max_value=10**9),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=12),
        _pick(values) if values else st.nothing(),
        _pick(_ODD_VALUES),
        _pick(_LONG_TEXT),
    )


def _task_strategies(task: Task, tool_names: list[str], env: ToolEnv) -> st.SearchStrategy[Any]:
    """Raw outputs and actions for one task: its tools and parameter names, its golden argument
    values (so real calls, writes included, happen), random and malformed everything else."""
    files = {f.name for f in task.files}  # never a task file: OCR on a real image is slow
    golden_values = [
        v
        for g in task.golden
        if isinstance(g.action, ToolCall)
        for v in g.action.arguments.values()
        if not (isinstance(v, str) and v in files)
    ]
    params = sorted({p.name for t in env.offered for p in t.params})
    names = st.sampled_from([*tool_names, "FinishAction", "ask_user", "no_call", "nope"]) | st.text(
        max_size=8
    )
    values = st.recursive(
        _leaves(golden_values),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
        max_leaves=6,
    )
    arguments = st.dictionaries(st.sampled_from(params or ["x"]) | st.text(max_size=6), values, max_size=4)
    golden_calls = [g.action for g in task.golden if isinstance(g.action, ToolCall)]
    calls = st.builds(ToolCall, name=names, arguments=arguments) | (
        _pick(golden_calls) if golden_calls and not files else st.nothing()
    )
    actions: st.SearchStrategy[Action] = st.one_of(
        calls,
        st.builds(FinalAnswer, text=st.text(max_size=20) | st.sampled_from(["\ud800", "done"])),
        st.builds(NoCall, thought=st.text(max_size=10)),
        st.builds(AskUser, text=st.text(max_size=10)),
    )

    def dumped(value: Any) -> str:
        try:
            return json.dumps(value, default=repr)
        except (ValueError, RecursionError):
            return "{"

    react = st.builds(
        lambda thought, name, args: f"Thought: {thought}\nAction: {name}\nAction Input: {dumped(args)}",
        st.text(max_size=10),
        names,
        arguments,
    )
    json_text = st.builds(lambda name, args: dumped({"name": name, "args": args}), names, arguments)
    json_object = st.builds(lambda name, args: {"name": name, "args": args}, names, arguments)
    tool_call = st.builds(
        lambda name, args, as_text: {
            "type": "function",
            "function": {"name": name, "arguments": dumped(args) if as_text else args},
        },
        names,
        arguments,
        st.booleans(),
    )
    message = st.builds(
        lambda content, tool_calls: {"role": "assistant", "content": content, "tool_calls": tool_calls},
        st.none() | st.text(max_size=10) | st.sampled_from(["\ud800", 5]),
        st.lists(tool_call, max_size=3) | st.sampled_from([None, "x", [1]]),
    )
    fragments = st.lists(
        st.sampled_from([*_LABELS, *tool_names]) | st.text(max_size=10) | _pick(_LONG_LABELS), max_size=12
    ).map("".join)
    junk = st.sampled_from([None, 0, 3.5, b"Final Answer: x", object(), [], ["x"], [1, ToolCall(name="x")]])

    def render(action: Action) -> Any:
        try:
            return env.protocol.format_action(action)
        except (ValueError, TypeError, RecursionError):  # arguments JSON cannot hold: sent as they are
            return action

    rendered = actions.map(render)
    return st.one_of(
        actions,
        st.lists(calls, min_size=1, max_size=3),
        rendered,
        react,
        json_text,
        json_object,
        message,
        message.map(dumped),
        fragments,
        junk,
    )


class Player:
    """Plays the drawn outputs, then answers."""

    name = "fuzz"

    def __init__(self, outputs: list[Any]) -> None:
        self.outputs = outputs
        self.turn = 0

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        self.turn = 0

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        self.turn += 1
        return self.outputs[self.turn - 1] if self.turn <= len(self.outputs) else FinalAnswer(text="done")


# ---- the property ----------------------------------------------------------------------------
def _check_episode(kind: str, data: st.DataObject) -> None:
    protocol = data.draw(st.sampled_from(PROTOCOLS), label="protocol")
    env = _env(kind, protocol)
    task = data.draw(st.sampled_from(list(_task_sets()[kind])), label="task")
    key = (kind, protocol, task.id)
    if key not in _INITIAL:
        _INITIAL[key] = env.reset(options={"task": task})[1].get("state_hash")
    env.reset(options={"task": task})  # the offered tools, for the strategies
    tool_names = list(env.offered.names)
    outputs = data.draw(
        st.lists(_task_strategies(task, tool_names, env), min_size=1, max_size=4), label="outputs"
    )
    with tempfile.TemporaryDirectory() as tmp:
        result = run_episode(env, Player(outputs), task, seed=0, trace_dir=Path(tmp))
        assert result.trace_path is not None
        raw = result.trace_path.read_bytes()
        raw.decode("utf-8")  # strict: lone surrogates are escaped
        lines = read_jsonl(result.trace_path)
        assert [line["record"] for line in lines] == ["header", *["step"] * result.steps, "end"]
        trace = read_trace(result.trace_path)
    assert trace.complete and len(trace.steps) == result.steps
    assert isinstance(result.reward, float) and not math.isnan(result.reward)
    initial = _INITIAL[key]
    assert trace.steps[0].state_hash_before == initial  # reset restored the initial state
    for step in trace.steps:
        assert len(step.observations) >= 1
        if all(o["error"] is not None for o in step.observations):
            assert step.state_hash_after == step.state_hash_before, (step.index, step.error_kinds)
            assert not step.state_diff, step.state_diff
    _, info = env.reset(options={"task": task})
    assert info.get("state_hash") == initial


@FUZZ
@given(data=st.data())
def test_fuzz_mock_app_episodes(data: st.DataObject) -> None:
    _check_episode("mock", data)


@FUZZ
@given(data=st.data())
def test_fuzz_demo_episodes(data: st.DataObject) -> None:
    _check_episode("demo", data)
