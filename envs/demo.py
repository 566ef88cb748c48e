"""The demo environment: the built-in offline tools, the bundled demo task set, and the registry of
task sets by name (`toolgym.tasks` entry points)."""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import queue
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib.resources import files as package_files
from pathlib import Path
from typing import Any

from toolgym.actions import ToolCall
from toolgym.envs.agents import OracleAgent
from toolgym.envs.rollouts import fork_is_safe
from toolgym.envs.runner import EpisodeResult, run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.plugins import Plugin, PluginError, Registry, call_factory
from toolgym.tasks import Task, TaskFileError, TaskSet, task_problem

log = logging.getLogger(__name__)


def demo_tasks_path() -> Path:
    return Path(str(package_files("toolgym.fixtures").joinpath("demo/tasks.jsonl")))


def mock_task_paths() -> list[Path]:
    """The bundled mock-app task sets (fixtures/mock_tasks/*.jsonl)."""
    root = Path(str(package_files("toolgym.fixtures"))) / "mock_tasks"
    return sorted(root.glob("*.jsonl"))


def default_task_paths() -> list[Path]:
    return [demo_tasks_path(), *mock_task_paths()]


def tooleyes_tasks_path() -> Path:
    """ToolEyes' 382 queries over its 95 simulated tool libraries (fixtures/tooleyes)."""
    return Path(str(package_files("toolgym.fixtures").joinpath("tooleyes/tasks.jsonl")))


def mock_task_sets() -> dict[str, Path]:
    """The bundled mock-app task sets by name (the file's stem)."""
    return {p.stem: p for p in mock_task_paths()}


# the behaviour-category sets (fixtures/categories, scripts/make_category_tasks.py): registered by
# name, never run by default (the demo and the counts of the mock-app sets stay as they were)
CATEGORY_SETS: dict[str, str] = {
    "insufficient-info": "insufficient_info.jsonl",
    "hidden-preconditions": "hidden_preconditions.jsonl",
    "canonicalization": "canonicalization.jsonl",
}


def category_task_sets() -> dict[str, Path]:
    """The behaviour-category task sets by name: `insufficient-info` (say it cannot be done),
    `hidden-preconditions` (change a state first, as a typed error says) and `canonicalization`
    (relative dates, units and names to the canonical arguments)."""
    root = Path(str(package_files("toolgym.fixtures"))) / "categories"
    return {name: root / file for name, file in CATEGORY_SETS.items()}


# the dynamic sets (fixtures/dynamic, scripts/make_dynamic_tasks.py): worlds that move while the
# agent works (events, simulated time, `wait`); registered by name, never run by default either
DYNAMIC_SETS: dict[str, str] = {
    "dynamic-at-time": "at_time.jsonl",
    "dynamic-world-changes": "world_changes.jsonl",
    "dynamic-wait-for-reply": "wait_for_reply.jsonl",
}


def dynamic_task_sets() -> dict[str, Path]:
    """The dynamic task sets by name: `dynamic-at-time` (act at or after a simulated time),
    `dynamic-world-changes` (adapt when the world changes mid-task) and `dynamic-wait-for-reply`
    (wait for a reply instead of polling or guessing, then act on it)."""
    root = Path(str(package_files("toolgym.fixtures"))) / "dynamic"
    return {name: root / file for name, file in DYNAMIC_SETS.items()}


def _task_sets_of(plugin: Plugin, loaded: Any) -> list[tuple[str, Path]]:
    """A `toolgym.tasks` entry point's sets: a task file's path (the set takes the entry point's
    name), a {name: path} mapping, or a callable returning either."""
    made = call_factory(loaded) if callable(loaded) else loaded
    named = dict(made) if isinstance(made, Mapping) else {plugin.name: made}
    for name, path in named.items():
        if not isinstance(path, str | os.PathLike) or not Path(path).is_file():
            raise PluginError(f"task set {name!r}: {path!r} is not a task file")
    return [(str(name), Path(path)) for name, path in named.items()]


