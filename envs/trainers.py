"""ToolEnv behind RL trainers' environment interfaces: TRL's GRPO `environment_factory` and verl's
tool interface. Neither library is needed: the adapters follow their interfaces, so toolgym's
default install stays without torch (verl's own `ToolResponse` and `OpenAIFunctionToolSchema` are
used, imported lazily, where verl is installed).

TRL (`GRPOTrainer(environment_factory=...)`, trl >= 1.x): the trainer makes one environment per
rollout and finds its tools as the public functions of its *class*, typed and documented (it builds
their schemas with transformers' `get_json_schema`); it calls `reset(**example)` before each
rollout and, when defined, `get_reward()` after it. `grpo_environment_factory(tools, tasks)` builds
such a class for a tool set (every tool a method with the tool's parameters, plus `final_answer`),
each instance a ToolEnv of its own; `grpo_dataset(tasks)` gives the matching prompt-only rows
(`prompt`, `task_id`, `seed`). A tool method steps the env with the call and returns the
observation's text; `get_reward` is the episode's reward (scored now when the model stopped
without `final_answer`: state tasks still score, answer tasks get no answer).

verl (`verl.tools.base_tool.BaseTool`): async `create(instance_id, **kwargs)`, `execute(instance_id,
parameters, **kwargs) -> (response, step reward, metrics)`, `calc_reward(instance_id)` and
`release(instance_id)`, one object per tool with its OpenAI function schema (`tool_schema`).
`VerlToolAdapter` is that for one toolgym tool, episodes keyed by trajectory (each in its own
ToolEnv); `verl_tools(...)` gives one adapter per tool, sharing the episodes. verl's tool config
(`initialize_tools_from_config`) loads it by `class_name`; leave its `tool_schema` out: verl's
schema model wants a `type` on every parameter, which `toolgym tools --format openai` does not
give optional (`anyOf`) ones, and the adapter builds a schema verl takes (`verl_tool_schema`).
"""

from __future__ import annotations

import inspect
import keyword
import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from toolgym.actions import FinalAnswer, ToolCall
from toolgym.envs.tool_env import ToolEnv, default_world_factory
from toolgym.mocks.events import TIMELINE_TOOLSET
from toolgym.tasks import TaskSet
from toolgym.tools import BaseTool, ToolSet

FINAL_ANSWER = "final_answer"
RESERVED = frozenset({"reset", "get_reward", FINAL_ANSWER})
_JSON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
}


def offered_tools(tools: ToolSet, tasks: TaskSet) -> ToolSet:
    """`tools`, the mock APIs of every app set the tasks use and, when a task's world moves, the
    env's `wait` and `current_time` (`toolgym.mocks.events`): what a rollout may call."""
    out = tools
    if any(task.dynamic for task in tasks):
        out = out.merged(ToolSet(t for t in TIMELINE_TOOLSET if t.name not in out))
    seen: set[tuple[str, ...]] = set()
    for task in tasks:
        if task.apps and tuple(task.apps) not in seen:
            seen.add(tuple(task.apps))
            world = default_world_factory(task)
            if world is not None:
                out = out.merged(ToolSet(t for t in world.tools if t.name not in out))
                world.close()
    return out


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _python_type(schema: Mapping[str, Any]) -> Any:
    kind = schema.get("type")
    if isinstance(kind, list):  # ["string", "null"]
        kind = next((k for k in kind if k != "null"), "string")
    return _JSON_TYPES.get(str(kind), str)


