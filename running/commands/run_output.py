"""What `toolgym run` prints and how it listens: the results table, pass@k, progress (a bar on a
terminal, a line every few seconds elsewhere), the signals that stop a run, and the command that
resumes one."""

from __future__ import annotations

import math
import shlex
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.progress import Progress, ProgressColumn, Task
from rich.table import Table
from rich.text import Text

from toolgym.running.commands.common import console, err_console, fmt
from toolgym.running.config import RunConfig

if TYPE_CHECKING:
    from toolgym.envs.ray_rollouts import ToolServerSpec
    from toolgym.envs.rollouts import Cancel, Executor
    from toolgym.models.activity import Activity, Phase
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
    stopped = sum(1 for e in finished if e.scores.get("budget_stop"))
    if stopped:  # stopped by a budget: not the agent's failure to count with the others
        console.print(f"budget stops: {stopped} of them stopped past a token, cost or time budget")
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
    """Progress of a run (or of teval-answer's items), on stderr (stdout may carry --json's output):
    a live bar on a terminal, with what the model is doing now; elsewhere (CI, a pipe) plain lines:

    - `progress:` done/total, rate, ETA, aborted, every `every_s` seconds and once at the end;
    - `model:` a GGUF conversion and a model's loading, as each starts and ends;
    - `turn:` a model turn's end (episode i/n, step, prompt+completion tokens, its seconds, the mean
      per turn, ETA), at most one every `every_s / 2` seconds (a fast server's turns are not all said);
    - `still working:` what is under way (a long turn: its step and seconds so far), whenever
      `every_s` seconds pass without a line.

    `every_s` defaults to TOOLGYM_PROGRESS_EVERY, else 10. Worker processes (`--workers`) write
    their model's lines themselves, on the stderr they share with this process
    (`toolgym.models.activity`); this one's heartbeat still says how many episodes are done."""

    def __init__(
        self,
        total: int,
        *,
        unit: str = "episodes",
        every_s: float | None = None,
        concurrency: int = 1,
        turns_per_item: int | None = None,
    ) -> None:
        from toolgym.models.activity import Heartbeat, every_s_from_env

        self.total, self.done, self.aborted = total, 0, 0
        self.unit, self.concurrency, self.turns_per_item = unit, concurrency, turns_per_item
        self.every_s = every_s if every_s is not None else every_s_from_env()
        self._clock = time.monotonic
        self._start = self._last_progress = self._clock()
        self._last_turn_line = -math.inf  # turn lines: at most one every every_s / 2
        self._logged_done = -1  # what the last progress line showed: the final one is printed once
        self.turns, self._turn_seconds = 0, 0.0  # turns ended in this process, and their time
        self._lock = threading.Lock()
        self._bar: Progress | None = None
        if err_console.is_terminal:
            columns = (*Progress.get_default_columns(), _NowColumn(self))
            self._bar = Progress(*columns, console=err_console, transient=True)
            self._task = self._bar.add_task(unit, total=total)
        self._heartbeat = Heartbeat(self.every_s, self._still_working)
        self._watch = ExitStack()

    def __enter__(self) -> RunProgress:
        from toolgym.models.activity import watching

        self._watch.enter_context(watching(self._on_activity))
        if self._bar is not None:
            self._bar.start()
        else:
            self._heartbeat.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._heartbeat.stop()
        self._watch.close()
        if self._bar is not None:
            self._bar.stop()
        elif self.done and self._logged_done != self.done:  # the end, said once
            self._log()

    def advance(self, record: EpisodeRecord | None = None) -> None:
        """One more item done (an episode's record: aborted ones are counted)."""
        with self._lock:
            self.done += 1
            self.aborted += record is not None and record.status == "aborted"
        if self._bar is not None:
            self._bar.advance(self._task)
        elif self.done == self.total or self._clock() - self._last_progress >= self.every_s:
            self._log()

    # ---- what a model does (from its own threads) ----
    def _on_activity(self, phase: Phase, activity: Activity) -> None:
        if activity.kind == "turn":
            if phase == "end" and not activity.failed:
                with self._lock:
                    self.turns += 1
                    self._turn_seconds += activity.elapsed()
                    due = self._clock() - self._last_turn_line >= self.every_s / 2
                    self._last_turn_line = self._clock() if due else self._last_turn_line
                if self._bar is None and due:
                    self._print(f"turn: {self._turn_line(activity)}")
            return
        self._print(f"model: {activity.said(phase)}")

    def _where(self) -> str:
        """Which item a turn belongs to: `episode 3/10` one at a time, else how many are done."""
        if self.concurrency == 1:
            return f"{self.unit.removesuffix('s')} {min(self.done + 1, self.total)}/{self.total}"
        return f"{self.done}/{self.total} {self.unit} done"

    def _turn_line(self, turn: Activity) -> str:
        with self._lock:
            mean = self._turn_seconds / max(self.turns, 1)
            turns = self.turns
        return (
            f"{self._where()}, {turn.describe()}, {turn.elapsed():.1f} s "
            f"({mean:.1f} s per turn over {turns}), {self._eta()}"
        )

    def _eta(self) -> str:
        """From the items done; before the first, a bound from the turns' mean time (each item
        takes at most `turns_per_item` turns)."""
        elapsed = max(self._clock() - self._start, 1e-9)
        with self._lock:
            done, turns, seconds = self.done, self.turns, self._turn_seconds
        if done:
            return f"ETA {(self.total - done) * elapsed / done:.0f} s"
        if turns and self.turns_per_item:
            left = max(self.total * self.turns_per_item - turns, 0)
            return f"ETA at most {left * seconds / turns / self.concurrency:.0f} s"
        return "ETA after the first turn"

    def _current(self) -> tuple[Activity, str] | None:
        """The innermost activity under way (a conversion inside a load) and, for a turn, the item
        it belongs to (`episode 3/10, `)."""
        from toolgym.models.activity import under_way

        doing = under_way()
        if not doing:
            return None
        current = doing[-1]
        return current, f"{self._where()}, " if current.kind == "turn" else ""

    def now(self) -> str:
        """What is under way, for the bar: the innermost activity and its seconds so far."""
        found = self._current()
        if found is None:
            return ""
        current, where = found
        text = f"{where}{current.describe()}, {current.elapsed():.0f} s"
        if current.kind == "turn" and self.turns:
            text += f" ({self._turn_seconds / self.turns:.1f} s per turn)"
        return text

    # ---- lines off a terminal ----
    def _print(self, text: str) -> None:
        err_console.print(text, markup=False, highlight=False)
        self._heartbeat.mark()

    def _still_working(self) -> None:
        found = self._current()
        if found is None:
            self._log()
            return
        current, where = found
        done = f"{self.done}/{self.total} {self.unit} done"
        elapsed = self._clock() - self._start
        self._print(f"still working: {where}{current.so_far()}; {done}, {elapsed:.0f} s elapsed")

    def _log(self) -> None:
        self._last_progress = now = self._clock()
        self._logged_done = self.done
        elapsed = max(now - self._start, 1e-9)
        rate = self.done / elapsed
        eta = f"{(self.total - self.done) / rate:.0f} s" if rate else "-"
        self._print(
            f"progress: {self.done}/{self.total} {self.unit}, {rate:.2f}/s, "
            f"ETA {eta}, {self.aborted} aborted, {elapsed:.0f} s elapsed"
        )


class _NowColumn(ProgressColumn):
    """The bar's last column: what the model is doing now (re-read at every refresh)."""

    def __init__(self, progress: RunProgress) -> None:
        super().__init__()
        self.progress = progress

    def render(self, task: Task) -> Text:
        # one line, cut to the terminal's width: a wrapped bar redraws as a block of lines
        return Text(self.progress.now(), style="progress.description", no_wrap=True, overflow="ellipsis")


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
