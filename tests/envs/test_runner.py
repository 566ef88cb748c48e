"""The episode runner's async driver: `arun_episode` writes the bytes `run_episode` writes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from toolgym.actions import Action
from toolgym.envs.agents import OracleAgent
from toolgym.envs.demo import mock_task_paths
from toolgym.envs.runner import arun_episode, run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.protocols.base import ActionProtocol, RawOutput
from toolgym.tasks import Task, TaskSet
from toolgym.tools import ToolSet

MTU = TaskSet.load(next(p for p in mock_task_paths() if p.stem == "mtu"))


class AsyncOracle:
    """The oracle as an AsyncAgent, yielding to the loop before each output as a model call would."""

    name = "oracle"

    def __init__(self, protocol: ActionProtocol) -> None:
        self.oracle = OracleAgent(protocol)

    async def astart(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        self.oracle.start(task, observation, info)

    async def aact(self, observation: str, info: dict[str, Any]) -> RawOutput | Action:
        await asyncio.sleep(0)
        return self.oracle.act(observation, info)


def test_async_episodes_write_the_same_bytes_as_sync_ones(tmp_path: Path) -> None:
    tasks = list(MTU)[:6]

    def sync_run() -> None:
        env = ToolEnv(ToolSet(), MTU, protocol="openai")
        for task in tasks:
            run_episode(env, OracleAgent(env.protocol), task, seed=3, trace_dir=tmp_path / "sync")
        env.close()

    async def async_run() -> list[float]:
        # one env per episode, all on one loop at once
        envs = [ToolEnv(ToolSet(), MTU, protocol="openai") for _ in tasks]
        results = await asyncio.gather(
            *(
                arun_episode(env, AsyncOracle(env.protocol), task, seed=3, trace_dir=tmp_path / "async")
                for env, task in zip(envs, tasks, strict=True)
            )
        )
        for env in envs:
            env.close()
        return [r.reward for r in results]

    sync_run()
    rewards = asyncio.run(async_run())
    assert rewards == [1.0] * len(tasks)
    names = sorted(p.name for p in (tmp_path / "sync").iterdir())
    assert len(names) == len(tasks)
    assert names == sorted(p.name for p in (tmp_path / "async").iterdir())
    for name in names:
        assert (tmp_path / "async" / name).read_bytes() == (tmp_path / "sync" / name).read_bytes()
