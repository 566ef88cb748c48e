"""CToolEval: tool matching rate, fixed-answer accuracy, operational success and real-time
answers, from end-to-end traces of mock-app tasks.

CToolEval's scoring code is not public; `compat` follows the metrics as the CToolEval paper
describes them (tool matching as the share of gold tools the model called, answers matched as
keywords, operations judged by the status codes the APIs returned), and `fixed` tightens each one
(docs/evaluation.md). A task's kind comes from `metadata["ctooleval"]["type"]` (fixed, open_ended,
real_time, operation, no_tool) or, failing that, from the task: expected final state -> operation, no golden
tool call -> no_tool, an answer whitelist -> fixed, reference answers -> open_ended. A real-time task names the observation fields
its answer must report (`metadata["ctooleval"]["answer_fields"]`); their values are taken from the
episode's own recorded observations, since a live API's values change between runs.

Open-ended tasks (`type: open_ended`) have no single right answer: as in the paper, an LLM judge
rates the answer against a reference (`metadata["ctooleval"]["reference"]`, else the golden final
answer) on a 1-10 scale (OpenEndedScore, 0-100). The judge is `CToolEvalSuite(judge=...)` or the
environment's (toolgym.evaluation.metrics.judge); without one these tasks are counted, not scored.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from toolgym.actions import ToolCall
from toolgym.evaluation.base import (
    EvaluationError,
    Mode,
    SuiteResult,
    check_mode,
    final_answer,
    has_infra_error,
    is_teacher_forced,
    mean,
    observation_error,
)
from toolgym.evaluation.metrics.gta import fixed_iscorrect
from toolgym.evaluation.metrics.judge import Judge, with_judge
from toolgym.tasks import Task, TaskSet, alias_found, golden_final_answer, task_use_error
from toolgym.trace import Trace

KINDS = ("fixed", "open_ended", "real_time", "operation", "no_tool")


def task_kind(task: Task) -> str | None:
    meta = task.metadata.get("ctooleval")
    if isinstance(meta, dict) and meta.get("type") in KINDS:
        return str(meta["type"])
    if task.expected_state:
        return "operation"
    if not any(isinstance(g.action, ToolCall) for g in task.golden):
        return "no_tool"
    if task.answer is not None and task.answer.whitelist:
        return "fixed"
    if task.answer is not None and task.answer.references:
        return "open_ended"
    return None


def open_ended_fallback(answer: str, references: Sequence[str]) -> float:
    """An open-ended answer's score without a judge: its best character-level similarity to the
    references (difflib ratio on NFKC text, which needs no word boundaries, so it reads Chinese
    as well as English). CToolEval scores these answers with an LLM against the reference."""
    from toolgym.envs.rewards import LexicalSimilarity

    return LexicalSimilarity()(
        unicodedata.normalize("NFKC", answer), [unicodedata.normalize("NFKC", r) for r in references]
    )


def _calls(trace: Trace) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(tool call action, its observation) of every call in the episode."""
    out = []
    for step in trace.steps:
        for n, action in enumerate(step.actions):
            if action.get("type") == "tool_call":
                obs = step.observations[n] if n < len(step.observations) else {}
                out.append((action, obs))
    return out


def tool_match(gold: Sequence[str], pred: Sequence[str], mode: Mode) -> float:
    """compat: the share of distinct gold tools called at least once (extra calls free);
    fixed: multiset Jaccard of gold and predicted calls (repeats count, extras cost)."""
    if not gold:
        return 1.0 if not pred else 0.0
    if mode == "compat":
        wanted = set(gold)
        return len(wanted & set(pred)) / len(wanted)
    g, p = Counter(gold), Counter(pred)
    return sum((g & p).values()) / sum((g | p).values())


def compat_keywords(
    text: str, whitelist: Sequence[Sequence[str]], blacklist: Sequence[Sequence[str]] | None
) -> bool:
    """Keyword matching: each group needs an alias inside the answer (case-insensitive
    substring), and no blacklisted alias may appear."""
    lowered = text.lower()
    if not all(any(a.lower() in lowered for a in group) for group in whitelist):
        return False
    return not any(a.lower() in lowered for group in blacklist or [] for a in group)


def _status_ok(obs: dict[str, Any]) -> bool:
    if observation_error(obs) is not None:
        return False
    content = obs.get("content")
    if isinstance(content, dict):
        status = content.get("status", content.get("code", "success"))
        return status in ("success", "ok", 200, "200")
    return True


def _leaves(value: Any, key: str | None = None) -> Iterator[tuple[str | None, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, str(k))
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v, key)
    else:
        yield key, value


def observed_values(trace: Trace, fields: Sequence[str]) -> dict[str, Any]:
    """The last value each field took in the episode's successful tool results."""
    found: dict[str, Any] = {}
    for _, obs in _calls(trace):
        if observation_error(obs) is not None:
            continue
        for key, value in _leaves(obs.get("content")):
            if key is not None and key in fields and value is not None:
                found[key] = value
    return found


