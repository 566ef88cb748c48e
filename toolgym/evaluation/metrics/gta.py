"""gta metric suite (being written: the interface is final, the scoring lands next)."""

from __future__ import annotations

from collections.abc import Sequence

from toolgym.evaluation.base import EvaluationError, Mode, SuiteResult
from toolgym.recorder.trace import Trace
from toolgym.tasks import TaskSet


class GTASuite:
    name = "gta"

    def score(self, traces: Sequence[Trace], tasks: TaskSet | None, mode: Mode) -> SuiteResult:
        raise EvaluationError("the gta suite is not implemented yet")
