"""Golden traces: record an agent over task sets, find a trace's task again, replay from cassettes.

A golden directory, as `toolgym record` writes it:

    <out>/golden.json            manifest: protocol, seed, agent, cassette, and each task set by its
                                 one name, with its source (a registered set's name, or a path
                                 relative to <out>) and its digest: never an absolute path, so
                                 the folder replays wherever the same sets are registered
    <out>/cassette.sqlite        every tool response of the run (toolgym.recorder.cassette)
    <out>/<set>/<task>.seed<N>.jsonl   one golden trace per episode (header.golden = true)

`replay_traces` re-runs each trace's recorded agent outputs on a fresh env whose tools answer
only from the cassette (strict replay), writes the new traces and compares them byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from toolgym.actions import ACTION_ADAPTER, Action
from toolgym.canonical import canonical_json
from toolgym.envs.agents import Agent, TaskScriptAgent, agent_factory  # noqa: F401  (TaskScriptAgent: its old home)
from toolgym.envs.agents import agent_name as name_of
from toolgym.envs.demo import bundled_task_sets
from toolgym.envs.faults import FaultLayer, FaultPlan, offered_tool_names
from toolgym.envs.perturb import PerturbLayer, PerturbPlan, distractor_pool, perturbation_of
from toolgym.envs.rollouts import load_object as rollout_object
from toolgym.envs.runner import (
    DEFAULT_VERBOSITY,
    EpisodeResult,
    Verbosity,
    header_reward_mode,
    header_strict_arguments,
    header_verbosity,
    run_episode,
    strict_arguments,
)
from toolgym.envs.task_sets import TaskSource, named_file, source_of
from toolgym.envs.tool_env import ToolEnv
from toolgym.envs.users import LLMUser, UserLLM
from toolgym.errors import ArgumentError, InfraError
from toolgym.files import write_atomically
from toolgym.protocols.base import ActionProtocol, RawOutput
from toolgym.recorder.cassette import Cassette, CassetteMode, CassetteStats
from toolgym.tasks import Task, TaskSet
from toolgym.tools import ToolSet
from toolgym.trace import ModelRequest, Trace, read_trace

MANIFEST = "golden.json"
CASSETTE_NAME = "cassette.sqlite"

AgentFactory = Callable[[ActionProtocol], Agent]


class GoldenManifest(BaseModel):
    """What a golden directory was recorded with. Format 1 (before issue 36) named each set by
    its file's stem and stored its absolute path; it is still read."""

    format: int = 2
    protocol: str
    seed: int | None
    agent: str
    cassette: str | None = Field(default=None, description="cassette file, relative to the manifest")
    sets: dict[str, TaskSource | str] = Field(
        default_factory=dict, description="set name -> its source and digest (format 1: its file)"
    )

    def save(self, directory: Path) -> Path:
        path = directory / MANIFEST
        write_atomically(path, canonical_json(self.model_dump(mode="json")) + "\n")
        return path

    @classmethod
    def load(cls, directory: Path) -> GoldenManifest | None:
        path = directory / MANIFEST
        if not path.is_file():
            return None
        return cls.model_validate_json(path.read_text(encoding="utf-8"))


# ---- agents ----------------------------------------------------------------------------------------
def load_object(spec: str, what: str) -> Callable[..., Any]:
    """The callable named by `package.module:attr`, imported (never evaluated); the current
    directory is importable, as with uvicorn's `module:app`."""
    found = rollout_object(spec, what)
    if not callable(found):
        raise ValueError(f"{what} {spec!r}: {spec.partition(':')[2]} is not callable")
    return found  # type: ignore[no-any-return]


class TraceAgent:
    """Plays back what a trace's agent said: each step's raw output, or its parsed actions where
    the agent returned Action objects. Named like the recorded agent so the new trace's header
    is the same."""

    def __init__(self, trace: Trace) -> None:
        self.name = trace.header.agent
        self.outputs = [trace_output(step.raw, step.actions) for step in trace.steps]
        # what an LLM agent sent its model, given back so the replayed trace keeps it too
        self.requests = [step.request for step in trace.steps]
        self.turn_request: ModelRequest | None = None
        self._next = 0

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        self._next = 0

    def act(self, observation: str, info: dict[str, Any]) -> RawOutput | Action:
        if self._next >= len(self.outputs):
            raise TraceExhausted(f"the trace has {len(self.outputs)} steps; the env wants more")
        out = self.outputs[self._next]
        self.turn_request = self.requests[self._next]
        self._next += 1
        # parallel actions recorded without raw output go back as a list, which ToolEnv.step takes
        return out


