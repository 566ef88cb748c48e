"""Seeded tool-schema perturbations: a `PerturbPlan`, applied by a `PerturbLayer` (a tool layer).

    plan = PerturbPlan.named("scrambled-names")      # a preset, or PerturbPlan.load("plan.json")
    env = ToolEnv(tools, tasks, tool_layers=[cassette, FaultLayer(f), PerturbLayer(plan, pool=pool)])

What the agent is offered changes; what runs does not. A plan may

- scramble tool names (`fn_` and eight hex digits),
- rename arguments (`arg_` and six hex digits),
- drop descriptions (the tool's and its arguments'),
- drop types (every `type` in the argument schemas),
- add k distractor tools: tools of the pool (every bundled app's APIs and the run's tools) that this
  episode does not offer, the k most similar to the offered ones (word overlap of name and
  description), perturbed like the others. A call to a distractor is a `tool_error` observation:
  the tool exists but this task has no backend for it.

The new names are a function of the plan's `seed` and the real name, nothing else, so every episode of
a run sees the same names, a rerun and a replay see them again, and traces stay byte-identical. The
layer goes outermost (after a cassette and a fault plan): a call is mapped back to the real tool and
arguments before any inner layer sees it, so a cassette records and replays real calls and a fault
plan names real tools. The trace keeps what the agent wrote; its header's `env_config["perturbation"]`
holds the mapping, and `unperturbed(trace)` maps a trace's calls back to the real names, which is how
scores are computed (`toolgym eval`, `report`).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from toolgym.actions import Action, Observation, ToolCall
from toolgym.envs.faults import read_plan_file
from toolgym.envs.milestones import CallSeen
from toolgym.errors import ArgumentError, ErrorKind
from toolgym.tools import BaseTool, ParamSpec, ToolContext, ToolSet
from toolgym.trace import Trace
from toolgym.world import World

PERTURBATION_KEY = "perturbation"  # env_config key of a trace header, and of reset's info
MAX_DISTRACTORS = 1000

# the presets `--perturb NAME` knows (after ToolSandbox's tool augmentations)
PRESETS: dict[str, dict[str, Any]] = {
    "scrambled-names": {"scramble_names": True},
    "renamed-arguments": {"rename_arguments": True},
    "no-descriptions": {"drop_descriptions": True},
    "no-types": {"drop_types": True},
    "distractors-3": {"distractors": 3},
    "distractors-10": {"distractors": 10},
    "distractors-all": {"distractors": MAX_DISTRACTORS},
    "all": {
        "scramble_names": True,
        "rename_arguments": True,
        "drop_descriptions": True,
        "drop_types": True,
        "distractors": 3,
    },
}


class PerturbPlanError(ArgumentError):
    """A perturbation plan that cannot be used: bad JSON, an unknown field or preset, a plan that
    changes nothing. Typed (an `argument_error`), raised before any episode runs."""


class PerturbPlan(BaseModel):
    """What changes in the tools an agent is offered; `tools` (an fnmatch pattern) picks the offered
    tools whose schemas change (distractors always do)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field("perturbed", min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")
    seed: int = Field(0, ge=0, description="the new names are a function of this seed and the real names")
    tools: str = Field("*", min_length=1, description="fnmatch pattern of the offered tools perturbed")
    scramble_names: bool = False
    rename_arguments: bool = False
    drop_descriptions: bool = False
    drop_types: bool = False
    distractors: int = Field(
        0, ge=0, le=MAX_DISTRACTORS, description="unneeded tools added, most similar first"
    )

    @model_validator(mode="after")
    def _check(self) -> PerturbPlan:
        if not (
            self.scramble_names
            or self.rename_arguments
            or self.drop_descriptions
            or self.drop_types
            or self.distractors
        ):
            raise ValueError("a perturbation plan must change something")
        return self

    @classmethod
    def parse(cls, data: Any) -> PerturbPlan:
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise PerturbPlanError(f"bad perturbation plan: {exc}") from None

    @classmethod
    def named(cls, name: str) -> PerturbPlan:
        """A preset by name (`PRESETS`)."""
        if name not in PRESETS:
            raise PerturbPlanError(f"no perturbation preset {name!r}; presets: {', '.join(PRESETS)}")
        return cls.parse({"name": name, **PRESETS[name]})

    @classmethod
    def load(cls, path: Path | str) -> PerturbPlan:
        """A plan from a JSON file (its stem is the default name), or a preset's name."""
        p = Path(path)
        if str(path) in PRESETS and not p.exists():
            return cls.named(str(path))
        hint = f" (or name a preset: {', '.join(PRESETS)})"
        return cls.parse(read_plan_file(p, "perturbation plan", PerturbPlanError, hint))


def _hex(seed: int, *parts: str, length: int) -> str:
    key = json.dumps([seed, *parts], ensure_ascii=False)
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:length]


