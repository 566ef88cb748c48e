"""Agent builders for rollout tests (named in `AgentSpec`s, so workers import them): oracles that
kill their worker process, abort or fail on chosen tasks. Each plays as `oracle`, so the traces of
the episodes it does finish are the oracle's."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from toolgym.actions import Action
from toolgym.envs.agents import OracleAgent
from toolgym.envs.rollouts import AgentFactory
from toolgym.envs.tool_env import ToolEnv
from toolgym.protocols.base import ActionProtocol, RawOutput
from toolgym.tasks import Task

# how long tests/envs/slow_start.py takes to import: an actor placed but slow to start (a test's
# bound on placement is a third of it, time for a loaded machine to give the actor its process)
SLOW_START_S = 24.0


class Abort(Exception):
    """An abort of the kind `abort_on` names (as an LLMError is): the episode stops, the run goes on."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Bug(Exception):
    """Any other exception from an episode: it stops the run."""


class HostileOracle(OracleAgent):
    """The oracle, until it reaches step `at` of a target task; then it does `what`:
    `exit` ends the worker process (`kill`: by SIGKILL; the first time only, when `marker_dir` is
    given: a file there remembers it), `abort` raises Abort, `bug` raises Bug."""

    def __init__(
        self, protocol: ActionProtocol, targets: Sequence[str], what: str, at: int, marker_dir: str | None
    ) -> None:
        super().__init__(protocol)
        self.targets, self.what, self.at, self.marker_dir = set(targets), what, at, marker_dir
        self.task: Task | None = None

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        super().start(task, observation, info)
        self.task = task

    def act(self, observation: str, info: dict[str, Any]) -> RawOutput | Action:
        assert self.task is not None
        if self.task.id in self.targets and self._next == self.at:
            if self.what == "abort":
                raise Abort(f"stopped {self.task.id} at step {self.at}")
            if self.what == "bug":
                raise Bug(f"bug in {self.task.id}")
            if self.marker_dir is None:
                self._die()
            marker = Path(self.marker_dir) / self.task.id
            if not marker.exists():
                marker.touch()
                self._die()  # mid-episode: the env has stepped, the trace is half written
        return super().act(observation, info)

    def _die(self) -> NoReturn:
        if self.what == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(3)


def hostile(
    targets: Sequence[str], what: str = "exit", at: int = 1, marker_dir: str | None = None
) -> AgentFactory:
    def make(env: ToolEnv, trial: int) -> HostileOracle:
        return HostileOracle(env.protocol, targets, what, at, marker_dir)

    return make


def pid_oracle(pid_file: str) -> AgentFactory:
    """The oracle; each worker that builds one appends its process id to `pid_file`."""
    with open(pid_file, "a", encoding="utf-8") as fh:
        fh.write(f"{os.getpid()}\n")
    return lambda env, trial: OracleAgent(env.protocol)


def kill_self(targets: Sequence[str], marker_dir: str | None = None) -> AgentFactory:
    """`hostile`, with the worker process killed by SIGKILL (as the OOM killer does) mid-episode."""
    return hostile(targets, "kill", 1, marker_dir)


STALL_DIR_ENV = "TOOLGYM_TEST_STALL_DIR"
WAIT_DIR_ENV = "TOOLGYM_TEST_WAIT_DIR"
HOLD_DIR_ENV = "TOOLGYM_TEST_HOLD_DIR"
WAIT_BOUND_S = 120.0
RELEASE = "release"  # the file that lets held episodes go on


def stall_where_told(protocol: ActionProtocol) -> OracleAgent:
    """An agent for `toolgym run --agent` (the env's protocol -> an agent): the oracle, except in a
    worker whose environment sets `TOOLGYM_TEST_STALL_DIR` (a Ray node started with it). There
    each episode writes a file named after its task into that folder when it starts (the node id
    and process id it runs on, as JSON) and then waits for good, so a test can lose the node while
    it holds episodes. A worker whose environment sets `TOOLGYM_TEST_WAIT_DIR` instead holds its
    episodes until that folder has a stalled episode (at most two minutes), so the stalling node
    gets an episode however slowly its actor starts. One whose environment sets
    `TOOLGYM_TEST_HOLD_DIR` holds each episode, once it has written a file there like a stalling
    one, until that folder has a `release` file (at most two minutes): the run is up meanwhile."""
    stall_dir = os.environ.get(STALL_DIR_ENV)
    if stall_dir is not None:
        return StallingOracle(protocol, Path(stall_dir))
    hold_dir = os.environ.get(HOLD_DIR_ENV)
    if hold_dir is not None:
        return StallingOracle(protocol, Path(hold_dir), until=Path(hold_dir) / RELEASE)
    wait_dir = os.environ.get(WAIT_DIR_ENV)
    return OracleAgent(protocol) if wait_dir is None else WaitingOracle(protocol, Path(wait_dir))


def stalled_episodes(stall_dir: Path) -> list[Path]:
    """The episodes a stalling worker holds (its files written whole)."""
    return [p for p in stall_dir.iterdir() if p.suffix != ".tmp"]


class WaitingOracle(OracleAgent):
    def __init__(self, protocol: ActionProtocol, wait_dir: Path) -> None:
        super().__init__(protocol)
        self.wait_dir = wait_dir

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        super().start(task, observation, info)
        deadline = time.monotonic() + WAIT_BOUND_S
        while not stalled_episodes(self.wait_dir) and time.monotonic() < deadline:
            time.sleep(0.2)


class StallingOracle(OracleAgent):
    """Stalls each episode for good, or until the file `until` exists (WAIT_BOUND_S at most)."""

    def __init__(self, protocol: ActionProtocol, stall_dir: Path, until: Path | None = None) -> None:
        super().__init__(protocol)
        self.stall_dir = stall_dir
        self.until = until

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        import ray

        super().start(task, observation, info)
        where = {"node": ray.get_runtime_context().get_node_id(), "pid": os.getpid()}
        (self.stall_dir / f"{task.id}.tmp").write_text(json.dumps(where))
        (self.stall_dir / f"{task.id}.tmp").rename(self.stall_dir / task.id)  # whole when seen
        deadline = time.monotonic() + WAIT_BOUND_S
        while self.until is None or (not self.until.exists() and time.monotonic() < deadline):
            time.sleep(0.2 if self.until else 1)  # for good: until the node, and this process, is gone
