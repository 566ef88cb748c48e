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
    max_steps: Annotated[int, typer.Option(min=1, help="step limit of tasks that set none")] = 10,
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
) -> None:
    """Run an agent over task sets, k trials per task, n episodes at once; write traces and run.json."""
    from toolgym.envs.agents import OracleAgent
    from toolgym.envs.rollouts import AgentSpec
    from toolgym.envs.tool_env import ToolEnv
    from toolgym.evaluation.llm import ChatClient, LLMAgent, LLMConfig, LLMError, api_key_from_env
    from toolgym.evaluation.runs import FAULTS_DIR, run_trials, set_name
    from toolgym.protocols import PROTOCOLS
    from toolgym.tasks import TaskSet
    from toolgym.toolservers.registry import default_toolset

    chosen = protocol or ("openai" if agent is AgentKind.llm else "react")
    if chosen not in PROTOCOLS:
        raise typer.BadParameter(f"unknown protocol {chosen!r}; known: {', '.join(sorted(PROTOCOLS))}")
    sets: list[tuple[str, TaskSet]] = []
    for path in _task_paths(tasks):
        task_set = TaskSet.load(path)
        if task_id:
            task_set = TaskSet([t for t in task_set if t.id in task_id], base_dir=task_set.base_dir)
        if len(task_set):
            sets.append((set_name(path), task_set))
    if not sets:
        raise typer.BadParameter(f"no task with id {', '.join(task_id or [])}", param_hint="--task-id")
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
        return LLMAgent(client, env, seed=None if llm_seed is None else llm_seed + trial)

    executor = _executor(workers, ray or ray_address is not None, ray_address, concurrency)
    agents: AgentSpec | Callable[[ToolEnv, int], Any] = make_agent
    if executor is not None:  # workers build their own agents from a picklable spec
        agents = AgentSpec()
        if client is not None:
            agents = AgentSpec(
                "toolgym.evaluation.rollout_agents:LLMAgents", {"config": client.config, "llm_seed": llm_seed}
            )

    settings: dict[str, Any] = {"max_steps": max_steps}
    if client is not None:
        settings.update(
            base_url=base_url,
            temperature=temperature,
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
        toolset=default_toolset() if executor is None else None,
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
def load_task_file(path: Path) -> TaskSet:
    """A toolgym task set (JSONL of Task), an MTU-Eval file (rows of {id, question, answer}) read
    through the MTU loader, or a T-Eval data or result file (one JSON object keyed by id) read
    through the T-Eval loader, so traces can be scored against the benchmark's own files."""
    from toolgym.evaluation.loaders.teval import is_teval_file, load_teval_file
    from toolgym.tasks import TaskSet

    if is_teval_file(path):
        return load_teval_file(path)
    with path.open(encoding="utf-8") as fh:
        first = next((line for line in fh if line.strip()), "")
    try:
        row = json.loads(first) if first else None
    except ValueError:
        row = None  # TaskSet.load reports the bad line with its number
    if isinstance(row, dict) and {"question", "answer"} <= row.keys() and "query" not in row:
        from toolgym.evaluation.loaders.mtu import load_mtu_tasks

        return load_mtu_tasks(path)
    return TaskSet.load(path)


def _combined_tasks(paths: Sequence[Path]) -> tuple[dict[str, Task], TaskSet]:
    from toolgym.evaluation.runs import load_task_index
    from toolgym.tasks import TaskSet

    try:
        index = load_task_index(paths, load_task_file)
    except (ValueError, OSError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--tasks") from None
    return index, TaskSet(index.values())


def score_suites(
    directory: Path, suites: Sequence[str], mode: str, task_paths: Sequence[Path]
) -> tuple[dict[str, SuiteResult], dict[str, str]]:
    """Each suite's result on the traces under `directory`, or why it could not score."""
    from toolgym.evaluation.base import EvaluationError
    from toolgym.evaluation.runs import load_traces
    from toolgym.evaluation.suites import get_suite

    loaded, _ = load_traces(directory)
    traces = [t.trace for t in loaded]
    _, task_set = _combined_tasks(task_paths)
    results: dict[str, SuiteResult] = {}
    failures: dict[str, str] = {}
    for name in suites:
        try:
            results[name] = get_suite(name).score(traces, task_set, "compat" if mode == "compat" else "fixed")
        except EvaluationError as exc:
            failures[name] = str(exc)
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
            help="task set files the traces ran on (toolgym JSONL or MTU-Eval rows); default: bundled"
        ),
    ] = None,
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
        results, failures = score_suites(directory, names, mode.value, _task_paths(tasks))
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


