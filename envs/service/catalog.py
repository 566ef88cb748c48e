"""What an env-service session may be made of: the server's catalog (task sets, tools, rewards)
and a session's choice among them (`SessionConfig`).

A client never names a file path or a URL the server did not offer: task sets are bundled names
or files the operator passed at start (`--tasks`), remote tool servers are the operator's
(`--tool-server`). Otherwise a client could make the server read any file or call any address.
No openenv import here: the catalog is plain toolgym.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolgym.canonical import canonical_json
from toolgym.envs.demo import bundled_task_sets
from toolgym.envs.faults import FaultPlan, FaultPlanError, offered_tool_names
from toolgym.envs.rewards import RewardFn, answer_reward, state_scores, task_scores
from toolgym.envs.runner import DEFAULT_VERBOSITY, Verbosity
from toolgym.envs.task_sets import set_name_of
from toolgym.envs.users import LLMUser, ScriptedUser, UserLLM, UserSimulator
from toolgym.protocols import get_protocol
from toolgym.tasks import TaskSet
from toolgym.tools import ToolSet

REWARDS: dict[str, RewardFn] = {"task": task_scores, "answer": answer_reward, "state": state_scores}
# who plays the user of tasks with a user scenario; "llm" only on a server started with a user LLM
USERS = ("rule", "scripted", "llm")
MAX_SESSION_DELAY_S = 5.0  # a client's fault plan may slow its own calls, never hold a worker long
MAX_CACHED_CONFIGS = 256  # distinct reset configs a server keeps resolved (oldest dropped first)


class ServiceError(Exception):
    """A request the service refuses, with the kind clients branch on (HTTP: the `error.kind` of
    the body; WebSocket: the message, which starts with `[kind]`)."""

    status = 400

    def __init__(self, kind: str, message: str, status: int | None = None) -> None:
        super().__init__(f"[{kind}] {message}")
        self.kind = kind
        self.message = message
        if status is not None:
            self.status = status


class SessionConfig(BaseModel):
    """A session's episode set-up, chosen by the client at reset (`config`); what it leaves
    unset takes the server's defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tasks: str | None = Field(None, description="a task set the server offers, by name")
    tools: list[str] | None = Field(
        None, description="a subset of the server's tools (default: all; a task narrows it further)"
    )
    protocol: str | None = Field(None, description="action protocol: react, json, openai")
    reward: str | None = Field(None, description=f"reward function: {', '.join(REWARDS)}")
    seed: int | None = Field(None, ge=0, description="episode seed when reset names none")
    max_steps: int | None = Field(None, ge=1, le=10_000)
    faults: FaultPlan | None = Field(None, description="a fault plan for the session's tool calls")
    user: str | None = Field(
        None,
        description="who plays the user of tasks with a user scenario: rule (default), scripted "
        "(the task's user_replies), or llm (only on a server started with a user LLM)",
    )
    info: Literal["full", "slim"] | None = Field(
        None,
        description="what each step's info carries: full (default; ToolEnv's info) or slim "
        "(without the parsed actions, structured observations, state diff and faults: a smaller "
        "answer; the trace and the state message keep them)",
    )
    strict_arguments: bool | None = Field(
        None,
        description="app tools take arguments of their declared types only: no coercion of a JSON "
        "number or boolean into a string parameter (default: the server's, --strict-arguments)",
    )
    reward_mode: Literal["final", "milestones"] | None = Field(
        None,
        description="milestones: each step's reward is the change in milestone progress (dense "
        "rewards for RL), the last step's the usual one; final (default): the last step's only",
    )
    notifications: Verbosity | None = Field(
        None,
        description="which events of a task with events notify the agent: none, low (the important "
        "ones), medium (default: those with a notification text), high (every event)",
    )


