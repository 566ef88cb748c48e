"""`toolgym check`: whether a task can be trusted, before any agent is scored on it.

For every task: its schema (`toolgym.tasks.read_task_file`); every app, tool, file, table and
column it names exists (an event's calls are APIs of the task's apps, its `when` fact names the
world's tables and columns); its golden chain replays on a fresh world with no unexpected error
(a dynamic task's as its episode runs it: events fire in simulated time, each call of theirs must
succeed), twice,
to the same state hash (an app that reads the wall clock, `random` or uuid4 shows up here); every
`expected_state` assertion holds after the chain and fails on the untouched world (one that holds
already cannot fail); its answer's whitelist groups are non-empty and found in the golden final
answer, its blacklist aliases are not; and the oracle passes, run as `toolgym run --agent oracle`
runs it (the real env, runner and reward). `check_app` runs once for every app the tasks use.

Each problem is a `TaskProblem` (`file:line: task_id: message`). The checker keeps what tasks share
(the registered tools, the apps' verdicts, a world per app set, an env per task folder), so
`check_tasks` over thousands of generated tasks costs a few milliseconds a task:

    from toolgym.authoring.check import check_tasks
    problems = check_tasks(tasks)          # [] when every task can be trusted
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError

from toolgym.actions import ToolCall
from toolgym.tasks import (
    StateFact,
    Task,
    TaskProblem,
    golden_final_answer,
    read_task_file,
    suggestion,
    task_problem,
    validation_lines,
)

if TYPE_CHECKING:
    from toolgym.envs.tool_env import ToolEnv
    from toolgym.mocks.app import App
    from toolgym.mocks.rewards import StateAssertion
    from toolgym.mocks.world import MockWorld
    from toolgym.tools import ToolSet

# the seed `toolgym run` and `toolgym demo` give an episode when not told (RunConfig.seed)
ORACLE_SEED = 0
GOLDEN_REPLAYS = 2  # fresh-world replays whose end states must be equal
BLIND_SCORES = ("answer", "assertions")  # what an agent missing a dynamic task's point is judged on
SIMULATED = "simulated:"  # apps that are libraries known by their docs (toolgym.mocks.simulated)


def _assertion_adapter() -> TypeAdapter[StateAssertion]:
    from toolgym.mocks.rewards import StateAssertion

    return TypeAdapter(StateAssertion)


@dataclass
class _Names:
    """What a task's names resolve to: its app classes, the tools it may call, its assertions."""

    apps: list[type[App]] = field(default_factory=list)
    tools: set[str] = field(default_factory=set)
    assertions: list[StateAssertion] = field(default_factory=list)


