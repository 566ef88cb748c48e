"""Milestones and minefields: how far an agent got, and what it must never do, over every step.

A task's milestones (`toolgym.tasks.Milestone`) are facts to bring about: a row of the world with
some values, or a call; their `after` edges make a DAG. After every step the env scores each fact
on the world as it is then and on the step's calls (a similarity in [0, 1], column by column:
exact, close, contains, ROUGE-L; a row's similarity is the geometric mean of its columns', as in
Apple's ToolSandbox). Each milestone is then matched to one step, or to none, by the mapping with
the highest total similarity in which a milestone is never matched to a step before one it comes
`after`; progress is that total over the number of milestones. Minefields
(`toolgym.tasks.Minefield`) are facts that must never hold: one that holds fully after any step is
a hit, named with its step, and the episode's reward is 0 even if the agent undid it later.

A mock-app task that declares no milestones gets them from its golden chain (`derived_milestones`):
the effect of each write (rows added, removed, changed) and each read whose result the golden answer
quotes, ordered by the data that flows from one call's result into a later call's arguments.

The checks run inside `ToolEnv.step`, on the live world, so every rollout path (in process, the env
service, workers, Ray) computes them the same way and a replay of the trace computes them again.
"""

from __future__ import annotations

import dataclasses
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rapidfuzz.distance import LCSseq

from toolgym.actions import Action, ActionRecord, Observation, ObservationRecord, ToolCall
from toolgym.canonical import canonical_hash, canonical_json
from toolgym.tasks import (
    UNSPACED_SCRIPTS,
    CallFact,
    ColumnMatch,
    Milestone,
    Minefield,
    StateFact,
    Task,
    alias_found,
    golden_final_answer,
)
from toolgym.trace import Trace

if TYPE_CHECKING:
    from toolgym.mocks.world import MockWorld
    from toolgym.world import World


# ---- similarity of one value ---------------------------------------------------------------------
_UNSPACED = re.compile(f"[{UNSPACED_SCRIPTS}]")  # the scripts answers are matched in, too
_WORDS = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    """ROUGE's tokens: lower-cased runs of letters and digits; each Han, kana or Thai character
    is a token of its own (those scripts put no spaces between words). No stemming."""
    out: list[str] = []
    for run in _WORDS.findall(text.casefold()):
        if _UNSPACED.search(run) is None:
            out.append(run)
            continue
        start = 0
        for m in _UNSPACED.finditer(run):
            if m.start() > start:
                out.append(run[start : m.start()])
            out.append(m.group())
            start = m.end()
        if start < len(run):
            out.append(run[start:])
    return out


def rouge_l(reference: str, candidate: str) -> float:
    """ROUGE-L F1 of `candidate` against `reference`: the longest common subsequence of their
    words over each one's length, harmonic mean (1.0 for two texts without words)."""
    ref, cand = words(reference), words(candidate)
    if not ref or not cand:
        return float(ref == cand)
    common = LCSseq.similarity(ref, cand)
    if common == 0:
        return 0.0
    precision, recall = common / len(cand), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else canonical_json(value)


def value_similarity(
    expected: Any, actual: Any, how: ColumnMatch = "exact", tolerance: float = 0.01
) -> float:
    """How well `actual` matches `expected` under `how`, in [0, 1]."""
    x, y = _number(expected), _number(actual)
    if how == "close" and x is not None and y is not None:
        return float(abs(x - y) <= tolerance)
    if how == "contains":
        return float(_text(expected).casefold() in _text(actual).casefold())
    if how == "rouge_l":
        return rouge_l(_text(expected), _text(actual))
    if x is not None and y is not None:
        return float(x == y)  # 5 and 5.0 are one number
    return float(canonical_json(expected) == canonical_json(actual))


def columns_similarity(
    expected: Mapping[str, Any], actual: Mapping[str, Any], match: Mapping[str, ColumnMatch], tolerance: float
) -> float:
    """The geometric mean of the expected columns' similarities (1.0 when none is expected; 0 when
    any is 0, so one wrong column is a wrong row, as in ToolSandbox)."""
    if not expected:
        return 1.0
    product = 1.0
    for name, value in expected.items():
        if name not in actual:
            return 0.0
        product *= value_similarity(value, actual[name], match.get(name, "exact"), tolerance)
        if product == 0.0:
            return 0.0
    return float(product ** (1 / len(expected)))


