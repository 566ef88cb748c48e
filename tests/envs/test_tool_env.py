from __future__ import annotations

import json
from enum import IntEnum
from typing import Any

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st
from openai import OpenAI
from openai.types.chat import ChatCompletion, ChatCompletionMessage

from tests.hostile import nested_sequence
from tests.models.fake_openai import FakeOpenAI, calls, serve, text
from toolgym import AnswerSpec, AskUser, FinalAnswer, NoCall, Task, ToolCall, ToolEnv, ToolSet, tool
from toolgym.actions import Observation
from toolgym.canonical import canonical_json
from toolgym.envs.tool_env import (
    MAX_OBSERVATION_CHARS,
    NO_MORE_USER_INPUT,
    Timing,
    action_record,
    argument_problem,
    json_record,
    observation_record,
)
from toolgym.errors import ErrorKind, FormatError, ToolError
from toolgym.files import FileStore
from toolgym.protocols import get_protocol
from toolgym.protocols.base import MAX_OUTPUT_CHARS
from toolgym.protocols.react import ReActProtocol
from toolgym.tools import ToolContext


@tool(category="logic")
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(category="operation")
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(reason)


@tool(category="operation")
def crash() -> str:
    """A tool with a bug."""
    raise ZeroDivisionError("division by zero")


@tool(category="operation")
def shout(text: str) -> str:
    """Return the text repeated many times."""
    return text * 1_000_000


TASKS = [
    Task(id="sum", query="What is 1+2?", tools=["add"], answer=AnswerSpec(whitelist=[["3", "three"]])),
    Task(id="all", query="Use anything.", answer=AnswerSpec(whitelist=[["ok"]]), user_replies=["Use 7."]),
    Task(id="short", query="Two steps only.", max_steps=2, answer=AnswerSpec(whitelist=[["x"]])),
]


def make_env(**kwargs: Any) -> ToolEnv:
    return ToolEnv(ToolSet([add, fail, crash, shout]), TASKS, **kwargs)


def test_check_env_passes() -> None:
    check_env(make_env(), skip_render_check=True)


def test_gym_make_registered() -> None:
    env = gym.make("toolgym/ToolEnv-v0", tools=ToolSet([add]), tasks=TASKS[:1])
    obs, info = env.reset(seed=1)
    assert obs.startswith("What is 1+2?")
    assert info["tools"] == ["add"]
    env.close()


def test_reset_by_task_id_and_seeded_pick() -> None:
    env = make_env()
    obs, info = env.reset(options={"task": "short"})
    assert info["task_id"] == "short" and obs == "Two steps only."
    picks = [make_env().reset(seed=s)[1]["task_id"] for s in range(8)]
    again = [make_env().reset(seed=s)[1]["task_id"] for s in range(8)]
    assert picks == again and len(set(picks)) > 1
    with pytest.raises(KeyError):
        env.reset(options={"task": "nope"})


def test_tool_subset_and_instructions() -> None:
    env = make_env()
    _, info = env.reset(options={"task": "sum"})
    assert info["tools"] == ["add"]
    assert "add" in info["instructions"] and "fail" not in info["instructions"]
    obs, _, _, _, info = env.step(ToolCall(name="fail", arguments={"reason": "x"}))
    assert info["error_kind"] == "unknown_tool"
    assert "not available" in obs


def test_full_episode_with_raw_react_text() -> None:
    env = make_env()
    env.reset(options={"task": "sum"})
    obs, reward, terminated, truncated, info = env.step(
        'Thought: add them\nAction: add\nAction Input: {"a": 1, "b": 2}'
    )
    assert obs == "Observation: 3"
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["actions"][0]["name"] == "add" and info["observations"][0]["content"] == 3
    assert info["timing"].latency_s >= info["timing"].tool_latency_s >= 0
    obs, reward, terminated, truncated, info = env.step("Thought: done\nFinal Answer: The sum is three.")
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["final_answer"] == "The sum is three."
    with pytest.raises(RuntimeError):
        env.step("Final Answer: again")


