"""Run an agent over tasks in a ToolEnv and write one trace per episode."""

from __future__ import annotations

import hashlib
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolgym.canonical import canonical_hash
from toolgym.envs.agents import Agent
from toolgym.envs.faults import FaultLayer
from toolgym.envs.tool_env import ToolEnv
from toolgym.files import FileHandle
from toolgym.tasks import Task
from toolgym.trace import (
    ModelRequest,
    ToolInfo,
    TraceEnd,
    TraceHeader,
    TraceStep,
    TraceWriter,
    TurnTokens,
)


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


def trace_name(task_id: str, seed: int | None, *, kind: str = "") -> str:
    """The file name of an episode's trace: `<task id>[.<kind>].seed<seed>.jsonl`."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", task_id)
    stem = f"{safe}.{kind}" if kind else safe
    return f"{stem}.seed{seed}.jsonl" if seed is not None else f"{stem}.jsonl"


def trace_header(
    env: ToolEnv,
    agent: Agent,
    task: Task,
    seed: int | None,
    env_config: dict[str, Any],
    *,
    golden: bool = False,
) -> TraceHeader:
    """The header of an episode's trace, taken after `env.reset` (the offered tools are known).
    An episode under fault plans names them in `env_config["faults"]`."""
    plans = [layer.plan.model_dump(mode="json") for layer in env.tool_layers if isinstance(layer, FaultLayer)]
    if plans:
        env_config = {**env_config, "faults": plans}
    return TraceHeader(
        task_id=task.id,
        seed=seed,
        clock=task.clock.isoformat(),
        protocol=env.protocol.name,
        agent=agent.name,
        tools=[ToolInfo(name=t.name, version=t.version, backend=t.backend) for t in env.offered],
        env_config=env_config,
        golden=golden,
        task_hash=canonical_hash(task.model_dump(mode="json")),
    )


def trace_step(
    raw: Any,
    info: dict[str, Any],
    hash_before: str | None,
    *,
    timing: bool = False,
    tokens: TurnTokens | None = None,
    request: ModelRequest | None = None,
    model_latency_ms: float | None = None,
) -> TraceStep:
    """The trace line of one `env.step(raw)` from its info (what every episode driver writes:
    the runner, the env service, the MCP server); `tokens`: the turn's token ids, when known;
    `request` and `model_latency_ms`: what the agent sent its model and how long it took."""
    return TraceStep(
        index=info["step"],
        raw=raw if isinstance(raw, (str, dict)) else None,
        actions=info["actions"],
        observations=info["observations"],
        error_kinds=info["error_kinds"],
        state_hash_before=hash_before,
        state_hash_after=info.get("state_hash"),
        state_diff=info.get("state_diff"),
        latency_ms=info["timing"].latency_s * 1000 if timing else None,
        faults=info.get("faults"),
        tokens=tokens,
        request=request,
        model_latency_ms=model_latency_ms,
    )


def trace_end(env: ToolEnv, info: dict[str, Any], *, terminated: bool, reward: float) -> TraceEnd:
    """The end line of a finished episode from its last step's info."""
    return TraceEnd(
        status="terminated" if terminated else "truncated",
        steps=info["step"],
        final_answer=info.get("final_answer"),
        reward=reward,
        error_counts=dict(env.error_counts),
        scores=info.get("scores", {}),
    )


FILES_DIR = "files"  # beside a trace: the files its observations carry, named by sha256


def write_atomically(path: Path, data: bytes) -> None:
    """The file appears whole under its name or not at all (as TraceWriter's rename does)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with tmp.open("wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


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
        write_atomically(target, data)


def keep_observation_files(env: ToolEnv, info: dict[str, Any], folder: Path) -> None:
    """Keeps the files of a step's observations, from the episode's file store (a temporary
    folder), in `folder` (`keep_file`)."""
    for observation in info["observations"]:
        for entry in observation.get("files") or []:
            handle = FileHandle.model_validate(entry)
            if not (folder / handle.sha256).exists():  # read nothing for a file already kept
                keep_file(folder, handle.sha256, env.files.get(handle).read_bytes())


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
    obs, info = env.reset(seed=seed, options={"task": task})
    agent.start(task, obs, info)
    writer: TraceWriter | None = None
    if trace_dir is not None:
        config: dict[str, Any] = {"max_steps": task.max_steps or env.max_steps}
        if task.user is not None:
            config["user"] = env.user.name  # which simulator played the user (docs/users.md)
        header = trace_header(env, agent, task, seed, config, golden=golden)
        writer = TraceWriter(trace_dir / trace_name(task.id, seed), header)
    hash_before: str | None = info.get("state_hash")
    files_dir = trace_dir / FILES_DIR if keep_files and trace_dir is not None else None
    reward, terminated, truncated, steps, latency = 0.0, False, False, 0, 0.0
    step_info: dict[str, Any] = {}
    try:
        while not (terminated or truncated):
            raw = agent.act(obs, step_info or info)  # the latest info: reset's, then each step's
            obs, r, terminated, truncated, step_info = env.step(raw)
            reward = float(r)
            steps += 1
            latency += step_info["timing"].latency_s
            if writer is not None:
                tokens = getattr(agent, "turn_tokens", None)  # an agent whose server returned token ids
                # an agent that asked a model (LLMAgent) says what it sent and how long it waited;
                # such a run is not byte-reproducible anyway, so its steps keep their latencies,
                # except in a golden trace, which a replay must give back byte for byte
                request = getattr(agent, "turn_request", None)
                model_ms = getattr(agent, "turn_latency_ms", None)
                model_ms = float(model_ms) if isinstance(model_ms, (int, float)) and not golden else None
                writer.step(
                    trace_step(
                        raw,
                        step_info,
                        hash_before,
                        timing=timing or model_ms is not None,
                        tokens=tokens if isinstance(tokens, TurnTokens) else None,
                        request=request if isinstance(request, ModelRequest) else None,
                        model_latency_ms=model_ms,
                    )
                )
                if files_dir is not None:
                    keep_observation_files(env, step_info, files_dir)
            hash_before = step_info.get("state_hash")
        final = step_info.get("final_answer")
        path = None
        if writer is not None:
            path = writer.finish(trace_end(env, step_info, terminated=terminated, reward=reward))
    finally:
        if writer is not None:
            writer.close()
    return EpisodeResult(
        task_id=task.id,
        reward=reward,
        steps=steps,
        terminated=terminated,
        final_answer=final,
        error_counts=dict(env.error_counts),
        latency_s=latency,
        scores=step_info.get("scores", {}),
        trace_path=path,
    )