@dataclass
class Catalog:
    """What the server offers. Task sets load once and are shared read-only by sessions; so are
    tool objects (as `toolgym demo` shares them between envs); each session builds its own
    ToolEnv and so its own mock-app world."""

    task_paths: dict[str, Path]
    tools: ToolSet
    defaults: SessionConfig = field(default_factory=SessionConfig)
    # the operator's user LLM (`toolgym env-server --user-base-url ... --user-model ...`), shared
    # by the sessions that choose `user: "llm"`; a client never names an endpoint
    user_llm: UserLLM | None = None
    _loaded: dict[str, TaskSet] = field(default_factory=dict)
    # reset configs as clients sent them (canonical JSON) -> resolved: a session's resets mostly
    # repeat one config, and validating and resolving it costs a reset tens of µs each time
    _resolved: dict[str, ResolvedConfig] = field(default_factory=dict, repr=False, compare=False)
    _resolved_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def build(
        cls,
        *,
        task_files: Sequence[Path] = (),
        tools: ToolSet | None = None,
        tool_names: Sequence[str] | None = None,
        tool_servers: Sequence[str] = (),
        token: str | None = None,
        defaults: SessionConfig | None = None,
        user_llm: UserLLM | None = None,
    ) -> Catalog:
        """Bundled task sets plus `task_files`, each by the set's one name (its registered name,
        else the file's stem, as in run folders and run.json); the built-in tools (or `tools`,
        narrowed to `tool_names`) merged with the tools of each server in `tool_servers`;
        `user_llm` lets sessions choose an LLM-played user."""
        paths = bundled_task_sets()
        for path in task_files:
            paths[set_name_of(Path(path), paths)] = Path(path)
        if tools is None:
            from toolgym.toolservers.registry import default_toolset

            tools = default_toolset()
        if tool_names is not None:
            tools = tools.subset(tool_names)
        for url in tool_servers:
            from toolgym.toolservers.clients import RemoteToolSet

            tools = tools.merged(RemoteToolSet(url, token=token))
        catalog = cls(paths, tools, defaults or SessionConfig(), user_llm)
        catalog.resolve(catalog.defaults)  # a bad default fails at start, not at the first reset
        return catalog

    def task_set(self, name: str) -> TaskSet:
        if name not in self.task_paths:
            raise ServiceError(
                "argument_error",
                f"no task set {name!r}; this server offers {sorted(self.task_paths)}",
                422,
            )
        if name not in self._loaded:
            self._loaded[name] = TaskSet.load(self.task_paths[name])
        return self._loaded[name]

    def cached(self, raw: Any) -> ResolvedConfig | None:
        """The config a client sent (`raw`, a reset's `config` as JSON) already resolved, if it
        was before (`resolve(..., raw=raw)`); None when it was not, or is no JSON."""
        key = _config_key(raw)
        return self._resolved.get(key) if key is not None else None

    def resolve(self, config: SessionConfig, raw: Any = None) -> ResolvedConfig:
        """`config` over the server's defaults, checked against the catalog; with `raw` (the
        JSON that `config` was validated from) the result is kept for `cached(raw)`."""
        resolved = self._resolve(config)
        key = _config_key(raw) if raw is not None else None
        if key is not None:
            with self._resolved_lock:
                if len(self._resolved) >= MAX_CACHED_CONFIGS:
                    self._resolved.pop(next(iter(self._resolved)))
                self._resolved[key] = resolved
        return resolved

    def _resolve(self, config: SessionConfig) -> ResolvedConfig:
        merged = {**self.defaults.model_dump(exclude_none=True), **config.model_dump(exclude_none=True)}
        chosen = SessionConfig.model_validate(merged)
        tasks = chosen.tasks or "demo"
        protocol = chosen.protocol or "react"
        reward = chosen.reward or "task"
        if reward not in REWARDS:
            raise ServiceError(
                "argument_error", f"no reward {reward!r}; choose one of {sorted(REWARDS)}", 422
            )
        try:
            get_protocol(protocol)
        except (KeyError, ValueError) as exc:
            raise ServiceError("argument_error", f"no protocol {protocol!r}: {exc}", 422) from None
        user = chosen.user or "rule"
        if user not in self.users:
            why = (
                " (this server has no user LLM: its operator starts it with --user-base-url and --user-model)"
                if user == "llm"
                else ""
            )
            raise ServiceError("argument_error", f"no user {user!r}{why}; choose one of {self.users}", 422)
        if chosen.tools is not None:
            unknown = sorted(set(chosen.tools) - set(self.tools.names))
            if unknown:
                raise ServiceError("argument_error", f"this server has no tools {unknown}", 422)
        task_set = self.task_set(tasks)
        if chosen.faults is not None:
            self._check_faults(chosen.faults, chosen.tools, task_set)
        return ResolvedConfig(
            tasks=tasks,
            tools=tuple(chosen.tools) if chosen.tools is not None else None,
            protocol=protocol,
            reward=reward,
            seed=chosen.seed,
            max_steps=chosen.max_steps or 10,
            faults=chosen.faults,
            user=user,
            info=chosen.info or "full",
            strict_arguments=bool(chosen.strict_arguments),
            reward_mode=chosen.reward_mode or "final",
            notifications=chosen.notifications or DEFAULT_VERBOSITY,
        )

    @property
    def users(self) -> list[str]:
        """The users a session may choose on this server."""
        return [u for u in USERS if u != "llm" or self.user_llm is not None]

    def _check_faults(self, plan: FaultPlan, tools: Sequence[str] | None, task_set: TaskSet) -> None:
        slow = [r.delay_s for r in plan.rules if r.delay_s > MAX_SESSION_DELAY_S]
        if slow:
            raise ServiceError(
                "argument_error", f"fault delays above {MAX_SESSION_DELAY_S} s are refused: {slow}", 422
            )
        offered = self.tools.subset(tools) if tools is not None else self.tools
        try:
            plan.check_tools(offered_tool_names(offered, list(task_set)))
        except FaultPlanError as exc:
            raise ServiceError("argument_error", exc.message, 422) from None

    def describe(self) -> dict[str, Any]:
        """What a client may choose (GET /catalog)."""
        return {
            "task_sets": sorted(self.task_paths),
            "tools": self.tools.names,
            "rewards": sorted(REWARDS),
            "users": self.users,
            "defaults": self.defaults.model_dump(exclude_none=True),
        }


