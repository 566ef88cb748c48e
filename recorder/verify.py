"""Verify a golden trace: re-execute its recorded agent outputs on a fresh env and compare, step by
step, what comes back (parsed actions, observations, error kinds, state hashes and diffs) and how
the episode ends (final answer, reward, scores). A drift names the step and the field and shows
the difference.

Strict by default: equal JSON, byte for byte. `Tolerance` relaxes observations of chosen tools
whose backends may change: strings within a normalized edit distance (Levenshtein, rapidfuzz),
images within a perceptual-hash distance (64-bit DCT hash, the `phash` of the imagehash package).
A tolerated image gets the golden file's handle as an alias in the env's file store, so later
steps that name the golden file still resolve.
"""

from __future__ import annotations

import difflib
import io
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
from PIL import Image as PILImage
from PIL import UnidentifiedImageError

from toolgym.canonical import canonical_hash, canonical_json
from toolgym.envs.runner import EpisodeAborted, header_strict_arguments, step_fields, strict_arguments
from toolgym.envs.teacher import TEACHER_FORCED, run_step_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.errors import ArgumentError
from toolgym.files import FileHandle, UnknownFileError
from toolgym.recorder.cassette import Cassette, CassetteError
from toolgym.recorder.golden import EnvPool, TaskIndex, TraceAgent, TraceExhausted
from toolgym.tasks import Task
from toolgym.trace import Trace, TraceEnd, TraceStep, read_trace

STEP_FIELDS = (
    "actions",
    "observations",
    "error_kinds",
    "state_hash_before",
    "state_hash_after",
    "state_diff",
    "clock",  # a task with events: simulated time and the events that fired (null otherwise)
    "events",
)
END_FIELDS = ("status", "steps", "final_answer", "reward", "error_counts", "scores")
MAX_DIFF_LINES = 30
MAX_VALUE_CHARS = 400


# ---- tolerant comparison ---------------------------------------------------------------------------
@lru_cache(maxsize=4)
def _dct_matrix(n: int) -> np.ndarray[Any, np.dtype[np.float64]]:
    k = np.arange(n)[:, None]
    i = np.arange(n)[None, :]
    # DCT-II as scipy.fftpack.dct computes it (unnormalized), which imagehash's phash uses
    return np.asarray(2.0 * np.cos(np.pi * k * (2 * i + 1) / (2 * n)), dtype=np.float64)


def perceptual_hash(data: bytes, hash_size: int = 8, highfreq_factor: int = 4) -> int:
    """64-bit perceptual hash: grey 32x32 (Lanczos), 2-D DCT, top-left 8x8 above their median."""
    size = hash_size * highfreq_factor
    try:
        with PILImage.open(io.BytesIO(data)) as img:
            grey = img.convert("L").resize((size, size), PILImage.Resampling.LANCZOS)
    except (UnidentifiedImageError, OSError, PILImage.DecompressionBombError) as exc:
        raise ValueError(f"not a readable image: {exc}") from None
    pixels = np.asarray(grey, dtype=np.float64)
    d = _dct_matrix(size)
    low = (d @ pixels @ d.T)[:hash_size, :hash_size]
    bits = (low > np.median(low)).flatten()
    return int("".join("1" if b else "0" for b in bits), 2)


def image_distance(a: bytes, b: bytes) -> int:
    """Hamming distance of the perceptual hashes (0 = look the same, 64 = unrelated)."""
    return (perceptual_hash(a) ^ perceptual_hash(b)).bit_count()


def text_distance(a: str, b: str) -> float:
    """Normalized Levenshtein distance: edits / length of the longer string (0 = equal)."""
    from rapidfuzz.distance import Levenshtein

    return float(Levenshtein.normalized_distance(a, b))


@dataclass(frozen=True)
class Tolerance:
    """How far observations of `tools` (None = every tool) may drift and still pass.
    `text`: normalized edit distance per string (0 = exact); `image`: perceptual-hash bits."""

    text: float = 0.0
    image: int = 0
    tools: frozenset[str] | None = None

    def applies(self, tool: str | None) -> bool:
        if self.text <= 0 and self.image <= 0:
            return False
        return self.tools is None or tool in self.tools


# ---- results ---------------------------------------------------------------------------------------
def _short(value: Any) -> str:
    text = value if isinstance(value, str) else canonical_json(value)
    return text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS] + f"... ({len(text)} chars)"


