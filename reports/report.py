"""A self-contained HTML report for a trace folder: tables plus matplotlib plots as inline PNGs.

Sections: summary; scores per metric (episode scores from the traces, and the metric suites' results
when `toolgym eval` wrote eval.<mode>.json or --suite asked for them); scores per task category;
per task; error kinds per tool; steps per episode; per-category tool F1 (when a GTA result is present);
pass@k / pass^k (when tasks have several trials); robustness, clean vs each fault plan (when
`toolgym run --faults` left faulted runs in DIR/faults/) and clean vs each tool-schema perturbation (in
DIR/perturbed/, `run --perturb`). Everything from traces is HTML-escaped: tool
names, task ids and error messages come from models and task files. No scripts, no external links.
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from toolgym.envs.milestones import MilestoneSummary, NotScored, trace_milestones
from toolgym.evaluation.base import SuiteResult, error_kinds, is_teacher_forced
from toolgym.evaluation.glossary import METRICS, anchor, glossary_entry
from toolgym.files import write_atomically
from toolgym.reports.robustness import (
    PerturbationRow,
    PlanRow,
    RobustnessRow,
    perturbation_rows,
    robustness_rows,
)
from toolgym.running.trials import (
    EpisodeRecord,
    LoadedTrace,
    PassK,
    RunSummary,
    load_traces,
    pass_k_table,
    read_run_summary,
    records_from_traces,
    traces_digest,
)
from toolgym.tasks import Task
from toolgym.trace import TraceHeader

NO_TOOL = "(no tool)"  # errors with no tool: format errors, unknown tools the parser could not name
NO_CATEGORY = "(none)"
MAX_TASK_ROWS = 500  # a per-task table longer than this helps nobody in a browser
PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c")


@dataclass
class ReportData:
    title: str
    directory: Path
    episodes: list[EpisodeRecord]
    traces: list[LoadedTrace]
    tasks: Mapping[str, Task]
    summary: RunSummary | None = None
    suite_results: dict[str, dict[str, SuiteResult]] = field(default_factory=dict)  # mode -> suite -> result
    suite_failures: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    robustness: list[RobustnessRow] = field(default_factory=list)  # clean, then each fault plan
    perturbation: list[PerturbationRow] = field(default_factory=list)  # clean, then each perturbation

    @property
    def episode_count(self) -> int:
        return len(self.episodes)

    @property
    def finished(self) -> list[EpisodeRecord]:
        return [e for e in self.episodes if e.status != "aborted"]

    def add_suite_results(
        self, mode: str, results: Mapping[str, SuiteResult], failures: Mapping[str, str] | None = None
    ) -> None:
        self.suite_results.setdefault(mode, {}).update(results)
        for name, message in (failures or {}).items():
            self.suite_failures[f"{name} ({mode})"] = message


def _read_eval_files(directory: Path, data: ReportData) -> None:
    """The results `toolgym eval` left, when they were computed on the traces there now; results
    of other traces (an older run in the same folder, a resumed run) are flagged, not shown."""
    current = traces_digest(data.traces)
    for path in sorted(directory.glob("eval.*.json")):
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
            if payload.get("traces_digest") != current:
                data.problems.append(
                    f"{path.name} is stale: it scored other traces than the {len(data.traces)} here now "
                    "(left out of this report; run `toolgym eval` again)"
                )
                continue
            mode = str(payload["mode"])
            results = {
                name: SuiteResult.model_validate(value) for name, value in payload.get("results", {}).items()
            }
            failures = {str(k): str(v) for k, v in payload.get("failures", {}).items()}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            data.problems.append(f"{path.name}: unreadable evaluation results ({exc})")
            continue
        data.add_suite_results(mode, results, failures)


def collect_report_data(
    directory: Path, tasks: Mapping[str, Task], *, title: str | None = None
) -> ReportData:
    """Traces under `directory`, its run.json when present (aborted episodes and token usage come
    from there) and any eval.<mode>.json files `toolgym eval` left in it."""
    traces, problems = load_traces(directory)
    summary, problem = read_run_summary(directory)
    if problem is not None:
        problems.append(f"{problem}; episodes taken from the traces")
    episodes = summary.episodes if summary is not None else records_from_traces(traces, tasks)
    data = ReportData(
        title=title or f"toolgym report: {directory.name or directory}",
        directory=directory,
        episodes=episodes,
        traces=traces,
        tasks=tasks,
        summary=summary,
        problems=problems,
    )
    _read_eval_files(directory, data)
    data.robustness, found = robustness_rows(directory, episodes, traces, tasks, summary)
    data.problems += found
    data.perturbation, found = perturbation_rows(directory, episodes, traces, tasks, summary)
    data.problems += found
    return data


# ---- figures ---------------------------------------------------------------------------------
def figure_png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    # no Software tag: the same data gives the same bytes
    fig.savefig(buf, format="png", dpi=96, bbox_inches="tight", metadata={"Software": None})
    return buf.getvalue()


def _img(fig: Figure, alt: str) -> str:
    data = base64.b64encode(figure_png(fig)).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def _short(label: str, limit: int = 28) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def bar_figure(
    labels: Sequence[str], series: Mapping[str, Sequence[float]], *, ylabel: str, ylim: float | None = None
) -> Figure:
    """Grouped vertical bars: one group per label, one bar per series."""
    width = max(4.0, 0.5 + 0.45 * len(labels) * max(len(series), 1))
    fig = Figure(figsize=(min(width, 14.0), 3.6))
    ax = fig.subplots()
    count = max(len(series), 1)
    bar = 0.8 / count
    for i, (name, values) in enumerate(series.items()):
        xs = [j + (i - (count - 1) / 2) * bar for j in range(len(labels))]
        ax.bar(xs, values, width=bar, label=name, color=PALETTE[i % len(PALETTE)])
    ax.set_xticks(
        range(len(labels)),
        [_short(lb) for lb in labels],
        rotation=30 if len(labels) > 4 else 0,
        ha="right" if len(labels) > 4 else "center",
    )
    ax.set_ylabel(ylabel)
    if ylim is not None:
        ax.set_ylim(0, ylim * (1.15 if len(series) > 1 else 1.0))  # headroom for the legend
    if len(series) > 1:
        ax.legend(fontsize="small", ncol=len(series), loc="upper right")
    ax.grid(axis="y", alpha=0.3)
    return fig


def stacked_barh_figure(rows: Sequence[str], stacks: Mapping[str, Sequence[int]], *, xlabel: str) -> Figure:
    fig = Figure(figsize=(8.0, max(1.6, 0.35 * len(rows) + 1.0)))
    ax = fig.subplots()
    left = [0] * len(rows)
    for i, (name, values) in enumerate(stacks.items()):
        ax.barh(range(len(rows)), values, left=left, label=name, color=PALETTE[i % len(PALETTE)])
        left = [a + b for a, b in zip(left, values, strict=True)]
    ax.set_yticks(range(len(rows)), [_short(r, 36) for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(axis="x", alpha=0.3)
    return fig


def histogram_figure(values: Sequence[int], *, xlabel: str) -> Figure:
    fig = Figure(figsize=(6.0, 3.2))
    ax = fig.subplots()
    low, high = min(values), max(values)
    ax.hist(values, bins=[b - 0.5 for b in range(low, high + 2)], color=PALETTE[0], edgecolor="white")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("episodes")
    ax.set_xticks(range(low, high + 1))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(axis="y", alpha=0.3)
    return fig


def pass_k_figure(rows: Sequence[PassK]) -> Figure:
    fig = Figure(figsize=(5.5, 3.2))
    ax = fig.subplots()
    ks = [r.k for r in rows]
    ax.plot(ks, [r.pass_at_k for r in rows], marker="o", label="pass@k", color=PALETTE[0])
    ax.plot(ks, [r.pass_hat_k for r in rows], marker="s", label="pass^k", color=PALETTE[3])
    ax.set_xticks(ks)
    ax.set_xlabel("k")
    ax.set_ylim(0, 1.05)
    ax.legend()
    ax.grid(alpha=0.3)
    return fig


# ---- tables ----------------------------------------------------------------------------------
def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]], cls: str = "") -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>" for row in rows)
    klass = f' class="{cls}"' if cls else ""
    return f"<table{klass}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


class Markup(str):
    """Cell text that is HTML already (a link built from escaped parts)."""


def _metric_link(name: str, suite: str) -> Markup:
    """A metric's name, linked to its glossary entry when it has one."""
    entry = glossary_entry(name, suite)
    if entry is None:
        return Markup(html.escape(name))
    return Markup(
        f'<a href="#{anchor(entry.name)}" title="{html.escape(entry.definition)}">{html.escape(name)}</a>'
    )


