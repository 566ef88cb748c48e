"""`toolgym run`, `toolgym eval` and `toolgym report`: run agents over task sets, score trace
folders with metric suites, and write an HTML report. `register(app)` adds them to the CLI."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape  # messages quote pip extras: toolgym[ml] is no markup tag
from rich.progress import Progress
from rich.table import Table

from toolgym.envs.user_options import (
    UserApiKeyEnvOption,
    UserModelOption,
    UserOptionsError,
    bad_user_options,
    wants_user_llm,
)
from toolgym.files import write_atomically
from toolgym.recorder.commands import task_set_paths
from toolgym.toolservers.commands import TokenOption

if TYPE_CHECKING:
    from toolgym.envs.faults import FaultPlan
    from toolgym.envs.ray_rollouts import ToolServerSpec
    from toolgym.envs.rollouts import Cancel, Executor
    from toolgym.envs.tool_env import ToolEnv
    from toolgym.evaluation.base import SuiteResult
    from toolgym.evaluation.llm import LLMConfig
    from toolgym.evaluation.runs import EpisodeRecord, LoadedTrace, RunSummary
    from toolgym.tasks import Task, TaskSet
    from toolgym.tools import ToolSet

console = Console()
err_console = Console(stderr=True, highlight=False, soft_wrap=True)

TOOL_SERVER_TOKEN_ENV = "TOOLGYM_TOOL_SERVER_TOKEN"  # the tool-server actor's bearer token
EVAL_FILE = "eval.{mode}.json"  # what `toolgym eval` writes into the trace folder; `report` reads it


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
        console.print(f"[red]aborted[/red] trial {e.trial} {e.task_set}/{e.task_id}: {escape(str(e.error))}")


AGENT_HELP = (
    "oracle (golden chains), llm (a chat server: --base-url, --model), hf:PATH[#FILE.gguf] or "
    "hf:smollm2 (a local model in this process, transformers), scripted:FILE (actions per task, "
    "JSONL) or package.module:factory (your own agent; README: 'Your own agent')"
)


def default_run_dir(root: Path = Path("runs")) -> Path:
    """A new folder per run (runs/run-<UTC time>), never an earlier run's."""
    from datetime import UTC, datetime

    base = root / datetime.now(UTC).strftime("run-%Y%m%d-%H%M%S")
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def resume_command(ctx: typer.Context, out: Path) -> str:
    """The command line that finishes this run: the options given (those off their defaults),
    into the same folder, never with --overwrite (which would start it over)."""
    import shlex

    args = ["toolgym", ctx.info_name or "run"]
    for param in ctx.command.params:
        value = ctx.params.get(param.name or "")
        if param.name in ("out", "overwrite") or value is None or value == param.default or value == []:
            continue
        option = max(param.opts, key=len)  # the long spelling
        if getattr(param, "is_flag", False):
            args += [option] if value else []
        elif isinstance(value, (list, tuple)):
            for item in value:
                args += [option, str(item)]
        else:
            args += [option, str(value.value if isinstance(value, StrEnum) else value)]
    return shlex.join([*args, "--out", str(out)])


class RunProgress:
    """Progress of a run: a live bar on a terminal; elsewhere (CI, a pipe) one line every
    `every_s` seconds and at the end: done/total, rate, ETA, aborted episodes."""

    def __init__(self, total: int, *, every_s: float | None = None) -> None:
        import os
        import time

        self.total, self.done, self.aborted = total, 0, 0
        self._clock = time.monotonic
        self._start = self._last = self._clock()
        self.every_s = (
            every_s if every_s is not None else float(os.environ.get("TOOLGYM_PROGRESS_EVERY", "10"))
        )
        self._bar: Progress | None = None
        if console.is_terminal:
            self._bar = Progress(console=console, transient=True)
            self._task = self._bar.add_task("episodes", total=total)

    def __enter__(self) -> RunProgress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
        elif self.done and self._last != self._clock():
            self._log()

    def advance(self, record: EpisodeRecord) -> None:
        self.done += 1
        self.aborted += record.status == "aborted"
        if self._bar is not None:
            self._bar.advance(self._task)
        elif self.done == self.total or self._clock() - self._last >= self.every_s:
            self._log()

    def _log(self) -> None:
        self._last = now = self._clock()
        elapsed = max(now - self._start, 1e-9)
        rate = self.done / elapsed
        eta = (self.total - self.done) / rate if rate else float("inf")
        console.print(
            f"progress: {self.done}/{self.total} episodes, {rate:.2f}/s, "
            f"ETA {eta:.0f} s, {self.aborted} aborted, {elapsed:.0f} s elapsed",
            highlight=False,
        )


@contextmanager
def cancel_on_signals(cancel: Cancel) -> Iterator[list[int]]:
    """Ctrl-C and SIGTERM stop the run gracefully (no new episode, in-flight ones cancelled after
    a grace); a second signal stops at once. Yields the signals received."""
    import signal
    import threading

    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received  # signal handlers live in the main thread only
        return

    def handler(signum: int, frame: object) -> None:
        received.append(signum)
        if cancel.is_set():
            raise KeyboardInterrupt  # the second signal: no more grace
        cancel.set(f"interrupted by {signal.Signals(signum).name}")
        print(f"toolgym: {signal.Signals(signum).name}: stopping (again to stop at once)", file=sys.stderr)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def stoppable_by_signals() -> None:
    """Make SIGINT and SIGTERM raise KeyboardInterrupt in this process, as a server that says
    "Ctrl-C stops it" must: a process inherits ignored and blocked signals from whatever started
    it (a shell's background job ignores SIGINT; a parent's thread may block it), and would then
    never stop."""
    import signal

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, interrupt)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


@contextmanager
def human_output_to_stderr(enabled: bool) -> Iterator[None]:
    """With --json, stdout carries the JSON alone: tables and messages go to stderr."""
    if not enabled:
        yield
        return
    saved = console.file
    console.file = sys.stderr
    try:
        yield
    finally:
        console.file = saved


