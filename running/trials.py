"""Multi-trial runs: every task of some task sets, k trials each, episodes in parallel, traces on disk.

Layout of a run directory:

    OUT/run.json                              the run summary (agent, settings, one record per episode)
    OUT/trial-<t>/<set>/<task>.seed<s>.jsonl  one trace per episode
    OUT/faults/<plan>/...                     the same again under each fault plan (`run --faults`)
    OUT/perturbed/<plan>/...                  ... and under each tool-schema perturbation (`run --perturb`)

Episodes run through `toolgym.envs.rollouts`: in this process (each thread with its own ToolEnv
and mock worlds, reset every episode, so parallel episodes never share state; the tools themselves
are shared), on local processes or on Ray actors. An episode whose model server fails (LLMError: retries exhausted, a
refused request) is recorded as `aborted` with the reason and its partial trace; aborted episodes
are not agent failures and are left out of success rates and pass@k / pass^k (they are counted
apart, as infra errors are everywhere in toolgym).

A run directory is resumable: run.json is rewritten (indented, atomically) after every episode, so
a killed run loses only the episodes in flight, and running into a directory that holds a run
keeps its finished episodes (same task hash, seed, trial and run config) and runs the rest. A run
stopped early (Ctrl-C, SIGTERM, the circuit breaker) says why in `stopped`, lists the episodes it
left unfinished in `cancelled` (with what they had spent), and `resume` holds the command that
finishes it; the resumed run's `usage` goes on counting what those first attempts spent
(`earlier_attempts`).

pass@k and pass^k follow tau-bench: from n trials of a task with c successes, pass^k = C(c,k)/C(n,k)
(the chance that k i.i.d. trials all succeed) and pass@k = 1 - C(n-c,k)/C(n,k) (at least one does);
both are averaged over the tasks with n >= k.
"""

from __future__ import annotations

import contextlib
import errno
import json
import re
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from math import comb
from pathlib import Path
from typing import Any

from toolgym.canonical import canonical_hash, escape_surrogates
from toolgym.envs.budgets import Budget
from toolgym.envs.faults import FaultPlan, offered_tool_names
from toolgym.envs.perturb import PerturbPlan
from toolgym.envs.rollouts import (
    AgentFactory,
    AgentSpec,
    Cancel,
    EnvConfig,
    EpisodeMode,
    EpisodeResult,
    EpisodeSpec,
    Executor,
    InProcessExecutor,
    RolloutCancelled,
    UserSpec,
    WorldSpec,
    episode_specs,
    rollout,
)
from toolgym.envs.runner import DEFAULT_VERBOSITY, NOTIFICATIONS_KEY
from toolgym.envs.task_sets import set_name_of
from toolgym.envs.tool_env import RewardMode
from toolgym.files import SpaceReserve, remove_stale_temps, write_atomically
from toolgym.mocks.events import Verbosity
from toolgym.models.chat_api import Usage
from toolgym.tasks import Task, TaskSet
from toolgym.tools import ToolSet
from toolgym.trace import Trace, read_trace

SUMMARY_FILE = "run.json"
FAULTS_DIR = "faults"  # OUT/faults/<plan>/: a faulted run beside the clean one, not part of it
PERTURBED_DIR = "perturbed"  # OUT/perturbed/<plan>/: a run under a tool-schema perturbation plan
SUCCESS_THRESHOLD = 1.0 - 1e-9  # tau-bench: an episode succeeds when its reward is 1
_TRIAL_RE = re.compile(r"^trial-(\d+)$")


def set_name(path: Path) -> str:
    """A task set's one name: its registered name, else the file's stem (`envs/task_sets.py`)."""
    return set_name_of(path)


@dataclass(frozen=True)
class EpisodeRecord(EpisodeResult):
    """One episode in run.json: the rollout's result (one agent per run)."""

    @classmethod
    def of(cls, result: EpisodeResult) -> EpisodeRecord:
        return cls(**{f.name: getattr(result, f.name) for f in fields(EpisodeResult)})

    @property
    def success(self) -> bool:
        return self.status != "aborted" and self.reward >= SUCCESS_THRESHOLD