# ---- similarity of one fact after a step ---------------------------------------------------------
@dataclass(frozen=True)
class CallSeen:
    """A call a step made: its tool, arguments and whether it succeeded."""

    name: str
    arguments: Mapping[str, Any]
    ok: bool


def step_calls(
    actions: Sequence[Action | ActionRecord], observations: Sequence[Observation | ObservationRecord]
) -> list[CallSeen]:
    """The calls a step ran, each with its outcome: the env appends one observation per action it
    runs, in order (a step that did not parse ran nothing)."""
    seen: list[CallSeen] = []
    for action, obs in zip(actions, observations, strict=False):
        if action.type == "tool_call":
            name = action.name if isinstance(action, (ToolCall, ActionRecord)) else ""
            arguments = action.arguments if isinstance(action, (ToolCall, ActionRecord)) else {}
            seen.append(CallSeen(name=name, arguments=arguments, ok=obs.error is None))
    return seen


def call_similarity(fact: CallFact, calls: Iterable[CallSeen]) -> float:
    """The best of the step's calls of `fact.tool` with the outcome asked for."""
    best = 0.0
    for call in calls:
        if (
            call.name != fact.tool
            or (fact.outcome == "ok" and not call.ok)
            or (fact.outcome == "error" and call.ok)
        ):
            continue
        best = max(best, columns_similarity(fact.arguments, call.arguments, fact.match, fact.tolerance))
    return best


def state_similarity(fact: StateFact, world: MockWorld) -> float:
    """The best row of `fact.table` matching `where`; with `absent`, 1.0 when no row matches.
    An unknown table or column is a KeyError (the task's mistake, not the agent's)."""
    rows = world.rows(fact.table, fact.where)
    if fact.absent:
        return float(not rows)
    return max(
        (columns_similarity(fact.values, row, fact.match, fact.tolerance) for row in rows), default=0.0
    )


def fact_similarity(item: Milestone | Minefield, world: World | None, calls: Sequence[CallSeen]) -> float:
    if item.call is not None:
        return call_similarity(item.call, calls)
    assert item.state is not None
    from toolgym.mocks.world import MockWorld

    if not isinstance(world, MockWorld):  # never a silent 0: the number would be wrong
        raise UnreadableWorld(
            f"{item.id!r} is a fact about the world, which is read in process only: "
            f"not on {type(world).__name__ if world is not None else 'a task without apps'}"
        )
    return state_similarity(item.state, world)


class NotScored(ValueError):
    """Why an episode's milestones and minefields cannot be scored (the message says)."""


class UnreadableWorld(NotScored):
    """A state fact on a world this process cannot read (a mock-app service's, or none)."""


# ---- the best order-respecting mapping ------------------------------------------------------------
@dataclass(frozen=True)
class Reached:
    """One milestone's place in the best mapping: the step it is matched to (None: none) and the
    similarity there."""

    id: str
    step: int | None
    similarity: float

    def record(self) -> dict[str, Any]:
        return {"id": self.id, "step": self.step, "similarity": round(self.similarity, 6)}


