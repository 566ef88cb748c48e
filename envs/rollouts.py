"""One rollout API: episodes (tasks x trials x agents) as picklable specs, run by an executor.

- `InProcessExecutor` runs episodes in this process, on up to `concurrency` threads (what
  `toolgym run` always did); traces are written in place by the episode runner.
- `ProcessExecutor` spreads them over `workers` local processes (no Ray needed).
- `toolgym.envs.ray_rollouts.RayExecutor` spreads them over Ray actors.
- `arollout` runs them as asyncio tasks on one event loop, for agents that await their model
  (`AsyncAgent`, e.g. the LLM agent on an `AsyncChatClient`), with the same traces.

Every executor runs an episode the same way (`EpisodeWorker.run`), end to end or, with
`EnvConfig.mode = "step"`, teacher-forced on the task's golden chain (`toolgym.envs.teacher`): a worker holds one `ToolEnv`
per task set, reused across episodes (reset rebuilds nothing but the episode), and builds the
agent from an `AgentSpec`. Remote workers never write into the run directory: they return each
trace's bytes, with the files its observations carry (images a tool drew), and the driver writes
them once, atomically, under their final names. A worker that dies mid-episode therefore leaves
nothing behind, its episode can run again elsewhere, and the run folder is byte-identical to a
one-process run because it depends only on the task, the seed and the agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import multiprocessing.util
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_all_start_methods, get_context
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Literal, Protocol

from toolgym.canonical import canonical_hash
from toolgym.envs.agents import Agent, AsyncAgent, OracleAgent
from toolgym.envs.budgets import Budget
from toolgym.envs.faults import FaultLayer, FaultPlan, fault_aware
from toolgym.envs.perturb import PerturbLayer, PerturbPlan, distractor_pool
from toolgym.envs.rewards import task_scores
from toolgym.envs.runner import (
    DEFAULT_VERBOSITY,
    FILES_DIR,
    EpisodeAborted,
    arun_episode,
    keep_file,
    run_episode,
    trace_name,
)
from toolgym.envs.runner import EpisodeResult as RunnerResult
from toolgym.envs.teacher import run_step_episode
from toolgym.envs.tool_env import RewardMode, ToolEnv, ToolLayer
from toolgym.envs.users import UserSimulator
from toolgym.files import FILES_PREFIX, owned_prefix, remove_orphaned_dirs, write_atomically
from toolgym.mocks.app import strict_arguments
from toolgym.mocks.events import Verbosity
from toolgym.tasks import Task, TaskSet
from toolgym.tools import ToolSet

Status = Literal["terminated", "truncated", "aborted"]
EpisodeMode = Literal["end-to-end", "step"]
AgentFactory = Callable[[ToolEnv, int], Agent]  # (the episode's env, trial index) -> a fresh agent
UserFactory = Callable[[], UserSimulator]  # a fresh simulator for one env (one episode at a time)
DEFAULT_TOOLSET = "toolgym.toolservers.registry:default_toolset"
STAGING_PREFIX = "toolgym-rollout-"  # a worker's staging folder: <prefix><pid>-<host>-<random>


class RolloutError(RuntimeError):
    """A rollout could not finish (no worker left, a worker that cannot start)."""


class WorkerLost(RolloutError):
    """The worker running an episode died (process killed, actor lost) more often than allowed.
    The episode is recorded as aborted with this error: not the agent's fault."""


class Cancel:
    """Stops a rollout from outside (a signal handler, a circuit breaker): once `set`, no new
    episode starts, and the rollout returns after the episodes in flight finish or `grace_s`
    passes, whichever is first; those still running are reported as cancelled, not waited for.
    Executors note in `started` the index of each episode they begin (or submit)."""

    def __init__(self, grace_s: float = 1.0) -> None:
        self.grace_s = grace_s
        self.reason: str | None = None
        self.started: set[int] = set()
        self._event = threading.Event()
        self._callbacks: list[Callable[[], None]] = []

    def on_set(self, callback: Callable[[], None]) -> None:
        """Call `callback` when the rollout is cancelled (at once if it is already): a model
        client stops its requests, so no episode spends more after the signal. It may run in a
        signal handler: it must only flag, never block."""
        self._callbacks.append(callback)
        if self.is_set():
            callback()

    def set(self, reason: str) -> None:
        if not self._event.is_set():
            self.reason = reason
            self._event.set()
            for callback in self._callbacks:
                callback()

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float) -> bool:
        return self._event.wait(timeout)


