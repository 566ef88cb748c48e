"""toolgym's task sets as Inspect evals (UK AISI's inspect-ai; the `inspect` extra).

    inspect eval toolgym/mtu --model openai/gpt-4o-mini           # a bundled set
    inspect eval toolgym/toolgym -T tasks=path/to/tasks.jsonl --model ...   # any set, a plug-in's too
    inspect eval toolgym/mtu --model ... --epochs 4 --epochs-reducer pass_at_2

Each sample is one task of the set (its id, its query as the input). The solver plays the episode
with toolgym's own LLM agent (`toolgym.models.llm.LLMAgent`, the one `toolgym run --agent llm`
uses, here on the chat API and the `openai` protocol by default) whose requests Inspect's agent bridge
routes to the eval's model: the prompts, tool schemas, parsing, simulated user and rewards are
toolgym's, so the same replies score what `toolgym run` scores. Each sample gets its own env and
world, seeded as toolgym seeds them (`seed`, default 0). The scorer gives toolgym's reward and
scores (`reward`, `success`, the task's own scores: answer, state, milestones, ...) and the per-task
metrics of the set's suite (e.g. `mtu/TN`), each averaged over the samples. The episode's toolgym
trace is written beside Inspect's log (`<log>.toolgym/epoch-<n>/<task>.seed<s>.jsonl`; its path in
the score's metadata), where `toolgym eval`, `report` and `view` read it.

Inspect registers these tasks through the `inspect_ai` entry point `toolgym` (pyproject.toml). This
module sits on the roof: it imports the runs' floors and inspect_ai, which only this module imports.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from inspect_ai import Epochs, Task, task
from inspect_ai.agent import agent_bridge
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from toolgym.envs.demo import resolve_task_set, resolve_task_sets
from toolgym.envs.runner import EpisodeResult, arun_episode
from toolgym.envs.task_sets import named_task_files
from toolgym.envs.tool_env import REWARD_MODES, RewardMode, ToolEnv
from toolgym.evaluation.base import EvaluationError
from toolgym.evaluation.suites import benchmark_of, score_suite
from toolgym.models.llm import AsyncChatClient, LLMAgent, LLMConfig
from toolgym.tasks import TaskSet
from toolgym.tools import ToolSet
from toolgym.trace import read_trace

RESULT_KEY = "toolgym"  # the sample store's key for the episode's result
BRIDGED_MODEL = "inspect"  # the model name Inspect's agent bridge routes to the eval's model
# never reached: the bridge answers every request to the "inspect" model in process
BRIDGED_URL = "http://127.0.0.1:9/v1"
DEFAULT_LOG_DIR = "logs"  # Inspect's own default (INSPECT_LOG_DIR)


@functools.lru_cache(maxsize=32)
def _task_set(tasks: str) -> TaskSet:
    return resolve_task_set(tasks)


def set_name(tasks: str) -> str:
    """The set's one name, as toolgym's commands and suites call it (`mtu`, or a file's stem)."""
    (named,) = named_task_files([tasks])
    return named.name


def dataset_of(tasks: str) -> MemoryDataset:
    """A sample per task, in file order: id, query, and the set's name in the metadata."""
    task_set = _task_set(tasks)
    name = set_name(tasks)
    samples = [
        Sample(id=t.id, input=t.query, metadata={"task_set": name, "category": t.category or ""})
        for t in task_set
    ]
    return MemoryDataset(samples, name=name)


def _trace_dir(epoch: int) -> Path:
    """Beside Inspect's log of this eval (`<log>.toolgym/epoch-<n>/`), else under the log folder."""
    try:
        from inspect_ai.log._samples import sample_active  # the running sample's log location

        active = sample_active()
        location = active.log_location if active is not None else None
    except (ImportError, AttributeError):  # another Inspect's internals: the log folder's
        location = None
    if location and "://" not in location:
        base = Path(location)
        return base.with_name(base.name.rsplit(".", 1)[0] + ".toolgym") / f"epoch-{epoch}"
    return Path(os.environ.get("INSPECT_LOG_DIR", DEFAULT_LOG_DIR)) / "toolgym" / f"epoch-{epoch}"


class BridgedChatClient(AsyncChatClient):
    """toolgym's async chat client, its requests answered by Inspect's agent bridge: the bridge
    reads a request's JSON data, so the body goes as data, not as the bytes toolgym encodes."""

    def _prepare(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        seed: int | None,
        stop: Sequence[str] | None,
    ) -> dict[str, Any]:
        request = super()._prepare(messages, tools, seed, stop)
        request["body"] = json.loads(request.pop("content"))
        return request


@solver
def toolgym_agent(
    tasks: str,
    *,
    protocol: str = "openai",
    max_steps: int = 10,
    seed: int = 0,
    reward_mode: RewardMode = "final",
) -> Solver:
    """Play the sample's task as a toolgym episode, the eval's model behind toolgym's LLM agent."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        task_set = _task_set(tasks)
        task = task_set[str(state.sample_id)]
        env = ToolEnv(_toolset(), task_set, protocol=protocol, max_steps=max_steps, reward_mode=reward_mode)
        client = BridgedChatClient(LLMConfig(base_url=BRIDGED_URL, model=BRIDGED_MODEL, api_key="inspect"))
        agent = LLMAgent(client, env, seed=seed, name=f"inspect:{state.model}")
        try:
            async with agent_bridge() as bridge:
                result = await arun_episode(env, agent, task, seed=seed, trace_dir=_trace_dir(state.epoch))
        finally:
            await client.close()
            env.close()
        state.messages = list(bridge.state.messages)  # the conversation, for Inspect's log viewer
        state.store.set(RESULT_KEY, _result_record(result))
        state.output = ModelOutput.from_content(str(state.model), result.final_answer or "")
        return state

    return solve


def _toolset() -> ToolSet:
    from toolgym.toolservers.registry import default_toolset

    return default_toolset()


def _result_record(result: EpisodeResult) -> dict[str, Any]:
    return {
        "reward": result.reward,
        "scores": dict(result.scores),
        "steps": result.steps,
        "terminated": result.terminated,
        "final_answer": result.final_answer,
        "error_counts": dict(result.error_counts),
        "trace": str(result.trace_path) if result.trace_path is not None else None,
    }


def suite_scores(tasks: str, trace_path: str | None) -> dict[str, float]:
    """The set's suite's per-task metrics of one episode (`suite/metric`), from its trace; none
    for a set of no benchmark or a trace the suite cannot score alone."""
    if trace_path is None:
        return {}
    trace = read_trace(trace_path)
    task_set = _task_set(tasks)
    task = task_set[trace.header.task_id]
    suite = benchmark_of(task.metadata, set_name(tasks))
    if suite is None:
        return {}
    try:
        per_task = score_suite(suite, [trace], task_set, "fixed").per_task.get(task.id, {})
    except EvaluationError:
        return {}
    return {f"{suite}/{k}": float(v) for k, v in per_task.items() if isinstance(v, int | float)}


@scorer(metrics={"*": [mean()]})
def toolgym_scorer(tasks: str) -> Any:
    """toolgym's reward and scores of the episode the solver played, and the suite's metrics."""

    async def score(state: TaskState, target: Target) -> Score:
        record = state.store.get(RESULT_KEY)
        if not isinstance(record, dict):
            return Score(value={"reward": 0.0, "success": 0.0}, explanation="no toolgym episode ran")
        values: dict[str, float] = {
            "reward": float(record["reward"]),
            "success": float(record["reward"] >= 1.0),
        }
        values |= {k: float(v) for k, v in record["scores"].items() if k not in values}
        values |= suite_scores(tasks, record["trace"])
        return Score(
            value=values,
            answer=record["final_answer"],
            explanation=f"toolgym reward {record['reward']:.3f} in {record['steps']} steps",
            metadata={"trace": record["trace"], "error_counts": record["error_counts"]},
        )

    return score


@task
def toolgym(
    tasks: str = "mtu",
    protocol: str = "openai",
    max_steps: int = 10,
    seed: int = 0,
    reward_mode: str = "final",
    epochs: int = 1,
) -> Task:
    """Any toolgym task set as an Inspect task: a bundled set's name or a task file (a plug-in's
    set by its registered name). `protocol`: openai (native tool calls, default) or react."""
    resolve_task_sets([tasks])  # an unknown set is an error now, not in every sample
    if reward_mode not in REWARD_MODES:
        raise ValueError(f"reward_mode {reward_mode!r}: one of {', '.join(REWARD_MODES)}")
    return Task(
        dataset=dataset_of(tasks),
        solver=toolgym_agent(
            tasks,
            protocol=protocol,
            max_steps=max_steps,
            seed=seed,
            reward_mode=cast(RewardMode, reward_mode),
        ),
        scorer=toolgym_scorer(tasks),
        epochs=Epochs(epochs) if epochs > 1 else None,
    )


@task
def demo(max_steps: int = 10, seed: int = 0) -> Task:
    """GTA's demo tasks: real tools (OCR, calculator, plots, ...)."""
    return toolgym("demo", max_steps=max_steps, seed=seed)


@task
def mtu(max_steps: int = 10, seed: int = 0) -> Task:
    """MTU-Bench's mock-app tasks."""
    return toolgym("mtu", max_steps=max_steps, seed=seed)


@task
def multiturn(max_steps: int = 10, seed: int = 0) -> Task:
    """Multi-turn mock-app tasks with a simulated user."""
    return toolgym("multiturn", max_steps=max_steps, seed=seed)


@task
def teval(max_steps: int = 10, seed: int = 0) -> Task:
    """T-Eval's mock-app tasks."""
    return toolgym("teval", max_steps=max_steps, seed=seed)


@task
def ctool(max_steps: int = 10, seed: int = 0) -> Task:
    """CToolEval's mock-app tasks (English)."""
    return toolgym("ctool", max_steps=max_steps, seed=seed)


@task
def ctool_zh(max_steps: int = 10, seed: int = 0) -> Task:
    """CToolEval's mock-app tasks (Chinese)."""
    return toolgym("ctool_zh", max_steps=max_steps, seed=seed)


@task
def tooleyes(max_steps: int = 10, seed: int = 0) -> Task:
    """ToolEyes' tasks over simulated tool libraries."""
    return toolgym("tooleyes", max_steps=max_steps, seed=seed)
