"""One rollout API: episodes (tasks x trials x agents) as picklable specs, run by an executor.

- `InProcessExecutor` runs episodes in this process, on up to `concurrency` threads (what
  `toolgym run` always did); traces are written in place by the episode runner.
- `ProcessExecutor` spreads them over `workers` local processes (no Ray needed).
- `toolgym.envs.ray_rollouts.RayExecutor` spreads them over Ray actors.

Every executor runs an episode the same way (`EpisodeWorker.run`): a worker holds one `ToolEnv`
per task set, reused across episodes (reset rebuilds nothing but the episode), and builds the
agent from an `AgentSpec`. Remote workers never write into the run directory: they return each
trace's bytes, and the driver writes it once, atomically, under its final name. A worker that
dies mid-episode therefore leaves nothing behind, its episode can run again elsewhere, and the
trace is byte-identical to a one-process run because it depends only on the task, the seed and
the agent.
"""

from __future__ import annotations

import importlib
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from multiprocessing import get_all_start_methods, get_context
from pathlib import Path
from typing import Any, Literal, Protocol

from toolgym.envs.agents import Agent, OracleAgent
from toolgym.envs.faults import FaultLayer, FaultPlan, fault_aware
from toolgym.envs.rewards import task_scores
from toolgym.envs.runner import run_episode, trace_name
from toolgym.envs.tool_env import ToolEnv
from toolgym.envs.users import UserSimulator
from toolgym.tasks import Task, TaskSet
from toolgym.tools import ToolSet

Status = Literal["terminated", "truncated", "aborted"]
AgentFactory = Callable[[ToolEnv, int], Agent]  # (the episode's env, trial index) -> a fresh agent
UserFactory = Callable[[], UserSimulator]  # a fresh simulator for one env (one episode at a time)
DEFAULT_TOOLSET = "toolgym.toolservers.registry:default_toolset"


class RolloutError(RuntimeError):
    """A rollout could not finish (no worker left, a worker that cannot start)."""


class WorkerLost(RolloutError):
    """The worker running an episode died (process killed, actor lost) more often than allowed.
    The episode is recorded as aborted with this error: not the agent's fault."""


