"""What the builders of the dynamic task sets share: a task as a `Spec` before it is built, golden
calls (the agent's `wait` among them), events, time windows, state assertions, and seeded worlds
to read a task's values from (at the task's own clock: the apps seed relative to it)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

from toolgym.actions import ToolCall
from toolgym.mocks.events import WAIT_TOOL
from toolgym.mocks.world import MockWorld
from toolgym.tasks import (
    CallFact,
    Event,
    EventCall,
    Milestone,
    Minefield,
    Notification,
    StateFact,
    TimeWindow,
)

OUT_DIR: Final = Path(__file__).resolve().parents[2] / "fixtures" / "dynamic"
MONDAY: Final = datetime(2024, 1, 8, tzinfo=UTC)  # the week most tasks happen in

AT_TIME: Final = "at_time"
WORLD_CHANGES: Final = "world_changes"
WAIT_FOR_REPLY: Final = "wait_for_reply"
FILES: Final = {
    AT_TIME: "at_time.jsonl",
    WORLD_CHANGES: "world_changes.jsonl",
    WAIT_FOR_REPLY: "wait_for_reply.jsonl",
}
PREFIX: Final = {AT_TIME: "at", WORLD_CHANGES: "change", WAIT_FOR_REPLY: "reply"}


@dataclass
class Spec:
    """A dynamic task before it is built: the golden tool calls (`wait` ones included; the final
    answer is `answer`), the events, the hand-written state assertions (none of them may name a
    time the agent's pace decides) and the checks with their time windows."""

    name: str
    kind: str  # the subcategory, in the task's metadata
    query: str
    apps: list[str]
    clock: datetime
    calls: list[ToolCall]
    answer: str
    whitelist: list[list[str]]
    events: list[Event]
    state: list[dict[str, Any]]
    milestones: list[Milestone] = field(default_factory=list)
    minefields: list[Minefield] = field(default_factory=list)
    per_step_s: float = 30.0
    max_wait_s: float = 3600.0
    # the answer and whitelist from what the golden calls answered (an id or fee the apps make)
    answer_from: Callable[[list[Any]], tuple[str, list[list[str]]]] | None = None


def call(name: str, /, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


def wait(seconds: float) -> ToolCall:
    """The agent lets time pass; the wait ends early when a notification arrives."""
    return call(WAIT_TOOL, seconds=seconds)


def at(clock: datetime, hours: float = 0.0, minutes: float = 0.0) -> datetime:
    return clock + timedelta(hours=hours, minutes=minutes)


def hhmm(when: datetime) -> str:
    return when.strftime("%H:%M")


def event(
    id: str,
    text: str,
    *calls: ToolCall,
    when_at: datetime | None = None,
    when: StateFact | None = None,
    delay_s: float = 0.0,
    important: bool = False,
) -> Event:
    """An event at a time (`when_at`) or when a fact holds (`when`, `delay_s` later), calling the
    apps' APIs as the environment and notifying the agent with `text`."""
    return Event(
        id=id,
        at=when_at,
        when=when,
        delay_s=delay_s,
        calls=[EventCall(tool=c.name, arguments=c.arguments) for c in calls],
        notify=Notification(text=text, important=important),
    )


def early(mine: str, tool: str, before: str, /, **arguments: Any) -> Minefield:
    """Calling `tool` with `arguments` before event `before` fired: acting on what the agent could
    not know yet (a time not come, a change not happened, a reply not received)."""
    return Minefield(
        id=mine,
        call=CallFact(tool=tool, arguments=arguments, outcome="any"),
        window=TimeWindow(before_event=before),
    )


def done(milestone: str, tool: str, /, *, after_event: str, within_s: float, **arguments: Any) -> Milestone:
    """Calling `tool` with `arguments` successfully within `within_s` simulated seconds after
    event `after_event` fired."""
    window = TimeWindow(after_event=after_event, until_s=within_s)
    return Milestone(id=milestone, call=CallFact(tool=tool, arguments=arguments), window=window)


def row(table: str, **where: Any) -> dict[str, Any]:
    return {"kind": "row_exists", "table": table, "where": where}


def field_is(table: str, where: dict[str, Any], column: str, value: Any) -> dict[str, Any]:
    return {"kind": "field_equals", "table": table, "where": where, "field": column, "value": value}


def count(table: str, n: int, **where: Any) -> dict[str, Any]:
    return {"kind": "count", "table": table, "where": where, "n": n}


def message_fact(sender: str, conversation: str) -> StateFact:
    """A message from `sender` in `conversation` (a DM or group with no history from them: the
    builder checks the fact does not hold on the untouched world)."""
    return StateFact(table="messaging_messages", where={"sender_id": sender, "conversation_id": conversation})


def dm(a: str, b: str) -> str:
    """The messaging app's id of the direct conversation of two users."""
    low, high = sorted((a, b))
    return f"DM-{low}-{high}"


def dollars(cents: int) -> str:
    return f"${cents / 100:,.2f}"


@functools.cache
def seeded(apps: tuple[str, ...], clock: datetime) -> MockWorld:
    """The untouched world of `apps` at `clock`, to read a task's values from (never written)."""
    return MockWorld(apps, clock=clock)


def rows(apps: tuple[str, ...], clock: datetime, table: str, **where: Any) -> list[dict[str, Any]]:
    return seeded(apps, clock).rows(table, where or None)


def one(apps: tuple[str, ...], clock: datetime, table: str, **where: Any) -> dict[str, Any]:
    found = rows(apps, clock, table, **where)
    if len(found) != 1:
        raise SystemExit(f"{table} where {where}: {len(found)} rows, expected one")
    return found[0]


def probe(apps: tuple[str, ...], clock: datetime, *calls: ToolCall) -> list[Any]:
    """What `calls` answer on a copy of the untouched world, in order (a task's values that the
    apps compute: a free room, a search's first hit)."""
    world = seeded(apps, clock).fork()
    try:
        observations = [world.step(c) for c in calls]
    finally:
        world.close()
    failed = [f"{c.name}: {o.text}" for c, o in zip(calls, observations, strict=True) if o.error is not None]
    if failed:
        raise SystemExit(f"probe: {'; '.join(failed)}")
    return [o.content for o in observations]
