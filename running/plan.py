"""A run from its configuration: `plan_run(config)` checks a RunConfig and builds what the run
needs (task sets and their sources, tools, agents, the model client, the executor, fault plans),
raising RunConfigError (one line, naming the option) before anything is written; `execute(plan)`
runs it (the clean run, then each fault plan) and writes traces and run.json. `run(config)` is
both, the path `toolgym run` takes:

    from toolgym.running.config import RunConfig
    from toolgym.running.plan import run
    results = run(RunConfig(tasks=["mtu"], trials=2, out=Path("runs/mtu")))
    results.summary.episodes
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolgym.envs.rollouts import AgentSpec, Cancel, UserSpec, WorldSpec
from toolgym.models.chat_api import (
    API_PATHS,
    API_PROTOCOLS,
    DEFAULT_KEY_ENV,
    LLMConfig,
    LLMError,
    api_key_from_env,
)
from toolgym.models.setups import PRESETS, Example
from toolgym.running.config import EndpointOptions, RunConfig, RunConfigError
from toolgym.running.task_sources import TaskSource, named_task_files, source_of
from toolgym.running.trials import (
    FAULTS_DIR,
    PERTURBED_DIR,
    EpisodeRecord,
    RunSummary,
    parse_limit,
    run_trials,
)
from toolgym.tasks import TaskSet
from toolgym.tools import ToolSet

if TYPE_CHECKING:
    from toolgym.envs.budgets import Budget
    from toolgym.envs.faults import FaultPlan
    from toolgym.envs.perturb import PerturbPlan
    from toolgym.envs.ray_rollouts import ToolServerSpec
    from toolgym.envs.rollouts import Executor
    from toolgym.envs.tool_env import ToolEnv
    from toolgym.models.llm import ChatClient

TOOL_SERVER_TOKEN_ENV = "TOOLGYM_TOOL_SERVER_TOKEN"  # the tool-server actor's bearer token
DEFAULT_MAX_STEPS = 10


@dataclass
class RunPlan:
    """A checked configuration and what it runs with."""

    config: RunConfig  # `out` filled in
    out: Path
    sets: list[tuple[str, TaskSet]]
    sources: list[TaskSource]
    toolset: ToolSet
    protocol: str
    max_steps: int
    agents: AgentSpec | Callable[[ToolEnv, int], Any]
    agent_name: str
    model: str | None = None
    client: ChatClient | None = None
    executor: Executor | None = None
    tool_server: ToolServerSpec | None = None
    faults: list[FaultPlan] = field(default_factory=list)
    perturbations: list[PerturbPlan] = field(default_factory=list)
    budget: Budget | None = None
    retrieval: dict[str, Any] | None = None
    user: UserSpec | None = None
    worlds: WorldSpec | None = None
    limit: slice | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # said before the run (a retriever's fallback)

    @property
    def episodes(self) -> int:
        """Episodes the plan runs: each task's trials (within `limit`), again under each fault plan
        and each perturbation plan."""
        total = self.config.trials * sum(len(s) for _, s in self.sets)
        if self.limit is not None:
            total = len(range(total)[self.limit])
        return total * (1 + len(self.faults) + len(self.perturbations))


@dataclass
class RunResults:
    summary: RunSummary
    faulted: list[tuple[FaultPlan, RunSummary]] = field(default_factory=list)
    perturbed: list[tuple[PerturbPlan, RunSummary]] = field(default_factory=list)

    @property
    def runs(self) -> list[RunSummary]:
        """The clean run, then each faulted and each perturbed one."""
        return [self.summary, *(s for _, s in self.faulted), *(s for _, s in self.perturbed)]

    @property
    def stopped(self) -> RunSummary | None:
        """The first of the runs that stopped before its end (None: all finished)."""
        return next((r for r in self.runs if r.stopped), None)

    @property
    def aborted(self) -> int:
        return sum(len(s.aborted) for s in self.runs)


# ---- plan --------------------------------------------------------------------------------------
def plan_run(config: RunConfig) -> RunPlan:
    """Check `config` and build what it runs with; RunConfigError before anything is written.
    An LLM agent's server is asked once (`preflight`): a dead server, a refused key or an
    unknown model is an error now, not in every episode."""
    config = _with_preset(config)
    examples = _few_shot(config)
    protocol, api = _protocol_and_api(config)
    named, hf_settings = _named_agent(config, protocol, examples)
    limit = _limit(config)
    sets, sources, toolset = load_sets(config)
    _check_golden(config, sets)
    _refuse_broken_golden(sets, sources)
    sets, retrieval, notes = _retrieved(config, sets, toolset)
    faults = fault_plans(config.faults, sets)  # a bad plan stops the run before any episode
    perturbations = perturb_plans(config)
    budget = episode_budget(config)
    user_config = endpoint_config(config.user, config.llm.timeout, config.llm.max_retries, "--user")
    client = _llm_client(config, api) if config.agent == "llm" else None
    tool_server = tool_server_spec(config)
    executor = make_executor(config, tool_server)
    if executor is not None and len(toolset) != len(_default_toolset()):
        raise RunConfigError(
            "these task files need their benchmark's tools, which workers do not build: run them "
            "without --workers / --ray",
            "--tasks",
        )
    out = config.out or default_run_dir()
    plan = RunPlan(
        config=config.model_copy(update={"out": out.absolute()}),
        out=out,
        sets=sets,
        sources=sources,
        toolset=toolset,
        protocol=protocol,
        max_steps=config.max_steps or DEFAULT_MAX_STEPS,
        agents=named or _in_process_llm_agents(config, client, examples),
        agent_name=f"llm:{config.llm.model}" if client is not None else config.agent,
        model=config.llm.model if client is not None else None,
        client=client,
        executor=executor,
        tool_server=tool_server,
        faults=faults,
        perturbations=perturbations,
        budget=budget,
        retrieval=retrieval,
        limit=limit,
        notes=notes,
    )
    if executor is not None and client is not None:  # workers build their own agents from a spec
        plan.agents = _worker_llm_agents(config, client, examples)
    plan.user = UserSpec("toolgym.models.users:LLMUsers", {"config": user_config}) if user_config else None
    plan.worlds = _simulator(config)
    plan.settings = _settings(plan, api, examples, hf_settings, user_config)
    return plan


def _default_toolset() -> ToolSet:
    from toolgym.toolservers.registry import default_toolset

    return default_toolset()


def _with_preset(config: RunConfig) -> RunConfig:
    """A paper's published setup (`preset`) fills what the configuration leaves unset."""
    if config.preset is None:
        return config
    setup = PRESETS.get(config.preset)
    if setup is None:
        raise RunConfigError(f"unknown preset {config.preset!r}; known: {', '.join(PRESETS)}", "--preset")
    llm = config.llm.model_copy(
        update={
            "temperature": setup.temperature if config.llm.temperature is None else config.llm.temperature,
            "top_p": setup.top_p if config.llm.top_p is None else config.llm.top_p,
        }
    )
    return config.model_copy(
        update={
            "protocol": config.protocol or setup.protocol,
            "max_steps": config.max_steps or setup.max_steps,
            "llm": llm,
        }
    )