@pytest.mark.parametrize(
    ("action", "kind"),
    [
        ("this is not a valid action", "format_error"),
        ("Thought: x\nAction: add\nAction Input: {not json", "format_error"),
        ("Thought: x\nAction: add\nAction Input: [1, 2]", "format_error"),
        ("Thought: x\nAction: nosuchtool\nAction Input: {}", "unknown_tool"),
        ('Thought: x\nAction: add\nAction Input: {"a": "one", "b": 2}', "argument_error"),
        ('Thought: x\nAction: add\nAction Input: {"a": 1}', "argument_error"),
        ('Thought: x\nAction: add\nAction Input: {"a": 1, "b": 2, "c": 3}', "argument_error"),
        ('Thought: x\nAction: fail\nAction Input: {"reason": "no such row"}', "tool_error"),
        ("Thought: x\nAction: crash\nAction Input: {}", "tool_error"),
        ("A" * (MAX_OUTPUT_CHARS + 1), "format_error"),
        (12345, "format_error"),
        (None, "format_error"),
        (b"\x00\xff binary", "format_error"),
        ([1, 2, 3], "format_error"),
        (nested_sequence(5000), "format_error"),  # past the recursion limit (issue 27)
        (nested_sequence(5000, tuple), "format_error"),
        ([{"type": "message", "content": []}, nested_sequence(800)], "format_error"),
        ({"role": "assistant", "tool_calls": "nope"}, "format_error"),
    ],
)
def test_bad_input_is_a_typed_error_and_env_stays_usable(action: Any, kind: str) -> None:
    env = make_env()
    env.reset(options={"task": "all"})
    obs, reward, terminated, truncated, info = env.step(action)
    assert info["error_kind"] == kind
    assert obs.startswith(f"Observation: {kind}")
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["error_counts"] == {kind: 1}
    # the episode goes on normally afterwards
    obs, _, _, _, info = env.step(ToolCall(name="add", arguments={"a": 2, "b": 2}))
    assert obs == "Observation: 4" and info["error_kind"] is None
    assert len(env.episode.steps) == 2 if env.episode else False


def test_huge_tool_output_is_clipped() -> None:
    env = make_env()
    env.reset(options={"task": "all"})
    obs, *_ = env.step(ToolCall(name="shout", arguments={"text": "abc"}))
    assert len(obs) <= MAX_OBSERVATION_CHARS
    assert "characters cut" in obs
    assert env.observation_space.contains(obs)


def test_no_call_and_ask_user() -> None:
    env = make_env()
    env.reset(options={"task": "all"})
    obs, *_ = env.step(NoCall(thought="thinking"))
    assert "No tool was called" in obs
    obs, *_ = env.step(AskUser(text="Which number?"))
    assert obs == "Observation: Use 7."
    obs, *_ = env.step("Ask User: anything else?")
    assert obs == f"Observation: {NO_MORE_USER_INPUT}"


def test_max_steps_truncates_and_scores() -> None:
    env = make_env()
    env.reset(options={"task": "short"})
    _, _, terminated, truncated, _ = env.step(NoCall())
    assert not terminated and not truncated
    _, reward, terminated, truncated, info = env.step(NoCall())
    assert truncated and not terminated and reward == 0.0
    assert info["final_answer"] is None


def test_parallel_calls_and_final_answer_stops_the_rest() -> None:
    env = make_env(protocol="openai")
    env.reset(options={"task": "sum"})
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 1}'}},
            {"id": "c2", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 2}'}},
        ],
    }
    obs, _, _, _, info = env.step(message)
    assert [o["content"] for o in info["observations"]] == [2, 4]
    assert [o["call_id"] for o in info["observations"]] == ["c1", "c2"]
    assert '"tool_call_id":"c1"' in obs.replace(" ", "")
    _, _, terminated, _, info = env.step(
        [FinalAnswer(text="3"), ToolCall(name="add", arguments={"a": 0, "b": 0})]
    )
    assert terminated and len(info["observations"]) == 1


def test_vector_env_runs_n_episodes() -> None:
    envs = gym.vector.SyncVectorEnv([make_env for _ in range(3)])
    obs, _ = envs.reset(seed=[0, 1, 2], options={"task": "sum"})
    assert list(obs) == ["What is 1+2?"] * 3
    obs, rewards, terminated, _, _ = envs.step(["Final Answer: 3", "Final Answer: 4", "Final Answer: three"])
    assert list(rewards) == [1.0, 0.0, 1.0]
    assert list(terminated) == [True, True, True]
    envs.close()


