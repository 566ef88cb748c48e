"""`toolgym eval`: score run directories with metric suites (and the benchmarks' own result files:
MTU-Eval rows and responses, T-Eval result files); print the results and write DIR/eval.<mode>.json."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from toolgym.files import write_atomically
from toolgym.running.commands.common import (
    EVAL_FILE,
    FormatOption,
    ScoreMode,
    TasksOption,
    console,
    human_output_to_stderr,
    no_traces,
    print_incomplete,
    print_results,
    require_dirs,
    suite_names,
    tasks_for,
)
from toolgym.running.config import TaskFormat

if TYPE_CHECKING:
    from toolgym.evaluation.base import SuiteResult


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
    tasks: TasksOption = None,
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
    and save. Every option is checked before any trace is read; a run's tasks come from its
    run.json unless --tasks names them. A folder with no finished traces is an error (exit 2)."""
    if explain:
        from toolgym.evaluation.glossary import glossary_text

        print(glossary_text())
        return
    dirs = list(directories or [])
    evals, responses, teval_files = list(mtu_eval or []), list(mtu_responses or []), list(teval_results or [])
    _check_inputs(dirs, evals, responses, teval_files, out)
    names = suite_names(suite) if dirs else []
    outputs: dict[str, dict[str, Any]] = {}
    failed = False
    with human_output_to_stderr(json_output):
        for directory in dirs:
            payload = eval_directory(directory, names, mode.value, tasks, task_format, recursive, out)
            outputs[str(directory)] = payload
            failed = failed or bool(payload["failures"]) or bool(payload["incomplete"])
        results, failures = _score_files(evals, responses, teval_files, mode.value)
        if results or failures:
            outputs["files"] = _files_payload(results, failures, mode.value, out if not dirs else None)
            failed = failed or bool(failures)
        unpaired = _unpaired(results) if strict else {}
    if json_output:
        print(json.dumps(next(iter(outputs.values())) if len(outputs) == 1 else outputs, indent=2))
    if failed or unpaired:
        raise typer.Exit(code=1)


def _check_inputs(
    dirs: Sequence[Path],
    evals: Sequence[Path],
    responses: Sequence[Path],
    teval: Sequence[Path],
    out: Path | None,
) -> None:
    if len(evals) != len(responses):
        raise typer.BadParameter("give one --mtu-responses per --mtu-eval", param_hint="--mtu-responses")
    missing = [str(p) for p in [*evals, *responses] if not p.is_file()]
    if missing:
        raise typer.BadParameter(f"no such file: {', '.join(missing)}", param_hint="--mtu-eval")
    missing = [str(p) for p in teval if not p.is_file()]
    if missing:
        raise typer.BadParameter(f"no such file: {', '.join(missing)}", param_hint="--teval-results")
    if not dirs and not evals and not teval:
        raise typer.BadParameter(
            "give a run directory, MTU files with --mtu-eval/--mtu-responses, or --teval-results files"
        )
    require_dirs(dirs, "DIRECTORIES")
    if out is not None and len(dirs) > 1:
        raise typer.BadParameter(
            "--out takes one directory's results; give one directory", param_hint="--out"
        )


def _score_files(
    evals: Sequence[Path], responses: Sequence[Path], teval: Sequence[Path], mode: str
) -> tuple[dict[str, SuiteResult], dict[str, str]]:
    from toolgym.reports.scoring import score_mtu_pairs, score_teval_results

    results: dict[str, SuiteResult] = {}
    failures: dict[str, str] = {}
    for scored, failed in (
        score_mtu_pairs(evals, responses, mode) if evals else ({}, {}),
        score_teval_results(teval, mode) if teval else ({}, {}),
    ):
        results.update(scored)
        failures.update(failed)
    return results, failures


def _files_payload(
    results: dict[str, SuiteResult], failures: dict[str, str], mode: str, target: Path | None
) -> dict[str, Any]:
    print_results(results, failures)
    payload = {
        "mode": mode,
        "results": {name: r.model_dump(mode="json") for name, r in results.items()},
        "failures": failures,
    }
    if target is not None:
        write_atomically(target, json.dumps(payload, indent=2) + "\n")
        console.print(f"results written to {target}")
    return payload


def _unpaired(results: dict[str, SuiteResult]) -> dict[str, int]:
    from toolgym.evaluation.metrics.mtu import unpaired_count

    unpaired = {name: n for name, r in results.items() if (n := unpaired_count(r))}
    for name, n in unpaired.items():
        console.print(f"[red]{name}: {n} MTU rows or responses without a partner (--strict)[/red]")
    return unpaired


def eval_directory(
    directory: Path,
    names: Sequence[str],
    mode: str,
    tasks: Sequence[str] | None,
    task_format: TaskFormat | None,
    recursive: bool,
    out: Path | None,
) -> dict[str, Any]:
    """Score one run directory, print the results, write its eval.<mode>.json (replacing an older
    one: it carries the digest of the traces it scored, so a report can tell it is current). A
    folder without finished traces stops the command (exit 2) and gets no file."""
    from toolgym.reports.scoring import score_suites
    from toolgym.running.trials import nested_runs, scan_traces, traces_digest

    left_out = [] if recursive else nested_runs(directory)
    runs = [directory, *(nested_runs(directory) if recursive else [])]
    index, task_set = tasks_for(tasks, runs, task_format)
    scan = scan_traces(directory, recursive=recursive)
    for problem in scan.problems:
        console.print(f"[yellow]skipped[/yellow] {escape(problem)}")
    if not scan.loaded:
        no_traces(directory, len(scan.incomplete), len(left_out))
    print_incomplete(scan.incomplete, "not scored")
    console.print(f"{len(scan.loaded)} traces in {directory}", highlight=False)
    if left_out:
        console.print(
            f"left out {len(left_out)} other runs below {directory} (--recursive scores them too)",
            highlight=False,
        )
    results, failures = score_suites(directory, names, mode, index, task_set, loaded=scan.loaded)
    print_results(results, failures)
    payload = {
        "mode": mode,
        "results": {name: r.model_dump(mode="json") for name, r in results.items()},
        "failures": failures,
        "traces": len(scan.loaded),
        "incomplete": scan.incomplete,  # traces cut short: neither scored nor counted as failures
        "recursive": recursive,
        "traces_digest": traces_digest(scan.loaded),
    }
    # suite order kept: metrics read in the order the suite gives them (P_F1, O_F1, ...)
    target = out or directory / EVAL_FILE.format(mode=mode)
    write_atomically(target, json.dumps(payload, indent=2) + "\n")
    console.print(f"results written to {target}", highlight=False)
    return payload