class TaskChecker:
    """Checks tasks one at a time, keeping what they share: the registered tools (`toolset`,
    default: `toolgym tools`' set), each app's `check_app` verdict, a world per app set (reset per
    task: O(changes)) and an env per task folder for the oracle. `oracle=False` skips the oracle's
    episode (the other checks cover what it would find but for the reward function itself)."""

    def __init__(self, *, toolset: ToolSet | None = None, oracle: bool = True) -> None:
        if toolset is None:
            from toolgym.toolservers.registry import default_toolset

            toolset = default_toolset()
        self.toolset = toolset
        self.oracle = oracle
        self._apps_checked: set[str] = set()
        self._worlds: dict[tuple[str, ...], MockWorld | str] = {}  # a world, or why none is made
        self._envs: dict[Path, ToolEnv] = {}
        self._assertion = _assertion_adapter()

    # ---- the whole task ----------------------------------------------------------------------
    def check_task(self, task: Task, base_dir: Path | str = ".") -> list[TaskProblem]:
        """What is wrong with one task (empty: nothing); file paths are relative to `base_dir`."""
        base = Path(base_dir)
        names = _Names()
        messages = list(self._name_problems(task, base, names))
        messages += self._answer_problems(task)
        if not messages and task.golden and task.apps:
            messages += self._world_problems(task, names)
        if not messages and task.golden and self.oracle:
            messages += self._oracle_problems(task, base)
        return [task_problem(task, m) for m in messages]

    def check_apps(self, tasks: Iterable[Task]) -> list[TaskProblem]:
        """`check_app`'s problems for every app the tasks use that this checker has not checked
        yet, each named with the app and the first task that uses it."""
        from toolgym.mocks.world import check_app

        problems: list[TaskProblem] = []
        for task in tasks:
            for name in task.apps or ():
                if name in self._apps_checked:
                    continue
                self._apps_checked.add(name)
                cls = self._app(name)
                if cls is None or name.startswith(SIMULATED):
                    continue  # an unknown app is the task's problem; a simulated library has no seeder
                for message in check_app(cls, seed=task.seed, clock=task.clock):
                    problems.append(task_problem(task, f"app {name!r}: {message}"))
        return problems

    def close(self) -> None:
        for world in self._worlds.values():
            if not isinstance(world, str):
                world.close()
        for env in self._envs.values():
            env.close()
        self._worlds.clear()
        self._envs.clear()

    def __enter__(self) -> TaskChecker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- names ---------------------------------------------------------------------------------
    def _app(self, name: str) -> type[App] | None:
        from toolgym.mocks.apps import get_app

        try:
            return get_app(name)
        except (KeyError, ValueError):
            return None

    def _world(self, apps: Sequence[str]) -> MockWorld | str:
        """The world of an app set (built once, reset by whoever uses it), or why it cannot be."""
        from toolgym.mocks.world import MockWorld

        key = tuple(apps)
        if key not in self._worlds:
            try:
                self._worlds[key] = MockWorld(key)
            except (ValueError, KeyError) as exc:
                self._worlds[key] = f"its apps make no world: {_one_line(exc)}"
        return self._worlds[key]

    def _name_problems(self, task: Task, base: Path, names: _Names) -> Iterator[str]:
        """Apps, tools (offered and called), files, and the tables and columns of assertions."""
        from toolgym.mocks.apps import ALL_APPS

        for name in task.apps or ():
            cls = self._app(name)
            if cls is None:
                yield f"unknown app {name!r}{suggestion(name, ALL_APPS)}"
            else:
                names.apps.append(cls)
        world: MockWorld | None = None
        names.tools = set(self.toolset.names)
        if task.apps and len(names.apps) == len(task.apps):
            made = self._world(task.apps)
            if isinstance(made, str):
                yield made
            else:
                world = made
                names.tools.update(world.tools.names)
        if len(names.apps) != len(task.apps or ()) or (task.apps and world is None):
            return  # the tools and tables a task names are its world's: unknown until it exists
        yield from self._event_problems(task, world)
        names.tools.update(_env_tools(task))
        yield from self._tool_problems(task, names.tools)
        for f in task.files:
            if not (base / f.path).is_file():
                yield f"file {f.name!r} not found: {base / f.path}"
        yield from self._assertion_problems(task, world, names)

    def _tool_problems(self, task: Task, known: set[str]) -> Iterator[str]:
        unknown = [name for name in task.tools or () if name not in known]
        for name in unknown:
            yield f"unknown tool {name!r}{suggestion(name, known)}"
        # a misspelt tools list leaves the golden calls it meant unoffered: one mistake, one line
        offered = known if task.tools is None or unknown else set(task.tools) | _env_tools(task)
        for index, step in enumerate(task.golden):
            call = step.action
            if not isinstance(call, ToolCall):
                continue
            if call.name not in known:
                yield f"golden step #{index} calls unknown tool {call.name!r}{suggestion(call.name, known)}"
            elif call.name not in offered:
                yield f"golden step #{index} calls {call.name!r}, which the task does not offer (its tools list)"

    def _event_problems(self, task: Task, world: MockWorld | None) -> Iterator[str]:
        """Each event's calls name APIs of the task's apps (the environment calls the apps, never
        the agent's other tools), and its `when` fact a table and columns the world has."""
        apis = set(world.tools.names) if world is not None else set()
        for event in task.events or ():
            for index, made in enumerate(event.calls):
                if made.tool not in apis:
                    apps = ", ".join(task.apps or ()) or "none"
                    yield (
                        f"event {event.id!r} call #{index} names {made.tool!r}, which is no API of the task's "
                        f"apps ({apps}){suggestion(made.tool, apis)}"
                    )
            if event.when is not None:
                yield from self._fact_problems(f"event {event.id!r}: its `when` fact", event.when, world)
        writes = [
            s.action.name
            for s in task.golden
            if isinstance(s.action, ToolCall)
            and s.action.name in apis
            and world is not None
            and world.tools.get(s.action.name).mutates_state
        ]
        if task.dynamic and writes and not task.expected_state:
            # the clock is state and moves at the agent's pace: no end state can equal the golden one,
            # so the state reward is the assertions alone, and none would pass every end state
            yield (
                f"a task with events or a time policy is judged by its expected_state, and it has none "
                f"(its golden chain writes: {', '.join(dict.fromkeys(writes))})"
            )

    def _fact_problems(self, what: str, fact: StateFact, world: MockWorld | None) -> Iterator[str]:
        if world is None:
            yield f"{what} needs a world: the task names no apps"
            return
        info = world.store.tables.get(fact.table)
        if info is None or info.internal:
            yield f"{what} names unknown table {fact.table!r}{suggestion(fact.table, world.table_names)}"
            return
        for column in [*fact.where, *fact.values]:
            if column not in info.columns:
                yield f"{what}: table {fact.table!r} has no column {column!r}{suggestion(column, info.columns)}"

    def _assertion_problems(self, task: Task, world: MockWorld | None, names: _Names) -> Iterator[str]:
        """Each assertion parsed on its own (a bad kind named with its index), then its table,
        `where` columns and `field` checked against the world's tables."""
        if task.expected_state and world is None:
            yield "expected_state needs a world: the task names no apps"
            return
        for index, raw in enumerate(task.expected_state):
            try:
                assertion = self._assertion.validate_python(raw)
            except ValidationError as exc:  # read from a file it would not be: a task built in memory
                yield "; ".join(validation_lines(exc.errors(), within=("expected_state", index)))
                continue
            assert world is not None
            info = world.store.tables.get(assertion.table)
            if info is None or info.internal:
                tables = world.table_names
                yield (
                    f"expected_state[{index}]: unknown table {assertion.table!r}"
                    f"{suggestion(assertion.table, tables)}; tables: {', '.join(tables)}"
                )
                continue
            columns = [*assertion.where, *([assertion.field] if hasattr(assertion, "field") else [])]
            unknown = [c for c in columns if c not in info.columns]
            for column in unknown:
                yield (
                    f"expected_state[{index}]: table {assertion.table!r} has no column {column!r}"
                    f"{suggestion(column, info.columns)}"
                )
            if not unknown:
                names.assertions.append(assertion)

    # ---- answers -------------------------------------------------------------------------------
    def _answer_problems(self, task: Task) -> Iterator[str]:
        """Whitelist groups non-empty and found in the golden final answer; blacklist aliases not."""
        from toolgym.tasks import alias_found

        spec = task.answer
        if spec is None:
            return
        whitelist, blacklist = spec.whitelist, spec.blacklist or []
        if whitelist is not None and not whitelist:
            yield "answer.whitelist is empty: no answer can match it"
        for group_index, group in enumerate(whitelist or []):
            if not any(alias.strip() for alias in group):
                yield f"answer.whitelist[{group_index}] is empty: no answer can match it"
        if not task.golden:
            return  # nothing to hold the answer spec against
        final = golden_final_answer(task)
        if final is None:
            if whitelist:
                yield "the golden chain gives no final answer, so no answer matches the whitelist"
            return
        for group_index, group in enumerate(whitelist or []):
            if any(alias.strip() for alias in group) and not any(alias_found(final, a) for a in group):
                yield f"answer.whitelist[{group_index}] {group!r} is not found in the golden final answer"
        for group in blacklist:
            for alias in group:
                if alias_found(final, alias):
                    yield f"answer.blacklist alias {alias!r} is found in the golden final answer"

    # ---- the world: golden replays and assertions ---------------------------------------------
    def _world_problems(self, task: Task, names: _Names) -> list[str]:
        """The chain replayed twice from the seeded state (no unexpected failure, the same
        results and end state both times), each assertion false before it and true after it.
        One world per app set, reset to the task's seed and clock before each replay, as the env
        resets it before each episode: O(changes), where a new world costs ~20x more."""
        from toolgym.mocks.rewards import GoldenReplayError, check_assertions

        assert task.apps is not None
        world = self._world(task.apps)
        assert not isinstance(world, str)  # _name_problems made it
        world.reset(seed=task.seed, clock=task.clock)
        held_before = [check_assertions(world, [a]).passed for a in names.assertions]
        runs: list[tuple[list[Any], str]] = []
        try:
            for replay in range(GOLDEN_REPLAYS):
                if replay:
                    world.reset(seed=task.seed, clock=task.clock)
                runs.append((_replay(world, task), world.state_hash()))
                if replay == 0:
                    after = [check_assertions(world, [a]).results[0] for a in names.assertions]
        except GoldenReplayError as exc:
            which = "the golden chain" if not runs else "the golden chain's second replay"
            return [f"{which} fails on a fresh world: {_one_line(exc)}"]
        except EventCallFailed as exc:
            return [f"during the golden chain, {_one_line(exc)}"]
        messages: list[str] = []
        if runs[0][1] != runs[1][1] or runs[0][0] != runs[1][0]:
            what = "end states" if runs[0][1] != runs[1][1] else "results"
            messages.append(
                f"the golden chain is not deterministic: two replays from the seeded state give different "
                f"{what} (does an app read the wall clock, `random` or uuid4 instead of its clock and rng?)"
            )
        for index, (assertion, result, before) in enumerate(
            zip(names.assertions, after, held_before, strict=True)
        ):
            if not result.passed:
                messages.append(
                    f"expected_state[{index}] ({_describe(assertion)}) does not hold after the golden chain: "
                    f"{result.detail}"
                )
            elif before:
                messages.append(
                    f"expected_state[{index}] ({_describe(assertion)}) cannot fail: it holds on the untouched "
                    "world already"
                )
        return messages

    # ---- the oracle ----------------------------------------------------------------------------
    def _env(self, base: Path) -> ToolEnv:
        from toolgym.envs.tool_env import ToolEnv
        from toolgym.tasks import TaskSet

        key = base.resolve()
        if key not in self._envs:
            # an empty task set: the task comes with each reset; its files are relative to `base`
            self._envs[key] = ToolEnv(self.toolset, TaskSet([], base_dir=base), protocol="react")
        return self._envs[key]

    def _oracle_problems(self, task: Task, base: Path) -> list[str]:
        """The oracle's episode, as `toolgym run --agent oracle` runs it: reward 1, or why not."""
        from toolgym.envs.agents import OracleAgent
        from toolgym.envs.milestones import summary_of
        from toolgym.envs.runner import run_episode

        env = self._env(base)
        try:
            result = run_episode(env, OracleAgent(env.protocol), task, seed=ORACLE_SEED)
        except Exception as exc:  # the task broke the episode: that is what is reported
            return [f"the oracle's episode fails: {type(exc).__name__}: {_one_line(exc)}"]
        messages: list[str] = []
        # a task without apps has no replay of its own: the oracle's episode is where its chain
        # runs, and its calls meant to fail are the only errors it may meet
        errors = sum(result.error_counts.values())
        expected = sum(1 for step in task.golden if step.expect_error is not None)
        if errors != expected:
            kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(result.error_counts.items()))
            messages.append(
                f"the oracle's episode meets {errors} errors ({kinds or 'none'}) where the golden chain "
                f"expects {expected} (expect_error)"
            )
        if result.reward < 1.0:
            parts = ", ".join(
                f"{name} {value:.2f}"
                for name, value in result.scores.items()
                if name in ("answer", "state", "state_match", "assertions", "golden_error")
            )
            why = parts or "nothing scores it: the task has no answer spec and changes no state"
            messages.append(f"the oracle scores {result.reward:.2f} ({why})")
        checks = env.checks  # the task's own milestones and minefields, run with the oracle's episode
        if checks is not None and checks.milestones and checks.progress < 1.0:
            messages.append(
                f"the oracle reaches {100 * checks.progress:.0f}% of the milestones "
                f"(first missed: {checks.first_missed()})"
            )
        if checks is not None and checks.hits:
            messages.append(f"the oracle hits minefields: {', '.join(summary_of(checks).hits)}")
        return messages

    # ---- a dynamic task's point ---------------------------------------------------------------
    def blind_passes(self, task: Task, base_dir: Path | str = ".") -> list[str]:
        """Which agents that miss a dynamic task's point still pass it (`toolgym.envs.timed_chain.
        blind_chains`: one that ignores its notifications, one that never waits), each run as a
        scripted agent in the real env. One passes when its answer and state assertions score 1,
        it reaches every milestone and hits no minefield: the state hash is left out, since it
        covers the clock, which a shorter chain never ends on, what it did right or wrong. Empty:
        none passes, so the task tests what its events are for."""
        from toolgym.envs.agents import ScriptedAgent
        from toolgym.envs.runner import run_episode
        from toolgym.envs.timed_chain import blind_chains

        if not task.dynamic or not task.apps or not task.golden:
            return []
        world = self._world(task.apps)
        if isinstance(world, str):
            return []
        world.reset(seed=task.seed, clock=task.clock)
        env = self._env(Path(base_dir))
        passing: list[str] = []
        for what, actions in blind_chains(world, task).items():
            try:
                result = run_episode(env, ScriptedAgent(env.protocol, actions), task, seed=ORACLE_SEED)
            except Exception:  # the cut-down chain broke the episode: it did not pass
                continue
            checks = env.checks
            reached = checks is None or not checks.milestones or checks.progress >= 1.0
            scored = [result.scores[k] for k in BLIND_SCORES if k in result.scores]
            if all(v >= 1.0 for v in scored) and reached and not (checks is not None and checks.hits):
                passing.append(f"an agent that {what} passes it")
        return passing