def test_same_seed_same_info() -> None:
    def run() -> list[Any]:
        env = make_env()
        env.reset(seed=3, options={"task": "sum"})
        return [
            env.step(a)[4]
            for a in ("junk", ToolCall(name="add", arguments={"a": 1, "b": 2}), "Final Answer: 3")
        ]

    assert run() == run()


# ---- the hooks: tool layers and the world factory ---------------------------------------------
class _Logged(ToolSet):
    """The same tools; every call is logged, then handed to the wrapped set (a layer's shape)."""

    def __init__(self, inner: ToolSet, log: list[str]) -> None:
        super().__init__(list(inner))
        self.inner, self.log = inner, log

    def call(self, call: ToolCall, ctx: Any) -> Any:
        self.log.append(call.name)
        return self.inner.call(call, ctx)


class _RecordingLayer:
    def __init__(self, name: str, order: list[str]) -> None:
        self.name, self.order, self.episodes = name, order, 0
        self.calls: list[str] = []

    def wrap(self, tools: ToolSet, world: Any = None) -> ToolSet:
        self.order.append(self.name)
        return _Logged(tools, self.calls)

    def start_episode(self) -> None:
        self.episodes += 1


def test_tool_layers_wrap_the_offered_tools_in_order_every_episode() -> None:
    from toolgym.envs.tool_env import ToolLayer

    order: list[str] = []
    inner, outer = _RecordingLayer("inner", order), _RecordingLayer("outer", order)
    assert isinstance(inner, ToolLayer)
    env = make_env(tool_layers=[inner])
    env.add_tool_layer(outer)
    for _ in range(2):
        env.reset(options={"task": "sum"})
        env.step(ToolCall(name="add", arguments={"a": 1, "b": 2}))
    assert order == ["inner", "outer", "inner", "outer"]
    assert inner.episodes == outer.episodes == 2
    assert inner.calls == outer.calls == ["add", "add"]
    # an unknown tool never reaches a layer: the env refuses it first
    env.step(ToolCall(name="nope", arguments={}))
    assert inner.calls == ["add", "add"]


class _CountingReAct(ReActProtocol):
    """The real ReAct protocol, counting how often it renders instructions."""

    def __init__(self) -> None:
        super().__init__()
        self.rendered: list[list[str]] = []

    def instructions(self, tools: ToolSet) -> str:
        self.rendered.append(tools.names)
        return super().instructions(tools)


class _Hiding:
    """A layer that offers every tool but `hidden` (changes the tool set, unlike a cassette)."""

    def __init__(self, hidden: str) -> None:
        self.hidden = hidden

    def wrap(self, tools: ToolSet, world: Any = None) -> ToolSet:
        return ToolSet(t for t in tools if t.name != self.hidden)

    def start_episode(self) -> None:
        pass


def test_instructions_are_rendered_once_per_tool_set() -> None:
    protocol = _CountingReAct()
    env = make_env(protocol=protocol)
    first = env.reset(options={"task": "sum"})[1]["instructions"]
    env.step(ToolCall(name="add", arguments={"a": 1, "b": 2}))
    assert env.reset(options={"task": "sum"})[1]["instructions"] == first
    assert protocol.rendered == [["add"]]
    assert first == ReActProtocol().instructions(ToolSet([add]))  # the cache serves what a render gives
    # another task's tools: rendered once, then served again; the first set's text is still kept
    everything = env.reset(options={"task": "all"})[1]["instructions"]
    assert "fail" in everything and "fail" not in first
    assert env.reset(options={"task": "all"})[1]["instructions"] == everything
    assert env.reset(options={"task": "sum"})[1]["instructions"] == first
    assert protocol.rendered == [["add"], ["add", "fail", "crash", "shout"]]


def test_instructions_follow_a_layer_that_changes_the_tool_set() -> None:
    protocol = _CountingReAct()
    env = make_env(protocol=protocol)
    before = env.reset(options={"task": "all"})[1]["instructions"]
    # a layer that keeps the tools (as cassettes and fault plans do) reuses the render
    env.add_tool_layer(_RecordingLayer("same tools", []))
    assert env.reset(options={"task": "all"})[1]["instructions"] == before
    assert len(protocol.rendered) == 1
    env.add_tool_layer(_Hiding("crash"))
    _, info = env.reset(options={"task": "all"})
    assert info["tools"] == ["add", "fail", "shout"]
    assert '"name": "crash"' in before and '"name": "crash"' not in info["instructions"]
    assert protocol.rendered[-1] == ["add", "fail", "shout"]
    # another protocol object renders its own
    env.protocol = get_protocol("json")
    assert env.reset(options={"task": "all"})[1]["instructions"] == get_protocol("json").instructions(
        env.offered
    )


