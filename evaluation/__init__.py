"""Scorers over traces for GTA, T-Eval, MTU-Eval, ToolEyes and CToolEval, and loaders for their data."""

# One import path: this root folder is the package `toolgym.evaluation` (through the link toolgym/evaluation),
# never a top-level `evaluation` package, or every module would exist twice.
if __name__ != "toolgym.evaluation":
    raise ImportError(
        f"import toolgym.evaluation, not {__name__}: the root folder evaluation/ is a subpackage of toolgym"
    )


from toolgym.evaluation.base import EvaluationError, MetricSuite, Mode, SuiteResult
from toolgym.evaluation.suites import SUITES, get_suite

__all__ = ["SUITES", "EvaluationError", "MetricSuite", "Mode", "SuiteResult", "get_suite"]