def glossary_section() -> str:
    rows = "".join(
        f'<tr id="{anchor(m.name)}"><td>{html.escape(m.name)}</td><td>{html.escape(m.suite)}</td>'
        f"<td>{html.escape(m.definition)}</td><td>{html.escape(m.paper.title)}</td></tr>"
        for m in METRICS
    )
    head = "".join(f"<th>{h}</th>" for h in ("metric", "suite", "meaning", "paper"))
    body = f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
    return _section("glossary", "What the metrics mean (toolgym eval --explain)", body)


def _cell(value: Any) -> str:
    if isinstance(value, Markup):
        return str(value)
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.2f}"
    return html.escape(str(value))


def _section(ident: str, heading: str, body: str) -> str:
    return f'<section id="{ident}"><h2>{html.escape(heading)}</h2>{body}</section>'


def _note(text: str) -> str:
    return f'<p class="note">{html.escape(text)}</p>'


# ---- sections --------------------------------------------------------------------------------
def _category(data: ReportData, record: EpisodeRecord) -> str:
    if record.category:
        return record.category
    task = data.tasks.get(record.task_id)
    return task.category if task is not None and task.category else NO_CATEGORY


def tool_backends(headers: Iterable[TraceHeader]) -> dict[str, int]:
    """Distinct tools (name and version) per backend, over the traces' headers."""
    seen: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for header in headers:
        for t in header.tools:
            seen[t.backend].add((t.name, t.version))
    return {backend: len(tools) for backend, tools in sorted(seen.items())}