def test_world_factory_builds_one_world_per_app_set() -> None:
    from toolgym.mocks.world import MockWorld

    built: list[tuple[str, ...]] = []

    def factory(task: Task) -> MockWorld:
        built.append(tuple(task.apps or ()))
        return MockWorld(tuple(task.apps or ()), seed=task.seed, clock=task.clock)

    bank = Task(id="bank", query="q", apps=["banking"], answer=AnswerSpec(whitelist=[["x"]]))
    env = ToolEnv(ToolSet([add]), [bank, TASKS[0]], world_factory=factory)
    _, info = env.reset(options={"task": "bank"})
    first = info["state_hash"]
    env.reset(options={"task": "bank"})
    env.reset(options={"task": "sum"})  # no apps: no world
    assert env.world is None
    _, info = env.reset(options={"task": "bank"})
    assert built == [("banking",)] and info["state_hash"] == first
    env.close()


def test_parse_action_is_the_step_parse() -> None:
    from toolgym.actions import Observation

    env = make_env()
    env.reset(options={"task": "sum"})
    assert env.parse_action(FinalAnswer(text="3")) == [FinalAnswer(text="3")]
    bad = env.parse_action("x" * (MAX_OUTPUT_CHARS + 1))
    assert isinstance(bad, Observation) and bad.error is not None and bad.error.kind.value == "format_error"
    assert isinstance(env.parse_action(42), Observation)


def test_each_episode_sees_only_its_own_task_files() -> None:
    from toolgym.envs.demo import make_demo_env

    env = make_demo_env()
    env.reset(options={"task": "receipt-total"})
    receipt = env.files.resolve("image/receipt.png").handle.ref
    env.reset(options={"task": "memo-room"})  # the receipt is not announced here
    assert receipt not in env.files
    _, _, _, _, info = env.step(ToolCall(name="OCR", arguments={"image": "image/receipt.png"}))
    (obs,) = info["observations"]
    assert obs["error"]["kind"] == "argument_error" and "memo.png" in obs["error"]["message"]
    assert "receipt" not in obs["error"]["message"].replace("image/receipt.png", "")
    env.close()
    env.files.close()  # closing twice is fine


def test_step_takes_the_openai_clients_own_objects() -> None:
    """The issue's case: what `OpenAI(...).chat.completions.create` returns goes straight into
    step, the ChatCompletion or its ChatCompletionMessage, from a real SDK client over HTTP."""
    script = {
        "What is 1+2?": [
            calls(("add", {"a": 1, "b": 2}), ("add", {"a": 2, "b": 3}), content="Two sums."),
            text("3"),
        ]
    }
    with serve(FakeOpenAI(script)) as fake:
        client = OpenAI(base_url=fake.base_url, api_key="test-key", max_retries=0)
        env = make_env(protocol="openai")
        obs, info = env.reset(options={"task": "sum"})
        messages: list[Any] = [
            {"role": "system", "content": info["instructions"]},
            {"role": "user", "content": obs},
        ]
        completion = client.chat.completions.create(model="fake-model", messages=messages)
        assert isinstance(completion, ChatCompletion)
        obs, _, terminated, _, info = env.step(completion)
        assert not terminated and info["error_kind"] is None
        results = [(o["call_id"], o["text"]) for o in info["observations"]]
        assert results == [("fake_0_0", "3"), ("fake_0_1", "5")]
        assert env.episode is not None
        message = completion.choices[0].message
        assert env.episode.steps[0].raw == message.model_dump(mode="json", exclude_none=True)
        messages.append(env.episode.steps[0].raw)
        messages += [json.loads(line) for line in obs.split("\n")]  # the tool messages, by call id
        completion = client.chat.completions.create(model="fake-model", messages=messages)
        assert isinstance(completion.choices[0].message, ChatCompletionMessage)
        _, reward, terminated, _, info = env.step(completion.choices[0].message)
        assert terminated and reward == 1.0 and info["final_answer"] == "3"