def _env_tools(task: Task) -> set[str]:
    """The tools the env offers a task beside its own: a dynamic task's `wait` and `current_time`."""
    from toolgym.mocks.events import TIMELINE_TOOLS

    return set(TIMELINE_TOOLS) if task.dynamic else set()


def _replay(world: MockWorld, task: Task) -> list[Any]:
    """The golden chain on `world` (`replay_calls`: GoldenReplayError for a call that fails
    unexpectedly, or succeeds where `expect_error` says it fails), and what its calls answered,
    to hold two replays against each other (a result's text renders its content). A dynamic
    task's chain runs as its episode does, its events firing in simulated time
    (`toolgym.envs.timed_chain.replay_timed`); an event call that fails when it fires is an
    EventCallFailed: the world did not change as the task says."""
    from toolgym.envs.timed_chain import replay_timed
    from toolgym.mocks.rewards import replay_calls

    if not task.dynamic:
        return [(obs.text, obs.error_kind) for obs in replay_calls(world, task.golden)]
    observations, fired = replay_timed(world, task)
    failed = [(e, c) for e in fired for c in e["calls"] if not c["ok"]]
    if failed:
        event, made = failed[0]
        raise EventCallFailed(
            f"event {event['id']!r} call {made['tool']} fails when it fires: {made.get('error')}"
        )
    return [(obs.text, obs.error_kind) for obs in observations] + [(e["id"], e["time"]) for e in fired]