# name -> task file: toolgym's sets and the installed packages' (entry points, read when first used)
TASK_SETS: Registry[Path] = Registry("tasks", _task_sets_of)


def bundled_task_sets() -> dict[str, Path]:
    """The registered task sets by name (`--tasks demo`, `--tasks mtu`, a plug-in's set, ...):
    the `toolgym.tasks` entry points. Only toolgym's demo and mock-app sets are run by default
    (`default_task_paths`); ToolEyes' 382 episodes, the behaviour-category sets, the dynamic sets
    and the plug-ins' sets when asked for."""
    return dict(TASK_SETS)


def benchmark_task_sets() -> dict[str, Path]:
    """The registered sets but the behaviour-category and dynamic ones: what the fine-tune and the
    baselines evaluate by default (toolgym's seven benchmark sets and the plug-ins' sets)."""
    kept_out = CATEGORY_SETS.keys() | DYNAMIC_SETS.keys()
    return {name: path for name, path in dict(TASK_SETS).items() if name not in kept_out}


def resolve_task_sets(given: list[str] | None) -> list[Path]:
    """Task set files from `--tasks` values: a bundled set's name or a file path (default:
    toolgym's default sets); `envs/task_sets.py` names them. ValueError names what is neither."""
    from toolgym.envs.task_sets import named_task_files  # it reads this module's registry

    return [named.path for named in named_task_files(given)]


def resolve_task_set(name_or_path: str | Path) -> TaskSet:
    """A bundled task set by name (`demo`, `mtu`, ...) or a task file; ValueError for neither."""
    (path,) = resolve_task_sets([str(name_or_path)])
    return TaskSet.load(path)


def make_demo_env(**kwargs: Any) -> ToolEnv:
    from toolgym.toolservers.registry import default_toolset

    return ToolEnv(default_toolset(), TaskSet.load(demo_tasks_path()), **kwargs)


class BrokenGoldenChain(TaskFileError):
    """Tasks whose golden chains do not replay as they say: no agent could score on them. One
    problem (a line: file:line: task id: the failing call) per task."""


def refuse_broken_golden(tasks: Iterable[Task]) -> None:
    """Before any episode of `run`, `record` and `demo`: a task whose golden chain fails
    unexpectedly on a fresh world (`golden_chain_problem`) would score every agent 0, so it is
    refused: a BrokenGoldenChain with a line per such task naming its file:line, its id and the
    failing call."""
    from toolgym.envs.rewards import golden_chain_problem

    broken = [
        (task, problem)
        for task in tasks
        if any(isinstance(step.action, ToolCall) for step in task.golden)  # else nothing to replay
        and (problem := golden_chain_problem(task)) is not None
    ]
    if broken:
        raise BrokenGoldenChain(
            [
                task_problem(
                    task,
                    f"{problem}: its golden chain does not replay as it says, so no agent could score"
                    " on it (`toolgym check` lists what is wrong)",
                )
                for task, problem in broken
            ]
        )


# ---- running the demo ------------------------------------------------------------------------------
# an episode's set (its index), its place in the set, its result
_Emit = Callable[[int, int, EpisodeResult], None]


@dataclass(frozen=True)
class DemoEpisode:
    """One finished demo episode: its task set's one name and its result."""

    set_name: str
    result: EpisodeResult