def test_sdk_object_that_is_no_turn_is_a_format_error_and_the_episode_goes_on() -> None:
    env = make_env(protocol="openai")
    env.reset(options={"task": "sum"})
    two = ChatCompletion.model_validate(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {"index": i, "message": {"role": "assistant", "content": "3"}, "finish_reason": "stop"}
                for i in range(2)
            ],
        }
    )
    _, _, terminated, _, info = env.step(two)
    assert not terminated and info["error_kind"] == "format_error"
    assert "2 choices" in info["observations"][0]["text"]
    _, reward, terminated, _, _ = env.step(two.choices[1].message)
    assert terminated and reward == 1.0


# ---- lean info records -----------------------------------------------------------------------------
_RESULTS = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.characters(codec=None), max_size=6)
    | st.binary(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=3) | st.integers(-2, 2) | st.booleans(), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(_RESULTS)
def test_a_tool_results_record_is_its_pydantic_dump(value: Any) -> None:
    """What a tool returns, whatever it is, becomes an observation whose lean record (the fields
    as they are) equals pydantic's JSON dump of it: `ToolSet.call` leaves only JSON data in a
    tool result's content."""

    @tool
    def give() -> dict[str, Any]:
        """Returns the value (whatever its declared type says)."""
        return value  # type: ignore[no-any-return]

    files = FileStore()
    try:
        obs = ToolSet([give]).call(ToolCall(name="give"), ToolContext(files=files))
    finally:
        files.close()
    assert obs.type == "tool_result"
    assert observation_record(obs) == json_record(obs)
    assert canonical_json(observation_record(obs)) == canonical_json(json_record(obs))


def test_every_kind_of_observation_has_its_pydantic_record() -> None:
    payload = Observation.from_error(ErrorKind.TOOL_ERROR, "x", content={"v": float("inf"), 1: (2, 3)})
    observations = [
        payload,
        Observation.from_error(ErrorKind.UNKNOWN_TOOL, "no tool 'x'", tool="x", call_id="c1"),
        Observation(type="user", text="hi", content={"user": {"turn": 1}}),
        Observation(type="final", text="3"),
        Observation(type="note", text="No tool was called."),
        Observation(type="task", text="q", content={"query": "q", "files": []}),
    ]
    for obs in observations:
        assert observation_record(obs) == json_record(obs)
        assert canonical_json(observation_record(obs)) == canonical_json(json_record(obs))
    assert observation_record(payload)["content"] == {"v": None, "1": [2, 3]}  # pydantic's JSON form


@pytest.mark.parametrize("name", ["react", "json", "openai", "responses"])
@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(arguments=st.dictionaries(st.text(max_size=4), _RESULTS, max_size=3))
def test_protocols_that_check_arguments_make_plain_json(name: str, arguments: dict[str, Any]) -> None:
    """A protocol with `checks_arguments` (the env then skips its own walk and shares the
    arguments in the record) hands over arguments `argument_problem` accepts and pydantic's dump
    leaves as they are, whatever a model wrote."""
    protocol = get_protocol(name)
    assert protocol.checks_arguments
    try:
        text = json.dumps(arguments, ensure_ascii=False, default=repr)  # NaN, bytes: broken JSON
    except ValueError:  # a huge int, a circular... nothing a model can send either
        return
    raw: Any = {
        "react": f"Action: add\nAction Input: {text}",
        "json": '{"name": "add", "args": ' + text + "}",
        "openai": {
            "role": "assistant",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": text}}],
        },
        "responses": [{"type": "function_call", "call_id": "c1", "name": "add", "arguments": text}],
    }[name]
    try:
        actions = protocol.parse(raw)
    except FormatError:
        return
    for action in actions:
        assert isinstance(action, ToolCall)
        assert argument_problem(action) is None
        assert action_record(action, trusted=True, checked=True) == json_record(action)


def test_a_given_tool_call_is_checked_and_dumped_by_pydantic() -> None:
    env = ToolEnv(ToolSet([add]), [Task(id="t", query="q", tools=["add"])])
    env.reset()
    _, _, _, _, info = env.step(ToolCall(name="add", arguments={"a": 1, "b": (2,)}))  # a tuple
    assert info["actions"][0]["arguments"] == {"a": 1, "b": [2]}  # pydantic's JSON form
    assert info["error_kind"] == "argument_error"