class EventCallFailed(RuntimeError):
    """An event's app call failed when it fired during the golden replay."""


def _describe(assertion: StateAssertion) -> str:
    where = ", ".join(f"{k}={v!r}" for k, v in assertion.where.items())
    return f"{assertion.kind} {assertion.table}" + (f" where {where}" if where else "")


def _one_line(exc: BaseException) -> str:
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    return " ".join(text.split())


# ---- the Python API ------------------------------------------------------------------------------
def check_task(task: Task, base_dir: Path | str = ".", *, oracle: bool = True) -> list[TaskProblem]:
    """What is wrong with one task, its app checks included (empty: nothing)."""
    with TaskChecker(oracle=oracle) as checker:
        return [*checker.check_apps([task]), *checker.check_task(task, base_dir)]


def check_tasks(
    tasks: Iterable[Task],
    base_dir: Path | str = ".",
    *,
    oracle: bool = True,
    checker: TaskChecker | None = None,
) -> list[TaskProblem]:
    """What is wrong with in-memory tasks (a generator's, a file's), in their order: each task's
    problems, a task id given twice, and `check_app`'s for every app they use. Pass a `checker`
    to keep its worlds and envs across calls."""
    own = checker is None
    checker = checker if checker is not None else TaskChecker(oracle=oracle)
    tasks = list(tasks)
    try:
        problems = checker.check_apps(tasks)
        seen: dict[str, Task] = {}
        for task in tasks:
            if task.id in seen:
                problems.append(task_problem(task, f"task id given twice (also {_where(seen[task.id])})"))
                continue
            seen[task.id] = task
            problems.extend(checker.check_task(task, base_dir))
        return problems
    finally:
        if own:
            checker.close()


