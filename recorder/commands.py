"""`toolgym record`, `toolgym verify`, `toolgym replay`: golden traces and API snapshots from the CLI."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from toolgym.envs.user_options import (
    UserApiKeyEnvOption,
    UserLLMOpener,
    UserModelOption,
    UserOptionsError,
    bad_user_options,
    wants_user_llm,
)
from toolgym.tools import ToolSet

if TYPE_CHECKING:
    from toolgym.envs.faults import FaultPlan
    from toolgym.envs.runner import Verbosity
    from toolgym.envs.users import UserLLM
    from toolgym.recorder.cassette import Cassette
    from toolgym.recorder.golden import RecordReport, TaskIndex
    from toolgym.recorder.verify import VerifyResult

console = Console(soft_wrap=True)  # a result line stays one line when piped (tables wrap: soft_wrap=False)

# (base URL, model, API key environment variable) -> a live user LLM with a `close()`; raises
# ValueError for a key variable that is not set. The chat client lives above this floor, so the
# `toolgym` command hands it in at registration (`register(app, user_llm=...)`).
_user_llm_opener: UserLLMOpener | None = None

TasksOption = Annotated[
    list[str] | None,
    typer.Option(
        "--tasks",
        help="task set files (JSONL) or bundled set names (demo, mtu, ...); default: the demo set and "
        "every mock-app set (record), the sets named in the golden manifest, else the bundled sets "
        "(verify, replay)",
    ),
]


def task_set_paths(tasks: Sequence[str | Path] | None) -> list[Path]:
    """The files of `--tasks` values (file paths or bundled set names; default: every bundled set)."""
    from toolgym.envs.demo import resolve_task_sets

    try:
        return resolve_task_sets([str(t) for t in tasks] if tasks else None)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--tasks") from None


ToolsetOption = Annotated[
    str | None,
    typer.Option(
        "--toolset", help="package.module:factory returning the ToolSet; default: the built-in tools"
    ),
]


def _toolset(spec: str | None) -> ToolSet:
    if spec is None:
        from toolgym.toolservers.registry import default_toolset

        return default_toolset()
    from toolgym.recorder.golden import load_object

    try:
        made = load_object(spec, "toolset")()
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--toolset") from None
    if not isinstance(made, ToolSet):
        raise typer.BadParameter(f"{spec!r} did not return a ToolSet", param_hint="--toolset")
    return made


def _task_index(roots: list[Path], tasks: list[str] | None) -> TaskIndex:
    """--tasks, then the manifests' sets; with neither, the bundled sets."""
    from toolgym.envs.demo import default_task_paths
    from toolgym.recorder.golden import TaskIndex

    index = TaskIndex.for_traces(roots, task_set_paths(tasks) if tasks else [])
    if not index.sets:
        index = TaskIndex(default_task_paths())
    return index