def _few_shot(config: RunConfig) -> list[Example] | None:
    from toolgym.models.setups import FewShotError, load_few_shot

    if config.llm.few_shot is None:
        return None
    if config.agent != "llm" and not config.agent.startswith("hf:"):
        raise RunConfigError("few-shot examples are for the LLM agents (--agent llm, hf:...)", "--few-shot")
    try:
        return load_few_shot(config.llm.few_shot)
    except FewShotError as exc:
        raise RunConfigError(str(exc), "--few-shot") from None


def _protocol_and_api(config: RunConfig) -> tuple[str, str]:
    """The action protocol and the API the LLM agent calls, from what is given and the defaults
    (openai over chat for llm, responses over /v1/responses, react otherwise)."""
    from toolgym.models.setups import tools_in_prompt_refusal
    from toolgym.protocols import PROTOCOLS

    llm, options = config.agent == "llm", config.llm
    if options.token_ids and not llm:
        raise RunConfigError("--token-ids is for the LLM agent (--agent llm)", "--token-ids")
    if options.api is not None and not llm:
        raise RunConfigError("--api is for the LLM agent (--agent llm)", "--api")
    api = options.api or ("responses" if config.protocol == "responses" else "chat")
    protocol = config.protocol or (("responses" if api == "responses" else "openai") if llm else "react")
    if protocol not in PROTOCOLS:
        raise RunConfigError(
            f"unknown protocol {protocol!r}; known: {', '.join(sorted(PROTOCOLS))}", "--protocol"
        )
    if llm and protocol not in API_PROTOCOLS[api]:
        raise RunConfigError(
            f"the LLM agent speaks {', '.join(API_PROTOCOLS[api])} over /v1{API_PATHS[api]}, not "
            f"{protocol!r} (--api picks the API)",
            "--protocol",
        )
    if options.tools_in_prompt and not (llm and protocol in ("openai", "responses")):
        message = tools_in_prompt_refusal(protocol) if llm else "--tools-in-prompt is for --agent llm"
        raise RunConfigError(message, "--tools-in-prompt")
    if options.token_ids and api != "chat":
        raise RunConfigError("token ids come over the chat API (--api chat)", "--token-ids")
    return protocol, api