# ---- export ----------------------------------------------------------------------------------
def export_command(
    directory: Annotated[
        Path, typer.Argument(help="a trace folder (a run directory, or any folder of traces)")
    ],
    fmt: Annotated[
        str,
        typer.Option(
            "--format", help="openai, hf, sharegpt, preference (best vs worst trial), tokens, otel (spans)"
        ),
    ] = "openai",
    out: Annotated[
        Path | None, typer.Option(help="the JSONL file; default: DIR/export.<format>.jsonl")
    ] = None,
    tasks: Annotated[
        list[Path] | None, typer.Option(help="task set files the traces ran on; default: the bundled sets")
    ] = None,
    min_reward: Annotated[float | None, typer.Option(help="keep episodes with at least this reward")] = None,
    passed_only: Annotated[bool, typer.Option(help="keep only passed episodes (reward 1)")] = False,
    task_set: Annotated[list[str] | None, typer.Option(help="keep these task sets (folder names)")] = None,
    category: Annotated[list[str] | None, typer.Option(help="keep these task categories")] = None,
    otlp_endpoint: Annotated[
        str | None,
        typer.Option(
            help="--format otel: an OTLP/HTTP traces endpoint (default: spans as JSON lines in --out)"
        ),
    ] = None,
    strip_metadata: Annotated[
        bool,
        typer.Option(
            help="openai, preference: leave out each record's `metadata` (OpenAI's upload takes only "
            "the format's own keys)"
        ),
    ] = False,
) -> None:
    """Export a run's episodes as training data (OpenAI fine-tuning, TRL/datasets, ShareGPT,
    preference pairs, token trajectories) or as OpenTelemetry spans."""
    from toolgym.evaluation.export import (
        EpisodeFilter,
        ExportError,
        ExportFormat,
        export_records,
        finished_episodes,
        write_jsonl,
    )
    from toolgym.evaluation.runs import load_traces

    try:
        chosen = ExportFormat(fmt)
    except ValueError:
        raise typer.BadParameter(
            f"{fmt!r}: choose one of {', '.join(f.value for f in ExportFormat)}", param_hint="--format"
        ) from None
    if not directory.is_dir():
        raise typer.BadParameter(f"{directory} is not a directory", param_hint="DIRECTORY")
    index, _ = _combined_tasks(_task_paths(tasks))
    loaded, problems = load_traces(directory)
    for problem in problems:
        console.print(f"[yellow]skipped[/yellow] {problem}")
    keep = EpisodeFilter(
        min_reward=min_reward,
        passed_only=passed_only,
        task_sets=frozenset(task_set or ()),
        categories=frozenset(category or ()),
    )
    try:
        episodes = finished_episodes(loaded, index, keep)
    except ExportError as exc:
        raise typer.BadParameter(str(exc), param_hint="--tasks") from None
    suffix = "otel.jsonl" if chosen is ExportFormat.otel else f"{chosen.value}.jsonl"
    target = out or directory / f"export.{suffix}"
    if chosen is ExportFormat.otel:
        from toolgym.evaluation.otel import OTEL_MISSING, export_spans

        try:
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
        except ImportError:
            console.print(f"[red]{OTEL_MISSING}[/red]")
            raise typer.Exit(code=2) from None
        exporter: SpanExporter
        if otlp_endpoint is not None:
            try:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            except ImportError:
                console.print("[red]--otlp-endpoint needs opentelemetry-exporter-otlp-proto-http[/red]")
                raise typer.Exit(code=2) from None
            exporter = OTLPSpanExporter(endpoint=otlp_endpoint)
        else:
            from opentelemetry.sdk.trace.export import ConsoleSpanExporter

            target.parent.mkdir(parents=True, exist_ok=True)
            sink = target.open("w", encoding="utf-8")
            exporter = ConsoleSpanExporter(out=sink, formatter=lambda span: span.to_json(indent=None) + "\n")
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        try:
            count = export_spans(episodes, provider)
        finally:
            provider.shutdown()
            if otlp_endpoint is None:
                sink.close()
        where = otlp_endpoint or str(target)
        console.print(f"{len(episodes)} episodes; {count} spans sent to {where}")
        return
    records = export_records(episodes, chosen)
    if strip_metadata:
        records = [{k: v for k, v in r.items() if k != "metadata"} for r in records]
    n = write_jsonl(records, target)
    console.print(f"{len(episodes)} episodes kept; {n} {chosen.value} records written to {target}")


def register(app: typer.Typer) -> None:
    app.command("run")(run)
    app.command("eval")(eval_command)
    app.command("report")(report_command)
    app.command("export")(export_command)