def run(
    ctx: typer.Context,
    agent: Annotated[str, typer.Option(help=AGENT_HELP)] = "oracle",
    out: Annotated[
        Path | None,
        typer.Option(
            help="run directory: traces per trial and run.json (default: a new runs/run-<time>/); "
            "a directory holding the same run resumes it"
        ),
    ] = None,
    tasks: Annotated[
        list[str] | None,
        typer.Option(
            help="task set files (JSONL) or bundled set names (`toolgym tasks` lists them); "
            "default: the bundled demo set and every mock-app task set"
        ),
    ] = None,
    task_format: FormatOption = None,
    task_id: Annotated[list[str] | None, typer.Option("--task-id", help="run only these task ids")] = None,
    mode: Annotated[
        str,
        typer.Option(
            help="end-to-end: the agent's actions run; step: teacher-forced, the agent predicts each "
            "golden step given the golden history (GTA's and MTU's step metrics score it)"
        ),
    ] = "end-to-end",
    protocol: Annotated[
        str | None,
        typer.Option(
            help="react, json, openai or responses; default: openai for llm (responses with "
            "--api responses), react otherwise"
        ),
    ] = None,
    api: Annotated[
        str | None,
        typer.Option(
            help="the API the LLM agent calls: chat (/v1/chat/completions) or responses "
            "(/v1/responses); default: responses for --protocol responses, chat otherwise"
        ),
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
    ray_ready_timeout: Annotated[
        float | None,
        typer.Option(
            min=0.1,
            help="seconds a Ray actor may take to be placed and started (default 60; a replacement for "
            "one on a lost node may never be); then its episodes go to the other actors, or abort if "
            "none is left",
        ),
    ] = None,
    ray_tool_server_gpus: Annotated[
        float | None,
        typer.Option(
            min=0,
            help="place a tool server as its own Ray actor asking for this many GPUs (0: CPU only); "
            "the rollout actors call its tools over HTTP; implies --ray",
        ),
    ] = None,
    ray_tool_server_tool: Annotated[
        list[str] | None,
        typer.Option(
            "--ray-tool-server-tool",
            help="a tool the tool-server actor serves (repeat; default: every tool); the others stay "
            "in the rollout actors",
        ),
    ] = None,
    ray_tool_server_host: Annotated[
        str,
        typer.Option(
            help="address the tool-server actor binds: loopback (one machine), or on a cluster the "
            "GPU node's address, with TOOLGYM_TOOL_SERVER_TOKEN set (16+ chars)"
        ),
    ] = "127.0.0.1",
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
    limit: Annotated[
        str | None,
        typer.Option(help="run only episodes N (the first N) or A:B (A to B-1), in (trial, set, task) order"),
    ] = None,
    retry_aborted: Annotated[
        bool,
        typer.Option(
            "--retry-aborted",
            help="resuming: run again the episodes that infra errors aborted (kept otherwise)",
        ),
    ] = False,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="replace the run in --out instead of resuming it")
    ] = False,
    max_consecutive_aborts: Annotated[
        int,
        typer.Option(min=0, help="stop the run after this many aborted episodes in a row (0: never)"),
    ] = 5,
    json_output: Annotated[
        bool, typer.Option("--json", help="print the run summary (run.json) as JSON on stdout")
    ] = False,
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1")
    ] = None,
    model: Annotated[str | None, typer.Option(help="model name sent in requests")] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            help="environment variable holding the API key (sent as a bearer token); default: "
            "OPENAI_API_KEY when it is set"
        ),
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
    tools_in_prompt: Annotated[
        bool,
        typer.Option(
            "--tools-in-prompt",
            help="openai/responses protocols: list the tool schemas in the system message too, not "
            "only in the request's tools (for a server whose chat template renders no tools)",
        ),
    ] = False,
    llm_seed: Annotated[
        int | None,
        typer.Option(help="sampling seed; trial t sends llm_seed + t, so trials differ reproducibly"),
    ] = None,
    max_tokens: Annotated[int | None, typer.Option(help="completion token limit per request")] = None,
    token_ids: Annotated[
        bool,
        typer.Option(
            "--token-ids",
            help="ask the model server for each turn's token ids and logprobs (vLLM's return_token_ids; "
            "chat API) and keep them in the traces, for `toolgym export --format tokens`",
        ),
    ] = False,
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
    simulator_base_url: Annotated[
        str | None,
        typer.Option(
            help="answer simulated tools (docs/simulated-tools.md) with an LLM on this "
            "OpenAI-compatible base URL (default: the deterministic simulator); needs --simulator-model"
        ),
    ] = None,
    simulator_model: Annotated[str | None, typer.Option(help="the simulator LLM's model name")] = None,
    simulator_api_key_env: Annotated[
        str | None, typer.Option(help="environment variable holding the simulator LLM's API key")
    ] = None,
    retriever: Annotated[
        str | None,
        typer.Option(
            help="offer each task the top K tools a retriever ranks for its query instead of its own "
            "list: topK (embedder of the ml extra, else BM25), embedding:topK or bm25:topK; the "
            "rankings go to OUT/retrieval.json, which `eval` scores with NDCG@k and recall@k"
        ),
    ] = None,
) -> None:
    """Run an agent over task sets, k trials per task, n episodes at once; write traces and run.json.
    Ctrl-C stops it cleanly; the same command (same --out) resumes it."""
    from toolgym.envs.rollouts import AgentSpec, Cancel
    from toolgym.evaluation.llm import (
        API_PATHS,
        API_PROTOCOLS,
        DEFAULT_KEY_ENV,
        ChatClient,
        LLMAgent,
        LLMConfig,
        LLMError,
        api_key_from_env,
        preflight,
    )
    from toolgym.evaluation.runs import FAULTS_DIR, RunDirError, parse_limit, run_trials, set_name
    from toolgym.evaluation.setups import PRESETS, FewShotError, load_few_shot, tools_in_prompt_refusal
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
        if agent != "llm" and not agent.startswith("hf:"):
            raise typer.BadParameter("few-shot examples are for the LLM agents (--agent llm, hf:...)")
        try:
            examples = load_few_shot(few_shot)
        except FewShotError as exc:
            raise typer.BadParameter(str(exc), param_hint="--few-shot") from None
    llm = agent == "llm"
    if token_ids and not llm:
        raise typer.BadParameter("--token-ids is for the LLM agent (--agent llm)", param_hint="--token-ids")
    if api is not None and api not in API_PATHS:
        raise typer.BadParameter(f"unknown API {api!r}; known: {', '.join(API_PATHS)}", param_hint="--api")
    if api is not None and not llm:
        raise typer.BadParameter("--api is for the LLM agent (--agent llm)", param_hint="--api")
    chosen_api = api or ("responses" if protocol == "responses" else "chat")
    chosen = protocol or (("responses" if chosen_api == "responses" else "openai") if llm else "react")
    if chosen not in PROTOCOLS:
        raise typer.BadParameter(f"unknown protocol {chosen!r}; known: {', '.join(sorted(PROTOCOLS))}")
    if llm and chosen not in API_PROTOCOLS[chosen_api]:
        raise typer.BadParameter(
            f"the LLM agent speaks {', '.join(API_PROTOCOLS[chosen_api])} over "
            f"/v1{API_PATHS[chosen_api]}, not {chosen!r} (--api picks the API)",
            param_hint="--protocol",
        )
    if tools_in_prompt and not (llm and chosen in ("openai", "responses")):
        message = tools_in_prompt_refusal(chosen) if llm else "--tools-in-prompt is for --agent llm"
        raise typer.BadParameter(message, param_hint="--tools-in-prompt")
    if token_ids and chosen_api != "chat":
        raise typer.BadParameter("token ids come over the chat API (--api chat)", param_hint="--token-ids")
    named_agent: AgentSpec | None = None
    hf_settings: dict[str, Any] = {}
    if agent.startswith("hf:"):  # a model in this process (toolgym.evaluation.hf_agent)
        from toolgym.evaluation.hf_agent import hf_run_agent

        try:
            named_agent, hf_settings = hf_run_agent(
                agent,
                protocol=chosen,
                max_tokens=max_tokens,
                temperature=temperature,
                top_p=top_p,
                llm_seed=llm_seed,
                few_shot=examples,
            )
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--agent") from None
    elif not llm:
        try:
            named_agent = AgentSpec.named(agent)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--agent") from None
    try:
        episodes_slice = parse_limit(limit) if limit is not None else None
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--limit") from None
    from toolgym.evaluation.loaders.formats import benchmark_tools

    sets: list[tuple[str, TaskSet]] = []
    toolset = default_toolset()
    for path, kind, task_set in load_task_sets(task_set_paths(tasks), task_format):
        if task_id:
            task_set = TaskSet([t for t in task_set if t.id in task_id], base_dir=task_set.base_dir)
        if len(task_set):
            sets.append((set_name(path), task_set))
            # a benchmark's own tools (schemas it publishes, not run) beside the default ones
            toolset = toolset.merged(benchmark_tools(kind, path, task_set, toolset))
    if not sets:
        raise typer.BadParameter(f"no task with id {', '.join(task_id or [])}", param_hint="--task-id")
    if mode not in ("end-to-end", "step"):
        raise typer.BadParameter(f"unknown mode {mode!r}; known: end-to-end, step", param_hint="--mode")
    if agent == "oracle" or mode == "step":
        unsolved = [f"{name}/{t.id}" for name, task_set in sets for t in task_set if not t.golden]
        if unsolved:
            more = f" and {len(unsolved) - 1} more" if len(unsolved) > 1 else ""
            raise typer.BadParameter(
                f"step mode teacher-forces each task's golden chain, and {unsolved[0]}{more} has none: "
                "run them end to end (--mode end-to-end)"
                if mode == "step"
                else f"the oracle replays golden actions, and {unsolved[0]}{more} has none: run an LLM "
                "agent (--agent llm) on them",
                param_hint="--mode" if mode == "step" else "--agent",
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
    if llm:
        if not base_url or not model:
            raise typer.BadParameter("--agent llm needs --base-url and --model")
        try:
            key = api_key_from_env(api_key_env, default=DEFAULT_KEY_ENV)
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
            api="responses" if chosen_api == "responses" else "chat",
            token_ids=token_ids,
        )
        try:
            preflight(config)  # a dead server, a wrong key or model: one line now, not per episode
        except LLMError as exc:
            raise typer.BadParameter(exc.message, param_hint="--base-url") from None
        client = ChatClient(config)

    def make_agent(env: ToolEnv, trial: int) -> Any:
        assert client is not None
        seed = None if llm_seed is None else llm_seed + trial
        return LLMAgent(client, env, seed=seed, few_shot=examples, tools_in_prompt=tools_in_prompt)

    tool_server = _tool_server(
        ray_tool_server_gpus, ray_tool_server_tool, ray_tool_server_host, default_toolset
    )
    executor = _executor(
        workers,
        ray or ray_address is not None or tool_server is not None,
        ray_address,
        concurrency,
        tool_server,
        ray_ready_timeout,
    )
    if executor is not None and len(toolset) != len(default_toolset()):
        raise typer.BadParameter(
            "these task files need their benchmark's tools, which workers do not build: run them "
            "without --workers / --ray",
            param_hint="--tasks",
        )
    agents: AgentSpec | Callable[[ToolEnv, int], Any] = named_agent or make_agent
    if executor is not None and client is not None:  # workers build their own agents from a picklable spec
        agents = AgentSpec(
            "toolgym.evaluation.rollout_agents:LLMAgents",
            {
                "config": client.config,
                "llm_seed": llm_seed,
                "few_shot": examples,
                "tools_in_prompt": tools_in_prompt,
            },
        )

    settings: dict[str, Any] = {"max_steps": max_steps, **hf_settings}
    if retrieval is not None:
        settings["retriever"] = {"name": retrieval["retriever"], "k": retrieval["k"]}
    if preset is not None:
        settings["preset"] = preset
    if examples is not None:
        settings["few_shot"] = {"file": str(few_shot), "examples": len(examples)}
    if client is not None:
        settings.update(
            base_url=base_url,
            api=chosen_api,
            temperature=temperature,
            top_p=top_p,
            llm_seed=llm_seed,
            max_tokens=max_tokens,
            timeout_s=timeout,
        )
        if token_ids:
            settings["token_ids"] = True
        if tools_in_prompt:
            settings["tools_in_prompt"] = True
    user_spec = None
    if user_config is not None:
        from toolgym.envs.rollouts import UserSpec

        user_spec = UserSpec("toolgym.evaluation.users:LLMUsers", {"config": user_config})
        settings["user"] = user_settings(user_config)
    worlds = None
    if simulator_base_url or simulator_model:
        if not (simulator_base_url and simulator_model):
            raise typer.BadParameter("give --simulator-base-url and --simulator-model together")
        from toolgym.envs.rollouts import WorldSpec

        try:
            simulator_key = api_key_from_env(simulator_api_key_env)
        except LLMError as exc:
            raise typer.BadParameter(exc.message, param_hint="--simulator-api-key-env") from None
        simulator_config = LLMConfig(
            base_url=simulator_base_url,
            model=simulator_model,
            api_key=simulator_key,
            timeout_s=timeout,
            max_retries=max_retries,
        )
        worlds = WorldSpec("toolgym.evaluation.simulators:LLMSimulatedWorlds", {"config": simulator_config})
        settings["simulator"] = {
            "backend": "simulated:llm",
            "model": simulator_model,
            "base_url": simulator_base_url,
        }
    run_dir = out or default_run_dir()
    total = trials * sum(len(s) for _, s in sets)
    if episodes_slice is not None:
        total = len(range(total)[episodes_slice])
    cancel = Cancel()
    common: dict[str, Any] = dict(
        toolset=toolset if executor is None else None,
        protocol=chosen,
        trials=trials,
        concurrency=concurrency,
        seed=seed,
        max_steps=max_steps,
        agent_name=f"llm:{model}" if client is not None else agent,
        model=model if client is not None else None,
        settings=settings,
        executor=executor,
        user=user_spec,
        limit=episodes_slice,
        retry_aborted=retry_aborted,
        overwrite=overwrite,
        cancel=cancel,
        max_consecutive_aborts=max_consecutive_aborts or None,
        resume=resume_command(ctx, run_dir),
        worlds=worlds,
        mode="step" if mode == "step" else "end-to-end",
    )
    faulted: list[RunSummary] = []
    with human_output_to_stderr(json_output), cancel_on_signals(cancel) as signals:
        try:
            with RunProgress(total * (1 + len(plans))) as progress:
                summary = run_trials(sets, agents, out=run_dir, on_episode=progress.advance, **common)
                # the same episodes again under each fault plan, beside the clean run
                for plan in plans:
                    if cancel.is_set():
                        break
                    faulted.append(
                        run_trials(
                            sets,
                            agents,
                            out=run_dir / FAULTS_DIR / plan.name,
                            on_episode=progress.advance,
                            faults=plan,
                            **{**common, "overwrite": overwrite},
                        )
                    )
        except RunDirError as exc:
            raise typer.BadParameter(str(exc), param_hint="--out") from None
        except OSError as exc:  # a full disk: run.json's `stopped` says so (where it could be written)
            raise OSError(
                exc.errno,
                f"{exc.strerror or exc}; the run stopped, resume with: {common['resume']}",
                exc.filename,
            ) from exc
        finally:
            if client is not None and not cancel.is_set():
                client.close()  # a cancelled run may leave requests in flight on it: let exit end them
        if retrieval is not None:
            from toolgym.evaluation.retrieval import write_retrieval

            write_retrieval(run_dir, retrieval)
        print_run(summary)
        if client is not None and client.turns_without_tokens:
            console.print(
                f"note: --token-ids, but {client.turns_without_tokens} answers came without token ids "
                "(prompt_token_ids / token_ids): their steps keep no tokens; vLLM >= 0.10.2 returns them",
                highlight=False,
            )
        if tool_server is not None:
            print_tool_server(tool_server, executor)
        console.print(f"traces and run.json written to {run_dir}/")
        if progress.done:
            _note_stale_results(run_dir)
        for plan, run_summary in zip(plans, faulted, strict=False):
            console.print(f"under fault plan {plan.name} (in {run_dir / FAULTS_DIR / plan.name}/):")
            print_run(run_summary)
        if json_output:
            print(json.dumps(summary.to_json(), indent=2, sort_keys=True))
    stopped = next((r for r in [summary, *faulted] if r.stopped), None)
    if stopped is not None:
        console.print(
            f"[red]stopped: {stopped.stopped}[/red]; {len(stopped.cancelled)} episodes cancelled in flight",
            highlight=False,
        )
        console.print(f"resume with: {stopped.resume}", highlight=False, soft_wrap=True)
        raise typer.Exit(code=128 + signals[0] if signals else 1)
    aborted = len(summary.aborted) + sum(len(f.aborted) for f in faulted)
    if aborted:
        console.print(f"[red]{aborted} episodes aborted: the results are incomplete[/red]")
        console.print(
            f"rerun them with: {resume_command(ctx, run_dir)} --retry-aborted",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(code=1)


def _note_stale_results(run_dir: Path) -> None:
    """Episodes were added to a run that eval or report had already read: say so (the report
    flags such results too, by the traces' digest)."""
    from toolgym.evaluation.runs import OWN_FILES

    older = sorted(p.name for pattern in OWN_FILES for p in run_dir.glob(pattern))
    if older:
        console.print(
            f"note: {', '.join(older)} describe the run before these episodes; run toolgym eval / report again",
            highlight=False,
        )


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


def _tool_server(
    gpus: float | None, tools: list[str] | None, host: str, toolset: Callable[[], ToolSet]
) -> ToolServerSpec | None:
    """The tool-server actor the `--ray-tool-server-*` options ask for (None: none)."""
    if gpus is None:
        if tools or host != "127.0.0.1":
            raise typer.BadParameter(
                "--ray-tool-server-tool and --ray-tool-server-host need --ray-tool-server-gpus",
                param_hint="--ray-tool-server-gpus",
            )
        return None
    from toolgym.envs.ray_rollouts import ToolServerSpec
    from toolgym.http import InsecureBindError, check_bind

    known = set(toolset().names)
    unknown = [t for t in tools or [] if t not in known]
    if unknown:
        raise typer.BadParameter(
            f"unknown tools {unknown}; known: {', '.join(sorted(known))}", param_hint="--ray-tool-server-tool"
        )
    token = os.environ.get(TOOL_SERVER_TOKEN_ENV) or None
    try:
        check_bind(host, token)
    except InsecureBindError as exc:
        raise typer.BadParameter(
            f"{str(exc).split(';')[0]}: set {TOOL_SERVER_TOKEN_ENV} (16+ characters), which the "
            "rollout actors send",
            param_hint="--ray-tool-server-host",
        ) from None
    # the actor asks for GPUs only: its server thread waits on I/O, the rollout actors get the CPUs
    return ToolServerSpec(
        tools=tuple(tools) if tools else None, num_gpus=gpus, num_cpus=0, host=host, token=token
    )


def print_tool_server(spec: ToolServerSpec, executor: Executor | None) -> None:
    """What the run placed: the tool-server actor's tools, its request and the GPUs Ray gave it."""
    from toolgym.envs.ray_rollouts import RayExecutor

    assert isinstance(executor, RayExecutor)
    held = executor.stats.server_accelerators
    given = ", ".join(f"{kind} {' '.join(ids)}" for kind, ids in sorted(held.items())) or "no accelerator"
    tools = ", ".join(spec.tools) if spec.tools else "every tool"
    console.print(
        f"tool-server actor: {tools} at {spec.host}, asked num_gpus={spec.num_gpus:g}, Ray gave it {given}"
    )


def _executor(
    workers: int | None,
    ray: bool,
    address: str | None,
    concurrency: int,
    tool_server: ToolServerSpec | None = None,
    ready_timeout_s: float | None = None,
) -> Executor | None:
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
    from toolgym.envs.ray_rollouts import RayAccessRefused, RayExecutor, import_ray
    from toolgym.envs.rollouts import RolloutError

    try:
        import_ray()
    except RolloutError as exc:
        raise typer.BadParameter(str(exc), param_hint="--ray") from None
    # workers None: one actor per CPU of the cluster
    executor = RayExecutor(workers, address=address, tool_server=tool_server)
    if ready_timeout_s is not None:  # None: the executor's default
        executor.ready_timeout_s = ready_timeout_s
    try:
        executor.check_access()  # a cluster that refuses our token: one line now, before any episode
    except RayAccessRefused as exc:
        raise typer.BadParameter(str(exc), param_hint="--ray-address") from None
    return executor


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


def suite_names(suite: str) -> list[str]:
    """The `--suite` list, checked against the registry before anything is read."""
    from toolgym.evaluation.suites import SUITES

    names = [s.strip() for s in suite.split(",") if s.strip()]
    if not names:
        raise typer.BadParameter("name at least one suite", param_hint="--suite")
    unknown = [n for n in names if n not in SUITES]
    if unknown:
        raise typer.BadParameter(
            f"unknown metric suite {', '.join(unknown)}; known: {', '.join(sorted(SUITES))}",
            param_hint="--suite",
        )
    return names


def score_suites(
    directory: Path,
    suites: Sequence[str],
    mode: str,
    task_paths: Sequence[Path],
    fmt: TaskFormat | None = None,
    *,
    loaded: Sequence[LoadedTrace] | None = None,
) -> tuple[dict[str, SuiteResult], dict[str, str]]:
    """Each suite's result on the traces of `directory` (or the `loaded` ones), or why it could not
    score. A suite scores the traces of its own benchmark and of task sets of no benchmark; it
    counts the others apart (`skipped_other_benchmark`) and says so in a note."""
    from toolgym.evaluation.base import EvaluationError
    from toolgym.evaluation.runs import load_traces
    from toolgym.evaluation.suites import applicable, benchmark_of, get_suite

    if loaded is None:
        loaded, _ = load_traces(directory)
    # an episode its infrastructure aborted (an env-service trace ends `aborted`) is never scored
    loaded = [t for t in loaded if t.trace.end is None or t.trace.end.status != "aborted"]
    index, task_set = _combined_tasks(task_paths, fmt)
    benchmarks = [
        benchmark_of(
            index[t.trace.header.task_id].metadata if t.trace.header.task_id in index else None, t.task_set
        )
        for t in loaded
    ]
    results: dict[str, SuiteResult] = {}
    failures: dict[str, str] = {}
    from toolgym.evaluation.base import by_category

    for name in suites:
        keep, skipped = applicable(name, benchmarks)
        others = ", ".join(f"{bench} {n}" for bench, n in sorted(skipped.items()))
        if not keep:
            failures[name] = f"none of the {len(loaded)} traces is a {name} task" + (
                f" (they belong to: {others})" if others else ""
            )
            continue
        try:
            result = get_suite(name).score(
                [loaded[i].trace for i in keep], task_set, "compat" if mode == "compat" else "fixed"
            )
        except EvaluationError as exc:
            failures[name] = str(exc)
            continue
        if skipped:
            result.counts["skipped_other_benchmark"] = sum(skipped.values())
            result.notes.append(
                f"{sum(skipped.values())} traces of other benchmarks not scored by {name}: {others}"
            )
        result.by_category = by_category(result, index)
        results[name] = result
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
    directories: Annotated[
        list[Path] | None,
        typer.Argument(help="run directories (or folders of traces); each gets its own eval.<mode>.json"),
    ] = None,
    suite: Annotated[
        str, typer.Option(help="comma-separated metric suites: gta, teval, mtu, tooleyes, ctooleval")
    ] = "gta",
    mode: Annotated[
        ScoreMode, typer.Option(help="compat: the original scorer's numbers; fixed: corrected")
    ] = (ScoreMode.fixed),
    tasks: Annotated[
        list[str] | None,
        typer.Option(
            help="task set files the traces ran on (toolgym JSONL, GTA dataset.json, T-Eval files, ToolEyes queries, MTU-Eval rows) or bundled set names; "
            "default: bundled"
        ),
    ] = None,
    task_format: FormatOption = None,
    recursive: Annotated[
        bool,
        typer.Option("--recursive", help="also score the other runs below a folder (their own run.json)"),
    ] = False,
    explain: Annotated[
        bool, typer.Option("--explain", help="print what every metric means (and its paper), then exit")
    ] = False,
    json_output: Annotated[bool, typer.Option("--json", help="print the results as JSON on stdout")] = False,
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
    out: Annotated[
        Path | None, typer.Option(help="results JSON; default: DIR/eval.<mode>.json (one directory only)")
    ] = None,
    strict: Annotated[
        bool,
        typer.Option(
            help="exit non-zero when MTU rows and responses do not all pair up "
            "(a row without a response, a response without a row)"
        ),
    ] = False,
) -> None:
    """Score runs with metric suites (and/or MTU-Eval response files, T-Eval result files); print
    and save. Every option is checked before any trace is read."""
    if explain:
        from toolgym.evaluation.glossary import glossary_text

        print(glossary_text())
        return
    dirs = list(directories or [])
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
    if not dirs and not evals and not teval_files:
        raise typer.BadParameter(
            "give a run directory, MTU files with --mtu-eval/--mtu-responses, or --teval-results files"
        )
    for directory in dirs:
        if not directory.is_dir():
            raise typer.BadParameter(f"{directory} is not a directory", param_hint="DIRECTORIES")
    if out is not None and len(dirs) > 1:
        raise typer.BadParameter(
            "--out takes one directory's results; give one directory", param_hint="--out"
        )
    names = suite_names(suite) if dirs else []
    task_paths = task_set_paths(tasks) if dirs else []
    outputs: dict[str, dict[str, Any]] = {}
    any_failed = False
    with human_output_to_stderr(json_output):
        for directory in dirs:
            payload = _eval_directory(directory, names, mode.value, task_paths, recursive, out, task_format)
            outputs[str(directory)] = payload
            any_failed = any_failed or bool(payload["failures"]) or bool(payload["incomplete"])
        results: dict[str, SuiteResult] = {}
        failures: dict[str, str] = {}
        if evals:
            mtu_results, mtu_failures = score_mtu_pairs(evals, responses, mode.value)
            results.update(mtu_results)
            failures.update(mtu_failures)
        if teval_files:
            teval_scores, teval_failures = score_teval_results(teval_files, mode.value)
            results.update(teval_scores)
            failures.update(teval_failures)
        if results or failures:
            print_results(results, failures)
            payload = {
                "mode": mode.value,
                "results": {name: r.model_dump(mode="json") for name, r in results.items()},
                "failures": failures,
            }
            target = out if not dirs else None
            if target is not None:
                write_atomically(target, json.dumps(payload, indent=2) + "\n")
                console.print(f"results written to {target}")
            outputs["files"] = payload
            any_failed = any_failed or bool(failures)
        unpaired: dict[str, int] = {}
        if strict:
            from toolgym.evaluation.metrics.mtu import unpaired_count

            unpaired = {name: n for name, r in results.items() if (n := unpaired_count(r))}
            for name, n in unpaired.items():
                console.print(f"[red]{name}: {n} MTU rows or responses without a partner (--strict)[/red]")
    if json_output:
        print(json.dumps(next(iter(outputs.values())) if len(outputs) == 1 else outputs, indent=2))
    if any_failed or unpaired:
        raise typer.Exit(code=1)


