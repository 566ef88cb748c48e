"""Seeded fault injection: a `FaultPlan` of per-tool rules, applied by a `FaultLayer` (a tool layer).

    plan = FaultPlan.load("faults.json")            # or FaultPlan(rules=[FaultRule(...)])
    env = ToolEnv(tools, tasks, tool_layers=[cassette, FaultLayer(plan)])   # faults outermost

A rule names tools by fnmatch pattern, a fault kind, a rate in [0, 1] and optionally a window of
steps (1-based, inclusive). Every draw comes from a RNG seeded by (episode seed, tool, step, the
episode's call number, rule number), so the same task, seed and actions inject the same faults, and
a cassette inside the layer replays a faulted episode with zero live calls: the layer re-injects
the faults from the seed, and only the calls that got through reach the cassette.

Kinds:
  error, http_429, http_500, http_503, timeout, outage   the call fails before it runs (a mock-app
      write changes nothing); the agent sees an `infra_error` observation
  truncate, malformed    the call runs, its response is cut / garbled on the way back: an
      `infra_error` observation whose text is the damaged response (a write did take effect)
  latency    the call runs `delay_s` late; its result is unchanged

Every injected failure carries `content["injected"]` (kind, tool, step, call, rule), so traces,
metrics and reports tell it apart from real infra errors and from the agent's errors; being an
`infra_error`, it is counted as one wherever infra errors are. Latency faults change no
observation. Every injected fault, latencies included, is also listed in the step's
`info["faults"]` and the trace step's `faults`.
"""

from __future__ import annotations

import fnmatch
import hashlib
import random
import time
import typing
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from toolgym.actions import ErrorInfo, Observation, ToolCall
from toolgym.canonical import canonical_json
from toolgym.envs.rewards import Episode, RewardFn, with_count
from toolgym.errors import ArgumentError, ErrorKind
from toolgym.jsonl import read_json_file
from toolgym.tasks import Task
from toolgym.tools import ToolContext, ToolSet
from toolgym.world import World

FaultKind = Literal[
    "error", "http_429", "http_500", "http_503", "timeout", "outage", "truncate", "malformed", "latency"
]
FAULT_KINDS: tuple[str, ...] = typing.get_args(FaultKind)
BEFORE_CALL = frozenset({"error", "http_429", "http_500", "http_503", "timeout", "outage"})
AFTER_CALL = frozenset({"truncate", "malformed"})
MAX_DELAY_S = 60.0
STEP_KEY = "step"  # ToolContext.extras key: the env step a call belongs to (ToolEnv sets it)
Sleep = Callable[[float], None]  # how a delay is served: time.sleep, or a recorder in tests
FAULTS_KEY = "faults"  # ToolContext.extras key: this step's injected faults (ToolEnv puts them in info)

# what the agent reads for each failure: what a real client would show, never the word "injected"
_MESSAGES: dict[str, str] = {
    "error": "the tool server failed to answer",
    "http_429": "HTTP 429 Too Many Requests",
    "http_500": "HTTP 500 Internal Server Error",
    "http_503": "HTTP 503 Service Unavailable",
    "timeout": "no answer before the time limit",
    "outage": "HTTP 503 Service Unavailable (outage)",
}
_STATUS: dict[str, int] = {"http_429": 429, "http_500": 500, "http_503": 503, "outage": 503}


class FaultPlanError(ArgumentError):
    """A fault plan that cannot be used: bad JSON, an unknown kind, a rate outside [0, 1], a window
    with n > m, a pattern that names no offered tool. Typed (an `argument_error`), raised before
    any episode runs."""