def _identifier(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("_")


def _method(tool: BaseTool) -> Callable[..., str] | None:
    """A typed, documented method that calls `tool` in the instance's episode (None when a
    parameter name is no Python identifier: TRL passes arguments by keyword)."""
    schema = tool.parameters_schema()
    props: Mapping[str, Any] = schema.get("properties", {})
    if not all(_identifier(name) and name != "self" for name in props):
        return None
    required = set(schema.get("required", []))
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {"return": str}
    doc_args = []
    for name, prop in props.items():
        kind = _python_type(prop)
        if name in required:
            parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=kind))
            annotations[name] = kind
        else:
            optional = kind | None
            parameters.append(
                inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=optional)
            )
            annotations[name] = optional
        doc_args.append(f"    {name}: {_one_line(prop.get('description') or f'the {name}')}")
    tool_name = tool.name

    def call(self: GRPOToolEnv, **arguments: Any) -> str:
        given = {k: v for k, v in arguments.items() if v is not None or k in required}
        return self._call_tool(tool_name, given)

    call.__name__ = call.__qualname__ = tool.name
    call.__doc__ = _one_line(tool.description or tool.name) + "\n\nArgs:\n" + "\n".join(doc_args) + "\n"
    call.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    call.__annotations__ = annotations
    return call


class GRPOToolEnv:
    """One rollout's environment for TRL's GRPO trainer (see the module docstring). Subclasses made
    by `grpo_environment_factory` carry the tools as methods."""

    def __init__(self, env: ToolEnv) -> None:
        self.env = env
        self.reward: float | None = None
        # each step's reward: 0 but the last, or under reward_mode "milestones" the change in
        # milestone progress (TRL takes one reward per rollout: a reward function may read these)
        self.step_rewards: list[float] = []

    def reset(self, task_id: str | None = None, seed: int | None = None, **example: Any) -> str | None:
        """A new episode on the example's task (`task_id`); None: the prompt already holds the query."""
        options = {"task": task_id} if task_id is not None else None
        self.env.reset(seed=seed, options=options)
        self.reward = None
        self.step_rewards = []
        return None

    def _call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        if self.env.task is None:
            raise RuntimeError("reset() first")
        if self.reward is not None:
            return "The episode is over."
        obs, reward, terminated, truncated, _ = self.env.step(ToolCall(name=name, arguments=arguments))
        self.step_rewards.append(float(reward))
        if terminated or truncated:
            self.reward = float(reward)
        return obs

    def final_answer(self, text: str) -> str:
        """Give the final answer to the task; this ends the episode.

        Args:
            text: the answer
        """
        if self.env.task is None:
            raise RuntimeError("reset() first")
        if self.reward is None:
            _, reward, *_ = self.env.step(FinalAnswer(text=text))
            self.reward = float(reward)
            self.step_rewards.append(self.reward)
        return "Answer recorded."

    def get_reward(self) -> float:
        """The episode's reward; scored now if the model stopped without a final answer."""
        if self.reward is not None:
            return self.reward
        if self.env.task is None or self.env.episode is None:
            return 0.0
        return self.env.score_unfinished()[0]


def grpo_environment_class(tools: ToolSet) -> type[GRPOToolEnv]:
    """A GRPOToolEnv subclass with one method per tool (tools whose names or parameters are no Python
    identifiers, or whose names the interface takes, are left out: TRL calls tools by method name
    with keyword arguments)."""
    methods: dict[str, Any] = {}
    for t in tools:
        method = (
            _method(t) if _identifier(t.name) and t.name not in RESERVED | vars(GRPOToolEnv).keys() else None
        )
        if method is not None:
            methods[t.name] = method
    return type("ToolgymGRPOEnv", (GRPOToolEnv,), methods)


def grpo_environment_factory(tools: ToolSet, tasks: TaskSet, **env_kwargs: Any) -> Callable[[], GRPOToolEnv]:
    """`environment_factory` for TRL's GRPOTrainer: each call a fresh ToolEnv over `tasks`."""
    cls = grpo_environment_class(offered_tools(tools, tasks))

    def factory() -> GRPOToolEnv:
        return cls(ToolEnv(tools, tasks, **env_kwargs))

    return factory


def grpo_dataset(tasks: TaskSet, seed: int | None = None) -> list[dict[str, Any]]:
    """Prompt-only rows for GRPO (`datasets.Dataset.from_list` takes them): the task's query as
    the user message, and the `task_id` and `seed` that `reset` reads."""
    from toolgym.envs.tool_env import task_prompt

    return [
        {
            "prompt": [{"role": "user", "content": task_prompt(t)}],
            "task_id": t.id,
            "seed": t.seed if seed is None else seed,
        }
        for t in tasks
    ]