def print_results(results: Mapping[str, SuiteResult], failures: Mapping[str, str]) -> None:
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
            console.print(f"note: {escape(note)}")
    for name, message in failures.items():
        console.print(f"[red]{escape(name)}: not scored[/red]: {escape(message)}")
    if results:
        console.print("what each metric means: toolgym eval --explain")


def _eval_directory(
    directory: Path,
    names: Sequence[str],
    mode: str,
    task_paths: Sequence[Path],
    recursive: bool,
    out: Path | None,
    fmt: TaskFormat | None = None,
) -> dict[str, Any]:
    """Score one run directory, print the results, write its eval.<mode>.json (replacing an older
    one: it carries the digest of the traces it scored, so a report can tell it is current)."""
    from toolgym.evaluation.runs import nested_runs, scan_traces, traces_digest

    scan = scan_traces(directory, recursive=recursive)
    loaded = scan.loaded
    for problem in scan.problems:
        console.print(f"[yellow]skipped[/yellow] {escape(problem)}")
    print_incomplete(scan.incomplete, "not scored")
    left_out = [] if recursive else nested_runs(directory)
    console.print(f"{len(loaded)} traces in {directory}", highlight=False)
    if left_out:
        console.print(
            f"left out {len(left_out)} other runs below {directory} (--recursive scores them too)",
            highlight=False,
        )
    results, failures = score_suites(directory, names, mode, task_paths, fmt, loaded=loaded)
    print_results(results, failures)
    payload = {
        "mode": mode,
        "results": {name: r.model_dump(mode="json") for name, r in results.items()},
        "failures": failures,
        "traces": len(loaded),
        "incomplete": scan.incomplete,  # traces cut short: neither scored nor counted as failures
        "recursive": recursive,
        "traces_digest": traces_digest(loaded),
    }
    # suite order kept: metrics read in the order the suite gives them (P_F1, O_F1, ...)
    target = out or directory / EVAL_FILE.format(mode=mode)
    write_atomically(target, json.dumps(payload, indent=2) + "\n")
    console.print(f"results written to {target}", highlight=False)
    return payload


