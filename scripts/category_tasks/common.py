"""What the builders of the behaviour-category sets share: a task as a `Spec` before it is built,
golden steps, minefields, refusal words, and seeded worlds to read the values of a task from."""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from toolgym.actions import ToolCall
from toolgym.authoring.generate import REFUSAL_WORDS
from toolgym.errors import ErrorKind
from toolgym.mocks.world import MockWorld
from toolgym.tasks import CallFact, Minefield, StateFact

OUT_DIR: Final = Path(__file__).resolve().parents[2] / "fixtures" / "categories"
CLOCK: Final = datetime(2024, 1, 1, tzinfo=UTC)  # a Monday, the default clock of every bundled set

INSUFFICIENT: Final = "insufficient_info"
PRECONDITION: Final = "hidden_precondition"
CANONICAL: Final = "canonicalization"
FILES: Final = {
    INSUFFICIENT: "insufficient_info.jsonl",
    PRECONDITION: "hidden_preconditions.jsonl",
    CANONICAL: "canonicalization.jsonl",
}

# What a right answer to an impossible request says, by why it is impossible: the refusal words of
# the generator and the ways people say the thing is missing. A whitelist of whole words and
# phrases, not a reference answer: similarity to a refusal would reward a fluent made-up answer.
CANNOT: Final = [*REFUSAL_WORDS["en"], "not possible", "could not", "couldn't"]
NOT_OFFERED: Final = [*CANNOT, "no tool", "not available", "don't have a tool", "do not have a tool"]
NOT_FOUND: Final = [
    *CANNOT,
    "not found",
    "no such",
    "does not exist",
    "doesn't exist",
    "could not find",
    "couldn't find",
    "don't see",
    "do not see",
    "don't have",
    "do not have",
    "there is no",
    "there's no",
    "not among",
]
NEEDS: Final = [
    *CANNOT,
    "need",
    "missing",
    "please tell me",
    "please specify",
    "please provide",
    "let me know",
    "could you tell me",
    "can you tell me",
]


# ---- a task before it is built ---------------------------------------------------------------------
@dataclass(frozen=True)
class Step:
    """A golden call and, for one that must fail, the error kind it fails with."""

    call: ToolCall
    error: ErrorKind | None = None


def call(name: str, /, **arguments: Any) -> Step:
    return Step(ToolCall(name=name, arguments=arguments))


def failing(name: str, /, **arguments: Any) -> Step:
    """A lookup that must fail (an id that does not exist): the typed error is the evidence."""
    return Step(ToolCall(name=name, arguments=arguments), ErrorKind.TOOL_ERROR)


def no_call(mine_id: str, tool: str, **arguments: Any) -> Minefield:
    """A minefield: any attempt of `tool` (with at least `arguments`), refused or not."""
    return Minefield(id=mine_id, call=CallFact(tool=tool, arguments=arguments, outcome="any"))


def no_row_change(mine_id: str, table: str, where: dict[str, Any], **values: Any) -> Minefield:
    """A minefield: the row `where` comes to hold `values` (a change nobody asked for)."""
    return Minefield(id=mine_id, state=StateFact(table=table, where=where, values=values))


def no_delete(mine_id: str, table: str, where: dict[str, Any]) -> Minefield:
    """A minefield: the row `where` is gone."""
    return Minefield(id=mine_id, state=StateFact(table=table, where=where, absent=True))


@dataclass
class Spec:
    """One task: its query, golden steps and final answer, what the answer must (not) say, the
    tools withheld from its apps' and the minefields. `precondition`: for a hidden-precondition
    task, the write that fails until the chain's first write is made (checked here)."""

    name: str
    kind: str
    apps: list[str]
    query: str
    steps: list[Step]
    answer: str
    whitelist: list[list[str]] = field(default_factory=list)
    blacklist: list[list[str]] = field(default_factory=list)
    withheld: list[str] = field(default_factory=list)
    minefields: list[Minefield] = field(default_factory=list)
    precondition: Step | None = None
    seed: int = 0
    clock: datetime = CLOCK
    extra: dict[str, Any] = field(default_factory=dict)


def refusal(*claims: str) -> list[list[str]]:
    """A blacklist against an answer that claims the impossible was done: "successfully" and each
    claim as a whole phrase ("I've transferred" is a claim; "I have not transferred" is not)."""
    return [["successfully", *claims]]


# ---- worlds to read from -----------------------------------------------------------------------------
@functools.cache
def world(apps: tuple[str, ...], seed: int = 0, clock: datetime = CLOCK) -> MockWorld:
    """A seeded world to draw a task's values from (read only: builders never call its tools)."""
    return MockWorld(list(apps), seed=seed, clock=clock)


def rows(
    apps: Sequence[str], sql: str, *params: Any, seed: int = 0, clock: datetime = CLOCK
) -> list[dict[str, Any]]:
    cursor = world(tuple(apps), seed, clock).store.conn.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r, strict=True)) for r in cursor]


def pick(items: Sequence[Any], key: str) -> Any:
    """One of `items`, chosen by a generator seeded with `key` (the same every run)."""
    if not items:
        raise SystemExit(f"{key}: nothing to choose from")
    return items[random.Random(f"categories:{key}").randrange(len(items))]


def row(
    apps: Sequence[str], sql: str, *params: Any, seed: int = 0, clock: datetime = CLOCK
) -> dict[str, Any]:
    found = rows(apps, sql, *params, seed=seed, clock=clock)
    if not found:
        raise SystemExit(f"no row for {sql!r} {params} (apps {apps}, seed {seed})")
    return found[0]
