"""The scorer interface: a metric suite turns traces (plus their task set) into a SuiteResult.

Every suite has two modes. `compat` reproduces the original benchmark scorer's numbers, quirks
included; `fixed` applies the corrections documented in docs/evaluation.md. Metric values are
percentages (0-100) as the benchmarks publish them; `per_task` holds each task's own figures.

    from toolgym.evaluation import get_suite   # the registry: toolgym.evaluation.suites
    result = get_suite("gta").score(traces, tasks, "fixed")
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from toolgym.tasks import Task, TaskSet
from toolgym.trace import Trace, TraceStep

if TYPE_CHECKING:
    from toolgym.envs.agents import Agent
    from toolgym.envs.teacher import GoldenTurn, TeacherForcedResult
    from toolgym.envs.tool_env import ToolEnv

Mode = Literal["compat", "fixed"]
MODES: tuple[Mode, ...] = ("compat", "fixed")

# Trace header `env_config["mode"]` values that mark a teacher-forced (step-by-step) episode:
# step i of such a trace is the agent's prediction for golden step i, given the golden history.
TEACHER_FORCED_MODES = frozenset({"teacher_forced", "teacher-forced", "step", "every_with_gt"})


class EvaluationError(ValueError):
    """Input the scorers cannot use: unknown suite or mode, a trace without its task, a bad file."""


class SuiteResult(BaseModel):
    suite: str
    mode: Mode
    metrics: dict[str, float]
    per_task: dict[str, dict[str, float]] = Field(default_factory=dict)
    counts: dict[str, int] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    # per task, what a number cannot say (the milestone missed first); absent when empty, so the
    # results of the suites that have none read as before
    per_task_notes: dict[str, str] = Field(default_factory=dict, exclude_if=lambda v: not v)
    # task category (ToolEyes' scenario, MTU's split, ...) -> per-task score -> mean (see by_category)
    by_category: dict[str, dict[str, float]] = Field(default_factory=dict)


def error_kinds(counts: Mapping[str, int]) -> dict[str, dict[str, int]]:
    """Error-kind counts a suite reports (`[group/]errors/<kind>`, e.g. MTU's action, parameter
    and format errors per split) as group -> kind -> count."""
    out: dict[str, dict[str, int]] = {}
    for key, value in counts.items():
        head, sep, kind = key.rpartition("errors/")
        if sep and (not head or head.endswith("/")):
            out.setdefault(head.rstrip("/") or "all", {})[kind] = value
    return out


def by_category(result: SuiteResult, tasks: Mapping[str, Task]) -> dict[str, dict[str, float]]:
    """Every per-task score of a result averaged per task category (tasks without one: "-"), as
    percentages where the scores are fractions (all within 0..1), else plain means."""
    groups: dict[str, list[dict[str, float]]] = {}
    for task_id, scores in result.per_task.items():
        task = tasks.get(task_id)
        groups.setdefault((task.category if task is not None else None) or "-", []).append(scores)
    keys = list(dict.fromkeys(k for scores in result.per_task.values() for k in scores))
    fractions = {k for k in keys if all(0.0 <= s[k] <= 1.0 for s in result.per_task.values() if k in s)}
    out: dict[str, dict[str, float]] = {}
    for category in sorted(groups):
        row: dict[str, float] = {}
        for key in keys:
            values = [s[key] for s in groups[category] if key in s]
            if values:
                row[key] = (100.0 if key in fractions else 1.0) * mean(values)
        out[category] = row
    return out


@runtime_checkable
class MetricSuite(Protocol):
    name: str

    def score(self, traces: Sequence[Trace], tasks: TaskSet | None, mode: Mode) -> SuiteResult: ...


def check_mode(mode: str) -> Mode:
    if mode == "compat":
        return "compat"
    if mode == "fixed":
        return "fixed"
    raise EvaluationError(f"unknown scoring mode {mode!r}; expected one of {', '.join(MODES)}")


# ---- helpers shared by the suites ---------------------------------------------------------------


def is_teacher_forced(trace: Trace) -> bool:
    mode = trace.header.env_config.get("mode")
    return isinstance(mode, str) and mode in TEACHER_FORCED_MODES


def step_actions(step: TraceStep, kind: str | None = None) -> list[dict[str, Any]]:
    """The parsed actions of a trace step (JSON dicts), optionally only those of one type."""
    return [a for a in step.actions if kind is None or a.get("type") == kind]


def observation_error(obs: dict[str, Any]) -> str | None:
    err = obs.get("error")
    if isinstance(err, dict):
        kind = err.get("kind")
        return kind if isinstance(kind, str) else None
    return None


def trace_error_kinds(trace: Trace) -> list[str]:
    return [k for s in trace.steps for k in s.error_kinds]


def has_infra_error(trace: Trace) -> bool:
    return "infra_error" in trace_error_kinds(trace)


def raw_text(step: TraceStep) -> str:
    """The agent's raw output as text (an OpenAI-style message gives its content)."""
    raw = step.raw
    if isinstance(raw, str):
        return raw
    if isinstance(raw, dict):
        content = raw.get("content")
        return content if isinstance(content, str) else ""
    return ""


def final_answer(trace: Trace) -> str | None:
    if trace.end is not None and trace.end.final_answer is not None:
        return trace.end.final_answer
    for step in reversed(trace.steps):
        for action in step_actions(step, "final_answer"):
            text = action.get("text")
            if isinstance(text, str):
                return text
    return None


def pct(numerator: float, denominator: float) -> float:
    """A percentage; 0 for an empty denominator (reported in counts, never a crash)."""
    return 100.0 * numerator / denominator if denominator else 0.0


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


# ---- teacher-forced traces ----------------------------------------------------------------------


def record_teacher_forced(
    env: ToolEnv,
    agent: Agent,
    task: Task,
    trace_dir: Path,
    *,
    golden: Trace | Sequence[GoldenTurn] | None = None,
    seed: int | None = None,
    env_config: Mapping[str, Any] | None = None,
) -> tuple[TeacherForcedResult, Path]:
    """`toolgym.envs.teacher.record_teacher_forced` (where the rollouts of `toolgym run --mode
    step` reach it): a trace of the agent's predictions, step i for golden step i, its header
    saying `env_config["mode"] = "teacher_forced"`, which is how the suites tell step-mode traces."""
    from toolgym.envs.teacher import record_teacher_forced as record

    return record(env, agent, task, trace_dir, golden=golden, seed=seed, env_config=env_config)