_WORD = re.compile(r"[A-Za-z][a-z]*|[0-9]+|[^\x00-\x7f]")


def _words(tool: BaseTool) -> frozenset[str]:
    """A tool's words for similarity: its name split at underscores and case changes, and its
    description's words."""
    return frozenset(w.lower() for w in _WORD.findall(f"{tool.name} {tool.description}"))


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard overlap of two word sets."""
    return len(a & b) / len(a | b) if a or b else 0.0


def ranked_distractors(offered: Sequence[BaseTool], pool: Iterable[BaseTool], k: int) -> list[BaseTool]:
    """The k tools of `pool` not offered, most similar to an offered tool first (ties by name)."""
    names = {t.name for t in offered}
    offered_words = [_words(t) for t in offered]
    scored: dict[str, tuple[float, BaseTool]] = {}
    for tool in pool:
        if tool.name in names or tool.name in scored:
            continue
        words = _words(tool)
        best = max((similarity(words, w) for w in offered_words), default=0.0)
        scored[tool.name] = (best, tool)
    ranked = sorted(scored.items(), key=lambda item: (-item[1][0], item[0]))
    return [tool for _, (_, tool) in ranked[:k]]


def _untyped(schema: Any) -> Any:
    """A JSON schema without its types: every `type` key gone, and an `anyOf`/`oneOf` of types alone
    (pydantic's `X | None`) with it."""
    if isinstance(schema, list):
        return [_untyped(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type":
            continue
        cleaned = _untyped(value)
        if key in ("anyOf", "oneOf") and isinstance(cleaned, list) and all(c == {} for c in cleaned):
            continue
        out[key] = cleaned
    return out


def _undescribed(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k not in ("description", "title")}


class PerturbedTool(BaseTool):
    """How one tool is offered under a plan: another name, argument names, schema and description.
    `real` is the tool it stands for, None for a distractor (no backend in this task). The env never
    invokes it: `PerturbedToolSet.call` maps the call back and calls the real tool set."""

    def __init__(self, tool: BaseTool, plan: PerturbPlan, *, change: bool, distractor: bool) -> None:
        # what the plan changes of this tool (`change`: the tool matches the plan's pattern)
        undescribed = change and plan.drop_descriptions
        untyped = change and plan.drop_types
        renaming = change and plan.rename_arguments
        self.real_name = tool.name
        self.distractor = distractor
        scrambled = change and plan.scramble_names
        self.name = f"fn_{_hex(plan.seed, 'tool', tool.name, length=8)}" if scrambled else tool.name
        self.description = "" if undescribed else tool.description
        self.category = tool.category
        self.mutates_state = tool.mutates_state
        self.version = tool.version
        self.backend = tool.backend
        self.returns = list(tool.returns)
        schema = dict(tool.parameters_schema())
        properties: Mapping[str, Any] = schema.get("properties") or {}
        self.arguments: dict[str, str] = {}  # offered argument name -> real
        renamed: dict[str, Any] = {}
        for real, pschema in properties.items():
            offered = real
            if renaming:
                offered = f"arg_{_hex(plan.seed, 'argument', tool.name, real, length=6)}"
                while offered in renamed:  # a clash of six hex digits: made unique deterministically
                    offered += "_"
            if undescribed and isinstance(pschema, Mapping):
                pschema = _undescribed(pschema)
            if untyped:
                pschema = _untyped(pschema)
            self.arguments[offered] = real
            renamed[offered] = pschema
        to_offered = {real: offered for offered, real in self.arguments.items()}
        schema["properties"] = renamed
        if "required" in schema:
            schema["required"] = [to_offered.get(r, r) for r in schema["required"]]
        if undescribed:
            schema = _undescribed(schema)
        self._schema = schema
        self._params = [
            ParamSpec(
                name=to_offered.get(p.name, p.name),
                type=p.type,
                description=None if undescribed else p.description,
                optional=p.optional,
                default=p.default,
                enum=p.enum,
                json_schema=renamed.get(to_offered.get(p.name, p.name), {}),
            )
            for p in tool.params
        ]

    @property
    def params(self) -> list[ParamSpec]:
        return list(self._params)

    def parameters_schema(self) -> dict[str, Any]:
        return dict(self._schema)

    def real_arguments(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The call's arguments under the real names (an unknown name passes as it is: the real
        tool says it is unknown)."""
        return {self.arguments.get(k, k): v for k, v in arguments.items()}

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        raise ArgumentError(f"{self.name}: a perturbed tool is checked by the tool it stands for")

    def invoke(self, arguments: Mapping[str, Any], ctx: ToolContext) -> Any:
        raise ArgumentError(f"{self.name}: a perturbed tool is called through its tool set")

    @property
    def renamed_arguments(self) -> dict[str, str]:
        """{offered: real} of the arguments offered under another name."""
        return {k: v for k, v in self.arguments.items() if k != v}

    @property
    def changed(self) -> bool:
        """Whether the agent could tell this tool from the real one by its name or arguments."""
        return self.distractor or self.name != self.real_name or bool(self.renamed_arguments)

    def mapping(self) -> dict[str, Any]:
        """What the trace header records of this tool."""
        record: dict[str, Any] = {"name": self.real_name}
        renamed = self.renamed_arguments
        if renamed:
            record["arguments"] = renamed
        if self.distractor:
            record["distractor"] = True
        return record


class PerturbedToolSet(ToolSet):
    """The perturbed tools of one episode in front of the tool set they stand for. A call is mapped
    back to the real tool and arguments, run by the inner set, and its observation mapped forward:
    the tool's offered name, and the real names quoted in an error message replaced by the offered
    ones (an agent must not learn the real names from an error)."""

    def __init__(self, inner: ToolSet, tools: Sequence[PerturbedTool]) -> None:
        super().__init__(tools)
        self.inner = inner
        self.perturbed = {t.name: t for t in tools}

    def call(self, call: ToolCall, ctx: ToolContext) -> Observation:
        tool = self.perturbed.get(call.name)
        if tool is None:
            return self.inner.call(call, ctx)  # the typed unknown_tool observation
        if tool.distractor:
            return Observation.from_error(
                ErrorKind.TOOL_ERROR,
                f"{call.name}: this tool is not available for this task",
                tool=call.name,
                call_id=call.call_id,
            )
        real = call.model_copy(
            update={"name": tool.real_name, "arguments": tool.real_arguments(call.arguments)}
        )
        obs = self.inner.call(real, ctx)
        return _forward(obs, tool)

    def real_calls(self, calls: Sequence[CallSeen]) -> list[CallSeen]:
        """A step's calls under the real names (as milestones and minefields name them)."""
        out: list[CallSeen] = []
        for call in calls:
            tool = self.perturbed.get(call.name)
            if tool is not None:
                call = replace(call, name=tool.real_name, arguments=tool.real_arguments(call.arguments))
            out.append(call)
        return out

    def subset(self, names: Iterable[str] | None) -> ToolSet:
        if names is None:
            return self
        return PerturbedToolSet(self.inner, [self.perturbed[n] for n in names])

    def merged(self, other: ToolSet) -> ToolSet:
        raise TypeError("a perturbed tool set is outermost: merge tool sets before perturbing them")

    def mapping(self) -> dict[str, Any]:
        """{offered name: {name: real, arguments: {offered: real}, distractor}} of every tool that
        the plan changed (a tool offered as it is is left out)."""
        return {name: tool.mapping() for name, tool in self.perturbed.items() if tool.changed}


def _forward(obs: Observation, tool: PerturbedTool) -> Observation:
    update: dict[str, Any] = {}
    if obs.tool == tool.real_name:
        update["tool"] = tool.name
    if obs.error is not None:
        message = _offered_names(obs.error.message, tool)
        text = _offered_names(obs.text, tool)
        if message != obs.error.message or text != obs.text:
            update["error"] = obs.error.model_copy(update={"message": message})
            update["text"] = text
    return obs.model_copy(update=update) if update else obs


def _offered_names(text: str, tool: PerturbedTool) -> str:
    """`text` with the real tool and argument names replaced by the offered ones where they stand as
    names (a whole word: a quoted name, `name:`, the start of a message)."""
    pairs = [(tool.real_name, tool.name), *((real, offered) for offered, real in tool.arguments.items())]
    for real, offered in sorted(pairs, key=lambda p: -len(p[0])):
        if real != offered:
            text = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(real)}(?![A-Za-z0-9_])", offered, text)
    return text


class PerturbLayer:
    """A `ToolLayer` that offers the tools under a plan. Put it outermost in `tool_layers`.
    `pool`: the tools distractors are drawn from (`distractor_pool`); needed only when the plan
    adds distractors."""

    def __init__(self, plan: PerturbPlan, *, pool: Sequence[BaseTool] = ()) -> None:
        self.plan = plan
        self.pool = list(pool)
        self.last: PerturbedToolSet | None = None
        # each tool perturbed once (keyed by the tool object, kept alive here): the same objects
        # every episode, so the env's cache of rendered instructions serves them
        self._made: dict[tuple[int, bool], tuple[BaseTool, PerturbedTool]] = {}
        self._distractors: dict[tuple[str, ...], list[BaseTool]] = {}

    def wrap(self, tools: ToolSet, world: World | None = None) -> PerturbedToolSet:
        offered = list(tools)
        perturbed = [
            self._perturbed(t, change=fnmatch.fnmatchcase(t.name, self.plan.tools), distractor=False)
            for t in offered
        ]
        extra = self._distractors_for(offered, world)
        perturbed += [self._perturbed(t, change=True, distractor=True) for t in extra]
        _check_unique(perturbed)
        if extra:
            # distractors placed among the offered tools by a seeded order: a list that ended in
            # them would tell them apart
            perturbed.sort(key=lambda t: _hex(self.plan.seed, "order", t.name, length=16))
        self.last = PerturbedToolSet(tools, perturbed)
        return self.last

    def _perturbed(self, tool: BaseTool, *, change: bool, distractor: bool) -> PerturbedTool:
        key = (id(tool), distractor)
        made = self._made.get(key)
        if made is None or made[0] is not tool:
            made = self._made[key] = (
                tool,
                PerturbedTool(tool, self.plan, change=change, distractor=distractor),
            )
        return made[1]

    def _distractors_for(self, offered: Sequence[BaseTool], world: World | None) -> list[BaseTool]:
        if not self.plan.distractors:
            return []
        key = tuple(t.name for t in offered)
        found = self._distractors.get(key)
        if found is None:
            pool = [*self.pool, *(world.tools if world is not None else ())]
            found = self._distractors[key] = ranked_distractors(offered, pool, self.plan.distractors)
        return found

    def start_episode(self) -> None:
        """Nothing to reset: the mapping is the plan's, the same every episode."""

    def episode_info(self) -> dict[str, Any]:
        """What `ToolEnv.reset` adds to its info: the offered names' mapping (an agent that knows
        the real tools, the oracle, calls them by their offered names)."""
        return {PERTURBATION_KEY: self.record()}

    def record(self) -> dict[str, Any]:
        """What a trace header records: the plan and the last episode's mapping."""
        mapping = self.last.mapping() if self.last is not None else {}
        return {"plan": self.plan.model_dump(mode="json"), "tools": mapping}


def _check_unique(tools: Sequence[PerturbedTool]) -> None:
    seen: dict[str, str] = {}
    for tool in tools:
        if tool.name in seen:
            raise PerturbPlanError(
                f"perturbation: {seen[tool.name]} and {tool.real_name} would both be offered as {tool.name}"
            )
        seen[tool.name] = tool.real_name


def distractor_pool(toolset: ToolSet | None = None) -> list[BaseTool]:
    """The tools distractors come from: every registered mock app's APIs (read from the app classes:
    no world is built) and `toolset`'s tools."""
    from toolgym.mocks.app import app_apis
    from toolgym.mocks.apps import ALL_APPS

    tools: list[BaseTool] = list(toolset or ())
    for name in sorted(ALL_APPS):
        tools.extend(api.tool for api in app_apis(ALL_APPS[name]))
    return tools


def perturbation_of(trace: Trace) -> Mapping[str, Any] | None:
    """The header's perturbation record, None for a trace of unperturbed tools."""
    found = trace.header.env_config.get(PERTURBATION_KEY)
    return found if isinstance(found, Mapping) else None


def perturbed_tools(trace: Trace) -> Mapping[str, Any]:
    """The header's mapping of offered names (`PerturbedToolSet.mapping`); empty for a trace of
    unperturbed tools."""
    record = perturbation_of(trace)
    tools = record.get("tools") if record is not None else None
    return tools if isinstance(tools, Mapping) else {}


def unperturbed(trace: Trace) -> Trace:
    """`trace` with its calls, observations and offered tools under the real names (a copy; a trace
    of unperturbed tools comes back as it is). Scores are computed on this view."""
    tools = perturbed_tools(trace)
    if not tools:
        return trace
    steps = [
        step.model_copy(
            update={
                "actions": [_real_action(a, tools) for a in step.actions],
                "observations": [_real_observation(o, tools) for o in step.observations],
            }
        )
        for step in trace.steps
    ]
    header_tools = [
        t.model_copy(update={"name": str(tools[t.name]["name"])}) if t.name in tools else t
        for t in trace.header.tools
    ]
    header = trace.header.model_copy(update={"tools": header_tools})
    return trace.model_copy(update={"header": header, "steps": steps})


def _real_action(action: dict[str, Any], tools: Mapping[str, Any]) -> dict[str, Any]:
    entry = tools.get(str(action.get("name"))) if action.get("type") == "tool_call" else None
    if not isinstance(entry, Mapping):
        return action
    arguments = action.get("arguments")
    renamed = entry.get("arguments") or {}
    if isinstance(arguments, Mapping):
        arguments = {renamed.get(k, k): v for k, v in arguments.items()}
    return {**action, "name": entry["name"], "arguments": arguments}


def _real_observation(obs: dict[str, Any], tools: Mapping[str, Any]) -> dict[str, Any]:
    entry = tools.get(str(obs.get("tool")))
    return {**obs, "tool": entry["name"]} if isinstance(entry, Mapping) else obs


def offered_action(action: Action, info: Mapping[str, Any]) -> Action:
    """A call of a real tool as the agent must write it this episode (reset's `info` holds the
    perturbation's mapping); any other action as it is."""
    record = info.get(PERTURBATION_KEY)
    tools = record.get("tools") if isinstance(record, Mapping) else None
    if not isinstance(action, ToolCall) or not isinstance(tools, Mapping):
        return action
    for offered, entry in tools.items():
        if entry.get("name") == action.name and not entry.get("distractor"):
            to_offered = {real: name for name, real in (entry.get("arguments") or {}).items()}
            arguments = {to_offered.get(k, k): v for k, v in action.arguments.items()}
            return action.model_copy(update={"name": offered, "arguments": arguments})
    return action