# ---- verl ---------------------------------------------------------------------------------------
class ToolResponse(BaseModel):
    """The shape of verl's `verl.tools.schemas.ToolResponse` (its agent loop reads `.text`, `.image`,
    `.video`); verl's own class is used when verl is installed."""

    text: str | None = None
    image: list[Any] | None = None
    video: list[Any] | None = None


def _verl_schemas() -> Any:
    """verl's `verl.tools.schemas` module, None when verl is not installed."""
    try:
        from verl.tools import schemas
    except ImportError:
        return None
    return schemas


def _tool_response(text: str) -> Any:
    schemas = _verl_schemas()
    return ToolResponse(text=text) if schemas is None else schemas.ToolResponse(text=text)


_JSON_TYPE_NAMES = ["string", "number", "integer", "boolean", "array", "object", "null"]


def _verl_property(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A parameter as verl's `OpenAIFunctionPropertySchema` takes it: it requires `type`, so a
    union (`anyOf`/`oneOf`, as an optional `T | None` is written) also gets its members' types as
    a list (verl's own form for `int | float`), and a lone member's `enum` comes up beside it.
    Every keyword is kept: the schema stays the same JSON Schema."""
    out = dict(schema)
    if "type" in out:
        return out
    variants = [v for v in out.get("anyOf") or out.get("oneOf") or [] if isinstance(v, Mapping)]
    types: list[str] = []
    for variant in variants:
        kind = variant.get("type")
        for name in kind if isinstance(kind, list) else [kind]:
            if isinstance(name, str) and name not in types:
                types.append(name)
    out["type"] = (types[0] if len(types) == 1 else types) if types else list(_JSON_TYPE_NAMES)
    enums = [v["enum"] for v in variants if isinstance(v.get("enum"), list)]
    if "enum" not in out and len(enums) == 1:
        out["enum"] = [*enums[0], None] if "null" in types else list(enums[0])
    return out


def verl_tool_schema(tool: BaseTool) -> dict[str, Any]:
    """`tool`'s OpenAI function tool in the form verl's `OpenAIFunctionToolSchema` validates (every
    parameter typed: `_verl_property`). verl's model keeps only each parameter's type, description
    and enum: what its agent loop puts in the chat template."""
    parameters = dict(tool.parameters_schema())
    properties = parameters.get("properties")
    if isinstance(properties, Mapping):
        parameters["properties"] = {name: _verl_property(prop) for name, prop in properties.items()}
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description or tool.name,
            "parameters": parameters,
        },
    }


class VerlEpisodes:
    """The episodes of verl trajectories, each a ToolEnv of its own. verl creates, executes and
    releases a tool instance per call, so an episode is keyed by the trajectory (the agent loop's
    `request_id`, else `create_kwargs["episode_id"]`) and lives until `close` or its end."""

    def __init__(self, tools: ToolSet, tasks: TaskSet, **env_kwargs: Any) -> None:
        self.tools, self.tasks, self.env_kwargs = tools, tasks, env_kwargs
        self.envs: dict[str, ToolEnv] = {}
        self.rewards: dict[str, float] = {}
        self.instances: dict[str, dict[str, Any]] = {}  # instance id -> its create_kwargs

    def env_for(self, key: str, task_id: str, seed: int | None) -> ToolEnv:
        env = self.envs.get(key)
        if env is None:
            env = self.envs[key] = ToolEnv(self.tools, self.tasks, **self.env_kwargs)
            env.reset(seed=seed, options={"task": task_id})
        return env

    def reward(self, key: str) -> float:
        """The episode's reward: its end's, else scored on its current state."""
        if key in self.rewards:
            return self.rewards[key]
        env = self.envs.get(key)
        if env is None or env.task is None or env.episode is None:
            return 0.0
        return env.score_unfinished()[0]

    def close(self, key: str) -> None:
        env = self.envs.pop(key, None)
        self.rewards.pop(key, None)
        if env is not None:
            env.close()


_SHARED: dict[str, VerlEpisodes] = {}


def _episode_key(instance_id: str, created: Mapping[str, Any], kwargs: Mapping[str, Any]) -> str:
    """The trajectory a call belongs to: the agent loop's request id, else the sample's episode id."""
    request = getattr(kwargs.get("agent_data"), "request_id", None)
    return str(request or created.get("episode_id") or instance_id)


class VerlToolAdapter:
    """One toolgym tool as a verl tool: `verl.tools.base_tool.BaseTool`'s constructor and methods
    (see the module docstring). From verl's tool config, `config` names the tool and the task set
    (`{"tool": "transfer_funds", "tasks": "mtu"}`) and every tool of a task set shares its episodes;
    `verl_tools` builds them in Python. A sample's `tools_kwargs[<tool>]["create_kwargs"]` gives
    `task_id` and optionally `seed` and `episode_id`."""

    def __init__(
        self, config: Mapping[str, Any], tool_schema: Any = None, *, episodes: VerlEpisodes | None = None
    ) -> None:
        self.config = dict(config)
        if episodes is None:
            from toolgym.envs.demo import resolve_task_set

            spec = str(self.config["tasks"])
            if spec not in _SHARED:
                tasks = resolve_task_set(spec)
                _SHARED[spec] = VerlEpisodes(
                    ToolSet(), tasks, max_steps=int(self.config.get("max_steps", 30))
                )
            episodes = _SHARED[spec]
        self.episodes = episodes
        tool = offered_tools(episodes.tools, episodes.tasks).get(str(self.config["tool"]))
        self.name = tool.name
        if tool_schema is None:
            # verl's agent loop calls `tool_schema.model_dump()`: its own model when verl is here
            schemas = _verl_schemas()
            tool_schema = verl_tool_schema(tool)
            if schemas is not None:
                tool_schema = schemas.OpenAIFunctionToolSchema.model_validate(tool_schema)
        self.tool_schema = tool_schema

    def get_openai_tool_schema(self) -> Any:
        return self.tool_schema

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, Any]:
        import uuid

        instance = instance_id or uuid.uuid4().hex
        self.episodes.instances[instance] = dict(kwargs.get("create_kwargs") or {})
        return instance, _tool_response("")

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[Any, float, dict[str, Any]]:
        """The call's observation, the step's reward (the episode's when it ended) and metrics."""
        created = self.episodes.instances.get(instance_id, {})
        task_id = created.get("task_id")
        if task_id is None:
            return _tool_response("no task: give create_kwargs.task_id in the sample's tools_kwargs"), 0.0, {}
        key = _episode_key(instance_id, created, kwargs)
        env = self.episodes.env_for(key, str(task_id), created.get("seed"))
        if key in self.episodes.rewards:
            return _tool_response("The episode is over."), 0.0, {}
        obs, reward, terminated, truncated, info = env.step(
            ToolCall(name=self.name, arguments=dict(parameters))
        )
        if terminated or truncated:
            self.episodes.rewards[key] = float(reward)
        return (
            _tool_response(obs),
            float(reward),
            {"error_kind": info["error_kind"], "step": info["step"], "episode": key},
        )

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        created = self.episodes.instances.get(instance_id, {})
        return self.episodes.reward(_episode_key(instance_id, created, kwargs))

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """verl releases after every call: the instance goes, its episode stays (`episodes.close`)."""
        self.episodes.instances.pop(instance_id, None)


def verl_tools(tools: ToolSet, tasks: TaskSet, **env_kwargs: Any) -> list[VerlToolAdapter]:
    """One verl tool per tool the tasks may use, sharing one set of episodes."""
    episodes = VerlEpisodes(tools, tasks, **env_kwargs)
    return [VerlToolAdapter({"tool": t.name}, episodes=episodes) for t in offered_tools(tools, tasks)]


__all__ = [
    "GRPOToolEnv",
    "VerlToolAdapter",
    "grpo_dataset",
    "grpo_environment_class",
    "grpo_environment_factory",
    "verl_tool_schema",
    "verl_tools",
]