class BestMapping:
    """The best mapping of milestones to steps seen so far, kept step by step: after each step,
    for every set of milestones already decided (matched to a step so far, or left unmatched), the
    best total similarity and how it was reached. Exact; 2^n sets per step (n <= MAX_MILESTONES)."""

    def __init__(self, milestones: Sequence[Milestone]) -> None:
        self.ids = [m.id for m in milestones]
        index = {m.id: i for i, m in enumerate(milestones)}
        self._before = [sum(1 << index[p] for p in m.after) for m in milestones]
        # per decided set: (total similarity, -(sum of matched steps): earlier steps win ties, the
        # matches as (milestone, step, similarity))
        self._best: dict[int, tuple[float, int, tuple[tuple[int, int, float], ...]]] = {0: (0.0, 0, ())}

    def add_step(self, step: int, similarities: Sequence[float]) -> None:
        """Extends the mapping by one step, given each milestone's similarity after it."""
        best = dict(self._best)
        n = len(self.ids)
        for decided in range(1 << n):  # a set only grows: every set it grows from came before it
            if decided not in best:
                continue
            value, tie, matched = best[decided]
            for m in range(n):
                bit = 1 << m
                if decided & bit:
                    continue
                grown = decided | bit
                options = [(value, tie, matched)]  # left unmatched
                if similarities[m] > 0 and self._before[m] & ~decided == 0:
                    options.append(
                        (value + similarities[m], tie - step, (*matched, (m, step, similarities[m])))
                    )
                for option in options:
                    if grown not in best or option[:2] > best[grown][:2]:
                        best[grown] = option
        self._best = best

    def total(self) -> float:
        return max(value for value, _, _ in self._best.values())

    def reached(self) -> list[Reached]:
        """Each milestone, in the task's order, with the step and similarity the best mapping gives it."""
        _, _, matched = max(self._best.values(), key=lambda v: v[:2])
        at = {m: (step, similarity) for m, step, similarity in matched}
        return [Reached(milestone, *at.get(i, (None, 0.0))) for i, milestone in enumerate(self.ids)]


# ---- time windows ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class StepClock:
    """Simulated time at a step: the episode's start, when the step's actions began (a call fact's
    time), when the step ended (a state fact's) and when each event fired so far
    (toolgym.mocks.events)."""

    start: datetime
    acted: datetime
    ended: datetime
    fired: Mapping[str, datetime] = field(default_factory=dict)


def in_window(item: Milestone | Minefield, clock: StepClock | None) -> bool:
    """Whether `item`'s fact is in its time window at this step (no window: always; no clock: the
    task's time never moves, so a window after an event never opens and one from the start is at
    0 s). A call counts at the time the step's actions began, a state at the time the step ended."""
    window = item.window
    if window is None:
        return True
    if clock is None:
        return window.after_event is None and window.from_s == 0
    at = clock.acted if item.call is not None else clock.ended
    fired = clock.fired
    if window.before_event is not None and window.before_event in fired and at >= fired[window.before_event]:
        return False
    if window.after_event is not None and window.after_event not in fired:
        return False
    since = (
        at - (fired[window.after_event] if window.after_event is not None else clock.start)
    ).total_seconds()
    return window.from_s <= since and (window.until_s is None or since <= window.until_s)


def state_fact_holds(fact: StateFact, world: World | None) -> bool:
    """Whether a fact about the world holds fully now (an event's `when`: toolgym.mocks.events)."""
    from toolgym.mocks.world import MockWorld

    if not isinstance(world, MockWorld):
        raise UnreadableWorld(f"a fact about table {fact.table!r} is read on an in-process world only")
    return state_similarity(fact, world) >= 1.0


# ---- an episode's checks --------------------------------------------------------------------------
@dataclass
class MinefieldHit:
    id: str
    step: int

    def record(self) -> dict[str, Any]:
        return {"id": self.id, "step": self.step}


@dataclass
class EpisodeChecks:
    """An episode's milestones and minefields, scored after each step (`observe`)."""

    milestones: list[Milestone]
    minefields: list[Minefield]
    derived: bool = False  # the milestones come from the golden chain
    hits: list[MinefieldHit] = field(default_factory=list)
    steps: int = 0

    def __post_init__(self) -> None:
        self._mapping = BestMapping(self.milestones)

    def observe(
        self,
        step: int,
        world: World | None,
        calls: Sequence[CallSeen],
        *,
        user_turns: int = 0,
        clock: StepClock | None = None,
    ) -> None:
        """Scores the world and calls after `step`; `user_turns`: the user's answers before it began
        (a minefield `before_user_turns` is disarmed once the user has answered that often);
        `clock`: the step's simulated time, for the items with a time window (outside its window a
        milestone scores 0 and a minefield is not armed)."""
        self.steps = step
        self._mapping.add_step(
            step,
            [fact_similarity(m, world, calls) if in_window(m, clock) else 0.0 for m in self.milestones],
        )
        hit = {h.id for h in self.hits}
        for mine in self.minefields:
            if (
                mine.id in hit
                or (mine.before_user_turns is not None and user_turns >= mine.before_user_turns)
                or not in_window(mine, clock)
            ):
                continue
            if fact_similarity(mine, world, calls) >= 1.0:
                self.hits.append(MinefieldHit(mine.id, step))

    @property
    def progress(self) -> float:
        """The best mapping's total similarity over the number of milestones (1.0 with none)."""
        return self._mapping.total() / len(self.milestones) if self.milestones else 1.0

    def reached(self) -> list[Reached]:
        return self._mapping.reached()

    def first_missed(self) -> str | None:
        """The first milestone, in the task's order, not fully reached."""
        return next((r.id for r in self.reached() if r.similarity < 1.0), None)

    def scores(self) -> dict[str, float]:
        out = {"milestone_progress": round(self.progress, 6)} if self.milestones else {}
        if self.minefields:
            out["minefield_hits"] = float(len(self.hits))
        return out

    def end_record(self) -> dict[str, Any]:
        """What the trace's end record keeps: each milestone's step and similarity, the hits."""
        out: dict[str, Any] = {}
        if self.milestones:
            out["milestones"] = [r.record() for r in self.reached()]
        if self.minefields:
            out["minefields"] = [h.record() for h in self.hits]
        return out


