"""`toolgym run`, `toolgym eval` and `toolgym report`: run agents over task sets, score trace
folders with metric suites, and write an HTML report. `register(app)` adds them to the CLI."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from toolgym.envs.user_options import (
    UserApiKeyEnvOption,
    UserModelOption,
    UserOptionsError,
    bad_user_options,
    wants_user_llm,
)

if TYPE_CHECKING:
    from toolgym.envs.faults import FaultPlan
    from toolgym.envs.rollouts import Executor
    from toolgym.evaluation.base import SuiteResult
    from toolgym.evaluation.llm import LLMConfig
    from toolgym.evaluation.runs import EpisodeRecord, RunSummary
    from toolgym.tasks import Task, TaskSet

console = Console()
err_console = Console(stderr=True, highlight=False, soft_wrap=True)

EVAL_FILE = "eval.{mode}.json"  # what `toolgym eval` writes into the trace folder; `report` reads it


class AgentKind(StrEnum):
    oracle = "oracle"
    llm = "llm"


class ScoreMode(StrEnum):
    compat = "compat"
    fixed = "fixed"


def _fault_plans(paths: Sequence[Path], sets: Sequence[tuple[str, TaskSet]]) -> list[FaultPlan]:
    """The plans of `--faults`, loaded and checked against the tasks' tools; distinct names."""
    from toolgym.envs.faults import FaultPlan, FaultPlanError, offered_tool_names
    from toolgym.toolservers.registry import default_toolset

    plans: list[FaultPlan] = []
    for path in paths:
        try:
            plan = FaultPlan.load(path)
            plan.check_tools(offered_tool_names(default_toolset(), [t for _, s in sets for t in s]))
        except FaultPlanError as exc:
            raise typer.BadParameter(exc.message, param_hint="--faults") from None
        plans.append(plan)
    names = [p.name for p in plans]
    if len(set(names)) != len(names):
        raise typer.BadParameter(f"fault plans need distinct names, got {names}", param_hint="--faults")
    return plans


def _task_paths(tasks: Sequence[Path] | None) -> list[Path]:
    from toolgym.envs.demo import default_task_paths

    paths = list(tasks) if tasks else default_task_paths()
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise typer.BadParameter(f"no such task set file: {', '.join(missing)}", param_hint="--tasks")
    return paths


class TaskFormat(StrEnum):
    toolgym = "toolgym"
    gta = "gta"
    teval = "teval"
    tooleyes = "tooleyes"
    mtu = "mtu"


FormatOption = Annotated[
    TaskFormat | None,
    typer.Option(
        "--format",
        help="format of the --tasks files: toolgym JSONL, GTA dataset.json, a T-Eval file, ToolEyes "
        "queries or MTU rows; default: told by their content",
    ),
]