def record(
    out: Annotated[Path, typer.Option(help="golden directory: traces, cassette, manifest")] = Path(
        "runs/golden"
    ),
    tasks: TasksOption = None,
    agent: Annotated[
        str,
        typer.Option(
            help="oracle, scripted:<file.jsonl> (task_id + actions per line), or package.module:factory"
        ),
    ] = "oracle",
    protocol: Annotated[str, typer.Option(help="action protocol: react, json, openai")] = "react",
    seed: Annotated[int, typer.Option(help="episode seed")] = 0,
    mode: Annotated[
        str, typer.Option(help="cassette mode: record, record_missing, live (no cassette)")
    ] = "record",
    cassette: Annotated[
        Path | None, typer.Option(help="cassette file; default <out>/cassette.sqlite")
    ] = None,
    toolset: ToolsetOption = None,
    faults: Annotated[
        Path | None,
        typer.Option(help="fault plan (JSON, docs/faults.md) the episodes run under; replay re-injects it"),
    ] = None,
    user_base_url: Annotated[
        str | None,
        typer.Option(
            help="play the user of tasks with a user scenario with an LLM on this OpenAI-compatible "
            "base URL (its calls go into the cassette); default: the rule-based user"
        ),
    ] = None,
    user_model: UserModelOption = None,
    user_api_key_env: UserApiKeyEnvOption = None,
    notifications: Annotated[
        str,
        typer.Option(
            help="which events of a task with events notify the agent: none, low (the important "
            "ones), medium (those with a notification text), high (every event); replay re-runs at it"
        ),
    ] = "medium",
) -> None:
    """Run an agent over task sets and store golden traces and the cassette of every tool response
    (and of every user LLM call)."""
    from toolgym.envs.faults import FaultPlanError
    from toolgym.recorder.golden import record_golden

    _check_record_options(mode, agent)
    verbosity = _verbosity(notifications)
    paths = task_set_paths(tasks)
    _refuse_broken_golden(paths)
    plan = _fault_plan(faults)
    user_llm = _open_user_llm(user_base_url, user_model, user_api_key_env)
    try:
        report = record_golden(
            paths,
            out,
            toolset=_toolset(toolset),
            agent=agent,
            protocol=protocol,
            seed=seed,
            mode=mode,  # type: ignore[arg-type]
            cassette_path=cassette,
            faults=plan,
            user_llm=user_llm,
            verbosity=verbosity,
        )
    except FaultPlanError as exc:
        raise typer.BadParameter(exc.message, param_hint="--faults") from None
    finally:
        close = getattr(user_llm, "close", None)
        if callable(close):
            close()
    _print_record_report(report, agent, protocol, out)


def _refuse_broken_golden(paths: Sequence[Path]) -> None:
    """A task whose golden chain fails unexpectedly is no golden task: refused before any episode,
    in one line (its file:line, id and failing call)."""
    from toolgym.envs.demo import BrokenGoldenChain, refuse_broken_golden
    from toolgym.tasks import TaskSet

    try:
        refuse_broken_golden(task for path in paths for task in TaskSet.load(path))
    except BrokenGoldenChain as exc:  # one line per task, as run and check say it
        for problem in exc.problems:
            typer.echo(f"error: {problem}", err=True)
        raise typer.Exit(code=2) from None


def _check_record_options(mode: str, agent: str) -> None:
    """--mode and --agent, checked before anything runs."""
    from toolgym.envs.agents import agent_factory

    if mode not in ("record", "record_missing", "live"):
        raise typer.BadParameter("record, record_missing or live", param_hint="--mode")
    try:
        agent_factory(agent)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--agent") from None


def _fault_plan(faults: Path | None) -> FaultPlan | None:
    """The --faults plan (None without one); a bad plan is a bad --faults."""
    from toolgym.envs.faults import FaultPlan, FaultPlanError

    if faults is None:
        return None
    try:
        return FaultPlan.load(faults)
    except FaultPlanError as exc:
        raise typer.BadParameter(exc.message, param_hint="--faults") from None


def _print_record_report(report: RecordReport, agent: str, protocol: str, out: Path) -> None:
    """Each episode's row, the cassette's counts and where the traces went."""
    table = Table(title=f"toolgym record: {len(report.results)} episodes, agent {agent}, {protocol} protocol")
    for column in ("set", "task", "steps", "errors", "reward"):
        table.add_column(column, no_wrap=True)
    for set_name, r in report.results:
        table.add_row(set_name, r.task_id, str(r.steps), str(sum(r.error_counts.values())), f"{r.reward:.2f}")
    console.print(table, soft_wrap=False)
    s = report.stats
    console.print(
        f"cassette: {s.recorded} responses recorded, {s.hits} replayed, {s.live_calls} live calls, "
        f"{s.not_recorded} not recorded (infra errors)"
    )
    console.print(f"golden traces and manifest written to {out}/")