def run_demo(
    sets: Sequence[tuple[str, TaskSet]],
    out: Path,
    *,
    protocol: str = "react",
    seed: int = 0,
    jobs: int = 1,
    on_episode: Callable[[], None] | None = None,
) -> list[DemoEpisode]:
    """Runs every task of the named task sets with the oracle agent, writing one trace per episode
    under `out/<set name>/`; returns the episodes in the sets' order, whatever `jobs` is.

    With `jobs` > 1 the sets are run by that many forked processes, each taking the next set when
    it is free (sets of one name, whose traces share a folder, go together). Episodes
    do not depend on each other, so traces and results are those of one process. Forking needs
    Linux and a process with no other thread yet; elsewhere the sets run here, one after another.
    `on_episode` is called once per finished episode (a progress bar)."""
    from toolgym.toolservers.registry import default_toolset

    refuse_broken_golden(task for _, task_set in sets for task in task_set)
    groups: dict[str, list[int]] = {}
    for index, (name, _) in enumerate(sets):
        groups.setdefault(name, []).append(index)
    # whole sets, not tasks, are the unit: a set's tasks share its apps' templates and its tools'
    # engines (OCR's takes a second to load), which tasks spread over processes would pay again
    work = list(groups.values())
    toolset = default_toolset()

    def run_group(indices: list[int], emit: _Emit) -> None:
        for index in indices:
            name, task_set = sets[index]
            env = ToolEnv(toolset, task_set, protocol=protocol)
            try:
                agent = OracleAgent(env.protocol)
                for position, task in enumerate(task_set):
                    emit(index, position, run_episode(env, agent, task, seed=seed, trace_dir=out / name))
            finally:
                env.close()

    done: dict[tuple[int, int], EpisodeResult] = {}

    def keep(index: int, position: int, result: EpisodeResult) -> None:
        done[index, position] = result
        if on_episode is not None:
            on_episode()

    jobs = min(jobs, len(work))
    if not (jobs > 1 and fork_is_safe() and _run_forked(work, jobs, run_group, keep)):
        for indices in work:
            run_group(indices, keep)
    return [
        DemoEpisode(name, done[index, position])
        for index, (name, task_set) in enumerate(sets)
        for position in range(len(task_set))
    ]


def _run_forked(
    work: list[list[int]],
    jobs: int,
    run_group: Callable[[list[int], _Emit], None],
    keep: _Emit,
) -> bool:
    """Runs the groups of `work` on `jobs` forked processes, `keep` seeing every episode here;
    False, having run nothing, where the queues cannot be made (no working /dev/shm)."""
    context = multiprocessing.get_context("fork")
    try:
        todo: Any = context.SimpleQueue()  # put here, read there: no feeder thread in this process
        results: Any = context.Queue()
    except OSError as missing:
        log.info("running the task sets in one process: no process queues here (%s)", missing)
        return False

    def job(number: int) -> None:
        try:
            while (item := todo.get()) is not None:
                run_group(work[item], lambda i, p, r: results.put(("episode", i, p, r)))
        except BaseException as exc:  # everything goes back to the parent, which raises it
            results.put(("error", _picklable(exc), traceback.format_exc()))
        else:
            results.put(("done", number))
        # the process flushes its queue before it exits: a message is in the pipe before its exit code

    processes = [
        context.Process(target=job, args=(n,), name=f"toolgym-demo-{n}", daemon=True) for n in range(jobs)
    ]
    for process in processes:
        process.start()
    finished: set[int] = set()
    try:
        for item in range(len(work)):
            todo.put(item)
        for _ in processes:
            todo.put(None)
        while len(finished) < len(processes):
            try:
                message = results.get(timeout=0.2)
            except queue.Empty:
                _check_alive(processes, finished, results)
                continue
            if message[0] == "episode":
                keep(*message[1:])
            elif message[0] == "done":
                finished.add(message[1])
            else:
                _, error, where = message
                log.debug("a demo process failed:\n%s", where)
                raise error
    finally:
        # after a failure the others are stopped; after "done" a process only has its exit left
        for process in processes:
            process.join(timeout=30 if len(finished) == len(processes) else 0)
            if process.is_alive():
                process.terminate()
                process.join()
    return True


def _check_alive(processes: list[Any], finished: set[int], results: Any) -> None:
    """RuntimeError for a process that ended without saying so (killed, or os._exit in a tool).
    Its messages reach the pipe before its exit code is set, so the queue is looked at after."""
    for number, process in enumerate(processes):
        if number not in finished and process.exitcode is not None and results.empty():
            raise RuntimeError(
                f"a demo process ended (exit code {process.exitcode}) before its task sets did"
            )


def _picklable(exc: BaseException) -> BaseException:
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # an exception that cannot cross processes: say what it was
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc
