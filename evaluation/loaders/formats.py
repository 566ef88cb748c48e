"""Task files in any benchmark's format, as toolgym TaskSets: the one entry `--tasks` goes through.

Formats: `toolgym` (JSONL of Task), `gta` (GTA's `dataset.json`, files relative to its folder, so
its `image/` folder comes along), `teval` (a T-Eval data or result file: one object keyed by id),
`tooleyes` (ToolEyes' `scenario_data_raw.json`, with the `config_gpt4.*.json` tool configs found
beside it) and `mtu` (MTU-Eval rows). `detect_format` tells them apart by content; every problem
is a `TaskFileError`, one line naming the file, the row (line, sample or datum) and what is wrong.

`benchmark_tools` gives the tools a run offers a benchmark's tasks beside the default ones: the
schemas the benchmark publishes (T-Eval's `api_descrip.json`, ToolEyes' configs, the API list in
an MTU prompt), answering that they did not run, since those benchmarks score the calls. GTA's
tools are toolgym's own real tools, so GTA tasks need none.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from pydantic import ValidationError

from toolgym.actions import ToolCall
from toolgym.evaluation.base import EvaluationError
from toolgym.jsonl import JSONLError, read_jsonl_lines
from toolgym.tasks import Task, TaskProblem, TaskSet, validation_lines
from toolgym.tasks import TaskFileError as CoreTaskFileError
from toolgym.tools import SchemaTool, ToolContext, ToolSet

FORMATS: Final = ("toolgym", "gta", "teval", "tooleyes", "mtu")
API_DOCS: Final = "api_descrip.json"  # T-Eval's tool descriptions, looked for beside the file


class TaskFileError(CoreTaskFileError):
    """A task file that cannot be read as the format it is (or is said to be); one line. A task
    file's error as the core's (`toolgym.tasks.TaskFileError`), so one `except` and the CLI's one
    line per problem cover every format."""

    def __init__(self, path: Path | str, problem: str, row: str | None = None) -> None:
        self.path, self.row, self.problem = Path(path), row, problem
        # `file:line: reason` as compilers print it; other places (a JSON item) are named in words
        line = int(row[5:]) if row and row.startswith("line ") and row[5:].isdigit() else None
        where = f"{row}: " if row and line is None else ""
        super().__init__([TaskProblem(str(path), line, None, f"{where}{' '.join(problem.split())}")])

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.path, self.problem, self.row))


def _whole_json(path: Path) -> Any:
    """The file as one JSON document, or None when it is not one (JSONL, or not JSON)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TaskFileError(path, f"cannot read: {exc.strerror or exc}") from None
    except (ValueError, RecursionError):
        return None


def _row_kind(row: Mapping[str, Any]) -> str | None:
    if "query" in row and "id" in row:
        return "toolgym"
    if {"question", "answer"} <= row.keys():
        return "mtu"
    if {"id", "query"} & row.keys() and not all(isinstance(v, dict) for v in row.values()):
        return "toolgym"  # a task that lacks a field: the loader names the field and the line
    return None


def detect_format(path: Path | str) -> str:
    """Which of FORMATS a file holds, from its content."""
    path = Path(path)
    data = _whole_json(path)
    if isinstance(data, dict):
        kind = _row_kind(data)  # a JSONL file of one row
        if kind is not None:
            return kind
        values = list(data.values())
        if values and all(isinstance(v, dict) for v in values):
            if all("dialogs" in v for v in values):
                return "gta"
            if all("origin_prompt" in v or "ground_truth" in v for v in values):
                return "teval"
        raise TaskFileError(
            path,
            "an object keyed by id, but neither GTA samples (with 'dialogs') nor T-Eval data "
            "(with 'origin_prompt' and 'ground_truth')",
        )
    if isinstance(data, list):
        if data and all(isinstance(r, dict) and "scenario" in r and "query" in r for r in data):
            return "tooleyes"
        raise TaskFileError(path, "a JSON list, but not ToolEyes queries ({query, path, scenario} rows)")
    if data is not None:
        raise TaskFileError(path, f"a single JSON {type(data).__name__} is no task file")
    try:
        rows = read_jsonl_lines(path, "row")
    except JSONLError as exc:
        raise TaskFileError(path, exc.message, f"line {exc.line}" if exc.line else None) from None
    if not rows:
        raise TaskFileError(path, "no tasks in the file")
    lineno, first = rows[0]
    kind = _row_kind(first)
    if kind is None:
        raise TaskFileError(
            path,
            "neither a toolgym task ('id', 'query') nor an MTU row ('id', 'question', 'answer')",
            f"line {lineno}",
        )
    return kind