def print_incomplete(incomplete: Sequence[str], what: str) -> None:
    """Name the traces without their end record (cut short), which eval and export leave out."""
    if incomplete:
        console.print(
            f"[red]{len(incomplete)} incomplete traces (no end record), {what}:[/red]", highlight=False
        )
    for line in incomplete:
        console.print(f"  {escape(line)}", highlight=False, soft_wrap=True)


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
        list[str] | None,
        typer.Option(
            help="task set files the traces ran on (categories) or bundled set names; default: the bundled sets"
        ),
    ] = None,
    title: Annotated[str | None, typer.Option(help="report title")] = None,
) -> None:
    """Write a self-contained HTML report (plots inline) for a run directory. Results of
    `toolgym eval` on other traces than the ones there now are flagged stale, never shown."""
    from toolgym.evaluation.report import collect_report_data, write_report

    if not directory.is_dir():
        raise typer.BadParameter(f"{directory} is not a directory", param_hint="DIRECTORY")
    names = suite_names(suite) if suite else []
    paths = task_set_paths(tasks)
    index, _ = _combined_tasks(paths)
    data = collect_report_data(directory, index, title=title)
    if names:
        results, failures = score_suites(directory, names, mode.value, paths, loaded=data.traces)
        data.add_suite_results(mode.value, results, failures)
    target = out or directory / "report.html"
    write_report(data, target)
    for name, message in data.suite_failures.items():
        console.print(f"[yellow]{escape(name)} not in the report[/yellow]: {escape(message)}")
    for problem in data.problems:
        console.print(f"[yellow]note[/yellow]: {escape(problem)}", highlight=False)
    console.print(f"{data.episode_count} episodes; report written to {target}")


