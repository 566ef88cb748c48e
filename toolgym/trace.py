"""Episode traces: one JSONL file per episode (a header line, one line per step, an end line).

Each line is flushed as the episode runs, so a crash leaves a readable trace whose last line is
not an `end` record (read_trace reports it as incomplete). The file is written under a
`.partial` name and renamed when the episode ends, so a finished trace appears atomically.
Lines are canonical JSON: the same task, seed and actions give a byte-identical file (wall-clock
latencies are kept only with `timing=True` and in the non-golden runs of an agent that asks a
model, which are not reproducible anyway). A trace records anything `step` accepted: lone
surrogates are written as JSON `\\uXXXX` escapes (toolgym.canonical), and values JSON cannot hold
(NaN, bytes, objects, huge ints, nesting past 100 levels) as `json_safe` replaces them.

Schema versions: 1.0 (first release); 1.1 adds `task_hash` to the header (canonical hash of the
task definition, so `toolgym verify` can tell a changed task from a changed tool); 1.2 adds
`faults` to steps (what a fault plan injected, latencies included); 1.3 adds `tokens` to steps
(the token ids and logprobs of the model's turn, where the model server returned them); 1.4 adds
`request` and `model_latency_ms` to steps (what an LLM agent sent the model, as a delta on the
step before: `full_requests` rebuilds each whole request; and how long the model took); 1.5 adds
`clock` and `events` to steps (in a world that moves, toolgym.mocks.events: the simulated time when
the step ended and the events that fired in it, each with its time and calls). Readers accept
every 1.x trace (fields a version lacks take their defaults) and refuse other major versions.
The JSON Schema of the three line kinds is `trace_json_schema()` (docs/trace-schema.json).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from io import FileIO
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr
from pydantic.json_schema import models_json_schema

from toolgym.canonical import (
    canonical_json,
    encode_json,
    escape_surrogates,
    json_safe,
    render_json,
    rendered_json,
)
from toolgym.files import with_filename
from toolgym.jsonl import JSONLError, TornLineError, iter_jsonl_lines

TRACE_SCHEMA_VERSION = "1.5"
SUPPORTED_MAJOR = "1"
_R = TypeVar("_R", bound=BaseModel)


@lru_cache(maxsize=1)
def toolgym_version() -> str:
    # cached: reading package metadata costs about a millisecond, once per trace otherwise
    try:
        return version("toolgym")
    except PackageNotFoundError:
        return "0+unknown"


class ToolInfo(BaseModel):
    """A tool offered in the episode: what a cassette key and a verify run pin down."""

    model_config = ConfigDict(frozen=True)

    name: str
    version: str
    backend: str


class TraceHeader(BaseModel):
    """First line: what the episode ran (task, seed, clock, protocol, agent, tools, env config)."""

    record: Literal["header"] = "header"
    schema_version: str = Field(default=TRACE_SCHEMA_VERSION, description="trace schema version, major.minor")
    toolgym_version: str = Field(default_factory=toolgym_version)
    task_id: str
    seed: int | None = Field(description="the seed passed to reset; null = the task's own seed")
    clock: str = Field(description="the task's simulated start time, ISO 8601")
    protocol: str = Field(description="action protocol that parsed the agent's output")
    agent: str
    tools: list[ToolInfo] = Field(description="tools offered, with versions and backends")
    env_config: dict[str, Any] = Field(default_factory=dict)
    golden: bool = Field(default=False, description="a golden (reference) trace")
    task_hash: str | None = Field(
        default=None, description="canonical sha256 of the task definition (schema 1.1)"
    )


class TurnTokens(BaseModel):
    """One model turn in tokens, as the model server returned them (never re-tokenised): the whole
    prompt it was given, what it generated, and the logprob of each generated token."""

    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float] | None = Field(default=None, description="one per completion token")


class ModelRequest(BaseModel):
    """What an agent sent the model for one step's output. A request repeats the whole history, so
    a step keeps only what is new since the previous step's request: the messages from index
    `messages_from` on (the earlier ones are the previous request's), and the tool schemas only
    when they differ from the previous request's (None: the same). `full_requests` rebuilds them."""

    messages_from: int = Field(default=0, ge=0, description="index of the first message this step adds")
    messages: list[dict[str, Any]] = Field(description="the messages from messages_from on")
    tools: list[dict[str, Any]] | None = Field(
        default=None, description="tool schemas sent, when new or changed; null: as in the previous request"
    )
    params: dict[str, Any] = Field(
        default_factory=dict, description="the rest of the request (model, temperature, seed, stop, ...)"
    )


class TraceStep(BaseModel):
    """One env step: the raw output, the parsed actions, what came back, state before/after."""

    record: Literal["step"] = "step"
    index: int = Field(description="1-based step number")
    raw: Any = Field(default=None, description="the agent's raw output (text or message object)")
    actions: list[dict[str, Any]] = Field(description="parsed actions (toolgym.actions.Action)")
    observations: list[dict[str, Any]] = Field(description="observations (toolgym.actions.Observation)")
    error_kinds: list[str] = Field(default_factory=list)
    state_hash_before: str | None = None
    state_hash_after: str | None = None
    state_diff: dict[str, Any] | None = None
    latency_ms: float | None = Field(
        default=None,
        description="wall-clock latency; with timing on, and in LLM runs (never in golden traces)",
    )
    faults: list[dict[str, Any]] | None = Field(
        default=None,
        description="faults a fault plan injected in this step, latencies included (schema 1.2)",
    )
    tokens: TurnTokens | None = Field(
        default=None,
        description="the model turn's token ids and logprobs, where the server returned them (schema 1.3)",
    )
    request: ModelRequest | None = Field(
        default=None, description="what the agent sent the model, as a delta (schema 1.4); LLM agents only"
    )
    model_latency_ms: float | None = Field(
        default=None,
        description="wall-clock time of the model's answer, retries included (schema 1.4); LLM agents only",
    )
    clock: str | None = Field(
        default=None,
        description="the simulated time when the step ended (schema 1.5); tasks with events or a time policy only",
    )
    events: list[dict[str, Any]] | None = Field(
        default=None,
        description="events the environment fired in this step: id, simulated time, calls, whether "
        "the agent was notified (schema 1.5)",
    )


def full_requests(steps: Sequence[TraceStep]) -> list[dict[str, Any] | None]:
    """Each step's whole request (`messages`, `tools`, `params`) rebuilt from the deltas its steps
    keep; None for a step without one (an agent that calls no model)."""
    out: list[dict[str, Any] | None] = []
    messages: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] | None = None
    for step in steps:
        request = step.request
        if request is None:
            out.append(None)
            continue
        messages = messages[: request.messages_from] + request.messages
        if request.tools is not None:
            tools = request.tools
        out.append({"messages": list(messages), "tools": tools, "params": request.params})
    return out


