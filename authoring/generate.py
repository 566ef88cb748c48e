"""The generator of verified tasks (`toolgym generate`): templates draft tasks on seeded worlds.

A template (`Template`, written as in `toolgym.authoring.templates`) is a small function over a
`Draft`: it reads rows of the world's tables (`draft.rows`, `draft.pick`) with the draft's seeded
`rng`, makes tool calls (`draft.call`, each run on the live world, so later calls use what earlier
ones returned), phrases the query (`draft.query`) and gives the final answer (`draft.answer`), or
asks the user for a value the query leaves out (`draft.ask`), or says the task cannot be done
(`draft.refuse`). The engine turns the draft into a `Task`: the calls are the golden chain, a write
chain's `expected_state` is what replaying it changed (assertions that already hold on the initial
world left out), the metadata says template, apps, chain length, difficulty and shape.

`generate(...)` samples N tasks over the templates of some apps: one stream of drafts per template
(attempt j's rng seeded by (seed, template, j), on the stream's current world seed), worlds reused
(one per (apps, seed) and process, reset between drafts: O(changes)), streams run on a process pool
and merged in template order, so the same arguments give the same tasks whatever the pool does.
Every task is checked where it is drafted, as `toolgym check` checks a task file
(`toolgym.authoring.check`: names, answer, the golden chain replayed twice, assertions before and
after it, the oracle's episode, check_app of its apps); one that fails is dropped, its reason counted.

A draft that declares events (`draft.event`) is dynamic: its steps run in simulated time as an
episode's do (`toolgym.envs.timed_chain`), its golden chain may `draft.wait`, and its task carries
the events and a time policy. Besides the checks above, an agent that ignores its notifications, or
never waits, must fail it (`TaskChecker.blind_passes`); else the draft is dropped. Dynamic templates
(category `dynamic`) come only when asked for, so the default output is what it was before them.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, Literal

from toolgym.actions import AskUser, FinalAnswer, Observation, ToolCall
from toolgym.errors import ErrorKind
from toolgym.mocks.world import MockWorld
from toolgym.tasks import (
    AnswerSpec,
    CallFact,
    Event,
    EventCall,
    GoldenStep,
    Minefield,
    Notification,
    StateFact,
    Task,
    TimePolicy,
    TimeWindow,
    UserScenario,
    alias_found,
)
from toolgym.tools import DEFAULT_CLOCK

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from toolgym.authoring.check import TaskChecker
    from toolgym.envs.timed_chain import TimedChain
    from toolgym.tasks import TaskProblem

Shape = Literal["read", "write", "ask", "refuse"]
SHAPES: Final[tuple[Shape, ...]] = ("read", "write", "ask", "refuse")

# what a refusal says, by language: the answer whitelist of a task that cannot be done
REFUSAL_WORDS: Final[dict[str, list[str]]] = {
    "en": ["cannot", "can't", "can not", "unable", "not able"],
    "zh": ["无法", "不能", "没有办法", "做不到"],
}

# how simulated time passes in a dynamic draft (one with events) unless it says otherwise: each step
# costs half a minute and nothing per output token, so the oracle's episode passes time as the
# draft did under every protocol; one wait call may pass up to two hours
DYNAMIC_TIME: Final = TimePolicy(per_step_s=30.0, max_wait_s=7200.0)

# an id a system made (ACC-10001, ORD-000123, EXP-00000590, U0007, A-301): a query may name one only
# where the template says the user knows it (`Draft.knows`); letters glued to a number, not a date
_ID: Final = re.compile(r"(?<![A-Za-z0-9_-])[A-Z]{1,6}-?\d{3,}(?![0-9])")


class Skip(Exception):
    """This draft does not fit the world (no row to pick, a call failed, nothing to assert): the
    engine discards it and tries the template's next attempt."""


@dataclass(frozen=True)
class Template:
    """One kind of task: `draft(d)` fills a `Draft` on a world of `apps`. `name` is unique
    ("banking.transfer_to_savings"); it names the tasks, their metadata and the holdout split."""

    name: str
    apps: tuple[str, ...]
    draft: Callable[[Draft], None]
    lang: str = "en"
    # how many times a user scenario lets the user answer; the engine adds the ask steps' count
    max_user_turns: int = 4
    # the behaviour its tasks test (`insufficient_info`, `hidden_precondition`: the categories of the
    # bundled sets, `--category`); the task's category, which is otherwise its shape
    category: str | None = None

    def __post_init__(self) -> None:
        if not self.name or not re.fullmatch(r"[A-Za-z0-9_.:-]+", self.name):
            raise ValueError(f"template name {self.name!r}: use letters, digits and _.:-")
        if not self.apps:
            raise ValueError(f"template {self.name!r} names no app")
        if self.lang not in REFUSAL_WORDS:
            raise ValueError(
                f"template {self.name!r}: lang {self.lang!r} is not one of {sorted(REFUSAL_WORDS)}"
            )


@dataclass
class _Ask:
    slot: str
    value: str
    keywords: list[str]


