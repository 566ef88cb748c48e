from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from toolgym import Action, AnswerSpec, FinalAnswer, Task, ToolCall, ToolEnv, ToolSet, tool
from toolgym.canonical import canonical_hash, canonical_json, rendered_json
from toolgym.envs.agents import ScriptedAgent
from toolgym.envs.runner import run_episode, step_fields
from toolgym.trace import (
    TRACE_SCHEMA_VERSION,
    ModelRequest,
    TraceEnd,
    TraceFormatError,
    TraceHeader,
    TraceStep,
    TraceWriter,
    TurnTokens,
    full_requests,
    read_trace,
    record_json,
    step_json,
    trace_json_schema,
    trace_schema_text,
)

DOCS = Path(__file__).resolve().parents[2] / "docs"


@tool(category="logic")
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


TASK = Task(id="sum/1", query="1+2?", tools=["add"], answer=AnswerSpec(whitelist=[["3"]]))
ACTIONS: list[Action] = [ToolCall(name="add", arguments={"a": 1, "b": 2}), FinalAnswer(text="3")]


def record(trace_dir: Path, *, timing: bool = False) -> Path:
    env = ToolEnv(ToolSet([add]), [TASK])
    result = run_episode(
        env, ScriptedAgent(env.protocol, ACTIONS), TASK, seed=7, trace_dir=trace_dir, timing=timing
    )
    assert result.trace_path is not None and result.reward == 1.0
    return result.trace_path


def test_trace_round_trip(tmp_path: Path) -> None:
    path = record(tmp_path)
    assert path.name == "sum_1.seed7.jsonl"
    assert not path.with_name(path.name + ".partial").exists()
    trace = read_trace(path)
    assert trace.complete and trace.end is not None
    assert trace.header.task_id == "sum/1" and trace.header.seed == 7
    assert [t.name for t in trace.header.tools] == ["add"]
    assert [s.actions[0]["type"] for s in trace.steps] == ["tool_call", "final_answer"]
    assert trace.steps[0].observations[0]["content"] == 3
    assert trace.steps[0].raw.startswith("Action: add")
    assert trace.end.reward == 1.0 and trace.end.final_answer == "3"


def test_same_episode_gives_byte_identical_trace(tmp_path: Path) -> None:
    first = record(tmp_path / "a").read_bytes()
    second = record(tmp_path / "b").read_bytes()
    assert first == second


def test_timing_is_opt_in(tmp_path: Path) -> None:
    trace = read_trace(record(tmp_path, timing=True))
    assert all(s.latency_ms is not None and s.latency_ms >= 0 for s in trace.steps)
    assert all(s.latency_ms is None for s in read_trace(record(tmp_path / "plain")).steps)


class ExplodingAgent(ScriptedAgent):
    def act(self, observation: str, info: dict[str, Any]) -> Any:
        if self._next == 1:
            raise RuntimeError("agent crashed")
        return super().act(observation, info)


def test_crash_leaves_readable_partial_trace(tmp_path: Path) -> None:
    env = ToolEnv(ToolSet([add]), [TASK])
    with pytest.raises(RuntimeError):
        run_episode(env, ExplodingAgent(env.protocol, ACTIONS), TASK, seed=1, trace_dir=tmp_path)
    partial = tmp_path / "sum_1.seed1.jsonl.partial"
    assert partial.exists() and not (tmp_path / "sum_1.seed1.jsonl").exists()
    trace = read_trace(partial)
    assert not trace.complete
    assert len(trace.steps) == 1 and trace.steps[0].observations[0]["content"] == 3


def test_torn_last_line_is_dropped(tmp_path: Path) -> None:
    header = TraceHeader(
        task_id="t", seed=0, clock="2024-01-01T00:00:00+00:00", protocol="react", agent="x", tools=[]
    )
    writer = TraceWriter(tmp_path / "t.jsonl", header)
    writer.step(TraceStep(index=1, actions=[], observations=[]))
    writer.close()
    with writer.partial_path.open("a", encoding="utf-8") as fh:
        fh.write('{"record":"step","ind')  # a crash in the middle of a write
    trace = read_trace(writer.partial_path)
    assert len(trace.steps) == 1 and not trace.complete