# ---- teval-subsets -----------------------------------------------------------------------------
def teval_subsets_command(
    traces: Annotated[
        Path, typer.Argument(help="a folder of reference traces (golden traces, or the oracle's run)")
    ],
    out: Annotated[Path, typer.Option(help="folder for the T-Eval files (<subset>.json)")] = Path(
        "runs/teval-subsets"
    ),
    tasks: Annotated[
        list[Path] | None,
        typer.Option(help="task set files the traces ran on (toolgym JSONL); default: the bundled sets"),
    ] = None,
    seed: Annotated[int, typer.Option(help="seed that picks review's irrelevant responses")] = 0,
    golden_predictions: Annotated[
        bool,
        typer.Option(
            help="fill each datum's prediction with its ground truth (a result file that scores 100)"
        ),
    ] = False,
) -> None:
    """Build T-Eval's six step-wise subsets (instruct, plan, reason, retrieve, understand, review;
    JSON and string formats) from reference traces, in T-Eval's file format."""
    from toolgym.evaluation.base import EvaluationError
    from toolgym.evaluation.loaders.teval_subsets import build_subsets, write_subsets
    from toolgym.evaluation.runs import load_traces
    from toolgym.tasks import TaskSet

    if not traces.is_dir():
        raise typer.BadParameter(f"{traces} is not a directory", param_hint="TRACES")
    loaded, problems = load_traces(traces)
    for problem in problems:
        console.print(f"[yellow]skipped[/yellow] {escape(problem)}")
    try:
        task_sets = [TaskSet.load(p) for p in task_set_paths(tasks)]
    except (ValueError, OSError) as exc:
        raise typer.BadParameter(str(exc), param_hint="--tasks") from None
    try:
        subsets = build_subsets([t.trace for t in loaded], task_sets, seed=seed)
    except EvaluationError as exc:
        console.print(f"[red]no subsets[/red]: {escape(str(exc))}")
        raise typer.Exit(code=1) from None
    for path in write_subsets(subsets, out, golden_predictions=golden_predictions):
        console.print(f"{path} ({len(subsets[path.stem])} items)")
    console.print(f"score predictions with: toolgym eval --teval-results {out}/<subset>.json ...")
    console.print(f"or have an agent answer them: toolgym teval-answer {out} --agent llm ... --out ANSWERS")


