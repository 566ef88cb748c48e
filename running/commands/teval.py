"""`toolgym teval-subsets` and `toolgym teval-answer`: T-Eval's step-wise subsets from reference
traces, and an agent's answers to them (scored by `toolgym eval --teval-results`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from toolgym.recorder.commands import task_set_paths
from toolgym.running.commands.common import console, require_dirs
from toolgym.running.commands.llm_options import (
    ApiKeyEnvOption,
    BaseUrlOption,
    LLMSeedOption,
    MaxRetriesOption,
    MaxTokensOption,
    ModelOption,
    TemperatureOption,
    ThreadsOption,
    TimeoutOption,
)
from toolgym.running.commands.run_output import RunProgress

Answerer = Callable[[str, str, Mapping[str, Any]], str]  # (subset, key, datum) -> prediction
Subsets = dict[str, dict[str, dict[str, Any]]]  # subset -> datum id -> datum


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
    from toolgym.running.trials import load_traces
    from toolgym.tasks import TaskSet

    require_dirs([traces], "TRACES")
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
    base_url: BaseUrlOption = None,
    model: ModelOption = None,
    api_key_env: ApiKeyEnvOption = None,
    temperature: TemperatureOption = None,
    max_tokens: MaxTokensOption = None,
    llm_seed: LLMSeedOption = None,
    timeout: TimeoutOption = 120.0,
    max_retries: MaxRetriesOption = 4,
    concurrency: Annotated[int, typer.Option(min=1, help="data answered at once")] = 1,
    limit: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="answer only the first N data (subsets in T-Eval's order, each file's data in its "
            "order); the files written hold those",
        ),
    ] = None,
    threads: ThreadsOption = None,
) -> None:
    """Answer T-Eval's step-wise subsets with an agent: each datum's prompt goes to the agent (or
    its model), the reply becomes the datum's prediction; score with `toolgym eval --teval-results`.
    Progress goes to stderr (a bar on a terminal, else a line at least every 10 s)."""
    from toolgym.evaluation.base import EvaluationError
    from toolgym.evaluation.loaders.teval_subsets import answer_subsets, read_subsets, write_subsets
    from toolgym.models.hf_models import threads_refusal
    from toolgym.models.llm import LLMError

    require_dirs([subsets], "SUBSETS")
    try:
        data = first_data(read_subsets(subsets), limit)
    except EvaluationError as exc:
        raise typer.BadParameter(str(exc), param_hint="SUBSETS") from None
    refused = threads_refusal(agent, threads)
    if refused is not None:
        raise typer.BadParameter(refused, param_hint="--threads")
    llm = {
        "base_url": base_url,
        "model": model,
        "api_key_env": api_key_env,
        "temperature": temperature,
        "max_tokens": max_tokens,
        "seed": llm_seed,
        "timeout": timeout,
        "max_retries": max_retries,
    }
    total = sum(len(d) for d in data.values())
    # from the model's loading on: a local model's load and turns are reported as they go
    with RunProgress(total, unit="items", concurrency=concurrency, turns_per_item=1) as progress:
        answer = counted(teval_answerer(agent, llm, concurrency, threads), progress)
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


def first_data(subsets: Subsets, limit: int | None) -> Subsets:
    """The first `limit` data over the subsets, in order (all with None); subsets left empty are
    dropped (no file is written for them)."""
    if limit is None:
        return subsets
    kept: Subsets = {}
    for name, data in subsets.items():
        keys = list(data)[: limit - sum(len(d) for d in kept.values())]
        if keys:
            kept[name] = {key: data[key] for key in keys}
    return kept


def counted(answer: Answerer, progress: RunProgress) -> Answerer:
    """`answer`, advancing `progress` once per datum answered."""

    def answer_and_count(subset: str, key: str, datum: Mapping[str, Any]) -> str:
        reply = answer(subset, key, datum)
        progress.advance()
        return reply

    return answer_and_count


def teval_answerer(
    agent: str, llm: Mapping[str, Any], concurrency: int, threads: int | None = None
) -> Answerer:
    """How `teval-answer` answers one datum with the named agent (checked here, before any datum)."""
    from toolgym.evaluation.loaders import teval_subsets as ts

    if agent == "oracle":
        return lambda subset, key, datum: ts.golden_prediction(subset, datum)
    backend: Any = None
    if agent == "llm":
        backend = _chat_client(llm, concurrency)
    elif agent.startswith("hf:"):
        backend = _local_model(agent, llm, threads)
    seed = llm.get("seed")
    if backend is not None:
        return lambda subset, key, datum: (
            backend.complete(ts.chat_messages(datum), seed=seed).message.content or ""
        )
    from toolgym.envs.agents import agent_factory
    from toolgym.protocols.react import ReActProtocol

    try:
        make = agent_factory(agent)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--agent") from None
    protocol = ReActProtocol()
    return lambda subset, key, datum: ts.agent_prediction(make(protocol), protocol, subset, key, datum)


def _chat_client(llm: Mapping[str, Any], concurrency: int) -> Any:
    """The chat client of the LLM options, its server asked once (as `toolgym run` asks it)."""
    from toolgym.models.llm import ChatClient, LLMError, preflight
    from toolgym.running.config import RunConfigError, validated
    from toolgym.running.plan import llm_config

    try:
        settings = llm_config(validated({"agent": "llm", "concurrency": concurrency, "llm": llm}), "chat")
    except RunConfigError as exc:
        raise typer.BadParameter(exc.message, param_hint=exc.option) from None
    try:
        preflight(settings)
    except LLMError as exc:
        raise typer.BadParameter(exc.message, param_hint="--base-url") from None
    return ChatClient(settings)


def _local_model(agent: str, llm: Mapping[str, Any], threads: int | None) -> Any:
    from toolgym.models.hf_agent import HFChatClient
    from toolgym.models.hf_models import DEFAULT_MAX_NEW_TOKENS, check_transformers, parse_hf_spec

    try:
        check_transformers()
        hf = parse_hf_spec(
            agent,
            max_new_tokens=llm.get("max_tokens") or DEFAULT_MAX_NEW_TOKENS,
            temperature=llm.get("temperature"),
            threads=threads,
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--agent") from None
    return HFChatClient(hf)
