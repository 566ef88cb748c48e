"""End-to-end win rate (T-Eval's end-to-end comparison): a run's episodes judged pairwise against
a reference run's episodes of the same tasks by any OpenAI-compatible judge.

Each task's two solution paths (calls, what came back, the final answer) are shown to the judge
twice, once in each order, so a judge that prefers the first (or second) position cancels out: a
win counts 1, a tie 0.5, a loss 0, and a task's score is the mean of its two orders. A reply
without a "Preferred:" line is left out (counted). The prompt is ours: it states the paper's
question (which path solves the request better) in our own words.

    from toolgym.evaluation.metrics.winrate import win_rate
    result = win_rate(candidate_traces, reference_traces, tasks, judge)
    result.metrics["WinRate"]
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from toolgym.canonical import canonical_json
from toolgym.evaluation.base import EvaluationError, SuiteResult, final_answer, mean
from toolgym.evaluation.metrics.judge import Judge
from toolgym.tasks import TaskSet
from toolgym.trace import Trace

_PREFERRED = re.compile(r"Preferred:\s*\**\s*(A|B|tie)\b", re.IGNORECASE)
RESPONSE_CHARS = 600  # a tool response is cut here in the question: the judge needs its gist
OUTCOME = {"candidate": 1.0, "tie": 0.5, "reference": 0.0}


def solution_text(trace: Trace) -> str:
    """An episode as the judge reads it: each call, what came back, and the final answer."""
    lines: list[str] = []
    for step in trace.steps:
        for n, action in enumerate(step.actions):
            if action.get("type") != "tool_call":
                continue
            obs = step.observations[n] if n < len(step.observations) else {}
            text = str(obs.get("text", ""))
            if len(text) > RESPONSE_CHARS:
                text = text[:RESPONSE_CHARS] + " ..."
            lines.append(f"Call {action.get('name')} {canonical_json(action.get('arguments') or {})}")
            lines.append(f"  -> {text}")
    answer = final_answer(trace)
    lines.append(f"Final answer: {answer if answer is not None else '(none: the episode ended without one)'}")
    return "\n".join(lines)


def pairwise_question(query: str, first: str, second: str) -> list[dict[str, str]]:
    system = (
        "You compare two assistants that used tools to solve the same user request. Judge which "
        "solution path solves the request better: a correct, complete final answer supported by "
        "what the tools returned matters most; then fewer failed or needless calls. Do not let the "
        "order of the two, or their length, sway you.\n"
        "Answer in this format:\nReason: <why>\nPreferred: <A, B or tie>"
    )
    user = f'Request:\n"""\n{query}\n"""\n\nSolution A:\n"""\n{first}\n"""\n\nSolution B:\n"""\n{second}\n"""'
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def parse_preference(text: str) -> str | None:
    """ "A", "B" or "tie" from the judge's "Preferred:" line; None without one."""
    match = _PREFERRED.search(text)
    if match is None:
        return None
    choice = match.group(1)
    return "tie" if choice.lower() == "tie" else choice.upper()


def _first_per_task(traces: Sequence[Trace]) -> dict[str, Trace]:
    out: dict[str, Trace] = {}
    for trace in traces:
        out.setdefault(trace.header.task_id, trace)
    return out


def win_rate(
    candidate: Sequence[Trace], reference: Sequence[Trace], tasks: TaskSet, judge: Judge
) -> SuiteResult:
    """WinRate (0-100) of `candidate` over `reference` on the tasks both ran (the first trace of
    each task on each side), with wins, ties and losses per order in `counts`."""
    mine, theirs = _first_per_task(candidate), _first_per_task(reference)
    shared = [task_id for task_id in mine if task_id in theirs and task_id in tasks]
    if not shared:
        raise EvaluationError("the candidate and reference runs share no task of the task set")
    counts: Counter[str] = Counter()
    per_task: dict[str, dict[str, float]] = {}
    for task_id in shared:
        query = tasks[task_id].query
        ours, other = solution_text(mine[task_id]), solution_text(theirs[task_id])
        outcomes: list[float] = []
        for candidate_first in (True, False):
            first, second = (ours, other) if candidate_first else (other, ours)
            choice = parse_preference(judge.ask(pairwise_question(query, first, second)).reason)
            if choice is None:
                counts["unparsed"] += 1
                continue
            winner = (
                "tie"
                if choice == "tie"
                else ("candidate" if (choice == "A") == candidate_first else "reference")
            )
            counts[{"candidate": "wins", "tie": "ties", "reference": "losses"}[winner]] += 1
            outcomes.append(OUTCOME[winner])
        if outcomes:
            per_task[task_id] = {"win": mean(outcomes)}
    metrics = {"WinRate": 100 * mean([v["win"] for v in per_task.values()])} if per_task else {}
    counts["pairs"] = len(shared)
    counts["candidate_only"] = sum(1 for t in mine if t not in theirs)
    counts["reference_only"] = sum(1 for t in theirs if t not in mine)
    notes = [f"judged by {judge.name} pairwise, both orders; our prompt states T-Eval's comparison"]
    if counts["unparsed"]:
        notes.append(f"{counts['unparsed']} judge replies without a 'Preferred:' line are left out")
    return SuiteResult(
        suite="winrate", mode="fixed", metrics=metrics, per_task=per_task, counts=dict(counts), notes=notes
    )