def scenario_grid(metrics: Mapping[str, float]) -> tuple[list[str], list[list[Any]]] | None:
    """Metrics named "<group>/<metric>" (ToolEyes' "TG/IF", ...) as a grid: one row per group,
    one column per metric; None when there are none."""
    grouped: dict[str, dict[str, float]] = defaultdict(dict)
    for key, value in metrics.items():
        group, sep, metric = key.partition("/")
        if sep and group and metric and "/" not in metric:
            grouped[group][metric] = value
    if not grouped:
        return None
    columns = list(dict.fromkeys(m for g in grouped.values() for m in g))
    rows = [[group, *(values.get(c, "-") for c in columns)] for group, values in grouped.items()]
    return columns, rows


def summary_section(data: ReportData) -> str:
    finished = data.finished
    tasks = {(e.task_set, e.task_id) for e in data.episodes}
    trials = {e.trial for e in data.episodes}
    headers = [t.trace.header for t in data.traces]
    agents = sorted({h.agent for h in headers}) or ([data.summary.agent] if data.summary else [])
    protocols = sorted({h.protocol for h in headers}) or ([data.summary.protocol] if data.summary else [])
    solved = sum(e.success for e in finished)
    errors = sum(sum(e.error_counts.values()) for e in data.episodes)
    rows: list[tuple[str, Any]] = [
        ("agent", ", ".join(agents) or "-"),
        ("protocol", ", ".join(protocols) or "-"),
        ("tasks", len(tasks)),
        ("trials", len(trials)),
        ("episodes", len(data.episodes)),
        ("aborted episodes (model server failed; left out of the rates)", len(data.episodes) - len(finished)),
        ("success rate (reward = 1)", f"{solved}/{len(finished)} = {solved / max(len(finished), 1):.1%}"),
        ("mean reward", sum(e.reward for e in finished) / len(finished) if finished else "-"),
        ("mean steps", sum(e.steps for e in finished) / len(finished) if finished else "-"),
        ("errors (all kinds)", errors),
    ]
    stopped = [e for e in finished if e.scores.get("budget_stop")]
    if stopped:  # stopped by a budget, not failed by the agent: counted apart
        solved_unstopped = sum(e.success for e in finished if not e.scores.get("budget_stop"))
        rows.insert(
            7,
            (
                "budget stops (episodes past a token, cost or time budget)",
                f"{len(stopped)}; success without them {solved_unstopped}/{len(finished) - len(stopped)}",
            ),
        )
    backends = tool_backends(headers)
    if backends:
        # simulated tools say so: "simulated:deterministic 5 tools", beside real ones and mocks
        rows.append(("tool backends", ", ".join(f"{b} ({n} tools)" for b, n in backends.items())))
    if data.summary is not None:
        if data.summary.model:
            rows.insert(1, ("model", data.summary.model))
        usage = data.summary.usage
        if usage["requests"]:
            rows.append(
                (
                    "tokens",
                    f"{usage['prompt_tokens']} prompt + {usage['completion_tokens']} completion "
                    f"in {usage['requests']} requests ({usage['retries']} retries)",
                )
            )
    body = _table(["", "value"], rows, "summary")
    aborted = [e for e in data.episodes if e.status == "aborted"]
    if aborted:
        body += "<h3>Aborted episodes</h3>" + _table(
            ["trial", "task", "reason"],
            [(e.trial, f"{e.task_set}/{e.task_id}", e.error or "-") for e in aborted],
        )
    for problem in data.problems:
        body += _note(problem)
    return _section("summary", "Summary", body)