class TraceEnd(BaseModel):
    """Last line of a finished episode; a trace without it is incomplete (crash or abort)."""

    record: Literal["end"] = "end"
    status: Literal["terminated", "truncated", "aborted"]
    steps: int
    final_answer: str | None
    reward: float
    error_counts: dict[str, int] = Field(default_factory=dict)
    scores: dict[str, float] = Field(default_factory=dict)
    # where the task's milestones were reached ({id, step, similarity}; step null: never) and the
    # minefields hit ({id, step}); absent for an episode without them, so such traces are as before
    milestones: list[dict[str, Any]] | None = Field(default=None, exclude_if=lambda v: v is None)
    minefields: list[dict[str, Any]] | None = Field(default=None, exclude_if=lambda v: v is None)
    # the budget that stopped the episode (tokens, cost, seconds); absent when none did
    budget: str | None = Field(default=None, exclude_if=lambda v: v is None)


class Trace(BaseModel):
    header: TraceHeader
    steps: list[TraceStep]
    end: TraceEnd | None
    _cut: str | None = PrivateAttr(default=None)  # read_trace: where the file stops short of its end

    @property
    def complete(self) -> bool:
        return self.end is not None

    @property
    def incomplete(self) -> str | None:
        """None for a trace with its end record; else why it has none, as `FILE:LINE: ...` for a
        trace read from a file (an episode that crashed or was aborted, or a file cut short)."""
        if self.end is not None:
            return None
        return self._cut or "incomplete trace: no end record"


class TraceFormatError(JSONLError):
    """A file that is not a trace this version can read (not JSONL, no header, another major
    version, a record that is not one); `path` and `line` say where."""


def trace_json_schema() -> dict[str, Any]:
    """JSON Schema (2020-12) of one trace line: a header, a step or an end record."""
    _, defs = models_json_schema(
        [(TraceHeader, "validation"), (TraceStep, "validation"), (TraceEnd, "validation")],
        ref_template="#/$defs/{model}",
    )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"urn:toolgym:trace:{TRACE_SCHEMA_VERSION}",
        "title": f"toolgym trace line (schema {TRACE_SCHEMA_VERSION})",
        "description": (
            "A trace is a JSONL file: one header line, one step line per env step, and an end line "
            "when the episode finished. Lines are canonical JSON (sorted keys, no whitespace)."
        ),
        "oneOf": [
            {"$ref": "#/$defs/TraceHeader"},
            {"$ref": "#/$defs/TraceStep"},
            {"$ref": "#/$defs/TraceEnd"},
        ],
        "$defs": defs["$defs"],
    }


