"""The episode runner: the async driver (`arun_episode` writes the bytes `run_episode` writes) and
file keeping (content-addressed, whole or not at all, refused when the bytes are not those of the
hash; the rollout driver keeps files workers send through it too)."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

import pytest

from toolgym.actions import Action
from toolgym.envs.agents import OracleAgent
from toolgym.envs.demo import mock_task_paths
from toolgym.envs.runner import FileHashMismatch, arun_episode, keep_file, run_episode
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


def test_a_file_is_kept_once_under_its_sha256(tmp_path: Path) -> None:
    data = b"\x89PNG a drawn box"
    sha = hashlib.sha256(data).hexdigest()
    folder = tmp_path / "files"
    keep_file(folder, sha, data)
    kept = folder / sha
    assert kept.read_bytes() == data
    inode = kept.stat().st_ino
    keep_file(folder, sha, data)  # a second episode (or a resumed run) with the same image
    assert kept.stat().st_ino == inode and sorted(p.name for p in folder.iterdir()) == [sha]


@pytest.mark.parametrize("name", ["0" * 64, "../escape", ""])
def test_bytes_that_are_not_the_named_hash_are_refused_and_nothing_is_written(
    tmp_path: Path, name: str
) -> None:
    folder = tmp_path / "files"
    with pytest.raises(FileHashMismatch, match="do not hash to"):
        keep_file(folder, name, b"something else")
    assert not tmp_path.joinpath("escape").exists() and not folder.exists()