def _named_agent(
    config: RunConfig, protocol: str, examples: list[Example] | None
) -> tuple[AgentSpec | None, dict[str, Any]]:
    """The spec of every agent but `llm` (whose client comes later), and an hf agent's settings."""
    from toolgym.models.hf_models import threads_refusal

    refused = threads_refusal(config.agent, config.threads)
    if refused is not None:
        raise RunConfigError(refused, "--threads")
    if config.agent == "llm":
        return None, {}
    if config.agent.startswith("hf:"):  # a model in this process (toolgym.models.hf_agent)
        from toolgym.models.hf_agent import hf_run_agent

        options = config.llm
        try:
            return hf_run_agent(
                config.agent,
                protocol=protocol,
                max_tokens=options.max_tokens,
                temperature=options.temperature,
                top_p=options.top_p,
                llm_seed=options.seed,
                few_shot=examples,
                threads=config.threads,
            )
        except ValueError as exc:
            raise RunConfigError(str(exc), "--agent") from None
    try:
        return AgentSpec.named(config.agent), {}
    except ValueError as exc:
        raise RunConfigError(str(exc), "--agent") from None


def _limit(config: RunConfig) -> slice | None:
    try:
        return parse_limit(config.limit) if config.limit is not None else None
    except ValueError as exc:
        raise RunConfigError(str(exc), "--limit") from None


def load_sets(config: RunConfig) -> tuple[list[tuple[str, TaskSet]], list[TaskSource], ToolSet]:
    """The task sets (only `task_ids`, if given), where each came from, and the tools they need:
    the default ones and a benchmark's published schemas. A bad task file is a TaskFileError."""
    from toolgym.evaluation.loaders.formats import benchmark_tools, load_tasks

    try:
        files = named_task_files(config.tasks)
    except ValueError as exc:
        raise RunConfigError(str(exc), "--tasks") from None
    fmt = None if config.task_format is None else config.task_format.value
    sets: list[tuple[str, TaskSet]] = []
    sources: list[TaskSource] = []
    toolset = _default_toolset()
    for named in files:
        path = named.path
        kind, task_set = load_tasks(path, fmt)
        if config.task_ids:
            task_set = TaskSet([t for t in task_set if t.id in config.task_ids], base_dir=task_set.base_dir)
        if len(task_set):
            sets.append((named.name, task_set))  # the set's one name: its folder, its rows
            sources.append(source_of(named, kind))
            # a benchmark's own tools (schemas it publishes, not run) beside the default ones
            toolset = toolset.merged(benchmark_tools(kind, path, task_set, toolset))
    if not sets:
        raise RunConfigError(f"no task with id {', '.join(config.task_ids)}", "--task-id")
    return sets, sources, toolset


