"""`toolgym run`: configuration -> plan -> execute -> report.

The options (running/commands/run_options.py) and a config file (`--config`) give a RunConfig
(running/config.py); `plan_run` checks it and builds the run (running/plan.py),
`execute` runs it under a progress display and the signal handlers, and the results are printed.
The Python API `toolgym.running.plan.run(config)` takes the same path."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from toolgym.running.commands.common import console, fail, human_output_to_stderr
from toolgym.running.commands.run_options import given_settings, run_signature
from toolgym.running.commands.run_output import (
    RunProgress,
    cancel_on_signals,
    note_stale_results,
    print_run,
    print_tool_server,
    resume_command,
)
from toolgym.running.config import RunConfig, RunConfigError, load_config, to_toml

if TYPE_CHECKING:
    from toolgym.running.plan import RunPlan, RunResults


def run(ctx: typer.Context, **options: Any) -> None:
    """Run an agent over task sets, k trials per task, n episodes at once; write traces and run.json.
    Settings come from --config (TOML, or a run's run.json) and the options given, which win;
    --print-config shows them. Ctrl-C stops it cleanly and prints the command that resumes it
    (--config OUT/run.json --out OUT); the same command (same --out) resumes it too."""
    config = configuration(ctx, options)
    if options["print_config"]:
        print(to_toml(config.relative_paths(Path.cwd())), end="")
        return
    plan = make_plan(config)
    for note in plan.notes:
        console.print(f"[yellow]note[/yellow]: {note}", highlight=False)
    resume = resume_command(ctx, plan.config, plan.out)
    with human_output_to_stderr(options["json_output"]):
        results, signals = execute_with_progress(plan, resume, options)
        report(plan, results, options["json_output"])
    stopped = results.stopped
    if stopped is not None:
        console.print(
            f"[red]stopped: {stopped.stopped}[/red]; {len(stopped.cancelled)} episodes cancelled in flight",
            highlight=False,
        )
        console.print(f"resume with: {stopped.resume}", highlight=False, soft_wrap=True)
        raise typer.Exit(code=128 + signals[0] if signals else 1)
    if results.aborted:
        console.print(f"[red]{results.aborted} episodes aborted: the results are incomplete[/red]")
        console.print(f"rerun them with: {resume} --retry-aborted", highlight=False, soft_wrap=True)
        raise typer.Exit(code=1)


run.__signature__ = run_signature()  # type: ignore[attr-defined]


def configuration(ctx: typer.Context, options: Mapping[str, Any]) -> RunConfig:
    """The configuration the command line resolves to: --config's settings under the options given."""
    try:
        return load_config(options["config"], given_settings(ctx, options))
    except RunConfigError as exc:  # a value out of range: said as click says it of its own checks
        hint = f"'{exc.option}'" if exc.option and exc.option.startswith("--") else exc.option
        raise typer.BadParameter(exc.message, param_hint=hint) from None


def make_plan(config: RunConfig) -> RunPlan:
    from toolgym.running.plan import plan_run
    from toolgym.tasks import TaskFileError

    try:
        return plan_run(config)
    except TaskFileError as exc:
        fail(str(exc))
    except RunConfigError as exc:
        raise typer.BadParameter(exc.message, param_hint=exc.option) from None


def execute_with_progress(
    plan: RunPlan, resume: str, options: Mapping[str, Any]
) -> tuple[RunResults, list[int]]:
    """The run under a progress display; Ctrl-C / SIGTERM cancel it (a second one stops at once,
    with run.json written and the resume command printed)."""
    from toolgym.envs.rollouts import Cancel
    from toolgym.running.plan import execute
    from toolgym.running.trials import RunDirError

    cancel = Cancel()
    with cancel_on_signals(cancel) as signals:
        try:
            at_once = max(plan.config.concurrency, plan.config.workers or 1)
            with RunProgress(plan.episodes, concurrency=at_once, turns_per_item=plan.max_steps) as progress:
                results = execute(
                    plan,
                    overwrite=options["overwrite"],
                    retry_aborted=options["retry_aborted"],
                    resume=resume,
                    cancel=cancel,
                    on_episode=progress.advance,
                )
        except RunDirError as exc:
            raise typer.BadParameter(str(exc), param_hint="--out") from None
        except KeyboardInterrupt:
            stopped_at_once(plan, resume)
        except OSError as exc:  # a full disk: run.json's `stopped` says so (where it could be written)
            raise OSError(
                exc.errno, f"{exc.strerror or exc}; the run stopped, resume with: {resume}", exc.filename
            ) from exc
    if progress.done:
        note_stale_results(plan.out)
    return results, signals


def stopped_at_once(plan: RunPlan, resume: str) -> NoReturn:
    """A second Ctrl-C: the run is left as it is; run.json says so, and how to resume."""
    console.print(f"[red]stopped at once[/red]; traces and run.json in {plan.out}/", highlight=False)
    console.print(f"resume with: {resume}", highlight=False, soft_wrap=True)
    raise typer.Exit(code=130)


def report(plan: RunPlan, results: RunResults, json_output: bool) -> None:
    from toolgym.running.trials import FAULTS_DIR, PERTURBED_DIR

    print_run(results.summary)
    client = plan.client
    if client is not None and client.turns_without_tokens:
        console.print(
            f"note: --token-ids, but {client.turns_without_tokens} answers came without token ids "
            "(prompt_token_ids / token_ids): their steps keep no tokens; vLLM >= 0.10.2 returns them",
            highlight=False,
        )
    if plan.tool_server is not None:
        print_tool_server(plan.tool_server, plan.executor)
    console.print(f"traces and run.json written to {plan.out}/")
    for fault_plan, summary in results.faulted:
        console.print(f"under fault plan {fault_plan.name} (in {plan.out / FAULTS_DIR / fault_plan.name}/):")
        print_run(summary)
    for perturb_plan, summary in results.perturbed:
        folder = plan.out / PERTURBED_DIR / perturb_plan.name
        console.print(f"under perturbation {perturb_plan.name} (in {folder}/):")
        print_run(summary)
    if json_output:
        print(json.dumps(results.summary.to_json(), indent=2, sort_keys=True))