def _where(task: Task) -> str:
    origin = task.origin
    return f"line {origin[1]}" if origin is not None else "earlier"


# ---- task files and sets -------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckedSet:
    """One task file checked: the name it was asked for by, its tasks and their problems, and
    what was not checked (with why)."""

    name: str
    path: Path
    tasks: int
    problems: list[TaskProblem]
    notes: list[str]


def check_file(
    path: Path | str, name: str | None = None, *, checker: TaskChecker | None = None
) -> CheckedSet:
    """A task file checked: its schema problems (every bad line, the rest still read) and the
    problems of the tasks it holds, in line order."""
    path = Path(path)
    tasks, schema = read_task_file(path)
    problems = [*schema, *check_tasks(tasks, path.parent, checker=checker)]
    problems.sort(key=lambda p: p.line or 0)  # stable: a line's problems in the order found
    # a line the schema refused was meant as a task: counted among the file's tasks
    read = {t.origin[1] for t in tasks if t.origin is not None}
    refused = {p.line for p in schema if p.line is not None} - read
    return CheckedSet(name or path.stem, path, len(tasks) + len(refused), problems, _notes(tasks))


def _notes(tasks: Sequence[Task]) -> list[str]:
    """What could not be checked, with why: tasks without a golden chain (ToolEyes' tasks, whose
    suite scores the calls of the trace) get the schema and name checks only."""
    notes: list[str] = []
    unsolved = [t for t in tasks if not t.golden]
    if unsolved:
        notes.append(
            f"{len(unsolved)} of {len(tasks)} tasks have no golden chain: their schema, apps, tools, files "
            "and tables are checked; the golden replay, assertions, answer and oracle checks need a chain "
            "and are skipped for them"
        )
    simulated = sorted({a for t in tasks for a in t.apps or () if a.startswith(SIMULATED)})
    if simulated:
        notes.append(
            f"check_app is skipped for the {len(simulated)} simulated libraries the tasks use: their tools "
            "come from documentation, with no seeded tables to check"
        )
    return notes