def _validation_problem(exc: ValidationError) -> str:
    return "; ".join(validation_lines(exc.errors()))


def _load_toolgym(path: Path) -> TaskSet:
    """toolgym's own format, read as `TaskSet.load` reads it: every problem of the file, one line
    each (file:line: task id: what, with "did you mean"), each task knowing its file and line."""
    return TaskSet.load(path)


def _keyed_rows(path: Path, what: str) -> dict[str, Any]:
    data = _whole_json(path)
    if not isinstance(data, dict):
        raise TaskFileError(path, f"expected one JSON object keyed by {what} id")
    for key, value in data.items():
        if not isinstance(value, dict):
            raise TaskFileError(path, f"is {type(value).__name__}, not an object", f"{what} {key!r}")
    return data


def _load_gta(path: Path) -> TaskSet:
    from toolgym.evaluation.loaders.gta import sample_to_task

    tasks = []
    for key, sample in _keyed_rows(path, "sample").items():
        try:
            tasks.append(sample_to_task(str(key), sample))
        except EvaluationError as exc:
            raise TaskFileError(
                path, str(exc).removeprefix(f"GTA sample {key!r}: "), f"sample {key!r}"
            ) from None
        except ValidationError as exc:
            raise TaskFileError(path, _validation_problem(exc), f"sample {key!r}") from None
    return TaskSet(tasks, base_dir=path.parent)


def _load_teval(path: Path) -> TaskSet:
    from toolgym.evaluation.loaders.teval import datum_to_task

    tasks = []
    for key, datum in _keyed_rows(path, "datum").items():
        try:
            tasks.append(datum_to_task(path.stem, str(key), datum))
        except EvaluationError as exc:
            raise TaskFileError(path, str(exc), f"datum {key!r}") from None
        except ValidationError as exc:
            raise TaskFileError(path, _validation_problem(exc), f"datum {key!r}") from None
    return TaskSet(tasks, base_dir=path.parent)


def _load_tooleyes(path: Path) -> TaskSet:
    from toolgym.evaluation.loaders.tooleyes import load_tool_configs, row_to_task

    rows = _whole_json(path)
    if not isinstance(rows, list):
        raise TaskFileError(path, "expected a JSON list of {query, path, scenario} rows")
    try:
        configs = load_tool_configs(sorted(path.parent.glob("config_gpt4*.json")))
    except EvaluationError as exc:
        raise TaskFileError(path, f"a tool config beside it: {exc}") from None
    tasks = []
    for n, row in enumerate(rows):
        if not isinstance(row, dict):
            raise TaskFileError(path, f"is {type(row).__name__}, not an object", f"row {n}")
        try:
            tasks.append(row_to_task(n, row, configs))
        except EvaluationError as exc:
            raise TaskFileError(path, str(exc).removeprefix(f"ToolEyes row {n}: "), f"row {n}") from None
    return TaskSet(tasks, base_dir=path.parent)


