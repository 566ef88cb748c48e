"""Run real episodes for the scorer tests: a recorded agent in ToolEnv, end to end or teacher-forced."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from toolgym.actions import Action
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv, ToolLayer
from toolgym.evaluation.base import record_teacher_forced
from toolgym.evaluation.loaders.mtu import RecordedAgent
from toolgym.protocols.base import RawOutput
from toolgym.tasks import Task, TaskSet
from toolgym.tools import ToolSet
from toolgym.trace import Trace, read_trace

Output = RawOutput | Action


def run_e2e(
    tools: ToolSet,
    tasks: TaskSet,
    task: Task,
    outputs: Sequence[Output],
    out: Path,
    tool_layers: Sequence[ToolLayer] = (),
) -> Trace:
    env = ToolEnv(tools, tasks, max_steps=max(len(outputs), 1), tool_layers=list(tool_layers))
    try:
        agent = RecordedAgent({task.id: list(outputs)})
        result = run_episode(env, agent, task, trace_dir=out)
    finally:
        env.close()
    assert result.trace_path is not None
    return read_trace(result.trace_path)


def run_step(tools: ToolSet, tasks: TaskSet, task: Task, outputs: Sequence[Output], out: Path) -> Trace:
    env = ToolEnv(tools, tasks)
    try:
        agent = RecordedAgent({task.id: list(outputs)})
        _, path = record_teacher_forced(env, agent, task, out)
    finally:
        env.close()
    return read_trace(path)