@dataclass
class RunSummary:
    agent: str
    protocol: str
    trials: int
    seed: int | None
    episodes: list[EpisodeRecord]
    model: str | None = None
    concurrency: int = 1
    settings: dict[str, Any] = field(default_factory=dict)
    stopped: str | None = None  # why the run stopped before its last episode (None: it finished)
    cancelled: list[dict[str, Any]] = field(default_factory=list)  # episodes in flight then
    # what earlier attempts spent that no episode or cancelled entry here counts (a resumed run's
    # first attempts of episodes cancelled in flight, of aborted ones run again); None: nothing
    earlier_attempts: dict[str, int | float] | None = None
    resume: str | None = None  # the command that finishes a stopped run
    # the whole resolved configuration (RunConfig) when the run came from one (toolgym run, the
    # Python API `run_plan.run`), and where each task set came from (TaskSource: name, digest)
    run_config: dict[str, Any] | None = None
    task_sources: list[dict[str, Any]] = field(default_factory=list)

    def config(self) -> dict[str, Any]:
        """What must match for a run directory to be resumed (trials and concurrency may change)."""
        return {
            "agent": self.agent,
            "protocol": self.protocol,
            "model": self.model,
            "seed": self.seed,
            "settings": self.settings,
        }

    @property
    def usage(self) -> dict[str, int | float]:
        """Tokens spent: the episodes', what episodes cancelled in flight had spent, and what
        earlier attempts spent (every attempt counts)."""
        return _total(
            [e.usage for e in self.episodes]
            + [c.get("usage") for c in self.cancelled]
            + [self.earlier_attempts]
        ).as_dict()

    @property
    def aborted(self) -> list[EpisodeRecord]:
        return [e for e in self.episodes if e.status == "aborted"]

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["usage"] = self.usage
        if self.earlier_attempts is None:
            del data["earlier_attempts"]  # a run without earlier attempts: run.json as it always was
        return data

    def write(self, out: Path) -> Path:
        """run.json, indented for people and diffs, keys sorted; replaced atomically, so a kill
        mid-write leaves the previous checkpoint."""
        path = out / SUMMARY_FILE
        text = json.dumps(self.to_json(), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)
        write_atomically(path, escape_surrogates(text) + "\n", durable=True)
        return path

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunSummary:
        fields = {k: v for k, v in data.items() if k != "usage"}
        fields["episodes"] = [EpisodeRecord(**e) for e in data["episodes"]]
        return cls(**fields)

    @classmethod
    def load(cls, path: Path) -> RunSummary:
        file = path / SUMMARY_FILE if path.is_dir() else path
        return cls.from_json(json.loads(file.read_text(encoding="utf-8")))


def _total(usages: Iterable[Mapping[str, int | float] | None]) -> Usage:
    total = Usage()
    for usage in usages:
        if usage:
            total.add(Usage.from_dict(usage))
    return total


def read_run_summary(directory: Path) -> tuple[RunSummary | None, str | None]:
    """The run.json in `directory` if there is one, and the problem when it is unreadable (a report
    then takes the episodes from the traces)."""
    if not (directory / SUMMARY_FILE).is_file():
        return None, None
    try:
        return RunSummary.load(directory), None
    except (ValueError, KeyError, TypeError) as exc:
        return None, f"{SUMMARY_FILE}: unreadable ({exc})"


# ---- pass@k / pass^k --------------------------------------------------------------------------
def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of k trials drawn from n (c successes) succeeds."""
    _check(n, c, k)
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: the chance that all k trials drawn from n (c successes) succeed."""
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


def trial_counts(episodes: Iterable[EpisodeRecord]) -> dict[tuple[str, str], tuple[int, int]]:
    """(task set, task id) -> (n finished trials, c successes); aborted episodes are left out."""
    counts: dict[tuple[str, str], tuple[int, int]] = {}
    for e in episodes:
        if e.status == "aborted":
            continue
        n, c = counts.get((e.task_set, e.task_id), (0, 0))
        counts[(e.task_set, e.task_id)] = (n + 1, c + int(e.success))
    return counts


@dataclass(frozen=True)
class PassK:
    k: int
    pass_at_k: float
    pass_hat_k: float
    tasks: int  # tasks with at least k finished trials (the average's denominator)


def pass_k_table(episodes: Iterable[EpisodeRecord], ks: Sequence[int] | None = None) -> list[PassK]:
    """pass@k and pass^k for k = 1 .. the most trials any task has (or the given ks)."""
    counts = trial_counts(episodes)
    if not counts:
        return []
    most = max(n for n, _ in counts.values())
    rows = []
    for k in ks or range(1, most + 1):
        eligible = [(n, c) for n, c in counts.values() if n >= k]
        if not eligible:
            continue
        rows.append(
            PassK(
                k=k,
                pass_at_k=sum(pass_at_k(n, c, k) for n, c in eligible) / len(eligible),
                pass_hat_k=sum(pass_hat_k(n, c, k) for n, c in eligible) / len(eligible),
                tasks=len(eligible),
            )
        )
    return rows


