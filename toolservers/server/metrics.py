"""Per-tool counters: calls, errors by kind, latency percentiles, queue and batch figures."""

from __future__ import annotations

import math
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

LATENCY_WINDOW = 4096  # the latest calls the percentiles describe


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (0 for an empty one)."""
    if not sorted_values:
        return 0.0
    rank = min(len(sorted_values), max(1, math.ceil(q / 100 * len(sorted_values)))) - 1
    return sorted_values[rank]


@dataclass
class ToolMetrics:
    calls: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    rejected: int = 0
    in_flight: int = 0
    waiting: int = 0
    total_s: float = 0.0
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCY_WINDOW))
    load_s: float | None = None
    load_error: str | None = None

    def record(self, latency_s: float, error_kind: str | None) -> None:
        self.calls += 1
        self.total_s += latency_s
        self.latencies.append(latency_s)
        if error_kind is not None:
            self.errors[error_kind] += 1

    def snapshot(self) -> dict[str, Any]:
        ordered = sorted(self.latencies)
        ms = 1000.0
        return {
            "calls": self.calls,
            "errors": sum(self.errors.values()),
            "errors_by_kind": dict(sorted(self.errors.items())),
            "rejected": self.rejected,
            "in_flight": self.in_flight,
            "waiting": self.waiting,
            "latency_ms": {
                "mean": round(self.total_s / self.calls * ms, 4) if self.calls else 0.0,
                "p50": round(percentile(ordered, 50) * ms, 4),
                "p95": round(percentile(ordered, 95) * ms, 4),
                "p99": round(percentile(ordered, 99) * ms, 4),
                "max": round(ordered[-1] * ms, 4) if ordered else 0.0,
                "window": len(ordered),
            },
            "load_s": None if self.load_s is None else round(self.load_s, 4),
            "load_error": self.load_error,
        }