# ---- teval-answer ------------------------------------------------------------------------------
def teval_answer_command(
    subsets: Annotated[
        Path, typer.Argument(help="a folder of T-Eval subset files (`toolgym teval-subsets`)")
    ],
    out: Annotated[Path, typer.Option(help="folder for the answered files (<subset>.json with predictions)")],
    agent: Annotated[
        str,
        typer.Option(
            help="oracle (the ground truth), llm (a chat server: --base-url, --model), hf:PATH (a local "
            "model), or scripted:FILE / package.module:factory (an agent given each prompt as a "
            "teacher-forced step)"
        ),
    ] = "oracle",
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1")
    ] = None,
    model: Annotated[str | None, typer.Option(help="model name sent in requests")] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option(help="environment variable holding the API key; default: OPENAI_API_KEY when set"),
    ] = None,
    temperature: Annotated[
        float | None, typer.Option(help="sampling temperature (server default if unset)")
    ] = None,
    max_tokens: Annotated[int | None, typer.Option(help="completion token limit per reply")] = None,
    llm_seed: Annotated[int | None, typer.Option(help="sampling seed sent with every request")] = None,
    timeout: Annotated[float, typer.Option(help="seconds per request before it is retried")] = 120.0,
    max_retries: Annotated[int, typer.Option(min=0, help="retries on 429 / 5xx / timeouts")] = 4,
    concurrency: Annotated[int, typer.Option(min=1, help="data answered at once")] = 1,
) -> None:
    """Answer T-Eval's step-wise subsets with an agent: each datum's prompt goes to the agent (or
    its model), the reply becomes the datum's prediction; score with `toolgym eval --teval-results`."""
    from toolgym.evaluation.base import EvaluationError
    from toolgym.evaluation.llm import LLMError
    from toolgym.evaluation.loaders.teval_subsets import answer_subsets, read_subsets, write_subsets

    if not subsets.is_dir():
        raise typer.BadParameter(f"{subsets} is not a directory", param_hint="SUBSETS")
    try:
        data = read_subsets(subsets)
    except EvaluationError as exc:
        raise typer.BadParameter(str(exc), param_hint="SUBSETS") from None
    answer = _teval_answerer(
        agent,
        base_url,
        model,
        api_key_env,
        temperature,
        max_tokens,
        llm_seed,
        timeout,
        max_retries,
        concurrency,
    )
    try:
        predictions = answer_subsets(data, answer, concurrency=concurrency)
    except LLMError as exc:
        console.print(f"[red]no predictions written[/red]: {escape(exc.message)}")
        raise typer.Exit(code=1) from None
    written = write_subsets(data, out, predictions=predictions)
    for path in written:
        console.print(f"{path} ({len(data[path.stem])} predictions)")
    files = " ".join(f"--teval-results {p}" for p in written)
    console.print(f"score them with: toolgym eval {files}", highlight=False, soft_wrap=True)