# ---- running ---------------------------------------------------------------------------------
# LLMError (retries exhausted, a refused request) aborts the episode, not the run
ABORT_ON = ("toolgym.models.chat_api:LLMError",)
OWN_FILES = ("eval.*.json", "report.html")  # what eval and report add to a run directory


class RunDirError(ValueError):
    """The run directory holds a run with another config (resume only continues the same run)."""


def parse_limit(text: str) -> slice:
    """`--limit N` (the first N episodes) or `--limit A:B` (episodes A to B-1, in run order)."""
    first, sep, last = text.partition(":")
    try:
        if not sep:
            n = int(text)
            if n < 1:
                raise ValueError
            return slice(0, n)
        start, stop = int(first or 0), int(last) if last else None
        if start < 0 or (stop is not None and stop <= start):
            raise ValueError
        return slice(start, stop)
    except ValueError:
        raise ValueError(
            f"--limit {text!r}: use N (the first N episodes) or A:B (episodes A to B-1)"
        ) from None


def clear_run(out: Path) -> None:
    """Remove what a run wrote into `out` (run.json, traces, faulted and perturbed runs, eval results,
    report),
    and nothing else."""
    (out / SUMMARY_FILE).unlink(missing_ok=True)
    for child in out.iterdir() if out.is_dir() else ():
        if child.is_dir() and (_TRIAL_RE.match(child.name) or child.name in (FAULTS_DIR, PERTURBED_DIR)):
            shutil.rmtree(child)
    for pattern in OWN_FILES:
        for path in out.glob(pattern):
            path.unlink()


def _key(trial: int, task_set: str, task_id: str) -> tuple[int, str, str]:
    return trial, task_set, task_id


