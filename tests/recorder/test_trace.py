from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolgym import Action, AnswerSpec, FinalAnswer, Task, ToolCall, ToolEnv, ToolSet, tool
from toolgym.agents import ScriptedAgent
from toolgym.recorder.trace import TraceHeader, TraceStep, TraceWriter, read_trace
from toolgym.runner import run_episode


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
