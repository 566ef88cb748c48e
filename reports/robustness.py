"""Robustness under fault plans and tool-schema perturbations: a clean run against the same run under
each plan (`toolgym run --faults PLAN` writes them as OUT/ and OUT/faults/<plan>/, `--perturb PLAN` as
OUT/perturbed/<plan>/).

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
from toolgym.envs.perturb import perturbed_tools
from toolgym.running.trials import (
    FAULTS_DIR,
    PERTURBED_DIR,
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
class PlanRow:
    """One run under a plan (or the clean run): what every robustness table shows of it."""

    agent: str
    plan: str
    episodes: int = 0  # finished (aborted ones are left out, as everywhere)
    successes: int = 0
    reward_sum: float = 0.0

    def count(self, episode: EpisodeRecord) -> bool:
        """Counts a finished episode (False, uncounted, for an aborted one: left out everywhere)."""
        if episode.status == "aborted":
            return False
        self.episodes += 1
        self.successes += int(episode.success)
        self.reward_sum += episode.reward
        return True

    @property
    def success_rate(self) -> float | None:
        return self.successes / self.episodes if self.episodes else None

    @property
    def mean_reward(self) -> float | None:
        """Every finished episode's reward (under a fault plan: scored with the faults)."""
        return self.reward_sum / self.episodes if self.episodes else None


@dataclass
class RobustnessRow(PlanRow):
    clean_reward_sum: float = 0.0  # over the episodes that met no injected fault
    clean_episodes: int = 0
    faulted_episodes: int = 0
    recovered: int = 0  # faulted episodes that still succeeded
    injected: int = 0
    infra_errors: int = 0
    retries: int = 0
    by_kind: dict[str, list[int]] = field(default_factory=dict)  # kind -> [episodes hit, recovered]

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
        if not row.count(e):
            continue
        trace = by_rel.get(e.trace or "")
        faults = episode_faults(trace) if trace is not None else EpisodeFaults()
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


def side_runs(directory: Path, folder: str) -> list[Path]:
    """The runs beside a clean run in DIR/<folder>/<plan>/ (faults/, perturbed/) that hold traces."""
    root = directory / folder
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir())


@dataclass(frozen=True)
class SideRun:
    """One faulted or perturbed run, read back: its plan's name, agent, episodes and traces."""

    plan: str
    agent: str
    episodes: Sequence[EpisodeRecord]
    traces: Sequence[LoadedTrace]


def read_side_runs(
    directory: Path, folder: str, setting: str, tasks: Mapping[str, Task]
) -> tuple[list[SideRun], list[str]]:
    """The runs under DIR/<folder>/, each named by its plan (run.json's `settings[setting]`, else the
    folder's name), and the problems met reading them."""
    runs: list[SideRun] = []
    problems: list[str] = []
    for run in side_runs(directory, folder):
        traces, found = load_traces(run)
        problems += [f"{folder}/{run.name}/{p}" for p in found]
        summary, problem = read_run_summary(run)
        if problem is not None:
            problems.append(f"{folder}/{run.name}/{problem}")
        episodes = summary.episodes if summary is not None else records_from_traces(traces, tasks)
        plan = run.name
        if summary is not None and isinstance(summary.settings.get(setting), Mapping):
            plan = str(summary.settings[setting].get("name", plan))
        runs.append(SideRun(plan, _run_agent(summary, traces), episodes, traces))
    return runs, problems


def robustness_rows(
    directory: Path,
    clean_episodes: Sequence[EpisodeRecord],
    clean_traces: Sequence[LoadedTrace],
    tasks: Mapping[str, Task],
    clean_summary: RunSummary | None = None,
) -> tuple[list[RobustnessRow], list[str]]:
    """One row for the clean run and one per faulted run under DIR/faults/ (none without it), and
    the problems met reading them."""
    runs, problems = read_side_runs(directory, FAULTS_DIR, "faults", tasks)
    if not runs:
        return [], problems
    rows = [robustness_row(_run_agent(clean_summary, clean_traces), CLEAN, clean_episodes, clean_traces)]
    rows += [robustness_row(run.agent, run.plan, run.episodes, run.traces) for run in runs]
    return rows, problems


@dataclass
class PerturbationRow(PlanRow):
    """One run under a tool-schema perturbation plan (or the clean run), from its records."""

    unknown_tools: int = 0  # calls of a tool not offered (a real name under scrambled names)
    argument_errors: int = 0
    distractor_calls: int = 0


def perturbation_row(
    agent: str, plan: str, episodes: Iterable[EpisodeRecord], traces: Sequence[LoadedTrace]
) -> PerturbationRow:
    by_rel = {t.rel: t.trace for t in traces}
    row = PerturbationRow(agent=agent, plan=plan)
    for e in episodes:
        if not row.count(e):
            continue
        row.unknown_tools += e.error_counts.get("unknown_tool", 0)
        row.argument_errors += e.error_counts.get("argument_error", 0)
        trace = by_rel.get(e.trace or "")
        if trace is not None:
            row.distractor_calls += distractor_calls(trace)
    return row


def distractor_calls(trace: Trace) -> int:
    """The calls of an episode to distractor tools (its header's perturbation mapping says which)."""
    distractors = {
        name
        for name, entry in perturbed_tools(trace).items()
        if isinstance(entry, Mapping) and entry.get("distractor")
    }
    return sum(
        1
        for step in trace.steps
        for action in step.actions
        if action.get("type") == "tool_call" and action.get("name") in distractors
    )


def perturbation_rows(
    directory: Path,
    clean_episodes: Sequence[EpisodeRecord],
    clean_traces: Sequence[LoadedTrace],
    tasks: Mapping[str, Task],
    clean_summary: RunSummary | None = None,
) -> tuple[list[PerturbationRow], list[str]]:
    """One row for the clean run and one per perturbed run under DIR/perturbed/ (none without it),
    and the problems met reading them."""
    runs, problems = read_side_runs(directory, PERTURBED_DIR, "perturb", tasks)
    if not runs:
        return [], problems
    rows = [perturbation_row(_run_agent(clean_summary, clean_traces), CLEAN, clean_episodes, clean_traces)]
    rows += [perturbation_row(run.agent, run.plan, run.episodes, run.traces) for run in runs]
    return rows, problems