def metrics_section(data: ReportData) -> str:
    finished = data.finished
    keys = sorted({k for e in finished for k in e.scores})
    body = ""
    if keys:
        means = [
            sum(e.scores.get(k, 0.0) for e in finished if k in e.scores)
            / sum(k in e.scores for e in finished)
            for k in keys
        ]
        counts = [sum(k in e.scores for e in finished) for k in keys]
        body += "<h3>Episode scores (from the traces)</h3>"
        top = max(1.05, max(means) * 1.05)  # some envs report counts (steps) beside the 0-1 scores
        body += _img(
            bar_figure(keys, {"mean": means}, ylabel="mean score", ylim=top), "mean episode score per metric"
        )
        body += _table(["metric", "mean", "episodes scored"], zip(keys, means, counts, strict=True))
    else:
        body += _note("No episode scores in the traces.")
    for mode, results in sorted(data.suite_results.items()):
        for name, result in sorted(results.items()):
            body += f"<h3>{html.escape(name)} suite ({html.escape(mode)} mode)</h3>"
            metrics = result.metrics
            if metrics:
                plotted = {k: v for k, v in metrics.items() if 0.0 <= v <= 100.0}
                if plotted:
                    body += _img(
                        bar_figure(list(plotted), {name: list(plotted.values())}, ylabel="%", ylim=100.0),
                        f"{name} metrics",
                    )
                grid = scenario_grid(metrics)
                if grid is not None:
                    columns, rows = grid
                    body += _table(["", *columns], rows, "grid")
                body += _table(["metric", "value"], [(_metric_link(k, name), v) for k, v in metrics.items()])
            if len(result.by_category) > 1:
                keys = list(dict.fromkeys(k for row in result.by_category.values() for k in row))
                rows = [
                    [category, *[row.get(k, float("nan")) for k in keys]]
                    for category, row in result.by_category.items()
                ]
                body += "<h4>per category (mean per-task score, % where a fraction)</h4>"
                body += _table(["category", *keys], rows)
            kinds = error_kinds(result.counts)
            if kinds:
                columns = list(dict.fromkeys(k for row in kinds.values() for k in row))
                rows = [[group, *[row.get(c, 0) for c in columns]] for group, row in kinds.items()]
                body += "<h4>errors by kind</h4>" + _table(["", *columns], rows)
            if result.counts:
                body += _table(["count", "value"], result.counts.items(), "counts")
            for note in result.notes:
                body += _note(note)
    for name, message in sorted(data.suite_failures.items()):
        body += _note(f"{name}: not scored: {message}")
    return _section("metrics", "Scores per metric", body)