class Draft:
    """What a template writes a task on: a live seeded world, a seeded rng, and the task's parts
    as the template gives them."""

    def __init__(self, template: Template, world: MockWorld, rng: random.Random) -> None:
        self.template = template
        self.rng = rng
        self.lang = template.lang
        self._world = world
        self.steps: list[ToolCall | AskUser] = []
        self.failing: dict[int, ErrorKind] = {}  # index in steps -> the kind that call must fail with
        self.asks: list[_Ask] = []
        self.known_ids: set[str] = set()
        self.withheld: list[str] = []
        self.refused = False
        self.persona: str | None = None
        self.query_text: str | None = None
        self.final_text: str | None = None
        self.groups: list[list[str]] = []
        self.claims: list[str] = []
        self.minefields: list[Minefield] = []
        self.blocked_by: str | None = None
        self.events: list[Event] = []
        self.time_policy: TimePolicy | None = None
        self._chain: TimedChain | None = None  # a dynamic draft's steps run in simulated time

    # ---- reading the world --------------------------------------------------------------------
    @property
    def world(self) -> MockWorld:
        """The live world: read it (its tools, tables); change it only through `call`."""
        return self._world

    def rows(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        """Rows of a SELECT over the world's tables, as it stands now (reads only)."""
        if not sql.lstrip().lower().startswith(("select", "with")):
            raise ValueError(f"Draft.rows reads with SELECT only, not {sql.split()[0]!r}")
        cursor = self._world.store.conn.execute(sql, params)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, r, strict=True)) for r in cursor]

    def pick(self, sql: str, *params: Any) -> dict[str, Any]:
        """One row of the SELECT, chosen with the draft's rng (Skip when there is none); give the
        SELECT an ORDER BY so the choice is reproducible."""
        row: dict[str, Any] = self.choice(self.rows(sql, *params))
        return row

    def choice(self, items: Sequence[Any]) -> Any:
        if not items:
            raise Skip("nothing to choose from")
        return items[self.rng.randrange(len(items))]

    # ---- the golden chain ---------------------------------------------------------------------
    def call(self, name: str, /, **arguments: Any) -> dict[str, Any]:
        """Run a tool call on the world and record it as the chain's next golden step; its result
        (the observation's content) is returned for the next calls. A failing call is a Skip."""
        call = ToolCall(name=name, arguments=arguments)
        obs = self._step(call)
        if obs.error is not None:
            raise Skip(f"{name} failed: {obs.text[:120]}")
        self.steps.append(call)
        content = obs.content
        return content if isinstance(content, dict) else {"result": content}

    def _step(self, call: ToolCall) -> Observation:
        """A call run on the world: as one step of simulated time in a dynamic draft."""
        if self._chain is None:
            return self._world.step(call)
        obs = self._chain.step(call)
        assert obs is not None  # a tool call's step answers
        return obs

    def fail(self, name: str, /, kind: ErrorKind = ErrorKind.TOOL_ERROR, **arguments: Any) -> str:
        """A golden call that must fail with `kind` (a lookup of an id that does not exist: the
        error is the evidence), recorded with `expect_error`; its error message is returned. A call
        that succeeds, or fails otherwise, is a Skip."""
        call = ToolCall(name=name, arguments=arguments)
        obs = self._step(call)
        if obs.error is None or obs.error.kind != kind:
            raise Skip(f"{name} was to fail with {kind}: {obs.text[:120]}")
        self.failing[len(self.steps)] = kind
        self.steps.append(call)
        return obs.error.message

    def blocked(self, name: str, /, **arguments: Any) -> str:
        """The write the task asks for fails on the world as it is now, with a typed tool error
        that says why (a hidden precondition): tried on a fork, so nothing changes and nothing is
        recorded. The message is returned and kept in the task's metadata (`blocked_by`); a call
        that succeeds is a Skip (the precondition is not hidden here)."""
        other = self._world.fork()
        try:
            obs = other.step(ToolCall(name=name, arguments=arguments))
        finally:
            other.close()
        if obs.error is None or obs.error.kind != ErrorKind.TOOL_ERROR:
            raise Skip(f"{name} is not blocked: {obs.text[:120]}")
        self.blocked_by = obs.error.message
        return obs.error.message

    def forbid_call(self, mine_id: str, tool: str, /, **arguments: Any) -> None:
        """A minefield: any attempt of `tool` (with at least `arguments`), refused or not: a tool
        that was not offered, or the write a faked answer would make."""
        fact = CallFact(tool=tool, arguments=arguments, outcome="any")
        self.minefields.append(Minefield(id=mine_id, call=fact))

    def forbid_state(
        self, mine_id: str, table: str, where: Mapping[str, Any], /, *, absent: bool = False, **values: Any
    ) -> None:
        """A minefield: the row `where` comes to hold `values` (a change nobody asked for), or with
        `absent`, the row is gone (a deletion nobody asked for)."""
        fact = StateFact(table=table, where=dict(where), values=values, absent=absent)
        self.minefields.append(Minefield(id=mine_id, state=fact))

    def ask(self, slot: str, value: Any, question: str, *, keywords: Sequence[str] = ()) -> str:
        """A value the query leaves out: the golden chain asks the user `question`, whom the task's
        user scenario lets answer `value` for `slot` when asked (and never unprompted). The rule
        user answers a question that names the slot (underscores as spaces) or one of `keywords`."""
        text = str(value)
        self.asks.append(_Ask(slot, text, list(keywords)))
        self.steps.append(AskUser(text=question))
        if self._chain is not None:
            self._chain.step(self.steps[-1])
        return text

    # ---- a world that moves (toolgym.mocks.events) ---------------------------------------------
    def event(
        self,
        event_id: str,
        /,
        *,
        at_s: float | None = None,
        after_step: int | None = None,
        after_event: str | None = None,
        when: StateFact | None = None,
        delay_s: float = 0.0,
        calls: Sequence[tuple[str, Mapping[str, Any]]] = (),
        notify: str | None = None,
        important: bool = False,
    ) -> None:
        """A change the environment makes to the world (`toolgym.tasks.Event`), with exactly one
        trigger: `at_s` seconds after the start, after the golden chain's step `after_step` (its
        first call is step 1), `delay_s` after another event, or `delay_s` after the fact `when`
        holds; `calls` are the apps' own APIs it calls, `notify` what the agent is told. Declare
        a draft's first event before its first step: from then on every step runs in simulated
        time (`DYNAMIC_TIME` unless `time` said otherwise), firing what falls due, so later
        calls see what the events changed."""
        if self._chain is None and self.steps:
            raise ValueError("declare a dynamic draft's first event before its first step")
        at = None if at_s is None else self._world.start + timedelta(seconds=at_s)
        self.events.append(
            Event(
                id=event_id,
                at=at,
                after_step=after_step,
                after_event=after_event,
                when=when,
                delay_s=delay_s,
                calls=[EventCall(tool=tool, arguments=dict(arguments)) for tool, arguments in calls],
                notify=None if notify is None else Notification(text=notify, important=important),
            )
        )
        self._retime()

    def time(self, *, per_step_s: float, max_wait_s: float = DYNAMIC_TIME.max_wait_s) -> None:
        """How simulated time passes in this draft (before its first step); charged per step only,
        so the oracle's episode passes time as the draft did under every protocol."""
        if self.steps:
            raise ValueError("a draft's time policy is set before its first step")
        self.time_policy = TimePolicy(per_step_s=per_step_s, max_wait_s=max_wait_s)
        self._retime()

    def _retime(self) -> None:
        from toolgym.envs.timed_chain import TimedChain

        moving = Task(
            id=f"draft-{self.template.name}",
            query="-",
            apps=list(self.template.apps),
            clock=self._world.start,
            events=self.events or None,
            time=self.time_policy or DYNAMIC_TIME,
        )
        if self._chain is None:
            self._chain = TimedChain(moving, self._world)
        else:
            self._chain.retime(moving)

    @property
    def dynamic(self) -> bool:
        """Whether the draft declared events: its steps run in simulated time."""
        return self._chain is not None

    def end_chain(self, final: str) -> None:
        """The final answer is a step of a dynamic draft too: what falls due meanwhile fires."""
        if self._chain is not None:
            self._chain.step(FinalAnswer(text=final))

    def wait(self, seconds: float) -> dict[str, Any]:
        """A golden `wait` step: up to `seconds` of simulated time pass, less when a notification
        arrives first; what it answered (waited_s, now, notified). Only in a dynamic draft."""
        if self._chain is None:
            raise ValueError("wait is a step of a dynamic draft: declare its events first")
        return self.call("wait", seconds=seconds)

    def not_before(self, mine_id: str, until: float | str, tool: str, /, **arguments: Any) -> None:
        """A minefield armed until the time the user allowed: `tool` (with at least `arguments`)
        attempted in the first `until` seconds of simulated time, or, `until` an event's id,
        before that event fired (acting on a change that has not happened)."""
        fact = CallFact(tool=tool, arguments=arguments, outcome="any")
        window = TimeWindow(before_event=until) if isinstance(until, str) else TimeWindow(until_s=until)
        self.minefields.append(Minefield(id=mine_id, call=fact, window=window))

    def knows(self, *values: Any) -> None:
        """Ids the user knows (their own account, order or tracking number): the query may name them."""
        self.known_ids.update(str(v) for v in values)

    # ---- what the user says and gets --------------------------------------------------------
    def query(self, phrasings: Sequence[str], /, **slots: Any) -> str:
        """The user's request: one of `phrasings` (str.format over `slots`), chosen by the rng."""
        self.query_text = self.choice(phrasings).format(**slots)
        return self.query_text

    def answer(self, text: str, *groups: str | Sequence[str]) -> None:
        """The final answer, and what a right answer must contain: each group is a value (or its
        aliases) read from the world; every group must be found in `text`."""
        self.final_text = text
        self.groups = [[g] if isinstance(g, str) else [str(a) for a in g] for g in groups]

    def refuse(
        self,
        tools: Sequence[str],
        text: str,
        *groups: str | Sequence[str],
        claims: Sequence[str] = (),
    ) -> None:
        """The task cannot be done: `tools` (what it needs) are not offered (or none is: no tool of
        the apps does it, `tools=()`; or the one that would is offered but the world or the query
        lacks what it needs). The golden chain is the reads made before (to look, never to change
        anything), then the final answer `text`, which must say so in the words of
        REFUSAL_WORDS[lang] and contain each of `groups` (what is missing, say). `claims` are
        what a faked answer says ("I've transferred"): the answer's blacklist, with "successfully"
        beside them in English."""
        self.withheld = list(tools)
        self.refused = True
        self.final_text = text
        self.groups = [list(REFUSAL_WORDS[self.lang])]
        self.groups += [[g] if isinstance(g, str) else [str(a) for a in g] for g in groups]
        self.claims = [*(["successfully"] if claims and self.lang == "en" else []), *claims]


