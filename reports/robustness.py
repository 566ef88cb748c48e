"""Robustness under fault plans: a clean run against the same run under each plan (`toolgym run
--faults PLAN` writes them as OUT/ and OUT/faults/<plan>/).

Per agent and plan: episodes, success rate, mean reward scored with the faults and without them
(the episodes that met no injected fault), injected faults, infra errors, retries (a tool call
repeated unchanged right after an injected fault) and recovery (the episodes that met a fault and
still succeeded), overall and per fault kind. Injected faults are read from the traces'
observations (`content.injected`, see `toolgym.envs.faults`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolgym.envs.faults import injected_of
from toolgym.running.trials import (
    FAULTS_DIR,
    EpisodeRecord,
    LoadedTrace,
    RunSummary,
    load_traces,
    read_run_summary,
    records_from_traces,
)
from toolgym.tasks import Task
from toolgym.trace import Trace

CLEAN = "clean"


@dataclass(frozen=True)
class EpisodeFaults:
    """What the fault plan did to one episode, from its trace."""

    injected: tuple[str, ...] = ()  # fault kinds in the order the agent met them
    retries: int = 0


def episode_faults(trace: Trace) -> EpisodeFaults:
    """Injected faults and retries of one trace. A retry is a tool call identical (name and
    arguments) to the call just before it, when that call's answer was an injected fault."""
    kinds: list[str] = []
    retries = 0
    previous: tuple[Any, Any] | None = None
    previous_injected = False
    for step in trace.steps:
        for action, obs in zip(step.actions, step.observations, strict=False):
            if action.get("type") != "tool_call":
                continue
            call = (action.get("name"), action.get("arguments"))
            if previous_injected and call == previous:
                retries += 1
            record = injected_of(obs)
            if record is not None:
                kinds.append(str(record.get("kind")))
            previous, previous_injected = call, record is not None
    return EpisodeFaults(tuple(kinds), retries)


@dataclass
class RobustnessRow:
    agent: str
    plan: str
    episodes: int = 0  # finished (aborted ones are left out, as everywhere)
    successes: int = 0
    reward_sum: float = 0.0
    clean_reward_sum: float = 0.0  # over the episodes that met no injected fault
    clean_episodes: int = 0
    faulted_episodes: int = 0
    recovered: int = 0  # faulted episodes that still succeeded
    injected: int = 0
    infra_errors: int = 0
    retries: int = 0
    by_kind: dict[str, list[int]] = field(default_factory=dict)  # kind -> [episodes hit, recovered]

    @property
    def success_rate(self) -> float | None:
        return self.successes / self.episodes if self.episodes else None

    @property
    def mean_reward(self) -> float | None:
        """Scored with the faults: every finished episode."""
        return self.reward_sum / self.episodes if self.episodes else None

    @property
    def mean_reward_without_faults(self) -> float | None:
        """Scored without them: the episodes no injected fault touched."""
        return self.clean_reward_sum / self.clean_episodes if self.clean_episodes else None

    def recovered_from(self) -> str:
        """e.g. "http_503 2/3, truncate 1/1": per kind, episodes recovered of episodes hit."""
        return ", ".join(f"{k} {r}/{h}" for k, (h, r) in sorted(self.by_kind.items())) or "-"


def robustness_row(
    agent: str, plan: str, episodes: Iterable[EpisodeRecord], traces: Sequence[LoadedTrace]
) -> RobustnessRow:
    by_rel = {t.rel: t.trace for t in traces}
    row = RobustnessRow(agent=agent, plan=plan)
    for e in episodes:
        if e.status == "aborted":
            continue
        trace = by_rel.get(e.trace or "")
        faults = episode_faults(trace) if trace is not None else EpisodeFaults()
        row.episodes += 1
        row.successes += int(e.success)
        row.reward_sum += e.reward
        row.infra_errors += e.error_counts.get("infra_error", 0)
        row.injected += len(faults.injected)
        row.retries += faults.retries
        if not faults.injected:
            row.clean_episodes += 1
            row.clean_reward_sum += e.reward
            continue
        row.faulted_episodes += 1
        row.recovered += int(e.success)
        for kind in Counter(faults.injected):
            hit = row.by_kind.setdefault(kind, [0, 0])
            hit[0] += 1
            hit[1] += int(e.success)
    return row


def _run_agent(summary: RunSummary | None, traces: Sequence[LoadedTrace]) -> str:
    if summary is not None:
        return summary.agent
    agents = sorted({t.trace.header.agent for t in traces})
    return ", ".join(agents) or "-"


def faulted_runs(directory: Path) -> list[Path]:
    """The faulted runs beside a clean run: DIR/faults/<plan>/ folders holding traces."""
    root = directory / FAULTS_DIR
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir())


def robustness_rows(
    directory: Path,
    clean_episodes: Sequence[EpisodeRecord],
    clean_traces: Sequence[LoadedTrace],
    tasks: Mapping[str, Task],
    clean_summary: RunSummary | None = None,
) -> tuple[list[RobustnessRow], list[str]]:
    """One row for the clean run and one per faulted run under DIR/faults/ (none without it), and
    the problems met reading them."""
    runs = faulted_runs(directory)
    if not runs:
        return [], []
    rows = [robustness_row(_run_agent(clean_summary, clean_traces), CLEAN, clean_episodes, clean_traces)]
    problems: list[str] = []
    for run in runs:
        traces, found = load_traces(run)
        problems += [f"{FAULTS_DIR}/{run.name}/{p}" for p in found]
        summary, problem = read_run_summary(run)
        if problem is not None:
            problems.append(f"{FAULTS_DIR}/{run.name}/{problem}")
        episodes = summary.episodes if summary is not None else records_from_traces(traces, tasks)
        plan = run.name
        if summary is not None and isinstance(summary.settings.get("faults"), Mapping):
            plan = str(summary.settings["faults"].get("name", plan))
        rows.append(robustness_row(_run_agent(summary, traces), plan, episodes, traces))
    return rows, problems
