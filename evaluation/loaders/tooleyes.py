"""ToolEyes queries as toolgym Tasks, and back; ToolEyes tool configs as SchemaTools.

`scenario_data_raw.json` lists `{query, path, scenario}`: the user's query, the tool library the
query is for (`ToolEyes/Tool_Library/<Category>/<Tool>`), and the scenario (TG, RS, DU, PL, AM, IR,
FT). Each tool library has a `config_gpt4.json`: OpenAI function records, ending with the
`ask_to_user` and `finish` pseudo-tools. A query becomes a task with `id` "tooleyes-<n>", the
scenario as `category`, and `metadata["tooleyes"]` holding its index, path and scenario, plus the
tool records when a config for its path is given (the ToolEyes suite checks hallucinations
against them); such a task names its library's simulated tools as its app
("simulated:tooleyes/<Category>/<Tool>", toolgym.mocks.simulated), so it runs end to end offline.
The bundled task set (`toolgym run --tasks tooleyes`) is fixtures/tooleyes/tasks.jsonl, written by
scripts/build_tooleyes_tasks.py. `ask_to_user` and `finish` are protocol actions in toolgym (Ask User / Final
Answer), so `tooleyes_toolset` leaves them out of the tools.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from toolgym.evaluation.base import EvaluationError
from toolgym.tasks import Task, TaskSet
from toolgym.tools import SchemaTool, ToolContext, ToolSet

ID_PREFIX = "tooleyes-"
PSEUDO_TOOLS = frozenset({"ask_to_user", "finish"})
SCENARIOS = ("TG", "RS", "DU", "PL", "AM", "IR", "FT")
ToolFn = Callable[[dict[str, Any], ToolContext], Any]


def config_key(path: str) -> str:
    """'ToolEyes/Tool_Library/Random/Random' and 'config_gpt4.Random__Random.json' -> 'Random/Random'."""
    name = Path(path).name
    if name.startswith("config_gpt4.") and name.endswith(".json"):
        return name.removeprefix("config_gpt4.").removesuffix(".json").replace("__", "/")
    parts = path.rstrip("/").split("/")
    return "/".join(parts[-2:])


def load_tool_configs(paths: Iterable[Path | str]) -> dict[str, list[dict[str, Any]]]:
    """Tool configs by library ('Category/Tool'), from `config_gpt4*.json` files."""
    out: dict[str, list[dict[str, Any]]] = {}
    for raw in paths:
        path = Path(raw)
        try:
            records = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise EvaluationError(f"{path}: not JSON: {exc}") from None
        if not isinstance(records, list) or not all(isinstance(r, dict) and "name" in r for r in records):
            raise EvaluationError(f"{path}: a tool config is a list of function records with names")
        out[config_key(str(path))] = records
    return out


def row_to_task(
    index: int, row: Mapping[str, Any], configs: Mapping[str, Sequence[Mapping[str, Any]]]
) -> Task:
    query, path, scenario = row.get("query"), row.get("path"), row.get("scenario")
    if not isinstance(query, str) or not isinstance(path, str) or not isinstance(scenario, str):
        raise EvaluationError(f"ToolEyes row {index}: needs string 'query', 'path' and 'scenario'")
    meta: dict[str, Any] = {"index": index, "path": path, "scenario": scenario}
    tools = configs.get(config_key(path))
    names = apps = None
    if tools is not None:
        meta["tools"] = [dict(t) for t in tools]
        names = list(dict.fromkeys(str(t["name"]) for t in tools if t["name"] not in PSEUDO_TOOLS))
        apps = [f"simulated:tooleyes/{config_key(path)}"]
    return Task(
        id=f"{ID_PREFIX}{index:03d}",
        query=query,
        tools=names,
        apps=apps,
        category=scenario,
        metadata={"tooleyes": meta},
    )


def load_tooleyes_queries(
    path: Path | str, configs: Mapping[str, Sequence[Mapping[str, Any]]] | None = None
) -> TaskSet:
    """ToolEyes' scenario_data_raw.json as a TaskSet (with tool records where `configs` has them)."""
    path = Path(path)
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise EvaluationError(f"{path}: not JSON: {exc}") from None
    if not isinstance(rows, list):
        raise EvaluationError(f"{path}: expected a list of {{query, path, scenario}} rows")
    return TaskSet([row_to_task(n, r, configs or {}) for n, r in enumerate(rows)], base_dir=path.parent)


def task_to_row(task: Task) -> dict[str, Any]:
    meta = task.metadata.get("tooleyes")
    if not isinstance(meta, dict):
        raise EvaluationError(f"task {task.id!r} did not come from ToolEyes")
    return {"query": task.query, "path": meta["path"], "scenario": meta["scenario"]}


def write_tooleyes_queries(tasks: Iterable[Task], path: Path | str) -> None:
    rows = [task_to_row(t) for t in sorted(tasks, key=lambda t: int(t.metadata["tooleyes"]["index"]))]
    Path(path).write_text(json.dumps(rows, ensure_ascii=False, indent=4) + "\n", encoding="utf-8")


def _not_run(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, str]:
    return {"status": "not run: no ToolEyes backend for this tool"}


def tooleyes_toolset(
    records: Sequence[Mapping[str, Any]], fns: Mapping[str, ToolFn] | None = None
) -> ToolSet:
    """SchemaTools from a ToolEyes config; a tool without an implementation in `fns` answers
    that it did not run (enough to score format and tool selection). Tasks from
    `load_tooleyes_queries` with a config need none of it: their world serves the library's
    tools, simulated."""
    tools = ToolSet()
    for record in records:
        name = str(record["name"])
        if name in PSEUDO_TOOLS:
            continue
        params = record.get("parameters") or {"type": "object", "properties": {}}
        tools.add(
            SchemaTool(
                name,
                params,
                (fns or {}).get(name, _not_run),
                description=str(record.get("description", "")),
                backend="tooleyes",
            )
        )
    return tools