class TraceExhausted(IndexError):
    """The env asked for more steps than the trace holds (a partial trace, or drift)."""


def trace_output(raw: Any, actions: Sequence[dict[str, Any]]) -> RawOutput | Action | list[Action]:
    if raw is not None:
        return raw  # type: ignore[no-any-return]
    parsed = [ACTION_ADAPTER.validate_python(a) for a in actions]
    if len(parsed) == 1:
        return parsed[0]
    return parsed if parsed else ""


# ---- finding tasks ---------------------------------------------------------------------------------
class TaskIndex:
    """Task sets by name (the stem of their file, as `toolgym record` names its folders) and by id."""

    def __init__(self, paths: Iterable[Path | str] = ()) -> None:
        self.sets: dict[str, TaskSet] = {}
        for p in paths:
            self.add(Path(p))

    def add(self, path: Path, name: str | None = None) -> None:
        self.sets.setdefault(name or named_file(path).name, TaskSet.load(path))

    def find(self, task_id: str, set_name: str | None = None) -> tuple[str, TaskSet, Task]:
        if set_name is not None and set_name in self.sets and task_id in self.sets[set_name]:
            return set_name, self.sets[set_name], self.sets[set_name][task_id]
        found = [(n, ts) for n, ts in self.sets.items() if task_id in ts]
        if not found:
            raise KeyError(f"task {task_id!r} is in none of the task sets {sorted(self.sets)}")
        if len(found) > 1:
            raise KeyError(f"task {task_id!r} is in several task sets {[n for n, _ in found]}; pass one")
        name, ts = found[0]
        return name, ts, ts[task_id]

    @classmethod
    def for_traces(cls, roots: Path | Iterable[Path] | None, extra: Iterable[Path] = ()) -> TaskIndex:
        """`extra` task sets, plus those named in the manifests of the golden directories `roots`."""
        index = cls()
        for p in extra:
            index.add(p)
        for root in [roots] if isinstance(roots, Path) else list(roots or []):
            manifest = GoldenManifest.load(root)
            for name, recorded in (manifest.sets if manifest else {}).items():
                path = None if name in index.sets else golden_set_path(root, name, recorded)
                if path is not None:
                    index.add(path, name)
        return index


def golden_set_path(root: Path, name: str, recorded: TaskSource | str) -> Path | None:
    """The file of a set a golden directory's manifest names, when it still holds the bytes that
    were recorded (TaskSourceError, one line naming the set and both digests, otherwise). A
    format-1 entry (an absolute path where it was recorded) is that file if it is there, else the
    set registered under its name, else None."""
    if isinstance(recorded, TaskSource):
        return recorded.checked_path(
            root,
            by="the golden recording",
            advice="its traces would not replay as recorded; record them again (toolgym record), "
            "or give --tasks to use it anyway",
        )
    path = Path(recorded) if Path(recorded).is_absolute() else root / recorded
    return path if path.is_file() else bundled_task_sets().get(name)


def find_traces(paths: Iterable[Path]) -> Iterator[Path]:
    """Trace files: the paths themselves, or every *.jsonl under a directory (sorted)."""
    for p in paths:
        if p.is_dir():
            yield from sorted(q for q in p.rglob("*.jsonl") if q.is_file())
        else:
            yield p


def golden_roots(paths: Sequence[Path]) -> list[Path]:
    """The golden directories the paths belong to (the nearest holding a manifest), in order."""
    roots: list[Path] = []
    for p in paths:
        for d in [p, *p.parents] if p.is_dir() else list(p.parents):
            if (d / MANIFEST).is_file():
                if d not in roots:
                    roots.append(d)
                break
    return roots


# ---- record ----------------------------------------------------------------------------------------
@dataclass
class RecordReport:
    results: list[tuple[str, EpisodeResult]] = field(default_factory=list)
    stats: CassetteStats = field(default_factory=CassetteStats)
    manifest: Path | None = None