def record_json(record: BaseModel) -> str:
    """A trace line: the record's canonical JSON. A record holding what JSON cannot (a raw output
    nested past the depth limit, NaN, bytes, objects, huge ints) is written with those values
    replaced as `json_safe` says, so anything `step` accepted is recorded and reads back."""
    try:
        return canonical_json(_drop_unset(record.model_dump(mode="json")))
    except (ValueError, TypeError, RecursionError):  # pydantic's serialisation errors included
        fields = {name: getattr(record, name) for name in type(record).model_fields}
        return canonical_json(json_safe(_drop_unset(fields)))


_STEP_DEFAULTS: dict[str, Any] = {
    name: ([] if name == "error_kinds" else None) for name in TraceStep.model_fields if name != "record"
}
_FLOAT_FIELDS = ("latency_ms", "model_latency_ms")
_HASH_FIELDS = ("state_hash_before", "state_hash_after")
_MODEL_FIELDS = ("tokens", "request")  # pydantic models among the fields, dumped as they are


def step_json(fields: Mapping[str, Any]) -> str:
    """The trace line of a step given as its fields (TraceStep's names; absent ones take their
    defaults): the bytes `record_json(TraceStep(**fields))` gives, without building the model
    when the fields are plain JSON data of the declared types, as the env's info records are.
    Anything else (a raw message object, NaN, bytes, objects, ints where floats belong, models
    given as dicts) takes the model's path, so a step line reads the same whichever way it came.
    Objects inside the fields have string keys, as JSON data does (the env's records, diffs and
    fault records always do); another key would be written as `json` writes it (None as "null",
    where the model writes "None")."""
    record: dict[str, Any] = {"record": "step", **_STEP_DEFAULTS, **fields}
    raw = record["raw"]
    plain = (
        fields.keys() <= _STEP_DEFAULTS.keys()
        and (raw is None or type(raw) is str)
        and type(record["index"]) is int
        and type(record["actions"]) is list
        and all(type(a) is dict for a in record["actions"])
        and type(record["observations"]) is list
        and all(type(o) is dict for o in record["observations"])
        and type(record["error_kinds"]) is list
        and all(type(k) is str for k in record["error_kinds"])
        and all(type(record[name]) in (str, type(None)) for name in _HASH_FIELDS)
        and type(record["state_diff"]) in (dict, type(None))
        and type(record["faults"]) in (list, type(None))
        and type(record["events"]) in (list, type(None))
        and type(record["clock"]) in (str, type(None))
        and all(type(record[name]) in (float, type(None)) for name in _FLOAT_FIELDS)
        and all(isinstance(record[name], (BaseModel, type(None))) for name in _MODEL_FIELDS)
    )
    if plain:
        for name in _MODEL_FIELDS:
            if record[name] is not None:
                record[name] = record[name].model_dump(mode="json")
        for name in OMITTED_WHEN_NULL:
            if record[name] is None:
                del record[name]
        try:
            return _with_rendered_contents(record)
        except (ValueError, TypeError, RecursionError):
            pass
    return record_json(TraceStep(**fields))


def _with_rendered_contents(record: dict[str, Any]) -> str:
    """canonical_json(record), put together field by field so that what was encoded already is
    not encoded again: an observation's content whose canonical JSON was rendered (a tool
    result's text is it: `render_json`) goes in as that text. The state diff's canonical JSON is
    remembered (`render_json`), so the env keeps a finished step's diff as that text
    (`EpisodeStep.pack`). The parts are what `canonical_json` writes of each value; the keys are
    plain names, written in sorted order as `sort_keys` writes them."""
    parts = []
    for key in sorted(record):
        value = record[key]
        if key == "observations":
            text = "[" + ",".join(_observation_json(obs) for obs in value) + "]"
        elif key == "state_diff" and value:
            text = rendered_json(value) or render_json(value)
        else:
            text = _value_json(value)
        parts.append(f'"{key}":{text}')
    return escape_surrogates("{" + ",".join(parts) + "}")


def _observation_json(obs: dict[str, Any]) -> str:
    """An observation record's canonical JSON (lone surrogates still raw: the line escapes them),
    with its content's rendered text put in where there is one."""
    content = obs.get("content")
    rendered = None if content is None or type(content) is str else rendered_json(content)
    if rendered is None or obs.get("text") != rendered or not all(type(k) is str for k in obs):
        return encode_json(obs)
    return (
        "{"
        + ",".join(
            f"{encode_basestring(k)}:{rendered if k == 'content' else _value_json(obs[k])}"
            for k in sorted(obs)
        )
        + "}"
    )


