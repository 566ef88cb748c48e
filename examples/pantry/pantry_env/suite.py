"""StockSuite: this package's metric suite (`toolgym eval --suite pantry_stock`): the share of
episodes solved and the tool calls an episode made."""

from __future__ import annotations

from collections.abc import Sequence

from toolgym import TaskSet, Trace
from toolgym.evaluation import Mode, SuiteResult


def _tool_calls(trace: Trace) -> int:
    return sum(1 for step in trace.steps for action in step.actions if action.get("type") == "tool_call")


class StockSuite:
    name = "pantry_stock"

    def score(self, traces: Sequence[Trace], tasks: TaskSet | None, mode: Mode) -> SuiteResult:
        per_task = {
            trace.header.task_id: {
                "solved": float(trace.end.reward >= 1.0),
                "tool_calls": float(_tool_calls(trace)),
            }
            for trace in traces
            if trace.end is not None
        }
        n = max(len(per_task), 1)
        metrics = {
            "solved": sum(s["solved"] for s in per_task.values()) / n,
            "tool_calls": sum(s["tool_calls"] for s in per_task.values()) / n,
        }
        return SuiteResult(
            suite=self.name, mode=mode, metrics=metrics, per_task=per_task, counts={"episodes": len(per_task)}
        )