@dataclass(frozen=True)
class Drift:
    """One difference: where (header, a step, the end), which field (a JSON path), the values."""

    part: Literal["header", "step", "end"]
    step: int | None
    field: str
    expected: Any
    got: Any
    note: str = ""

    @property
    def where(self) -> str:
        return f"step {self.step}" if self.part == "step" else self.part

    def difference(self) -> str:
        if isinstance(self.expected, str) and isinstance(self.got, str):
            lines = list(
                difflib.unified_diff(
                    self.expected.splitlines(),
                    self.got.splitlines(),
                    "golden",
                    "now",
                    n=1,
                    lineterm="",
                )
            )
            if len(lines) > MAX_DIFF_LINES:
                lines = [*lines[:MAX_DIFF_LINES], f"... ({len(lines) - MAX_DIFF_LINES} more lines)"]
            if lines:
                return "\n".join(lines)
        return f"golden: {_short(self.expected)}\n   now: {_short(self.got)}"

    def describe(self) -> str:
        head = f"{self.where}: {self.field}" + (f" ({self.note})" if self.note else "")
        return head + "\n" + "\n".join("    " + line for line in self.difference().splitlines())


@dataclass
class StepCheck:
    index: int
    drifts: list[Drift] = field(default_factory=list)
    tolerated: list[str] = field(default_factory=list)  # fields that differ within tolerance

    @property
    def identical(self) -> bool:
        return not self.drifts and not self.tolerated

    @property
    def ok(self) -> bool:
        return not self.drifts


@dataclass
class VerifyResult:
    path: Path
    task_id: str | None = None
    header: list[Drift] = field(default_factory=list)
    steps: list[StepCheck] = field(default_factory=list)
    end: list[Drift] = field(default_factory=list)
    error: str | None = None
    incomplete: str | None = None  # the trace has no end record: `FILE:LINE: why` (Trace.incomplete)

    @property
    def drifts(self) -> list[Drift]:
        return [*self.header, *(d for s in self.steps for d in s.drifts), *self.end]

    @property
    def ok(self) -> bool:
        """Every step and the end as recorded; a trace without its end never passes."""
        return self.error is None and self.incomplete is None and not self.drifts

    @property
    def first_drift(self) -> Drift | None:
        drifts = self.drifts
        return drifts[0] if drifts else None


