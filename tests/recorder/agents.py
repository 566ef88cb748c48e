"""Agents the recorder tests load by name (`--agent tests.recorder.agents:<factory>`)."""

from __future__ import annotations

from typing import Any

from toolgym.actions import Action
from toolgym.envs.agents import OracleAgent
from toolgym.protocols.base import ActionProtocol, RawOutput
from toolgym.tasks import Task


class StumblingOracle(OracleAgent):
    """The oracle, after one unparseable first answer per episode (a format_error step)."""

    name = "stumbling-oracle"

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        super().start(task, observation, info)
        self.stumbled = False

    def act(self, observation: str, info: dict[str, Any]) -> RawOutput | Action:
        if not self.stumbled:
            self.stumbled = True
            return "let me think about which tool to use"
        return super().act(observation, info)


def stumbling_oracle(protocol: ActionProtocol) -> StumblingOracle:
    return StumblingOracle(protocol)