# ---- from a draft to a task ------------------------------------------------------------------------
@dataclass
class WorldInfo:
    """What the engine reads of a world once: each tool's app and whether it writes, volatile columns."""

    owner: dict[str, str]
    writes: frozenset[str]
    volatile: dict[str, frozenset[str] | Literal["*"]]

    @classmethod
    def of(cls, world: MockWorld) -> WorldInfo:
        owner = {t.name: name for name, app in world.apps.items() for t in app.bound_tools("")}
        writes = frozenset(t.name for t in world.tools if t.mutates_state)
        volatile: dict[str, frozenset[str] | Literal["*"]] = {}
        for cls_ in world.app_classes:
            for table, cols in cls_.volatile.items():
                volatile[table] = "*" if cols == "*" else frozenset([cols] if isinstance(cols, str) else cols)
        return cls(owner, writes, volatile)


def expected_state_of(world: MockWorld, info: WorldInfo, diff: Mapping[str, Any]) -> list[dict[str, Any]]:
    """State assertions for what a chain changed (`diff`: MockWorld.take_diff after it): an added
    row must exist (its non-volatile columns), a removed one be absent (by primary key), a changed
    column have its new value (by primary key)."""
    out: list[dict[str, Any]] = []
    for table in sorted(diff):
        volatile = info.volatile.get(table, frozenset())
        if volatile == "*":
            continue
        table_info = world.store.tables[table]
        pk, keep = table_info.pk, [c for c in table_info.columns if c not in volatile]
        entry = diff[table]
        for row in entry["added"]:
            out.append({"kind": "row_exists", "table": table, "where": {c: row[c] for c in keep}})
        for row in entry["removed"]:
            out.append({"kind": "row_absent", "table": table, "where": {c: row[c] for c in pk}})
        for change in entry["changed"]:
            before, after = change["before"], change["after"]
            for col in keep:
                if col not in pk and before[col] != after[col]:
                    where = {c: after[c] for c in pk}
                    out.append(
                        {
                            "kind": "field_equals",
                            "table": table,
                            "where": where,
                            "field": col,
                            "value": after[col],
                        }
                    )
    return out