def test_a_trace_cut_short_is_incomplete_and_says_at_which_line(tmp_path: Path) -> None:
    path = record(tmp_path)
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)  # header, 2 steps, end
    assert read_trace(path).incomplete is None
    path.write_bytes(data[: len(lines[0]) + len(lines[1]) // 2])  # `head -c`: mid-line 2
    trace = read_trace(path)
    assert not trace.complete and trace.steps == []
    assert (
        trace.incomplete
        == f"{path}:2: incomplete trace: the file ends in the middle of line 2 (cut short), no end record"
    )
    path.write_bytes(b"".join(lines[:3]))  # cut between lines: the end record is missing
    trace = read_trace(path)
    assert len(trace.steps) == 2
    assert (
        trace.incomplete == f"{path}:3: incomplete trace: no end record (line 3, the last, is a step record)"
    )
    path.write_bytes(lines[0][:-40])
    with pytest.raises(
        TraceFormatError, match="no trace header: the file ends in the middle of line 1"
    ) as info:
        read_trace(path)
    assert info.value.line == 1


def test_bad_bytes_and_bad_records_name_the_file_and_line(tmp_path: Path) -> None:
    path = record(tmp_path)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + lines[1].replace(b'"add"', b'"\xff\xfe"', 1) + b"".join(lines[2:]))
    with pytest.raises(TraceFormatError, match="trace line is not UTF-8 text") as info:
        read_trace(path)
    assert str(info.value).startswith(f"{path}:2: ") and info.value.line == 2
    path.write_bytes(lines[0] + lines[1] + b'{"record":"step","index":"one"}\n' + lines[3])
    with pytest.raises(TraceFormatError, match="not a valid step record") as info:
        read_trace(path)
    assert str(info.value).startswith(f"{path}:3: ")


def test_header_pins_the_task_definition(tmp_path: Path) -> None:
    trace = read_trace(record(tmp_path))
    assert trace.header.schema_version == TRACE_SCHEMA_VERSION == "1.5"
    assert trace.header.task_hash == canonical_hash(TASK.model_dump(mode="json"))


def test_every_line_validates_against_the_published_json_schema(tmp_path: Path) -> None:
    assert (DOCS / "trace-schema.json").read_text(encoding="utf-8") == trace_schema_text(), (
        "docs/trace-schema.json is stale: python -m toolgym.trace > docs/trace-schema.json"
    )
    schema = trace_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    lines = record(tmp_path).read_text(encoding="utf-8").splitlines()
    for line in lines:
        jsonschema.validate(json.loads(line), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"record": "step", "index": "one"}, schema)


def test_reads_schema_1_0_traces_and_refuses_other_majors(tmp_path: Path) -> None:
    lines = record(tmp_path).read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    old = {k: v for k, v in header.items() if k != "task_hash"} | {"schema_version": "1.0"}
    v10 = tmp_path / "v10.jsonl"
    v10.write_text("\n".join([json.dumps(old), *lines[1:]]) + "\n", encoding="utf-8")
    trace = read_trace(v10)
    assert trace.complete and trace.header.task_hash is None and len(trace.steps) == 2
    v2 = tmp_path / "v2.jsonl"
    v2.write_text(json.dumps(header | {"schema_version": "2.0"}) + "\n", encoding="utf-8")
    with pytest.raises(TraceFormatError, match=r"schema 2\.0"):
        read_trace(v2)
    junk = tmp_path / "junk.jsonl"
    junk.write_text('{"hello": 1}\n', encoding="utf-8")
    with pytest.raises(TraceFormatError, match="not a trace header"):
        read_trace(junk)
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n", encoding="utf-8")
    with pytest.raises(TraceFormatError, match="trace line is not JSON") as info:
        read_trace(broken)
    assert str(info.value).startswith(f"{broken}:2: ") and info.value.line == 2


KILLED_MID_EPISODE = """
    import os
    from pathlib import Path
    from toolgym import FinalAnswer, Task, ToolCall, ToolEnv, ToolSet, tool
    from toolgym.envs.agents import ScriptedAgent
    from toolgym.envs.runner import run_episode

    @tool
    def add(a: int, b: int) -> int:
        "Add."
        return a + b

    class DiesAtStepThree(ScriptedAgent):
        def act(self, observation, info):
            if self._next == 2:
                os._exit(9)  # the process dies: no finally, no flush, no rename
            return super().act(observation, info)

    task = Task(id="doomed", query="add twice", tools=["add"])
    env = ToolEnv(ToolSet([add]), [task])
    actions = [ToolCall(name="add", arguments={"a": 1, "b": 2}),
               ToolCall(name="add", arguments={"a": 3, "b": 4}), FinalAnswer(text="7")]
    run_episode(env, DiesAtStepThree(env.protocol, actions), task, seed=0, trace_dir=Path(os.environ["OUT"]))
"""