def category_section(data: ReportData) -> str:
    groups: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for e in data.finished:
        groups[_category(data, e)].append(e)
    if not groups:
        return _section("categories", "Scores per task category", _note("No finished episodes."))
    names = sorted(groups)
    success = [sum(e.success for e in groups[c]) / len(groups[c]) for c in names]
    reward = [sum(e.reward for e in groups[c]) / len(groups[c]) for c in names]
    score_keys = sorted({k for e in data.finished for k in e.scores if k != "reward"})
    rows = []
    for c, s, r in zip(names, success, reward, strict=True):
        extra = []
        for k in score_keys:
            scored = [e.scores[k] for e in groups[c] if k in e.scores]
            extra.append(sum(scored) / len(scored) if scored else "-")
        rows.append([c, len(groups[c]), s, r, *extra])
    body = _img(
        bar_figure(names, {"success rate": success, "mean reward": reward}, ylabel="rate", ylim=1.05),
        "success rate and mean reward per task category",
    )
    body += _table(["category", "episodes", "success rate", "mean reward", *score_keys], rows)
    return _section("categories", "Scores per task category", body)


def tasks_section(data: ReportData) -> str:
    groups: dict[tuple[str, str], list[EpisodeRecord]] = defaultdict(list)
    for e in data.episodes:
        groups[(e.task_set, e.task_id)].append(e)
    rows = []
    for (set_name, task_id), records in sorted(groups.items()):
        done = [e for e in records if e.status != "aborted"]
        rows.append(
            [
                set_name or "-",
                task_id,
                _category(data, records[0]),
                f"{sum(e.success for e in done)}/{len(done)}",
                sum(e.reward for e in done) / len(done) if done else "-",
                sum(e.steps for e in done) / len(done) if done else "-",
                sum(sum(e.error_counts.values()) for e in records),
                len(records) - len(done),
            ]
        )
    headers = ["set", "task", "category", "passed", "mean reward", "mean steps", "errors", "aborted"]
    body = _table(headers, rows[:MAX_TASK_ROWS])
    if len(rows) > MAX_TASK_ROWS:
        body += _note(f"The first {MAX_TASK_ROWS} of {len(rows)} tasks, sorted by set and id.")
    return _section("tasks", "Per task", body)


def milestones_section(data: ReportData) -> str | None:
    """Per task: mean milestone progress, the first milestone an episode missed, the episodes
    that hit a minefield (toolgym.envs.milestones; traces without them are scored again)."""
    groups: dict[tuple[str, str], list[MilestoneSummary | str]] = defaultdict(list)
    for loaded in data.traces:
        trace = loaded.trace
        task = data.tasks.get(trace.header.task_id)
        if task is None or trace.end is None or is_teacher_forced(trace):
            continue
        try:
            found: MilestoneSummary | str | None = trace_milestones(trace, task)
        except NotScored as exc:
            found = f"not scored: {exc}"
        if found is not None:
            groups[(loaded.task_set, task.id)].append(found)
    if not groups:
        return None
    rows = []
    for (set_name, task_id), found_all in sorted(groups.items()):
        scored = [f for f in found_all if isinstance(f, MilestoneSummary)]
        progress = [f.progress for f in scored if f.progress is not None]
        missed = next((f.first_missed for f in scored if f.first_missed is not None), None)
        problems = [f for f in found_all if isinstance(f, str)]
        rows.append(
            [
                set_name or "-",
                task_id,
                100 * sum(progress) / len(progress) if progress else "-",
                missed or ("-" if not problems else problems[0]),
                f"{sum(bool(f.hits) for f in scored)}/{len(scored)}",
            ]
        )
    headers = ["set", "task", "milestone progress %", "first missed", "minefield hits (episodes)"]
    body = _note(
        "How far each episode got: milestones are the task's own, or derived from its golden chain "
        "(each write's effect, each read the answer quotes); a minefield hit zeroes the reward."
    ) + _table(headers, rows[:MAX_TASK_ROWS])
    return _section("milestones", "Milestones", body)


