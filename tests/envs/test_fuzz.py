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

Below them, 10,000 actions from a seeded generator (issue 27) through every protocol, raw
containers nested past the recursion limit among them: 0 raises, the same invariants.
"""

from __future__ import annotations

import json
import math
import random
import tempfile
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.hostile import REPLY_FRAGMENTS, nested_dict, nested_sequence
from toolgym.actions import Action, AskUser, FinalAnswer, NoCall, ToolCall
from toolgym.envs.demo import demo_tasks_path, mock_task_paths
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.jsonl import read_jsonl
from toolgym.mocks.world import MockWorld
from toolgym.protocols import PROTOCOLS as PROTOCOL_CLASSES
from toolgym.protocols.base import MAX_OUTPUT_CHARS
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
    names, arguments, calls = _call_strategies(task, tool_names, env)
    actions: st.SearchStrategy[Action] = st.one_of(
        calls,
        st.builds(FinalAnswer, text=st.text(max_size=20) | st.sampled_from(["\ud800", "done"])),
        st.builds(NoCall, thought=st.text(max_size=10)),
        st.builds(AskUser, text=st.text(max_size=10)),
    )
    junk = st.sampled_from([None, 0, 3.5, b"Final Answer: x", object(), [], ["x"], [1, ToolCall(name="x")]])

    def render(action: Action) -> Any:
        try:
            return env.protocol.format_action(action)
        except (ValueError, TypeError, RecursionError):  # arguments JSON cannot hold: sent as they are
            return action

    return st.one_of(
        actions,
        st.lists(calls, min_size=1, max_size=3),
        actions.map(render),
        *_written_outputs(names, arguments, tool_names),
        junk,
    )


def _call_strategies(
    task: Task, tool_names: list[str], env: ToolEnv
) -> tuple[st.SearchStrategy[str], st.SearchStrategy[dict[str, Any]], st.SearchStrategy[ToolCall]]:
    """Tool names, arguments (the task's parameter names and golden values among random ones)
    and the calls made of them, the golden calls included where no task file is involved."""
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
    return names, arguments, calls


def _dumped(value: Any) -> str:
    try:
        return json.dumps(value, default=repr)
    except (ValueError, RecursionError):
        return "{"


def _written_outputs(
    names: st.SearchStrategy[str], arguments: st.SearchStrategy[dict[str, Any]], tool_names: list[str]
) -> list[st.SearchStrategy[Any]]:
    """Replies as a model writes them: ReAct text, JSON text and objects, assistant messages
    (and their JSON), fragments of the protocols' labels."""
    react = st.builds(
        lambda thought, name, args: f"Thought: {thought}\nAction: {name}\nAction Input: {_dumped(args)}",
        st.text(max_size=10),
        names,
        arguments,
    )
    json_text = st.builds(lambda name, args: _dumped({"name": name, "args": args}), names, arguments)
    json_object = st.builds(lambda name, args: {"name": name, "args": args}, names, arguments)
    tool_call = st.builds(
        lambda name, args, as_text: {
            "type": "function",
            "function": {"name": name, "arguments": _dumped(args) if as_text else args},
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
    return [react, json_text, json_object, message, message.map(_dumped), fragments]


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


# ---- 10,000 seeded actions through ToolEnv.step (issue 27) -----------------------------------
# Raw containers nested past the recursion limit (lists, tuples, mixed, cyclic), text, bytes,
# numbers, None, huge strings, dicts, ToolCalls with odd arguments, chat messages, Responses items
# and SDK-like objects, drawn by a seeded generator: the same 10,000 actions on every run, spread
# evenly over every protocol, on the mock-app tasks (real SQLite worlds, real writes included).
STEP_FUZZ_ACTIONS = 10_000
STEP_FUZZ_SEED = 27
ALL_PROTOCOLS = tuple(sorted(PROTOCOL_CLASSES))
FULL_SCAN_EVERY = 10  # episodes between checks of the incremental state hash against a full scan
STEP_FUZZ_MAX_STEPS = 40  # long episodes: fewer resets and trace files for the same actions


class _FailingDump:
    """An SDK-like object whose model_dump raises."""

    def model_dump(self, **_: Any) -> Any:
        raise ValueError("cannot dump")


class _DeepDump:
    """An SDK-like object whose JSON data is a list nested past the recursion limit."""

    data = nested_sequence(3000)

    def model_dump(self, **_: Any) -> Any:
        return self.data


class _HostileAttributes:
    """An object whose every attribute lookup raises something other than AttributeError."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"no {name} here")


def _mixed(levels: int) -> Any:
    """list, tuple and dict by turns, `levels` deep (built from the inside out)."""
    node: Any = None
    for i in range(levels):
        node = [node] if i % 3 == 0 else (node,) if i % 3 == 1 else {"a": node}
    return node


def _cycles() -> list[Any]:
    loop: list[Any] = [1]
    loop.append(loop)
    holder: dict[str, Any] = {"role": "assistant"}
    holder["content"] = [holder]
    return [loop, [loop], (loop,), holder]


_DEEP: list[Any] = [
    nested_sequence(500),
    nested_sequence(600, tuple),
    nested_sequence(1200),
    nested_sequence(5000, tuple),
    _mixed(900),
    _mixed(4000),
    nested_dict(3000),
    *_cycles(),
]
_SCALARS: list[Any] = [
    None,
    True,
    0,
    -1,
    3.5,
    math.nan,
    -math.inf,
    HugeInt(10**5000),
    b"Final Answer: x",
    bytearray(b"\xff\x00"),
    1j,
    "",
    "\ud800",
    "x" * (MAX_OUTPUT_CHARS + 1),
    "9" * 5000,
    "[" * 5000,
    '{"a":' * 3000,
    {1, 2},
    frozenset({"a"}),
    range(3),
    object(),
    _FailingDump(),
    _DeepDump(),
    _HostileAttributes(),
]


class StepFuzzer:
    """Seeded raw outputs and actions for one env: its protocol, its task's tools and golden calls."""

    def __init__(self, rng: random.Random, env: ToolEnv, task: Task) -> None:
        self.rng, self.env = rng, env
        self.tools = [*env.offered.names, "nope", "FinishAction", "ask_user", "no_call"]
        self.params = sorted({p.name for t in env.offered for p in t.params}) or ["x"]
        self.golden = [g.action for g in task.golden if isinstance(g.action, ToolCall)]
        self.kinds: list[Callable[[], Any]] = [
            self.deep,
            self.deep,
            self.container,
            self.text,
            self.scalar,
            self.tool_call,
            self.tool_call,
            self.golden_call,
            self.rendered,
            self.message,
            self.items,
            self.completion,
            self.parallel,
            self.turn,
        ]

    def action(self) -> tuple[str, Any]:
        """(the kind drawn, the action)."""
        make = self.rng.choice(self.kinds)
        return make.__name__, make()

    def value(self, depth: int = 0) -> Any:
        """Anything: a scalar, a deep or cyclic container, or a small random container of values."""
        roll = self.rng.random()
        if roll < 0.15:
            return self.rng.choice(_DEEP)
        if roll < 0.55 or depth >= 3:
            return self.rng.choice([*_SCALARS, self.rng.choice(self.params), self.rng.randint(-9, 99)])
        size = self.rng.randint(0, 3)
        kind = self.rng.choice([list, tuple, dict])
        if kind is dict:
            return {self.rng.choice([*self.params, "a", ""]): self.value(depth + 1) for _ in range(size)}
        return kind(self.value(depth + 1) for _ in range(size))

    def arguments(self) -> dict[str, Any]:
        return {self.rng.choice([*self.params, "zz"]): self.value() for _ in range(self.rng.randint(0, 3))}

    def deep(self) -> Any:
        """A deep or cyclic container, alone or wrapped in one more layer."""
        value = self.rng.choice(_DEEP)
        wrap = self.rng.randint(0, 4)
        return [value, (value,), [1, value], [ToolCall(name="x"), value], {"content": value}][wrap]

    def container(self) -> Any:
        return self.rng.choice([list, tuple])(self.value(1) for _ in range(self.rng.randint(0, 4)))

    def scalar(self) -> Any:
        return self.rng.choice(_SCALARS)

    def turn(self) -> Action:
        turns: list[Action] = [NoCall(thought="hm"), AskUser(text="which one?"), FinalAnswer(text="done")]
        return self.rng.choice(turns)

    def text(self) -> str:
        pieces = [*REPLY_FRAGMENTS, *self.tools, *self.params]
        return "".join(self.rng.choice(pieces) for _ in range(self.rng.randint(0, 12)))

    def tool_call(self) -> ToolCall:
        return ToolCall(name=self.rng.choice(self.tools), arguments=self.arguments())

    def golden_call(self) -> Any:
        return self.rng.choice(self.golden) if self.golden else self.tool_call()

    def rendered(self) -> Any:
        """A golden or odd call in the protocol's own format (what a model would send)."""
        call = self.golden_call() if self.rng.random() < 0.5 else self.tool_call()
        try:
            return self.env.protocol.format_action(call)
        except (ValueError, TypeError, RecursionError):  # arguments JSON cannot hold: sent as they are
            return call

    def function(self) -> dict[str, Any]:
        arguments = self.arguments() if self.rng.random() < 0.5 else self.value()
        if self.rng.random() < 0.3:  # as JSON text, or broken text where JSON cannot hold them
            try:
                arguments = "{" if _has_deep(arguments) else json.dumps(arguments, default=repr)
            except ValueError:  # 10**5000
                arguments = "{"
        return {"name": self.rng.choice(self.tools), "arguments": arguments}

    def message(self) -> dict[str, Any]:
        calls = [{"type": "function", "id": f"c{i}", "function": self.function()} for i in range(3)]
        return {
            "role": self.rng.choice(["assistant", "user", self.value()]),
            "content": self.rng.choice([None, self.text(), self.value()]),
            "tool_calls": self.rng.choice([calls[: self.rng.randint(0, 3)], self.value(), None]),
        }

    def items(self) -> list[Any]:
        """Responses output items (or what claims to be)."""
        out: list[Any] = []
        for i in range(self.rng.randint(1, 3)):
            kind = self.rng.choice(["function_call", "message", "reasoning", self.value()])
            out.append({"type": kind, "call_id": f"c{i}", "content": self.value(), **self.function()})
        return out

    def completion(self) -> dict[str, Any]:
        choices = [
            {"message": self.message(), "finish_reason": "stop"} for _ in range(self.rng.randint(0, 2))
        ]
        return {"object": "chat.completion", "choices": self.rng.choice([choices, self.value()])}

    def parallel(self) -> list[Any]:
        calls: list[Any] = [self.tool_call() for _ in range(self.rng.randint(1, 3))]
        if self.rng.random() < 0.5:
            calls.append(self.golden_call())
        return calls


def _has_deep(value: Any) -> bool:
    """Whether `value` holds one of the deep or cyclic pool values (json.dumps would recurse)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if any(item is d for d in _DEEP):
            return True
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return False


class FuzzPlayer:
    """Plays drawn actions until the shared budget is spent, then answers."""

    name = "step-fuzz"

    def __init__(self, fuzzers: dict[str, StepFuzzer], budget: int) -> None:
        self.fuzzers, self.left = fuzzers, budget
        self.task_id = ""
        self.last = ""

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        self.task_id = task.id

    def act(self, observation: str, info: dict[str, Any]) -> Any:
        if self.left <= 0:
            self.last = "final"
            return FinalAnswer(text="done")
        self.left -= 1
        self.last, action = self.fuzzers[self.task_id].action()
        return action


@pytest.mark.parametrize("protocol", ALL_PROTOCOLS)
def test_seeded_actions_through_step_never_raise_and_keep_the_state_consistent(
    protocol: str, tmp_path: Path
) -> None:
    """Every action gives an observation (no raise); a step of errors only changes no state; each
    episode's trace reads back whole and ends with the world's hash, which equals a full scan
    (checked every few episodes); a reset gives the task's initial hash back."""
    tasks = _task_sets()["mock"]
    env = ToolEnv(tasks=tasks, protocol=protocol, max_steps=STEP_FUZZ_MAX_STEPS)
    rng = random.Random(f"{STEP_FUZZ_SEED}:{protocol}")
    fuzzers: dict[str, StepFuzzer] = {}
    initial: dict[str, str | None] = {}
    for task in tasks:
        initial[task.id] = env.reset(options={"task": task})[1].get("state_hash")
        fuzzers[task.id] = StepFuzzer(rng, env, task)
    budget = STEP_FUZZ_ACTIONS // len(ALL_PROTOCOLS)
    player = FuzzPlayer(fuzzers, budget)
    raised: list[str] = []
    episode = stepped = 0
    while player.left > 0:
        task = tasks[episode % len(tasks)]
        episode += 1
        try:
            result = run_episode(env, player, task, seed=episode, trace_dir=tmp_path)
        except Exception as exc:  # counted, then the next episode: the report lists every raise
            raised.append(f"{player.last}: {type(exc).__name__}")
            continue
        stepped += result.steps
        assert result.trace_path is not None
        trace = read_trace(result.trace_path)
        assert trace.complete and len(trace.steps) == result.steps, result.trace_path
        assert trace.steps[0].state_hash_before == initial[task.id]
        for step in trace.steps:
            if all(o["error"] is not None for o in step.observations):
                assert step.state_hash_after == step.state_hash_before, (
                    task.id,
                    step.index,
                    step.error_kinds,
                )
        world = env.world
        assert isinstance(world, MockWorld)
        assert world.state_hash() == trace.steps[-1].state_hash_after
        if episode % FULL_SCAN_EVERY == 0 or player.left <= 0:  # a scan is O(rows): now and then
            assert world.state_hash() == world.store.full_hash(), (task.id, episode)
    env.close()
    assert raised == [], f"{len(raised)} raises: {sorted(set(raised))}"
    assert stepped >= budget  # every drawn action was stepped (and the closing answers)