def load_task_sets(paths: Sequence[Path], fmt: TaskFormat | None) -> list[tuple[Path, str, TaskSet]]:
    """(path, format, tasks) per task file; a file of the wrong shape stops the command with one
    line naming the file, the row and what is wrong (exit 2)."""
    from toolgym.evaluation.loaders.formats import TaskFileError, load_tasks

    out = []
    for path in paths:
        try:
            kind, task_set = load_tasks(path, None if fmt is None else fmt.value)
        except TaskFileError as exc:
            err_console.print(f"error: {exc}", markup=False)
            raise typer.Exit(code=2) from None
        out.append((path, kind, task_set))
    return out


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_run(summary: RunSummary) -> None:
    from toolgym.evaluation.runs import pass_k_table

    groups: dict[tuple[str, str], list[EpisodeRecord]] = {}
    for e in summary.episodes:
        groups.setdefault((e.task_set, e.task_id), []).append(e)
    title = f"toolgym run: {len(groups)} tasks x {summary.trials} trials, {summary.agent}, {summary.protocol}"
    table = Table(title=title)
    with_tokens = any(e.usage for e in summary.episodes)
    with_aborted = bool(summary.aborted)
    columns = ["set", "task", "category", "passed", "reward", "steps", "errors"]
    columns += ["tokens"] * with_tokens + ["aborted"] * with_aborted
    for column in columns:
        table.add_column(column, no_wrap=column in ("task", "passed"))
    for (set_name, task_id), records in groups.items():
        done = [r for r in records if r.status != "aborted"]
        row = [
            set_name,
            task_id,
            records[0].category or "-",
            f"{sum(r.success for r in done)}/{len(done)}",
            _fmt(sum(r.reward for r in done) / len(done) if done else None),
            _fmt(sum(r.steps for r in done) / len(done) if done else None, 1),
            str(sum(sum(r.error_counts.values()) for r in records)),
        ]
        if with_tokens:
            row.append(str(sum(int(r.usage.get("total_tokens", 0)) for r in records if r.usage)))
        if with_aborted:
            row.append(str(len(records) - len(done)))
        table.add_row(*row)
    console.print(table)
    finished = [e for e in summary.episodes if e.status != "aborted"]
    solved = sum(e.success for e in finished)
    console.print(f"success: {solved}/{len(finished)} episodes = {solved / max(len(finished), 1):.1%}")
    rows = pass_k_table(summary.episodes)
    if summary.trials > 1 and rows:
        passk = Table(title="pass@k / pass^k (tau-bench estimators, mean over tasks)")
        for column in ("k", "pass@k", "pass^k", "tasks"):
            passk.add_column(column)
        for pk in rows:
            passk.add_row(str(pk.k), f"{pk.pass_at_k:.3f}", f"{pk.pass_hat_k:.3f}", str(pk.tasks))
        console.print(passk)
    usage = summary.usage
    if usage["requests"]:
        console.print(
            f"tokens: {usage['prompt_tokens']} prompt + {usage['completion_tokens']} completion "
            f"in {usage['requests']} requests ({usage['retries']} retries)"
        )
    for e in summary.aborted:
        console.print(f"[red]aborted[/red] trial {e.trial} {e.task_set}/{e.task_id}: {e.error}")