# ---- JSON comparison -------------------------------------------------------------------------------
def _diffs(expected: Any, got: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    """The deepest paths where two JSON values differ (1 and 1.0 differ: canonical JSON does)."""
    if isinstance(expected, dict) and isinstance(got, dict):
        for key in sorted(set(expected) | set(got)):
            sub = f"{path}.{key}" if path else str(key)
            if key not in expected or key not in got:
                yield sub, expected.get(key), got.get(key)
            else:
                yield from _diffs(expected[key], got[key], sub)
    elif isinstance(expected, list) and isinstance(got, list) and len(expected) == len(got):
        for i, (e, g) in enumerate(zip(expected, got, strict=True)):
            yield from _diffs(e, g, f"{path}[{i}]")
    elif type(expected) is not type(got) or expected != got:
        yield path, expected, got


def _replace_strings(value: Any, mapping: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        for old, new in mapping.items():
            value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {k: _replace_strings(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_strings(v, mapping) for v in value]
    return value


class _Checker:
    def __init__(self, env: ToolEnv, tolerance: Tolerance, reference: Cassette | None) -> None:
        self.env = env
        self.tolerance = tolerance
        self.reference = reference

    def step(self, index: int, recorded: TraceStep, now: dict[str, Any]) -> StepCheck:
        check = StepCheck(index=index)
        for name in STEP_FIELDS:
            expected, got = getattr(recorded, name), now[name]
            if (
                name == "observations"
                and isinstance(expected, list)
                and isinstance(got, list)
                and len(expected) == len(got)
            ):
                for i, (e, g) in enumerate(zip(expected, got, strict=True)):
                    self._observation(check, index, f"observations[{i}]", e, g)
                continue
            for path, e, g in _diffs(expected, got, name):
                check.drifts.append(Drift("step", index, path, e, g))
        return check

    def _observation(self, check: StepCheck, index: int, path: str, expected: Any, got: Any) -> None:
        tool = got.get("tool") if isinstance(got, dict) else None
        if not (isinstance(expected, dict) and isinstance(got, dict) and self.tolerance.applies(tool)):
            for sub, e, g in _diffs(expected, got, path):
                check.drifts.append(Drift("step", index, sub, e, g))
            return
        expected = self._match_images(check, index, path, expected, got)
        for sub, e, g in _diffs(expected, got, path):
            if isinstance(e, str) and isinstance(g, str) and self.tolerance.text > 0:
                dist = text_distance(e, g)
                if dist <= self.tolerance.text:
                    check.tolerated.append(f"{sub} (edit distance {dist:.3f})")
                    continue
                check.drifts.append(
                    Drift("step", index, sub, e, g, f"edit distance {dist:.3f} > {self.tolerance.text}")
                )
                continue
            check.drifts.append(Drift("step", index, sub, e, g))

    def _match_images(
        self, check: StepCheck, index: int, path: str, expected: dict[str, Any], got: dict[str, Any]
    ) -> dict[str, Any]:
        """Pairs the golden and new output images; a pair within tolerance is treated as the same
        file from here on (the golden handle is rewritten to the new one)."""
        if self.tolerance.image <= 0:
            return expected
        mapping: dict[str, str] = {}
        old_files, new_files = expected.get("files") or [], got.get("files") or []
        for i, (old, new) in enumerate(zip(old_files, new_files, strict=False)):
            if old == new or not str(old.get("media_type", "")).startswith("image/"):
                continue
            where = f"{path}.files[{i}]"
            try:
                golden = self._golden_bytes(old["sha256"])
                current = self.env.files.resolve(new["sha256"]).read_bytes()
                dist = image_distance(golden, current)
            except (CassetteError, UnknownFileError, ValueError, KeyError) as exc:
                check.drifts.append(Drift("step", index, where, old, new, f"cannot compare images: {exc}"))
                continue
            if dist > self.tolerance.image:
                check.drifts.append(
                    Drift(
                        "step", index, where, old, new, f"perceptual distance {dist} > {self.tolerance.image}"
                    )
                )
                continue
            check.tolerated.append(f"{where} (perceptual distance {dist})")
            old_sha, new_sha = str(old["sha256"]), str(new["sha256"])
            mapping[old_sha] = new_sha
            mapping[old_sha[:12]] = new_sha[:12]  # file names made from a hash prefix (Plot)
            handle = FileHandle.model_validate(new)
            self.env.files.alias(f"file:{old_sha}", handle)
            if old.get("name") and old.get("name") != new.get("name"):
                self.env.files.alias(str(old["name"]), handle)
        if not mapping:
            return expected
        rewritten = _replace_strings(expected, mapping)
        return rewritten if isinstance(rewritten, dict) else expected

    def _golden_bytes(self, sha: str) -> bytes:
        if self.reference is None:
            raise CassetteError("the golden image bytes are not available: pass the recording cassette")
        return self.reference.blob(sha)


# ---- verify ----------------------------------------------------------------------------------------
def _header_drifts(trace: Trace, env: ToolEnv, task_hash: str) -> list[Drift]:
    drifts = []
    if trace.header.task_hash is not None and trace.header.task_hash != task_hash:
        drifts.append(
            Drift(
                "header", None, "task_hash", trace.header.task_hash, task_hash, "the task definition changed"
            )
        )
    recorded = [t.model_dump() for t in trace.header.tools]
    now = [{"name": t.name, "version": t.version, "backend": t.backend} for t in env.offered]
    for path, e, g in _diffs(recorded, now, "tools"):
        drifts.append(Drift("header", None, path, e, g, "tool set, version or backend changed"))
    return drifts


def verify_trace(
    path: Path,
    pool: EnvPool,
    index: TaskIndex,
    *,
    tolerance: Tolerance | None = None,
    reference: Cassette | None = None,
) -> VerifyResult:
    """Re-execute one trace in an env from `pool` (live tools, or a cassette the pool carries)."""
    result = VerifyResult(path=path)
    try:
        trace = read_trace(path)
        result.task_id = trace.header.task_id
        _, task_set, task = index.find(trace.header.task_id, path.parent.name)
    except (ValueError, KeyError) as exc:
        result.error = str(exc)
        return result
    try:
        env = pool.env_for(task_set, trace)
        strict = header_strict_arguments(trace.header.env_config)
    except ArgumentError as exc:  # a header whose plan, verbosity or reward mode this version cannot use
        result.error = exc.message
        return result
    checker = _Checker(env, tolerance or Tolerance(), reference)
    with strict_arguments(strict):  # the app tools take the arguments as they did then
        if trace.header.env_config.get("mode") == TEACHER_FORCED:
            _verify_predictions(result, trace, env, task, checker)
        else:
            _verify_episode(result, trace, env, task, checker)
    return result


def _verify_predictions(
    result: VerifyResult, trace: Trace, env: ToolEnv, task: Task, checker: _Checker
) -> None:
    """A teacher-forced trace (`toolgym run --mode step`): its predictions never ran, so it is
    re-recorded the way it was made, on the task's golden chain, and compared step by step."""
    steps = trace.header.env_config.get("golden_steps")
    if steps != len(task.golden):  # a loader's, paired with a dataset's turn: nothing to re-record it on
        result.error = (
            f"a teacher-forced trace over {steps} golden steps, the task's chain has {len(task.golden)}: "
            "verify re-records predictions on the task's own golden chain only"
        )
        return
    with tempfile.TemporaryDirectory(prefix="toolgym-verify-") as folder:
        try:
            made = run_step_episode(
                env, TraceAgent(trace), task, seed=trace.header.seed, trace_dir=Path(folder)
            )
        except (EpisodeAborted, TraceExhausted) as exc:
            result.error = f"re-recording the predictions failed: {exc}"
            return
        assert made.trace_path is not None  # a trace folder was given
        again = read_trace(made.trace_path)
    result.header = _header_drifts(
        trace, env, canonical_hash(task.model_dump(mode="json"))
    )  # tools offered now
    for recorded, now in zip(trace.steps, again.steps, strict=False):
        result.steps.append(checker.step(recorded.index, recorded, now.model_dump(mode="json")))
    if len(again.steps) != len(trace.steps):
        result.end.append(
            Drift("end", None, "steps", len(trace.steps), len(again.steps), "the golden chain changed")
        )
    if trace.end is None:  # a partial or cut trace: its steps are checked, and it fails
        result.incomplete = trace.incomplete
        return
    assert again.end is not None
    result.end += _end_drifts(trace.end, again.end.model_dump(mode="json"))


def _verify_episode(result: VerifyResult, trace: Trace, env: ToolEnv, task: Task, checker: _Checker) -> None:
    """An episode re-executed step by step on a fresh env: each step's fields, then its end."""
    _, info = env.reset(seed=trace.header.seed, options={"task": task})
    result.header = _header_drifts(trace, env, canonical_hash(task.model_dump(mode="json")))
    agent = TraceAgent(trace)
    hash_before: str | None = info.get("state_hash")
    done, reward, status = False, 0.0, "aborted"
    last: dict[str, Any] = {}
    for recorded in trace.steps:
        if done:
            result.end.append(
                Drift("end", None, "steps", len(trace.steps), len(result.steps), "the episode ended sooner")
            )
            break
        try:
            output = agent.act("", {})
        except TraceExhausted as exc:  # cannot happen while iterating the trace's own steps
            result.error = str(exc)
            return
        _, r, terminated, truncated, last = env.step(output)
        result.steps.append(checker.step(recorded.index, recorded, step_fields(output, last, hash_before)))
        hash_before = last.get("state_hash")
        reward = float(r)
        if terminated or truncated:
            done, status = True, "terminated" if terminated else "truncated"
    if trace.end is None:  # a partial or cut trace: its steps are checked, and it fails
        result.incomplete = trace.incomplete
        return
    if not done:
        result.end.append(
            Drift("end", None, "status", trace.end.status, "running", "the episode did not end")
        )
        return
    now_end = {
        "status": status,
        "steps": len(result.steps),
        "final_answer": last.get("final_answer"),
        "reward": reward,
        "error_counts": dict(env.error_counts),
        "scores": last.get("scores", {}),
    }
    result.end += _end_drifts(trace.end, now_end)


def _end_drifts(recorded: TraceEnd, now: Mapping[str, Any]) -> list[Drift]:
    """The end record's fields (END_FIELDS) that differ from what the re-run ended with."""
    recorded_end = recorded.model_dump(mode="json")
    return [
        Drift("end", None, sub, e, g)
        for name in END_FIELDS
        for sub, e, g in _diffs(recorded_end[name], now[name], name)
    ]


def verify_traces(
    paths: Sequence[Path],
    pool: EnvPool,
    index: TaskIndex,
    *,
    tolerance: Tolerance | None = None,
    reference: Cassette | None = None,
) -> list[VerifyResult]:
    return [verify_trace(p, pool, index, tolerance=tolerance, reference=reference) for p in paths]