def _check_golden(config: RunConfig, sets: Sequence[tuple[str, TaskSet]]) -> None:
    """The oracle and step mode need each task's golden chain."""
    if config.agent != "oracle" and config.mode != "step":
        return
    unsolved = [f"{name}/{t.id}" for name, task_set in sets for t in task_set if not t.golden]
    if not unsolved:
        return
    more = f" and {len(unsolved) - 1} more" if len(unsolved) > 1 else ""
    if config.mode == "step":
        raise RunConfigError(
            f"step mode teacher-forces each task's golden chain, and {unsolved[0]}{more} has none: "
            "run them end to end (--mode end-to-end)",
            "--mode",
        )
    raise RunConfigError(
        f"the oracle replays golden actions, and {unsolved[0]}{more} has none: run an LLM agent "
        "(--agent llm) on them",
        "--agent",
    )


def _refuse_broken_golden(sets: Sequence[tuple[str, TaskSet]], sources: Sequence[TaskSource]) -> None:
    """A task whose golden chain fails unexpectedly would score every agent 0: refused before any
    episode, in one line (its file:line, id and failing call). Task files only: a benchmark's own
    rows (mtu, teval, ...) keep its reference calls, which its suite scores, as they are."""
    from toolgym.envs.demo import refuse_broken_golden

    authored = [s for (_, s), source in zip(sets, sources, strict=True) if source.format == "toolgym"]
    refuse_broken_golden(task for task_set in authored for task in task_set)  # a TaskFileError


def _retrieved(
    config: RunConfig, sets: list[tuple[str, TaskSet]], toolset: ToolSet
) -> tuple[list[tuple[str, TaskSet]], dict[str, Any] | None, list[str]]:
    """With a retriever, each task offered its top k tools, the rankings, and a note on the
    retriever actually used."""
    if config.retriever is None:
        return sets, None, []
    from toolgym.evaluation.metrics.similarity import ModelUnavailableError
    from toolgym.running.retrieval import parse_retriever, with_retrieved_tools

    try:
        sets, retrieval = with_retrieved_tools(sets, toolset, parse_retriever(config.retriever))
    except (ValueError, ModelUnavailableError) as exc:
        raise RunConfigError(str(exc), "--retriever") from None
    return sets, retrieval, [retrieval["note"]] if retrieval.get("note") else []


def fault_plans(paths: Sequence[Path], sets: Sequence[tuple[str, TaskSet]]) -> list[FaultPlan]:
    """The fault plans, loaded and checked against the tasks' tools; distinct names."""
    from toolgym.envs.faults import FaultPlan, FaultPlanError, offered_tool_names

    plans: list[FaultPlan] = []
    for path in paths:
        try:
            plan = FaultPlan.load(path)
            plan.check_tools(offered_tool_names(_default_toolset(), [t for _, s in sets for t in s]))
        except FaultPlanError as exc:
            raise RunConfigError(exc.message, "--faults") from None
        plans.append(plan)
    names = [p.name for p in plans]
    if len(set(names)) != len(names):
        raise RunConfigError(f"fault plans need distinct names, got {names}", "--faults")
    return plans


def episode_budget(config: RunConfig) -> Budget | None:
    """What each episode may spend; a cost budget priced from `--price-table` by the run's model
    (an LLM server's `--model`, an in-process `hf:` model's spec)."""
    from toolgym.envs.budgets import PriceTableError

    model = config.llm.model if config.agent == "llm" else None
    if config.agent.startswith("hf:"):
        model = config.agent.removeprefix("hf:")
    try:
        return config.budget.budget(model)
    except PriceTableError as exc:
        raise RunConfigError(str(exc), "--price-table") from None


def perturb_plans(config: RunConfig) -> list[PerturbPlan]:
    """The perturbation plans (presets or files), loaded; distinct names; none in step mode, whose
    golden chain is written with the real names."""
    from toolgym.envs.perturb import PerturbPlan, PerturbPlanError

    plans: list[PerturbPlan] = []
    for given in config.perturb:
        try:
            plans.append(PerturbPlan.load(given))
        except PerturbPlanError as exc:
            raise RunConfigError(exc.message, "--perturb") from None
    names = [p.name for p in plans]
    if len(set(names)) != len(names):
        raise RunConfigError(f"perturbation plans need distinct names, got {names}", "--perturb")
    if plans and config.mode == "step":
        raise RunConfigError(
            "--perturb runs end to end: a step-mode run feeds the golden chain, written with the real "
            "tool names",
            "--perturb",
        )
    return plans


