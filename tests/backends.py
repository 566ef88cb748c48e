"""Real backends that die mid-episode: `toolgym lab mock-server` and `toolgym serve` in processes of
their own, and an agent builder (named in `AgentSpec`s, so rollout workers import it) that plays
the oracle and SIGKILLs a server when it reaches a chosen step, once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from toolgym.actions import Action, FinalAnswer, ToolCall
from toolgym.envs.agents import OracleAgent
from toolgym.envs.rollouts import AgentFactory
from toolgym.envs.tool_env import ToolEnv
from toolgym.protocols.base import ActionProtocol, RawOutput
from toolgym.tasks import AnswerSpec, GoldenStep, Task, TaskSet
from toolgym.toolservers.hosting.base import wait_healthy
from toolgym.toolservers.hosting.process import free_port

BALANCE = {"account_id": "ACC-10001"}
TRANSFER = {"from_account_id": "ACC-10001", "to_account_id": "ACC-10002", "amount": 25.0}


def banking_task(task_id: str) -> Task:
    """Read, write, answer: a mock-app task whose reward scores the world's state."""
    return Task(
        id=task_id,
        query="Check ACC-10001, then move $25 to ACC-10002.",
        apps=["banking"],
        answer=AnswerSpec(whitelist=[["done"]]),
        golden=[
            GoldenStep(action=ToolCall(name="get_balance", arguments=BALANCE)),
            GoldenStep(action=ToolCall(name="transfer", arguments=TRANSFER)),
            GoldenStep(action=FinalAnswer(text="done")),
        ],
        max_steps=6,
    )


def calculator_task(task_id: str) -> Task:
    add = ToolCall(name="Calculator", arguments={"expression": "2+2"})
    return Task(
        id=task_id,
        query="2+2, twice?",
        tools=["Calculator"],
        answer=AnswerSpec(whitelist=[["4"]]),
        golden=[GoldenStep(action=add), GoldenStep(action=add), GoldenStep(action=FinalAnswer(text="4"))],
        max_steps=6,
    )


def banking_sets() -> list[tuple[str, TaskSet]]:
    return [("banking", TaskSet([banking_task("first"), banking_task("second")]))]


class Server:
    """A toolgym server command in its own process on a fixed port (so a restart is found where
    the first one was)."""

    def __init__(self, argv: Sequence[str], health: str, port: int | None = None) -> None:
        self.argv, self.health = list(argv), health
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Server:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "toolgym.cli",
                *self.argv,
                "--port",
                str(self.port),
                "--log-level",
                "warning",
            ],
            env={**os.environ, "TOOLGYM_TOKEN": ""},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        proc = self.proc
        wait_healthy(
            self.url,
            path=self.health,
            timeout_s=120,
            alive=lambda: proc.poll() is None,
            logs=lambda: "",
            what=" ".join(self.argv),
        )
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        if self.proc is not None:
            self.proc.wait(30)


@contextmanager
def running(argv: Sequence[str], health: str, port: int | None = None) -> Iterator[Server]:
    server = Server(argv, health, port).start()
    try:
        yield server
    finally:
        server.kill()


def mock_service(port: int | None = None) -> Any:
    """`toolgym lab mock-server` (a context manager giving its `Server`)."""
    return running(["lab", "mock-server"], "/health", port)


def tool_server() -> Any:
    """`toolgym serve` with the Calculator only (a context manager giving its `Server`)."""
    return running(["serve", "--tools", "Calculator", "--no-mcp"], "/v1/health")


class KillingOracle(OracleAgent):
    """The oracle, which SIGKILLs process `pid` when it reaches step `at` of task `target`: the
    first time only (a file at `marker` remembers it), so a rerun plays the plain oracle."""

    def __init__(self, protocol: ActionProtocol, pid: int, target: str, at: int, marker: str) -> None:
        super().__init__(protocol)
        self.pid, self.target, self.at, self.marker = pid, target, at, Path(marker)
        self.task: Task | None = None

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        super().start(task, observation, info)
        self.task = task

    def act(self, observation: str, info: dict[str, Any]) -> RawOutput | Action:
        assert self.task is not None
        if self.task.id == self.target and self._next == self.at and not self.marker.exists():
            self.marker.touch()
            os.kill(self.pid, signal.SIGKILL)
        return super().act(observation, info)


def Killers(pid: int, target: str, at: int, marker: str) -> AgentFactory:
    def make(env: ToolEnv, trial: int) -> KillingOracle:
        return KillingOracle(env.protocol, pid, target, at, marker)

    return make