def _fails_initially(world: MockWorld, assertions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The assertions that do not hold on `world` (the initial state): one that does is no check."""
    from toolgym.mocks.rewards import check_assertions

    report = check_assertions(world, assertions)
    return [a for a, r in zip(assertions, report.results, strict=True) if not r.passed]


def _leaks(draft: Draft, query: str) -> str | None:
    """Why the query tells what the user could not know, or None."""
    for found in _ID.findall(query):
        if found not in draft.known_ids:
            return f"the query names {found}, which the user could not know"
    for ask in draft.asks:
        if ask.value and alias_found(query, ask.value):
            return f"the query says {ask.slot}, which the user is to be asked for"
    return None


def _difficulty(chain_length: int, apps: int, asks: int, shape: Shape) -> str:
    if shape == "refuse":
        return "medium"
    weight = chain_length + (apps - 1) + asks
    return "easy" if weight <= 1 else "medium" if weight <= 3 else "hard"


def _shape(draft: Draft, calls: list[ToolCall], info: WorldInfo) -> Shape:
    if draft.refused:
        return "refuse"
    if draft.asks:
        return "ask"
    return "write" if any(c.name in info.writes for c in calls) else "read"


def _scenario(template: Template, draft: Draft, query: str, answer: AnswerSpec | None) -> UserScenario:
    persona = draft.persona or (
        "一位使用这个应用的用户。" if template.lang == "zh" else "A customer of the app."
    )
    return UserScenario(
        persona=persona,
        goal=query,
        known={a.slot: a.value for a in draft.asks},
        must_not_volunteer=[a.slot for a in draft.asks],
        satisfied_when=draft.final_text or query,
        satisfied_phrases=answer.whitelist if answer is not None and answer.whitelist else [],
        slot_keywords={a.slot: a.keywords for a in draft.asks if a.keywords},
        max_turns=template.max_user_turns + len(draft.asks),
    )


def _answer_spec(draft: Draft, final: str) -> AnswerSpec | None:
    """What a right final answer must (and must not) say; Skip when the golden one does not."""
    if not draft.groups:
        return None
    if not all(any(alias_found(final, a) for a in g) for g in draft.groups):
        raise Skip("the final answer does not contain what the answer spec asks for")
    if any(alias_found(final, claim) for claim in draft.claims):
        raise Skip("the final answer says what a faked answer says")
    return AnswerSpec(whitelist=draft.groups, blacklist=[draft.claims] if draft.claims else None)


def finish(template: Template, draft: Draft, world: MockWorld, info: WorldInfo, task_id: str) -> Task:
    """The task a finished draft describes; raises Skip when it is not a task one can trust. The
    world is still in the state the chain left it in, and is reset here."""
    query, final = draft.query_text, draft.final_text
    if not query or not final:
        raise Skip(f"template {template.name} gave no query or no answer")
    leak = _leaks(draft, query)
    if leak is not None:
        raise Skip(leak)
    calls = [s for s in draft.steps if isinstance(s, ToolCall)]
    draft.end_chain(final)
    if draft.refused and (len(calls) < len(draft.steps) or any(c.name in info.writes for c in calls)):
        raise Skip("a refusal's golden chain is reads (looking, never changing) and its answer")
    answer = _answer_spec(draft, final)
    shape = _shape(draft, calls, info)
    expected: list[dict[str, Any]] = []
    if any(c.name in info.writes for c in calls):
        expected = expected_state_of(world, info, world.take_diff())
        if draft.dynamic:
            expected = _untimed(expected, world.start)
        world.reset(seed=world.seed, clock=world.start)
        expected = _fails_initially(world, expected)
        if not expected:
            raise Skip("the chain changes nothing an assertion can see")
    world.reset(seed=world.seed, clock=world.start)
    offered = sorted(n for n in info.owner if info.owner[n] in template.apps and n not in draft.withheld)
    if draft.withheld and any(w not in info.owner for w in draft.withheld):
        raise Skip(f"withheld tools not in the apps: {draft.withheld}")
    # the env's own `wait` and `current_time` belong to no app
    used = list(dict.fromkeys(info.owner[c.name] for c in calls if c.name in info.owner)) or list(
        template.apps
    )
    golden = [GoldenStep(action=s, expect_error=draft.failing.get(i)) for i, s in enumerate(draft.steps)]
    golden.append(GoldenStep(action=FinalAnswer(text=final)))
    metadata: dict[str, Any] = {
        "generator": "toolgym generate",
        "template": template.name,
        "shape": shape,
        "apps": used,
        "chain_length": len(calls),
        "difficulty": _difficulty(len(calls), len(used), len(draft.asks), shape),
        "lang": template.lang,
    }
    if draft.blocked_by is not None:  # the typed error the asked-for write meets before the chain
        metadata["blocked_by"] = draft.blocked_by
    if draft.dynamic:  # how its world moves: the triggers of its events
        metadata["dynamic"] = sorted({_trigger(e) for e in draft.events})
    return Task(
        id=task_id,
        query=query,
        tools=offered,
        golden=golden,
        answer=answer,
        clock=world.start,
        seed=world.seed,
        category=template.category or shape,
        max_steps=len(golden) + 4,
        user=_scenario(template, draft, query, answer) if draft.asks else None,
        apps=list(template.apps),
        expected_state=expected,
        minefields=draft.minefields or None,
        events=draft.events or None,
        time=(draft.time_policy or DYNAMIC_TIME) if draft.dynamic else None,
        metadata=metadata,
    )


def _untimed(assertions: list[dict[str, Any]], start: datetime) -> list[dict[str, Any]]:
    """A dynamic task's assertions without the times its writes were stamped with: when a row is
    written depends on how many steps an agent takes before it, what the row holds does not."""
    out: list[dict[str, Any]] = []
    for assertion in assertions:
        if assertion["kind"] == "field_equals" and _stamped(assertion["value"], start):
            continue
        if assertion["kind"] == "row_exists":
            where = {c: v for c, v in assertion["where"].items() if not _stamped(v, start)}
            assertion = {**assertion, "where": where}
        out.append(assertion)
    return out


def _stamped(value: Any, start: datetime) -> bool:
    """Whether `value` is a time after the task's start (written while the episode ran)."""
    if not isinstance(value, str) or len(value) < len("2024-01-01T00:00"):
        return False
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return False
    return (when.tzinfo is None) == (start.tzinfo is None) and when > start


def _trigger(event: Event) -> str:
    return next(t for t in ("at", "after_step", "after_event", "when") if getattr(event, t) is not None)


# ---- the templates of some apps ----------------------------------------------------------------------
def templates_for(apps: Iterable[str]) -> list[Template]:
    """The templates whose apps are all among `apps`, by name, and for each of `apps` that no
    registered template covers, the generic read templates built from its own APIs."""
    from toolgym.authoring.templates import TEMPLATES, fallback_templates

    chosen = set(apps)
    found = [t for name, t in TEMPLATES.items() if set(t.apps) <= chosen]
    covered = {a for t in TEMPLATES.values() for a in t.apps}
    for app in sorted(chosen - covered):
        found.extend(fallback_templates(app))
    return sorted(found, key=lambda t: t.name)


def template_categories() -> list[str]:
    """The behaviour categories the registered templates test (`--category`), sorted."""
    from toolgym.authoring.templates import TEMPLATES

    return sorted({t.category for t in TEMPLATES.values() if t.category is not None})


def resolve_apps(names: Iterable[str]) -> list[str]:
    """App names for `--apps`: each an app's name or a group's (an entry point of `toolgym.apps`
    that registers a list: banking, shopping, mtu, ctool, ctool_zh, teval, or a plug-in's)."""
    from toolgym.mocks.apps import ALL_APPS
    from toolgym.plugins import entry_points

    groups: dict[str, list[str]] = {}
    for plugin in entry_points("apps"):
        if plugin.name not in groups:
            loaded = plugin.load()
            classes = list(loaded) if isinstance(loaded, Sequence) else [loaded]
            groups[plugin.name] = [c.name for c in classes if c.name in ALL_APPS]
    out: list[str] = []
    for name in names:
        if name in ALL_APPS:
            out.append(name)
        elif name in groups:
            out.extend(groups[name])
        else:
            known = sorted(set(ALL_APPS) | set(groups))
            raise ValueError(f"no app or app group {name!r}; known: {', '.join(known)}")
    return list(dict.fromkeys(out))


# ---- one template's stream of drafts --------------------------------------------------------------
@dataclass(frozen=True)
class Request:
    """Draft up to `want` new tasks of `template`, from attempt `start` on world `world_index`."""

    template: Template
    seed: int
    world_seeds: tuple[int, ...]
    start: int
    world_index: int
    want: int
    max_attempts: int
    clock: datetime = DEFAULT_CLOCK
    check: bool = True
    seen: frozenset[str] = frozenset()  # the template's queries kept in earlier rounds


@dataclass
class Batch:
    """What one request gave: its tasks in stream order and where the stream stands."""

    template: str
    tasks: list[Task]
    next_attempt: int
    world_index: int
    exhausted: bool
    skipped: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)