def endpoint_config(
    endpoint: EndpointOptions, timeout: float, max_retries: int, prefix: str
) -> LLMConfig | None:
    """The client settings of another model (the LLM user: prefix `--user`, the tool simulator:
    `--simulator`); None when none is asked for. Sampling is left to the server."""
    from toolgym.envs.user_options import UserOptionsError, wants_user_llm

    base_url, model, key_env = endpoint.base_url, endpoint.model, endpoint.api_key_env
    if prefix == "--user":
        try:
            if not wants_user_llm(base_url, model, key_env):
                return None
        except UserOptionsError as exc:
            raise RunConfigError(exc.problem, exc.option) from None
    elif base_url is None and model is None:
        return None
    elif not (base_url and model):
        raise RunConfigError(f"give {prefix}-base-url and {prefix}-model together")
    assert base_url is not None and model is not None
    try:
        key = api_key_from_env(key_env)
    except LLMError as exc:
        raise RunConfigError(exc.message, f"{prefix}-api-key-env") from None
    return LLMConfig(base_url=base_url, model=model, api_key=key, timeout_s=timeout, max_retries=max_retries)


def llm_config(config: RunConfig, api: str) -> LLMConfig:
    """The LLM agent's client settings (its key read from the environment)."""

    options = config.llm
    if not options.base_url or not options.model:
        raise RunConfigError("--agent llm needs --base-url and --model")
    try:
        key = api_key_from_env(options.api_key_env, default=DEFAULT_KEY_ENV)
    except LLMError as exc:
        raise RunConfigError(exc.message, "--api-key-env") from None
    return LLMConfig(
        base_url=options.base_url,
        model=options.model,
        api_key=key,
        temperature=options.temperature,
        top_p=options.top_p,
        seed=options.seed,
        max_tokens=options.max_tokens,
        timeout_s=options.timeout,
        max_retries=options.max_retries,
        concurrency=config.concurrency,
        api="responses" if api == "responses" else "chat",
        token_ids=options.token_ids,
    )


def _llm_client(config: RunConfig, api: str) -> ChatClient:
    from toolgym.models.llm import ChatClient, preflight

    settings = llm_config(config, api)
    try:
        preflight(settings)  # a dead server, a wrong key or model: one line now, not per episode
    except LLMError as exc:
        raise RunConfigError(exc.message, "--base-url") from None
    return ChatClient(settings)


def _in_process_llm_agents(
    config: RunConfig, client: ChatClient | None, examples: list[Example] | None
) -> Callable[[ToolEnv, int], Any]:
    from toolgym.models.llm import LLMAgent

    options = config.llm

    def make_agent(env: ToolEnv, trial: int) -> Any:
        assert client is not None
        seed = None if options.seed is None else options.seed + trial
        return LLMAgent(client, env, seed=seed, few_shot=examples, tools_in_prompt=options.tools_in_prompt)

    return make_agent


def _worker_llm_agents(config: RunConfig, client: ChatClient, examples: list[Example] | None) -> AgentSpec:
    """Workers build their own LLM agents (and clients) from a picklable spec."""
    return AgentSpec(
        "toolgym.models.rollout_agents:LLMAgents",
        {
            "config": client.config,
            "llm_seed": config.llm.seed,
            "few_shot": examples,
            "tools_in_prompt": config.llm.tools_in_prompt,
        },
    )


def _simulator(config: RunConfig) -> WorldSpec | None:
    """An LLM answers simulated tools when the configuration names one."""
    simulator = endpoint_config(config.simulator, config.llm.timeout, config.llm.max_retries, "--simulator")
    if simulator is None:
        return None
    return WorldSpec("toolgym.models.simulators:LLMSimulatedWorlds", {"config": simulator})


