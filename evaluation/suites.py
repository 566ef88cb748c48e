"""The registry of metric suites, by name: the `toolgym.suites` entry points (toolgym.plugins),
toolgym's own five and those of installed packages. It sits above the suite modules and `base`
(which they all import), so the suites never import it back."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from toolgym.evaluation.base import EvaluationError, MetricSuite
from toolgym.plugins import Plugin, PluginError, Registry


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
    (your own tasks); the others are counted by the benchmark they belong to."""
    keep: list[int] = []
    skipped: Counter[str] = Counter()
    for i, benchmark in enumerate(benchmarks):
        if benchmark is None or benchmark == suite:
            keep.append(i)
        else:
            skipped[benchmark] += 1
    return keep, skipped