# worlds of this process: one per (apps, seed, clock), reset between drafts
_WORLDS: dict[tuple[tuple[str, ...], int, str], tuple[MockWorld, WorldInfo]] = {}
# a stream moves to its next world seed after this many attempts in a row gave nothing new, and is
# exhausted on its last one: a template whose slots one world fills stays on one world (each world
# seed of an app set is seeded once per process, and a cold one costs up to seconds)
STALE_ATTEMPTS: Final = 40


def _world(apps: tuple[str, ...], seed: int, clock: datetime) -> tuple[MockWorld, WorldInfo]:
    key = (apps, seed, clock.isoformat())
    if key not in _WORLDS:
        world = MockWorld(list(apps), seed=seed, clock=clock)
        _WORLDS[key] = (world, WorldInfo.of(world))
    return _WORLDS[key]


def draft_one(
    template: Template, seed: int, world_seed: int, attempt: int, clock: datetime = DEFAULT_CLOCK
) -> Task:
    """Attempt `attempt` of a template's stream: a task, or Skip."""
    world, info = _world(template.apps, world_seed, clock)
    world.reset(seed=world_seed, clock=clock)
    world.take_diff()
    rng = random.Random(f"{seed}:{template.name}:{attempt}")
    draft = Draft(template, world, rng)
    try:
        template.draft(draft)
        return finish(template, draft, world, info, f"gen-{template.name}-{seed}-{attempt}")
    finally:
        world.reset(seed=world_seed, clock=clock)