def tool_server_spec(config: RunConfig) -> ToolServerSpec | None:
    """The tool-server actor the `ray.tool_server_*` settings ask for (None: none)."""
    ray = config.ray
    if ray.tool_server_gpus is None:
        if ray.tool_server_tools or ray.tool_server_host != "127.0.0.1":
            raise RunConfigError(
                "--ray-tool-server-tool and --ray-tool-server-host need --ray-tool-server-gpus",
                "--ray-tool-server-gpus",
            )
        return None
    from toolgym.envs.ray_rollouts import ToolServerSpec
    from toolgym.http import InsecureBindError, check_bind

    known = set(_default_toolset().names)
    unknown = [t for t in ray.tool_server_tools if t not in known]
    if unknown:
        raise RunConfigError(
            f"unknown tools {unknown}; known: {', '.join(sorted(known))}", "--ray-tool-server-tool"
        )
    token = os.environ.get(TOOL_SERVER_TOKEN_ENV) or None
    try:
        check_bind(ray.tool_server_host, token)
    except InsecureBindError as exc:
        raise RunConfigError(
            f"{str(exc).split(';')[0]}: set {TOOL_SERVER_TOKEN_ENV} (16+ characters), which the "
            "rollout actors send",
            "--ray-tool-server-host",
        ) from None
    # the actor asks for GPUs only: its server thread waits on I/O, the rollout actors get the CPUs
    tools = tuple(ray.tool_server_tools) or None
    return ToolServerSpec(
        tools=tools, num_gpus=ray.tool_server_gpus, num_cpus=0, host=ray.tool_server_host, token=token
    )


def make_executor(config: RunConfig, tool_server: ToolServerSpec | None) -> Executor | None:
    """The rollout executor the configuration asks for; None: in this process (threads)."""
    ray = config.ray.enabled or config.ray.address is not None or tool_server is not None
    if not ray and (config.workers or 1) == 1:
        return None
    if config.concurrency > 1:
        raise RunConfigError(
            "--concurrency runs threads in this process; with --workers or --ray, each worker runs "
            "one episode at a time: give one or the other",
            "--concurrency",
        )
    if not ray:
        from toolgym.envs.rollouts import ProcessExecutor

        return ProcessExecutor(config.workers or 1)
    from toolgym.envs.ray_rollouts import RayAccessRefused, RayAuthRequired, RayExecutor, import_ray
    from toolgym.envs.rollouts import RolloutError

    try:
        import_ray()
    except RolloutError as exc:
        raise RunConfigError(str(exc), "--ray") from None
    # workers None: one actor per CPU of the cluster
    executor = RayExecutor(
        config.workers,
        address=config.ray.address,
        tool_server=tool_server,
        keep_actors_s=config.ray.keep_actors,
        allow_no_auth=config.ray.allow_no_auth,
    )
    if config.ray.ready_timeout is not None:  # None: the executor's default
        executor.ready_timeout_s = config.ray.ready_timeout
    try:  # one line now, before any episode: a cluster that refuses our token, an instance without one
        executor.check_access()
    except RayAccessRefused as exc:
        raise RunConfigError(str(exc), "--ray-address") from None
    except RayAuthRequired as exc:
        raise RunConfigError(str(exc), "--ray") from None
    return executor


def _settings(
    plan: RunPlan,
    api: str,
    examples: list[Example] | None,
    hf_settings: dict[str, Any],
    user_config: LLMConfig | None,
) -> dict[str, Any]:
    """What must match for a run folder to be resumed (run.json's `settings`)."""
    config = plan.config
    settings: dict[str, Any] = {"max_steps": plan.max_steps, **hf_settings}
    if plan.retrieval is not None:
        settings["retriever"] = {"name": plan.retrieval["retriever"], "k": plan.retrieval["k"]}
    if config.preset is not None:
        settings["preset"] = config.preset
    if examples is not None:
        settings["few_shot"] = {"file": str(config.llm.few_shot), "examples": len(examples)}
    if plan.client is not None:
        options = config.llm
        settings.update(
            base_url=options.base_url,
            api=api,
            temperature=options.temperature,
            top_p=options.top_p,
            llm_seed=options.seed,
            max_tokens=options.max_tokens,
            timeout_s=options.timeout,
        )
        if options.token_ids:
            settings["token_ids"] = True
        if options.tools_in_prompt:
            settings["tools_in_prompt"] = True
    if user_config is not None:
        settings["user"] = user_settings(user_config)
    if plan.worlds is not None:
        simulator = config.simulator
        settings["simulator"] = {
            "backend": "simulated:llm",
            "model": simulator.model,
            "base_url": simulator.base_url,
        }
    return settings


