"""Milestones and minefields over a run: how far each episode got, what it missed first, which
forbidden facts it brought about (toolgym.envs.milestones says how one episode is scored).

A trace whose end record has them (a task that declares milestones or minefields, or a run with
`--reward-mode milestones`) is read as it is; any other end-to-end trace of a mock-app task is
scored again from its calls, run once more on a fresh world of the task, against milestones
derived from the task's golden chain. toolgym's own metric: compat and fixed are the same.

Metrics (percentages): milestone_progress (mean progress), all_milestones (episodes that reached
every milestone), minefield_episodes (episodes with a minefield hit, among those of tasks with
minefields). Per task: the progress, the number of milestones and of hits, and in `per_task_notes`
the first milestone missed and the minefields hit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from toolgym.envs.milestones import MilestoneSummary, NotScored, TraceReplayError, trace_milestones
from toolgym.evaluation.base import EvaluationError, Mode, SuiteResult, check_mode, is_teacher_forced, mean
from toolgym.tasks import TaskSet
from toolgym.trace import Trace


class MilestonesSuite:
    name = "milestones"
    any_benchmark = True  # scores the traces of every benchmark's mock-app tasks

    def score(self, traces: Sequence[Trace], tasks: TaskSet | None, mode: Mode) -> SuiteResult:
        mode = check_mode(mode)
        if tasks is None:
            raise EvaluationError("the milestones suite needs the task set the traces were run on")
        per_task: dict[str, dict[str, float]] = {}
        per_task_notes: dict[str, str] = {}
        counts: Counter[str] = Counter()
        for trace in traces:
            if trace.header.task_id not in tasks:
                counts["skipped_unknown_task"] += 1
                continue
            task = tasks[trace.header.task_id]
            if is_teacher_forced(trace) or trace.end is None:
                counts["skipped_step_mode" if trace.end is not None else "skipped_incomplete"] += 1
                continue
            try:
                found = trace_milestones(trace, task)
            except NotScored as exc:
                counts[
                    "skipped_replay_mismatch" if isinstance(exc, TraceReplayError) else "skipped_not_scored"
                ] += 1
                per_task_notes[task.id] = str(exc)
                continue
            if found is None:
                counts["skipped_no_milestones"] += 1
                continue
            if found.scored_again:
                counts["scored_again"] += 1
            row: dict[str, float] = {"minefield_hits": float(len(found.hits))}
            if found.progress is not None:
                row["milestone_progress"] = found.progress
            per_task[task.id] = row
            if found.first_missed is not None or found.hits:
                per_task_notes[task.id] = MilestoneSummary(None, found.first_missed, found.hits).text()
        if not per_task:
            raise EvaluationError(
                f"none of the {len(traces)} traces is an end-to-end episode of a task with milestones "
                "(a mock-app task with a golden chain, or one that declares them)"
            )
        return SuiteResult(
            suite=self.name,
            mode=mode,
            metrics=_metrics(per_task, tasks),
            per_task=per_task,
            per_task_notes=per_task_notes,
            counts=dict(counts),
            notes=["toolgym's own metric: compat and fixed mode are the same"],
        )


def _metrics(per_task: dict[str, dict[str, float]], tasks: TaskSet) -> dict[str, float]:
    progress = [row["milestone_progress"] for row in per_task.values() if "milestone_progress" in row]
    mined = [row["minefield_hits"] for task_id, row in per_task.items() if tasks[task_id].minefields]
    metrics = {}
    if progress:
        metrics["milestone_progress"] = 100 * mean(progress)
        metrics["all_milestones"] = 100 * mean([float(p >= 1.0) for p in progress])
    if mined:
        metrics["minefield_episodes"] = 100 * mean([float(n > 0) for n in mined])
    return metrics
