"""The registry of metric suites, by name. It sits above the suite modules and `base` (which
they all import), so the suites never import it back."""

from __future__ import annotations

from toolgym.evaluation.base import EvaluationError, MetricSuite
from toolgym.evaluation.metrics.ctooleval import CToolEvalSuite
from toolgym.evaluation.metrics.gta import GTASuite
from toolgym.evaluation.metrics.mtu import MTUSuite
from toolgym.evaluation.metrics.teval import TEvalSuite
from toolgym.evaluation.metrics.tooleyes import ToolEyesSuite

SUITES: dict[str, MetricSuite] = {
    suite.name: suite for suite in (GTASuite(), TEvalSuite(), MTUSuite(), ToolEyesSuite(), CToolEvalSuite())
}


def get_suite(name: str) -> MetricSuite:
    try:
        return SUITES[name]
    except KeyError:
        raise EvaluationError(f"unknown metric suite {name!r}; known: {', '.join(sorted(SUITES))}") from None
