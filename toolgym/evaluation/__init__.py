"""Scorers over traces for GTA, T-Eval, MTU-Eval, ToolEyes and CToolEval, and loaders for their data."""

from toolgym.evaluation.base import (
    SUITES,
    EvaluationError,
    MetricSuite,
    Mode,
    SuiteResult,
    get_suite,
)

__all__ = ["SUITES", "EvaluationError", "MetricSuite", "Mode", "SuiteResult", "get_suite"]