def _value_json(value: Any) -> str:
    """What the canonical encoder writes of `value`, scalars without its set-up."""
    kind = type(value)
    if kind is str:
        return encode_basestring(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return int.__repr__(value)
    return encode_json(value)


# fields of schema 1.4 on are left out when null, so the steps of agents that call no model (the
# oracle, scripted agents) and of static tasks (no clock, no events) keep the bytes they had
# before those fields existed
OMITTED_WHEN_NULL = frozenset({"request", "model_latency_ms", "clock", "events"})


def _drop_unset(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None or k not in OMITTED_WHEN_NULL}


class TraceWriter:
    """Writes one episode. Use as a context manager; `finish` renames the file into place."""

    def __init__(self, path: Path | str, header: TraceHeader) -> None:
        self.path = Path(path)
        self.partial_path = self.path.with_name(self.path.name + ".partial")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # unbuffered: each line reaches the OS in one write() as it is written, so a crash leaves
        # every line before it (a text file's buffer and its flush cost a second copy per line)
        self._fh: FileIO | None = self.partial_path.open("wb", buffering=0)
        self._write(header)

    def _write_line(self, line: str) -> None:
        assert self._fh is not None, "trace already finished"
        data = memoryview((line + "\n").encode("utf-8"))
        try:
            while data:  # a raw write may take only part of it
                written = self._fh.write(data)
                data = data[written or 0 :]
        except OSError as exc:  # a full disk: say which file
            raise with_filename(exc, self.partial_path) from None

    def _write(self, record: BaseModel) -> None:
        self._write_line(record_json(record))

    def step(self, step: TraceStep | Mapping[str, Any]) -> None:
        """One step line: a TraceStep, or its fields as a mapping (`step_json`: no model built)."""
        self._write_line(record_json(step) if isinstance(step, TraceStep) else step_json(step))

    def finish(self, end: TraceEnd) -> Path:
        self._write(end)
        assert self._fh is not None
        try:
            os.fsync(self._fh.fileno())
            self._fh.close()
            self._fh = None
            os.replace(self.partial_path, self.path)
        except OSError as exc:
            raise with_filename(exc, self.path) from None
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
    """Reads a finished or partial trace; a torn last line (crash mid-write) is dropped. A trace
    without its end record reads, and `Trace.incomplete` says where it stops. Any 1.x trace
    reads; anything else is a TraceFormatError naming the file and the line (a file that cannot
    be opened is the OSError of opening it)."""
    header: TraceHeader | None = None
    steps: list[TraceStep] = []
    end: TraceEnd | None = None
    last, kind = 0, ""
    torn: int | None = None  # the line a cut-short file ends in the middle of
    try:
        for lineno, data in iter_jsonl_lines(path, "trace line", whole_lines=True):
            last, kind = lineno, str(data.get("record"))
            if header is None:
                header = _header(path, lineno, data)
            elif kind == "step":
                steps.append(_record(TraceStep, path, lineno, data))
            elif kind == "end":
                end = _record(TraceEnd, path, lineno, data)
            # other record kinds (a later 1.x minor version) are skipped
    except TornLineError as exc:
        torn = exc.line
    except TraceFormatError:
        raise
    except JSONLError as exc:
        if isinstance(exc.__cause__, OSError):  # a file that cannot be opened: the OS's error, as before
            raise exc.__cause__ from None
        raise TraceFormatError(exc.path, exc.line, exc.message) from None
    cut = f"the file ends in the middle of line {torn} (cut short)"
    if header is None:
        raise TraceFormatError(path, torn, f"no trace header: {cut}" if torn else "no trace header")
    trace = Trace(header=header, steps=steps, end=end)
    if end is None:
        trace._cut = (
            f"{path}:{torn}: incomplete trace: {cut}, no end record"
            if torn
            else f"{path}:{last}: incomplete trace: no end record (line {last}, the last, is a {kind} record)"
        )
    return trace


def _header(path: Path | str, lineno: int, data: dict[str, Any]) -> TraceHeader:
    try:
        header = TraceHeader.model_validate(data)
    except ValueError as exc:
        raise TraceFormatError(path, lineno, f"first line is not a trace header: {exc}") from None
    major = header.schema_version.split(".", 1)[0]
    if major != SUPPORTED_MAJOR:
        raise TraceFormatError(
            path,
            lineno,
            f"trace schema {header.schema_version} is not readable by this toolgym (reads {SUPPORTED_MAJOR}.x)",
        )
    return header


def _record(model: type[_R], path: Path | str, lineno: int, data: dict[str, Any]) -> _R:
    try:
        return model.model_validate(data)
    except ValueError as exc:
        raise TraceFormatError(path, lineno, f"not a valid {data.get('record')} record: {exc}") from None


def trace_schema_text() -> str:
    """docs/trace-schema.json as it should read (regenerate: python -m toolgym.trace)."""
    return json.dumps(trace_json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    print(trace_schema_text(), end="")
