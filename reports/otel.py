"""A run's episodes as OpenTelemetry spans, with the GenAI semantic conventions (the `otel` extra:
opentelemetry-sdk, and opentelemetry-exporter-otlp-proto-http to send them to a collector).

Per episode one `invoke_agent <agent>` span; under it, per step, a `chat <model>` span (the model's
turn: `gen_ai.operation.name` = chat) and one `execute_tool <tool>` span per tool call
(`gen_ai.operation.name` = execute_tool, `gen_ai.tool.name`, `gen_ai.tool.call.id`,
`gen_ai.tool.type` = function). A failed call's span has status ERROR and `error.type` = its
error kind. toolgym attributes (`toolgym.*`) carry the task id, seed, reward and state hashes.
Traces keep no wall-clock times unless recorded with timing: spans then last 1 ms each, laid one
after the other from the export's start, so their order and nesting are right.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from toolgym.reports.export import Episode

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

OTEL_MISSING = (
    "toolgym export --format otel needs OpenTelemetry: pip install 'toolgym[otel]' (opentelemetry-sdk)"
)
STEP_NS = 1_000_000  # a step's span length when the trace kept no latency


def export_spans(
    episodes: Sequence[Episode], provider: TracerProvider, *, start_ns: int | None = None
) -> int:
    """Send the episodes as spans through `provider`; the number of spans made."""
    from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context

    tracer = provider.get_tracer("toolgym")
    clock = start_ns if start_ns is not None else time.time_ns()
    count = 0
    for episode in episodes:
        trace = episode.trace
        header = trace.header
        model = str(header.env_config.get("model") or header.agent)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": header.agent,
            "gen_ai.request.model": model,
            "toolgym.task.id": header.task_id,
            "toolgym.protocol": header.protocol,
            "toolgym.reward": episode.reward,
            "toolgym.task_set": episode.loaded.task_set,
            "toolgym.trial": episode.loaded.trial,
        }
        if header.seed is not None:
            attributes["toolgym.seed"] = header.seed
        root = tracer.start_span(
            f"invoke_agent {header.agent}", kind=SpanKind.INTERNAL, attributes=attributes, start_time=clock
        )
        count += 1
        context = set_span_in_context(root)
        for step in trace.steps:
            length = int(step.latency_ms * 1_000_000) if step.latency_ms else STEP_NS
            chat = tracer.start_span(
                f"chat {model}",
                context=context,
                kind=SpanKind.CLIENT,
                start_time=clock,
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": model,
                    "toolgym.step": step.index,
                },
            )
            if not step.actions and step.error_kinds:
                chat.set_status(Status(StatusCode.ERROR, step.error_kinds[0]))
                chat.set_attribute("error.type", step.error_kinds[0])
            chat.end(end_time=clock + length)
            count += 1
            clock += length
            for action, obs in zip(step.actions, step.observations, strict=False):
                if action.get("type") != "tool_call":
                    continue
                span = tracer.start_span(
                    f"execute_tool {action['name']}",
                    context=context,
                    kind=SpanKind.INTERNAL,
                    start_time=clock,
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": action["name"],
                        "gen_ai.tool.call.id": action.get("call_id") or "",
                        "gen_ai.tool.type": "function",
                        "toolgym.step": step.index,
                    },
                )
                error = obs.get("error")
                if error:
                    span.set_status(Status(StatusCode.ERROR, error.get("message", "")[:200]))
                    span.set_attribute("error.type", error["kind"])
                span.end(end_time=clock + STEP_NS)
                count += 1
                clock += STEP_NS
        root.end(end_time=clock)
        clock += STEP_NS
    return count