def _value_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def state_reached(trace: Trace, task: Task) -> bool:
    """The episode's successful calls replayed on a fresh world reach the golden final state
    (the golden chain replayed) and satisfy the task's state assertions."""
    from toolgym.mocks.rewards import check_assertions, replay_golden, replay_golden_state_hash

    if not task.apps:
        return False
    calls = [
        ToolCall(name=str(a["name"]), arguments=dict(a.get("arguments") or {}))
        for a, obs in _calls(trace)
        if observation_error(obs) is None
    ]
    golden_hash = replay_golden_state_hash(task.apps, task.seed, task.clock, task.golden, strict=False)
    world = replay_golden(task.apps, task.seed, task.clock, calls, strict=False)
    try:
        if world.state_hash() != golden_hash:
            return False
        return not task.expected_state or check_assertions(world, task.expected_state).passed
    except ValueError as exc:  # an unknown table or column: the task's mistake, at its file and line
        raise task_use_error(task, exc) from None
    finally:
        world.close()


def reference_answer(task: Task) -> str | None:
    meta = task.metadata.get("ctooleval")
    if isinstance(meta, dict) and isinstance(meta.get("reference"), str):
        return str(meta["reference"])
    return golden_final_answer(task)


def open_ended_question(query: str, reference: str, answer: str) -> list[dict[str, str]]:
    """Our wording of CToolEval's open-ended grading: the answer rated against a reference."""
    system = (
        "You grade an assistant's answer to a user's request that has no single correct answer. "
        "A reference answer shows what a good answer covers. Rate the assistant's answer from 1 to "
        "10: 10 when it serves the request as well as the reference (other wording and other valid "
        "content are fine), lower for each missing, wrong or irrelevant part, 1 when it does not "
        "address the request. Answers may be in Chinese or English.\n"
        "Answer in this format:\nScoring Reason: <why>\nEvaluation Score: <an integer from 1 to 10>"
    )
    user = f'Request:\n"""\n{query}\n"""\n\nReference answer:\n"""\n{reference}\n"""\n\nAnswer:\n"""\n{answer}\n"""'
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


class CToolEvalSuite:
    name = "ctooleval"

    def __init__(self, judge: Judge | None = None) -> None:
        self.judge = judge

    def score(self, traces: Sequence[Trace], tasks: TaskSet | None, mode: Mode) -> SuiteResult:
        mode = check_mode(mode)
        if tasks is None:
            raise EvaluationError("the ctooleval suite needs the task set the traces were run on")
        needs_judge = any(
            t.header.task_id in tasks and task_kind(tasks[t.header.task_id]) == "open_ended" for t in traces
        )
        return with_judge(self.judge, needs_judge, lambda judge: self._score(traces, tasks, mode, judge))

    def _score(self, traces: Sequence[Trace], tasks: TaskSet, mode: Mode, judge: Judge | None) -> SuiteResult:
        per_task: dict[str, dict[str, float]] = {}
        values: dict[str, list[float]] = {}
        counts: Counter[str] = Counter()
        notes: list[str] = []
        for trace in traces:
            skipped = _skip_reason(trace, tasks, mode)
            if skipped is not None:
                counts[skipped] += 1
                continue
            task = tasks[trace.header.task_id]
            kind = task_kind(task)
            got = _episode_scores(trace, task, kind, mode, judge, counts, notes)
            counts[f"kind/{kind or 'unknown'}"] += 1
            per_task[task.id] = got
            for key, value in got.items():
                values.setdefault(key, []).append(value)
        if not per_task:
            raise EvaluationError(
                f"none of the {len(traces)} traces is an end-to-end episode of a known task"
            )
        metrics = _metrics(values)
        notes += _summary_notes(counts, values, mode, judge)
        result = SuiteResult(
            suite=self.name, mode=mode, metrics=metrics, per_task=per_task, counts=dict(counts), notes=notes
        )
        result.counts["episodes"] = len(per_task)
        return result


def _skip_reason(trace: Trace, tasks: TaskSet, mode: Mode) -> str | None:
    """The count a trace the suite does not score goes to (None: it is scored)."""
    if trace.header.task_id not in tasks:
        return "skipped_unknown_task"
    if is_teacher_forced(trace):
        return "skipped_teacher_forced"
    if mode == "fixed" and has_infra_error(trace):
        return "infra_error_episodes"
    return None


