"""Episodes on hosted servers: `Lab` (servers plus a ToolEnv on them), `LabEnv` (mock-app tasks
in sessions of a mock service, state scored on the server), `InfraRetry` (an agent wrapper that
re-sends the output an infra failure swallowed) and `infra_aware` (a reward that reports lost steps).

    from toolgym.envs.lab import Lab, InfraRetry

    with Lab.start("docker", tools=["Calculator", "OCR"]) as lab:   # or "process"; or Lab.attach(...)
        env = lab.env(tasks)                # ToolEnv: remote tools, mock apps in server sessions
        result = run_episode(env, InfraRetry(OracleAgent(env.protocol)), task)

A server that dies or hangs during an episode is restarted by its supervisor and the step that met
it tries its call once more (ToolEnv), so the episode goes on as if nothing happened; a server that
stays down ends the episode aborted (`info["aborted"]`; `run_episode` raises EpisodeAborted).
`InfraRetry` still re-sends what an injected infra fault (a fault plan) swallowed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from toolgym.actions import Action
from toolgym.envs.agents import Agent, agent_name
from toolgym.envs.rewards import Episode, RewardFn, task_scores, with_count
from toolgym.envs.tool_env import ToolEnv
from toolgym.errors import ErrorKind, InfraError
from toolgym.protocols.base import RawOutput
from toolgym.tasks import Task, TaskSet
from toolgym.tools import ToolSet
from toolgym.toolservers.hosting.lab import Endpoint, HostKind, LabServers, make_host

if TYPE_CHECKING:
    from toolgym.mocks.service.client import MockServiceClient

__all__ = [
    "Endpoint",
    "HostKind",
    "InfraRetry",
    "Lab",
    "LabEnv",
    "LabServers",
    "infra_aware",
    "infra_error_count",
    "make_host",
]


def infra_error_count(episode: Episode) -> int:
    return sum(1 for s in episode.steps for o in s.observations if o.error_kind is ErrorKind.INFRA_ERROR)


def infra_aware(reward_fn: RewardFn) -> RewardFn:
    """`reward_fn` plus `infra_errors` (the steps lost to the infrastructure) among the scores when
    there were any: the reward itself never counts them, evaluations can tell such episodes apart."""

    return with_count(reward_fn, "infra_errors", infra_error_count)


def LabEnv(
    tools: ToolSet | None = None,
    tasks: TaskSet | Sequence[Task] | None = None,
    *,
    mock_client: MockServiceClient | None = None,
    on_infra_error: Callable[[InfraError], None] | None = None,
    reward_fn: RewardFn | None = None,
    **kwargs: Any,
) -> ToolEnv:
    """A ToolEnv whose mock-app tasks run in sessions of a mock service (one RemoteMockWorld per
    app set, reset per episode); its default reward scores their state on the server (a remote
    world scores itself) and reports steps lost to the infrastructure; with
    no `mock_client`, worlds are in-process as in any ToolEnv."""
    if mock_client is not None:
        from toolgym.mocks.service.client import session_worlds

        kwargs.setdefault("world_factory", session_worlds(mock_client, on_infra_error))
    return ToolEnv(tools, tasks, reward_fn=infra_aware(reward_fn or task_scores), **kwargs)


class InfraRetry:
    """Wraps an agent: after a step that met an infra failure, the same output is sent again
    (up to `max_retries` times in a row) without asking the agent, so the agent's episode is the
    one it would have had without the failure. The failed step stays in the trace."""

    def __init__(self, agent: Agent, *, max_retries: int = 2) -> None:
        self.agent = agent
        self.name = agent_name(agent)
        self.max_retries = max_retries
        self._last: RawOutput | Action | None = None
        self._retries = 0

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        self._last, self._retries = None, 0
        self.agent.start(task, observation, info)

    def act(self, observation: str, info: dict[str, Any]) -> RawOutput | Action:
        infra = ErrorKind.INFRA_ERROR.value in (info.get("error_kinds") or [])
        if infra and self._last is not None and self._retries < self.max_retries:
            self._retries += 1
            return self._last
        self._retries = 0
        self._last = self.agent.act(observation, info)
        return self._last


class Lab(LabServers):
    """The servers of a run (see `LabServers`) and ToolEnvs on them."""

    def env(
        self,
        tasks: TaskSet | Sequence[Task] | None = None,
        *,
        tools: ToolSet | None = None,
        **kwargs: Any,
    ) -> ToolEnv:
        """A ToolEnv on this lab: `tools` default to the tool server's (if any), mock-app tasks
        get sessions of the mock service."""
        if tools is None and self.tools is not None:
            tools = self.toolset()
        return LabEnv(
            tools,
            tasks,
            mock_client=self.mock_client if self.mocks is not None else None,
            on_infra_error=self.recovery_hook("mocks"),
            **kwargs,
        )
