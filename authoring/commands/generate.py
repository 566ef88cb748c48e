"""`toolgym generate`: N verified tasks from the apps' own APIs and seeded worlds (authoring/generate.py),
their queries optionally rephrased by a model through a cassette (authoring/rewrite.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from toolgym.authoring.generate import Generated

console = Console(highlight=False)
CASSETTE_MODES = ("record_missing", "record", "replay")


def holdout_path(out: Path) -> Path:
    """Where the held-out part goes: FILE-stem.holdout.jsonl beside FILE."""
    return out.with_name(f"{out.stem}.holdout.jsonl")


def cassette_path(out: Path) -> Path:
    """Where the rewriter's calls are recorded by default: FILE-stem.rewrites.cassette beside FILE."""
    return out.with_name(f"{out.stem}.rewrites.cassette")


class _NoModel:
    """The rewriter's model in replay mode: every answer comes from the cassette."""

    def chat(self, messages: object, *, seed: int | None) -> str:
        raise RuntimeError("replay mode asks no model")


def _rewriter_llm(base_url: str | None, model: str, key_env: str | None) -> Any:
    from toolgym.models.llm import ChatClient, LLMConfig, LLMError, api_key_from_env
    from toolgym.models.users import ChatUserLLM

    if base_url is None:
        return _NoModel()
    try:
        key = api_key_from_env(key_env)
    except LLMError as exc:
        raise typer.BadParameter(exc.message, param_hint="--rewrite-api-key-env") from None
    return ChatUserLLM(ChatClient(LLMConfig(base_url=base_url, model=model, api_key=key)), label="rewriter")


def rewrite(
    result: Generated, model: str, base_url: str | None, cassette: Path, mode: str, key_env: str | None
) -> str:
    """Rephrase the queries of `result` in place (toolgym.authoring.rewrite); one line on what it did."""
    from toolgym.authoring.generate import task_problems
    from toolgym.authoring.rewrite import Rewriter
    from toolgym.errors import InfraError
    from toolgym.recorder.cassette import Cassette, CassetteError

    if mode not in CASSETTE_MODES:
        raise typer.BadParameter(f"one of {', '.join(CASSETTE_MODES)}", param_hint="--rewrite-cassette-mode")
    if base_url is None and mode != "replay":
        raise typer.BadParameter(
            "give the model's server, or replay a cassette", param_hint="--rewrite-base-url"
        )
    llm = _rewriter_llm(base_url, model, key_env)
    try:
        tape = Cassette(cassette, mode)  # type: ignore[arg-type]  # checked above
    except CassetteError as exc:
        raise typer.BadParameter(str(exc), param_hint="--rewrite-cassette") from None
    try:
        rewriter = Rewriter(llm, model, tape)
        done = [rewriter.rewrite(part, task_problems) for part in (result.tasks, result.holdout)]
    except InfraError as exc:
        raise typer.BadParameter(f"the rewriter: {exc.message}", param_hint="--rewrite-model") from None
    finally:
        tape.close()
    result.tasks, result.holdout = done[0].tasks, done[1].tasks
    reasons: Counter[str] = Counter()
    for part in done:
        reasons.update(part.reasons)
    why = "; ".join(f"{r} ({c})" for r, c in reasons.most_common())
    line = f"rephrased: {sum(d.kept for d in done)} of {len(result.all_tasks)} queries"
    return line + (f" (the others keep theirs: {why})" if why else "") + f"; calls recorded in {cassette}"


def generate_command(
    apps: Annotated[
        str,
        typer.Option(
            help="apps or app groups, comma-separated: banking, shopping, mtu, ctool, ctool_zh, teval, ..."
        ),
    ],
    out: Annotated[Path, typer.Option(help="the JSONL file to write")],
    n: Annotated[int, typer.Option("--n", help="how many tasks")] = 100,
    seed: Annotated[int, typer.Option(help="the run's seed: same arguments, same file")] = 0,
    holdout: Annotated[
        float,
        typer.Option(help="fraction of templates kept apart, written to FILE-stem.holdout.jsonl"),
    ] = 0.0,
    jobs: Annotated[
        int | None,
        typer.Option(help="worker processes (default: one per CPU); the output does not depend on it"),
    ] = None,
    category: Annotated[
        str | None,
        typer.Option(
            help="only the templates of these behaviour categories, comma-separated: insufficient_info,"
            " hidden_precondition, dynamic (worlds that move: events, waits, notifications; without"
            " it, none of theirs: they come only when asked for)"
        ),
    ] = None,
    rewrite_model: Annotated[
        str | None, typer.Option(help="rephrase the queries with this model (an OpenAI-compatible server's)")
    ] = None,
    rewrite_base_url: Annotated[
        str | None, typer.Option(help="the rewriter's server, e.g. http://127.0.0.1:8000/v1")
    ] = None,
    rewrite_api_key_env: Annotated[
        str | None, typer.Option(help="the environment variable that holds its API key")
    ] = None,
    rewrite_cassette: Annotated[
        Path | None, typer.Option(help="where its calls are recorded; default FILE-stem.rewrites.cassette")
    ] = None,
    rewrite_cassette_mode: Annotated[
        str, typer.Option(help="record_missing, record, or replay (no model: answers from the cassette only)")
    ] = "record_missing",
) -> None:
    """Generate tasks whose golden chains are drafted on seeded worlds and verified: reads, writes
    with expected_state, chains across apps, questions the agent must ask, requests it must refuse,
    writes that a hidden precondition blocks until another write is made first, and (asked for with
    --category dynamic) worlds that change while the agent works. Deterministic:
    the same arguments (and the same rewriter cassette) write the same bytes."""
    from toolgym.authoring.generate import dump, generate, summary
    from toolgym.files import write_atomically

    names = [a.strip() for a in apps.split(",") if a.strip()]
    if not names:
        raise typer.BadParameter("name at least one app or group", param_hint="--apps")
    categories = [c.strip() for c in category.split(",") if c.strip()] if category is not None else None
    try:
        result = generate(names, n, seed, holdout=holdout, jobs=jobs, categories=categories)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    rephrased = None
    if rewrite_model is not None:
        tape = rewrite_cassette or cassette_path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        rephrased = rewrite(
            result, rewrite_model, rewrite_base_url, tape, rewrite_cassette_mode, rewrite_api_key_env
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(out, dump(result.tasks))
    for line in summary(result):
        console.print(escape(line))
    if rephrased is not None:
        console.print(escape(rephrased))
    console.print(f"wrote {len(result.tasks)} tasks to {escape(str(out))}")
    if result.held_out_templates:
        held = holdout_path(out)
        write_atomically(held, dump(result.holdout))
        console.print(f"wrote {len(result.holdout)} held-out tasks to {escape(str(held))}")