def record_golden(
    task_paths: Sequence[Path],
    out: Path,
    *,
    toolset: ToolSet,
    agent: str = "oracle",
    protocol: str = "react",
    seed: int | None = 0,
    mode: CassetteMode = "record",
    cassette_path: Path | None = None,
    on_episode: Callable[[str, EpisodeResult], None] | None = None,
    faults: FaultPlan | None = None,
    user_llm: UserLLM | None = None,
    verbosity: Verbosity = DEFAULT_VERBOSITY,
) -> RecordReport:
    """Run the agent over every task; write golden traces, the cassette and the manifest.
    `faults`: a fault plan outside the cassette; the traces' headers name it and replay re-injects it.
    `verbosity`: which events of a task with events notify the agent; the headers name one other
    than the default, and replay re-runs at it.
    `user_llm`: an LLM plays the user of tasks with a scenario (default: rule-based); its calls go
    into the cassette, and the traces' headers name it (`llm:<model>`), so replay answers them from
    the cassette alone."""
    make_agent = agent_factory(agent)
    known: list[str] = []
    if faults is not None:  # a plan naming no tool of any set stops here, before anything is written
        known = offered_tool_names(toolset, [t for path in task_paths for t in TaskSet.load(path)])
        faults.check_tools(known)
    out.mkdir(parents=True, exist_ok=True)
    cassette_file = cassette_path or out / CASSETTE_NAME
    report = RecordReport()
    sets: dict[str, TaskSource | str] = {}
    agent_name = agent
    bundled = bundled_task_sets()
    with Cassette(cassette_file if mode != "live" else None, mode=mode) as cassette:
        for path in task_paths:
            task_set = TaskSet.load(path)
            named = named_file(path, bundled)  # the set's one name, as run and demo name it
            set_name = named.name
            sets[set_name] = source_of(named, relative_to=out)
            user = LLMUser(cassette.wrap_user_llm(user_llm)) if user_llm is not None else None
            env = ToolEnv(
                toolset, task_set, protocol=protocol, cassette=cassette, user=user, verbosity=verbosity
            )
            if faults is not None:
                env.add_tool_layer(FaultLayer(faults, known_tools=known))
            episode_agent = make_agent(env.protocol)
            agent_name = name_of(episode_agent)
            try:
                for task in task_set:
                    result = run_episode(
                        env, episode_agent, task, seed=seed, trace_dir=out / set_name, golden=True
                    )
                    report.results.append((set_name, result))
                    if on_episode is not None:
                        on_episode(set_name, result)
            finally:
                env.close()
        report.stats = cassette.stats
    cassette_ref: str | None = None
    if mode != "live":
        try:
            cassette_ref = str(cassette_file.resolve().relative_to(out.resolve()))
        except ValueError:
            cassette_ref = str(cassette_file.resolve())
    manifest = GoldenManifest(
        protocol=protocol,
        seed=seed,
        agent=agent_name,
        cassette=cassette_ref,
        sets=sets,
    )
    report.manifest = manifest.save(out)
    return report


# ---- re-running a trace ----------------------------------------------------------------------------
class RecordedUserLLM:
    """The user LLM a trace was recorded with (`env_config["user"] == "llm:<model>"`), reachable
    only through a cassette: replay and verify never call a user endpoint, so a call the cassette
    does not answer fails as an infra error."""

    def __init__(self, model: str) -> None:
        self.model = model

    def chat(self, messages: Sequence[Mapping[str, str]], *, seed: int | None) -> str:
        raise InfraError(
            f"the user LLM {self.model} is not called when re-running a trace: only a cassette answers it"
        )


def trace_user(trace: Trace, cassette: Cassette | None) -> LLMUser | None:
    """The simulator that re-plays the trace's user: its LLM user answered from the cassette; None
    (the env's own choice, rule-based or scripted) for any other user."""
    name = trace.header.env_config.get("user")
    if not isinstance(name, str) or not name.startswith("llm:"):
        return None
    llm: UserLLM = RecordedUserLLM(name.removeprefix("llm:"))
    return LLMUser(cassette.wrap_user_llm(llm) if cassette is not None else llm)


