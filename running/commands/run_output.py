"""What `toolgym run` prints and how it listens: the results table, pass@k, progress (a bar on a
terminal, a line every few seconds elsewhere), the signals that stop a run, and the command that
resumes one."""

from __future__ import annotations

import shlex
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.progress import Progress
from rich.table import Table

from toolgym.running.commands.common import console, fmt
from toolgym.running.config import RunConfig

if TYPE_CHECKING:
    from toolgym.envs.ray_rollouts import ToolServerSpec
    from toolgym.envs.rollouts import Cancel, Executor
    from toolgym.running.trials import EpisodeRecord, RunSummary


def print_run(summary: RunSummary) -> None:
    """The run's table (one row per task), its success rate, pass@k and tokens."""
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
            fmt(sum(r.reward for r in done) / len(done) if done else None),
            fmt(sum(r.steps for r in done) / len(done) if done else None, 1),
            str(sum(sum(r.error_counts.values()) for r in records)),
        ]
        if with_tokens:
            row.append(str(sum(int(r.usage.get("total_tokens", 0)) for r in records if r.usage)))
        if with_aborted:
            row.append(str(len(records) - len(done)))
        table.add_row(*row)
    console.print(table)
    print_totals(summary)


def print_totals(summary: RunSummary) -> None:
    from toolgym.running.trials import pass_k_table

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


def resume_command(ctx: typer.Context, config: RunConfig, out: Path) -> str:
    """The command line that finishes this run: its own run.json as the configuration (what ran,
    recorded from the start), into the same folder, on the same workers (where and on what a run
    runs is no part of run.json: `run_config.PLACEMENT`)."""
    from toolgym.running.trials import SUMMARY_FILE

    args = ["toolgym", ctx.info_name or "run", "--config", str(out / SUMMARY_FILE), "--out", str(out)]
    return shlex.join(args + placement_options(config))


def placement_options(config: RunConfig) -> list[str]:
    """The options that put a run on threads, processes or Ray as `config` does (those not at
    their defaults)."""
    from toolgym.running.config import PLACEMENT, option_of

    default = RunConfig().model_dump(include=set(PLACEMENT))
    given = config.model_dump(include=set(PLACEMENT))
    settings = [(k, v, default[k]) for k, v in given.items() if k != "out" and not isinstance(v, dict)]
    settings += [
        (f"{k}.{n}", v, default[k][n]) for k, d in given.items() if isinstance(d, dict) for n, v in d.items()
    ]
    args: list[str] = []
    for setting, value, usual in settings:
        if value == usual:
            continue
        option = option_of(setting)
        if isinstance(value, bool):
            args += [option] if value else []
        else:
            for item in value if isinstance(value, list) else [value]:
                args += [option, str(item)]
    return args


class RunProgress:
    """Progress of a run: a live bar on a terminal; elsewhere (CI, a pipe) one line every
    `every_s` seconds and at the end: done/total, rate, ETA, aborted episodes."""

    def __init__(self, total: int, *, every_s: float | None = None) -> None:
        import os

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
    """Ctrl-C and SIGTERM stop the run: the first cancels it (no new episode, no new model
    request, the requests in flight abandoned); a second stops at once, and run.json still says
    why. Yields the signals received."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received  # signal handlers live in the main thread only
        return

    def handler(signum: int, frame: object) -> None:
        received.append(signum)
        if cancel.is_set():
            raise KeyboardInterrupt  # the second signal: no more grace
        name = signal.Signals(signum).name
        cancel.set(f"interrupted by {name}")
        print(f"toolgym: {name}: stopping (again to stop at once)", file=sys.stderr)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def note_stale_results(run_dir: Path) -> None:
    """Episodes were added to a run that eval or report had already read: say so (the report
    flags such results too, by the traces' digest)."""
    from toolgym.running.trials import OWN_FILES

    older = sorted(p.name for pattern in OWN_FILES for p in run_dir.glob(pattern))
    if older:
        console.print(
            f"note: {', '.join(older)} describe the run before these episodes; run toolgym eval / report again",
            highlight=False,
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
