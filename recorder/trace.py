"""Episode traces: one JSONL file per episode (a header line, one line per step, an end line).

Each line is flushed as the episode runs, so a crash leaves a readable trace whose last line is
not an `end` record (read_trace reports it as incomplete). The file is written under a
`.partial` name and renamed when the episode ends, so a finished trace appears atomically.
Lines are canonical JSON: the same task, seed and actions give a byte-identical file (wall-clock
latencies are left out unless `timing=True`).
"""

from __future__ import annotations

import os
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolgym.canonical import canonical_json

TRACE_SCHEMA_VERSION = "1.0"


def toolgym_version() -> str:
    try:
        return version("toolgym")
    except PackageNotFoundError:
        return "0+unknown"


class ToolInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    version: str
    backend: str


class TraceHeader(BaseModel):
    record: Literal["header"] = "header"
    schema_version: str = TRACE_SCHEMA_VERSION
    toolgym_version: str = Field(default_factory=toolgym_version)
    task_id: str
    seed: int | None
    clock: str
    protocol: str
    agent: str
    tools: list[ToolInfo]
    env_config: dict[str, Any] = Field(default_factory=dict)
    golden: bool = False


class TraceStep(BaseModel):
    record: Literal["step"] = "step"
    index: int
    raw: Any = None  # the agent's raw output (text or message object)
    actions: list[dict[str, Any]]
    observations: list[dict[str, Any]]
    error_kinds: list[str] = Field(default_factory=list)
    state_hash_before: str | None = None
    state_hash_after: str | None = None
    state_diff: dict[str, Any] | None = None
    latency_ms: float | None = None


class TraceEnd(BaseModel):
    record: Literal["end"] = "end"
    status: Literal["terminated", "truncated", "aborted"]
    steps: int
    final_answer: str | None
    reward: float
    error_counts: dict[str, int] = Field(default_factory=dict)
    scores: dict[str, float] = Field(default_factory=dict)


class Trace(BaseModel):
    header: TraceHeader
    steps: list[TraceStep]
    end: TraceEnd | None

    @property
    def complete(self) -> bool:
        return self.end is not None


class TraceWriter:
    """Writes one episode. Use as a context manager; `finish` renames the file into place."""

    def __init__(self, path: Path | str, header: TraceHeader) -> None:
        self.path = Path(path)
        self.partial_path = self.path.with_name(self.path.name + ".partial")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[str] | None = self.partial_path.open("w", encoding="utf-8")
        self._write(header)

    def _write(self, record: BaseModel) -> None:
        assert self._fh is not None, "trace already finished"
        self._fh.write(canonical_json(record.model_dump(mode="json")) + "\n")
        self._fh.flush()

    def step(self, step: TraceStep) -> None:
        self._write(step)

    def finish(self, end: TraceEnd) -> Path:
        self._write(end)
        assert self._fh is not None
        os.fsync(self._fh.fileno())
        self._fh.close()
        self._fh = None
        os.replace(self.partial_path, self.path)
        return self.path

    def close(self) -> None:
        """Leave an unfinished trace readable as `.partial` (crash or abort)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_trace(path: Path | str) -> Trace:
    """Reads a finished or partial trace; a torn last line (crash mid-write) is dropped."""
    header: TraceHeader | None = None
    steps: list[TraceStep] = []
    end: TraceEnd | None = None
    with Path(path).open(encoding="utf-8") as fh:
        for line in fh:
            if not line.endswith("\n"):
                break  # torn write
            record = TraceHeader.model_validate_json(line) if header is None else None
            if record is not None:
                header = record
                continue
            if '"record":"step"' in line:
                steps.append(TraceStep.model_validate_json(line))
            elif '"record":"end"' in line:
                end = TraceEnd.model_validate_json(line)
    if header is None:
        raise ValueError(f"{path}: no trace header")
    return Trace(header=header, steps=steps, end=end)
