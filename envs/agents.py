"""Agents that drive a ToolEnv: a scripted oracle that follows the golden chain, and a script player."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from toolgym.actions import Action
from toolgym.protocols.base import ActionProtocol, RawOutput
from toolgym.tasks import Task


class Agent(Protocol):
    name: str

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        """A new episode begins; `info["instructions"]` is the system prompt for this task."""

    def act(self, observation: str, info: dict[str, Any]) -> RawOutput | Action:
        """The agent's next output: raw model text / message, or an Action. `observation` and `info`
        are what the latest reset or step returned."""


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


class OracleAgent(ScriptedAgent):
    """Follows each task's golden chain."""

    name = "oracle"

    def __init__(self, protocol: ActionProtocol) -> None:
        super().__init__(protocol)

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        self._actions = [step.action for step in task.golden]
        self._next = 0
