"""ToolEnv: a Gymnasium environment where an agent answers a task by calling tools.

Observations and actions are text (`AnyText` spaces): the agent's raw output goes in, the
rendered observation comes out. Structured data (parsed actions, typed errors, file handles,
state hash and diff) is in `info`. `step` never raises on agent input (arguments that are not JSON
data are an `argument_error`) nor on a remote world or tool server that dies mid-episode (an
`infra_error` observation; a state hash out of reach is None).

A backend that fails (`outage_of`: a world, a tool server, a sandbox that cannot start, a user or
tool simulator) is not the agent's failure. A tool call or a world read that meets one is tried
once more in the same step, which absorbs a passing failure (a supervised server restarted, a mock
session rebuilt from its journal), and so is a user simulator's reply and the episode's scoring;
when the second try fails too (or a simulator has a bug), the step ends the episode unscored:
`truncated`, reward 0 and
`info["aborted"]` saying why. The runner then records the episode as aborted (README, Runs).
Injected faults (fault plans), cassette misses and the agent's own errors never abort.

How behaviour is added to an episode (ARCHITECTURE.md):
- env wrappers (`gymnasium.Wrapper`): teacher forcing (`toolgym.envs.teacher.TeacherForcedEnv`),
  gymnasium's own (`TimeLimit`, `RecordEpisodeStatistics`, ...);
- one hook inside the env for what must sit between the agent's call and the tool: **tool
  layers** (`ToolLayer`: `wrap(tools, world) -> ToolSet` and `start_episode()`), applied in order
  to the tools offered each episode: cassettes (record/replay), and fault plans;
- `user`: the simulated user of tasks with a user scenario (`toolgym.envs.users`; rule-based by
  default); tasks without one get their scripted `user_replies`;
- `world_factory`: where a task's world comes from (an in-process `MockWorld` by default, a
  session of a mock service for `toolgym.envs.lab`);
- agent wrappers (`InfraRetry`) and reward wrappers (`infra_aware`) wrap their own kind.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, SupportsFloat, TypeVar, get_args, runtime_checkable

import gymnasium as gym
import numpy as np
from pydantic import BaseModel

from toolgym.actions import (
    Action,
    ActionRecord,
    AskUser,
    FinalAnswer,
    NoCall,
    Observation,
    ObservationRecord,
    ToolCall,
    as_action,
    as_observation,
)
from toolgym.canonical import json_safe
from toolgym.envs.budgets import Budget, BudgetMeter
from toolgym.envs.milestones import EpisodeChecks, StepClock, episode_checks, state_fact_holds, step_calls
from toolgym.envs.perturb import PerturbedToolSet
from toolgym.envs.rewards import Episode, EpisodeStep, RewardFn, reward_value, task_scores
from toolgym.envs.spaces import AnyText
from toolgym.envs.users import NO_MORE_USER_INPUT as NO_MORE_USER_INPUT  # its old home
from toolgym.envs.users import RuleBasedUser, ScriptedUser, UserSimulator
from toolgym.errors import ErrorKind, FormatError, InfraError
from toolgym.files import FileStore
from toolgym.mocks.events import (
    DEFAULT_VERBOSITY,
    TIMELINE_EXTRA,
    StepTime,
    Timeline,
    Verbosity,
    timeline_tool_names,
)
from toolgym.protocols import get_protocol
from toolgym.protocols.base import MAX_OUTPUT_CHARS, ActionProtocol, plain_output
from toolgym.protocols.json_protocol import check_arguments
from toolgym.protocols.openai import OpenAIProtocol
from toolgym.protocols.react import ReActProtocol
from toolgym.protocols.responses import ResponsesProtocol
from toolgym.tasks import Task, TaskFileError, TaskSet, task_use_error
from toolgym.tools import BaseTool, ToolContext, ToolSet, to_json_value
from toolgym.world import World

MAX_OBSERVATION_CHARS = 100_000
MAX_CACHED_INSTRUCTIONS = 64  # tool sets whose rendered instructions an env keeps
_T = TypeVar("_T")
# "final": the last step's reward is the episode's; "milestones": every step's is the change in
# milestone progress, the last one's the episode's (dense rewards for RL)
RewardMode = Literal["final", "milestones"]
REWARD_MODES: tuple[str, ...] = get_args(RewardMode)


@runtime_checkable
class ToolLayer(Protocol):
    """Something every tool call of an episode goes through (a cassette, a fault plan)."""

    def wrap(self, tools: ToolSet, world: World | None = None) -> ToolSet:
        """The tools the agent is offered this episode, wrapped."""
        ...

    def start_episode(self) -> None:
        """Called once per reset, after `wrap`. A layer may also have `episode_info() -> dict`,
        which reset adds to its info (`PerturbLayer`: the offered names' mapping)."""
        ...


WorldFactory = Callable[[Task], "World | None"]


def default_world_factory(task: Task) -> World | None:
    """An in-process mock world for the task's apps (None for tasks without apps)."""
    if not task.apps:
        return None
    from toolgym.mocks.world import MockWorld

    return MockWorld(tuple(task.apps), seed=task.seed, clock=task.clock)


def task_prompt(task: Task) -> str:
    """The first observation of a task's episode: its query and the names of its files."""
    if not task.files:
        return task.query
    return task.query + "\nThe related files: " + ", ".join(f.name for f in task.files)


@dataclass(frozen=True)
class Timing:
    """Wall-clock figures of a step. They never take part in equality, so a seeded replay's
    info compares equal (gymnasium's determinism check) while the figures stay available."""

    latency_s: float = field(compare=False)
    tool_latency_s: float = field(compare=False)


def _timing(latency_s: float, tool_latency_s: float) -> Timing:
    """`Timing(latency_s, tool_latency_s)`, the same object, without the frozen dataclass's
    `__init__` (a field set through `object.__setattr__` each: a microsecond on every step)."""
    timing = object.__new__(Timing)
    vars(timing).update(latency_s=latency_s, tool_latency_s=tool_latency_s)
    return timing


def argument_problem(call: ToolCall) -> str | None:
    """Why a ToolCall's arguments are not JSON data a tool can take (nested past the protocols'
    depth limit, NaN, huge ints, bytes, sets, objects, text with a lone surrogate), or None. Protocols check what they parse;
    a structured ToolCall from the agent is checked here."""
    try:
        check_arguments(call.arguments, f"{call.name}: arguments")
    except FormatError as exc:
        return exc.message
    return None


def json_record(model: BaseModel, *, checked: bool = False) -> dict[str, Any]:
    """An action or observation as JSON data for info and traces. What pydantic cannot dump
    (arguments nested too deep, bytes, objects, keys with lone surrogates) is kept as
    `json_safe` replaces it: the call itself was refused with an argument_error. `checked`: a
    ToolCall whose arguments `argument_problem` already found fine (the step checks each once)."""
    if checked or not (isinstance(model, ToolCall) and argument_problem(model) is not None):
        try:
            return model.model_dump(mode="json")
        except (ValueError, TypeError, RecursionError):
            pass
    safe: dict[str, Any] = json_safe({name: getattr(model, name) for name in type(model).model_fields})
    return safe


def action_record(action: Action, *, trusted: bool, checked: bool) -> dict[str, Any]:
    """An action as JSON data for info and traces: what `json_record` gives, built from the fields
    without pydantic's serialiser where they are JSON data already: text is text, and a ToolCall's
    arguments are when a protocol that checks arguments made them (`trusted`; the record then
    shares them). `checked`: `argument_problem` found a given ToolCall's arguments fine (they may
    still hold tuples or subclasses, which pydantic's dump normalises)."""
    kind = type(action)
    if kind is ToolCall:
        if not trusted:
            return json_record(action, checked=checked)
        call: ToolCall = action  # type: ignore[assignment]
        return {
            "type": "tool_call",
            "name": call.name,
            "arguments": call.arguments,
            "call_id": call.call_id,
            "thought": call.thought,
        }
    if kind is FinalAnswer or kind is AskUser:
        return {"type": action.type, "text": action.text, "thought": action.thought}  # type: ignore[union-attr]
    if kind is NoCall:
        return {"type": "no_call", "thought": action.thought}
    return json_record(action)


def observation_record(obs: Observation | ObservationRecord) -> dict[str, Any]:
    """An observation (the model, or the step path's record of it) as JSON data for info and
    traces: what `json_record` gives of the model. A tool result's content is JSON data already
    (`ToolSet.call` makes it so, a cassette reads it back from JSON), so its record takes the
    fields as they are and shares the content; so does an observation without content (an error,
    a final answer, a note). Other content (error payloads, user turns, the task) goes through
    pydantic."""
    content = obs.content
    kind = type(obs)
    if (kind is not ObservationRecord and kind is not Observation) or (
        content is not None and obs.type != "tool_result"
    ):
        return json_record(as_observation(obs))
    error = obs.error
    return {
        "type": obs.type,
        "text": obs.text,
        "tool": obs.tool,
        "call_id": obs.call_id,
        "content": content,
        "files": [f.model_dump(mode="json") for f in obs.files] if obs.files else [],
        "error": None if error is None else {"kind": error.kind.value, "message": error.message},
    }


def _given_action_record(action: Action) -> tuple[str | None, dict[str, Any]]:
    """A given action's argument problem (`argument_problem`: None for fine arguments, and for
    other actions) and its JSON record (`json_record`). A ToolCall's arguments are walked once:
    the walk that checks them also makes their plain JSON form, which is what pydantic's dump
    gives (tuples as lists, subclasses as their plain values), so no dump is needed."""
    if type(action) is not ToolCall:
        if isinstance(action, ToolCall):  # a subclass: pydantic's dump, whatever it adds
            problem = argument_problem(action)
            return problem, json_record(action, checked=problem is None)
        return None, action_record(action, trusted=False, checked=True)
    try:
        arguments = check_arguments(action.arguments, f"{action.name}: arguments")
    except FormatError as exc:
        return exc.message, json_record(action)
    record = {
        "type": "tool_call",
        "name": action.name,
        "arguments": arguments,
        "call_id": action.call_id,
        "thought": action.thought,
    }
    return None, record


# protocols whose `format_observation` reads fields only (text, call_id), so a record will do
_FIELD_FORMATTERS = frozenset(
    {
        ActionProtocol.format_observation,
        ReActProtocol.format_observation,
        OpenAIProtocol.format_observation,
        ResponsesProtocol.format_observation,
    }
)

_ACTION_TYPES = (ToolCall, FinalAnswer, NoCall, AskUser)


def _is_actions(value: Any) -> bool:
    """An Action, or a non-empty list of them: already parsed, no protocol needed."""
    if isinstance(value, _ACTION_TYPES):
        return True
    return isinstance(value, list) and bool(value) and all(isinstance(a, _ACTION_TYPES) for a in value)


def _is_items(value: Any) -> bool:
    """Responses output items as plain data: a list of objects."""
    return isinstance(value, list) and all(isinstance(item, Mapping) for item in value)


def _raw_record(action: Any) -> Any:
    """What a step keeps as its raw output (not already actions): the openai SDK's objects as
    their plain JSON data (traces hold JSON), everything else as given; output that cannot be
    read stays as it is and `parse_action` says why."""
    try:
        return plain_output(action)
    except FormatError:
        return action


def kept_raw(action: Any) -> Any:
    """The raw output as a step (and its trace line) keeps it: text, a message object or Responses
    output items as plain data (the openai SDK's objects dumped); None for actions given as
    objects, or for output that is none of these."""
    return None if _is_actions(action) else _keepable(_raw_record(action))


def _keepable(value: Any) -> Any:
    """`value` when a trace can keep it as a raw output (text, a message, output items); else None."""
    return value if isinstance(value, (str, Mapping)) or _is_items(value) else None


def observation_text(
    protocol: ActionProtocol, observations: Sequence[Observation], *, clip: bool = True
) -> str:
    """A step's observations as `step` returns them: each rendered by the protocol, one a line,
    clipped to the observation space's limit (`clip`)."""
    text = _observation_text(protocol, observations)
    return _clip(text) if clip else text


def _observation_text(
    protocol: ActionProtocol, observations: Sequence[Observation | ObservationRecord]
) -> str:
    """`observation_text` unclipped, of models or (for a protocol that reads fields only) records."""
    format_observation: Callable[[Any], str] = protocol.format_observation
    if len(observations) == 1:
        return format_observation(observations[0])
    return "\n".join(format_observation(o) for o in observations)


def _clip(text: str, limit: int = MAX_OBSERVATION_CHARS) -> str:
    if len(text) <= limit:
        return text
    marker = f"\n[... {len(text) - limit} characters cut]"
    return text[: limit - len(marker)] + marker


def _infra_observation(what: str, exc: InfraError) -> ObservationRecord:
    return ObservationRecord.from_error(
        ErrorKind.INFRA_ERROR, f"{what}: {exc.message}", content=to_json_value(exc.data)
    )


def _cassette_miss(content: Any) -> bool:
    return isinstance(content, Mapping) and "cassette_miss" in content


def outage_of(obs: Observation | ObservationRecord) -> str | None:
    """What failed, when `obs` reports a backend failure (an `infra_error` from a world, a tool
    server, the sandbox, a simulator); None for any other observation, and for the infra errors
    that are no outage: a fault plan's injected faults (the experiment itself) and cassette misses
    (a replay that diverged, which verify reports)."""
    error = obs.error
    if error is None or error.kind is not ErrorKind.INFRA_ERROR:
        return None
    content = obs.content
    if isinstance(content, Mapping) and (
        isinstance(content.get("injected"), Mapping) or "cassette_miss" in content
    ):
        return None  # injected by a fault plan (`injected_of`), or a cassette miss
    return f"{obs.tool}: {error.message}" if obs.tool else error.message


def _as_scores(result: float | Mapping[str, float]) -> dict[str, float]:
    return dict(result) if isinstance(result, Mapping) else {"reward": float(result)}


def _tried_twice(fn: Callable[[], _T]) -> _T:
    """`fn()`, tried once more when it raises InfraError (a second one propagates; a cassette
    miss is not tried again: it would miss again)."""
    try:
        return fn()
    except InfraError as exc:
        if _cassette_miss(exc.data):
            raise
        return fn()


class ToolEnv(gym.Env[str, Any]):
    """An episode = one task. `reset(options={"task": Task | task_id})` or a seeded pick from `tasks`."""

    metadata = {"render_modes": ["ansi"]}  # noqa: RUF012 - gymnasium's convention

    def __init__(
        self,
        tools: ToolSet | None = None,
        tasks: TaskSet | Sequence[Task] | None = None,
        *,
        protocol: str | ActionProtocol = "react",
        reward_fn: RewardFn = task_scores,
        max_steps: int = 10,
        world: World | None = None,
        files: FileStore | None = None,
        render_mode: str | None = None,
        tool_layers: Sequence[ToolLayer] = (),
        cassette: ToolLayer | None = None,
        world_factory: WorldFactory = default_world_factory,
        user: UserSimulator | None = None,
        reward_mode: RewardMode = "final",
        budget: Budget | None = None,
        verbosity: Verbosity = DEFAULT_VERBOSITY,
    ) -> None:
        """`tool_layers` wrap the offered tools every episode, first innermost (see the module
        docstring); `cassette=c` is short for `tool_layers=[c]`. `world_factory(task)` builds the
        world of a task with apps, once per app set (then reset per episode); a fixed `world`
        serves every task instead. `user` plays the user of tasks with a scenario (`task.user`;
        default a `RuleBasedUser`); tasks without one get a `ScriptedUser` of their replies.
        `reward_mode="milestones"`: each step's reward is the change in milestone progress (a
        task's own milestones, else those of its golden chain) and the last step's the usual one;
        "final" (the default) rewards the last step only. A task's declared milestones and
        minefields are checked in both modes (`toolgym.envs.milestones`). `budget`: what an episode
        may spend (tokens and cost charged with `charge`, wall time); one over it ends `truncated`
        with the budget named (`toolgym.envs.budgets`). A task with events or a time policy runs on a
        timeline (`toolgym.mocks.events`): `verbosity` chooses which events notify the agent
        ("none", "low": the important ones, "medium": those with a notification, "high": all)."""
        if reward_mode not in REWARD_MODES:
            raise ValueError(f"reward_mode must be one of {list(REWARD_MODES)}, not {reward_mode!r}")
        self.reward_mode: RewardMode = reward_mode
        self.budget = budget
        self.meter: BudgetMeter | None = None  # this episode's spending, with a budget
        Timeline.check_verbosity(verbosity)
        self.verbosity: Verbosity = verbosity
        self.timeline: Timeline | None = None  # this episode's simulated time and events
        self.tools = tools or ToolSet()
        self.tasks = tasks if isinstance(tasks, TaskSet) else TaskSet(tasks or [])
        self.protocol = get_protocol(protocol) if isinstance(protocol, str) else protocol
        self.reward_fn = reward_fn
        self.max_steps = max_steps
        self.world = world
        self._fixed_world = world is not None
        self._worlds: dict[tuple[str, ...], World] = {}
        self._owns_files = files is None  # close() releases a store the env made itself
        self.files = files or FileStore()
        self.render_mode = render_mode
        self.observation_space = AnyText(MAX_OBSERVATION_CHARS)
        self.action_space = AnyText(MAX_OUTPUT_CHARS)
        self.task: Task | None = None
        self.episode: Episode | None = None
        self.checks: EpisodeChecks | None = None  # this episode's milestones and minefields
        self.offered = ToolSet()
        self.error_counts: Counter[str] = Counter()
        self._done = False
        self._user_turn = 0
        self.scenario_user: UserSimulator = user if user is not None else RuleBasedUser()
        self._scripted_user = ScriptedUser()
        self.user: UserSimulator = self._scripted_user  # this episode's user
        self._user_ended: str | None = None  # "stop" (the user is done) or "turn_limit"
        self._ctx: ToolContext | None = None
        self._last_render = ""
        self._listeners: list[Callable[[str, dict[str, Any]], None]] = []
        self.tool_layers: list[ToolLayer] = [*tool_layers, *([cassette] if cassette is not None else [])]
        self.world_factory = world_factory
        # rendered instructions by (protocol, offered tools): a reset renders only a new tool set
        self._instructions: dict[tuple[ActionProtocol, tuple[BaseTool, ...]], str] = {}
        # `_seed`: the last seed given, the generator made from it and that generator's first state
        self._seeded: tuple[int | None, np.random.Generator | None, Mapping[str, Any]] = (None, None, {})

    # ---- episode start --------------------------------------------------------------------
    def _pick_task(self, options: Mapping[str, Any] | None) -> Task:
        chosen = (options or {}).get("task")
        if isinstance(chosen, Task):
            return chosen
        if isinstance(chosen, str):
            if chosen not in self.tasks:
                raise KeyError(f"no task {chosen!r} in this env's task set")
            return self.tasks[chosen]
        if chosen is not None:
            raise TypeError("options['task'] must be a Task or a task id")
        if not len(self.tasks):
            raise ValueError("ToolEnv has no tasks: pass tasks=... or reset(options={'task': Task(...)})")
        return self.tasks[int(self.np_random.integers(len(self.tasks)))]

    def _load_files(self, task: Task) -> list[dict[str, Any]]:
        announced = []
        for f in task.files:
            handle = self.files.put_path(self.tasks.file_path(f), name=f.name)
            announced.append({"name": f.name, "type": f.type, "handle": handle.ref})
        return announced

    def _world_for(self, task: Task) -> World | None:
        """A fixed world if one was given; else the factory's world for the task's apps, built
        once per app set and reset per episode (O(changes))."""
        if self._fixed_world or not task.apps:
            return self.world if self._fixed_world else None
        key = tuple(task.apps)
        if key not in self._worlds:
            world = self.world_factory(task)
            if world is None:
                return None
            self._worlds[key] = world
        return self._worlds[key]

    def built_worlds(self) -> list[World]:
        """The worlds the factory built so far, one per app set (the current episode's among them)."""
        return list(self._worlds.values())

    def drop_worlds(self) -> None:
        """Close the worlds the factory built; the next reset builds its world afresh (the env
        service's bound on a session's memory). Between episodes: the current one loses its world."""
        if not self._fixed_world and self.world is not None and self.world in self._worlds.values():
            self.world = None
        for world in self._worlds.values():
            world.close()
        self._worlds.clear()

    def add_tool_layer(self, layer: ToolLayer) -> None:
        """Put `layer` outermost around the tools, from the next reset on."""
        self.tool_layers.append(layer)

    def _world_and_tools(self, task: Task) -> tuple[World | None, ToolSet]:
        """The task's world and the tools it offers. What the task names that this env does not
        have (an app, a tool) is a TaskUseError at the task's file and line, raised before the
        env changes."""
        try:
            world = self._world_for(task)
            base = self.tools if world is None else self.tools.merged(world.tools)
            return world, base.subset(task.tools)
        except TaskFileError:
            raise
        except (KeyError, ValueError) as exc:
            raise task_use_error(task, exc) from None

    def instructions(self) -> str:
        """The protocol's instructions for the tools offered this episode, rendered once per
        (protocol, tool set) and reused by later resets (rendering 256 tools' schemas costs about
        a millisecond). The key holds the tool objects themselves: tool layers keep them (they wrap
        the set, not each tool), and a tool is never changed once offered."""
        key = (self.protocol, tuple(self.offered))
        text = self._instructions.get(key)
        if text is None:
            if len(self._instructions) >= MAX_CACHED_INSTRUCTIONS:
                self._instructions.pop(next(iter(self._instructions)))  # oldest first
            text = self._instructions[key] = self.protocol.instructions(self.offered)
        return text

    def _seed(self, seed: int | None) -> None:
        """gymnasium's reseeding (`Env.reset(seed=...)`): a fresh generator for a new seed; for
        the seed the generator was last made from, that generator put back in its first state,
        which draws the same numbers as a fresh one (a new one costs tens of microseconds,
        every reset of a seeded run)."""
        made_from, generator, state = self._seeded
        if seed is not None and seed == made_from and self._np_random is generator is not None:
            generator.bit_generator.state = state
            return
        super().reset(seed=seed)
        if seed is not None and self._np_random is not None:
            self._seeded = (seed, self._np_random, self._np_random.bit_generator.state)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        self._seed(seed)
        task = self._pick_task(options)
        world, offered = self._world_and_tools(task)
        timeline = self._timeline(task, world, offered)
        if timeline is not None:
            offered = offered.merged(timeline.tools)  # under the layers, as every tool is
        if self._owns_files and self.episode is not None:
            # each episode starts with the files of a fresh env: a file an earlier task announced
            # must neither resolve nor be listed in an error message now (the trace would depend on
            # which episodes this env ran before)
            self.files.forget_all()
        self.task = task
        self.world = world
        self.episode = Episode(task=task, world=self.world)
        self.checks = episode_checks(task, derive=self.reward_mode == "milestones")
        self.meter = BudgetMeter(self.budget) if self.budget is not None else None
        self.timeline = timeline
        self.offered = offered
        for layer in self.tool_layers:
            self.offered = layer.wrap(self.offered, world=self.world)
            layer.start_episode()
        self.error_counts = Counter()
        self._done = False
        self._user_turn = 0
        self._user_ended = None
        episode_seed = task.seed if seed is None else seed
        self.user = self.scenario_user if task.user is not None else self._scripted_user
        self.user.start(task, episode_seed)
        self._ctx = ToolContext(files=self.files, seed=episode_seed, clock=task.clock, task_id=task.id)
        if timeline is not None:
            self._ctx.extras[TIMELINE_EXTRA] = timeline  # where its `wait` and `current_time` find it
        files = self._load_files(task)
        if self.world is not None:
            self.world.reset(seed=task.seed, clock=task.clock)
        prompt = task_prompt(task)
        obs = Observation(type="task", text=prompt, content={"query": task.query, "files": files})
        info: dict[str, Any] = {
            "task_id": task.id,
            "step": 0,
            "instructions": self.instructions(),
            "tools": self.offered.names,
            "files": files,
            "observation": obs.model_dump(mode="json"),
        }
        if self.world is not None:
            info["state_hash"] = self.world.state_hash()
            self.world.take_diff()  # start the per-step diffs from the reset state
        if timeline is not None:
            info["clock"] = timeline.now_iso()
        if task.user is not None:
            info["user"] = self._user_info()
        for layer in self.tool_layers:
            # a layer that changes what the agent is offered says how (a perturbation's mapping)
            layer_info = getattr(layer, "episode_info", None)
            if callable(layer_info):
                info.update(layer_info())
        self._last_render = prompt
        self._emit("reset", info)
        return _clip(prompt), info

    def _timeline(self, task: Task, world: World | None, offered: ToolSet) -> Timeline | None:
        """The timeline of a task with events or a time policy (None for a static one); its tools
        must not clash with the task's, and its events need an in-process world."""
        if not task.dynamic:
            return None
        from toolgym.mocks.world import MockWorld

        clash = timeline_tool_names(offered.names)
        if clash:
            raise task_use_error(task, ValueError(f"the env's own tools {clash} clash with the task's tools"))
        if world is not None and not isinstance(world, MockWorld):
            raise task_use_error(
                task,
                ValueError(f"a task with events runs on an in-process world, not a {type(world).__name__}"),
            )
        try:
            return Timeline(
                task, world, holds=lambda fact: state_fact_holds(fact, world), verbosity=self.verbosity
            )
        except ValueError as exc:
            raise task_use_error(task, exc) from None

    # ---- stepping -------------------------------------------------------------------------
    def parse_action(self, action: Any) -> list[Action] | Observation:
        """The actions in `action` (raw model text, an OpenAI-style message, the openai SDK's own
        objects: a ChatCompletion or its message, a Responses Response or its output items, an
        Action or a list of them) by this env's protocol, or the `format_error` observation
        saying why there are none. Never raises; teacher forcing scores predictions with the
        same parse."""
        parsed = self._parse(action, given=_is_actions(action))
        if isinstance(parsed, list):
            return [as_action(a) for a in parsed]
        return as_observation(parsed)

    def _parse(self, action: Any, *, given: bool) -> list[Action | ActionRecord] | ObservationRecord:
        """`parse_action`, told whether `action` is already actions (`_is_actions`), as the step
        path holds it: the protocol's records (`parse_records`) or the given models."""
        if given:
            return [action] if isinstance(action, _ACTION_TYPES) else list(action)
        try:
            if isinstance(action, str) and len(action) > MAX_OUTPUT_CHARS:
                raise FormatError(f"model output of {len(action)} characters exceeds {MAX_OUTPUT_CHARS}")
            action = plain_output(action)
            if not isinstance(action, (str, Mapping, list)):
                raise FormatError(
                    f"expected model output text or a message object, got {type(action).__name__}"
                )
            actions = self.protocol.parse_records(action)
            if not actions:
                raise FormatError("no action found in the model output")
            return actions
        except FormatError as exc:
            # kind: arguments that parsed but are not JSON data are an argument_error
            return ObservationRecord.from_error(exc.kind, exc.message)
        except Exception as exc:  # a protocol bug must not take the episode down
            return ObservationRecord.from_error(
                ErrorKind.FORMAT_ERROR, f"unparseable output ({type(exc).__name__}: {exc})"
            )

    def _run(self, action: Action | ActionRecord, problem: str | None) -> Observation | ObservationRecord:
        """`problem`: what `argument_problem` says of a ToolCall's arguments (None: fine)."""
        assert self.task is not None and self._ctx is not None
        if isinstance(action, ToolCall) or (type(action) is ActionRecord and action.type == "tool_call"):
            if action.name not in self.offered:
                return ObservationRecord.from_error(
                    ErrorKind.UNKNOWN_TOOL,
                    f"tool {action.name!r} is not available; "
                    f"available tools: {', '.join(self.offered.names)}",
                    tool=action.name,
                    call_id=action.call_id,
                )
            if problem is not None:
                return ObservationRecord.from_error(
                    ErrorKind.ARGUMENT_ERROR, problem, tool=action.name, call_id=action.call_id
                )
            return self._call(action)
        if isinstance(action, (FinalAnswer, ActionRecord)) and action.type == "final_answer":
            return ObservationRecord("final", action.text)
        if isinstance(action, (AskUser, ActionRecord)) and action.type == "ask_user":
            return self._ask_user(action.text, asked=True)
        thought = action.thought or ""
        if self.task.user is not None and thought.strip():
            # with a simulated user, a turn with no call and some text is a message to the user
            return self._ask_user(thought, asked=False)
        return ObservationRecord("note", "No tool was called.")

    def _call(self, action: ToolCall | ActionRecord) -> Observation | ObservationRecord:
        """One tool call, tried once more when it meets an outage (a passing failure is absorbed
        here). A tool set whose `call` is ToolSet's own answers with a lean record
        (`call_record`); one that overrides `call` (a cassette, a fault plan, a remote server)
        gets the ToolCall model and answers with its Observation."""
        assert self._ctx is not None
        offered = self.offered
        if type(offered).call is ToolSet.call:
            obs: Observation | ObservationRecord = offered.call_record(action, self._ctx)
            if obs.error is not None and outage_of(obs) is not None:
                obs = offered.call_record(action, self._ctx)
            return obs
        call = as_action(action)
        assert isinstance(call, ToolCall)
        obs = offered.call(call, self._ctx)
        if outage_of(obs) is not None:
            obs = offered.call(call, self._ctx)
        return obs

    def _user_info(self) -> dict[str, Any]:
        scenario = self.task.user if self.task is not None else None
        return {
            "simulator": self.user.name,
            "turns": self._user_turn,
            "max_turns": scenario.max_turns if scenario is not None else None,
            "ended": self._user_ended,
        }

    def _ask_user(self, message: str, *, asked: bool) -> Observation | ObservationRecord:
        """The user's reply as an observation. With a scenario, its content marks the user turn
        (simulator, turn, told slots, stop) for traces; scripted replies stay as they always were."""
        assert self.task is not None
        scenario = self.task.user
        if scenario is None:
            self._user_turn += 1
            return Observation(type="user", text=self.user.reply(message, asked=asked).text)
        if self._user_turn >= scenario.max_turns:
            self._user_ended = "turn_limit"
            return Observation(
                type="user",
                text=f"The user has left the conversation (limit of {scenario.max_turns} user turns).",
                content={"user": {**self._user_info(), "turn": None}},
            )
        try:
            reply = _tried_twice(lambda: self.user.reply(message, asked=asked))
        except InfraError as exc:  # a dead or broken user endpoint: not the agent's fault
            return _infra_observation(f"the user simulator {self.user.name} failed", exc)
        except Exception as exc:  # a simulator bug must not take the episode down
            return ObservationRecord.from_error(
                ErrorKind.INFRA_ERROR,
                f"the user simulator {self.user.name} failed: {type(exc).__name__}: {exc}",
            )
        self._user_turn += 1
        if reply.stop:
            self._user_ended = "stop"
        marker = {
            "simulator": self.user.name,
            "turn": self._user_turn,
            "asked": asked,
            "slots": list(reply.slots),
            "stop": reply.stop,
        }
        return Observation(type="user", text=reply.text, content={"user": marker})

    def step(self, action: Any) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        if self.task is None or self.episode is None:
            raise RuntimeError("call reset() before step()")
        if self._done:
            raise RuntimeError("episode is over: call reset()")
        started = time.perf_counter()
        given = _is_actions(action)
        if not given:
            action = _raw_record(action)
        parsed = self._parse(action, given=given)
        # a protocol that checks arguments made them: no second walk (`checks_arguments`)
        trusted = self.protocol.checks_arguments and not given
        actions = parsed if isinstance(parsed, list) else []
        observations: list[Observation | ObservationRecord] = (
            [parsed] if isinstance(parsed, ObservationRecord) else []
        )
        steps = self.episode.steps
        if steps:
            steps[-1].pack()  # the step before this one is history now
        index = len(steps) + 1
        user_turns = self._user_turn  # the user's answers before this step (minefields' before_user_turns)
        assert self._ctx is not None
        self._ctx.extras["step"] = index  # tool layers place a call by step (fault windows)
        self._ctx.extras.pop("faults", None)  # a fault layer lists what it injected this step here
        # each call's arguments checked once: the run and the info record both need the answer
        problems, records = self._action_records(actions, trusted)
        if self.timeline is not None:  # the turn took simulated time: what fell due meanwhile fires
            self.timeline.begin_step(index, records if given else action)
        tool_time, terminated, aborted = self._run_all(actions, problems, observations)
        step_time = self.timeline.end_step(index) if self.timeline is not None else None
        if step_time is not None:
            observations.extend(step_time.notifications)
        # ReAct's parse of the same text gives the same records: a packed step keeps the text alone
        parser = self.protocol if type(self.protocol) is ReActProtocol and not given else None
        raw = None if given else _keepable(action)  # actions given as objects: no raw output
        step = EpisodeStep.of_records(index, raw, actions, observations, parser=parser)
        if self.world is not None:
            try:
                _tried_twice(lambda: self._world_state(step))
            except InfraError as exc:  # a remote world that died: this step says so, never raises
                observations.append(_infra_observation("the world's state is unavailable", exc))
                aborted = aborted or outage_of(observations[-1])
        self.episode.steps.append(step)
        progress = self._check(step.index, actions, observations, user_turns, step_time)
        limit = self.task.max_steps or self.max_steps
        truncated = not terminated and (index >= limit or self._user_ended == "turn_limit")
        budget_stop = self._over_budget(started) if not terminated and aborted is None else None
        truncated = truncated or budget_stop is not None
        result: float | Mapping[str, float] | None = None
        if aborted is None and (terminated or truncated):
            result, aborted = self._score(self.task, self.episode, observations)
        if aborted is not None:  # ends unscored: not the agent's failure
            terminated, truncated, result = False, True, None
        self._done = terminated or truncated
        if result is not None:
            result = self._mined(result)
            if budget_stop is not None:
                result = {**_as_scores(result), "budget_stop": 1.0}
        reward = reward_value(result) if result is not None else 0.0
        if result is None and not self._done and progress is not None:
            reward = progress  # dense: the change in milestone progress
        info = self._step_info(step, records, observations)
        if step_time is not None and self.timeline is not None:
            info["clock"] = self.timeline.now_iso()
            if step_time.events:
                info["events"] = step_time.events
        if aborted is not None:
            info["aborted"] = aborted
        if budget_stop is not None:
            info["budget"] = budget_stop
        if result is not None:
            info["scores"] = _as_scores(result)
            info["final_answer"] = self.episode.final_answer
            self._checks_info(info)
        info["timing"] = _timing(time.perf_counter() - started, tool_time)
        if type(self.protocol).format_observation not in _FIELD_FORMATTERS:
            observations[:] = [as_observation(o) for o in observations]  # the protocol reads models
        text = _observation_text(self.protocol, observations)
        self._last_render = text
        if self._listeners:
            self._emit("step", info)
        return _clip(text), reward, terminated, truncated, info

    def _run_all(
        self,
        actions: list[Action | ActionRecord],
        problems: list[str | None],
        observations: list[Observation | ObservationRecord],
    ) -> tuple[float, bool, str | None]:
        """Runs the step's actions in order, their observations appended to `observations`:
        the time the calls took, whether the episode ended (a final answer, the user done) and
        the backend failure that ends it unscored, if one did."""
        tool_time = 0.0
        for action, problem in zip(actions, problems, strict=True):
            t0 = time.perf_counter()
            obs = self._run(action, problem)
            observations.append(obs)
            tool_time += time.perf_counter() - t0
            aborted = outage_of(obs) if obs.error is not None else None
            if aborted is not None:
                return tool_time, False, aborted  # the backend is gone: nothing after this call runs
            if action.type == "final_answer" or self._user_ended == "stop":
                return tool_time, True, None  # the user ending the conversation ends it too
            if self._user_ended is not None:
                break  # the user left (turn limit): the step is truncated
        return tool_time, False, None

    def charge(self, *, prompt_tokens: int = 0, completion_tokens: int = 0, seconds: float = 0.0) -> None:
        """What a model turn spent (tokens, seconds in requests), counted against the budget
        before the step it produced; nothing without a budget. The runner charges every turn of an
        agent with `usage` (the LLM agents)."""
        if self.meter is not None:
            self.meter.charge(
                prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, seconds=seconds
            )

    def _over_budget(self, started: float) -> str | None:
        """The step's wall time charged; the budget it leaves the episode over, if any."""
        if self.meter is None:
            return None
        self.meter.charge(seconds=time.perf_counter() - started)
        return self.meter.over()

    def score_unfinished(self) -> tuple[float, dict[str, Any]]:
        """The reward of an episode its agent left before the end (an RL library ran out of turns),
        scored on what it did, minefields and milestones included, and the end info (step,
        scores, milestones) its trace's end record is made of."""
        if self.task is None or self.episode is None:
            raise RuntimeError("call reset() before score_unfinished()")
        result = self._mined(self.reward_fn(self.task, self.episode))
        info: dict[str, Any] = {
            "step": len(self.episode.steps),
            "final_answer": None,
            "scores": _as_scores(result),
        }
        self._checks_info(info)
        return reward_value(result), info

    def _mined(self, result: float | Mapping[str, float]) -> float | Mapping[str, float]:
        """The reward function's result, zeroed where a minefield was hit."""
        if self.checks is None or not self.checks.hits:
            return result
        return {**_as_scores(result), "reward": 0.0}

    def _checks_info(self, info: dict[str, Any]) -> None:
        """An ending step's info gets the milestones' and minefields' scores and end record."""
        if self.checks is not None:
            info["scores"].update(self.checks.scores())
            info.update(self.checks.end_record())

    def _check(
        self,
        index: int,
        actions: list[Action | ActionRecord],
        observations: list[Observation | ObservationRecord],
        user_turns: int,
        step_time: StepTime | None,
    ) -> float | None:
        """Scores the episode's milestones and minefields after this step (`user_turns`: the user's
        answers before it; `step_time`: its simulated time, for time windows); the change in
        progress under reward_mode "milestones", else None."""
        if self.checks is None:
            return None
        before = self.checks.progress
        clock = None  # a static task's time never moves
        if step_time is not None and self.timeline is not None and self.task is not None:
            clock = StepClock(self.task.clock, step_time.acted_at, self.timeline.now(), self.timeline.fired())
        try:
            calls = step_calls(actions, observations)
            if isinstance(self.offered, PerturbedToolSet):  # milestones name the real tools
                calls = self.offered.real_calls(calls)
            self.checks.observe(index, self.world, calls, user_turns=user_turns, clock=clock)
        except KeyError as exc:  # a table or column the world does not have: the task's mistake
            assert self.task is not None
            raise task_use_error(self.task, exc) from None
        return self.checks.progress - before if self.reward_mode == "milestones" else None

    def _step_info(
        self,
        step: EpisodeStep,
        records: list[dict[str, Any]],
        observations: list[Observation | ObservationRecord],
    ) -> dict[str, Any]:
        """The step's info but for how the episode ended (aborted, scores) and the timing."""
        assert self.task is not None and self._ctx is not None
        kinds = [o.error.kind.value for o in observations if o.error is not None]
        if kinds:
            self.error_counts.update(kinds)
        info: dict[str, Any] = {
            "step": step.index,
            "actions": records,
            "observations": [observation_record(o) for o in observations],
            "error_kind": kinds[0] if kinds else None,
            "error_kinds": kinds,
            "error_counts": dict(self.error_counts),
        }
        if self.world is not None:
            info["state_hash"] = step.state_hash
            info["state_diff"] = step.state_diff
        if self.task.user is not None:
            info["user"] = self._user_info()
        faults = self._ctx.extras.pop("faults", None)
        if faults:
            info["faults"] = faults
        return info

    def _action_records(
        self, actions: list[Action | ActionRecord], trusted: bool
    ) -> tuple[list[str | None], list[dict[str, Any]]]:
        """Each action's argument problem (`argument_problem`; None: fine) and its JSON record for
        info and traces. The protocol's records and the calls of a protocol that checks
        arguments are checked already; a given ToolCall's arguments are walked once here."""
        problems: list[str | None] = []
        records: list[dict[str, Any]] = []
        for action in actions:
            if type(action) is ActionRecord:
                problem, record = None, action.record()
            elif trusted:
                problem, record = None, action_record(action, trusted=True, checked=True)  # type: ignore[arg-type]
            else:
                problem, record = _given_action_record(action)  # type: ignore[arg-type]
            problems.append(problem)
            records.append(record)
        return problems, records

    def _score(
        self, task: Task, episode: Episode, observations: list[Observation | ObservationRecord]
    ) -> tuple[float | Mapping[str, float] | None, str | None]:
        """The reward function's result, or None and why the episode could not be scored (a remote
        world that scores itself is gone: said in `observations` too)."""
        try:
            return _tried_twice(lambda: self.reward_fn(task, episode)), None
        except InfraError as exc:
            observations.append(_infra_observation("the episode could not be scored", exc))
            return None, outage_of(observations[-1])

    def _world_state(self, step: EpisodeStep) -> None:
        """The world's state hash and diff after the step's calls, into `step`."""
        assert self.world is not None
        step.state_hash = self.world.state_hash()
        step.state_diff = self.world.take_diff()

    # ---- misc -----------------------------------------------------------------------------
    def subscribe(self, listener: Callable[[str, dict[str, Any]], None]) -> None:
        """Called with ("reset" | "step", info) after each reset and step (the recorder uses this)."""
        self._listeners.append(listener)

    def _emit(self, event: str, info: dict[str, Any]) -> None:
        for listener in self._listeners:
            listener(event, info)

    def render(self) -> str | None:
        return self._last_render if self.render_mode == "ansi" else None

    def close(self) -> None:
        """Close the worlds and release the file store the env made (its temporary directory);
        a store passed in as `files=` stays its owner's. Calling it twice is harmless."""
        if self._fixed_world and self.world is not None:
            self.world.close()
        for world in self._worlds.values():
            world.close()
        self._worlds.clear()
        if self._owns_files:
            self.files.close()
        super().close()