def run_request(request: Request) -> Batch:
    """Draft a template's tasks (in a worker process or here), each checked as `toolgym check`
    checks a task file (`toolgym.authoring.check`): one that fails is dropped, its reason counted."""
    template = request.template
    tasks: list[Task] = []
    seen = set(request.seen)
    skipped: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    attempt, index, stale, exhausted = request.start, request.world_index, 0, False
    while len(tasks) < request.want and not exhausted:
        if stale >= STALE_ATTEMPTS:
            index, stale = index + 1, 0
        if index >= len(request.world_seeds) or attempt >= request.max_attempts:
            exhausted = True
            break
        attempt += 1
        stale += 1
        try:
            task = draft_one(template, request.seed, request.world_seeds[index], attempt - 1, request.clock)
        except Skip as exc:
            skipped[_reason(str(exc))] += 1
            continue
        if task.query in seen:
            skipped["duplicate query"] += 1
            continue
        seen.add(task.query)
        problems = task_problems(task) if request.check else []
        if request.check and task.dynamic and not problems:
            problems = blind_problems(task)
        if problems:
            dropped.update(_reason(p.message) for p in problems)
            continue
        tasks.append(task)
        stale = 0
    return Batch(template.name, tasks, attempt, index, exhausted, skipped, dropped)


# the checker of this process: its worlds and envs serve every task it checks (made before the
# pool forks its workers, so they start with it)
_CHECKER: list[TaskChecker] = []


def _checker() -> TaskChecker:
    if not _CHECKER:
        from toolgym.authoring.check import TaskChecker

        _CHECKER.append(TaskChecker(oracle=True))
    return _CHECKER[0]


def task_problems(task: Task) -> list[TaskProblem]:
    """`toolgym check`'s problems with one task: its names, answer, golden chain replayed twice,
    assertions before and after, and the oracle's episode (its apps' check_app: `_app_problems`)."""
    return _checker().check_task(task)


def blind_problems(task: Task) -> list[TaskProblem]:
    """A dynamic task that an agent missing its point still passes (one that ignores its
    notifications, one that never waits: `TaskChecker.blind_passes`) tests nothing its events add."""
    from toolgym.tasks import task_problem

    return [task_problem(task, message) for message in _checker().blind_passes(task)]


def _app_problems(job: tuple[str, int, datetime]) -> list[str]:
    """`check_app`'s verdict on one app, as `toolgym check` gives it for every app a set uses."""
    from toolgym.mocks.world import check_app

    app, seed, clock = job
    return [f"app {app!r}: {message}" for message in check_app(app, seed=seed, clock=clock)]


def _reason(text: str) -> str:
    # a skip's kind, without the values that make every message different
    return re.sub(r"\d+(?:\.\d+)?", "N", _ID.sub("ID", text))[:100]


