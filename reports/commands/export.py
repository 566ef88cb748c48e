"""`toolgym export`: a run's episodes as training data (OpenAI fine-tuning, TRL/datasets,
ShareGPT, preference pairs, token trajectories) or as OpenTelemetry spans."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from toolgym.running.commands.common import (
    TasksOption,
    console,
    fail,
    no_traces,
    print_incomplete,
    require_dirs,
    tasks_for,
)

if TYPE_CHECKING:
    from toolgym.reports.export import Episode, EpisodeFilter, ExportFormat


def export_command(
    directory: Annotated[
        Path, typer.Argument(help="a trace folder (a run directory, or any folder of traces)")
    ],
    fmt: Annotated[
        str,
        typer.Option(
            "--format", help="openai, hf, sharegpt, preference (best vs worst trial), tokens, otel (spans)"
        ),
    ] = "openai",
    out: Annotated[
        Path | None, typer.Option(help="the JSONL file; default: DIR/export.<format>.jsonl")
    ] = None,
    tasks: TasksOption = None,
    min_reward: Annotated[float | None, typer.Option(help="keep episodes with at least this reward")] = None,
    passed_only: Annotated[bool, typer.Option(help="keep only passed episodes (reward 1)")] = False,
    task_set: Annotated[list[str] | None, typer.Option(help="keep these task sets (folder names)")] = None,
    category: Annotated[list[str] | None, typer.Option(help="keep these task categories")] = None,
    otlp_endpoint: Annotated[
        str | None,
        typer.Option(
            help="--format otel: an OTLP/HTTP traces endpoint (default: spans as JSON lines in --out)"
        ),
    ] = None,
    strip_metadata: Annotated[
        bool,
        typer.Option(
            help="openai, preference: leave out each record's `metadata` (OpenAI's upload takes only "
            "the format's own keys)"
        ),
    ] = False,
) -> None:
    """Export a run's episodes as training data (OpenAI fine-tuning, TRL/datasets, ShareGPT,
    preference pairs, token trajectories) or as OpenTelemetry spans. An export with nothing in it
    says why and writes no file (exit 2)."""
    from toolgym.reports.export import (
        EpisodeFilter,
        ExportError,
        ExportFormat,
        export_records,
        write_jsonl,
    )

    try:
        chosen = ExportFormat(fmt)
    except ValueError:
        raise typer.BadParameter(
            f"{fmt!r}: choose one of {', '.join(f.value for f in ExportFormat)}", param_hint="--format"
        ) from None
    require_dirs([directory], "DIRECTORY")
    if chosen is ExportFormat.otel:
        _check_otel(otlp_endpoint)
    keep = EpisodeFilter(
        min_reward=min_reward,
        passed_only=passed_only,
        task_sets=frozenset(task_set or ()),
        categories=frozenset(category or ()),
    )
    episodes = _episodes(directory, tasks, keep)
    target = out or directory / f"export.{chosen.value}.jsonl"
    if chosen is ExportFormat.otel:
        _export_spans(episodes, target, otlp_endpoint)
        return
    try:
        records = export_records(episodes, chosen)
    except ExportError as exc:
        fail(f"{exc}; no file written")
    if not records:
        fail(f"no {chosen.value} records: {empty_reason(chosen, episodes)}; no file written")
    if strip_metadata:
        records = [{k: v for k, v in r.items() if k != "metadata"} for r in records]
    n = write_jsonl(records, target)
    console.print(f"{len(episodes)} episodes kept; {n} {chosen.value} records written to {target}")


def _episodes(directory: Path, tasks: Sequence[str] | None, keep: EpisodeFilter) -> list[Episode]:
    """The finished episodes of the folder that pass the filters; none at all stops the command."""
    from toolgym.reports.export import ExportError, finished_episodes
    from toolgym.running.trials import scan_traces

    index, _ = tasks_for(tasks, [directory])
    scan = scan_traces(directory)
    for problem in scan.problems:
        console.print(f"[yellow]skipped[/yellow] {escape(problem)}")
    if not scan.loaded:
        no_traces(directory, len(scan.incomplete))
    print_incomplete(scan.incomplete, "not exported")
    try:
        episodes = finished_episodes(scan.loaded, index, keep)
    except ExportError as exc:
        raise typer.BadParameter(str(exc), param_hint="--tasks") from None
    if not episodes:
        finished = finished_episodes(scan.loaded, index)
        why = "none passes the filters" if finished else "all were aborted"
        fail(f"nothing to export from {directory}: {len(scan.loaded)} traces, {why}; no file written")
    return episodes


def empty_reason(fmt: ExportFormat, episodes: Sequence[Episode]) -> str:
    """Why `episodes` give no record of `fmt`."""
    from toolgym.reports.export import ExportFormat

    if fmt is ExportFormat.preference:
        return (
            f"a pair is a task's best and worst trial when their rewards differ; in these {len(episodes)} "
            "episodes every task's trials tie (or differ only in what the env answered): run more "
            "--trials, or sample (--temperature)"
        )
    if fmt is ExportFormat.tokens:
        return (
            f"none of the {len(episodes)} episodes kept token ids: run an LLM agent with --token-ids "
            "against a vLLM server (>= 0.10.2), or a local model (--agent hf:...)"
        )
    return (
        f"none of the {len(episodes)} episodes has a model turn to learn from (a reply that did not "
        "parse is never learnt)"
    )


def _check_otel(otlp_endpoint: str | None) -> None:
    from toolgym.reports.otel import OTEL_MISSING

    try:
        import opentelemetry.sdk.trace
    except ImportError:
        fail(OTEL_MISSING)
    if otlp_endpoint is not None:
        try:
            import opentelemetry.exporter.otlp.proto.http.trace_exporter  # noqa: F401
        except ImportError:
            fail("--otlp-endpoint needs opentelemetry-exporter-otlp-proto-http: pip install 'toolgym[otel]'")


def _export_spans(episodes: Sequence[Episode], target: Path, otlp_endpoint: str | None) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor, SpanExporter

    from toolgym.reports.otel import export_spans

    exporter: SpanExporter
    sink = None
    if otlp_endpoint is not None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=otlp_endpoint)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        sink = target.open("w", encoding="utf-8")
        exporter = ConsoleSpanExporter(out=sink, formatter=lambda span: span.to_json(indent=None) + "\n")
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        count = export_spans(episodes, provider)
    finally:
        provider.shutdown()
        if sink is not None:
            sink.close()
    console.print(f"{len(episodes)} episodes; {count} spans sent to {otlp_endpoint or target}")