def resumable(
    out: Path, config: Mapping[str, Any], hashes: Mapping[tuple[str, str], str], *, retry_aborted: bool
) -> tuple[dict[tuple[int, str, str], EpisodeRecord], dict[str, int | float] | None]:
    """The episodes of the run in `out` that a run with `config` keeps: finished ones (and aborted
    ones unless `retry_aborted`) whose task is unchanged; and what that run spent beyond them
    (its episodes cancelled in flight, those not kept, its own earlier attempts), which the
    resumed run's usage goes on counting (None: nothing). RunDirError when `out` holds a run
    with another config, or a run.json that cannot be read."""
    summary, problem = read_run_summary(out)
    if problem is not None:
        raise RunDirError(f"{out / SUMMARY_FILE}: {problem}; use --overwrite to replace the run")
    if summary is None:
        return {}, None
    theirs = summary.config()
    differ = sorted(k for k in set(theirs) | set(config) if theirs.get(k) != config.get(k))
    if differ:
        changes = "; ".join(f"{k}: {_short(theirs.get(k))} -> {_short(config.get(k))}" for k in differ)
        raise RunDirError(
            f"{out} holds a run with another config ({changes}); give another --out, or --overwrite to replace it"
        )
    kept: dict[tuple[int, str, str], EpisodeRecord] = {}
    for e in summary.episodes:
        if e.status == "aborted" and retry_aborted:
            continue
        if e.task_hash is not None and hashes.get((e.task_set, e.task_id)) == e.task_hash:
            kept[_key(e.trial, e.task_set, e.task_id)] = e
    dropped = [e.usage for e in summary.episodes if _key(e.trial, e.task_set, e.task_id) not in kept]
    earlier = _total([summary.earlier_attempts, *(c.get("usage") for c in summary.cancelled), *dropped])
    return kept, earlier.as_dict() if earlier != Usage() else None


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def run_trials(
    task_sets: Sequence[tuple[str, TaskSet]],
    make_agent: AgentFactory | AgentSpec | str,
    *,
    out: Path,
    toolset: ToolSet | None = None,
    protocol: str = "react",
    trials: int = 1,
    concurrency: int = 1,
    seed: int | None = 0,
    max_steps: int = 10,
    agent_name: str = "agent",
    model: str | None = None,
    settings: Mapping[str, Any] | None = None,
    on_episode: Callable[[EpisodeRecord], None] | None = None,
    executor: Executor | None = None,
    faults: FaultPlan | None = None,
    perturb: PerturbPlan | None = None,
    user: UserSpec | None = None,
    limit: slice | None = None,
    retry_aborted: bool = False,
    overwrite: bool = False,
    cancel: Cancel | None = None,
    max_consecutive_aborts: int | None = None,
    resume: str | None = None,
    worlds: WorldSpec | None = None,
    mode: EpisodeMode = "end-to-end",
    run_config: Mapping[str, Any] | None = None,
    task_sources: Sequence[Mapping[str, Any]] = (),
    strict_arguments: bool = False,
    reward_mode: RewardMode = "final",
    budget: Budget | None = None,
    verbosity: Verbosity = DEFAULT_VERBOSITY,
) -> RunSummary:
    """Run every task `trials` times; write the traces and OUT/run.json (the module docstring says
    how a run resumes and stops). Episodes run in this process, up to `concurrency` at once, or on
    `executor`'s processes or Ray actors (an `AgentSpec` and the default tools); records come in
    (trial, task set, task) order and the traces are the same bytes whichever executor ran them.
    `make_agent` may name an agent (`oracle`, `scripted:FILE`, `package.module:factory`). `faults`:
    a plan every episode runs under (FaultPlanError before any episode for a tool no task offers);
    `perturb`: a tool-schema perturbation plan every episode's offered tools go through;
    `user` / `worlds`: how workers build the user simulator / the tasks' worlds; `mode="step"`:
    teacher-forced on each golden chain (`toolgym.envs.teacher`); `strict_arguments`: no argument
    coercion (`toolgym.mocks.app.strict_arguments`); `reward_mode="milestones"`: dense rewards
    (`ToolEnv(reward_mode=...)`); `verbosity`: which events of a task with events notify the agent
    (`ToolEnv(verbosity=...)`). `run_config` and `task_sources` go into
    run.json as given (`toolgym.running.plan`). `overwrite` replaces a run of another
    config, `retry_aborted` reruns its aborted episodes, `limit` picks a slice of the episodes;
    `cancel` or `max_consecutive_aborts` aborts in a row stop the run, `resume` is the command that
    finishes it then."""
    if trials < 1 or concurrency < 1:
        raise ValueError("trials and concurrency must be at least 1")
    agent = AgentSpec.named(make_agent) if isinstance(make_agent, str) else make_agent
    # configuration: what every episode runs with, and the run as run.json names it
    env = EnvConfig(
        protocol=protocol,
        max_steps=max_steps,
        faults=faults,
        fault_tools=tuple(_fault_tools(faults, toolset, task_sets)),  # a bad plan raises here
        perturb=perturb,
        user=user,
        worlds=worlds,
        mode=mode,
        strict_arguments=strict_arguments,
        reward_mode=reward_mode,
        budget=budget,
        verbosity=verbosity,
    )
    summary = RunSummary(
        agent=agent_name,
        protocol=protocol,
        trials=trials,
        seed=seed,
        episodes=[],
        model=model,
        concurrency=concurrency,
        settings=run_settings(settings, env),
        resume=resume,
        run_config=dict(run_config) if run_config is not None else None,
        task_sources=[dict(s) for s in task_sources],
    )
    # plan: the run's episodes that its folder does not hold yet
    specs = episode_specs(task_sets, trials=trials, seed=seed)
    book = _RunBook(out, summary, specs, cancel or Cancel(), max_consecutive_aborts, on_episode)
    todo = book.open(task_sets, limit, overwrite=overwrite, retry_aborted=retry_aborted)
    # execute; run.json then says how the run ended (the report)
    book.run(task_sets, todo, executor or InProcessExecutor(concurrency), env, agent, toolset)
    return summary


def run_settings(settings: Mapping[str, Any] | None, env: EnvConfig) -> dict[str, Any]:
    """run.json's `settings`: the caller's, and what makes the same episodes another run (a fault
    plan, a perturbation plan, step mode, arguments without coercion, a verbosity other than the
    default), which a resume must match."""
    extra: dict[str, Any] = {"faults": env.faults.model_dump(mode="json")} if env.faults is not None else {}
    extra |= {"perturb": env.perturb.model_dump(mode="json")} if env.perturb is not None else {}
    extra |= {"mode": env.mode} if env.mode != "end-to-end" else {}
    extra |= {"strict_arguments": True} if env.strict_arguments else {}
    extra |= {"reward_mode": env.reward_mode} if env.reward_mode != "final" else {}
    extra |= {NOTIFICATIONS_KEY: env.verbosity} if env.verbosity != DEFAULT_VERBOSITY else {}
    extra |= (
        {"budget": env.budget.model_dump(mode="json", exclude_none=True)} if env.budget is not None else {}
    )
    return {**(settings or {}), **extra}


