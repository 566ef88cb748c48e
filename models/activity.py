"""What a model is doing now, for whoever watches a run: a GGUF file converted into a model folder,
a model loading, a chat turn (any chat client's: a server's request, an in-process generation).

Each activity is told to this process's listeners when it starts and when it ends (`watching`),
and is listed while it is under way (`under_way`): a watcher's heartbeat reads the list to say
"still working" through a long one. Who reports: `hf_models.converted_folder` (conversion),
`hf_agent.HFModel` (loading), `llm.ThreadedChatClient.complete` (turns). Who listens: the run's
and teval-answer's progress display (`running/commands/run_output.py`).

A rollout worker process has no listener of its own, and no way to the driver's display but the
stderr it inherited from the driver. So in a process that multiprocessing started (`--workers N`)
the activities are written there as plain lines (`ActivityLines`) when that stderr is not a
terminal: a log, not the driver's live bar, which a worker's writes would tear. Imports nothing
of toolgym: `hf_models` stays light (the CLI imports it to register its commands).
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal, TextIO

Kind = Literal["convert", "load", "turn"]
Phase = Literal["start", "end"]
Listener = Callable[[Phase, "Activity"], None]

EVERY_ENV = "TOOLGYM_PROGRESS_EVERY"  # seconds between progress lines off a terminal
DEFAULT_EVERY_S = 10.0


def every_s_from_env() -> float:
    """The seconds between progress lines off a terminal: TOOLGYM_PROGRESS_EVERY, else 10."""
    try:
        return max(0.0, float(os.environ.get(EVERY_ENV, DEFAULT_EVERY_S)))
    except ValueError:
        return DEFAULT_EVERY_S


@dataclass
class Activity:
    """One thing a model does. A turn's step is its place in the episode (1 + the assistant turns
    before it); its tokens are known when it ends, or as it goes where `tokens_so_far` is set."""

    kind: Kind
    model: str
    step: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    threads: int | None = None  # torch's threads, for a load
    failed: bool = False
    started: float = field(default_factory=time.monotonic)
    seconds: float | None = None  # set when it ends
    tokens_so_far: Callable[[], int] | None = None

    def elapsed(self) -> float:
        return self.seconds if self.seconds is not None else time.monotonic() - self.started

    def tokens(self) -> str:
        """`prompt+completion tokens`, as far as known."""
        made = self.completion_tokens
        if made is None and self.tokens_so_far is not None:
            made = self.tokens_so_far()
        if self.prompt_tokens is None and made is None:
            return ""
        return f"{self.prompt_tokens or 0}+{made or 0} tokens"

    def describe(self) -> str:
        """What it is, in a few words: `loading X`, `step 3 (512+16 tokens)`."""
        if self.kind == "convert":
            return f"converting {self.model} into a model folder (once; later runs read the folder)"
        if self.kind == "load":
            plural = "s" if self.threads != 1 else ""
            threads = f" on {self.threads} torch thread{plural}" if self.threads else ""
            return f"loading {self.model}{threads}"
        tokens = self.tokens()
        return f"step {self.step}" + (f" ({tokens})" if tokens else "")

    def said(self, phase: Phase) -> str:
        """Its line as it starts or ends: `loading X`, `loading X: done in 7.1 s` (or `: failed`)."""
        if phase == "start":
            return self.describe()
        return f"{self.describe()}: {'failed' if self.failed else f'done in {self.elapsed():.1f} s'}"

    def so_far(self) -> str:
        """What it is and how long it has run: `step 3 (512+37 tokens), 12 s into this turn`."""
        return (
            f"{self.describe()}, {self.elapsed():.0f} s into {'this turn' if self.kind == 'turn' else 'it'}"
        )


_lock = threading.Lock()
_listeners: list[Listener] = []
_under_way: dict[int, Activity] = {}


@contextlib.contextmanager
def watching(listener: Listener) -> Iterator[None]:
    """`listener(phase, activity)` hears every activity of this process while the block runs (from
    the threads that do them: it must be quick and thread-safe)."""
    with _lock:
        _listeners.append(listener)
    try:
        yield
    finally:
        with _lock:
            _listeners.remove(listener)


def under_way() -> list[Activity]:
    """The activities under way in this process, oldest first (the last is the innermost: a
    conversion inside a load)."""
    with _lock:
        return sorted(_under_way.values(), key=lambda a: a.started)


def _tell(phase: Phase, activity: Activity) -> None:
    with _lock:
        listeners = list(_listeners)
    if not listeners and _worker_lines() is not None:
        listeners = [_worker_lines_listener]
    for listener in listeners:
        listener(phase, activity)


@contextlib.contextmanager
def doing(activity: Activity) -> Iterator[Activity]:
    """Report `activity` as under way while the block runs, then as ended (failed, if it raised);
    the block may fill in its tokens before it ends."""
    activity.started = time.monotonic()
    with _lock:
        _under_way[id(activity)] = activity
    _tell("start", activity)
    try:
        yield activity
    except BaseException:
        activity.failed = True
        raise
    finally:
        activity.seconds = time.monotonic() - activity.started
        with _lock:
            _under_way.pop(id(activity), None)
        _tell("end", activity)


class Heartbeat:
    """Calls `beat()` from a daemon thread whenever `every_s` seconds pass with no `mark()` (a line
    written): a log then shows a line at least every `every_s` seconds, whatever runs."""

    def __init__(self, every_s: float, beat: Callable[[], None]) -> None:
        self.every_s = every_s
        self._beat = beat
        self._last = time.monotonic()
        self._wake = threading.Condition()
        self._stopped = False
        self._thread: threading.Thread | None = None

    def mark(self) -> None:
        with self._wake:
            self._last = time.monotonic()

    def since_mark(self) -> float:
        with self._wake:
            return time.monotonic() - self._last

    def start(self) -> Heartbeat:
        if self.every_s > 0 and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="progress-heartbeat", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        with self._wake:
            self._stopped = True
            self._wake.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            with self._wake:
                due = self._last + self.every_s
                while not self._stopped and time.monotonic() < due:
                    self._wake.wait(timeout=due - time.monotonic())
                    due = self._last + self.every_s
                if self._stopped:
                    return
                self._last = time.monotonic()
            self._beat()


class ActivityLines:
    """A process's activities as plain lines: a rollout worker's on its stderr (which the driver's
    log shares), `serve-model`'s while it converts and loads: loads and conversions as they start and end, a turn's end (at most one every
    `every_s / 2` seconds), and a heartbeat that names what is under way after `every_s` silent."""

    def __init__(self, out: TextIO, every_s: float, label: str) -> None:
        self.out, self.label = out, label
        self._last_turn_line = -math.inf  # turn lines: at most one every every_s / 2
        self._write_lock = threading.Lock()
        self.heartbeat = Heartbeat(every_s, self._still_working).start()

    def close(self) -> None:
        """No more heartbeat lines."""
        self.heartbeat.stop()

    def write(self, text: str) -> None:
        with self._write_lock:  # one write per line: lines of several processes never interleave
            self.out.write(f"{self.label}: {text}\n")
            self.out.flush()
        self.heartbeat.mark()

    def __call__(self, phase: Phase, activity: Activity) -> None:
        if activity.kind != "turn":
            self.write(activity.said(phase))
        elif phase == "end" and time.monotonic() - self._last_turn_line >= self.heartbeat.every_s / 2:
            self._last_turn_line = time.monotonic()
            self.write(f"turn {activity.describe()} in {activity.elapsed():.1f} s")

    def _still_working(self) -> None:
        doing_now = under_way()
        if doing_now:
            current = doing_now[-1]
            self.write(f"still working: {current.so_far()}")


_worker: list[ActivityLines | None] = []  # made on first use, in a worker process only


def _worker_lines() -> ActivityLines | None:
    """This process's own lines, if it is a worker process that multiprocessing started and its
    stderr is a log (not a terminal, where the driver draws its bar)."""
    with _lock:
        if not _worker:
            in_worker = multiprocessing.parent_process() is not None
            is_log = not (getattr(sys.stderr, "isatty", lambda: False)())
            every = every_s_from_env()
            made = ActivityLines(sys.stderr, every, f"worker {os.getpid()}") if in_worker and is_log else None
            _worker.append(made)
        return _worker[0]


def _worker_lines_listener(phase: Phase, activity: Activity) -> None:
    lines = _worker_lines()
    if lines is not None:
        lines(phase, activity)