# ---- the whole run -------------------------------------------------------------------------------
@dataclass
class Generated:
    """A generation's tasks (training part and held-out part) and what it did to get them."""

    tasks: list[Task]
    holdout: list[Task]
    templates: list[str]
    held_out_templates: list[str]
    skipped: Counter[str]
    dropped: Counter[str]
    requested: int
    app_problems: list[str] = field(default_factory=list)

    @property
    def all_tasks(self) -> list[Task]:
        return self.tasks + self.holdout


WORLD_SEEDS_PER_RUN: Final = 4


def world_seeds(seed: int) -> tuple[int, ...]:
    """The world seeds a run's drafts may use, in order (a stream moves on when one is spent)."""
    return tuple(seed * WORLD_SEEDS_PER_RUN + i for i in range(WORLD_SEEDS_PER_RUN))


def _quotas(n: int, count: int) -> list[int]:
    return [n // count + (1 if i < n % count else 0) for i in range(count)]


Mapper = Callable[[Callable[[Any], Any], list[Any]], list[Any]]


@contextlib.contextmanager
def _mapper(jobs: int) -> Iterator[Mapper]:
    """A map over `jobs` worker processes (kept for the whole run, so their worlds and checker stay
    warm), in the items' order whatever order they finish in; in this process for one job."""
    if jobs <= 1:
        yield lambda fn, items: [fn(item) for item in items]
        return
    import multiprocessing

    from toolgym.envs.rollouts import fork_is_safe, process_start_method

    # forked workers start with what this process loaded (the checker, the registries); a process
    # with other threads (a test runner's, a server's) is never forked: its workers would hang on
    # a lock one of those threads held (stop 42's CI hung in them for an hour)
    context = multiprocessing.get_context("fork" if fork_is_safe() else process_start_method())
    # the workers end with this process, kill -9 included (an orphan waited for good on a result
    # queue no one read): they exit when `held` closes
    lifeline, held = context.Pipe(duplex=False)
    try:
        with ProcessPoolExecutor(
            max_workers=jobs, mp_context=context, initializer=_worker_init, initargs=(lifeline, held)
        ) as pool:
            yield lambda fn, items: list(pool.map(fn, items))
    finally:
        held.close()
        lifeline.close()


def _worker_init(lifeline: Connection, held: Connection) -> None:
    from toolgym.envs.rollouts import exit_with_driver

    held.close()  # a forked worker's copy of the driver's end: only the driver's may keep it open
    exit_with_driver(lifeline)


def _sample(
    templates: list[Template], n: int, seed: int, clock: datetime, check: bool, run: Mapper
) -> tuple[dict[str, list[Task]], Counter[str], Counter[str]]:
    """Up to n checked tasks of distinct queries, spread over the templates as evenly as they allow."""
    seeds = world_seeds(seed)
    got: dict[str, list[Task]] = {t.name: [] for t in templates}
    state = {t.name: (0, 0, False) for t in templates}  # next attempt, world index, exhausted
    seen: set[str] = set()
    skipped: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    for _round in range(8):
        total = sum(len(v) for v in got.values())
        open_ = [t for t in templates if not state[t.name][2]]
        if total >= n or not open_:
            break
        # the first round asks each template for its share; later ones share what is missing
        requests = []
        for template, want in zip(open_, _quotas(n - total, len(open_)), strict=True):
            attempt, index, _ = state[template.name]
            if want > 0:
                mine = frozenset(t.query for t in got[template.name])
                limit = attempt + 8 * want + STALE_ATTEMPTS * len(seeds)  # room to try every world
                requests.append(
                    Request(template, seed, seeds, attempt, index, want, limit, clock, check, mine)
                )
        for batch in run(run_request, requests):
            state[batch.template] = (batch.next_attempt, batch.world_index, batch.exhausted)
            skipped.update(batch.skipped)
            dropped.update(batch.dropped)
            for task in batch.tasks:
                if task.query in seen:
                    skipped["duplicate query"] += 1
                    continue
                seen.add(task.query)
                got[batch.template].append(task)
    return got, skipped, dropped


def _round_robin(got: dict[str, list[Task]], n: int) -> list[Task]:
    """N tasks, a template's first before any template's second, in `got`'s order of templates."""
    order = list(got.values())
    out: list[Task] = []
    depth = 0
    while len(out) < n and any(depth < len(v) for v in order):
        for tasks in order:
            if depth < len(tasks) and len(out) < n:
                out.append(tasks[depth])
        depth += 1
    return out


def held_out(templates: Sequence[str], fraction: float, seed: int) -> list[str]:
    """The templates a holdout keeps apart: round(fraction * count) of them (at least one and at
    most all but one when fraction > 0), drawn with the run's seed."""
    if not 0 <= fraction < 1:
        raise ValueError(f"--holdout is a fraction in [0, 1), not {fraction}")
    if fraction == 0 or len(templates) < 2:
        return []
    k = min(len(templates) - 1, max(1, round(fraction * len(templates))))
    return sorted(random.Random(f"{seed}:holdout").sample(sorted(templates), k))


def generate(
    apps: Sequence[str],
    n: int,
    seed: int = 0,
    *,
    holdout: float = 0.0,
    jobs: int | None = None,
    templates: Sequence[Template] | None = None,
    check: bool = True,
    clock: datetime = DEFAULT_CLOCK,
    categories: Sequence[str] | None = None,
) -> Generated:
    """N tasks over the templates of `apps` (app or group names), each passing `toolgym check`
    (`check=False`: not checked), deterministic in its arguments (not in `jobs`); `templates`
    replaces the registered ones, and `categories` keeps only the templates of those behaviour
    categories (`Template.category`); without it, the registered behaviour-category templates are
    left out (asked for by name: a run without `--category` writes what it wrote before they came).
    A template whose app fails check_app gives no task."""
    if n < 1:
        raise ValueError(f"--n must be at least 1, not {n}")
    chosen = list(templates) if templates is not None else templates_for(resolve_apps(apps))
    if categories is None and templates is None:
        chosen = [t for t in chosen if t.category is None]
    elif categories is not None:
        chosen = [t for t in chosen if t.category in categories]
        if not chosen:
            raise ValueError(
                f"no templates of categories {', '.join(categories)} for apps {', '.join(apps)}"
                f" (categories: {', '.join(template_categories()) or 'none'})"
            )
    if not chosen:
        raise ValueError(f"no templates for apps {', '.join(apps)}")
    names = [t.name for t in chosen]
    if len(set(names)) != len(names):
        raise ValueError(f"templates named twice: {sorted(x for x in set(names) if names.count(x) > 1)}")
    if check:
        _checker()  # before the workers fork: they start with it
    app_problems: list[str] = []
    with _mapper(jobs or os.cpu_count() or 1) as run:
        if check:
            used = sorted({a for t in chosen for a in t.apps})
            verdicts = run(_app_problems, [(a, world_seeds(seed)[0], clock) for a in used])
            bad = {a for a, v in zip(used, verdicts, strict=True) if v}
            app_problems = [line for v in verdicts for line in v]
            chosen = [t for t in chosen if not bad & set(t.apps)]
        # the templates in an order drawn with the run's seed: quotas and rounds follow it, so a run
        # smaller than the number of templates samples them all (every group, every app), not the
        # first few of the first group
        order = list(chosen)
        random.Random(f"{seed}:templates").shuffle(order)
        got, skipped, dropped = (
            _sample(order, n, seed, clock, check, run) if order else ({}, Counter(), Counter())
        )
    tasks = _round_robin(got, n)
    random.Random(f"{seed}:order").shuffle(tasks)
    held = set(held_out(names, holdout, seed))
    return Generated(
        tasks=[t for t in tasks if t.metadata["template"] not in held],
        holdout=[t for t in tasks if t.metadata["template"] in held],
        templates=names,
        held_out_templates=sorted(held),
        skipped=skipped,
        dropped=dropped,
        requested=n,
        app_problems=app_problems,
    )


def summary(result: Generated) -> list[str]:
    """What `toolgym generate` prints: counts, distributions, what was dropped and why."""
    tasks = result.all_tasks
    lines = [
        f"tasks: {len(tasks)} of {result.requested} asked"
        + (
            f" ({len(result.tasks)} training, {len(result.holdout)} held out)"
            if result.held_out_templates
            else ""
        ),
        f"templates: {len(result.templates)}"
        + (
            f" ({len(result.held_out_templates)} held out: {', '.join(result.held_out_templates)})"
            if result.held_out_templates
            else ""
        ),
        f"distinct queries: {len({t.query for t in tasks})}",
    ]
    for label, key in (("shapes", "shape"), ("chain lengths", "chain_length"), ("difficulty", "difficulty")):
        counts = Counter(t.metadata[key] for t in tasks)
        lines.append(
            f"{label}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: str(kv[0])))
        )
    behaviours = Counter(t.category for t in tasks if t.category != t.metadata["shape"])
    if behaviours:  # the behaviour-category templates' (categories.py)
        lines.append("categories: " + ", ".join(f"{k} {v}" for k, v in sorted(behaviours.items())))
    apps = Counter(a for t in tasks for a in t.metadata["apps"])
    lines.append("apps: " + ", ".join(f"{k} {v}" for k, v in sorted(apps.items())))
    spans = Counter(len(t.metadata["apps"]) for t in tasks)
    lines.append("apps per task: " + ", ".join(f"{k} {v}" for k, v in sorted(spans.items())))
    for line in result.app_problems:
        lines.append(f"no tasks of this app: {line}")
    dropped = sum(result.dropped.values())
    lines.append(
        f"dropped by the check: {dropped}"
        + (": " + "; ".join(f"{r} ({c})" for r, c in result.dropped.most_common()) if dropped else "")
    )
    if len(tasks) < result.requested:
        top = "; ".join(f"{r} ({c})" for r, c in result.skipped.most_common(5))
        lines.append(
            f"short of {result.requested}: the templates gave no more distinct tasks (drafts skipped: {top})"
        )
    return lines


def dump(tasks: Iterable[Task]) -> str:
    """The JSONL text of tasks, as TaskSet.dump writes it."""
    return "".join(t.model_dump_json(exclude_none=True) + "\n" for t in tasks)


__all__ = [
    "REFUSAL_WORDS",
    "SHAPES",
    "Draft",
    "Generated",
    "Skip",
    "Template",
    "dump",
    "expected_state_of",
    "generate",
    "held_out",
    "resolve_apps",
    "summary",
    "template_categories",
    "templates_for",
]