class _Level(IntEnum):
    HIGH = 2


class _Name(str):
    """A str subclass an agent's own objects might hold."""


def test_arguments_given_as_objects_are_made_plain_by_the_protocol() -> None:
    """The chat protocol takes arguments as an object too (not only JSON text): subclasses and
    tuples in it become plain JSON data, so the lean record equals pydantic's dump."""
    message = {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "add", "arguments": {_Name("a"): _Level.HIGH, "b": (1, _Name("x"))}},
            }
        ],
    }
    (call,) = get_protocol("openai").parse(message)
    assert isinstance(call, ToolCall)
    assert call.arguments == {"a": 2, "b": [1, "x"]}
    assert [type(v) for v in call.arguments.values()] == [int, list]
    assert all(type(k) is str for k in call.arguments)
    assert action_record(call, trusted=True, checked=True) == json_record(call)


# ---- the lean step path: records kept, models built on access ------------------------------------
_BANK_READ = ToolCall(name="get_balance", arguments={"account_id": "ACC-10001"})
_BANK_WRITE = ToolCall(
    name="transfer", arguments={"from_account_id": "ACC-10001", "to_account_id": "ACC-10002", "amount": 1.5}
)


def _bank_actions() -> list[Any]:
    """Raw ReAct text and given actions mixed, errors among them: every kind of step."""
    react = ReActProtocol()
    return [
        react.format_action(_BANK_READ),
        _BANK_WRITE,
        react.format_action(_BANK_WRITE),
        "Thought: hm\nAction: get_balance\nAction Input: {'account_id': 'ACC-10002'}",  # python literal
        ToolCall(name="get_balance", arguments={"account_id": ("ACC-1",)}),  # a tuple: dumped as a list
        "Action: nope\nAction Input: {}",  # unknown tool
        "Action: transfer\nAction Input: {}",  # arguments the tool refuses
        "just prose",  # format error
        [_BANK_READ, ToolCall(name="list_accounts", arguments={"customer_id": "CUST-0001"})],
        "Thought: no call this turn",
        react.format_action(_BANK_READ),
    ]


def test_every_step_of_an_episode_reads_back_as_its_info_said() -> None:
    """Each step keeps lean records, and the steps before the latest are packed (results as their
    text, diffs as JSON, ReAct calls as their text); read back, every step's models dump to the
    records its info held, and its diff and hash are the info's."""
    task = Task(id="bank", query="q", apps=["banking"], max_steps=100)
    env = ToolEnv(tasks=[task], max_steps=100)
    env.reset(seed=0)
    infos = [env.step(action)[4] for action in _bank_actions()]
    assert env.episode is not None
    steps = env.episode.steps
    assert steps[0]._actions is None  # packed: its ReAct text stands for its call
    assert all(step._lean for step in steps)  # nothing built so far
    for step, info in zip(steps, infos, strict=True):
        assert [json_record(a) for a in step.actions] == info["actions"]
        assert [observation_record(o) for o in step.observations] == info["observations"]
        assert canonical_json([observation_record(o) for o in step.observations]) == canonical_json(
            info["observations"]
        )
        assert step.state_diff == info["state_diff"]
        assert step.state_hash == info["state_hash"]
    assert steps[0].actions == [_BANK_READ]
    env.close()


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(arguments=st.dictionaries(st.text(max_size=4), _RESULTS, max_size=3))
def test_a_given_tool_calls_record_is_its_pydantic_record(arguments: dict[str, Any]) -> None:
    """A ToolCall given as an object is walked once: the walk that checks its arguments makes
    the record, which is what pydantic's dump gives (or `json_safe`, for arguments it refuses)."""
    env = ToolEnv(ToolSet([add]), [Task(id="t", query="q", tools=["add"], max_steps=5)])
    env.reset()
    call = ToolCall(name="add", arguments=arguments)
    _, _, _, _, info = env.step(call)
    assert info["actions"] == [json_record(call)]
    assert canonical_json(info["actions"]) == canonical_json([json_record(call)])
    assert (info["error_kind"] == "argument_error") or argument_problem(call) is None