def tool_error_counts(traces: Iterable[LoadedTrace]) -> dict[str, Counter[str]]:
    """tool -> error kind -> count, from every observation of every step."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for loaded in traces:
        for step in loaded.trace.steps:
            for obs in step.observations:
                error = obs.get("error")
                if not isinstance(error, dict) or not isinstance(error.get("kind"), str):
                    continue
                tool = obs.get("tool")
                counts[tool if isinstance(tool, str) and tool else NO_TOOL][error["kind"]] += 1
    return counts


def errors_section(data: ReportData) -> str:
    counts = tool_error_counts(data.traces)
    calls: Counter[str] = Counter()
    for loaded in data.traces:
        for step in loaded.trace.steps:
            for action in step.actions:
                if action.get("type") == "tool_call" and isinstance(action.get("name"), str):
                    calls[action["name"]] += 1
    if not counts:
        body = _note(f"No errors in {len(data.traces)} traces ({sum(calls.values())} tool calls).")
        return _section("errors", "Error kinds per tool", body)
    tools = sorted(counts, key=lambda t: (-sum(counts[t].values()), t))
    kinds = sorted({k for c in counts.values() for k in c})
    body = _img(
        stacked_barh_figure(tools, {k: [counts[t][k] for t in tools] for k in kinds}, xlabel="errors"),
        "error kinds per tool",
    )
    rows = [[t, calls.get(t, "-"), *[counts[t][k] for k in kinds], sum(counts[t].values())] for t in tools]
    body += _table(["tool", "calls", *kinds, "total"], rows)
    return _section("errors", "Error kinds per tool", body)


def steps_section(data: ReportData) -> str:
    steps = [e.steps for e in data.finished]
    if not steps:
        return _section("steps", "Steps per episode", _note("No finished episodes."))
    status = Counter(e.status for e in data.episodes)
    body = _img(histogram_figure(steps, xlabel="steps per episode"), "histogram of steps per episode")
    body += _table(
        ["min", "mean", "max", *[f"{s} episodes" for s in sorted(status)]],
        [[min(steps), sum(steps) / len(steps), max(steps), *[status[s] for s in sorted(status)]]],
    )
    return _section("steps", "Steps per episode", body)


def f1_metrics(result: SuiteResult) -> dict[str, float]:
    """The per-category tool F1 figures of a GTA result (metric names holding "F1")."""
    return {k: v for k, v in result.metrics.items() if "f1" in k.lower()}


def f1_section(data: ReportData) -> str | None:
    found = [
        (mode, f1_metrics(results["gta"]))
        for mode, results in sorted(data.suite_results.items())
        if "gta" in results and f1_metrics(results["gta"])
    ]
    if not found:
        return None
    body = ""
    for mode, metrics in found:
        body += f"<h3>gta ({html.escape(mode)} mode)</h3>"
        body += _img(
            bar_figure(list(metrics), {"F1": list(metrics.values())}, ylabel="F1 (%)", ylim=100.0),
            "tool F1 per category",
        )
        body += _table(["metric", "F1"], metrics.items())
    return _section("tool-f1", "Per-category tool F1 (GTA)", body)


def pass_k_section(data: ReportData) -> str | None:
    rows = pass_k_table(data.episodes)
    if len(rows) < 2:
        return None  # one trial per task: pass@1 = pass^1 = the success rate above
    body = _img(pass_k_figure(rows), "pass@k and pass^k")
    body += _table(
        ["k", "pass@k", "pass^k", "tasks with >= k trials"],
        [(r.k, r.pass_at_k, r.pass_hat_k, r.tasks) for r in rows],
    )
    body += _note(
        "tau-bench estimators from n trials with c successes per task: pass^k = C(c,k)/C(n,k), "
        "pass@k = 1 - C(n-c,k)/C(n,k); averaged over the tasks with at least k finished trials."
    )
    return _section("pass-k", "pass@k and pass^k", body)


def _plan_rates(rows: Sequence[PlanRow], what: str) -> str:
    """The bars of a robustness table: success rate and mean reward, clean and under each plan."""
    labels = [f"{r.agent} / {r.plan}" if len({x.agent for x in rows}) > 1 else r.plan for r in rows]
    return _img(
        bar_figure(
            labels,
            {
                "success rate": [r.success_rate or 0.0 for r in rows],
                "mean reward": [r.mean_reward or 0.0 for r in rows],
            },
            ylabel="rate",
            ylim=1.05,
        ),
        f"success rate and mean reward, clean and under each {what}",
    )


def robustness_section(data: ReportData) -> str | None:
    rows = data.robustness
    if not rows:
        return None
    body = _plan_rates(rows, "fault plan")
    body += _table(
        [
            "agent",
            "plan",
            "episodes",
            "success rate",
            "mean reward (with faults)",
            "mean reward (without faulted episodes)",
            "injected faults",
            "infra errors",
            "retries",
            "recovered (faulted episodes that succeeded)",
            "recovered from (kind: recovered/hit)",
        ],
        [
            [
                r.agent,
                r.plan,
                r.episodes,
                "-" if r.success_rate is None else r.success_rate,
                "-" if r.mean_reward is None else r.mean_reward,
                "-" if r.mean_reward_without_faults is None else r.mean_reward_without_faults,
                r.injected,
                r.infra_errors,
                r.retries,
                f"{r.recovered}/{r.faulted_episodes}",
                r.recovered_from(),
            ]
            for r in rows
        ],
    )
    body += _note(
        "Injected faults are infra errors, never the agent's: the other sections count the clean "
        "run only. A retry is a tool call repeated unchanged right after an injected fault."
    )
    return _section("robustness", "Robustness: clean vs fault plans", body)


def perturbation_section(data: ReportData) -> str | None:
    rows = data.perturbation
    if not rows:
        return None
    body = _plan_rates(rows, "tool-schema perturbation")
    clean = rows[0].success_rate
    body += _table(
        [
            "agent",
            "plan",
            "episodes",
            "success rate",
            "vs clean",
            "mean reward",
            "unknown tools",
            "argument errors",
            "distractor calls",
        ],
        [
            [
                r.agent,
                r.plan,
                r.episodes,
                "-" if r.success_rate is None else r.success_rate,
                "-" if r.success_rate is None or clean is None else f"{r.success_rate - clean:+.3f}",
                "-" if r.mean_reward is None else r.mean_reward,
                r.unknown_tools,
                r.argument_errors,
                r.distractor_calls,
            ]
            for r in rows
        ],
    )
    body += _note(
        "The same episodes with the tools offered under each plan (scrambled names, renamed "
        "arguments, no descriptions or types, distractor tools); scores map the calls back to the "
        "real names. The other sections count the clean run only."
    )
    return _section("perturbation", "Robustness: clean vs perturbed tool schemas", body)


STYLE = """
body { font-family: system-ui, -apple-system, Segoe UI, Roboto, sans-serif; margin: 2em auto; max-width: 1100px;
       color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 1.8em; }