def resolve_targets(values: Sequence[str]) -> list[tuple[str, Path]]:
    """(name, file) for each value: a task file, a registered set's name (`toolgym tasks`), or an
    installed package's name (every set it registers). ValueError names what is none of these."""
    from toolgym.envs.demo import TASK_SETS

    by_package: dict[str, list[str]] = {}
    for set_name in TASK_SETS:
        by_package.setdefault(_package_key(TASK_SETS.owner(set_name).package), []).append(set_name)
    targets: list[tuple[str, Path]] = []
    for value in values:
        path = Path(value)
        if path.is_file():
            targets.append((path.stem, path))
        elif value in TASK_SETS:
            targets.append((value, TASK_SETS[value]))
        elif _package_key(value) in by_package:
            targets.extend((n, TASK_SETS[n]) for n in by_package[_package_key(value)])
        else:
            raise ValueError(
                f"{value}: no such task file, registered set or package with task sets (sets: "
                f"{', '.join(TASK_SETS)}; packages: {', '.join(sorted(by_package))})"
            )
    return targets


def _package_key(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503: case, `-`, `_` and `.` alike)."""
    return "-".join(name.replace("_", "-").replace(".", "-").lower().split("-"))


def check_sets(targets: Sequence[tuple[str, Path]], *, oracle: bool = True) -> list[CheckedSet]:
    """Every target file checked with one checker (apps checked once across them all)."""
    with TaskChecker(oracle=oracle) as checker:
        return [check_file(path, name, checker=checker) for name, path in targets]


__all__ = [
    "CheckedSet",
    "TaskChecker",
    "check_file",
    "check_sets",
    "check_task",
    "check_tasks",
    "golden_final_answer",
    "resolve_targets",
]