def _config_key(raw: Any) -> str | None:
    """A client's config as canonical JSON (sorted keys; `true` and `1` stay apart), or None."""
    try:
        return canonical_json(raw)
    except (TypeError, ValueError, RecursionError):
        return None


@dataclass(frozen=True)
class ResolvedConfig:
    tasks: str
    tools: tuple[str, ...] | None
    protocol: str
    reward: str
    seed: int | None
    max_steps: int
    faults: FaultPlan | None = None
    user: str = "rule"
    info: str = "full"
    strict_arguments: bool = False  # no argument coercion (toolgym.mocks.app.strict_arguments)
    reward_mode: str = "final"  # "milestones": dense rewards (ToolEnv(reward_mode=...))
    notifications: Verbosity = DEFAULT_VERBOSITY  # which events notify the agent (ToolEnv(verbosity=...))

    def simulator(self, catalog: Catalog) -> UserSimulator | None:
        """A fresh simulator for one session's env (None: the env's default, rule-based)."""
        if self.user == "scripted":
            return ScriptedUser()
        if self.user == "llm":
            assert catalog.user_llm is not None, "resolve refuses llm on a server without one"
            return LLMUser(catalog.user_llm)
        return None

    def tool_names(self, catalog: Catalog) -> list[str]:
        """What the session's episodes may offer (what a fault plan may target)."""
        offered = catalog.tools.subset(self.tools) if self.tools is not None else catalog.tools
        return offered_tool_names(offered, list(catalog.task_set(self.tasks)))

    @functools.cached_property
    def _as_dict(self) -> Mapping[str, Any]:
        return {
            "tasks": self.tasks,
            "tools": list(self.tools) if self.tools is not None else None,
            "protocol": self.protocol,
            "reward": self.reward,
            "seed": self.seed,
            "max_steps": self.max_steps,
            "faults": self.faults.model_dump(mode="json") if self.faults is not None else None,
            "user": self.user,
            "info": self.info,
            "strict_arguments": self.strict_arguments,
            # the default is left out: configs (and what clients see of them) read as before
            **({"reward_mode": self.reward_mode} if self.reward_mode != "final" else {}),
            **({"notifications": self.notifications} if self.notifications != DEFAULT_VERBOSITY else {}),
        }

    def as_dict(self) -> dict[str, Any]:
        """The config as JSON (a fresh top-level dict; built once per resolved config)."""
        return dict(self._as_dict)
