"""A world that moves: an episode's simulated time and the events that change its world.

A task's `events` (`toolgym.tasks.Event`) are writes the environment makes through the apps' own
APIs, and its `time` (`toolgym.tasks.TimePolicy`) says how simulated time passes. A `Timeline`
runs them for one episode over one `MockWorld`:

- `begin_step` moves the clock by what the agent's turn cost (`per_step_s`, plus
  `per_output_token_s` per token of its output: time passes while the model writes) and fires the
  events that fell due meanwhile, each at its own time, before the step's actions run;
- the agent's `wait` tool moves the clock up to the time asked for, and stops early at the first
  event whose notification reaches the agent; `current_time` reads it;
- `end_step` fires what waits on the step (`after_step`) and whatever fell due with it.

Events due at the same time fire in the order the task declares them. After each step and each
event the `when` facts are checked (`holds`, given by the env: the milestones' own check); an
event waiting on another (`after_event`) or on a fact falls due `delay_s` after it.

What has fired lives in the world's database (`_tg_meta`, key "timeline"), beside the clock, so
the state hash covers it and reset, checkpoints, restore and fork carry it: a fork taken before an
event fires fires it again when its time comes. Nothing reads the wall clock; the same task, seed
and actions fire the same events at the same simulated times in every process.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal

from toolgym.actions import Observation, ToolCall
from toolgym.canonical import canonical_json
from toolgym.errors import ArgumentError, ToolError
from toolgym.tasks import Event, StateFact, Task, TimePolicy
from toolgym.tools import ENV_BACKEND, Param, ToolContext, ToolSet, tool

if TYPE_CHECKING:
    from toolgym.mocks.world import MockWorld

TIMELINE_KEY: Final = "timeline"
WAIT_TOOL: Final = "wait"
TIME_TOOL: Final = "current_time"
TIMELINE_TOOLS: Final = (WAIT_TOOL, TIME_TOOL)
Verbosity = Literal["none", "low", "medium", "high"]
VERBOSITIES: Final[tuple[Verbosity, ...]] = ("none", "low", "medium", "high")
DEFAULT_VERBOSITY: Final[Verbosity] = "medium"  # events with a notification text notify
NO_POLICY: Final = TimePolicy()
# how a notification's text begins: "Notification (<simulated time>): <text>" (an agent that reads
# rendered text back tells notifications by it)
NOTIFICATION_PREFIX: Final = "Notification ("
_TOKENS = re.compile(r"\w+|[^\w\s]")


def output_tokens(output: Any) -> int:
    """The tokens of an agent's output as simulated time counts them: runs of letters and digits,
    and each other non-space character (a JSON message object is counted as its canonical JSON).
    A fixed rule, not a model's tokenizer: one output costs the same time whoever wrote it."""
    text = output if isinstance(output, str) else canonical_json(output)
    return len(_TOKENS.findall(text))


def notifies(event: Event, verbosity: Verbosity) -> bool:
    """Whether `event` notifies the agent at `verbosity` (see `toolgym.tasks.Notification`)."""
    if verbosity == "high":
        return True
    if event.notify is None or verbosity == "none":
        return False
    return verbosity == "medium" or event.notify.important


def notification_text(event: Event) -> str:
    if event.notify is not None:
        return event.notify.text
    calls = ", ".join(c.tool for c in event.calls)
    return f"Event {event.id} happened ({calls})."


@dataclass
class StepTime:
    """What simulated time did in one step: when its actions ran, the events fired (records for the
    trace) and the notifications the agent gets with its observation."""

    acted_at: datetime
    events: list[dict[str, Any]] = field(default_factory=list)
    notifications: list[Observation] = field(default_factory=list)


class _Memory:
    """Where a timeline keeps what it knows when its task has no world (a time policy alone)."""

    def __init__(self, start: datetime) -> None:
        self.now = start
        self.state = ""