def _fault_tools(
    faults: FaultPlan | None, toolset: ToolSet | None, task_sets: Sequence[tuple[str, TaskSet]]
) -> list[str]:
    """Every tool the run's tasks offer, which a fault plan may target; the plan is checked
    against them (FaultPlanError before any episode runs)."""
    if faults is None:
        return []
    from toolgym.toolservers.registry import default_toolset

    offered = toolset if toolset is not None else default_toolset()
    names = offered_tool_names(offered, [t for _, task_set in task_sets for t in task_set])
    faults.check_tools(names)
    return names


class _RunBook:
    """A run's records as episodes finish: run.json checkpointed after each, the circuit breaker,
    and how the run stopped (cancelled, interrupted, or an OS error)."""

    def __init__(
        self,
        out: Path,
        summary: RunSummary,
        specs: Sequence[EpisodeSpec],
        cancel: Cancel,
        max_consecutive_aborts: int | None,
        on_episode: Callable[[EpisodeRecord], None] | None,
    ) -> None:
        self.out, self.summary, self.cancel = out, summary, cancel
        self.max_consecutive_aborts, self.on_episode = max_consecutive_aborts, on_episode
        self.specs = specs
        self.records: dict[tuple[int, str, str], EpisodeRecord] = {}
        self.order = {_key(s.trial, s.task_set, s.task_id): s.index for s in specs}
        self.aborts_in_a_row = 0
        # episodes that ended aborted once the run was cancelled (the cancel may have ended them:
        # a model request refused or abandoned): listed as cancelled with what they spent, run on resume
        self.cut_short: dict[tuple[int, str, str], dict[str, int | float] | None] = {}
        # room for the last run.json, the one that says why the run stopped, on a disk it filled
        self.reserve = SpaceReserve(out / SUMMARY_FILE)

    def has(self, spec: EpisodeSpec) -> bool:
        return _key(spec.trial, spec.task_set, spec.task_id) in self.records

    def open(
        self,
        task_sets: Sequence[tuple[str, TaskSet]],
        limit: slice | None,
        *,
        overwrite: bool,
        retry_aborted: bool,
    ) -> list[EpisodeSpec]:
        """The run folder made ready: cleared with `overwrite`, what a run killed mid-write left
        removed, the episodes of an earlier run of this config kept (RunDirError for another
        config), run.json written (the folder names its run from the start). Returns the episodes
        left to run, within `limit`."""
        hashes = {
            (name, t.id): canonical_hash(t.model_dump(mode="json")) for name, ts in task_sets for t in ts
        }
        if overwrite:
            clear_run(self.out)
        remove_stale_temps(self.out, recursive=True)  # run.json, traces, files
        kept, self.summary.earlier_attempts = resumable(
            self.out, self.summary.config(), hashes, retry_aborted=retry_aborted
        )
        self.records.update(kept)
        todo = [s for s in (self.specs[limit] if limit is not None else self.specs) if not self.has(s)]
        try:
            self.checkpoint()
        except OSError as exc:
            self.stopped_by(exc)
            raise
        return todo

    def checkpoint(self, *, last: bool = False) -> None:
        """run.json as it stands, and room kept for a last one (`last`: this is it, written in
        the room the reserve gives back, so a full disk still gets why the run stopped)."""
        self.summary.episodes = sorted(
            self.records.values(),
            key=lambda e: self.order.get(_key(e.trial, e.task_set, e.task_id), len(self.order)),
        )
        if last:
            self.reserve.release()
        path = self.summary.write(self.out)
        if not last:
            self.reserve.cover(path.stat().st_size)

    def stopped_by(self, exc: OSError) -> None:
        """An OS error (a full disk, most often) stops the run: run.json says so where it still can."""
        self.summary.stopped = write_failure(exc)
        with contextlib.suppress(OSError):
            self.checkpoint(last=True)

    def finished(self, outcome: EpisodeResult) -> None:  # called under the rollout's lock
        record = EpisodeRecord.of(outcome)
        key = _key(record.trial, record.task_set, record.task_id)
        if self.cancel.is_set() and record.status == "aborted":
            self.cut_short[key] = record.usage
            return
        self.records[key] = record
        self.checkpoint()
        self.aborts_in_a_row = self.aborts_in_a_row + 1 if record.status == "aborted" else 0
        limit = self.max_consecutive_aborts
        if limit is not None and self.aborts_in_a_row >= limit:
            self.cancel.set(
                f"{self.aborts_in_a_row} episodes in a row aborted by infra errors (last: {record.error}); "
                "the run was stopped instead of failing every episode"
            )
        if self.on_episode is not None:
            self.on_episode(record)

    def run(
        self,
        task_sets: Sequence[tuple[str, TaskSet]],
        todo: Sequence[EpisodeSpec],
        executor: Executor,
        env: EnvConfig,
        agent: AgentFactory | AgentSpec,
        toolset: ToolSet | None,
    ) -> None:
        """Roll out `todo`, then run.json says how the run ended."""
        summary = self.summary
        try:
            rollout(
                task_sets,
                todo,
                out=self.out,
                executor=executor,
                env=env,
                agent=agent,
                toolset=toolset,
                abort_on=ABORT_ON,
                on_outcome=self.finished,
                cancel=self.cancel,
            )
        except RolloutCancelled as stop:
            for outcome in stop.finished:
                key = _key(outcome.trial, outcome.task_set, outcome.task_id)
                if key not in self.cut_short:
                    self.records.setdefault(key, EpisodeRecord.of(outcome))
            summary.stopped = stop.reason
            summary.cancelled = cancelled_entries(stop.in_flight, self.cut_short, self.records)
        except KeyboardInterrupt:  # a second Ctrl-C: no more grace, but run.json still says so
            summary.stopped = self.cancel.reason or "interrupted"
            started = [s for s in todo if s.index in self.cancel.started]
            summary.cancelled = cancelled_entries(started, self.cut_short, self.records)
            with contextlib.suppress(OSError):
                self.checkpoint(last=True)
            raise
        except OSError as exc:
            self.stopped_by(exc)
            raise
        else:
            summary.resume = None  # nothing left to resume
        finally:
            self.reserve.release()  # whatever stopped the run (a bug too): its room goes back
        self.checkpoint(last=True)