class FaultRule(BaseModel):
    """One rule: calls of the tools matching `tools` fail (or slow down) with probability `rate`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tools: str = Field("*", min_length=1, description="fnmatch pattern of tool names")
    kind: FaultKind
    rate: float = Field(1.0, ge=0.0, le=1.0, allow_inf_nan=False)
    steps: tuple[int, int] | None = Field(None, description="inclusive window of env steps (1-based)")
    delay_s: float = Field(0.0, ge=0.0, le=MAX_DELAY_S, allow_inf_nan=False)
    keep: float = Field(0.5, ge=0.0, lt=1.0, allow_inf_nan=False, description="share a truncation keeps")

    @model_validator(mode="after")
    def _check(self) -> FaultRule:
        if self.steps is not None and not 1 <= self.steps[0] <= self.steps[1]:
            raise ValueError(f"steps window {list(self.steps)} must be n..m with 1 <= n <= m")
        if self.kind == "outage" and self.steps is None:
            raise ValueError("an outage needs a steps window [n, m]")
        if self.kind == "latency" and self.delay_s <= 0:
            raise ValueError("a latency fault needs delay_s > 0")
        return self

    def applies(self, tool: str, step: int) -> bool:
        if not fnmatch.fnmatchcase(tool, self.tools):
            return False
        return self.steps is None or self.steps[0] <= step <= self.steps[1]


class FaultPlan(BaseModel):
    """Named rules, checked in order for every call: latencies add up; the first failure before
    the call that fires wins, else the first damage to the response that fires."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field("faults", min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")
    rules: tuple[FaultRule, ...] = ()

    @classmethod
    def parse(cls, data: Any) -> FaultPlan:
        """A plan from JSON data; a bad one is a FaultPlanError that says what is wrong."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise FaultPlanError(f"bad fault plan: {exc}") from None

    @classmethod
    def load(cls, path: Path | str) -> FaultPlan:
        """A plan from a JSON file; the file name (without .json) is its default name."""
        return cls.parse(read_plan_file(Path(path), "fault plan", FaultPlanError))

    def check_tools(self, names: Iterable[str]) -> None:
        """Raise FaultPlanError if a rule's pattern matches none of `names`: a typo'd tool name is
        an error, never a plan that silently injects nothing."""
        known = sorted(set(names))
        unmatched = sorted({r.tools for r in self.rules if not fnmatch.filter(known, r.tools)})
        if unmatched:
            raise FaultPlanError(
                f"fault plan {self.name!r} names tools that are not offered: {', '.join(unmatched)}; "
                f"offered: {', '.join(known) or 'none'}"
            )


def read_plan_file(path: Path, what: str, error: type[ArgumentError], hint: str = "") -> Any:
    """A plan file's JSON data, its file name (without .json) the default `name`; `error` (a typed
    argument error) for a file that cannot be read (`hint` appended) or is not JSON."""
    data = read_json_file(path, what, error, hint)
    if isinstance(data, dict) and "name" not in data:
        data = {"name": path.stem, **data}
    return data


def fault_rng(seed: int, tool: str, step: int, call: int, rule: int) -> random.Random:
    """The RNG of one draw: a function of the episode seed and the call's place, nothing else."""
    digest = hashlib.sha256(canonical_json([seed, tool, step, call, rule]).encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def injected_of(obs: Mapping[str, Any] | Observation) -> dict[str, Any] | None:
    """The `injected` record of an observation (model or JSON record), or None for a real one."""
    content = obs.content if isinstance(obs, Observation) else obs.get("content")
    if isinstance(content, Mapping) and isinstance(content.get("injected"), Mapping):
        return dict(content["injected"])
    return None


class FaultToolSet(ToolSet):
    """The tools of one episode with a plan's faults in front of them. It delegates to the ToolSet
    it wraps (a cassette's, a remote one), so whatever sits inside keeps its own call path."""

    def __init__(self, inner: ToolSet, plan: FaultPlan, sleep: Sleep = time.sleep) -> None:
        super().__init__(inner)
        self.inner = inner
        self.plan = plan
        self.calls = 0  # the episode's call number, part of every draw
        self.events: list[dict[str, Any]] = []
        self._sleep = sleep

    def call(self, call: ToolCall, ctx: ToolContext) -> Observation:
        if call.name not in self:
            return self.inner.call(call, ctx)  # the typed unknown_tool observation
        self.calls += 1
        step = int(ctx.extras.get(STEP_KEY, 0))
        delay = 0.0
        failure: tuple[int, FaultRule] | None = None
        after: tuple[int, FaultRule] | None = None
        for i, rule in enumerate(self.plan.rules):
            if not rule.applies(call.name, step):
                continue
            if fault_rng(ctx.seed, call.name, step, self.calls, i).random() >= rule.rate:
                continue
            if rule.kind == "latency":
                delay += rule.delay_s
                self._note(ctx, self._event(rule, i, call, step, delay_s=rule.delay_s))
            elif rule.kind in BEFORE_CALL and failure is None:
                failure = (i, rule)
            elif rule.kind in AFTER_CALL and after is None:
                after = (i, rule)
        if failure is not None:
            i, rule = failure
            delay += rule.delay_s  # a timeout may be made to hang a while first
        if delay:
            self._sleep(delay)
        if failure is not None:
            i, rule = failure
            record = self._event(rule, i, call, step)
            self._note(ctx, record)
            return Observation.from_error(
                ErrorKind.INFRA_ERROR,
                f"{call.name}: {_MESSAGES[rule.kind]}",
                tool=call.name,
                call_id=call.call_id,
                content={"injected": record},
            )
        obs = self.inner.call(call, ctx)
        if after is None or obs.error is not None:
            return obs  # a response that is already an error has nothing left to damage
        i, rule = after
        record = self._event(rule, i, call, step)
        self._note(ctx, record)
        return _damaged(obs, rule, record)

    def _note(self, ctx: ToolContext, record: dict[str, Any]) -> None:
        """Keep `record` for `events` and hand it to the env for this step's info and trace."""
        self.events.append(record)
        ctx.extras.setdefault(FAULTS_KEY, []).append(record)

    def _event(self, rule: FaultRule, index: int, call: ToolCall, step: int, **extra: Any) -> dict[str, Any]:
        record: dict[str, Any] = {
            "kind": rule.kind,
            "plan": self.plan.name,
            "rule": index,
            "tool": call.name,
            "step": step,
            "call": self.calls,
        }
        if rule.kind in _STATUS:
            record["status"] = _STATUS[rule.kind]
        record.update(extra)
        return record

    def subset(self, names: Iterable[str] | None) -> ToolSet:
        return FaultToolSet(self.inner.subset(names), self.plan, self._sleep)

    def merged(self, other: ToolSet) -> ToolSet:
        return FaultToolSet(self.inner.merged(other), self.plan, self._sleep)


def _damaged(obs: Observation, rule: FaultRule, record: dict[str, Any]) -> Observation:
    """The response cut short (truncate) or broken as a JSON body (malformed), as an infra_error
    whose text is what arrived. Deterministic: the same response is damaged the same way."""
    text = obs.text
    if rule.kind == "truncate":
        kept = text[: int(len(text) * rule.keep)]
        message = f"{record['tool']}: response truncated after {len(kept)} of {len(text)} characters"
    else:
        body = canonical_json({"result": text})
        kept = body[: max(1, len(body) - 2)]  # the closing quote and brace never arrive
        message = f"{record['tool']}: malformed response body"
    return Observation(
        type="error",
        text=kept,
        tool=obs.tool,
        call_id=obs.call_id,
        content={"injected": {**record, "chars": len(text)}},
        error=ErrorInfo(kind=ErrorKind.INFRA_ERROR, message=message),
    )


class FaultLayer:
    """A `ToolLayer` that applies a fault plan. Put it after a cassette in `tool_layers` (outermost)
    so a replay re-injects the faults and only the calls that got through hit the cassette.

    `known_tools`: the names the plan may target (e.g. every tool of every task in a run), checked
    now; without it, each episode checks the plan against the tools it offers."""

    def __init__(
        self, plan: FaultPlan, *, known_tools: Iterable[str] | None = None, sleep: Sleep = time.sleep
    ) -> None:
        self.plan = plan
        self._checked = known_tools is not None
        if known_tools is not None:
            plan.check_tools(known_tools)
        self._sleep = sleep
        self.last: FaultToolSet | None = None

    def wrap(self, tools: ToolSet, world: World | None = None) -> FaultToolSet:
        if not self._checked:
            self.plan.check_tools(tools.names)
        self.last = FaultToolSet(tools, self.plan, self._sleep)
        return self.last

    def start_episode(self) -> None:
        """Nothing to reset: each episode's counters live in the tool set `wrap` made."""

    @property
    def events(self) -> list[dict[str, Any]]:
        """What the last episode injected, in order (latencies included)."""
        return list(self.last.events) if self.last is not None else []


def injected_count(episode: Episode) -> int:
    """The observations of an episode that are injected faults."""
    return sum(1 for s in episode.steps for o in s.observations if injected_of(o) is not None)


def fault_aware(reward_fn: RewardFn) -> RewardFn:
    """`reward_fn` plus `injected_faults` (how many observations were injected faults) among the
    scores when the episode met any. The reward itself is the agent's, scored *with* the faults;
    an evaluation that scores *without* them leaves out the episodes that carry the count."""

    return with_count(reward_fn, "injected_faults", injected_count)


def offered_tool_names(toolset: ToolSet, tasks: Iterable[Task]) -> list[str]:
    """Every tool name a run's episodes may offer: the tool set's, the tasks' own lists, and the
    APIs of the tasks' mock apps (read from the app classes: no world is built)."""
    from toolgym.mocks.app import app_apis
    from toolgym.mocks.apps import get_app

    names = set(toolset.names)
    apps: set[str] = set()
    for task in tasks:
        names.update(task.tools or ())
        apps.update(task.apps or ())
    for app in sorted(apps):
        names.update(api.name for api in app_apis(get_app(app)))
    return sorted(names)
