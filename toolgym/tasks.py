"""Tasks: what an episode asks, which files and tools it has, its golden chain and answer spec.

The native format is JSONL, one Task per line; file paths are relative to the JSONL file. The
format is strict (docs/tasks.md, docs/task-schema.json): an unknown key anywhere in a task is an
error, and every problem found with a task is one `TaskProblem` line naming the file, the line and
the task id (`read_task_file`, `TaskFileError`; `task_problem` for problems found when a task is
used), never a raw pydantic dump.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from toolgym.actions import AskUser, FinalAnswer, NoCall, ToolCall
from toolgym.errors import ErrorKind
from toolgym.files import FileKind
from toolgym.tools import DEFAULT_CLOCK


# ---- problems ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class TaskProblem:
    """One problem with a task, as one line: `file:line: task_id: message` (parts that are not
    known are left out)."""

    file: str | None
    line: int | None
    task_id: str | None
    message: str

    def __str__(self) -> str:
        where = self.file if self.file is not None else None
        if self.line is not None:
            where = f"{where}:{self.line}" if where is not None else f"line {self.line}"
        return ": ".join(part for part in (where, self.task_id, self.message) if part is not None)


class TaskFileError(ValueError):
    """Problems with tasks (a task file's, all of them; or a task's, found when it is used): one
    `TaskProblem` per line of the message."""

    def __init__(self, problems: Sequence[TaskProblem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    def __reduce__(self) -> tuple[Any, ...]:  # pickled whole: a process pool hands it back
        return (type(self), (self.problems,))


class TaskUseError(TaskFileError, KeyError):
    """A problem found when a task is used (an unknown app, a tool the env does not have, a table
    or column its expected_state names that the world does not have), placed at the task's file
    and line (`task_problem`). A KeyError too, as the unknown app's and tool's errors were."""

    def __str__(self) -> str:  # KeyError's own would quote the message
        return ValueError.__str__(self)


def suggestion(name: str, known: Iterable[str]) -> str:
    """A mistyped name's " (did you mean 'x'?)": the closest of `known`, or "" for none close."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _maybe(name: str, known: Iterable[str]) -> str:
    """The same, said inside a parenthesis that lists `known`: "; did you mean 'x'?", or ""."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


# ---- state assertions (Task.expected_state; evaluated by toolgym.mocks.rewards) -------------------
class _Assertion(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    table: str
    where: dict[str, Any] = Field(default_factory=dict)


class RowExists(_Assertion):
    """At least one row of `table` matches `where`."""

    kind: Literal["row_exists"] = "row_exists"


class RowAbsent(_Assertion):
    """No row of `table` matches `where`."""

    kind: Literal["row_absent"] = "row_absent"


class FieldEquals(_Assertion):
    """Rows match `where`, and in every one of them `field` equals `value`."""

    kind: Literal["field_equals"] = "field_equals"
    field: str
    value: Any


class RowCount(_Assertion):
    """Exactly `n` rows of `table` match `where`."""

    kind: Literal["count"] = "count"
    n: int


StateAssertion = Annotated[RowExists | RowAbsent | FieldEquals | RowCount, Field(discriminator="kind")]
STATE_ASSERTIONS: TypeAdapter[list[StateAssertion]] = TypeAdapter(list[StateAssertion])
ASSERTION_KINDS: dict[str, type[_Assertion]] = {
    "row_exists": RowExists,
    "row_absent": RowAbsent,
    "field_equals": FieldEquals,
    "count": RowCount,
}


# ---- milestones and minefields (Task.milestones / Task.minefields; scored by toolgym.envs.milestones)
# How an expected value is compared with what the world or a call holds, column by column:
# exact (canonical JSON equality), close (numbers within `tolerance`), contains (the expected
# text inside the actual one, case-insensitive), rouge_l (ROUGE-L F1 over words: free text).
ColumnMatch = Literal["exact", "close", "contains", "rouge_l"]
MAX_MILESTONES = 12  # the best order-respecting mapping is exact: 2^n states per step
CallOutcome = Literal["ok", "error", "any"]


class _Fact(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    match: dict[str, ColumnMatch] = Field(
        default_factory=dict, description="how each expected value is compared (default exact)"
    )
    tolerance: float = Field(default=0.01, ge=0, description="what `close` allows, absolute")


class StateFact(_Fact):
    """A fact about the world after a step: a row of `table` matching `where` (exactly) whose
    columns hold `values` (compared by `match`); with `absent`, that no row matches `where`."""

    table: str
    where: dict[str, Any] = Field(default_factory=dict, description="columns a row must equal exactly")
    values: dict[str, Any] = Field(default_factory=dict, description="columns scored by `match`")
    absent: bool = Field(default=False, description="the fact is that no row matches `where`")

    @model_validator(mode="after")
    def _absent_has_no_values(self) -> StateFact:
        if self.absent and self.values:
            raise ValueError("an absent row has no values: put the columns that identify it in `where`")
        unknown = set(self.match) - set(self.values)
        if unknown:
            raise ValueError(f"match names columns not in values: {sorted(unknown)}")
        return self


class CallFact(_Fact):
    """A call of a step: `tool` called with (at least) `arguments` (compared by `match`), with
    the outcome asked for (`ok`: no error; `error`; `any`: attempted, whatever happened)."""

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict, description="arguments scored by `match`")
    outcome: CallOutcome = "ok"

    @model_validator(mode="after")
    def _match_names_arguments(self) -> CallFact:
        unknown = set(self.match) - set(self.arguments)
        if unknown:
            raise ValueError(f"match names arguments not in arguments: {sorted(unknown)}")
        return self


class TimeWindow(BaseModel):
    """When a milestone counts or a minefield is armed, in simulated time: from `from_s` to
    `until_s` seconds after the event `after_event` fired (after the episode's start when null);
    with `before_event`, only until that event has fired. A window after an event that never
    fires never opens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    after_event: str | None = Field(
        default=None, description="the event the window starts from; null: the start"
    )
    from_s: float = Field(default=0.0, ge=0, description="seconds after that when the window opens")
    until_s: float | None = Field(
        default=None, ge=0, description="seconds after that when it closes; null: never"
    )
    before_event: str | None = Field(default=None, description="the window closes when this event fires")

    @model_validator(mode="after")
    def _opens_before_it_closes(self) -> TimeWindow:
        if self.until_s is not None and self.until_s < self.from_s:
            raise ValueError(
                f"the window closes (until_s {self.until_s}) before it opens (from_s {self.from_s})"
            )
        return self

    def events(self) -> set[str]:
        return {e for e in (self.after_event, self.before_event) if e is not None}


class _Checkpoint(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    state: StateFact | None = Field(default=None, exclude_if=lambda v: v is None)
    call: CallFact | None = Field(default=None, exclude_if=lambda v: v is None)
    window: TimeWindow | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="when, in simulated time, the fact counts (a milestone) or is armed (a minefield)",
    )

    @model_validator(mode="after")
    def _one_fact(self) -> _Checkpoint:
        if (self.state is None) == (self.call is None):
            raise ValueError(f"{self.id!r}: give exactly one of state and call")
        return self


class Milestone(_Checkpoint):
    """A fact the agent should bring about, after the milestones in `after` (the DAG's edges):
    matched to the step where it holds by the best mapping that respects the order."""

    after: list[str] = Field(default_factory=list, description="milestones reached no later than this")


class Minefield(_Checkpoint):
    """A fact that must never hold, checked after every step: a hit zeroes the reward. With
    `before_user_turns`, only while the simulated user has answered fewer times than that (counted
    when the step starts): a write before the user confirmed."""

    before_user_turns: int | None = Field(
        default=None,
        ge=1,
        exclude_if=lambda v: v is None,
        description="armed only until the user has answered this many times (a write before the user confirmed)",
    )


def _checkpoint_ids(items: Sequence[_Checkpoint | Event], what: str) -> set[str]:
    ids = [m.id for m in items]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ValueError(f"{what} ids repeat: {repeated}")
    return set(ids)


def check_milestone_graph(milestones: Sequence[Milestone]) -> None:
    """Unique ids, edges to known milestones, no cycle, at most MAX_MILESTONES; ValueError says which."""
    if len(milestones) > MAX_MILESTONES:
        raise ValueError(f"{len(milestones)} milestones: at most {MAX_MILESTONES} per task")
    known = _checkpoint_ids(milestones, "milestone")
    for m in milestones:
        unknown = sorted(set(m.after) - known)
        if unknown:
            raise ValueError(f"milestone {m.id!r} comes after unknown milestones {unknown}")
    placed: set[str] = set()
    waiting = list(milestones)
    while waiting:
        ready = [m for m in waiting if set(m.after) <= placed]
        if not ready:
            raise ValueError(f"milestones form a cycle: {sorted(m.id for m in waiting)}")
        placed.update(m.id for m in ready)
        waiting = [m for m in waiting if m.id not in placed]


# ---- events, notifications and simulated time (Task.events / Task.time; run by toolgym.mocks.events)
class EventCall(BaseModel):
    """An app API the environment calls when an event fires (a write, usually: a message arrives,
    a booking is cancelled, a price changes)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tool: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class Notification(BaseModel):
    """What the agent is told when an event fires, in its next observation. Which notifications
    reach it is the env's verbosity: "high" all events (those without a text get a plain one),
    "medium" (the default) those with a notification, "low" the important ones, "none" none."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str = Field(min_length=1)
    important: bool = Field(default=False, description="delivered at verbosity low too")


class Event(BaseModel):
    """A change the environment makes to the world, not the agent: `calls` (the apps' own APIs,
    so hashes, diffs, checkpoints and fork cover it) and an optional notification. Exactly one
    trigger: a simulated time (`at`), after the agent's step `after_step`, after another event
    (`after_event`), or when a fact about the world holds (`when`, checked after each step and
    each event); `delay_s` later than the trigger (not with `at`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    at: datetime | None = Field(default=None, exclude_if=lambda v: v is None)
    after_step: int | None = Field(default=None, ge=1, exclude_if=lambda v: v is None)
    after_event: str | None = Field(default=None, exclude_if=lambda v: v is None)
    when: StateFact | None = Field(default=None, exclude_if=lambda v: v is None)
    delay_s: float = Field(default=0.0, ge=0, description="simulated seconds after the trigger")
    calls: list[EventCall] = Field(
        default_factory=list, description="app APIs called as the environment, in order"
    )
    notify: Notification | None = Field(default=None, exclude_if=lambda v: v is None)

    @model_validator(mode="after")
    def _one_trigger(self) -> Event:
        triggers = [t for t in ("at", "after_step", "after_event", "when") if getattr(self, t) is not None]
        if len(triggers) != 1:
            raise ValueError(
                f"event {self.id!r}: give exactly one of at, after_step, after_event, when (got {triggers or 'none'})"
            )
        if self.at is not None and self.delay_s:
            raise ValueError(f"event {self.id!r}: an event at a time takes no delay_s")
        if not self.calls and self.notify is None:
            raise ValueError(f"event {self.id!r} changes nothing: give calls, a notification or both")
        return self


MAX_SIMULATED_S = 366 * 86400  # a year: the most a step's think time or one wait may take


class TimePolicy(BaseModel):
    """How simulated time passes in an episode: each step costs `per_step_s` plus `per_output_token_s`
    for each token of the agent's output (toolgym's own count: `toolgym.mocks.events.output_tokens`,
    so one output costs the same time whatever model or tokenizer wrote it); the `wait` tool lets
    the agent pass up to `max_wait_s` at once. Nothing reads the wall clock."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # bounded, so that no episode's clock can run past what a date holds (year 9999)
    per_step_s: float = Field(
        default=0.0, ge=0, le=MAX_SIMULATED_S, description="simulated seconds each step takes"
    )
    per_output_token_s: float = Field(
        default=0.0, ge=0, le=3600, description="simulated seconds per output token"
    )
    max_wait_s: float = Field(
        default=3600.0, gt=0, le=MAX_SIMULATED_S, description="the most one wait call may pass"
    )