def run(
    agent: Annotated[
        AgentKind, typer.Option(help="oracle (golden chains) or llm (a chat server)")
    ] = AgentKind.oracle,
    out: Annotated[Path, typer.Option(help="run directory: traces per trial and run.json")] = Path(
        "runs/run"
    ),
    tasks: Annotated[
        list[Path] | None,
        typer.Option(
            help="task set files (JSONL); default: the bundled demo set and every mock-app task set"
        ),
    ] = None,
    task_format: FormatOption = None,
    task_id: Annotated[list[str] | None, typer.Option("--task-id", help="run only these task ids")] = None,
    protocol: Annotated[
        str | None, typer.Option(help="react, json or openai; default: openai for llm, react for oracle")
    ] = None,
    trials: Annotated[
        int, typer.Option(min=1, help="trials per task (pass@k / pass^k need k <= trials)")
    ] = 1,
    concurrency: Annotated[int, typer.Option(min=1, help="episodes (and model requests) at once")] = 1,
    workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="episodes on N local processes (no Ray needed); with --ray, N Ray actors "
            "(default: one per CPU of the Ray cluster)",
        ),
    ] = None,
    ray: Annotated[
        bool, typer.Option("--ray", help="spread episodes over Ray actors (pip install 'toolgym\\[ray]')")
    ] = False,
    ray_address: Annotated[
        str | None,
        typer.Option(help="join this Ray cluster (auto, ray://head:10001); implies --ray; default: local"),
    ] = None,
    seed: Annotated[int, typer.Option(help="episode seed (the same for every trial)")] = 0,
    max_steps: Annotated[
        int | None,
        typer.Option(min=1, help="step limit of tasks that set none (default 10, or the preset's)"),
    ] = None,
    preset: Annotated[
        str | None,
        typer.Option(
            help="a paper's published setup (protocol, turn limit, sampling): tooleyes, gta, mtu, "
            "teval, ctooleval; options given here win"
        ),
    ] = None,
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1")
    ] = None,
    model: Annotated[str | None, typer.Option(help="model name sent in requests")] = None,
    api_key_env: Annotated[
        str | None, typer.Option(help="environment variable holding the API key (sent as a bearer token)")
    ] = None,
    temperature: Annotated[
        float | None, typer.Option(help="sampling temperature (server default if unset)")
    ] = None,
    top_p: Annotated[
        float | None, typer.Option(min=0.0, max=1.0, help="nucleus sampling top_p (server default if unset)")
    ] = None,
    few_shot: Annotated[
        Path | None,
        typer.Option(
            help="solved examples for the LLM agent (JSON list or JSONL of chat messages), put in the "
            "system message after the protocol's instructions"
        ),
    ] = None,
    llm_seed: Annotated[
        int | None,
        typer.Option(help="sampling seed; trial t sends llm_seed + t, so trials differ reproducibly"),
    ] = None,
    max_tokens: Annotated[int | None, typer.Option(help="completion token limit per request")] = None,
    timeout: Annotated[float, typer.Option(help="seconds per request before it is retried")] = 120.0,
    max_retries: Annotated[
        int, typer.Option(min=0, help="retries on 429 / 5xx / timeouts / refused connections")
    ] = 4,
    faults: Annotated[
        list[Path] | None,
        typer.Option(
            "--faults",
            help="fault plan (JSON, docs/faults.md); the run is repeated under each, in OUT/faults/<plan>/",
        ),
    ] = None,
    user_base_url: Annotated[
        str | None,
        typer.Option(
            help="play the user of tasks with a user scenario with an LLM on this OpenAI-compatible "
            "base URL (default: the rule-based user); needs --user-model"
        ),
    ] = None,
    user_model: UserModelOption = None,
    user_api_key_env: UserApiKeyEnvOption = None,
    retriever: Annotated[
        str | None,
        typer.Option(
            help="offer each task the top K tools a retriever ranks for its query instead of its own "
            "list: topK (embedder of the ml extra, else BM25), embedding:topK or bm25:topK; the "
            "rankings go to OUT/retrieval.json, which `eval` scores with NDCG@k and recall@k"
        ),
    ] = None,
) -> None:
    """Run an agent over task sets, k trials per task, n episodes at once; write traces and run.json."""
    from toolgym.envs.agents import OracleAgent
    from toolgym.envs.rollouts import AgentSpec
    from toolgym.envs.tool_env import ToolEnv
    from toolgym.evaluation.llm import ChatClient, LLMAgent, LLMConfig, LLMError, api_key_from_env
    from toolgym.evaluation.runs import FAULTS_DIR, run_trials, set_name
    from toolgym.evaluation.setups import PRESETS, FewShotError, load_few_shot
    from toolgym.protocols import PROTOCOLS
    from toolgym.tasks import TaskSet
    from toolgym.toolservers.registry import default_toolset

    setup = None
    if preset is not None:
        setup = PRESETS.get(preset)
        if setup is None:
            raise typer.BadParameter(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
        protocol = protocol or setup.protocol
        temperature = setup.temperature if temperature is None else temperature
        top_p = setup.top_p if top_p is None else top_p
    max_steps = max_steps or (setup.max_steps if setup is not None else 10)
    examples = None
    if few_shot is not None:
        if agent is not AgentKind.llm:
            raise typer.BadParameter("few-shot examples are for the LLM agent (--agent llm)")
        try:
            examples = load_few_shot(few_shot)
        except FewShotError as exc:
            raise typer.BadParameter(str(exc), param_hint="--few-shot") from None
    chosen = protocol or ("openai" if agent is AgentKind.llm else "react")
    if chosen not in PROTOCOLS:
        raise typer.BadParameter(f"unknown protocol {chosen!r}; known: {', '.join(sorted(PROTOCOLS))}")
    from toolgym.evaluation.loaders.formats import benchmark_tools

    sets: list[tuple[str, TaskSet]] = []
    toolset = default_toolset()
    for path, kind, task_set in load_task_sets(_task_paths(tasks), task_format):
        if task_id:
            task_set = TaskSet([t for t in task_set if t.id in task_id], base_dir=task_set.base_dir)
        if len(task_set):
            sets.append((set_name(path), task_set))
            # a benchmark's own tools (schemas it publishes, not run) beside the default ones
            toolset = toolset.merged(benchmark_tools(kind, path, task_set, toolset))
    if not sets:
        raise typer.BadParameter(f"no task with id {', '.join(task_id or [])}", param_hint="--task-id")
    if agent is AgentKind.oracle:
        unsolved = [f"{name}/{t.id}" for name, task_set in sets for t in task_set if not t.golden]
        if unsolved:
            more = f" and {len(unsolved) - 1} more" if len(unsolved) > 1 else ""
            raise typer.BadParameter(
                f"the oracle replays golden actions, and {unsolved[0]}{more} has none: run an LLM "
                "agent (--agent llm) on them",
                param_hint="--agent",
            )
    retrieval: dict[str, Any] | None = None
    if retriever is not None:
        from toolgym.evaluation.metrics.similarity import ModelUnavailableError
        from toolgym.evaluation.retrieval import parse_retriever, with_retrieved_tools

        try:
            sets, retrieval = with_retrieved_tools(sets, toolset, parse_retriever(retriever))
        except (ValueError, ModelUnavailableError) as exc:
            raise typer.BadParameter(str(exc), param_hint="--retriever") from None
        if retrieval.get("note"):
            console.print(f"[yellow]note[/yellow]: {retrieval['note']}", markup=True, highlight=False)
    plans = _fault_plans(faults or [], sets)  # a bad plan stops the command before any episode
    user_config = user_llm_config(user_base_url, user_model, user_api_key_env, timeout, max_retries)

    client: ChatClient | None = None
    if agent is AgentKind.llm:
        if not base_url or not model:
            raise typer.BadParameter("--agent llm needs --base-url and --model")
        try:
            key = api_key_from_env(api_key_env)
        except LLMError as exc:
            raise typer.BadParameter(exc.message, param_hint="--api-key-env") from None
        config = LLMConfig(
            base_url=base_url,
            model=model,
            api_key=key,
            temperature=temperature,
            top_p=top_p,
            seed=llm_seed,
            max_tokens=max_tokens,
            timeout_s=timeout,
            max_retries=max_retries,
            concurrency=concurrency,
        )
        client = ChatClient(config)

    def make_agent(env: ToolEnv, trial: int) -> Any:
        if client is None:
            return OracleAgent(env.protocol)
        return LLMAgent(client, env, seed=None if llm_seed is None else llm_seed + trial, few_shot=examples)

    executor = _executor(workers, ray or ray_address is not None, ray_address, concurrency)
    if executor is not None and len(toolset) != len(default_toolset()):
        raise typer.BadParameter(
            "these task files need their benchmark's tools, which workers do not build: run them "
            "without --workers / --ray",
            param_hint="--tasks",
        )
    agents: AgentSpec | Callable[[ToolEnv, int], Any] = make_agent
    if executor is not None:  # workers build their own agents from a picklable spec
        agents = AgentSpec()
        if client is not None:
            agents = AgentSpec(
                "toolgym.evaluation.rollout_agents:LLMAgents",
                {"config": client.config, "llm_seed": llm_seed, "few_shot": examples},
            )

    settings: dict[str, Any] = {"max_steps": max_steps}
    if retrieval is not None:
        settings["retriever"] = {"name": retrieval["retriever"], "k": retrieval["k"]}
    if preset is not None:
        settings["preset"] = preset
    if examples is not None:
        settings["few_shot"] = {"file": str(few_shot), "examples": len(examples)}
    if client is not None:
        settings.update(
            base_url=base_url,
            temperature=temperature,
            top_p=top_p,
            llm_seed=llm_seed,
            max_tokens=max_tokens,
            timeout_s=timeout,
        )
    user_spec = None
    if user_config is not None:
        from toolgym.envs.rollouts import UserSpec

        user_spec = UserSpec("toolgym.evaluation.users:LLMUsers", {"config": user_config})
        settings["user"] = user_settings(user_config)
    total = trials * sum(len(s) for _, s in sets)
    common: dict[str, Any] = dict(
        toolset=toolset if executor is None else None,
        protocol=chosen,
        trials=trials,
        concurrency=concurrency,
        seed=seed,
        max_steps=max_steps,
        agent_name="oracle" if client is None else f"llm:{model}",
        model=model if client is not None else None,
        settings=settings,
        executor=executor,
        user=user_spec,
    )
    try:
        with Progress(console=console, transient=True) as progress:
            bar = progress.add_task("episodes", total=total * (1 + len(plans)))
            summary = run_trials(sets, agents, out=out, on_episode=lambda r: progress.advance(bar), **common)
            # the same episodes again under each fault plan, beside the clean run
            faulted = [
                run_trials(
                    sets,
                    agents,
                    out=out / FAULTS_DIR / plan.name,
                    on_episode=lambda r: progress.advance(bar),
                    faults=plan,
                    **common,
                )
                for plan in plans
            ]
    finally:
        if client is not None:
            client.close()
    if retrieval is not None:
        from toolgym.evaluation.retrieval import write_retrieval

        write_retrieval(out, retrieval)
    print_run(summary)
    console.print(f"traces and run.json written to {out}/")
    for plan, run_summary in zip(plans, faulted, strict=True):
        console.print(f"under fault plan {plan.name} (in {out / FAULTS_DIR / plan.name}/):")
        print_run(run_summary)
    aborted = len(summary.aborted) + sum(len(f.aborted) for f in faulted)
    if aborted:
        console.print(f"[red]{aborted} episodes aborted: the results are incomplete[/red]")
        raise typer.Exit(code=1)


def user_llm_config(
    base_url: str | None, model: str | None, api_key_env: str | None, timeout: float, max_retries: int
) -> LLMConfig | None:
    """The user LLM's client settings from `--user-base-url`, `--user-model` and
    `--user-api-key-env` (None: no LLM user). Sampling is left to the server, and each request
    carries the episode seed (`LLMUser`)."""
    from toolgym.evaluation.llm import LLMConfig, LLMError, api_key_from_env

    try:
        if not wants_user_llm(base_url, model, api_key_env):
            return None
    except UserOptionsError as exc:
        raise bad_user_options(exc) from None
    assert base_url is not None and model is not None
    try:
        key = api_key_from_env(api_key_env)
    except LLMError as exc:
        raise typer.BadParameter(exc.message, param_hint="--user-api-key-env") from None
    return LLMConfig(base_url=base_url, model=model, api_key=key, timeout_s=timeout, max_retries=max_retries)


def user_settings(config: LLMConfig) -> dict[str, Any]:
    """What a run's settings record of its LLM user (never the API key)."""
    return {"simulator": f"llm:{config.model}", "model": config.model, "base_url": config.base_url}


def _executor(workers: int | None, ray: bool, address: str | None, concurrency: int) -> Executor | None:
    """The rollout executor the options ask for; None: in this process (threads)."""
    if not ray and (workers or 1) == 1:
        return None
    if concurrency > 1:
        raise typer.BadParameter(
            "--concurrency runs threads in this process; with --workers or --ray, each worker runs "
            "one episode at a time: give one or the other",
            param_hint="--concurrency",
        )
    if not ray:
        from toolgym.envs.rollouts import ProcessExecutor

        return ProcessExecutor(workers or 1)
    from toolgym.envs.ray_rollouts import RayExecutor, import_ray
    from toolgym.envs.rollouts import RolloutError

    try:
        import_ray()
    except RolloutError as exc:
        raise typer.BadParameter(str(exc), param_hint="--ray") from None
    return RayExecutor(workers, address=address)  # None: one actor per CPU of the cluster


# ---- eval ------------------------------------------------------------------------------------
def load_task_file(path: Path, fmt: str | None = None) -> TaskSet:
    """Any task file `--tasks` takes (toolgym JSONL, GTA dataset.json, T-Eval data or result
    files, ToolEyes queries, MTU-Eval rows: evaluation/loaders/formats.py), so traces can be scored
    against the benchmark's own files; a bad file is a TaskFileError (one line)."""
    from toolgym.evaluation.loaders.formats import load_tasks

    return load_tasks(path, fmt)[1]


def _combined_tasks(paths: Sequence[Path], fmt: TaskFormat | None = None) -> tuple[dict[str, Task], TaskSet]:
    from toolgym.evaluation.loaders.formats import TaskFileError
    from toolgym.evaluation.runs import load_task_index
    from toolgym.tasks import TaskSet

    try:
        index = load_task_index(paths, lambda p: load_task_file(p, None if fmt is None else fmt.value))
    except TaskFileError as exc:
        err_console.print(f"error: {exc}", markup=False)
        raise typer.Exit(code=2) from None
    except (ValueError, OSError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--tasks") from None
    return index, TaskSet(index.values())


def score_suites(
    directory: Path,
    suites: Sequence[str],
    mode: str,
    task_paths: Sequence[Path],
    fmt: TaskFormat | None = None,
) -> tuple[dict[str, SuiteResult], dict[str, str]]:
    """Each suite's result on the traces under `directory`, or why it could not score."""
    from toolgym.evaluation.base import EvaluationError
    from toolgym.evaluation.runs import load_traces
    from toolgym.evaluation.suites import get_suite

    loaded, _ = load_traces(directory)
    traces = [t.trace for t in loaded]
    index, task_set = _combined_tasks(task_paths, fmt)
    results: dict[str, SuiteResult] = {}
    failures: dict[str, str] = {}
    from toolgym.evaluation.base import by_category

    for name in suites:
        try:
            results[name] = get_suite(name).score(traces, task_set, "compat" if mode == "compat" else "fixed")
        except EvaluationError as exc:
            failures[name] = str(exc)
        else:
            results[name].by_category = by_category(results[name], index)
    # a run with --retriever left its rankings: NDCG@k and recall@k against the gold APIs
    from toolgym.evaluation.retrieval import load_retrieval, score_retrieval

    try:
        record = load_retrieval(directory)
        if record is not None:
            results["retrieval"] = score_retrieval(record, index)
    except EvaluationError as exc:
        failures["retrieval"] = str(exc)
    return results, failures


def score_mtu_pairs(
    evals: Sequence[Path], responses: Sequence[Path], mode: str
) -> tuple[dict[str, SuiteResult], dict[str, str]]:
    """MTU-Eval's own files (eval rows + model responses) through the MTU scorer, per pair."""
    from toolgym.evaluation.base import EvaluationError
    from toolgym.evaluation.metrics.mtu import score_mtu_files

    results: dict[str, SuiteResult] = {}
    failures: dict[str, str] = {}
    for eval_file, response_file in zip(evals, responses, strict=True):
        name = f"mtu:{eval_file.stem.removesuffix('_eval')}"
        try:
            results[name] = score_mtu_files(
                eval_file, response_file, "compat" if mode == "compat" else "fixed"
            )
        except EvaluationError as exc:
            failures[name] = str(exc)
    return results, failures


def score_teval_results(paths: Sequence[Path], mode: str) -> tuple[dict[str, SuiteResult], dict[str, str]]:
    """T-Eval's own result files (data with `prediction`, JSON keyed by id) scored together, as
    T-Eval's convert_results combines its subsets."""
    from toolgym.evaluation.base import EvaluationError
    from toolgym.evaluation.loaders.teval import score_teval_files

    try:
        result = score_teval_files(paths, "compat" if mode == "compat" else "fixed")
    except EvaluationError as exc:
        return {}, {"teval:results": str(exc)}
    return {"teval:results": result}, {}


def eval_command(
    directory: Annotated[
        Path | None, typer.Argument(help="a trace folder (a run directory, or any folder of traces)")
    ] = None,
    suite: Annotated[
        str, typer.Option(help="comma-separated metric suites: gta, teval, mtu, tooleyes, ctooleval")
    ] = "gta",
    mode: Annotated[
        ScoreMode, typer.Option(help="compat: the original scorer's numbers; fixed: corrected")
    ] = (ScoreMode.fixed),
    tasks: Annotated[
        list[Path] | None,
        typer.Option(
            help="task set files the traces ran on (toolgym JSONL, GTA dataset.json, T-Eval files, "
            "ToolEyes queries, MTU-Eval rows); default: bundled"
        ),
    ] = None,
    task_format: FormatOption = None,
    mtu_eval: Annotated[
        list[Path] | None, typer.Option(help="MTU-Eval rows (e.g. S-S_eval.jsonl); pair with --mtu-responses")
    ] = None,
    mtu_responses: Annotated[
        list[Path] | None,
        typer.Option(
            help="model responses to the --mtu-eval rows, one file per --mtu-eval, in the same order"
        ),
    ] = None,
    teval_results: Annotated[
        list[Path] | None,
        typer.Option(
            help="T-Eval result files (instruct_v2.json, plan_json_v2.json, ...: data with predictions, "
            "JSON keyed by id), scored together as T-Eval does"
        ),
    ] = None,
    out: Annotated[Path | None, typer.Option(help="results JSON; default: DIR/eval.<mode>.json")] = None,
    strict: Annotated[
        bool,
        typer.Option(
            help="exit non-zero when MTU rows and responses do not all pair up "
            "(a row without a response, a response without a row)"
        ),
    ] = False,
) -> None:
    """Score a trace folder with metric suites (and/or MTU-Eval response files, T-Eval result
    files); print and save."""
    evals, responses = list(mtu_eval or []), list(mtu_responses or [])
    teval_files = list(teval_results or [])
    if len(evals) != len(responses):
        raise typer.BadParameter("give one --mtu-responses per --mtu-eval", param_hint="--mtu-responses")
    missing = [str(p) for p in [*evals, *responses] if not p.is_file()]
    if missing:
        raise typer.BadParameter(f"no such file: {', '.join(missing)}", param_hint="--mtu-eval")
    missing = [str(p) for p in teval_files if not p.is_file()]
    if missing:
        raise typer.BadParameter(f"no such file: {', '.join(missing)}", param_hint="--teval-results")
    if directory is None and not evals and not teval_files:
        raise typer.BadParameter(
            "give a trace folder, MTU files with --mtu-eval/--mtu-responses, or --teval-results files"
        )
    if directory is not None and not directory.is_dir():
        raise typer.BadParameter(f"{directory} is not a directory", param_hint="DIRECTORY")
    results: dict[str, SuiteResult] = {}
    failures: dict[str, str] = {}
    if directory is not None:
        from toolgym.evaluation.runs import load_traces

        names = [s.strip() for s in suite.split(",") if s.strip()]
        if not names:
            raise typer.BadParameter("name at least one suite", param_hint="--suite")
        loaded, problems = load_traces(directory)
        for problem in problems:
            console.print(f"[yellow]skipped[/yellow] {problem}")
        console.print(f"{len(loaded)} traces in {directory}")
        results, failures = score_suites(directory, names, mode.value, _task_paths(tasks), task_format)
    if evals:
        mtu_results, mtu_failures = score_mtu_pairs(evals, responses, mode.value)
        results.update(mtu_results)
        failures.update(mtu_failures)
    if teval_files:
        teval_scores, teval_failures = score_teval_results(teval_files, mode.value)
        results.update(teval_scores)
        failures.update(teval_failures)
    for name, result in results.items():
        table = Table(title=f"{name} ({result.mode} mode)")
        table.add_column("metric")
        table.add_column("value", justify="right")
        for metric, value in result.metrics.items():
            table.add_row(metric, f"{value:.2f}")
        console.print(table)
        print_breakdowns(name, result)
        if result.counts:
            console.print("counts: " + ", ".join(f"{k} {v}" for k, v in result.counts.items()))
        for note in result.notes:
            console.print(f"note: {note}")
    for name, message in failures.items():
        console.print(f"[red]{name}: not scored[/red]: {message}")
    target = out or (directory / EVAL_FILE.format(mode=mode.value) if directory is not None else None)
    if target is not None:
        payload = {
            "mode": mode.value,
            "results": {name: r.model_dump(mode="json") for name, r in results.items()},
            "failures": failures,
        }
        # suite order kept: metrics read in the order the suite gives them (P_F1, O_F1, ...)
        target.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        console.print(f"results written to {target}")
    unpaired: dict[str, int] = {}
    if strict:
        from toolgym.evaluation.metrics.mtu import unpaired_count

        unpaired = {name: n for name, r in results.items() if (n := unpaired_count(r))}
        for name, n in unpaired.items():
            console.print(f"[red]{name}: {n} MTU rows or responses without a partner (--strict)[/red]")
    if failures or unpaired:
        raise typer.Exit(code=1)


def print_breakdowns(name: str, result: SuiteResult) -> None:
    """The result's scores per task category and its error kinds, as tables."""
    if len(result.by_category) > 1:
        keys = list(dict.fromkeys(k for row in result.by_category.values() for k in row))
        table = Table(title=f"{name}: per category (mean per-task score, % where a fraction)")
        for column in ["category", *keys]:
            table.add_column(column, justify="left" if column == "category" else "right")
        for category, scores in result.by_category.items():
            table.add_row(category, *[_fmt(scores.get(k)) for k in keys])
        console.print(table)
    from toolgym.evaluation.base import error_kinds

    kinds = error_kinds(result.counts)
    if kinds:
        columns = list(dict.fromkeys(k for row in kinds.values() for k in row))
        table = Table(title=f"{name}: errors by kind")
        for column in ["", *columns]:
            table.add_column(column, justify="left" if not column else "right")
        for group, found in kinds.items():
            table.add_row(group, *[str(found.get(c, 0)) for c in columns])
        console.print(table)


# ---- report ----------------------------------------------------------------------------------
def report_command(
    directory: Annotated[
        Path, typer.Argument(help="a trace folder (a run directory, or any folder of traces)")
    ],
    out: Annotated[Path | None, typer.Option(help="the HTML file; default: DIR/report.html")] = None,
    suite: Annotated[
        str | None,
        typer.Option(help="also score these suites now (comma-separated); eval.*.json files are read"),
    ] = None,
    mode: Annotated[ScoreMode, typer.Option(help="scoring mode for --suite")] = ScoreMode.fixed,
    tasks: Annotated[
        list[Path] | None,
        typer.Option(help="task set files the traces ran on (categories); default: the bundled sets"),
    ] = None,
    title: Annotated[str | None, typer.Option(help="report title")] = None,
) -> None:
    """Write a self-contained HTML report (plots inline) for a trace folder."""
    from toolgym.evaluation.report import collect_report_data, write_report

    if not directory.is_dir():
        raise typer.BadParameter(f"{directory} is not a directory", param_hint="DIRECTORY")
    paths = _task_paths(tasks)
    index, _ = _combined_tasks(paths)
    data = collect_report_data(directory, index, title=title)
    if suite:
        names = [s.strip() for s in suite.split(",") if s.strip()]
        results, failures = score_suites(directory, names, mode.value, paths)
        data.add_suite_results(mode.value, results, failures)
    target = out or directory / "report.html"
    write_report(data, target)
    for name, message in data.suite_failures.items():
        console.print(f"[yellow]{name} not in the report[/yellow]: {message}")
    console.print(f"{data.episode_count} episodes; report written to {target}")


def register(app: typer.Typer) -> None:
    app.command("run")(run)
    app.command("eval")(eval_command)
    app.command("report")(report_command)