def test_process_killed_mid_episode_leaves_a_readable_partial_trace(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(KILLED_MID_EPISODE)],
        env={**os.environ, "OUT": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 9, proc.stderr
    assert not (tmp_path / "doomed.seed0.jsonl").exists()
    trace = read_trace(tmp_path / "doomed.seed0.jsonl.partial")
    assert not trace.complete and trace.header.task_id == "doomed"
    assert [s.observations[0]["content"] for s in trace.steps] == [3, 7]


def test_hostile_records_are_written_escaped_and_read_back(tmp_path: Path) -> None:
    """Surrogates, deep raw output, NaN, bytes, huge ints: the line is still written, readable
    UTF-8 JSON, with the documented replacements (toolgym.canonical.json_safe)."""
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(3000):
        node["a"] = {}
        node = node["a"]
    header = TraceHeader(
        task_id="t\ud800", seed=None, clock="2024-01-01T00:00:00Z", protocol="react", agent="a", tools=[]
    )
    path = tmp_path / "hostile.jsonl"
    with TraceWriter(path, header) as writer:
        writer.step(TraceStep(index=1, raw="Final Answer: \ud800 \udfff", actions=[], observations=[]))
        writer.step(
            TraceStep(
                index=2,
                raw={"role": "assistant", "tool_calls": [{"function": {"arguments": deep}}]},
                actions=[
                    {"type": "tool_call", "arguments": {"x": float("nan"), "b": b"\xff", "n": 10**5000}}
                ],
                observations=[],
            )
        )
        writer.finish(TraceEnd(status="terminated", steps=2, final_answer="\ud800", reward=0.0))
    path.read_bytes().decode("utf-8")  # strict UTF-8: every surrogate was escaped
    trace = read_trace(path)
    assert trace.complete and trace.header.task_id == "t\ud800"
    assert trace.steps[0].raw == "Final Answer: \ud800 \udfff"
    assert trace.end is not None and trace.end.final_answer == "\ud800"
    assert trace.steps[1].actions[0]["arguments"]["x"] == "NaN"
    assert trace.steps[1].actions[0]["arguments"]["b"] == "<bytes: b'\\xff'>"
    assert trace.steps[1].actions[0]["arguments"]["n"].startswith("<int of about")
    assert "nested deeper than" in json.dumps(trace.steps[1].raw)


def test_turn_tokens_are_optional_and_older_traces_read(tmp_path: Path) -> None:
    path = record(tmp_path)
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header["schema_version"] = "1.2"  # written before steps could keep token ids
    steps = [json.loads(line) for line in lines[1:-1]]
    for step in steps:
        step.pop("tokens")
    older = tmp_path / "older.jsonl"
    older.write_text("\n".join(json.dumps(x) for x in [header, *steps, json.loads(lines[-1])]) + "\n")
    trace = read_trace(older)
    assert trace.complete and all(s.tokens is None for s in trace.steps)
    turn = TurnTokens(prompt_ids=[1, 2], completion_ids=[3], logprobs=[-0.1])
    step = TraceStep(index=1, actions=[], observations=[], tokens=turn)
    assert TraceStep.model_validate(json.loads(record_json(step))).tokens == turn


def test_model_requests_are_left_out_when_absent_and_rebuilt_from_deltas(tmp_path: Path) -> None:
    # an agent that calls no model writes steps without the 1.4 fields, bytes as before them
    lines = record(tmp_path).read_text(encoding="utf-8").splitlines()
    for line in lines[1:-1]:
        assert '"request"' not in line and '"model_latency_ms"' not in line
    tools = [{"type": "function", "function": {"name": "OCR"}}]
    system, user = {"role": "system", "content": "s"}, {"role": "user", "content": "q"}
    reply, tool = {"role": "assistant", "content": "a"}, {"role": "tool", "content": "r"}
    steps = [
        TraceStep(
            index=1, actions=[], observations=[], request=ModelRequest(messages=[system, user], tools=tools)
        ),
        TraceStep(index=2, actions=[], observations=[]),  # an agent turn without a model call
        TraceStep(
            index=3,
            actions=[],
            observations=[],
            request=ModelRequest(messages_from=2, messages=[reply, tool], params={"model": "m"}),
            model_latency_ms=12.5,
        ),
    ]
    again = [TraceStep.model_validate(json.loads(record_json(s))) for s in steps]
    assert again == steps
    first, none, third = full_requests(again)
    assert first == {"messages": [system, user], "tools": tools, "params": {}}
    assert none is None
    assert third == {"messages": [system, user, reply, tool], "tools": tools, "params": {"model": "m"}}
    for step in steps:
        jsonschema.validate(json.loads(record_json(step)), trace_json_schema())


# ---- step lines built from fields (step_json) ------------------------------------------------------
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.characters(codec=None), max_size=8)  # lone surrogates included
    | st.binary(max_size=4)
)
# objects with string keys: what a step's fields hold (step_json writes other keys as json does)
_KEYS = st.text(max_size=4)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=4), inner, max_size=3)
        | st.dictionaries(_KEYS, inner, max_size=2)
    ),
    max_leaves=8,
)
_PLAIN = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=10,
)
_STEP_FIELDS = st.fixed_dictionaries(
    {
        "index": st.integers(1, 50),
        "actions": st.lists(st.dictionaries(st.text(max_size=4), _VALUES, max_size=3), max_size=2),
        "observations": st.lists(st.dictionaries(st.text(max_size=4), _VALUES, max_size=3), max_size=2),
    },
    optional={
        "raw": st.none() | st.text() | st.dictionaries(st.text(max_size=4), _VALUES, max_size=3),
        "error_kinds": st.lists(st.sampled_from(["format_error", "tool_error"]), max_size=2),
        "state_hash_before": st.none() | st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
        "state_hash_after": st.none() | st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
        "state_diff": st.none() | st.dictionaries(st.text(max_size=4), _VALUES, max_size=2),
        "latency_ms": st.none() | st.floats(allow_nan=False) | st.integers(0, 10),
        "faults": st.none() | st.lists(st.dictionaries(st.text(max_size=4), _PLAIN, max_size=2), max_size=2),
        "tokens": st.none()
        | st.builds(
            TurnTokens,
            prompt_ids=st.lists(st.integers(0, 9), max_size=3),
            completion_ids=st.lists(st.integers(0, 9), max_size=3),
        ),
        "request": st.none()
        | st.builds(
            ModelRequest,
            messages=st.lists(
                st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2), max_size=2
            ),
        ),
        "model_latency_ms": st.none() | st.floats(allow_nan=False) | st.integers(0, 10),
    },
)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(_STEP_FIELDS)
def test_a_step_line_from_fields_is_the_models_line(fields: dict[str, Any]) -> None:
    """`step_json` (the runner's lean path: no model built) writes the bytes the model's path
    writes, for plain JSON fields and for what it must hand to the model (NaN, bytes, tuples,
    huge ints, ints where floats belong, surrogates, raw message objects with any keys)."""
    assert step_json(fields) == record_json(TraceStep(**fields))