class EnvPool:
    """One ToolEnv per (task set, protocol, max_steps, ...: what the trace's header says it ran
    with), reused across traces."""

    def __init__(self, toolset: ToolSet, cassette: Cassette | None = None) -> None:
        self.toolset = toolset
        self.cassette = cassette
        self._envs: dict[tuple[int, str, int, str, str, str, str, str], ToolEnv] = {}

    def env_for(self, task_set: TaskSet, trace: Trace) -> ToolEnv:
        """The env to re-run `trace` in; ArgumentError for a header this version cannot use (a
        fault plan, a verbosity or a reward mode it does not know)."""
        max_steps = int(trace.header.env_config.get("max_steps", 10))
        verbosity = header_verbosity(trace.header.env_config)  # the events that notified the agent
        reward_mode = header_reward_mode(trace.header.env_config)  # its step rewards and milestone scores
        # an episode recorded under fault plans is re-run under them, outside the cassette
        plans = [FaultPlan.parse(p) for p in trace.header.env_config.get("faults") or []]
        # ... and one under a tool-schema perturbation sees the tools as it saw them (outermost)
        perturbation = perturbation_of(trace)
        perturb = PerturbPlan.parse(perturbation.get("plan")) if perturbation is not None else None
        key = (
            id(task_set),
            trace.header.protocol,
            max_steps,
            canonical_json([p.model_dump() for p in plans]),
            str(trace.header.env_config.get("user")),
            canonical_json(perturb.model_dump() if perturb is not None else None),
            verbosity,
            reward_mode,
        )
        if key not in self._envs:
            self._envs[key] = ToolEnv(
                self.toolset,
                task_set,
                protocol=trace.header.protocol,
                max_steps=max_steps,
                cassette=self.cassette,
                user=trace_user(trace, self.cassette),
                verbosity=verbosity,
                reward_mode=reward_mode,
            )
            for plan in plans:
                known = offered_tool_names(self.toolset, list(task_set))
                self._envs[key].add_tool_layer(FaultLayer(plan, known_tools=known))
            if perturb is not None:
                pool = distractor_pool(self.toolset) if perturb.distractors else []
                self._envs[key].add_tool_layer(PerturbLayer(perturb, pool=pool))
        return self._envs[key]

    def close(self) -> None:
        for env in self._envs.values():
            env.close()
        self._envs.clear()


def resolve_cassette(root: Path | None, explicit: Path | None) -> Path | None:
    if explicit is not None:
        return explicit
    manifest = GoldenManifest.load(root) if root is not None else None
    if manifest is None or manifest.cassette is None or root is None:
        return None
    p = Path(manifest.cassette)
    return p if p.is_absolute() else root / p


@dataclass
class ReplayedEpisode:
    golden: Path
    replayed: Path | None
    identical: bool
    steps: int
    error: str | None = None


@dataclass
class ReplayReport:
    episodes: list[ReplayedEpisode] = field(default_factory=list)
    stats: CassetteStats = field(default_factory=CassetteStats)

    @property
    def steps(self) -> int:
        return sum(e.steps for e in self.episodes)

    @property
    def identical(self) -> int:
        return sum(e.identical for e in self.episodes)

    @property
    def ok(self) -> bool:
        return (
            self.stats.live_calls == 0
            and self.stats.misses == 0
            and self.identical == len(self.episodes)
            and bool(self.episodes)
        )


def replay_traces(
    traces: Sequence[Path],
    cassette: Cassette,
    out: Path,
    *,
    toolset: ToolSet,
    index: TaskIndex,
    pool: EnvPool | None = None,
) -> ReplayReport:
    """Re-run each trace from the cassette (its mode decides: `replay` for a proof) and compare
    the new trace with the old one byte for byte."""
    report = ReplayReport(stats=cassette.stats)
    own_pool = pool is None
    envs = pool or EnvPool(toolset, cassette)
    try:
        for path in traces:
            report.episodes.append(_replay_one(path, out, envs, index))
    finally:
        if own_pool:
            envs.close()
    return report


def _replay_one(path: Path, out: Path, envs: EnvPool, index: TaskIndex) -> ReplayedEpisode:
    try:
        trace = read_trace(path)
        set_name, task_set, task = index.find(trace.header.task_id, path.parent.name)
    except (ValueError, KeyError) as exc:
        return ReplayedEpisode(golden=path, replayed=None, identical=False, steps=0, error=str(exc))
    try:
        env = envs.env_for(task_set, trace)
        strict = header_strict_arguments(trace.header.env_config)
    except ArgumentError as exc:  # a header whose plan, verbosity or reward mode this version cannot use
        return ReplayedEpisode(golden=path, replayed=None, identical=False, steps=0, error=exc.message)
    try:
        with strict_arguments(strict):  # as it ran: its header then says so again
            result = run_episode(
                env,
                TraceAgent(trace),
                task,
                seed=trace.header.seed,
                trace_dir=out / set_name,
                golden=trace.header.golden,
            )
    except TraceExhausted as exc:
        return ReplayedEpisode(golden=path, replayed=None, identical=False, steps=0, error=str(exc))
    replayed = result.trace_path
    same = replayed is not None and replayed.read_bytes() == path.read_bytes()
    return ReplayedEpisode(golden=path, replayed=replayed, identical=same, steps=result.steps)