def check_event_graph(events: Sequence[Event], clock: datetime) -> None:
    """Unique ids, `after_event` naming known events without a cycle, times on the task's clock's
    kind (aware or naive) and after its start; ValueError says which."""
    known = _checkpoint_ids(events, "event")
    parent: dict[str, str] = {}
    for event in events:
        if event.after_event is not None:
            if event.after_event not in known:
                raise ValueError(
                    f"event {event.id!r} comes after unknown event {event.after_event!r}{_maybe(event.after_event, known)}"
                )
            parent[event.id] = event.after_event
        if event.at is not None:
            if (event.at.tzinfo is None) != (clock.tzinfo is None):
                raise ValueError(
                    f"event {event.id!r}: `at` and the task's clock must both have a time zone, or neither"
                )
            if event.at <= clock:
                raise ValueError(
                    f"event {event.id!r} is at {event.at.isoformat()}, not after the task's start {clock.isoformat()}"
                )
    for start in parent:
        seen, node = {start}, parent[start]
        while node in parent:
            if parent[node] in seen:
                raise ValueError(f"events wait on each other in a cycle: {sorted(seen | {node})}")
            seen.add(node)
            node = parent[node]


# ---- golden actions, checked strictly -------------------------------------------------------------
# The action models of toolgym.actions take what agents and protocols send and ignore keys they do
# not know; a golden step is written by hand, so its action is checked with these strict copies
# first (an unknown key is an error) and then built as the ordinary action.
class _StrictToolCall(ToolCall):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _StrictFinalAnswer(FinalAnswer):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _StrictNoCall(NoCall):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _StrictAskUser(AskUser):
    model_config = ConfigDict(frozen=True, extra="forbid")