def episode_checks(task: Task, *, derive: bool) -> EpisodeChecks | None:
    """The checks of an episode of `task`: its own milestones and minefields, and with `derive`
    milestones from its golden chain where it declares none. None when there is nothing to check."""
    milestones, derived = task.milestones, False
    if milestones is None and derive:
        milestones, derived = derived_milestones(task), True
    if not milestones and not task.minefields:
        return None
    return EpisodeChecks(list(milestones or ()), list(task.minefields or ()), derived=derived)


# ---- milestones from a golden chain ---------------------------------------------------------------
MAX_DERIVED = 4096  # golden chains whose milestones a process remembers
_derived: OrderedDict[str, list[Milestone]] = OrderedDict()
_derived_lock = threading.Lock()


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, Mapping):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    elif value is not None and not isinstance(value, bool):
        yield value


def _telling(value: Any) -> bool:
    """A value specific enough that finding it elsewhere means it came from here (not 0, 1, "a")."""
    if isinstance(value, str):
        return len(value.strip()) >= 3
    return isinstance(value, (int, float)) and abs(value) >= 2


def _strings(value: Any) -> set[str]:
    return {v for v in _leaves(value) if isinstance(v, str)}


def _quoted(answer: str, result: Any) -> bool:
    return any(_telling(v) and alias_found(answer, _text(v)) for v in _leaves(result))


def _flows(result: Any, arguments: Mapping[str, Any]) -> bool:
    """A value of `result` reappears among `arguments` (the later call used what this one read)."""
    produced = {canonical_json(v) for v in _leaves(result) if _telling(v)}
    return any(canonical_json(v) in produced for v in _leaves(arguments))


def _row_facts(diff: Mapping[str, Any], world_before: MockWorld, made: set[str]) -> list[StateFact]:
    """A write's effect as facts: each row it added (its columns but the key, the volatile ones
    and the identifiers the write made up: values it answered with, not given, and new in their
    column, which depend on what was written before; unless those alone already match a row
    before the write), removed or changed."""
    facts: list[StateFact] = []
    for table in sorted(diff):
        info = world_before.store.tables[table]
        if not info.in_hash or info.internal:
            continue
        entry = diff[table]
        for row in entry["added"]:
            values = {
                c: row[c]
                for c in info.hashed
                if c not in info.pk and not (row[c] in made and not world_before.rows(table, {c: row[c]}))
            }
            fact = StateFact(table=table, values=values)
            if not values or state_similarity(fact, world_before) >= 1.0:
                fact = StateFact(table=table, values={c: row[c] for c in info.hashed})
            facts.append(fact)
        for row in entry["removed"]:
            facts.append(StateFact(table=table, where={c: row[c] for c in info.pk}, absent=True))
        for change in entry["changed"]:
            before, after = change["before"], change["after"]
            values = {c: after[c] for c in info.hashed if c not in info.pk and before.get(c) != after.get(c)}
            if values:
                facts.append(StateFact(table=table, where={c: before[c] for c in info.pk}, values=values))
    return facts