# ---- specs -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class AgentSpec:
    """How a worker builds agents. `builder` is `oracle` or `package.module:attr`, a callable that
    a worker calls once with `kwargs` and that returns an `AgentFactory`; it may hold resources
    for the worker's lifetime (an HTTP client) and release them in an optional `close()`."""

    builder: str = "oracle"
    kwargs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class UserSpec:
    """How a worker builds the user simulator of tasks with a user scenario. `builder` names a
    `package.module:attr`, a callable that a worker calls once with `kwargs` and that returns a
    `UserFactory` (one simulator per env it holds); it may hold resources for the worker's
    lifetime (an HTTP client) and release them in an optional `close()`. The LLM user's builder is
    `toolgym.evaluation.users:LLMUsers`, above this floor, so it is named, never imported."""

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
    # the user simulator of tasks with a scenario; None: the env's default (rule-based)
    user: UserSpec | None = None


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
    """What one episode gave, as run.json records it (`toolgym.evaluation.runs.EpisodeRecord`)."""

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
    """The object named by `package.module:attr` (imported, never evaluated)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"{what} {spec!r}: use package.module:attr")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"{what} {spec!r}: {exc}") from None


def _oracle_agents() -> AgentFactory:
    return lambda env, trial: OracleAgent(env.protocol)


# ---- the worker ------------------------------------------------------------------------------
class EpisodeWorker:
    """Runs episodes one at a time with one env per task set (not thread-safe: one per thread).

    With `out`, traces are written in place (the in-process executor); without, each episode's
    trace is staged in a private temporary folder and its bytes are returned for the driver."""

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
        self.abort_types: tuple[type[BaseException], ...] = tuple(
            load_object(name, "abort exception") for name in context.abort_on
        )
        self._envs: dict[str, ToolEnv] = {}
        self._staging: str | None = None
        self._users: UserFactory | None = None  # built once, with the first env

    def env_for(self, task_set: str) -> ToolEnv:
        env = self._envs.get(task_set)
        if env is None:
            cfg = self.context.env
            if cfg.user is not None and self._users is None:
                self._users = load_object(cfg.user.builder, "user builder")(**cfg.user.kwargs)
            env = ToolEnv(
                self.toolset,
                self.tasks[task_set],
                protocol=cfg.protocol,
                max_steps=cfg.max_steps,
                tool_layers=[FaultLayer(cfg.faults, known_tools=cfg.fault_tools)] if cfg.faults else [],
                reward_fn=fault_aware(task_scores) if cfg.faults else task_scores,
                user=self._users() if self._users is not None else None,
            )
            self._envs[task_set] = env
        return env

    def agents(self, name: str) -> AgentFactory:
        found = self._agents.get(name)
        if found is None:
            spec = self.context.agents[name] if name else self.context.agent
            builder = (
                _oracle_agents if spec.builder == "oracle" else load_object(spec.builder, "agent builder")
            )
            found = self._agents[name] = builder(**spec.kwargs)
        return found

    def run(self, spec: EpisodeSpec) -> tuple[EpisodeOutcome, bytes | None]:
        """Run one episode; the bytes of its trace (finished, or partial when aborted) come back
        when this worker does not write in place."""
        env = self.env_for(spec.task_set)
        task = self.tasks[spec.task_set][spec.task_id]
        agent = self.agents(spec.agent)(env, spec.trial)
        rel = Path(spec.trace_path)
        if self.out is not None:
            return self._run(env, agent, task, spec, self.out / rel.parent), None
        if self._staging is None:
            # tmpfs where there is one: the staged copy is read back at once, a disk fsync is wasted
            shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
            self._staging = tempfile.mkdtemp(prefix="toolgym-rollout-", dir=shm)
        folder = Path(tempfile.mkdtemp(dir=self._staging))
        try:
            outcome = self._run(env, agent, task, spec, folder)
            data = None
            if outcome.trace is not None:
                data = (folder / Path(outcome.trace).name).read_bytes()
            return outcome, data
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _run(self, env: ToolEnv, agent: Agent, task: Task, spec: EpisodeSpec, folder: Path) -> EpisodeOutcome:
        rel = Path(spec.trace_path)
        common: dict[str, Any] = {
            "index": spec.index,
            "trial": spec.trial,
            "task_set": spec.task_set,
            "task_id": spec.task_id,
            "category": task.category,
            "agent": spec.agent,
        }
        try:
            result = run_episode(env, agent, task, seed=spec.seed, trace_dir=folder)
        except self.abort_types as exc:
            partial = folder / (rel.name + ".partial")
            message = getattr(exc, "message", None) or str(exc)
            return EpisodeOutcome(
                **common,
                status="aborted",
                reward=0.0,
                steps=len(env.episode.steps) if env.episode is not None else 0,
                error_counts=dict(env.error_counts),
                usage=_usage_of(agent),
                trace=(rel.parent / partial.name).as_posix() if partial.exists() else None,
                error=f"{type(exc).__name__}: {message}",
            )
        return EpisodeOutcome(
            **common,
            status="terminated" if result.terminated else "truncated",
            reward=result.reward,
            steps=result.steps,
            error_counts=result.error_counts,
            scores=result.scores,
            usage=_usage_of(agent),
            trace=rel.as_posix() if result.trace_path is not None else None,
        )

    def run_batch(self, specs: Sequence[EpisodeSpec]) -> list[tuple[EpisodeOutcome, bytes | None]]:
        return [self.run(spec) for spec in specs]

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
        if self._staging is not None:
            shutil.rmtree(self._staging, ignore_errors=True)


def _usage_of(agent: Agent) -> dict[str, int | float] | None:
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
Deliver = Callable[[EpisodeOutcome, "bytes | None"], None]


class Executor(Protocol):
    def run(self, specs: Sequence[EpisodeSpec], context: WorkerContext, deliver: Deliver) -> None:
        """Run every spec and `deliver` each outcome (with its trace bytes, or None when the trace
        is already in place) exactly once, in any order; raise what an episode raised that is not
        one of `context.abort_on`."""


def write_atomically(path: Path, data: bytes) -> None:
    """The file appears whole under its name or not at all (as TraceWriter's rename does)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with tmp.open("wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


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
) -> list[EpisodeOutcome]:
    """Run `specs` with `executor` (default: in process, one at a time), write each trace once under
    `out`, and return the outcomes in spec order. `agent` is the one agent, or agents by the names
    the specs carry. An agent factory (a closure) or a ToolSet object only run in process; other
    executors need an `AgentSpec` and `env.toolset`."""
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
    outcomes: dict[int, EpisodeOutcome] = {}
    claimed: set[int] = set()
    wanted = {spec.index for spec in specs}
    lock = threading.Lock()
    writers = ThreadPoolExecutor(max_workers=4, thread_name_prefix="trace-writer")  # fsync waits overlap

    def finish(outcome: EpisodeOutcome) -> None:
        with lock:
            outcomes[outcome.index] = outcome
        if on_outcome is not None:
            with lock:
                on_outcome(outcome)

    pending: list[Future[None]] = []

    def deliver(outcome: EpisodeOutcome, data: bytes | None) -> None:
        with lock:
            if outcome.index not in wanted or outcome.index in outcomes or outcome.index in claimed:
                return  # a second report of one episode (a worker thought lost) is dropped
            claimed.add(outcome.index)
        rel = outcome.trace
        if data is None or rel is None:
            finish(outcome)  # written in place already (or no trace)
            return

        def write() -> None:
            write_atomically(out / rel, data)
            finish(outcome)

        pending.append(writers.submit(write))

    try:
        executor.run(specs, context, deliver)
        for future in pending:
            future.result()
    finally:
        writers.shutdown(wait=True)
    missing = sorted(wanted - outcomes.keys())
    if missing:
        raise RolloutError(f"{len(missing)} episodes never reported back (first: {missing[0]})")
    return [outcomes[spec.index] for spec in specs]


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

    def run(self, specs: Sequence[EpisodeSpec], context: WorkerContext, deliver: Deliver) -> None:
        out = self.out
        if out is None:
            raise ValueError("the in-process executor writes traces in place: bind it to a run directory")
        toolset = self._toolset if self._toolset is not None else build_toolset(context.env)
        local = threading.local()
        workers: list[EpisodeWorker] = []
        made = threading.Lock()

        def worker() -> EpisodeWorker:
            found: EpisodeWorker | None = getattr(local, "worker", None)
            if found is None:
                found = EpisodeWorker(context, out=out, toolset=toolset, make_agent=self._make_agent)
                local.worker = found
                with made:
                    workers.append(found)
            return found

        def one(spec: EpisodeSpec) -> None:
            outcome, data = worker().run(spec)
            deliver(outcome, data)

        try:
            if self.concurrency == 1:
                for spec in specs:
                    one(spec)
                return
            with ThreadPoolExecutor(self.concurrency, thread_name_prefix="episode") as pool:
                futures = [pool.submit(one, spec) for spec in specs]
                _raise_first(futures)
        finally:
            for w in workers:
                w.close()