def _teval_answerer(
    agent: str,
    base_url: str | None,
    model: str | None,
    api_key_env: str | None,
    temperature: float | None,
    max_tokens: int | None,
    llm_seed: int | None,
    timeout: float,
    max_retries: int,
    concurrency: int,
) -> Callable[[str, str, Mapping[str, Any]], str]:
    """How `teval-answer` answers one datum with the named agent (checked here, before any datum)."""
    from toolgym.evaluation.loaders import teval_subsets as ts

    if agent == "oracle":
        return lambda subset, key, datum: ts.golden_prediction(subset, datum)
    backend: Any = None
    if agent == "llm":
        from toolgym.evaluation.llm import (
            DEFAULT_KEY_ENV,
            ChatClient,
            LLMConfig,
            LLMError,
            api_key_from_env,
            preflight,
        )

        if not base_url or not model:
            raise typer.BadParameter("--agent llm needs --base-url and --model")
        try:
            key = api_key_from_env(api_key_env, default=DEFAULT_KEY_ENV)
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
            preflight(config)
        except LLMError as exc:
            raise typer.BadParameter(exc.message, param_hint="--base-url") from None
        backend = ChatClient(config)
    elif agent.startswith("hf:"):
        from toolgym.evaluation.hf_agent import (
            DEFAULT_MAX_NEW_TOKENS,
            HFChatClient,
            check_transformers,
            parse_hf_spec,
        )

        try:
            check_transformers()
            hf = parse_hf_spec(
                agent, max_new_tokens=max_tokens or DEFAULT_MAX_NEW_TOKENS, temperature=temperature
            )
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--agent") from None
        backend = HFChatClient(hf)
    if backend is not None:
        return lambda subset, key, datum: (
            backend.complete(ts.chat_messages(datum), seed=llm_seed).message.content or ""
        )
    from toolgym.envs.agents import agent_factory
    from toolgym.protocols.react import ReActProtocol

    try:
        make = agent_factory(agent)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--agent") from None
    protocol = ReActProtocol()
    return lambda subset, key, datum: ts.agent_prediction(make(protocol), protocol, subset, key, datum)