def _open_user_llm(base_url: str | None, model: str | None, api_key_env: str | None) -> UserLLM | None:
    try:
        if not wants_user_llm(base_url, model, api_key_env):
            return None
    except UserOptionsError as exc:
        raise bad_user_options(exc) from None
    assert base_url is not None and model is not None
    if _user_llm_opener is None:
        raise typer.BadParameter(
            "no user LLM client is registered with this command", param_hint="--user-model"
        )
    try:
        return _user_llm_opener(base_url, model, api_key_env)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--user-api-key-env") from None


def verify(
    paths: Annotated[list[Path], typer.Argument(help="golden trace files or directories")],
    tasks: TasksOption = None,
    cassette: Annotated[
        Path | None, typer.Option(help="answer tool calls from this cassette instead of the live tools")
    ] = None,
    mode: Annotated[
        str, typer.Option(help="cassette mode with --cassette: replay or record_missing")
    ] = "replay",
    text_tolerance: Annotated[
        float, typer.Option(help="accept strings within this normalized edit distance (0-1)")
    ] = 0.0,
    image_tolerance: Annotated[
        int, typer.Option(help="accept images within this many perceptual-hash bits (0-64)")
    ] = 0,
    tolerant_tool: Annotated[
        list[str] | None, typer.Option(help="apply the tolerances to these tools only (repeatable)")
    ] = None,
    reference: Annotated[
        Path | None, typer.Option(help="cassette holding the golden images; default: the manifest's")
    ] = None,
    toolset: ToolsetOption = None,
    quiet: Annotated[bool, typer.Option(help="print drifting traces only")] = False,
) -> None:
    """Re-execute golden traces on a fresh env and report per step whether everything is identical."""
    from toolgym.recorder.golden import EnvPool, find_traces, golden_roots
    from toolgym.recorder.verify import Tolerance, verify_traces

    if mode not in ("replay", "record_missing"):
        raise typer.BadParameter("replay or record_missing", param_hint="--mode")
    traces = list(find_traces(paths))
    if not traces:
        console.print("no traces found")
        raise typer.Exit(code=2)
    roots = golden_roots(paths)
    root = roots[0] if roots else None
    index = _task_index(roots, tasks)
    tolerance = Tolerance(
        text=text_tolerance,
        image=image_tolerance,
        tools=frozenset(tolerant_tool) if tolerant_tool else None,
    )
    answering, ref = _verify_cassettes(cassette, mode, root, reference)
    pool = EnvPool(_toolset(toolset), answering)
    try:
        results = verify_traces(traces, pool, index, tolerance=tolerance, reference=ref)
    finally:
        pool.close()
        if answering is not None:
            answering.close()
        if ref is not None:
            ref.close()
    failed = _print_verify_results(results, quiet)
    console.print(f"verified {len(results)} traces: {len(results) - failed} ok, {failed} drifted or failed")
    if failed:
        raise typer.Exit(code=1)


def _verbosity(notifications: str) -> Verbosity:
    from toolgym.envs.runner import parse_verbosity
    from toolgym.errors import ArgumentError

    try:
        return parse_verbosity(notifications)
    except ArgumentError as exc:
        raise typer.BadParameter(exc.message, param_hint="--notifications") from None


def _verify_cassettes(
    cassette: Path | None, mode: str, root: Path | None, reference: Path | None
) -> tuple[Cassette | None, Cassette | None]:
    """The cassette that answers tool calls (--cassette) and the one holding the golden images;
    a cassette that cannot open exits with 2."""
    from toolgym.recorder.cassette import Cassette, CassetteError
    from toolgym.recorder.golden import resolve_cassette

    try:
        answering = Cassette(cassette, mode=mode) if cassette is not None else None  # type: ignore[arg-type]
        ref_path = resolve_cassette(root, reference)
        ref = Cassette(ref_path, mode="replay") if ref_path is not None and ref_path.is_file() else None
    except CassetteError as exc:
        console.print(f"[red]{escape(str(exc))}[/red]")
        raise typer.Exit(code=2) from None
    return answering, ref