def cancelled_entries(
    in_flight: Sequence[EpisodeSpec],
    cut_short: Mapping[tuple[int, str, str], dict[str, int | float] | None],
    records: Mapping[tuple[int, str, str], EpisodeRecord],
) -> list[dict[str, Any]]:
    """run.json's `cancelled`: the episodes left unfinished when the run stopped (by trial, set
    and task), each with the tokens it had spent where that is known (counted in the run's usage)."""
    entries: dict[tuple[int, str, str], dict[str, Any]] = {}
    for spec in in_flight:
        entries[_key(spec.trial, spec.task_set, spec.task_id)] = {}
    for key, usage in cut_short.items():
        entries[key] = {"usage": usage} if usage else {}
    return [
        {"trial": key[0], "task_set": key[1], "task_id": key[2], **extra}
        for key, extra in sorted(entries.items())
        if key not in records
    ]


def write_failure(exc: OSError) -> str:
    """Why a run stopped on an OSError, for run.json's `stopped`: the cause and the file."""
    cause = "the disk is full" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else "an OS error stopped the run"
    where = f"{exc.filename}: " if exc.filename is not None else ""
    return f"{cause}: {where}{exc.strerror or exc}"


# ---- reading a run back ----------------------------------------------------------------------
def trial_of(path: Path, root: Path) -> int:
    """The trial index from a `trial-<t>` folder on the way from root to the trace; 0 if none."""
    for part in path.relative_to(root).parts[:-1]:
        match = _TRIAL_RE.match(part)
        if match:
            return int(match.group(1))
    return 0


def find_traces(root: Path, *, partial: bool = False, recursive: bool = False) -> list[Path]:
    """Every trace file of the run (or trace folder) at root: finished `*.jsonl`; with `partial`,
    also `*.jsonl.partial`. The faulted and perturbed runs under root/faults/ and root/perturbed/ are
    runs of their own and left out,
    and so are other runs below root (a folder with its own run.json) unless `recursive`."""
    found = [p for p in root.rglob("*.jsonl") if p.is_file()]
    if partial:
        found += [p for p in root.rglob("*.jsonl.partial") if p.is_file()]
    nested = set() if recursive else {p.parent for p in root.rglob(SUMMARY_FILE) if p.parent != root}
    return sorted(
        p
        for p in found
        if p.relative_to(root).parts[0] not in (FAULTS_DIR, PERTURBED_DIR)
        and not any(parent in nested for parent in p.parents)
    )