def _episode_scores(
    trace: Trace,
    task: Task,
    kind: str | None,
    mode: Mode,
    judge: Judge | None,
    counts: Counter[str],
    notes: list[str],
) -> dict[str, float]:
    """One episode's scores: tool_match, and the outcome its kind is judged by, where it has one."""
    calls = _calls(trace)
    gold_names = [g.action.name for g in task.golden if isinstance(g.action, ToolCall)]
    pred_names = [str(a.get("name")) for a, _ in calls]
    got = {"tool_match": tool_match(gold_names, pred_names, mode)}
    answer = final_answer(trace) or ""
    if kind == "fixed" and task.answer is not None and task.answer.whitelist:
        check = compat_keywords if mode == "compat" else fixed_iscorrect
        got["fixed_answer"] = float(check(answer, task.answer.whitelist, task.answer.blacklist))
    elif kind == "operation":
        golden_ok = all(
            any(str(a.get("name")) == name and _status_ok(obs) for a, obs in calls) for name in gold_names
        )
        ok = golden_ok if mode == "compat" else golden_ok and state_reached(trace, task)
        got["operation"] = float(ok)
    elif kind == "real_time":
        real_time = _real_time_score(trace, task, answer, mode, notes)
        if real_time is not None:
            got["real_time"] = real_time
    elif kind == "no_tool":
        got["no_tool"] = float(not calls)
    elif kind == "open_ended":
        open_ended = _open_ended_score(task, answer, mode, judge, counts)
        if open_ended is not None:
            got["open_ended"] = open_ended
    return got


def _real_time_score(trace: Trace, task: Task, answer: str, mode: Mode, notes: list[str]) -> float | None:
    """Whether the answer reports the values the episode observed in the task's answer fields
    (None, and a note: the task names no fields)."""
    meta = task.metadata.get("ctooleval", {})
    fields = [str(f) for f in meta.get("answer_fields", [])] if isinstance(meta, dict) else []
    if not fields:
        notes.append(f"{task.id}: a real-time task without answer_fields is not scored")
        return None
    seen = observed_values(trace, fields)
    if mode == "compat":
        ok = bool(seen) and all(_value_text(v).lower() in answer.lower() for v in seen.values())
    else:
        ok = len(seen) == len(fields) and all(alias_found(answer, _value_text(v)) for v in seen.values())
    return float(ok)


def _open_ended_score(
    task: Task, answer: str, mode: Mode, judge: Judge | None, counts: Counter[str]
) -> float | None:
    """The judge's rating of the answer against the reference (0-1), else its similarity to the
    reference answers (counted as unjudged); None where neither can score it."""
    reference = reference_answer(task)
    if judge is not None and reference is not None:
        verdict = judge.ask(open_ended_question(task.query, reference, answer))
        if verdict.score is not None:
            return verdict.score / 10
        if mode == "compat":
            return 0.0  # a reply without a score counts 0, as ToolEyes'
        return None
    if task.answer is not None and task.answer.references:
        score = open_ended_fallback(answer, task.answer.references)
        counts["open_ended_unjudged"] += 1
        return score
    counts["open_ended_unscored"] += 1
    return None


_METRIC_NAMES = {
    "tool_match": "ToolMatch",
    "fixed_answer": "FixedAnswerAcc",
    "open_ended": "OpenEndedScore",
    "operation": "OpSuccess",
    "real_time": "RealTimeAcc",
    "no_tool": "NoToolAcc",
}


def _metrics(values: dict[str, list[float]]) -> dict[str, float]:
    """Each score's mean (0-100), and TaskSuccess over the episodes' own outcomes."""
    metrics = {_METRIC_NAMES[k]: 100 * mean(v) for k, v in values.items()}
    # each episode's own outcome (its answer, operation or no-tool check), averaged
    outcomes = [
        v
        for k in ("fixed_answer", "operation", "real_time", "no_tool")  # graded open-ended apart
        for v in values.get(k, [])
    ]
    if outcomes:
        metrics["TaskSuccess"] = 100 * mean(outcomes)
    return metrics


def _summary_notes(
    counts: Counter[str], values: dict[str, list[float]], mode: Mode, judge: Judge | None
) -> list[str]:
    """What the reader of the scores should know: open-ended tasks unscored or scored without a
    judge, the judge used, and what compat follows."""
    notes = []
    if counts["open_ended_unscored"]:
        notes.append(
            f"{counts['open_ended_unscored']} open-ended tasks not scored: they need a judge "
            "(CToolEvalSuite(judge=...) or TOOLGYM_JUDGE_BASE_URL and TOOLGYM_JUDGE_MODEL) and a reference"
        )
    if counts["open_ended_unjudged"]:
        notes.append(
            f"OpenEndedScore of {counts['open_ended_unjudged']} tasks: character-level similarity to "
            "the reference answer, as no judge was set; CToolEval has an LLM judge score these answers"
        )
    if judge is not None and "open_ended" in values:
        notes.append(f"open-ended answers judged by {judge.name} against references; our prompt")
    if mode == "compat":
        notes.append("compat follows the CToolEval paper's metric definitions; its scorer code is not public")
    return notes