class RolloutCancelled(RolloutError):
    """A rollout stopped by its `Cancel`: the outcomes of the episodes that finished (spec order)
    and the specs that were running when it stopped."""

    def __init__(self, reason: str, finished: list[EpisodeOutcome], in_flight: list[EpisodeSpec]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.finished = finished
        self.in_flight = in_flight


# ---- specs -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class AgentSpec:
    """How a worker builds agents. `builder` is `oracle` or `package.module:attr`, a callable that
    a worker calls once with `kwargs` and that returns an `AgentFactory`; it may hold resources
    for the worker's lifetime (an HTTP client) and release them in an optional `close()`."""

    builder: str = "oracle"
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def named(cls, agent: str) -> AgentSpec:
        """The spec of an agent named in the agent grammar of `toolgym.envs.agents` (`oracle`,
        `scripted:FILE`, `package.module:factory`); checked here, so a typo fails before any
        episode, and built again in each worker."""
        from toolgym.envs.agents import agent_factory

        if agent == "oracle":
            return cls()
        agent_factory(agent)  # ValueError: what is wrong with the name
        return cls("toolgym.envs.agents:NamedAgents", {"spec": agent})


@dataclass(frozen=True)
class UserSpec:
    """How a worker builds the user simulator of tasks with a user scenario. `builder` names a
    `package.module:attr`, a callable that a worker calls once with `kwargs` and that returns a
    `UserFactory` (one simulator per env it holds); it may hold resources for the worker's
    lifetime (an HTTP client) and release them in an optional `close()`. The LLM user's builder is
    `toolgym.models.users:LLMUsers`, above this floor, so it is named, never imported."""

    builder: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class WorldSpec:
    """How a worker builds the world factory of its envs (`ToolEnv(world_factory=...)`): `builder`
    names a `package.module:attr`, called once per worker with `kwargs`, returning a
    `WorldFactory`; it may hold resources (an HTTP client) and release them in `close()`. The LLM
    tool simulator's is `toolgym.models.simulators:LLMSimulatedWorlds`, named, never imported."""

    builder: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EnvConfig:
    """What every episode's env is built with. `toolset` names a `package.module:factory` that
    returns the ToolSet; `tool_url`, when set, serves the tools of that server instead of the local
    ones of the same names (a GPU tool server)."""

    protocol: str = "react"
    max_steps: int = 10
    toolset: str = DEFAULT_TOOLSET
    tool_url: str | None = None
    tool_token: str | None = None
    # a fault plan every episode runs under, and every tool name the run's tasks offer (a plan may
    # target any of them, not only this episode's)
    faults: FaultPlan | None = None
    fault_tools: tuple[str, ...] = ()
    # a tool-schema perturbation plan every episode's offered tools go through (toolgym.envs.perturb)
    perturb: PerturbPlan | None = None
    # the user simulator of tasks with a scenario; None: the env's default (rule-based)
    user: UserSpec | None = None
    # where tasks' worlds come from; None: the env's default (in-process mock worlds, simulated
    # libraries answered by the deterministic simulator)
    worlds: WorldSpec | None = None
    # "end-to-end": the agent's actions run; "step": teacher-forced on each task's golden chain,
    # the trace holding the agent's prediction for each golden step (toolgym.envs.teacher)
    mode: EpisodeMode = "end-to-end"
    # app tools take arguments of their declared types only (toolgym.mocks.app.strict_arguments)
    strict_arguments: bool = False
    # "milestones": each step's reward is the change in milestone progress (ToolEnv(reward_mode=...))
    reward_mode: RewardMode = "final"
    # what each episode may spend (toolgym.envs.budgets); None: no limit
    budget: Budget | None = None
    # which events of a task with events notify the agent (ToolEnv(verbosity=...))
    verbosity: Verbosity = DEFAULT_VERBOSITY


@dataclass(frozen=True)
class EpisodeSpec:
    """One episode: the task (by task set name and id), the trial, the seed and the agent (a name
    from the rollout's agents; "" for its one agent). `index` is its place in the run, the order
    outcomes come back in."""

    index: int
    trial: int
    task_set: str
    task_id: str
    seed: int | None
    agent: str = ""

    @property
    def trace_path(self) -> str:
        """The trace's path relative to the run directory (under the agent's name when named)."""
        path = f"trial-{self.trial}/{self.task_set}/{trace_name(self.task_id, self.seed)}"
        return f"{self.agent}/{path}" if self.agent else path


@dataclass(frozen=True)
class EpisodeResult:
    """What one episode gave, as run.json records it (`toolgym.running.trials.EpisodeRecord`)."""

    trial: int
    task_set: str
    task_id: str
    status: Status
    reward: float
    steps: int
    category: str | None = None
    error_counts: dict[str, int] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    usage: dict[str, int | float] | None = None
    trace: str | None = None  # relative to the run directory
    error: str | None = None  # why an aborted episode stopped
    task_hash: str | None = None  # the task's canonical hash (as in the trace header): resume checks it
    # where it ran, on Ray: the actor's `node` id, `actor` id and `pid` (None for the other executors)
    worker: dict[str, str | int] | None = None


@dataclass(frozen=True)
class EpisodeOutcome(EpisodeResult):
    """An episode's result as a rollout reports it: which spec it ran, and for which agent."""

    index: int = field(kw_only=True)
    agent: str = field(default="", kw_only=True)


@dataclass(frozen=True)
class WorkerContext:
    """Everything a worker needs besides the episodes; sent once per worker."""

    task_sets: Sequence[tuple[str, TaskSet]]
    env: EnvConfig = EnvConfig()
    agent: AgentSpec = AgentSpec()
    abort_on: tuple[str, ...] = ()  # `module:Class` exceptions that abort an episode, not the run
    agents: Mapping[str, AgentSpec] = field(default_factory=dict)  # named agents (specs' `agent`)


def episode_specs(
    task_sets: Sequence[tuple[str, TaskSet]], *, trials: int, seed: int | None, agents: Sequence[str] = ("",)
) -> list[EpisodeSpec]:
    """Every task of every set, `trials` times, for each agent, in (agent, trial, set, task) order."""
    names = [name for name, _ in task_sets]
    if len(set(names)) != len(names):
        raise ValueError(f"task set names must be distinct, got {names}")
    if len(set(agents)) != len(agents):
        raise ValueError(f"agent names must be distinct, got {list(agents)}")
    specs: list[EpisodeSpec] = []
    for agent in agents:
        for trial in range(trials):
            for name, task_set in task_sets:
                for task in task_set:
                    specs.append(EpisodeSpec(len(specs), trial, name, task.id, seed, agent))
    return specs


def load_object(spec: str, what: str) -> Any:
    """The object named by `package.module:attr` (imported, never evaluated). The current
    directory is importable, as with uvicorn's `module:app`, so `my_agent:make` works."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"{what} {spec!r}: use package.module:attr")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"{what} {spec!r}: {exc}") from None


def _oracle_agents() -> AgentFactory:
    return lambda env, trial: OracleAgent(env.protocol)


@dataclass(frozen=True)
class EpisodeBytes:
    """What a worker that does not write in place sends back with an episode's outcome: its
    trace's bytes (finished, or partial when aborted) and the files its observations carry, by
    sha256, each once (the driver keeps them beside the trace, as the in-process runner does)."""

    trace: bytes
    files: Mapping[str, bytes] = field(default_factory=dict)


def staging_root() -> str | None:
    """Where workers stage episodes: tmpfs where there is one (the staged copy is read back at
    once, a disk fsync is wasted), else the system's temporary folder."""
    return "/dev/shm" if os.path.isdir("/dev/shm") else None


def remove_orphaned_folders() -> list[Path]:
    """What runs killed before they could clean up (kill -9, out of memory) left in temporary
    folders: workers' staging folders and episodes' file stores (images tools drew) of processes
    that are gone. Those of live processes (a run beside this one) stay. Every rollout calls it."""
    return [*remove_orphaned_dirs(STAGING_PREFIX, staging_root()), *remove_orphaned_dirs(FILES_PREFIX)]


# ---- the worker ------------------------------------------------------------------------------
class EpisodeWorker:
    """Runs episodes one at a time with one env per task set (not thread-safe: one per thread).

    With `out`, traces and their files are written in place (the in-process executor); without,
    each episode is staged in a private temporary folder and its bytes are returned for the
    driver."""

    def __init__(
        self,
        context: WorkerContext,
        *,
        out: Path | None = None,
        toolset: ToolSet | None = None,
        make_agent: AgentFactory | None = None,
    ) -> None:
        self.context = context
        self.out = out
        self.tasks: dict[str, TaskSet] = dict(context.task_sets)
        self.toolset = toolset if toolset is not None else build_toolset(context.env)
        # agent factories by name, each built once, when its first episode comes
        self._agents: dict[str, AgentFactory] = {} if make_agent is None else {"": make_agent}
        self.abort_types: tuple[type[BaseException], ...] = (
            EpisodeAborted,  # a backend of the episode failed: always an abort
            *(load_object(name, "abort exception") for name in context.abort_on),
        )
        self._envs: dict[str, ToolEnv] = {}
        self._staging: str | None = None
        self._users: UserFactory | None = None  # built once, with the first env
        self._worlds: Any = None  # the WorldSpec's builder result, built once, with the first env
        self._cancelled = threading.Event()

    def env_for(self, task_set: str) -> ToolEnv:
        env = self._envs.get(task_set)
        if env is None:
            cfg = self.context.env
            if cfg.user is not None and self._users is None:
                self._users = load_object(cfg.user.builder, "user builder")(**cfg.user.kwargs)
            if cfg.worlds is not None and self._worlds is None:
                self._worlds = load_object(cfg.worlds.builder, "world builder")(**cfg.worlds.kwargs)
            extra: dict[str, Any] = {} if self._worlds is None else {"world_factory": self._worlds()}
            env = ToolEnv(
                self.toolset,
                self.tasks[task_set],
                protocol=cfg.protocol,
                max_steps=cfg.max_steps,
                tool_layers=self._tool_layers(),
                reward_fn=fault_aware(task_scores) if cfg.faults else task_scores,
                user=self._users() if self._users is not None else None,
                reward_mode=cfg.reward_mode,
                budget=cfg.budget,
                verbosity=cfg.verbosity,
                **extra,
            )
            self._envs[task_set] = env
        return env

    def _tool_layers(self) -> list[ToolLayer]:
        """A fault plan's layer, then a perturbation's (outermost: the agent's names are mapped
        back before a fault rule or a cassette sees the call)."""
        cfg = self.context.env
        layers: list[ToolLayer] = []
        if cfg.faults is not None:
            layers.append(FaultLayer(cfg.faults, known_tools=cfg.fault_tools))
        if cfg.perturb is not None:
            pool = distractor_pool(self.toolset) if cfg.perturb.distractors else []
            layers.append(PerturbLayer(cfg.perturb, pool=pool))
        return layers

    def agents(self, name: str) -> AgentFactory:
        found = self._agents.get(name)
        if found is None:
            spec = self.context.agents[name] if name else self.context.agent
            builder = (
                _oracle_agents if spec.builder == "oracle" else load_object(spec.builder, "agent builder")
            )
            found = self._agents[name] = builder(**spec.kwargs)
            if self._cancelled.is_set():
                _cancel(found)  # built after the run was cancelled: it spends nothing either
        return found

    def run(self, spec: EpisodeSpec) -> tuple[EpisodeOutcome, EpisodeBytes | None]:
        """Run one episode; the bytes of its trace and files come back when this worker does not
        write in place."""
        env = self.env_for(spec.task_set)
        task = self.tasks[spec.task_set][spec.task_id]
        agent = self.agents(spec.agent)(env, spec.trial)
        rel = Path(spec.trace_path)
        if self.out is not None:
            return self._run(env, agent, task, spec, self.out / rel.parent), None
        if self._staging is None:
            # named after this process: one a killed worker left goes with the next run
            self._staging = tempfile.mkdtemp(prefix=owned_prefix(STAGING_PREFIX), dir=staging_root())
            # workers are never closed: their pool or Ray ends them. multiprocessing's exit hook
            # (which a pool worker runs, unlike atexit) or the GC of this worker removes the folder
            multiprocessing.util.Finalize(
                self, shutil.rmtree, args=(self._staging,), kwargs={"ignore_errors": True}, exitpriority=10
            )
        folder = Path(tempfile.mkdtemp(dir=self._staging))
        try:
            outcome = self._run(env, agent, task, spec, folder)
            if outcome.trace is None:
                return outcome, None
            kept = folder / FILES_DIR  # each file once: the runner kept it under its sha256
            files = {p.name: p.read_bytes() for p in sorted(kept.iterdir())} if kept.is_dir() else {}
            return outcome, EpisodeBytes((folder / Path(outcome.trace).name).read_bytes(), files)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _run(self, env: ToolEnv, agent: Agent, task: Task, spec: EpisodeSpec, folder: Path) -> EpisodeOutcome:
        with strict_arguments(self.context.env.strict_arguments):
            return self._run_episode(env, agent, task, spec, folder)

    def _run_episode(
        self, env: ToolEnv, agent: Agent, task: Task, spec: EpisodeSpec, folder: Path
    ) -> EpisodeOutcome:
        try:
            if self.context.env.mode == "step":
                result = run_step_episode(env, agent, task, seed=spec.seed, trace_dir=folder)
            else:
                result = run_episode(env, agent, task, seed=spec.seed, trace_dir=folder, keep_files=True)
        except self.abort_types as exc:
            return aborted_outcome(env, agent, task, spec, folder, exc)
        return finished_outcome(agent, task, spec, result)

    def run_batch(self, specs: Sequence[EpisodeSpec]) -> list[tuple[EpisodeOutcome, EpisodeBytes | None]]:
        """The episodes of `specs` in order; once the worker is cancelled, no further one starts
        (those not run are left out)."""
        results = []
        for spec in specs:
            if self._cancelled.is_set() or run_stopped_by_driver():
                break
            results.append(self.run(spec))
        return results

    @property
    def cancelled(self) -> bool:
        """`cancel` was called: its builders spend nothing more, so it runs no other run."""
        return self._cancelled.is_set()

    def cancel(self) -> None:
        """The run stopped: what spends on a model stops at once. Each builder of this worker's
        agents, user simulators and worlds that has a `cancel()` is cancelled (an LLM client
        refuses new requests and abandons those in flight, a local model stops generating), so
        the episode in flight ends (aborted, with the tokens it spent), and `run_batch` starts no
        further episode. It only flags: safe from a signal handler or any thread."""
        self._cancelled.set()
        for builder in [*list(self._agents.values()), self._users, self._worlds]:
            _cancel(builder)

    def close(self) -> None:
        for env in self._envs.values():
            env.close()
        self._envs.clear()
        for factory in self._agents.values():
            close = getattr(factory, "close", None)
            if callable(close):
                close()
        close_users = getattr(self._users, "close", None)
        if callable(close_users):
            close_users()
        self._users = None
        close_worlds = getattr(self._worlds, "close", None)
        if callable(close_worlds):
            close_worlds()
        self._worlds = None
        self.remove_staging()

    def remove_staging(self) -> None:
        """Remove this worker's staging folder (`close` does; so does a worker process whose
        driver is gone, before it exits)."""
        if self._staging is not None:
            shutil.rmtree(self._staging, ignore_errors=True)


def _cancel(builder: object) -> None:
    cancel = getattr(builder, "cancel", None)
    if callable(cancel):
        cancel()


def _outcome_fields(task: Task, spec: EpisodeSpec) -> dict[str, Any]:
    return {
        "index": spec.index,
        "trial": spec.trial,
        "task_set": spec.task_set,
        "task_id": spec.task_id,
        "category": task.category,
        "agent": spec.agent,
        "task_hash": canonical_hash(task.model_dump(mode="json")),
    }


def finished_outcome(
    agent: Agent | AsyncAgent, task: Task, spec: EpisodeSpec, result: RunnerResult
) -> EpisodeOutcome:
    """The outcome of an episode that ran to its end."""
    return EpisodeOutcome(
        **_outcome_fields(task, spec),
        status="terminated" if result.terminated else "truncated",
        reward=result.reward,
        steps=result.steps,
        error_counts=result.error_counts,
        scores=result.scores,
        usage=_usage_of(agent),
        trace=Path(spec.trace_path).as_posix() if result.trace_path is not None else None,
    )


def aborted_outcome(
    env: ToolEnv, agent: Agent | AsyncAgent, task: Task, spec: EpisodeSpec, folder: Path, exc: BaseException
) -> EpisodeOutcome:
    """The outcome of an episode that an abort exception (an infra error) stopped: not the agent's
    fault; its partial trace stays beside the finished ones."""
    rel = Path(spec.trace_path)
    partial = folder / (rel.name + ".partial")
    message = getattr(exc, "message", None) or str(exc)
    return EpisodeOutcome(
        **_outcome_fields(task, spec),
        status="aborted",
        reward=0.0,
        steps=len(env.episode.steps) if env.episode is not None else 0,
        error_counts=dict(env.error_counts),
        usage=_usage_of(agent),
        trace=(rel.parent / partial.name).as_posix() if partial.exists() else None,
        error=f"{type(exc).__name__}: {message}",
    )


def _usage_of(agent: Agent | AsyncAgent) -> dict[str, int | float] | None:
    usage = getattr(agent, "usage", None)
    as_dict = getattr(usage, "as_dict", None)
    return as_dict() if callable(as_dict) else None  # the LLM agent's token usage


def build_toolset(config: EnvConfig) -> ToolSet:
    """The ToolSet `config` names; with a `tool_url`, that server's tools replace local ones."""
    local = load_object(config.toolset, "toolset")()
    if not isinstance(local, ToolSet):
        raise TypeError(f"toolset {config.toolset!r} returned {type(local).__name__}, not a ToolSet")
    if config.tool_url is None:
        return local
    from toolgym.toolservers.clients.remote import RemoteToolSet

    remote = RemoteToolSet(config.tool_url, token=config.tool_token)
    return ToolSet([*(t for t in local if t.name not in remote), *remote])


# ---- the driver's side -----------------------------------------------------------------------
Deliver = Callable[[EpisodeOutcome, "EpisodeBytes | None"], None]
MAX_PENDING_WRITES = 32  # episodes the driver holds in memory waiting to be written, at most


class Executor(Protocol):
    def run(
        self,
        specs: Sequence[EpisodeSpec],
        context: WorkerContext,
        deliver: Deliver,
        cancel: Cancel | None = None,
    ) -> None:
        """Run every spec and `deliver` each outcome (with its trace's and files' bytes, or None
        when they are already in place) exactly once, in any order; raise what an episode raised that is not
        one of `context.abort_on`. Once `cancel` is set, start no episode and return soon."""


def rollout(
    task_sets: Sequence[tuple[str, TaskSet]],
    specs: Sequence[EpisodeSpec],
    *,
    out: Path,
    executor: Executor | None = None,
    env: EnvConfig = EnvConfig(),
    agent: AgentSpec | AgentFactory | Mapping[str, AgentSpec] = AgentSpec(),
    toolset: ToolSet | None = None,
    abort_on: tuple[str, ...] = (),
    on_outcome: Callable[[EpisodeOutcome], None] | None = None,
    cancel: Cancel | None = None,
) -> list[EpisodeOutcome]:
    """Run `specs` with `executor` (default: in process, one at a time), write each trace (and the
    files its observations carry) once under `out`, and return the outcomes in spec order. `agent` is the one agent, or agents by the names
    the specs carry. An agent factory (a closure) or a ToolSet object only run in process; other
    executors need an `AgentSpec` and `env.toolset`. When `cancel` is set, RolloutCancelled carries
    what finished and what was still running (left behind after `cancel.grace_s`)."""
    executor = executor or InProcessExecutor()
    named = dict(agent) if isinstance(agent, Mapping) else {}
    closure = None if isinstance(agent, (AgentSpec, Mapping)) else agent
    if isinstance(executor, InProcessExecutor):
        executor = executor.bind(toolset=toolset, make_agent=closure, out=out)
    elif closure is not None or toolset is not None:
        raise TypeError(
            f"{type(executor).__name__} builds agents and tools in its workers: pass an AgentSpec "
            "and name the toolset in EnvConfig, not objects"
        )
    unknown = sorted({s.agent for s in specs if s.agent and s.agent not in named})
    if unknown or (named and any(not s.agent for s in specs)):
        raise ValueError(f"specs name agents {unknown or ['']} that are not among {sorted(named)}")
    one = agent if isinstance(agent, AgentSpec) else AgentSpec()
    context = WorkerContext(task_sets, env, one, tuple(abort_on), named)
    remove_orphaned_folders()
    reported = _Reported(out, {spec.index for spec in specs}, on_outcome)
    try:
        if cancel is None:
            executor.run(specs, context, reported.deliver)
        else:
            _run_cancellable(executor, specs, context, reported.deliver, cancel)
        reported.wait()
    finally:
        reported.close()
    if cancel is not None and cancel.is_set():
        with reported.lock:
            done = [reported.outcomes[s.index] for s in specs if s.index in reported.outcomes]
            running = [s for s in specs if s.index in cancel.started and s.index not in reported.outcomes]
        raise RolloutCancelled(cancel.reason or "cancelled", done, running)
    missing = sorted(reported.wanted - reported.outcomes.keys())
    if missing:
        raise RolloutError(f"{len(missing)} episodes never reported back (first: {missing[0]})")
    return [reported.outcomes[spec.index] for spec in specs]


class _Reported:
    """The outcomes a rollout's executor delivers: each episode's once (a second report of one,
    from a worker thought lost, is dropped), its trace and files written under `out` when the
    worker sent their bytes, and `on_outcome` called once it is in place."""

    def __init__(
        self, out: Path, wanted: set[int], on_outcome: Callable[[EpisodeOutcome], None] | None
    ) -> None:
        self.out, self.wanted, self.on_outcome = out, wanted, on_outcome
        self.outcomes: dict[int, EpisodeOutcome] = {}
        self.claimed: set[int] = set()
        self.lock = threading.Lock()
        self.writers = ThreadPoolExecutor(max_workers=4, thread_name_prefix="trace-writer")  # fsyncs overlap
        # episodes handed to the writers and not yet on disk, at most: results that come faster than
        # the disk takes them wait in the executor, not as traces and images piling up in memory
        self.room = threading.BoundedSemaphore(MAX_PENDING_WRITES)
        self.pending: list[Future[None]] = []

    def deliver(self, outcome: EpisodeOutcome, data: EpisodeBytes | None) -> None:
        with self.lock:
            if (
                outcome.index not in self.wanted
                or outcome.index in self.outcomes
                or outcome.index in self.claimed
            ):
                return  # a second report of one episode (a worker thought lost) is dropped
            self.claimed.add(outcome.index)
        rel = outcome.trace
        if data is None or rel is None:
            self._finish(outcome)  # written in place already (or no trace)
            return
        self.room.acquire()
        self.pending.append(self.writers.submit(self._write, outcome, rel, data))

    def _write(self, outcome: EpisodeOutcome, rel: str, data: EpisodeBytes) -> None:
        try:
            # the files first: a trace in the folder (and its episode in run.json) has its files
            for sha256, blob in data.files.items():
                keep_file((self.out / rel).parent / FILES_DIR, sha256, blob)
            write_atomically(self.out / rel, data.trace, durable=True)
        finally:
            self.room.release()
        self._finish(outcome)

    def _finish(self, outcome: EpisodeOutcome) -> None:
        with self.lock:
            self.outcomes[outcome.index] = outcome
        if self.on_outcome is not None:
            with self.lock:
                self.on_outcome(outcome)

    def wait(self) -> None:
        """Until every trace handed to the writers is written (an error in one is raised)."""
        for future in list(self.pending):
            future.result()

    def close(self) -> None:
        self.writers.shutdown(wait=True)


def _run_cancellable(
    executor: Executor, specs: Sequence[EpisodeSpec], context: WorkerContext, deliver: Deliver, cancel: Cancel
) -> None:
    """`executor.run` on a daemon thread, so that this thread (the main one, where signal handlers
    run) stays free: once `cancel` is set it waits `cancel.grace_s` at most and leaves episodes
    still blocked (in a model request, say) behind; they are reported as cancelled."""
    failure: list[BaseException] = []

    def drive() -> None:
        try:
            executor.run(specs, context, deliver, cancel)
        except BaseException as exc:  # handed to the caller's thread below
            failure.append(exc)

    thread = threading.Thread(target=drive, name="rollout-driver", daemon=True)
    thread.start()
    while thread.is_alive() and not cancel.is_set():
        thread.join(0.1)
    if thread.is_alive():
        thread.join(cancel.grace_s)
    if failure and not cancel.is_set():
        raise failure[0]


# ---- executors -------------------------------------------------------------------------------
class InProcessExecutor:
    """Episodes in this process on up to `concurrency` threads, each with its own worker; traces
    are written in place as the episode runs."""

    def __init__(self, concurrency: int = 1) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.concurrency = concurrency
        self._toolset: ToolSet | None = None
        self._make_agent: AgentFactory | None = None
        self.out: Path | None = None

    def bind(
        self, *, toolset: ToolSet | None, make_agent: AgentFactory | None, out: Path | None = None
    ) -> InProcessExecutor:
        bound = InProcessExecutor(self.concurrency)
        bound._toolset, bound._make_agent, bound.out = toolset, make_agent, out
        return bound

    def run(
        self,
        specs: Sequence[EpisodeSpec],
        context: WorkerContext,
        deliver: Deliver,
        cancel: Cancel | None = None,
    ) -> None:
        out = self.out
        if out is None:
            raise ValueError("the in-process executor writes traces in place: bind it to a run directory")
        toolset = self._toolset if self._toolset is not None else build_toolset(context.env)
        todo = iter(specs)
        taking = threading.Lock()
        failures: list[BaseException] = []

        def next_spec() -> EpisodeSpec | None:
            with taking:
                if failures or (cancel is not None and cancel.is_set()):
                    return None  # a bug stops the run; a cancelled run starts nothing new
                spec = next(todo, None)
                if spec is not None and cancel is not None:
                    cancel.started.add(spec.index)
                return spec

        def loop() -> None:
            # each thread its own worker (envs are not thread-safe), closed when it runs out of work
            worker = EpisodeWorker(context, out=out, toolset=toolset, make_agent=self._make_agent)
            if cancel is not None:
                cancel.on_set(worker.cancel)  # its agents' model clients stop with the run
            try:
                while (spec := next_spec()) is not None:
                    outcome, data = worker.run(spec)
                    deliver(outcome, data)
            except BaseException as exc:
                with taking:
                    failures.append(exc)
            finally:
                worker.close()

        if self.concurrency == 1:
            loop()
        else:
            # daemon threads: an episode blocked in a request must not keep a cancelled run alive
            threads = [
                threading.Thread(target=loop, name=f"episode-{i}", daemon=True)
                for i in range(self.concurrency)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        if failures:
            raise failures[0]


def batches(specs: Sequence[EpisodeSpec], workers: int, size: int | None = None) -> list[list[EpisodeSpec]]:
    """Specs in consecutive batches: one call carries several short episodes, so the per-call
    cost of a process pool or Ray is paid once per batch. By default each worker gets about four
    batches of at most 8 episodes (small enough to balance the load at the end of a run)."""
    if size is None:
        size = max(1, min(8, len(specs) // (max(workers, 1) * 4)))
    return [list(specs[i : i + size]) for i in range(0, len(specs), size)]


_PROCESS_WORKER: EpisodeWorker | None = None
_PROCESS_STOP: Connection | None = None  # in a worker process: the read end of the driver's stop pipe


def run_stopped_by_driver() -> bool:
    """In a rollout worker process: whether the driver has cancelled the run. The shared event is
    read at once, where the worker's own cancel (EpisodeWorker.cancel) follows a thread's wake-up
    later; a model client asks it before it sends a request or takes an answer, so none is sent
    or taken once the driver has said the run stops. False outside worker processes."""
    if _PROCESS_STOP is None:
        return False
    try:
        return _PROCESS_STOP.poll()  # readable only once the driver closed its end: the run stops
    except (EOFError, OSError):
        return True


EXIT_DRIVER_GONE = 70  # a worker process's exit status when its driver is gone


def _process_init(context: WorkerContext, stop: Connection, lifeline: Connection) -> None:
    global _PROCESS_WORKER, _PROCESS_STOP
    # Ctrl-C reaches the whole process group: the driver decides what stops, and stops workers
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    worker = _PROCESS_WORKER = EpisodeWorker(context)
    _PROCESS_STOP = stop

    def cancel_when_stopped() -> None:  # the driver's cancel, the moment it closes the stop pipe
        with contextlib.suppress(EOFError, OSError):
            while True:
                stop.recv_bytes()
        worker.cancel()

    threading.Thread(target=cancel_when_stopped, name="cancel-watch", daemon=True).start()
    exit_with_driver(lifeline, worker.remove_staging)


def exit_with_driver(lifeline: Connection, before_exit: Callable[[], None] | None = None) -> None:
    """This worker process ends with its driver (a thread watches). The driver holds the one write
    end of `lifeline` and never writes to it, so reading returns only when that end is closed: by
    the driver at the end of its run, or by the kernel when the driver dies, `kill -9` included.
    The worker then runs `before_exit` (a rollout worker removes its staging folder) and exits at
    once, idle or mid-task. Without it, an orphaned worker would wait for work for good (or for a
    result queue no one reads), and keep Python's forkserver and resource tracker alive with it
    (they exit once no process holds their pipes). A pipe, not the driver's pid: the workers'
    parent may be the forkserver, and a pid can be reused. A forked worker must first close its
    copy of the write end."""

    def watch() -> None:
        with contextlib.suppress(EOFError, OSError):
            while True:
                lifeline.recv_bytes()
        if before_exit is not None:
            before_exit()
        os._exit(EXIT_DRIVER_GONE)

    threading.Thread(target=watch, name="driver-watch", daemon=True).start()


def _stop_processes(pool: ProcessPoolExecutor) -> None:
    """A cancelled run or a broken pool: end the worker processes now, not after the batches they
    are running (the pool would otherwise wait for them on shutdown, and at interpreter exit)."""
    processes = dict(getattr(pool, "_processes", None) or {})  # no public handle before 3.14
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes.values():
        process.terminate()


def _deliver_cut_short(
    in_flight: Mapping[Future[list[tuple[EpisodeOutcome, EpisodeBytes | None]]], object],
    deliver: Deliver,
    timeout: float,
) -> None:
    """A cancelled run: the worker processes were told (their model clients stopped), so their
    batches come back soon with the episodes they finished and the one cut short, which carries
    the tokens it spent; those back within `timeout` are delivered, the others are left."""
    done, _ = wait(in_flight, timeout=timeout)
    for future in done:
        try:
            results = future.result()
        except Exception:  # a broken pool, a bug: the run is stopping, its episodes are cancelled
            continue
        for outcome, data in results:
            deliver(outcome, data)


def _process_batch(specs: Sequence[EpisodeSpec]) -> list[tuple[EpisodeOutcome, EpisodeBytes | None]]:
    assert _PROCESS_WORKER is not None, "worker process not initialised"
    return _PROCESS_WORKER.run_batch(specs)


def process_start_method() -> str:
    """How worker processes start when this process may hold threads: forkserver (or spawn), never
    a fork of a driver that may hold threads (the trace writers, a Ray client)."""
    return "forkserver" if "forkserver" in get_all_start_methods() else "spawn"


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity: a container's or taskset's cpuset), not the
    machine's count."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity call on this platform
        return max(1, os.cpu_count() or 1)


def fork_is_safe() -> bool:
    """Whether a fork of this process is safe: Linux, and this process runs one thread. A fork copies
    one thread only: a lock another thread held (a log handler, stdout's buffer, a thread pool) stays
    held for good in the child, which then hangs where it takes it (at the latest when it flushes
    stdout on its way out, and its parent waits on it forever: a test process of pytest-xdist holds
    execnet's thread)."""
    return (
        sys.platform.startswith("linux")
        and "fork" in get_all_start_methods()
        and threading.active_count() == 1
    )


@dataclass
class ProcessStats:
    """What a process run did, for tests and benchmarks."""

    pools_started: int = 0
    pools_broken: int = 0  # a worker process died: the pool went with it
    resubmitted: int = 0  # episodes sent again after their pool broke
    peak_in_flight: int = 0  # episodes submitted and not yet back, at most


class ProcessExecutor:
    """Episodes on `workers` local processes (no Ray): one worker and its envs per process, fed in
    batches, at most `max_in_flight` episodes submitted at once (back-pressure).

    A worker process that dies (killed, out of memory, a crash in native code) breaks the whole
    pool (`concurrent.futures` stops every worker): a fresh pool takes over, and the episodes
    that were in flight and had not reported go back to the queue one by one, to run alone (with
    nothing else in flight, so a death is pinned on the one episode). An episode whose worker died
    `max_attempts` times while it ran alone is recorded as aborted with a `WorkerLost` error.
    Workers return trace and file bytes and the driver writes each once (`rollout`), so a re-run
    never leaves a duplicate or a half-written file. The workers end with the driver, even one
    killed with SIGKILL (`exit_with_driver`)."""

    def __init__(
        self,
        workers: int = 2,
        *,
        batch_size: int | None = None,
        max_in_flight: int | None = None,
        max_attempts: int = 2,
    ):
        if workers < 1 or max_attempts < 1:
            raise ValueError("workers and max_attempts must be at least 1")
        self.workers = workers
        self.batch_size = batch_size
        self.max_in_flight = max_in_flight
        self.max_attempts = max_attempts
        self.stats = ProcessStats()

    def run(
        self,
        specs: Sequence[EpisodeSpec],
        context: WorkerContext,
        deliver: Deliver,
        cancel: Cancel | None = None,
    ) -> None:
        todo = batches(specs, self.workers, self.batch_size)
        limit = self.max_in_flight or 2 * self.workers * max((len(b) for b in todo), default=1)
        # (batch, alone): episodes whose pool broke under them come back alone, one at a time
        queue: deque[tuple[list[EpisodeSpec], bool]] = deque((batch, False) for batch in todo)
        deaths: dict[int, int] = {}  # episode index -> its worker died while it ran alone
        self.stats = ProcessStats()
        mp = get_context(process_start_method())
        # the run's cancel reaches each worker process as the close of `stopping` (it then cancels its
        # EpisodeWorker). A pipe, not a multiprocessing Event: Event.set waits for every process
        # asleep in wait() to wake, and one the cancel has just terminated never does (the run hung)
        stop, stopping = mp.Pipe(duplex=False)
        if cancel is not None:
            cancel.on_set(stopping.close)
        # the workers' lifeline: they exit when `held` closes, at the end of this call or when this
        # process dies, kill -9 included (`exit_with_driver`)
        lifeline, held = mp.Pipe(duplex=False)
        try:
            while queue:
                self.stats.pools_started += 1
                pool = ProcessPoolExecutor(
                    self.workers, mp_context=mp, initializer=_process_init, initargs=(context, stop, lifeline)
                )
                try:
                    ended = self._drive(pool, queue, limit, deaths, deliver, cancel)
                except BaseException:
                    pool.shutdown(cancel_futures=True)  # a failing run cancels what still waits
                    raise
                if ended == "cancelled":
                    return  # _drive ended the processes: no waiting on the batches they ran
                if ended == "broken":
                    # end every process of the broken pool here: the pool's own clean-up ends those
                    # it knew of when a worker died, and joins them all, so a worker this thread
                    # started while it was at it (a submit racing the death) was joined forever
                    # (the fresh-clone suite hung in test_episodes_that_kill_their_worker...)
                    _stop_processes(pool)
                pool.shutdown(cancel_futures=True)
        finally:
            held.close()  # a worker still running (one that outlived its terminate) exits now
            lifeline.close()
            stopping.close()
            stop.close()

    def _drive(
        self,
        pool: ProcessPoolExecutor,
        queue: deque[tuple[list[EpisodeSpec], bool]],
        limit: int,
        deaths: dict[int, int],
        deliver: Deliver,
        cancel: Cancel | None,
    ) -> Literal["done", "broken", "cancelled"]:
        """Feed `pool` from `queue` until the queue is done or the pool broke (the episodes it
        lost back in the queue); "cancelled": the run was cancelled (the worker processes are ended)."""
        in_flight: dict[
            Future[list[tuple[EpisodeOutcome, EpisodeBytes | None]]], tuple[list[EpisodeSpec], bool]
        ] = {}
        episodes = 0
        lost: list[tuple[list[EpisodeSpec], bool]] = []
        cause: BaseException | None = None
        while queue or in_flight:
            if cancel is not None and cancel.is_set():
                _deliver_cut_short(in_flight, deliver, cancel.grace_s / 2)
                _stop_processes(pool)
                return "cancelled"
            while queue and cause is None:
                batch, alone = queue[0]
                if in_flight and (
                    alone or any(a for _, a in in_flight.values()) or episodes + len(batch) > limit
                ):
                    break  # back-pressure, or a suspect episode runs with nothing beside it
                try:
                    in_flight[pool.submit(_process_batch, batch)] = (batch, alone)
                except BrokenProcessPool as exc:  # it stays queued for the next pool
                    cause = exc
                    break
                queue.popleft()
                if cancel is not None:
                    cancel.started.update(spec.index for spec in batch)
                episodes += len(batch)
                self.stats.peak_in_flight = max(self.stats.peak_in_flight, episodes)
            if not in_flight:
                break
            # a short wait when cancellable: the cancel is noticed within a tenth of a second
            done, _ = wait(in_flight, timeout=None if cancel is None else 0.1, return_when=FIRST_COMPLETED)
            for future in done:
                batch, alone = in_flight.pop(future)
                episodes -= len(batch)
                try:
                    results = future.result()
                except BrokenProcessPool as exc:
                    lost.append((batch, alone))
                    cause = exc
                    continue
                for outcome, data in results:
                    deliver(outcome, data)
        if cause is None:
            return "done"
        self.stats.pools_broken += 1
        for batch, alone in reversed(lost):
            self.stats.resubmitted += requeue_lost(
                batch, alone, cause, deaths, self.max_attempts, queue, deliver
            )
        return "broken"


def requeue_lost(
    batch: Sequence[EpisodeSpec],
    alone: bool,
    cause: BaseException,
    deaths: dict[int, int],
    max_attempts: int,
    queue: deque[tuple[list[EpisodeSpec], bool]],
    deliver: Deliver,
) -> int:
    """The episodes of a batch whose worker died go back to the front of `queue`, one by one, to
    run alone; a death while running alone counts against the episode, and after `max_attempts`
    such deaths it is delivered as lost. Returns how many were queued again."""
    requeued = 0
    for spec in reversed(batch):
        if alone:
            deaths[spec.index] = deaths.get(spec.index, 0) + 1
        if deaths.get(spec.index, 0) >= max_attempts:
            deliver(lost_outcome(spec, deaths[spec.index], cause), None)
        else:
            requeued += 1
            queue.appendleft(([spec], True))
    return requeued


def lost_outcome(spec: EpisodeSpec, attempts: int, cause: BaseException) -> EpisodeOutcome:
    """The outcome of an episode whose worker died `attempts` times while it ran alone."""
    why = str(cause).strip().splitlines()[0][:200] if str(cause).strip() else type(cause).__name__
    return unrun_outcome(
        spec, WorkerLost(f"the worker running this episode alone died {attempts} times (last: {why})")
    )


def unrun_outcome(spec: EpisodeSpec, error: RolloutError) -> EpisodeOutcome:
    """The outcome of an episode that no worker ran to its end (an infra failure: aborted)."""
    return EpisodeOutcome(
        index=spec.index,
        trial=spec.trial,
        task_set=spec.task_set,
        task_id=spec.task_id,
        status="aborted",
        reward=0.0,
        steps=0,
        error=f"{type(error).__name__}: {error}",
        agent=spec.agent,
    )


# ---- async: episodes on one event loop ---------------------------------------------------------
async def arollout(
    task_sets: Sequence[tuple[str, TaskSet]],
    specs: Sequence[EpisodeSpec],
    *,
    out: Path,
    make_env: Callable[[str], ToolEnv],
    make_agent: Callable[[ToolEnv, int], AsyncAgent],
    concurrency: int = 8,
    abort_types: tuple[type[BaseException], ...] = (),
) -> list[EpisodeOutcome]:
    """Run `specs` as asyncio tasks on the running loop, at most `concurrency` at once, each with its
    own env (`make_env(task set name)`, closed after the episode) and agent
    (`make_agent(env, trial)`, an `AsyncAgent`), writing each trace under `out` where the other
    executors put it, with the same bytes. An exception of `abort_types` (the model server failed)
    or an `EpisodeAborted` (a backend failed) records the episode as aborted, as `EpisodeWorker`
    does; the outcomes come in spec order."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    tasks = {name: {t.id: t for t in task_set} for name, task_set in task_sets}
    slots = asyncio.Semaphore(concurrency)
    stops: tuple[type[BaseException], ...] = (EpisodeAborted, *abort_types)

    async def one(spec: EpisodeSpec) -> EpisodeOutcome:
        async with slots:
            task = tasks[spec.task_set][spec.task_id]
            folder = out / Path(spec.trace_path).parent
            env = make_env(spec.task_set)
            try:
                agent = make_agent(env, spec.trial)
                try:
                    result = await arun_episode(
                        env, agent, task, seed=spec.seed, trace_dir=folder, keep_files=True
                    )
                except stops as exc:
                    return aborted_outcome(env, agent, task, spec, folder, exc)
                return finished_outcome(agent, task, spec, result)
            finally:
                env.close()

    return list(await asyncio.gather(*(one(spec) for spec in specs)))
