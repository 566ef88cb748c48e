"""Agents that drive a ToolEnv: a scripted oracle that follows the golden chain, script players,
and the one grammar that names an agent on the command line and in the Python runner:

    oracle                    the golden chain of each task
    scripted:FILE             per-task actions from a JSONL file ({"task_id": ..., "actions": [...]})
    package.module:factory    your own: a callable taking the env's ActionProtocol, returning an Agent

(`llm` and `hf:PATH[#FILE.gguf]` are the other names `toolgym run` knows: a chat server's client
and a model in this process, both above this floor, in `toolgym.evaluation`.)
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from toolgym.actions import ACTION_ADAPTER, Action, AskUser, FinalAnswer, NoCall, ToolCall
from toolgym.envs.perturb import offered_action
from toolgym.protocols.base import ActionProtocol, RawOutput
from toolgym.tasks import Task


class Agent(Protocol):
    name: str  # in the trace header; an agent without one is named by its class (`agent_name`)

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        """A new episode begins; `info["instructions"]` is the system prompt for this task."""

    def act(self, observation: str, info: dict[str, Any]) -> RawOutput | Action:
        """The agent's next output: raw model text / message, or an Action. `observation` and `info`
        are what the latest reset or step returned."""


class AsyncAgent(Protocol):
    """An agent that awaits its model (`toolgym.envs.runner.arun_episode`), as `Agent` but async."""

    name: str

    async def astart(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        """A new episode begins (as `Agent.start`)."""

    async def aact(self, observation: str, info: dict[str, Any]) -> RawOutput | Action:
        """The agent's next output (as `Agent.act`)."""


class ScriptedAgent:
    """Plays a fixed list of actions, rendered as raw model output through the env's protocol,
    so the same parsing path runs as with a real model."""

    name = "scripted"

    def __init__(self, protocol: ActionProtocol, actions: Sequence[Action] = ()) -> None:
        self.protocol = protocol
        self._actions = list(actions)
        self._next = 0

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        self._next = 0

    def act(self, observation: str, info: dict[str, Any]) -> RawOutput | Action:
        if self._next >= len(self._actions):
            raise IndexError("scripted agent ran out of actions")
        action = self._actions[self._next]
        self._next += 1
        return self.protocol.format_action(action)


def golden_thought(action: Action) -> str:
    """The thought a golden reply carries when its step wrote none: a line derived from the action
    alone (the tool's name and argument names, not its description, so a golden trace does not
    change when a tool's docs are reworded)."""
    if isinstance(action, ToolCall):
        names = list(action.arguments)
        if not names:
            return f"I need to call {action.name}."
        listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
        return f"I need to call {action.name} with {listed}."
    if isinstance(action, FinalAnswer):
        return "I now know the final answer."
    if isinstance(action, AskUser):
        return "I am missing information I need, so I ask the user."
    return action.thought  # a no call: its thought is what it says (to a simulated user, its message)


def golden_action(action: Action, protocol: ActionProtocol) -> Action:
    """A golden step's action as the protocol's prompt asks a reply to be: with a thought where
    the prompt asks for one (`ActionProtocol.asks_for_thought`: ReAct, JSON) and the step has none
    (`golden_thought`); otherwise as written."""
    if not protocol.asks_for_thought or action.thought is not None or isinstance(action, NoCall):
        return action
    return action.model_copy(update={"thought": golden_thought(action)})


class OracleAgent(ScriptedAgent):
    """Follows each task's golden chain, each reply in the form the protocol's prompt asks for
    (`golden_action`)."""

    name = "oracle"

    def __init__(self, protocol: ActionProtocol) -> None:
        super().__init__(protocol)

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        # under a perturbation plan the golden calls are written with the names offered
        self._actions = [
            golden_action(offered_action(step.action, info), self.protocol) for step in task.golden
        ]
        self._next = 0


class TaskScriptAgent(ScriptedAgent):
    """A scripted agent with one action list per task id (JSONL: {"task_id": ..., "actions": [...]})."""

    name = "scripted"

    def __init__(self, protocol: ActionProtocol, scripts: dict[str, list[Action]]) -> None:
        super().__init__(protocol)
        self.scripts = scripts

    @classmethod
    def load(cls, protocol: ActionProtocol, path: Path) -> TaskScriptAgent:
        return cls(protocol, read_scripts(path))

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        if task.id not in self.scripts:
            raise KeyError(f"no script for task {task.id!r}")
        self._actions = list(self.scripts[task.id])
        self._next = 0


def read_scripts(path: Path) -> dict[str, list[Action]]:
    """Action lists by task id from a script file; a bad line is `path:line: reason`."""
    scripts: dict[str, list[Action]] = {}
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                scripts[str(row["task_id"])] = [ACTION_ADAPTER.validate_python(a) for a in row["actions"]]
            except (ValueError, KeyError, TypeError) as exc:
                reason = " ".join(str(exc).split())
                raise ValueError(f"{path}:{lineno}: not a script line: {reason}") from None
    return scripts


ProtocolAgentFactory = Callable[[ActionProtocol], Agent]  # the env's protocol -> a fresh agent


def agent_name(agent: object) -> str:
    """The name a trace gives the agent: its `name`, or its class's name when it has none."""
    name = getattr(agent, "name", None)
    return name if isinstance(name, str) and name else type(agent).__name__


def _check_takes_protocol(spec: str, factory: Callable[..., Any]) -> None:
    """A factory is called with the env's protocol: one that cannot take it is a mistake said now,
    before any episode (a signature that cannot be read is left to the call)."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(object())
    except TypeError:
        attr = spec.partition(":")[2]
        raise ValueError(
            f"agent {spec!r}: {attr}{signature} cannot take the env's protocol; toolgym calls "
            f"{attr}(protocol) for each episode's agent (define it as `def {attr}(protocol): ...`)"
        ) from None


def agent_factory(spec: str) -> ProtocolAgentFactory:
    """The agent that `spec` names (`oracle`, `scripted:FILE`, `package.module:factory`), as a
    callable taking the env's ActionProtocol. Only importable names are resolved, nothing is
    evaluated; a script file is read (and checked) here, once. ValueError says what is wrong."""
    if spec == "oracle":
        return OracleAgent
    if spec.startswith("scripted:"):
        path = Path(spec.removeprefix("scripted:"))
        if not path.is_file():
            raise ValueError(f"agent {spec!r}: no such script file: {path}")
        scripts = read_scripts(path)
        return lambda protocol: TaskScriptAgent(protocol, scripts)
    from toolgym.envs.rollouts import load_object  # the one resolver of `module:attr` names

    found = load_object(spec, "agent")
    if not callable(found):
        raise ValueError(f"agent {spec!r}: {spec.partition(':')[2]} is not callable")
    _check_takes_protocol(spec, found)
    return found  # type: ignore[no-any-return]


class NamedAgents:
    """A rollout worker's agent builder for a name in the agent grammar (`AgentSpec.named`): one
    fresh agent per episode, built for the episode's env."""

    def __init__(self, spec: str) -> None:
        self.make = agent_factory(spec)

    def __call__(self, env: Any, trial: int) -> Agent:
        return self.make(env.protocol)
