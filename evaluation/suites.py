"""The registry of metric suites, by name: the `toolgym.suites` entry points (toolgym.plugins),
toolgym's own five and those of installed packages. It sits above the suite modules and `base`
(which they all import), so the suites never import it back."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from toolgym.evaluation.base import EvaluationError, MetricSuite, Mode, SuiteResult
from toolgym.plugins import Plugin, PluginError, Registry
from toolgym.tasks import TaskSet
from toolgym.trace import Trace


def _suite_of(plugin: Plugin, loaded: Any) -> list[tuple[str, MetricSuite]]:
    """An entry point's suite: an instance, or a class made with no arguments."""
    suite = loaded() if isinstance(loaded, type) else loaded
    name = getattr(suite, "name", None)
    if not isinstance(name, str) or not callable(getattr(suite, "score", None)):
        raise PluginError(f"loads {loaded!r}, not a MetricSuite (a `name` and a `score` method)")
    checked: MetricSuite = suite
    return [(name, checked)]


# name -> suite, built from the installed entry points when first read
SUITES: Registry[MetricSuite] = Registry("suites", _suite_of)


def get_suite(name: str) -> MetricSuite:
    try:
        return SUITES[name]
    except KeyError:
        raise EvaluationError(f"unknown metric suite {name!r}; known: {', '.join(sorted(SUITES))}") from None


def score_suite(name: str, traces: Sequence[Trace], tasks: TaskSet | None, mode: Mode) -> SuiteResult:
    """The suite's result. A suite that raises (anything but EvaluationError, its own way of
    saying it cannot score) or returns something other than a SuiteResult is an EvaluationError
    on one line naming the suite, its package and its entry point: a plug-in's bug is its
    author's to fix, and the other suites still score."""
    suite = get_suite(name)
    try:
        result = suite.score(traces, tasks, mode)
    except EvaluationError:
        raise
    except Exception as exc:
        detail = " ".join(str(exc).split())
        raise EvaluationError(
            f"suite {name!r} ({SUITES.owner(name).describe()}) failed: {type(exc).__name__}"
            + (f": {detail}" if detail else "")
        ) from exc
    if not isinstance(result, SuiteResult):
        raise EvaluationError(
            f"suite {name!r} ({SUITES.owner(name).describe()}) returned a {type(result).__name__}, "
            "not a SuiteResult"
        )
    return result


# The benchmark a bundled task set belongs to. Tasks loaded from a benchmark's own files say it
# themselves: their metadata holds the suite's name as a key (metadata["mtu"], ...).
SET_SUITES = {
    "demo": "gta",
    "gta": "gta",
    "teval": "teval",
    "mtu": "mtu",
    "multiturn": "mtu",
    "ctool": "ctooleval",
    "tooleyes": "tooleyes",
}


def benchmark_of(metadata: Mapping[str, object] | None, task_set: str) -> str | None:
    """The suite whose benchmark a task comes from, or None (a task set of your own)."""
    for name in SUITES:
        if metadata is not None and name in metadata:
            return name
    return SET_SUITES.get(task_set)


def applicable(suite: str, benchmarks: Sequence[str | None]) -> tuple[list[int], Counter[str]]:
    """Which traces (by position) a suite scores: those of its own benchmark and those of none
    (your own tasks), or every one for a suite of no benchmark (`any_benchmark`: milestones); the
    others are counted by the benchmark they belong to."""
    keep: list[int] = []
    skipped: Counter[str] = Counter()
    everyone = suite in SUITES and bool(getattr(SUITES[suite], "any_benchmark", False))
    for i, benchmark in enumerate(benchmarks):
        if everyone or benchmark is None or benchmark == suite:
            keep.append(i)
        else:
            skipped[benchmark] += 1
    return keep, skipped
