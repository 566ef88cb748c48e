"""Run an agent over tasks in a ToolEnv and write one trace per episode.

An episode whose backend failed (the env's `info["aborted"]`, or a reset that met an InfraError:
a world, tool server, sandbox or simulator that is dead or unreachable) raises `EpisodeAborted`
after its last step is written; its trace stays partial, and every executor records the episode
as aborted, as it does for a model server that failed (`toolgym.envs.rollouts`)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast

from toolgym.canonical import canonical_hash
from toolgym.envs.agents import Agent, AsyncAgent, agent_name
from toolgym.envs.faults import FaultLayer
from toolgym.envs.perturb import PERTURBATION_KEY, PerturbLayer
from toolgym.envs.tool_env import REWARD_MODES, RewardMode, ToolEnv, kept_raw
from toolgym.errors import ArgumentError, InfraError
from toolgym.files import FileHandle, write_atomically
from toolgym.mocks.app import arguments_strict
from toolgym.mocks.app import (
    strict_arguments as strict_arguments,  # for the floors above that may not see mocks
)
from toolgym.mocks.events import DEFAULT_VERBOSITY as DEFAULT_VERBOSITY  # re-exported for the recorder
from toolgym.mocks.events import VERBOSITIES
from toolgym.mocks.events import Verbosity as Verbosity  # for the floors above that may not see mocks
from toolgym.tasks import Task
from toolgym.trace import (
    ModelRequest,
    ToolInfo,
    TraceEnd,
    TraceHeader,
    TraceWriter,
    TurnTokens,
)


class EpisodeAborted(InfraError):
    """The episode's infrastructure failed (not the agent): it ended unscored. The message says
    what failed."""


def _reset(env: ToolEnv, task: Task, seed: int | None) -> tuple[Any, dict[str, Any]]:
    """`env.reset` for the task; a backend that fails it (a world that cannot be made) aborts."""
    try:
        return env.reset(seed=seed, options={"task": task})
    except InfraError as exc:
        raise EpisodeAborted(f"reset failed: {exc.message}") from exc


@dataclass
class EpisodeResult:
    task_id: str
    reward: float
    steps: int
    terminated: bool
    final_answer: str | None
    error_counts: dict[str, int] = field(default_factory=dict)
    latency_s: float = 0.0
    scores: dict[str, float] = field(default_factory=dict)
    trace_path: Path | None = None


# env_config key of a trace header: which events notified the agent (ToolEnv(verbosity=...)), written
# only when not the default, so the headers of episodes at the default read as before
NOTIFICATIONS_KEY: Final = "notifications"


def parse_verbosity(value: object, what: str = "notifications") -> Verbosity:
    """`value` as a verbosity (none, low, medium, high); ArgumentError naming `what` otherwise."""
    for verbosity in VERBOSITIES:
        if value == verbosity:
            return verbosity
    raise ArgumentError(f"{what} must be one of {list(VERBOSITIES)}, not {value!r}")


def header_verbosity(env_config: Mapping[str, Any]) -> Verbosity:
    """The verbosity a trace was recorded at (its header's `env_config`), to re-run it at;
    ArgumentError for a value no env takes."""
    value = env_config.get(NOTIFICATIONS_KEY, DEFAULT_VERBOSITY)
    return parse_verbosity(value, f"the trace header's env_config {NOTIFICATIONS_KEY!r}")


# env_config key of a trace header: how its step rewards were given (ToolEnv(reward_mode=...)), written
# only when not "final", so such headers read as before
REWARD_MODE_KEY: Final = "reward_mode"


def header_reward_mode(env_config: Mapping[str, Any]) -> RewardMode:
    """The reward mode a trace was recorded in (its header's `env_config`), to re-run it in (its
    step rewards and milestone scores depend on it); ArgumentError for a value no env takes."""
    value = env_config.get(REWARD_MODE_KEY, "final")
    for mode in REWARD_MODES:
        if value == mode:
            return cast(RewardMode, mode)
    raise ArgumentError(
        f"the trace header's env_config {REWARD_MODE_KEY!r} must be one of {list(REWARD_MODES)}, not {value!r}"
    )


# env_config key of a trace header: true when app tools took arguments of their declared types only
# (`toolgym.mocks.app.strict_arguments`), written only then, so other headers read as before
STRICT_ARGUMENTS_KEY: Final = "strict_arguments"


def header_strict_arguments(env_config: Mapping[str, Any]) -> bool:
    """Whether a trace was recorded under strict arguments (its header's `env_config`), to re-run
    it so (a coerced argument would succeed where it had failed); ArgumentError for a non-boolean."""
    value = env_config.get(STRICT_ARGUMENTS_KEY, False)
    if not isinstance(value, bool):
        raise ArgumentError(
            f"the trace header's env_config {STRICT_ARGUMENTS_KEY!r} must be true or false, not {value!r}"
        )
    return value


def trace_name(task_id: str, seed: int | None, *, kind: str = "") -> str:
    """The file name of an episode's trace: `<task id>[.<kind>].seed<seed>.jsonl`."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", task_id)
    stem = f"{safe}.{kind}" if kind else safe
    return f"{stem}.seed{seed}.jsonl" if seed is not None else f"{stem}.jsonl"


def trace_header(
    env: ToolEnv,
    agent: Agent | AsyncAgent,
    task: Task,
    seed: int | None,
    env_config: dict[str, Any],
    *,
    golden: bool = False,
) -> TraceHeader:
    """The header of an episode's trace, taken after `env.reset` (the offered tools are known).
    An episode under fault plans names them in `env_config["faults"]`; one under a perturbation
    plan holds the plan and the offered names' mapping in `env_config["perturbation"]`; one at a
    verbosity other than the default names it in `env_config["notifications"]`, and one under
    `strict_arguments()` (called within it) says `env_config["strict_arguments"] = true`."""
    plans = [layer.plan.model_dump(mode="json") for layer in env.tool_layers if isinstance(layer, FaultLayer)]
    if plans:
        env_config = {**env_config, "faults": plans}
    perturbations = [layer.record() for layer in env.tool_layers if isinstance(layer, PerturbLayer)]
    if perturbations:  # the layer is outermost: the last one is what the agent saw
        env_config = {**env_config, PERTURBATION_KEY: perturbations[-1]}
    if env.reward_mode != "final":  # the default is not written: such headers read as before
        env_config = {**env_config, REWARD_MODE_KEY: env.reward_mode}
    if env.verbosity != DEFAULT_VERBOSITY:
        env_config = {**env_config, NOTIFICATIONS_KEY: env.verbosity}
    if arguments_strict():
        env_config = {**env_config, STRICT_ARGUMENTS_KEY: True}
    return TraceHeader(
        task_id=task.id,
        seed=seed,
        clock=task.clock.isoformat(),
        protocol=env.protocol.name,
        agent=agent_name(agent),
        tools=[ToolInfo(name=t.name, version=t.version, backend=t.backend) for t in env.offered],
        env_config=env_config,
        golden=golden,
        task_hash=canonical_hash(task.model_dump(mode="json")),
    )


def step_fields(
    raw: Any,
    info: dict[str, Any],
    hash_before: str | None,
    *,
    timing: bool = False,
    tokens: TurnTokens | None = None,
    request: ModelRequest | None = None,
    model_latency_ms: float | None = None,
) -> dict[str, Any]:
    """The trace line of one `env.step(raw)` from its info, as TraceStep's fields (what every
    episode driver writes: the runner, the env service, the MCP server; `TraceWriter.step` takes
    them as they are, with no model built); `tokens`: the turn's token ids, when known;
    `request` and `model_latency_ms`: what the agent sent its model and how long it took."""
    return {
        "index": info["step"],
        "raw": kept_raw(raw),  # Responses output items too, not only text and messages
        "actions": info["actions"],
        "observations": info["observations"],
        "error_kinds": info["error_kinds"],
        "state_hash_before": hash_before,
        "state_hash_after": info.get("state_hash"),
        "state_diff": info.get("state_diff"),
        "latency_ms": info["timing"].latency_s * 1000 if timing else None,
        "faults": info.get("faults"),
        "tokens": tokens,
        "request": request,
        "model_latency_ms": model_latency_ms,
        "clock": info.get("clock"),
        "events": info.get("events"),
    }


def model_turn(agent: Agent | AsyncAgent, *, golden: bool = False) -> dict[str, Any]:
    """What an agent that asked a model (LLMAgent) says of its last turn, as trace step fields:
    the token ids its server returned, what it sent and how long it waited. Such a run is not
    byte-reproducible anyway, so its steps keep their latencies, except in a golden trace, which a
    replay must give back byte for byte."""
    tokens = getattr(agent, "turn_tokens", None)
    request = getattr(agent, "turn_request", None)
    model_ms = getattr(agent, "turn_latency_ms", None)
    return {
        "tokens": tokens if isinstance(tokens, TurnTokens) else None,
        "request": request if isinstance(request, ModelRequest) else None,
        "model_latency_ms": float(model_ms) if isinstance(model_ms, (int, float)) and not golden else None,
    }


def trace_end(env: ToolEnv, info: dict[str, Any], *, terminated: bool, reward: float) -> TraceEnd:
    """The end line of a finished episode from its last step's info (`aborted` when the env ended
    it for a failed backend: the env service writes it so)."""
    return TraceEnd(
        status="aborted" if info.get("aborted") else "terminated" if terminated else "truncated",
        steps=info["step"],
        final_answer=info.get("final_answer"),
        reward=reward,
        error_counts=dict(env.error_counts),
        scores=info.get("scores", {}),
        milestones=info.get("milestones"),
        minefields=info.get("minefields"),
        budget=info.get("budget"),
    )


FILES_DIR = "files"  # beside a trace: the files its observations carry, named by sha256


class FileHashMismatch(ValueError):
    """Bytes offered to keep under a sha256 that is not theirs (nothing is written)."""


def keep_file(folder: Path, sha256: str, data: bytes) -> None:
    """Keeps one file an observation carried as `folder/<sha256>`, whole or not at all. Files are
    content-addressed, so one already there is these bytes (another episode's, or a run resumed
    into the folder) and is left alone. The one way files are kept: by the episode runner in
    process, and by the rollout driver for files that remote workers send back."""
    if hashlib.sha256(data).hexdigest() != sha256:  # also keeps the name a bare hex digest
        raise FileHashMismatch(f"{len(data)} bytes do not hash to {sha256[:80]!r}: not kept")
    target = folder / sha256
    if not target.exists():
        write_atomically(target, data, durable=True)


def keep_observation_files(env: ToolEnv, info: dict[str, Any], folder: Path) -> None:
    """Keeps the files of a step's observations, from the episode's file store (a temporary
    folder), in `folder` (`keep_file`)."""
    for observation in info["observations"]:
        for entry in observation.get("files") or []:
            handle = FileHandle.model_validate(entry)
            if not (folder / handle.sha256).exists():  # read nothing for a file already kept
                keep_file(folder, handle.sha256, env.files.get(handle).read_bytes())


class _Episode:
    """One episode after `env.reset` and `agent.start`: its loop state and its trace. What
    `run_episode` and `arun_episode` share, so the sync and async drivers write the same bytes."""

    def __init__(
        self,
        env: ToolEnv,
        agent: Agent | AsyncAgent,
        task: Task,
        observation: str,
        info: dict[str, Any],
        *,
        seed: int | None,
        trace_dir: Path | None,
        timing: bool,
        golden: bool,
        keep_files: bool,
    ) -> None:
        self.env, self.agent, self.task = env, agent, task
        self.timing, self.golden = timing, golden
        self.observation, self.reset_info = observation, info
        self.writer: TraceWriter | None = None
        if trace_dir is not None:
            config: dict[str, Any] = {"max_steps": task.max_steps or env.max_steps}
            if task.user is not None:
                config["user"] = env.user.name  # which simulator played the user (docs/users.md)
            header = trace_header(env, agent, task, seed, config, golden=golden)
            self.writer = TraceWriter(trace_dir / trace_name(task.id, seed), header)
        self.hash_before: str | None = info.get("state_hash")
        self.files_dir = trace_dir / FILES_DIR if keep_files and trace_dir is not None else None
        self.reward, self.terminated, self.truncated, self.steps, self.latency = 0.0, False, False, 0, 0.0
        self.step_info: dict[str, Any] = {}
        self.charged: tuple[int, int, float] = (0, 0, 0.0)  # the agent's usage charged so far

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    @property
    def info(self) -> dict[str, Any]:
        """The latest info: reset's, then each step's (what the agent is given)."""
        return self.step_info or self.reset_info

    def step(self, raw: Any) -> None:
        """`env.step(raw)`, and its line in the trace; the model turn that made `raw` charged to
        the episode's budget first."""
        env, agent = self.env, self.agent
        self._charge_turn()
        self.observation, r, self.terminated, self.truncated, self.step_info = env.step(raw)
        step_info = self.step_info
        self.reward = float(r)
        self.steps += 1
        self.latency += step_info["timing"].latency_s
        if self.writer is not None:
            turn = model_turn(agent, golden=self.golden)
            self.writer.step(
                step_fields(
                    raw,
                    step_info,
                    self.hash_before,
                    timing=self.timing or turn["model_latency_ms"] is not None,
                    **turn,
                )
            )
            if self.files_dir is not None:
                keep_observation_files(env, step_info, self.files_dir)
        self.hash_before = step_info.get("state_hash")
        if step_info.get("aborted"):
            raise EpisodeAborted(str(step_info["aborted"]))

    def _charge_turn(self) -> None:
        """What the agent's usage (the LLM agents': tokens and seconds in requests, over the
        episode) grew by since the last step, charged to the env's budget."""
        usage = getattr(self.agent, "usage", None)
        if self.env.meter is None or usage is None:
            return
        now = (int(usage.prompt_tokens), int(usage.completion_tokens), float(usage.latency_s))
        before = self.charged
        self.env.charge(
            prompt_tokens=now[0] - before[0], completion_tokens=now[1] - before[1], seconds=now[2] - before[2]
        )
        self.charged = now

    def finish(self) -> EpisodeResult:
        """The end line, and the episode's result."""
        path = None
        if self.writer is not None:
            end = trace_end(self.env, self.step_info, terminated=self.terminated, reward=self.reward)
            path = self.writer.finish(end)
        return EpisodeResult(
            task_id=self.task.id,
            reward=self.reward,
            steps=self.steps,
            terminated=self.terminated,
            final_answer=self.step_info.get("final_answer"),
            error_counts=dict(self.env.error_counts),
            latency_s=self.latency,
            scores=self.step_info.get("scores", {}),
            trace_path=path,
        )

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def run_episode(
    env: ToolEnv,
    agent: Agent,
    task: Task,
    *,
    seed: int | None = None,
    trace_dir: Path | None = None,
    timing: bool = False,
    golden: bool = False,
    keep_files: bool = False,
) -> EpisodeResult:
    """Runs one episode; with `trace_dir`, writes its trace there, and with `keep_files` also the
    files its observations carry (images a tool drew), as `trace_dir/files/<sha256>`, which the
    trace names by hash only (`toolgym view` shows them)."""
    obs, info = _reset(env, task, seed)
    agent.start(task, obs, info)
    episode = _Episode(
        env,
        agent,
        task,
        obs,
        info,
        seed=seed,
        trace_dir=trace_dir,
        timing=timing,
        golden=golden,
        keep_files=keep_files,
    )
    try:
        while not episode.done:
            episode.step(agent.act(episode.observation, episode.info))
        return episode.finish()
    finally:
        episode.close()


async def arun_episode(
    env: ToolEnv,
    agent: AsyncAgent,
    task: Task,
    *,
    seed: int | None = None,
    trace_dir: Path | None = None,
    timing: bool = False,
    golden: bool = False,
    keep_files: bool = False,
) -> EpisodeResult:
    """`run_episode` for an agent that awaits its model (`AsyncAgent`): the same steps and the same
    trace bytes. The env steps on the event loop (tools are quick or have their own limits); other
    episodes' model requests proceed meanwhile."""
    obs, info = _reset(env, task, seed)
    await agent.astart(task, obs, info)
    episode = _Episode(
        env,
        agent,
        task,
        obs,
        info,
        seed=seed,
        trace_dir=trace_dir,
        timing=timing,
        golden=golden,
        keep_files=keep_files,
    )
    try:
        while not episode.done:
            episode.step(await agent.aact(episode.observation, episode.info))
        return episode.finish()
    finally:
        episode.close()