def _load_mtu(path: Path) -> TaskSet:
    from toolgym.evaluation.loaders.mtu import load_mtu_tasks

    try:
        rows = read_jsonl_lines(path, "row")
    except JSONLError as exc:
        raise TaskFileError(path, exc.message, f"line {exc.line}" if exc.line else None) from None
    for lineno, row in rows:  # the loader names rows by index; name the line here first
        if not (isinstance(row.get("id"), str) and isinstance(row.get("question"), str)):
            raise TaskFileError(path, "an MTU row needs a string 'id' and 'question'", f"line {lineno}")
        if not isinstance(row.get("answer"), dict):
            raise TaskFileError(path, "an MTU row needs an object 'answer'", f"line {lineno}")
    try:
        return load_mtu_tasks(path)
    except EvaluationError as exc:
        raise TaskFileError(path, str(exc)) from None


_LOADERS = {
    "toolgym": _load_toolgym,
    "gta": _load_gta,
    "teval": _load_teval,
    "tooleyes": _load_tooleyes,
    "mtu": _load_mtu,
}


def load_tasks(path: Path | str, fmt: str | None = None) -> tuple[str, TaskSet]:
    """(format, tasks) of a task file; `fmt` None: detected from the content."""
    path = Path(path)
    if fmt is not None and fmt not in _LOADERS:
        raise TaskFileError(path, f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    if not path.is_file():
        raise TaskFileError(path, "no such file")
    chosen = fmt or detect_format(path)
    return chosen, _LOADERS[chosen](path)


# ---- tools for a benchmark's tasks ---------------------------------------------------------------


def _not_run(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, str]:
    return {"status": "not run: the benchmark scores the call, not its result"}


def _named_tools(tasks: Iterable[Task]) -> list[str]:
    """Every tool name the tasks offer or call, in first-seen order."""
    names: dict[str, None] = {}
    for task in tasks:
        names.update(dict.fromkeys(task.tools or []))
        names.update(dict.fromkeys(g.action.name for g in task.golden if isinstance(g.action, ToolCall)))
    return list(names)


def _published_tools(fmt: str, path: Path, tasks: TaskSet) -> ToolSet:
    out = ToolSet()
    if fmt == "teval":
        from toolgym.evaluation.loaders.teval import load_teval_api_docs, teval_toolset

        docs = next((p for p in (path.parent / API_DOCS, path.parent.parent / API_DOCS) if p.is_file()), None)
        if docs is not None:
            try:
                out = teval_toolset(load_teval_api_docs(docs))
            except (EvaluationError, ValueError, KeyError) as exc:
                raise TaskFileError(docs, f"T-Eval tool descriptions: {exc}") from None
    elif fmt == "tooleyes":
        from toolgym.evaluation.loaders.tooleyes import tooleyes_toolset

        for task in tasks:
            records = task.metadata.get("tooleyes", {}).get("tools") or []
            for tool in tooleyes_toolset(records):
                if tool.name not in out:
                    out.add(tool)
    elif fmt == "mtu":
        from toolgym.evaluation.loaders.mtu import parse_api_list, toolset_for

        for task in tasks:
            for tool in toolset_for(parse_api_list(task.query)):
                if tool.name not in out:  # rows share APIs; the first schema stands
                    out.add(tool)
    return out


def benchmark_tools(fmt: str, path: Path | str, tasks: TaskSet, offered: ToolSet) -> ToolSet:
    """The tools a run adds to `offered` for a benchmark file's tasks: the benchmark's published
    schemas, and a schema-free stand-in for any other name the tasks use, all not run."""
    if fmt in ("toolgym", "gta"):
        return ToolSet()
    # tasks with apps run end to end: their world (mock apps, simulated libraries) has the tools
    tasks = TaskSet([t for t in tasks if not t.apps], base_dir=tasks.base_dir)
    out = ToolSet(t for t in _published_tools(fmt, Path(path), tasks) if t.name not in offered)
    for name in _named_tools(tasks):
        if name not in out and name not in offered:
            out.add(
                SchemaTool(
                    name,
                    {"type": "object", "properties": {}, "additionalProperties": True},
                    _not_run,
                    description=f"a {fmt} tool (no published schema here)",
                    backend=f"{fmt}-not-run",
                )
            )
    return out


__all__ = ["FORMATS", "TaskFileError", "benchmark_tools", "detect_format", "load_tasks"]