def nested_runs(root: Path) -> list[Path]:
    """The runs below root (folders with their own run.json), which a scan of root leaves out."""
    return sorted(p.parent for p in root.rglob(SUMMARY_FILE) if p.parent != root)


def traces_digest(traces: Iterable[LoadedTrace]) -> str:
    """One hash over the traces' paths and bytes: what `toolgym eval` scored, so a report can tell
    results of other (earlier) traces from current ones."""
    from toolgym.canonical import sha256_hex

    return canonical_hash(sorted([t.rel, sha256_hex(t.path.read_bytes())] for t in traces))


@dataclass(frozen=True)
class LoadedTrace:
    path: Path
    rel: str  # path relative to the folder it was loaded from
    trial: int
    task_set: str
    trace: Trace


@dataclass(frozen=True)
class TraceScan:
    """The traces of a folder: those loaded, the files that are not traces, and the finished
    traces (`*.jsonl`) without their end record (a file cut short), which nothing may score."""

    loaded: list[LoadedTrace]
    problems: list[str]  # `rel: not a trace (why)`
    incomplete: list[str]  # `FILE:LINE: incomplete trace: why` (Trace.incomplete)


def scan_traces(root: Path, *, recursive: bool = False, partial: bool = False) -> TraceScan:
    """The traces of root (`find_traces`). A `*.jsonl` trace without its end record is set apart
    in `incomplete`; with `partial` (unfinished traces wanted) it is loaded as the `.partial` ones
    are. A file that is not a trace is a problem, not fatal: a run directory may hold other JSONL."""
    scan = TraceScan([], [], [])
    for path in find_traces(root, recursive=recursive, partial=partial):
        try:
            trace = read_trace(path)
        except (ValueError, OSError) as exc:
            scan.problems.append(f"{path.relative_to(root)}: not a trace ({str(exc).splitlines()[0][:200]})")
            continue
        if trace.incomplete is not None and not partial and path.suffix == ".jsonl":
            scan.incomplete.append(trace.incomplete)
            continue
        rel = path.relative_to(root)
        folder = rel.parts[-2] if len(rel.parts) > 1 else ""
        scan.loaded.append(
            LoadedTrace(
                path=path,
                rel=rel.as_posix(),
                trial=trial_of(path, root),
                task_set="" if _TRIAL_RE.match(folder) else folder,
                trace=trace,
            )
        )
    return scan


def load_traces(
    root: Path, *, recursive: bool = False, partial: bool = False
) -> tuple[list[LoadedTrace], list[str]]:
    """The traces of root (`scan_traces`) and the problems met: files that are not traces and
    incomplete traces, which are not loaded (unless `partial`)."""
    scan = scan_traces(root, recursive=recursive, partial=partial)
    return scan.loaded, scan.problems + scan.incomplete


def records_from_traces(traces: Iterable[LoadedTrace], tasks: Mapping[str, Task]) -> list[EpisodeRecord]:
    """Episode records rebuilt from traces alone (for trace folders without run.json)."""
    records = []
    for t in traces:
        end = t.trace.end
        task = tasks.get(t.trace.header.task_id)
        records.append(
            EpisodeRecord(
                trial=t.trial,
                task_set=t.task_set,
                task_id=t.trace.header.task_id,
                status=end.status if end is not None else "aborted",
                reward=end.reward if end is not None else 0.0,
                steps=end.steps if end is not None else len(t.trace.steps),
                category=task.category if task is not None else None,
                error_counts=dict(end.error_counts) if end is not None else {},
                scores=dict(end.scores) if end is not None else {},
                trace=t.rel,
                error=None if end is not None else "trace has no end record",
            )
        )
    return records


def load_task_index(
    paths: Iterable[Path], loader: Callable[[Path], TaskSet] = TaskSet.load
) -> dict[str, Task]:
    """Tasks by id over several task sets; an id in two sets is an error (traces name tasks by id)."""
    index: dict[str, Task] = {}
    for path in paths:
        for task in loader(path):
            if task.id in index:
                raise ValueError(f"task id {task.id!r} appears in more than one task set ({path})")
            index[task.id] = task
    return index