def test_a_step_line_from_fields_refuses_what_the_model_refuses() -> None:
    with pytest.raises(ValidationError):
        step_json({"index": 1, "actions": ["not an object"], "observations": []})
    with pytest.raises(ValidationError):
        step_json({"index": "one", "actions": [], "observations": []})


def test_the_writer_takes_a_step_as_fields(tmp_path: Path) -> None:
    header = TraceHeader(
        task_id="t", seed=0, clock="2024-01-01T00:00:00Z", protocol="react", agent="a", tools=[]
    )
    fields: dict[str, Any] = {"index": 1, "raw": "Final Answer: 3", "actions": [], "observations": []}
    with TraceWriter(tmp_path / "a.jsonl", header) as a, TraceWriter(tmp_path / "b.jsonl", header) as b:
        a.step(fields)
        b.step(TraceStep(**fields))
        end = TraceEnd(status="terminated", steps=1, final_answer="3", reward=1.0)
        assert a.finish(end).read_bytes() == b.finish(end).read_bytes()


@tool
def echo_value(value: str) -> dict[str, Any]:
    """Returns {"value": value, "rows": [...]}: a result whose text is its content's JSON."""
    return {"value": value, "rows": [{"n": n, "s": value * n} for n in range(3)], "lone": "\ud800"}


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(st.text(max_size=12), st.booleans())
def test_a_rendered_content_is_put_in_the_line_as_its_text(value: str, raw_holds_marker: bool) -> None:
    """A tool result's content goes into the step line as the text it was rendered to (encoded
    once): the bytes equal the model's line, also when other fields hold the marker strings the
    splice uses, and when the same result appears twice."""
    env = ToolEnv(ToolSet([echo_value]), [Task(id="t", query="q", tools=["echo_value"])])
    env.reset()
    _, _, _, _, info = env.step([ToolCall(name="echo_value", arguments={"value": value})] * 2)
    raw = "\x00toolgym-rendered-1\x00" if raw_holds_marker else "x"  # encodes as a marker
    fields = step_fields(raw, info, None)
    assert step_json(fields) == record_json(TraceStep(**fields))
    assert rendered_json(info["observations"][0]["content"]) == info["observations"][0]["text"]


def test_a_step_lines_state_diff_is_encoded_once_and_remembered() -> None:
    """The line encodes the state diff once and remembers its text (`render_json`), which the
    env then keeps for the finished step instead of the diff's objects; a diff encoded already
    goes in as that text."""
    diff = {"bank": {"added": [{"id": 1, "amount": 2.5}], "removed": [], "changed": []}}
    fields: dict[str, Any] = {"index": 1, "actions": [], "observations": [], "state_diff": diff}
    line = step_json(fields)
    assert rendered_json(diff) == canonical_json(diff)
    assert line == record_json(TraceStep(**fields))
    assert step_json(fields) == line  # the remembered text, put in as it is