def _raise_first(futures: Sequence[Future[Any]]) -> None:
    """Wait for all; the first failure cancels the rest and is raised (a bug stops the run)."""
    from concurrent.futures import FIRST_EXCEPTION

    done, _ = wait(futures, return_when=FIRST_EXCEPTION)
    failed = next((f.exception() for f in done if f.exception() is not None), None)
    if failed is not None:
        for other in futures:
            other.cancel()
        raise failed


def batches(specs: Sequence[EpisodeSpec], workers: int, size: int | None = None) -> list[list[EpisodeSpec]]:
    """Specs in consecutive batches: one call carries several short episodes, so the per-call
    cost of a process pool or Ray is paid once per batch. By default each worker gets about four
    batches of at most 8 episodes (small enough to balance the load at the end of a run)."""
    if size is None:
        size = max(1, min(8, len(specs) // (max(workers, 1) * 4)))
    return [list(specs[i : i + size]) for i in range(0, len(specs), size)]


_PROCESS_WORKER: EpisodeWorker | None = None


def _process_init(context: WorkerContext) -> None:
    global _PROCESS_WORKER
    _PROCESS_WORKER = EpisodeWorker(context)


def _process_batch(specs: Sequence[EpisodeSpec]) -> list[tuple[EpisodeOutcome, bytes | None]]:
    assert _PROCESS_WORKER is not None, "worker process not initialised"
    return _PROCESS_WORKER.run_batch(specs)


def _start_method() -> str:
    # forkserver: no fork of a driver that may hold threads (the trace writers, a Ray client)
    return "forkserver" if "forkserver" in get_all_start_methods() else "spawn"


class ProcessExecutor:
    """Episodes on `workers` local processes (no Ray): one worker and its envs per process, fed in
    batches, at most `max_in_flight` episodes submitted at once (back-pressure)."""

    def __init__(self, workers: int = 2, *, batch_size: int | None = None, max_in_flight: int | None = None):
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.workers = workers
        self.batch_size = batch_size
        self.max_in_flight = max_in_flight

    def run(self, specs: Sequence[EpisodeSpec], context: WorkerContext, deliver: Deliver) -> None:
        todo = batches(specs, self.workers, self.batch_size)
        limit = self.max_in_flight or 2 * self.workers * max((len(b) for b in todo), default=1)
        with ProcessPoolExecutor(
            self.workers,
            mp_context=get_context(_start_method()),
            initializer=_process_init,
            initargs=(context,),
        ) as pool:
            in_flight: dict[Future[list[tuple[EpisodeOutcome, bytes | None]]], int] = {}
            queue: Iterator[list[EpisodeSpec]] = iter(todo)
            nxt = next(queue, None)
            try:
                while nxt is not None or in_flight:
                    while nxt is not None and (not in_flight or sum(in_flight.values()) + len(nxt) <= limit):
                        in_flight[pool.submit(_process_batch, nxt)] = len(nxt)
                        nxt = next(queue, None)
                    done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                    for future in done:
                        del in_flight[future]
                        for outcome, data in future.result():
                            deliver(outcome, data)
            except BaseException:
                for future in in_flight:
                    future.cancel()
                raise