def test_a_seeded_reset_draws_what_a_fresh_generator_draws() -> None:
    """A reset with the seed of the last one puts that generator back in its first state instead
    of making a new one: the same draws, and a generator set from outside is left alone."""
    import numpy as np

    env, fresh = make_env(), make_env()
    env.reset(seed=5)
    first = env.np_random.integers(1000, size=4).tolist()
    env.reset(seed=5)
    assert env.np_random.integers(1000, size=4).tolist() == first
    fresh.reset(seed=5)
    assert fresh.np_random.integers(1000, size=4).tolist() == first
    env.reset(seed=6)
    other = env.np_random.integers(1000, size=4).tolist()
    env.reset(seed=5)
    assert env.np_random.integers(1000, size=4).tolist() == first != other
    env.np_random = np.random.Generator(np.random.MT19937(1))  # the user's own generator
    env.reset(seed=5)
    assert env.np_random.integers(1000, size=4).tolist() == first
    assert env.np_random_seed == 5


class _DumpingProtocol(ReActProtocol):
    """A protocol whose observations are rendered from the model's own dump."""

    def format_observation(self, obs: Observation) -> str:
        return json.dumps(obs.model_dump(mode="json", include={"type", "text"}), sort_keys=True)


def test_a_protocol_that_renders_models_gets_models() -> None:
    env = make_env(protocol=_DumpingProtocol())
    env.reset(options={"task": "sum"})
    obs, _, _, _, _ = env.step('Action: add\nAction Input: {"a": 1, "b": 2}')
    assert json.loads(obs) == {"type": "tool_result", "text": "3"}


def test_timing_compares_equal_whatever_its_figures() -> None:
    env = make_env()
    env.reset(options={"task": "sum"})
    timing = env.step("junk")[4]["timing"]
    assert timing == Timing(latency_s=1.0, tool_latency_s=0.5)
    assert (timing.latency_s, timing.tool_latency_s) != (1.0, 0.5)
    with pytest.raises(AttributeError):
        timing.latency_s = 1.0


# ---- what a task names that the env does not have: one line at the task's file and line ----------
def _loaded(tmp_path: Any, **fields: Any) -> Task:
    from toolgym.tasks import TaskSet

    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"id": "named", "query": "q", **fields}) + "\n", encoding="utf-8")
    return TaskSet.load(path)["named"]


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"apps": ["bankng"]}, "no mock app 'bankng'; known: "),
        (
            {"apps": ["banking"], "tools": ["get_balance", "wire_money"]},
            "tools not in this registry: ['wire_money']",
        ),
    ],
)
def test_an_app_or_tool_the_env_lacks_is_named_with_the_task_s_file_line_and_id(
    tmp_path: Any, fields: dict[str, Any], problem: str
) -> None:
    from toolgym.tasks import TaskUseError

    good = Task(id="good", query="q", apps=["banking"])
    env = ToolEnv(ToolSet(), [good])
    env.reset(options={"task": good})
    bad = _loaded(tmp_path, **fields)
    with pytest.raises(TaskUseError) as caught:
        env.reset(options={"task": bad})
    assert str(caught.value).startswith(f"{tmp_path / 'tasks.jsonl'}:1: named: {problem}")
    assert len(str(caught.value).splitlines()) == 1
    assert isinstance(caught.value, KeyError)  # what callers caught before
    assert env.task is good  # the env is as it was: the next reset works
    env.reset(options={"task": good})


def test_a_table_the_world_lacks_is_named_with_the_task_s_file_line_and_id_when_scored(tmp_path: Any) -> None:
    from toolgym.tasks import TaskUseError

    pay = {"from_account_id": "ACC-10001", "to_account_id": "ACC-10002", "amount": 3.5}
    task = _loaded(
        tmp_path,
        apps=["banking"],
        golden=[{"action": {"type": "tool_call", "name": "transfer", "arguments": pay}}],
        expected_state=[
            {"kind": "row_exists", "table": "bank_acounts", "where": {"account_id": "ACC-10001"}}
        ],
    )
    env = ToolEnv(ToolSet(), [task])
    env.reset(options={"task": task})
    env.step([ToolCall(name="transfer", arguments=pay)])
    with pytest.raises(TaskUseError) as caught:
        env.step([FinalAnswer(text="done")])
    message = str(caught.value)
    assert message.startswith(
        f"{tmp_path / 'tasks.jsonl'}:1: named: state assertion names unknown table 'bank_acounts'"
    )
    assert len(message.splitlines()) == 1