class Timeline:
    """One episode's simulated time and events (see the module docstring). `holds(fact)` says
    whether a `when` fact holds on the world now."""

    def __init__(
        self,
        task: Task,
        world: MockWorld | None,
        *,
        holds: Callable[[StateFact], bool],
        verbosity: Verbosity = "medium",
    ) -> None:
        self.check_verbosity(verbosity)
        self.events = list(task.events or [])
        if world is None and any(e.calls or e.when is not None for e in self.events):
            raise ValueError("events that call apps or wait on a fact need the task's apps (a world)")
        self.policy = task.time or NO_POLICY
        self.world = world
        self.verbosity: Verbosity = verbosity
        self._holds = holds
        self._memory = _Memory(task.clock) if world is None else None
        self._children: dict[str, list[Event]] = {}
        for event in self.events:
            if event.after_event is not None:
                self._children.setdefault(event.after_event, []).append(event)
        self._order = {e.id: i for i, e in enumerate(self.events)}
        self._step: StepTime | None = None
        self.tools = TIMELINE_TOOLSET

    @staticmethod
    def check_verbosity(verbosity: str) -> None:
        if verbosity not in VERBOSITIES:
            raise ValueError(f"verbosity must be one of {list(VERBOSITIES)}, not {verbosity!r}")

    # ---- the clock and the state kept in the world --------------------------------------------
    def now(self) -> datetime:
        return self.world.clock.now() if self.world is not None else self._memory_now()

    def now_iso(self) -> str:
        return self.now().isoformat()

    def _memory_now(self) -> datetime:
        assert self._memory is not None
        return self._memory.now

    def _set_now(self, when: datetime) -> None:
        if when <= self.now():
            return
        if self.world is not None:
            self.world.clock.set(when)
        else:
            assert self._memory is not None
            self._memory.now = when

    def _state(self) -> dict[str, dict[str, str]]:
        """{"fired": {id: time}, "due": {id: time}}: events fired, and those whose trigger came
        (a step, an event, a fact) waiting for their time."""
        raw = self.world.store.get_meta(TIMELINE_KEY) if self.world is not None else self._memory_state()
        if not raw:
            return {"fired": {}, "due": {}}
        state: dict[str, dict[str, str]] = json.loads(str(raw))
        return state

    def _memory_state(self) -> str:
        assert self._memory is not None
        return self._memory.state

    def _save(self, state: Mapping[str, Mapping[str, str]]) -> None:
        text = canonical_json(state)
        if self.world is not None:
            self.world.store.set_meta(TIMELINE_KEY, text)
        else:
            assert self._memory is not None
            self._memory.state = text

    def fired(self) -> dict[str, datetime]:
        """Each event fired so far, with its simulated time."""
        return {k: datetime.fromisoformat(v) for k, v in self._state()["fired"].items()}

    # ---- a step ---------------------------------------------------------------------------------
    def begin_step(self, index: int, output: Any) -> None:
        """The agent's turn took simulated time: the clock moves by the policy's cost of `output`
        (the raw output, or the actions given), firing what fell due meanwhile, before step `index`'s
        actions run."""
        cost = self.policy.per_step_s
        if self.policy.per_output_token_s:
            cost += self.policy.per_output_token_s * output_tokens(output)
        target = self.now() + timedelta(seconds=cost)
        self._step = StepTime(acted_at=self.now())
        self._run_until(target, stop_on_notification=False)
        self._set_now(target)
        self._step.acted_at = self.now()

    def end_step(self, index: int) -> StepTime:
        """Fires what waits on step `index` and what falls due with it; what the step did."""
        step = self._step or StepTime(acted_at=self.now())
        self._step = step
        now = self.now()
        state = self._state()
        for event in self.events:
            if event.after_step == index and event.id not in state["fired"] and event.id not in state["due"]:
                state["due"][event.id] = (now + timedelta(seconds=event.delay_s)).isoformat()
        self._save(state)
        self._run_until(now, stop_on_notification=False)
        self._step = None
        return step

    def wait(self, seconds: float) -> dict[str, Any]:
        """The `wait` tool: up to `seconds` pass, less if an event notifies the agent first."""
        if not seconds > 0 or seconds > self.policy.max_wait_s:
            raise ArgumentError(f"wait: seconds must be more than 0 and at most {self.policy.max_wait_s:g}")
        before = self.now()
        try:
            target = before + timedelta(seconds=seconds)
        except OverflowError:  # a task whose max_wait_s lets a wait run past the calendar's end
            raise ArgumentError(
                f"wait: {seconds:g} seconds from {before.isoformat()} is past the last date"
            ) from None
        notified = self._run_until(target, stop_on_notification=True)
        if not notified:
            self._set_now(target)
        return {
            "waited_s": (self.now() - before).total_seconds(),
            "now": self.now_iso(),
            "notified": notified,
        }

    def _run_until(self, until: datetime, *, stop_on_notification: bool) -> bool:
        """Fires, in time order, every event due no later than `until` (the clock moves to each);
        whether one notified the agent (with `stop_on_notification`, the first one ends it)."""
        notified = False
        while True:
            state = self._state()
            self._arm_facts(state)
            due = self._next_due(state)
            if due is None or due[0] > until:
                self._save(state)
                return notified
            when, event = due
            self._set_now(when)
            notified = self._fire(event, self.now(), state) or notified
            if notified and stop_on_notification:
                return True

    def _arm_facts(self, state: dict[str, dict[str, str]]) -> None:
        """`when` events whose fact holds now fall due `delay_s` from now."""
        for event in self.events:
            if event.when is None or event.id in state["fired"] or event.id in state["due"]:
                continue
            if self._holds(event.when):
                state["due"][event.id] = (self.now() + timedelta(seconds=event.delay_s)).isoformat()

    def _next_due(self, state: Mapping[str, Mapping[str, str]]) -> tuple[datetime, Event] | None:
        pending: list[tuple[datetime, int, Event]] = []
        for event in self.events:
            if event.id in state["fired"]:
                continue
            when = event.at if event.at is not None else _parse(state["due"].get(event.id))
            if when is not None:
                pending.append((when, self._order[event.id], event))
        if not pending:
            return None
        when, _, event = min(pending, key=lambda p: (p[0], p[1]))
        return when, event

    def _fire(self, event: Event, when: datetime, state: dict[str, dict[str, str]]) -> bool:
        """Runs the event's calls as the environment; records it; whether it notified the agent."""
        calls = [self._call(c.tool, c.arguments) for c in event.calls]
        state["due"].pop(event.id, None)
        state["fired"][event.id] = when.isoformat()
        for child in self._children.get(event.id, []):
            state["due"][child.id] = (when + timedelta(seconds=child.delay_s)).isoformat()
        self._save(state)
        notified = notifies(event, self.verbosity)
        record: dict[str, Any] = {
            "id": event.id,
            "time": when.isoformat(),
            "calls": calls,
            "notified": notified,
        }
        if self._step is not None:
            self._step.events.append(record)
            if notified:
                self._step.notifications.append(self._notification(event, when))
        return notified

    def _call(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        assert self.world is not None
        obs = self.world.step(ToolCall(name=name, arguments=dict(arguments)))
        record: dict[str, Any] = {"tool": name, "arguments": dict(arguments), "ok": obs.error is None}
        if obs.error is not None:
            record["error"] = obs.text
        return record

    def _notification(self, event: Event, when: datetime) -> Observation:
        return Observation(
            type="notification",
            text=f"{NOTIFICATION_PREFIX}{when.isoformat()}): {notification_text(event)}",
            content={"event": event.id, "time": when.isoformat()},
        )


# ---- the agent's tools: one pair for every timeline, which finds its episode's in the context ------
TIMELINE_EXTRA: Final = "timeline"


def _timeline_of(ctx: ToolContext) -> Timeline:
    timeline = ctx.extras.get(TIMELINE_EXTRA)
    if not isinstance(timeline, Timeline):
        raise ToolError("this episode has no simulated time (its task has no events or time policy)")
    return timeline


def _wait(
    seconds: Annotated[float, Param("how many simulated seconds to wait (at most the task's max_wait_s)")],
    ctx: ToolContext,
) -> dict[str, Any]:
    """Let simulated time pass: wait up to `seconds`, returning early when a notification
    arrives. Answers how long you waited and the time now."""
    return _timeline_of(ctx).wait(seconds)


def _current_time(ctx: ToolContext) -> dict[str, str]:
    """The current date and time."""
    return {"now": _timeline_of(ctx).now_iso()}


TIMELINE_TOOLSET: Final = ToolSet(
    [
        tool(_wait, name=WAIT_TOOL, backend=ENV_BACKEND),
        tool(_current_time, name=TIME_TOOL, backend=ENV_BACKEND),
    ]
)


def _parse(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def timeline_tool_names(names: Iterable[str]) -> list[str]:
    """Which of `names` a timeline's own tools would clash with."""
    return sorted(set(names) & set(TIMELINE_TOOLS))