table { border-collapse: collapse; margin: .8em 0; font-size: .9em; }
th, td { border: 1px solid #ddd; padding: .3em .6em; text-align: left; }
th { background: #f3f3f3; } td:not(:first-child) { font-variant-numeric: tabular-nums; }
img { display: block; max-width: 100%; margin: .8em 0; }
.note { color: #555; font-size: .9em; }
nav a { margin-right: 1em; }
"""


def render_report(data: ReportData) -> str:
    sections = [
        summary_section(data),
        metrics_section(data),
        category_section(data),
        tasks_section(data),
        milestones_section(data),
        errors_section(data),
        steps_section(data),
        f1_section(data),
        pass_k_section(data),
        robustness_section(data),
        perturbation_section(data),
        glossary_section(),
    ]
    present = [s for s in sections if s is not None]
    nav = " ".join(
        f'<a href="#{ident}">{html.escape(label)}</a>'
        for ident, label in (
            ("summary", "Summary"),
            ("metrics", "Metrics"),
            ("categories", "Categories"),
            ("tasks", "Tasks"),
            ("milestones", "Milestones"),
            ("errors", "Errors"),
            ("steps", "Steps"),
            ("tool-f1", "Tool F1"),
            ("pass-k", "pass@k"),
            ("robustness", "Robustness"),
            ("perturbation", "Perturbations"),
        )
        if any(s.startswith(f'<section id="{ident}"') for s in present)
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(data.title)}</title><style>{STYLE}</style></head>"
        f"<body><h1>{html.escape(data.title)}</h1><nav>{nav}</nav>" + "".join(present) + "</body></html>\n"
    )


def write_report(data: ReportData, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, render_report(data))
    return path