def _derive(task: Task) -> list[Milestone]:
    from toolgym.mocks.rewards import golden_expectations
    from toolgym.mocks.world import MockWorld

    answer = golden_final_answer(task) or ""
    world = MockWorld(task.apps or (), seed=task.seed, clock=task.clock)
    try:
        tools = world.tools
        chain = [
            (i, call, expected)
            for i, call, expected in golden_expectations(task.golden)
            if call.name in tools
        ]
        results: list[Any] = []
        facts: list[tuple[int, list[StateFact | CallFact]]] = []
        for place, (_, call, expected) in enumerate(chain):
            before = world.fork() if tools.get(call.name).mutates_state else None
            world.take_diff()
            obs = world.step(call)
            results.append(obs.content)
            if expected is not None or obs.error is not None:
                facts.append((place, []))  # a call meant to fail brings nothing about
            elif before is not None:
                made = _strings(obs.content) - _strings(call.arguments)
                facts.append((place, list(_row_facts(world.take_diff(), before, made))))
            elif answer and _quoted(answer, obs.content):
                facts.append((place, [CallFact(tool=call.name, arguments=dict(call.arguments))]))
            else:
                facts.append((place, []))
            if before is not None:
                before.close()
    finally:
        world.close()
    return _chain_milestones(chain, results, facts)


def _chain_milestones(
    chain: Sequence[tuple[int, ToolCall, Any]],
    results: Sequence[Any],
    facts: Sequence[tuple[int, Sequence[StateFact | CallFact]]],
) -> list[Milestone]:
    """Milestones of the facts, each after the milestones of the earlier calls whose results flow
    (directly or through other calls) into its call's arguments."""
    upstream: list[set[int]] = []
    for j, (_, call, _) in enumerate(chain):
        direct = {i for i in range(j) if _flows(results[i], call.arguments)}
        upstream.append(direct.union(*(upstream[i] for i in direct)))
    ids: dict[int, list[str]] = {}
    milestones: list[Milestone] = []
    for place, step_facts in facts:
        index, call, _ = chain[place]
        after = sorted({m for i in upstream[place] for m in ids.get(i, [])})
        for k, fact in enumerate(step_facts):
            mid = f"{index + 1}.{call.name}" + (f".{k + 1}" if len(step_facts) > 1 else "")
            ids.setdefault(place, []).append(mid)
            kind = {"call": fact} if isinstance(fact, CallFact) else {"state": fact}
            milestones.append(Milestone(id=mid, after=after, **kind))
    return milestones


def derived_milestones(task: Task) -> list[Milestone]:
    """The milestones of a mock-app task's golden chain (none for a task without apps). The replay
    is deterministic, so it runs once per (apps, seed, clock, chain, answer) in a process."""
    if not task.apps or not task.golden:
        return []
    key = canonical_hash(
        [
            list(task.apps),
            task.seed,
            task.clock.isoformat(),
            [g.model_dump(mode="json") for g in task.golden],
        ]
    )
    with _derived_lock:
        if key in _derived:
            _derived.move_to_end(key)
            return list(_derived[key])
    milestones = _derive(task)
    with _derived_lock:
        _derived[key] = milestones
        while len(_derived) > MAX_DERIVED:
            _derived.popitem(last=False)
    return list(milestones)


@dataclass(frozen=True)
class MilestoneSummary:
    """What an episode's checks come to: progress (None: the task has minefields only), the first
    milestone not fully reached, the minefields hit ("id (step n)")."""

    progress: float | None
    first_missed: str | None
    hits: tuple[str, ...] = ()
    scored_again: bool = False  # from a replay of the trace's calls, not from its end record

    def text(self) -> str:
        """One line for people: progress, the first milestone missed, the minefields hit."""
        parts = (
            [f"milestones {math.floor(self.progress * 1000) / 10:g}%"] if self.progress is not None else []
        )
        if self.first_missed is not None:
            parts.append(f"first missed: {self.first_missed}")
        if self.hits:
            parts.append("minefields hit: " + ", ".join(self.hits))
        return "; ".join(parts)


