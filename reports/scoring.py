"""Scoring trace folders and the benchmarks' own result files with the metric suites: what
`toolgym eval` and `toolgym report --suite` do, callable from Python.

    from toolgym.reports.scoring import score_suites
    results, failures = score_suites(Path("runs/mtu"), ["mtu"], "fixed", index, tasks)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from toolgym.envs.perturb import unperturbed
from toolgym.evaluation.base import EvaluationError, SuiteResult, by_category
from toolgym.running.trials import LoadedTrace, load_traces
from toolgym.tasks import Task, TaskSet


def score_suites(
    directory: Path,
    suites: Sequence[str],
    mode: str,
    index: Mapping[str, Task],
    task_set: TaskSet,
    *,
    loaded: Sequence[LoadedTrace] | None = None,
) -> tuple[dict[str, SuiteResult], dict[str, str]]:
    """Each suite's result on the traces of `directory` (or the `loaded` ones), or why it could not
    score. A suite scores the traces of its own benchmark and of task sets of no benchmark; it
    counts the others apart (`skipped_other_benchmark`) and says so in a note. `index` and
    `task_set` are the tasks the traces ran on (by id, and as one set)."""
    from toolgym.evaluation.suites import benchmark_of

    if loaded is None:
        loaded, _ = load_traces(directory)
    # an episode its infrastructure aborted (an env-service trace ends `aborted`) is never scored;
    # one under a tool-schema perturbation is scored under the real names
    loaded = [
        replace(t, trace=unperturbed(t.trace))
        for t in loaded
        if t.trace.end is None or t.trace.end.status != "aborted"
    ]
    benchmarks = [
        benchmark_of(
            index[t.trace.header.task_id].metadata if t.trace.header.task_id in index else None, t.task_set
        )
        for t in loaded
    ]
    results: dict[str, SuiteResult] = {}
    failures: dict[str, str] = {}
    for name in suites:
        scored = _score_suite(name, loaded, benchmarks, task_set, mode)
        if isinstance(scored, str):
            failures[name] = scored
            continue
        scored.by_category = by_category(scored, index)
        results[name] = scored
    # a run with --retriever left its rankings: NDCG@k and recall@k against the gold APIs
    from toolgym.running.retrieval import load_retrieval, score_retrieval

    try:
        record = load_retrieval(directory)
        if record is not None:
            results["retrieval"] = score_retrieval(record, index)
    except EvaluationError as exc:
        failures["retrieval"] = str(exc)
    return results, failures


def _score_suite(
    name: str, loaded: Sequence[LoadedTrace], benchmarks: Sequence[str | None], task_set: TaskSet, mode: str
) -> SuiteResult | str:
    """One suite on the traces of its benchmark, or why it could not score them."""
    from toolgym.evaluation.suites import applicable, score_suite

    keep, skipped = applicable(name, benchmarks)
    others = ", ".join(f"{bench} {n}" for bench, n in sorted(skipped.items()))
    if not keep:
        return f"none of the {len(loaded)} traces is a {name} task" + (
            f" (they belong to: {others})" if others else ""
        )
    traces = [loaded[i].trace for i in keep]
    try:
        result = score_suite(name, traces, task_set, "compat" if mode == "compat" else "fixed")
    except EvaluationError as exc:
        return str(exc)
    stopped = sum(1 for t in traces if t.end is not None and t.end.budget is not None)
    if stopped:  # ended by a budget (tokens, cost, time), not by the agent: counted apart
        result.counts["budget_stops"] = stopped
        result.notes.append(
            f"{stopped} of the {len(traces)} episodes scored were stopped by a budget (`run --budget-*`); "
            "they are scored as the truncated episodes they are, and `toolgym report` gives success "
            "without them"
        )
    if skipped:
        result.counts["skipped_other_benchmark"] = sum(skipped.values())
        result.notes.append(
            f"{sum(skipped.values())} traces of other benchmarks not scored by {name}: {others}"
        )
    return result


def score_mtu_pairs(
    evals: Sequence[Path], responses: Sequence[Path], mode: str
) -> tuple[dict[str, SuiteResult], dict[str, str]]:
    """MTU-Eval's own files (eval rows + model responses) through the MTU scorer, per pair."""
    from toolgym.evaluation.metrics.mtu import score_mtu_files

    results: dict[str, SuiteResult] = {}
    failures: dict[str, str] = {}
    for eval_file, response_file in zip(evals, responses, strict=True):
        name = f"mtu:{eval_file.stem.removesuffix('_eval')}"
        try:
            results[name] = score_mtu_files(
                eval_file, response_file, "compat" if mode == "compat" else "fixed"
            )
        except EvaluationError as exc:
            failures[name] = str(exc)
    return results, failures


def score_teval_results(paths: Sequence[Path], mode: str) -> tuple[dict[str, SuiteResult], dict[str, str]]:
    """T-Eval's own result files (data with `prediction`, JSON keyed by id) scored together, as
    T-Eval's convert_results combines its subsets."""
    from toolgym.evaluation.loaders.teval import score_teval_files

    try:
        result = score_teval_files(paths, "compat" if mode == "compat" else "fixed")
    except EvaluationError as exc:
        return {}, {"teval:results": str(exc)}
    return {"teval:results": result}, {}