# ---- winrate -----------------------------------------------------------------------------------
def winrate_command(
    directory: Annotated[Path, typer.Argument(help="the candidate run's trace folder")],
    reference: Annotated[Path, typer.Option(help="the reference run's trace folder")],
    tasks: Annotated[
        list[Path] | None,
        typer.Option(help="task set files the runs ran on; default: the bundled sets"),
    ] = None,
    out: Annotated[Path | None, typer.Option(help="results JSON; default: DIR/winrate.json")] = None,
) -> None:
    """End-to-end win rate of a run against a reference run, judged pairwise (both orders) by the
    judge the environment configures (TOOLGYM_JUDGE_BASE_URL, TOOLGYM_JUDGE_MODEL; with
    TOOLGYM_JUDGE_CASSETTE its questions are recorded, or replayed with no LLM)."""
    from toolgym.evaluation.base import EvaluationError
    from toolgym.evaluation.metrics.judge import judge_from_env
    from toolgym.evaluation.metrics.winrate import win_rate
    from toolgym.evaluation.runs import load_traces

    for folder, hint in ((directory, "DIRECTORY"), (reference, "--reference")):
        if not folder.is_dir():
            raise typer.BadParameter(f"{folder} is not a directory", param_hint=hint)
    _, task_set = _combined_tasks(task_set_paths(tasks))
    try:
        judge = judge_from_env()
    except EvaluationError as exc:
        raise typer.BadParameter(str(exc)) from None
    if judge is None:
        raise typer.BadParameter(
            "the win rate needs a judge: set TOOLGYM_JUDGE_BASE_URL and TOOLGYM_JUDGE_MODEL"
        )
    try:
        candidate = [t.trace for t in load_traces(directory)[0]]
        baseline = [t.trace for t in load_traces(reference)[0]]
        result = win_rate(candidate, baseline, task_set, judge)
    except EvaluationError as exc:
        console.print(f"[red]winrate: not scored[/red]: {escape(str(exc))}")
        raise typer.Exit(code=1) from None
    finally:
        judge.close()
    for metric, value in result.metrics.items():
        console.print(f"{metric}: {value:.2f}")
    console.print("counts: " + ", ".join(f"{k} {v}" for k, v in result.counts.items()))
    for note in result.notes:
        console.print(f"note: {escape(note)}")
    target = out or directory / "winrate.json"
    write_atomically(target, json.dumps(result.model_dump(mode="json"), indent=2) + "\n")
    console.print(f"results written to {target}")


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
        list[str] | None,
        typer.Option(
            help="task set files the traces ran on, or bundled set names; default: the bundled sets"
        ),
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
    from toolgym.evaluation.runs import scan_traces

    try:
        chosen = ExportFormat(fmt)
    except ValueError:
        raise typer.BadParameter(
            f"{fmt!r}: choose one of {', '.join(f.value for f in ExportFormat)}", param_hint="--format"
        ) from None
    if not directory.is_dir():
        raise typer.BadParameter(f"{directory} is not a directory", param_hint="DIRECTORY")
    index, _ = _combined_tasks(task_set_paths(tasks))
    scan = scan_traces(directory)
    loaded = scan.loaded
    for problem in scan.problems:
        console.print(f"[yellow]skipped[/yellow] {escape(problem)}")
    print_incomplete(scan.incomplete, "not exported")
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


# ---- view ------------------------------------------------------------------------------------
def view_command(
    directories: Annotated[
        list[Path],
        typer.Argument(
            help="trace folders: a run directory, or two (golden vs replay, two agents) side by side"
        ),
    ],
    export: Annotated[
        Path | None, typer.Option(help="write a self-contained HTML copy to this file instead of serving")
    ] = None,
    port: Annotated[int, typer.Option(min=0, max=65535, help="port to serve on (0: any free one)")] = 0,
    host: Annotated[
        str, typer.Option(help="address to bind; beyond loopback a --token is required")
    ] = "127.0.0.1",
    token: TokenOption = None,
    tasks: Annotated[
        list[str] | None,
        typer.Option(
            help="task set files the traces ran on (queries, categories); default: the bundled sets"
        ),
    ] = None,
    title: Annotated[str | None, typer.Option(help="page title")] = None,
) -> None:
    """Open traces in the trace viewer: episodes with filters, one episode step by step (the
    request sent to the model, its output and latency, actions, observations with images, state
    diffs, rewards) and two episodes side by side. Serves a local page until Ctrl-C, or --export."""
    import time

    from toolgym.evaluation.viewer import collect_view_data, serve_viewer, write_viewer
    from toolgym.http import Credentials, InsecureBindError, check_bind

    for directory in directories:
        if not directory.is_dir():
            raise typer.BadParameter(f"{directory} is not a directory", param_hint="DIRECTORIES")
    index, _ = _combined_tasks(task_set_paths(tasks))
    if export is not None:
        payload = collect_view_data(directories, index, title=title)
        write_viewer(payload, export)
        console.print(f"{len(payload['episodes'])} episodes; viewer written to {export}")
        return
    credentials = Credentials.of(token)
    try:
        check_bind(host, credentials)
    except InsecureBindError as exc:
        raise typer.BadParameter(str(exc), param_hint="--host") from None
    stoppable_by_signals()
    try:
        with serve_viewer(
            directories, index, host=host, port=port, title=title, credentials=credentials
        ) as url:
            login = f" (a browser opens it once at {url}login?token=...)" if credentials else ""
            console.print(f"trace viewer on {url}{login} (Ctrl-C stops it)", highlight=False)
            while True:
                time.sleep(3600)
    except (OSError, RuntimeError) as exc:  # the port is taken, the address is not this machine's
        raise typer.BadParameter(f"cannot serve on {host}:{port}: {exc}", param_hint="--port") from None
    except KeyboardInterrupt:
        console.print("viewer stopped")


def register(app: typer.Typer) -> None:
    app.command("run")(run)
    app.command("eval")(eval_command)
    app.command("report")(report_command)
    app.command("teval-subsets")(teval_subsets_command)
    app.command("teval-answer")(teval_answer_command)
    app.command("winrate")(winrate_command)
    app.command("export")(export_command)
    app.command("view")(view_command)