def summary_of(checks: EpisodeChecks) -> MilestoneSummary:
    return MilestoneSummary(
        progress=checks.progress if checks.milestones else None,
        first_missed=checks.first_missed(),
        hits=tuple(f"{h.id} (step {h.step})" for h in checks.hits),
    )


def progress_text(checks: EpisodeChecks) -> str:
    return summary_of(checks).text()


# ---- a recorded episode's checks, computed again -------------------------------------------------
class TraceReplayError(NotScored):
    """A trace whose calls, run again on a fresh world, do not reach the states it recorded."""


def _ran(observation: Mapping[str, Any]) -> bool:
    """Whether a recorded call reached its tool: a fault injected before the call did not."""
    from toolgym.envs.faults import BEFORE_CALL

    content = observation.get("content")
    injected = content.get("injected") if isinstance(content, Mapping) else None
    return not (isinstance(injected, Mapping) and injected.get("kind") in BEFORE_CALL)


def checks_of_trace(trace: Trace, task: Task) -> EpisodeChecks | None:
    """The milestones and minefields of a recorded episode, scored again: its calls are run once
    more, in order, on a fresh world of the task (worlds are deterministic: seeded, fixed clock),
    which gives the world after every step; the outcome of each call is the one recorded. The
    task's own milestones, else those of its golden chain. None when there is nothing to check; a
    TraceReplayError when the replay does not reach a state hash the trace recorded."""
    from toolgym.mocks.world import MockWorld

    checks = episode_checks(task, derive=True)
    if checks is None:
        return None
    if task.dynamic:  # the events' writes and times are the env's: its end record keeps the scores
        raise NotScored(
            f"{task.id}: a task with events or simulated time is scored when it runs, not again from its trace"
        )
    world = MockWorld(task.apps or (), seed=task.seed, clock=task.clock) if task.apps else None
    user_turns = 0  # the user's answers before each step, as the env counted them
    try:
        for step in trace.steps:
            calls: list[CallSeen] = []
            for action, obs in zip(step.actions, step.observations, strict=False):
                if action.get("type") != "tool_call":
                    continue
                name, arguments = str(action.get("name", "")), action.get("arguments") or {}
                calls.append(CallSeen(name=name, arguments=arguments, ok=obs.get("error") is None))
                if world is not None and name in world.tools and _ran(obs):
                    world.step(ToolCall(name=name, arguments=arguments))
            if (
                world is not None
                and step.state_hash_after is not None
                and world.state_hash() != step.state_hash_after
            ):
                raise TraceReplayError(
                    f"{trace.header.task_id}: step {step.index} run again does not reach the state the trace recorded"
                )
            try:
                checks.observe(step.index, world, calls, user_turns=user_turns)
            except KeyError as exc:  # a table or column the world does not have: the task's mistake
                raise NotScored(f"{task.id}: {exc.args[0] if exc.args else exc}") from None
            user_turns += sum(1 for obs in step.observations if _user_answer(obs))
    finally:
        if world is not None:
            world.close()
    return checks


def _user_answer(obs: dict[str, Any]) -> bool:
    """Whether a recorded observation is an answer of the user (not its leaving at the turn limit)."""
    if obs.get("type") != "user":
        return False
    content = obs.get("content")
    marker = content.get("user") if isinstance(content, dict) else None
    return not isinstance(marker, dict) or marker.get("turn") is not None


def trace_milestones(trace: Trace, task: Task) -> MilestoneSummary | None:
    """A recorded episode's milestones and minefields: from its end record where the run scored
    them, else scored again from its calls (`checks_of_trace`; TraceReplayError when the replay
    does not reach the recorded states). None when the task has nothing to check."""
    end = trace.end
    if end is not None and (end.milestones is not None or end.minefields is not None):
        reached = end.milestones or []
        return MilestoneSummary(
            progress=sum(float(m["similarity"]) for m in reached) / len(reached) if reached else None,
            first_missed=next((str(m["id"]) for m in reached if float(m["similarity"]) < 1.0), None),
            hits=tuple(f"{h['id']} (step {h['step']})" for h in end.minefields or []),
        )
    checks = checks_of_trace(trace, task)
    return dataclasses.replace(summary_of(checks), scored_again=True) if checks is not None else None