def user_settings(config: LLMConfig) -> dict[str, Any]:
    """What a run's settings record of its LLM user (never the API key)."""
    return {"simulator": f"llm:{config.model}", "model": config.model, "base_url": config.base_url}


def default_run_dir(root: Path = Path("runs")) -> Path:
    """A new folder per run (runs/run-<UTC time>), never an earlier run's."""
    base = root / datetime.now(UTC).strftime("run-%Y%m%d-%H%M%S")
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


# ---- execute -----------------------------------------------------------------------------------
def execute(
    plan: RunPlan,
    *,
    overwrite: bool = False,
    retry_aborted: bool = False,
    resume: str | None = None,
    cancel: Cancel | None = None,
    on_episode: Callable[[EpisodeRecord], None] | None = None,
) -> RunResults:
    """Run the plan: the clean run, then the same episodes under each fault plan (OUT/faults/NAME)
    and each perturbation plan (OUT/perturbed/NAME),
    stopping when `cancel` is set. A run that fails before any episode leaves no folder behind."""
    cancel = cancel if cancel is not None else Cancel()
    if plan.client is not None:
        cancel.on_set(plan.client.cancel)  # no model request starts once the run is cancelled
    created = not plan.out.exists()
    common: dict[str, Any] = dict(
        toolset=plan.toolset if plan.executor is None else None,
        protocol=plan.protocol,
        trials=plan.config.trials,
        concurrency=plan.config.concurrency,
        seed=plan.config.seed,
        max_steps=plan.max_steps,
        agent_name=plan.agent_name,
        model=plan.model,
        settings=plan.settings,
        executor=plan.executor,
        user=plan.user,
        limit=plan.limit,
        retry_aborted=retry_aborted,
        overwrite=overwrite,
        cancel=cancel,
        max_consecutive_aborts=plan.config.max_consecutive_aborts or None,
        resume=resume,
        worlds=plan.worlds,
        mode=plan.config.mode,
        strict_arguments=plan.config.strict_arguments,
        reward_mode=plan.config.reward_mode,
        verbosity=plan.config.notifications,
        budget=plan.budget,
        on_episode=on_episode,
        run_config=plan.config.recorded(),
        task_sources=[s.model_dump(mode="json") for s in plan.sources],
    )
    try:
        results = RunResults(run_trials(plan.sets, plan.agents, out=plan.out, **common))
        for fault_plan in plan.faults:
            if cancel.is_set():
                break
            out = plan.out / FAULTS_DIR / fault_plan.name
            results.faulted.append(
                (fault_plan, run_trials(plan.sets, plan.agents, out=out, faults=fault_plan, **common))
            )
        for perturb_plan in plan.perturbations:
            if cancel.is_set():
                break
            out = plan.out / PERTURBED_DIR / perturb_plan.name
            results.perturbed.append(
                (perturb_plan, run_trials(plan.sets, plan.agents, out=out, perturb=perturb_plan, **common))
            )
    except Exception:
        if created:
            _remove_if_empty(plan.out)
        raise
    finally:
        if plan.client is not None and not cancel.is_set():
            plan.client.close()  # a cancelled run may leave requests in flight on it: exit ends them
    if plan.retrieval is not None:
        from toolgym.running.retrieval import write_retrieval

        write_retrieval(plan.out, plan.retrieval)
    return results


def _remove_if_empty(out: Path) -> None:
    """A run this call started that failed before any episode finished: no folder is left."""
    try:
        summary = RunSummary.load(out)
    except (OSError, ValueError, KeyError, TypeError):
        return
    if not summary.episodes and not summary.cancelled:
        shutil.rmtree(out, ignore_errors=True)


def run(config: RunConfig, **options: Any) -> RunResults:
    """Plan and execute a run (`execute`'s keyword options); RunConfigError before anything runs."""
    return execute(plan_run(config), **options)