def _print_verify_results(results: Sequence[VerifyResult], quiet: bool) -> int:
    """Each trace's verdict (a drift step by step); how many drifted or failed."""
    failed = 0
    for r in results:
        name = escape(str(r.path))
        if r.error is not None:
            failed += 1
            console.print(f"[red]ERROR[/red] {name}: {escape(r.error)}")
            continue
        if r.ok:
            if not quiet:
                tolerated = sum(bool(s.tolerated) for s in r.steps)
                note = f", {tolerated} within tolerance" if tolerated else ""
                console.print(f"[green]OK[/green]    {name} ({len(r.steps)} steps identical{note})")
            continue
        failed += 1
        if r.incomplete is not None and not r.drifts:
            console.print(f"[red]INCOMPLETE[/red] {escape(r.incomplete)} ({len(r.steps)} steps checked)")
            continue
        console.print(f"[red]DRIFT[/red] {name}")
        if r.incomplete is not None:
            console.print(f"  {escape(r.incomplete)}")
        for check in r.steps:
            state = "identical" if check.identical else ("tolerated" if check.ok else "DRIFT")
            console.print(f"    step {check.index}: {state}")
        for drift in r.drifts:
            console.print("  " + escape(drift.describe()).replace("\n", "\n  "))
    return failed


def replay(
    paths: Annotated[list[Path], typer.Argument(help="golden trace files or directories")],
    cassette: Annotated[Path | None, typer.Option(help="cassette; default: the golden manifest's")] = None,
    out: Annotated[Path, typer.Option(help="where the replayed traces go")] = Path("runs/replay"),
    tasks: TasksOption = None,
    toolset: ToolsetOption = None,
) -> None:
    """Re-run golden episodes from the cassette alone (strict replay): zero live tool calls, and
    every replayed trace byte-identical to its golden trace."""
    from toolgym.recorder.cassette import Cassette, CassetteError
    from toolgym.recorder.golden import find_traces, golden_roots, replay_traces, resolve_cassette

    traces = list(find_traces(paths))
    roots = golden_roots(paths)
    root = roots[0] if roots else None
    cassette_path = resolve_cassette(root, cassette)
    if cassette_path is None:
        console.print("[red]no cassette: pass --cassette or a golden directory with a manifest[/red]")
        raise typer.Exit(code=2)
    try:
        tape = Cassette(cassette_path, mode="replay")
    except CassetteError as exc:
        console.print(f"[red]{escape(str(exc))}[/red]")
        raise typer.Exit(code=2) from None
    index = _task_index(roots, tasks)
    started = time.perf_counter()
    with tape:
        report = replay_traces(traces, tape, out, toolset=_toolset(toolset), index=index)
    elapsed = time.perf_counter() - started
    for episode in report.episodes:
        if episode.error is not None:
            console.print(f"[red]ERROR[/red] {escape(str(episode.golden))}: {escape(episode.error)}")
        elif not episode.identical:
            console.print(
                f"[red]DIFFERENT[/red] {escape(str(episode.golden))} -> {escape(str(episode.replayed))}"
            )
    for miss in tape.misses:
        console.print("[red]miss[/red] " + escape(miss.describe()))
    s = report.stats
    console.print(
        f"replayed {len(report.episodes)} episodes, {report.steps} steps in {elapsed:.2f} s: "
        f"{report.identical}/{len(report.episodes)} byte-identical traces"
    )
    console.print(f"live tool calls: {s.live_calls}; cassette hits: {s.hits}; misses: {s.misses}")
    console.print(f"replayed traces written to {out}/")
    if not report.ok:
        raise typer.Exit(code=1)


def register(app: typer.Typer, *, user_llm: UserLLMOpener | None = None) -> None:
    """Add record / verify / replay to the toolgym CLI; `user_llm` opens the live user LLM of
    `record --user-base-url ... --user-model ...` (replay and verify never need one)."""
    global _user_llm_opener
    _user_llm_opener = user_llm
    app.command("record")(record)
    app.command("verify")(verify)
    app.command("replay")(replay)