ACTION_TYPES: dict[str, type[BaseModel]] = {
    "tool_call": ToolCall,
    "final_answer": FinalAnswer,
    "no_call": NoCall,
    "ask_user": AskUser,
}
_STRICT_ACTION: TypeAdapter[Any] = TypeAdapter(
    Annotated[
        _StrictToolCall | _StrictFinalAnswer | _StrictNoCall | _StrictAskUser, Field(discriminator="type")
    ]
)


class TaskFile(BaseModel):
    """A file the task gives the agent."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description='how the task and the agent refer to it, e.g. "image/receipt.png"')
    path: str = Field(description="where the bytes are, relative to the task file")
    type: FileKind = "image"


class GoldenStep(BaseModel):
    """One step of the reference chain: an action and, for tool calls, the expected result and
    whether the call is meant to fail (`expect_error`: the error kind it must fail with)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    action: ToolCall | FinalAnswer | NoCall | AskUser = Field(discriminator="type")
    expected: Any = Field(
        default=None, description="the result the call should give (JSON); null: not checked"
    )
    # the kind of error this tool call must fail with ("try, get the 409, explain"); a golden call
    # without it must not fail. Left out of dumps when absent, so older tasks dump and hash as before
    expect_error: ErrorKind | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="the error kind (toolgym.errors.ErrorKind) this tool call must fail with; "
        "absent: the call must succeed",
    )

    @field_validator("action", mode="before")
    @classmethod
    def _no_unknown_action_keys(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            _STRICT_ACTION.validate_python(value)  # its errors are this field's (loc: action.<type>...)
        return value

    @model_validator(mode="after")
    def _errors_only_for_calls(self) -> GoldenStep:
        if self.expect_error is not None and not isinstance(self.action, ToolCall):
            raise ValueError(f"expect_error is for tool calls only, not a {self.action.type} step")
        return self


class AnswerSpec(BaseModel):
    """GTA semantics: every whitelist group must match (any alias, case-insensitive, whole word
    or phrase) and no blacklist alias may match; `references` are scored by similarity."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    whitelist: list[list[str]] | None = Field(
        default=None, description="groups of aliases: every group matched by one of its aliases"
    )
    blacklist: list[list[str]] | None = Field(
        default=None, description="groups of aliases none of which may appear"
    )
    references: list[str] | None = Field(
        default=None, description="reference answers, scored by similarity (when there is no whitelist)"
    )


# A "word character" for answer boundaries: letters and digits of spaced scripts. Han, kana and
# other unspaced scripts are no word characters here (Chinese has no spaces between words), so
# "58" is found in "58天" and "南京" in "寄往南京的包裹".
UNSPACED_SCRIPTS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u0e00-\u0e7f"
_WORD = rf"[^\W{UNSPACED_SCRIPTS}]"
# one word character at a position (compiled once: a pattern with _WORD in it costs about a
# millisecond to compile, and every alias of every scored answer used to compile its own)
_WORD_CHAR = re.compile(_WORD)
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\d])")


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def as_number(text: str) -> float | None:
    """A plain decimal number ("4,825.50" -> 4825.5), or None."""
    t = text.strip().replace(",", "")
    if re.fullmatch(r"[-+]?\d+(?:\.\d+)?", t):
        return float(t)
    return None


def _whole_word_in(text: str, needle: str) -> bool:
    """Whether `needle` (not empty) occurs in `text` with no word character (`_WORD`) right
    before or right after it: `re.search(rf"(?<!{_WORD})" + re.escape(needle) + rf"(?!{_WORD})",
    text)`, each occurrence tried in turn, without a pattern compiled per needle."""
    start = text.find(needle)
    while start >= 0:
        end = start + len(needle)
        if (start == 0 or _WORD_CHAR.match(text, start - 1) is None) and (
            end == len(text) or _WORD_CHAR.match(text, end) is None
        ):
            return True
        start = text.find(needle, start + 1)
    return False


def alias_found(text: str, alias: str) -> bool:
    """Unicode-aware whole-word match (NFKC, so full-width digits and punctuation count as their
    ASCII forms; case-folded; boundaries that work for "$5", "C++" and unspaced scripts such as
    Chinese); a numeric alias also matches the same number written differently ("4,825.50" for
    "4825.5")."""
    a = _norm(alias).strip()
    if not a:
        return False
    t = _norm(text)
    if _whole_word_in(t, a):
        return True
    value = as_number(a)
    if value is None:
        return False
    return any(
        math.isclose(float(m.group().replace(",", "")), value, rel_tol=1e-9, abs_tol=1e-9)
        for m in _NUMBER.finditer(t)
    )


class UserScenario(BaseModel):
    """The simulated user of a multi-turn task (toolgym.envs.users): who they are, what they want,
    what they know (slot -> value), which of those facts they never offer unprompted, when they
    are satisfied, and how many turns they give the agent. Facts the agent cannot know from the
    query live here, so the agent has to ask for them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    persona: str = Field(min_length=1, description="who the user is, in a sentence")
    goal: str = Field(min_length=1, description="what the user wants done, in words")
    known: dict[str, str] = Field(description="what the user knows: slot name -> value")
    must_not_volunteer: list[str] = Field(
        default_factory=list, description="known slots told only when the agent asks for them"
    )
    satisfied_when: str = Field(min_length=1, description="when the user is satisfied, in words")
    # deterministic form of satisfied_when: every group matched (any alias, whole word) by what
    # the agent tells the user; empty = only the words above (an LLM user reads them)
    satisfied_phrases: list[list[str]] = Field(default_factory=list)
    # extra words that ask for a slot (the slot name with spaces always does), for the rule-based user
    slot_keywords: dict[str, list[str]] = Field(default_factory=dict)
    max_turns: int = Field(default=5, ge=1, le=100, description="user turns before the user leaves")

    @model_validator(mode="after")
    def _consistent(self) -> UserScenario:
        unknown = sorted(set(self.must_not_volunteer) - set(self.known))
        if unknown:
            raise ValueError(f"must_not_volunteer names slots the user does not know: {', '.join(unknown)}")
        stray = sorted(set(self.slot_keywords) - set(self.known))
        if stray:
            raise ValueError(f"slot_keywords names slots the user does not know: {', '.join(stray)}")
        return self


class ScenarioError(ValueError):
    """A task whose user scenario is missing fields or contradicts itself; names the task.
    `lines`: the same problems as short lines (`validation_lines`), one per problem."""

    def __init__(self, task_id: str, problem: str, lines: Sequence[str] = ()) -> None:
        super().__init__(f"task {task_id!r}: invalid user scenario: {problem}")
        self.task_id = task_id
        self.problem = problem
        self.lines = list(lines) or [f"user: {problem}"]

    def __reduce__(self) -> tuple[Any, ...]:
        return (ScenarioError, (self.task_id, self.problem, self.lines))


class Task(BaseModel):
    """One task: see docs/tasks.md for every field. `origin` (file, line) is where it was read
    from, when it was read from a file; it is no part of the task's dumps, hash or equality."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(description="the task's name, unique in its file")
    query: str = Field(description="what the user asks")
    files: list[TaskFile] = Field(default_factory=list, description="files the agent is given")
    tools: list[str] | None = Field(
        default=None, description="the tools offered (names); null: every tool of the env"
    )
    golden: list[GoldenStep] = Field(
        default_factory=list, description="the reference chain: what a correct agent does"
    )
    answer: AnswerSpec | None = Field(default=None, description="how the final answer is scored")
    clock: datetime = Field(default=DEFAULT_CLOCK, description="the world's simulated now at the start")
    seed: int = Field(default=0, description="seeds the world's data and the episode")
    category: str | None = Field(default=None, description="a label reports group tasks by")
    max_steps: int | None = Field(default=None, description="the task's step limit; null: the env's")
    # scripted user: the replies AskUser actions get, in order (multi-turn tasks)
    user_replies: list[str] = Field(
        default_factory=list, description="a scripted user: the replies the agent's questions get, in order"
    )
    # a simulated user (toolgym.envs.users); takes precedence over user_replies when set. Left
    # out of dumps when absent, so older tasks dump and hash (trace headers' task_hash) as before
    user: UserScenario | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="a simulated user (takes precedence over user_replies)",
    )
    # mock apps the task's world needs (names in toolgym.mocks.apps), and the expected final
    # state: state assertions as JSON (StateAssertion, checked when the task is read, kept as the
    # dicts they were written as so dumps and hashes do not change); the golden chain replayed on
    # a fresh world gives the expected state hash
    apps: list[str] | None = Field(default=None, description="the mock apps the task's world is made of")
    expected_state: list[dict[str, Any]] = Field(
        default_factory=list,
        description="state assertions on the final state: row_exists, row_absent, field_equals, count",
    )
    # partial credit and forbidden moves over the whole trajectory (toolgym.envs.milestones). Left
    # out of dumps when absent, so older tasks dump and hash as before; a mock-app task without
    # milestones gets them derived from its golden chain where they are scored
    milestones: list[Milestone] | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="facts to bring about, in the order of their `after` edges (a DAG); "
        "null: derived from the golden chain",
    )
    minefields: list[Minefield] | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="facts that must never hold, checked after every step; a hit zeroes the reward",
    )
    # a world that moves (toolgym.mocks.events): the environment's own changes and how simulated
    # time passes. Left out of dumps when absent, so older tasks dump and hash as before
    events: list[Event] | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="changes the environment makes to the world (at a time, after a step or an "
        "event, or when a fact holds), with the notifications they send the agent",
    )
    time: TimePolicy | None = Field(
        default=None,
        exclude_if=lambda v: v is None,
        description="how simulated time passes per step and output token, and the longest wait; "
        "a task with events or a time policy offers the `wait` and `current_time` tools",
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="anything else (suites and tools read their own keys)"
    )

    _origin: tuple[str, int] | None = PrivateAttr(default=None)

    @property
    def origin(self) -> tuple[str, int] | None:
        """(file, line) the task was read from (`TaskSet.load`, `read_task_file`), else None."""
        return self._origin

    def __eq__(self, other: object) -> bool:
        # pydantic's equality compares private attributes too: where a task was read from is no
        # part of what it is
        if not isinstance(other, BaseModel):
            return NotImplemented
        return type(other) is type(self) and self.__dict__ == other.__dict__

    __hash__ = BaseModel.__hash__

    @model_validator(mode="before")
    @classmethod
    def _scenario_names_the_task(cls, data: Any) -> Any:
        # a bad scenario is reported with the task's id, not just as field "user.goal"
        if isinstance(data, dict) and isinstance(data.get("user"), dict):
            try:
                UserScenario.model_validate(data["user"])
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or 'scenario'}: {e['msg']}" for e in exc.errors()
                )
                lines = validation_lines(exc.errors(), within=("user",))
                raise ScenarioError(str(data.get("id", "?")), problems, lines) from None
        return data

    @field_validator("milestones", mode="after")
    @classmethod
    def _milestones_form_a_dag(cls, value: list[Milestone] | None) -> list[Milestone] | None:
        if value is not None:
            check_milestone_graph(value)
        return value

    @field_validator("minefields", mode="after")
    @classmethod
    def _minefield_ids_are_unique(cls, value: list[Minefield] | None) -> list[Minefield] | None:
        if value is not None:
            _checkpoint_ids(value, "minefield")
        return value

    @model_validator(mode="after")
    def _events_are_consistent(self) -> Task:
        """Events form no cycle and name known events; time windows name known events."""
        events = self.events or []
        check_event_graph(events, self.clock)
        known = {e.id for e in events}
        for item in [*(self.milestones or []), *(self.minefields or [])]:
            unknown = sorted(item.window.events() - known) if item.window is not None else []
            if unknown:
                raise ValueError(f"{item.id!r}: its time window names unknown events {unknown}")
        return self

    @property
    def dynamic(self) -> bool:
        """The world moves on its own or time passes: the env runs a timeline (toolgym.mocks.events)."""
        return bool(self.events) or self.time is not None

    @field_validator("expected_state", mode="after")
    @classmethod
    def _assertions_are_valid(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        STATE_ASSERTIONS.validate_python(value)  # checked, not kept: the dicts are the stored form
        return value


def scenario_error(exc: ValidationError) -> ScenarioError | None:
    """The ScenarioError inside a task's ValidationError, if that is what failed."""
    for error in exc.errors():
        cause = (error.get("ctx") or {}).get("error")
        if isinstance(cause, ScenarioError):
            return cause
    return None


# ---- pydantic's errors as short lines ---------------------------------------------------------------
# Which model holds the keys at a place in a task (list indexes written "*"), for "did you mean";
# after the places in _TAGGED, pydantic's error paths name the union member (the action's type, the
# assertion's kind), which the lines leave out.
_MODELS_AT: dict[tuple[str, ...], type[BaseModel]] = {
    (): Task,
    ("files", "*"): TaskFile,
    ("golden", "*"): GoldenStep,
    ("answer",): AnswerSpec,
    ("user",): UserScenario,
    **{("golden", "*", "action", tag): model for tag, model in ACTION_TYPES.items()},
    **{("expected_state", "*", kind): model for kind, model in ASSERTION_KINDS.items()},
}
_TAGGED: dict[tuple[str, ...], list[str]] = {
    ("golden", "*", "action"): list(ACTION_TYPES),
    ("expected_state", "*"): list(ASSERTION_KINDS),
}


def _place(loc: Sequence[int | str]) -> tuple[str, tuple[str, ...]]:
    """A pydantic error path as written in a line ("golden[0].action.name") and its shape."""
    text, shape = "", ()  # type: tuple[str, tuple[str, ...]]
    for part in loc:
        if shape in _TAGGED:  # the union member's tag: the shape has it, the text does not
            shape = (*shape, str(part))
        elif isinstance(part, int):
            text, shape = f"{text}[{part}]", (*shape, "*")
        else:
            text, shape = f"{text}.{part}" if text else str(part), (*shape, part)
    return text, shape


def _meant_field(loc: Sequence[int | str]) -> str | None:
    """The field an unknown key at `loc` most likely meant: the closest of its model's fields."""
    model = _MODELS_AT.get(_place(loc[:-1])[1])
    close = difflib.get_close_matches(str(loc[-1]), list(model.model_fields) if model else [], n=1)
    return close[0] if close else None


def _error_line(error: ErrorDetails) -> str | None:
    """One pydantic error as a short line (None: a ScenarioError, whose own lines stand for it)."""
    ctx = error.get("ctx") or {}
    if isinstance(ctx.get("error"), ScenarioError):
        return None
    kind, loc = error["type"], error["loc"]
    if kind == "extra_forbidden":
        where, _ = _place(loc[:-1])
        meant = _meant_field(loc)
        text = f"unknown field {str(loc[-1])!r}" + (f" (did you mean {meant!r}?)" if meant else "")
    elif kind in ("union_tag_invalid", "union_tag_not_found"):
        where, shape = _place(loc)
        name = str(ctx.get("discriminator", "")).strip("'")
        tags = _TAGGED.get(shape, [])
        listed = f"{name}s: {', '.join(tags)}"
        if kind == "union_tag_not_found":
            text = f"missing field {name!r} ({listed})"
        else:
            text = f"unknown {name} {ctx.get('tag')!r} ({listed}{_maybe(str(ctx.get('tag')), tags)})"
    elif kind == "enum":
        where, _ = _place(loc)
        values = [
            v.strip().strip("'") for v in re.split(r",| or ", str(ctx.get("expected", ""))) if v.strip()
        ]
        value = str(error.get("input"))
        text = f"unknown value {value!r} (values: {', '.join(values)}{_maybe(value, values)})"
    elif kind == "missing":
        where, _ = _place(loc[:-1])
        text = f"missing field {str(loc[-1])!r}"
    else:
        where, _ = _place(loc)
        message = error["msg"]
        text = message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return f"{where}: {text}" if where else text


def validation_lines(errors: Iterable[ErrorDetails], within: Sequence[str | int] = ()) -> list[str]:
    """A task's ValidationError.errors() as short lines, one per problem: the path in the task and
    what is wrong, with "did you mean" for a mistyped key, tag or kind; `within` is the path of the
    model the errors are of (("user",) for a UserScenario's)."""
    located: list[ErrorDetails] = [{**e, "loc": (*within, *e["loc"])} for e in errors]
    # a misspelled required field is one problem: "unknown field 'pth' (did you mean 'path'?)"
    # says it, without "missing field 'path'" beside it
    meant = {(*e["loc"][:-1], _meant_field(e["loc"])) for e in located if e["type"] == "extra_forbidden"}
    lines: list[str] = []
    for error in located:
        cause = (error.get("ctx") or {}).get("error")
        if isinstance(cause, ScenarioError):
            lines.extend(cause.lines)
            continue
        if error["type"] == "missing" and tuple(error["loc"]) in meant:
            continue
        line = _error_line(error)
        if line is not None and line not in lines:
            lines.append(line)
    return lines


def task_json_schema() -> dict[str, Any]:
    """The task format as a JSON Schema (`toolgym schema task`, docs/task-schema.json): Task's own,
    with what its models check beyond their types written in: a golden action takes no unknown key
    either, and expected_state's entries are the assertion kinds (stored as plain objects)."""
    schema = Task.model_json_schema()
    defs = schema.setdefault("$defs", {})
    for name in ("ToolCall", "FinalAnswer", "NoCall", "AskUser"):
        defs[name]["additionalProperties"] = False
    assertion = TypeAdapter(StateAssertion).json_schema(ref_template="#/$defs/{model}")
    defs.update(assertion.pop("$defs"))
    # the tag that picks a union's member must be written, default or not
    for names, tag in ((ACTION_TYPES, "type"), (ASSERTION_KINDS, "kind")):
        for model in names.values():
            required = defs[model.__name__].setdefault("required", [])
            defs[model.__name__]["required"] = [tag, *(r for r in required if r != tag)]
    defs["StateAssertion"] = assertion
    expected_state = schema["properties"]["expected_state"]
    expected_state["items"] = {"$ref": "#/$defs/StateAssertion"}
    return schema


def task_schema_text() -> str:
    """docs/task-schema.json as it should read (`toolgym schema task`; python -m toolgym.tasks)."""
    return json.dumps(task_json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def task_problem(task: Task, message: str) -> TaskProblem:
    """A problem found with `task` when it is used, placed at the file and line it came from."""
    file, line = task.origin if task.origin is not None else (None, None)
    return TaskProblem(file=file, line=line, task_id=task.id, message=message)


def golden_final_answer(task: Task) -> str | None:
    """The text of the golden chain's last final answer (None: the chain gives none)."""
    return next((g.action.text for g in reversed(task.golden) if isinstance(g.action, FinalAnswer)), None)


def task_use_error(task: Task, exc: Exception) -> TaskUseError:
    """`exc`, raised where `task` was used, as a TaskUseError at the task's file and line (its
    message on one line; a ValidationError of the task's expected_state as short lines)."""
    if isinstance(exc, ValidationError):
        lines = validation_lines(exc.errors(), within=("expected_state",))
        return TaskUseError([task_problem(task, line) for line in lines])
    text = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
    return TaskUseError([task_problem(task, " ".join(str(text).split()))])


def _line_id(row: Any) -> str | None:
    task_id = row.get("id") if isinstance(row, dict) else None
    return task_id if isinstance(task_id, str) and task_id else None


def read_task_file(path: Path | str) -> tuple[list[Task], list[TaskProblem]]:
    """Every valid task of a JSONL task file and every problem found in it (a line that is not a
    JSON object, a task that does not validate, a duplicate id), reading on past bad lines."""
    tasks, problems, _ = _read_tasks(Path(path))
    return tasks, problems


def _read_tasks(path: Path) -> tuple[list[Task], list[TaskProblem], ScenarioError | None]:
    """`read_task_file`, and the first user scenario's error among the problems (TaskSet.load
    raises it as a ScenarioError too)."""
    name = str(path)
    tasks: list[Task] = []
    problems: list[TaskProblem] = []
    first_line: dict[str, int] = {}
    scenario: ScenarioError | None = None
    try:
        raw_lines = path.read_bytes().splitlines()
    except OSError as exc:
        return [], [TaskProblem(name, None, None, f"cannot read: {exc.strerror or exc}")], None
    for lineno, raw in enumerate(raw_lines, 1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            problems.append(TaskProblem(name, lineno, None, f"not UTF-8 text: {exc}"))
            continue
        except ValueError as exc:
            problems.append(TaskProblem(name, lineno, None, f"not JSON: {exc}"))
            continue
        task_id = _line_id(row)
        if not isinstance(row, dict):
            problems.append(
                TaskProblem(name, lineno, None, f"a task must be a JSON object, got {type(row).__name__}")
            )
            continue
        try:
            task = Task.model_validate(row)
        except ValidationError as exc:
            problems.extend(
                TaskProblem(name, lineno, task_id, line) for line in validation_lines(exc.errors())
            )
            scenario = scenario or scenario_error(exc)
            continue
        if task.id in first_line:
            message = f"duplicate task id (first on line {first_line[task.id]})"
            problems.append(TaskProblem(name, lineno, task.id, message))
            continue
        first_line[task.id] = lineno
        task._origin = (name, lineno)
        tasks.append(task)
    return tasks, problems, scenario


class _ScenarioFileError(TaskFileError, ScenarioError):
    """A task file whose problems include a user scenario's: both errors, so callers that catch
    ScenarioError (and read its task_id and problem) keep working."""

    def __init__(self, problems: Sequence[TaskProblem], scenario: ScenarioError) -> None:
        self.task_id, self.problem, self.lines = scenario.task_id, scenario.problem, scenario.lines
        self.problems = list(problems)
        ValueError.__init__(self, "\n".join(str(p) for p in self.problems))

    def __reduce__(self) -> tuple[Any, ...]:
        return (_ScenarioFileError, (self.problems, ScenarioError(self.task_id, self.problem, self.lines)))


class TaskSet:
    """An ordered collection of tasks plus the directory their file paths are relative to."""

    def __init__(self, tasks: Iterable[Task], base_dir: Path | str = ".") -> None:
        self.tasks = list(tasks)
        self.base_dir = Path(base_dir)
        self._by_id = {t.id: t for t in self.tasks}
        if len(self._by_id) != len(self.tasks):
            raise ValueError("duplicate task ids in task set")

    @classmethod
    def load(cls, path: Path | str) -> TaskSet:
        """The tasks of a JSONL file; a TaskFileError with every problem found in it, if any."""
        path = Path(path)
        tasks, problems, scenario = _read_tasks(path)
        if scenario is not None:
            raise _ScenarioFileError(problems, scenario)
        if problems:
            raise TaskFileError(problems)
        return cls(tasks, base_dir=path.parent)

    def dump(self, path: Path | str) -> None:
        with Path(path).open("w", encoding="utf-8") as fh:
            for t in self.tasks:
                fh.write(t.model_dump_json(exclude_none=True) + "\n")

    def file_path(self, f: TaskFile) -> Path:
        return self.base_dir / f.path

    def __getitem__(self, key: str | int) -> Task:
        return self._by_id[key] if isinstance(key, str) else self.tasks[key]

    def __contains__(self, key: object) -> bool:
        return key in self._by_id

    def __iter__(self) -> Iterator[Task]:
        return iter(self.tasks)

    def __len__(self) -> int:
        return len(self.tasks)


if __name__ == "__main__":
    print(task_schema_text(), end="")
