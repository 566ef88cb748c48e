"""GTA's `dataset.json` as toolgym Tasks, and back (format: tests/data/gta/FORMAT.md).

`dataset.json` is keyed by sample id; each sample has `tools` (AgentLego toolmeta records),
`files` (`{type, path, url?}`), `dialogs` (the user query, then assistant turns with `tool_calls`
or `content`, and `tool` turns with the recorded results) and `gt_answer` (a whitelist/blacklist
dict, a list of reference answers, or null for image-generation queries). A sample becomes:

- `id` "gta-<key>", `query` the first user turn, `files` the sample's files by their relative
  path (the name the agent uses), `tools` the sample's tool names;
- `golden` each tool call (thought kept) with the recorded tool result as `expected`, and the
  final answer;
- `answer` the whitelist/blacklist or the references;
- `metadata["gta"]` the sample's id, tool records, file records and `gt_answer` verbatim, so
  `task_to_gta_sample` writes the sample back unchanged.

GTA rewrites file arguments to absolute paths when it loads the data; we keep the relative names
(the agent sees the same names), and the fixed scorer compares file arguments by the file they
name. `replay_toolset` builds the sample's tools from its toolmeta records, answering each golden
call with its recorded result (GTA's step mode feeds the gold results the same way).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from toolgym.actions import FinalAnswer, ToolCall
from toolgym.canonical import canonical_json
from toolgym.evaluation.base import EvaluationError
from toolgym.files import FileKind
from toolgym.tasks import AnswerSpec, GoldenStep, Task, TaskFile, TaskSet
from toolgym.tools import SchemaTool, ToolCategory, ToolContext, ToolSet

ID_PREFIX = "gta-"
DUMMY_RESULT = "Dummy Result"  # what GTA's DummyTool answers in step mode
_CATEGORY: dict[str, ToolCategory] = {
    "OCR": "perception",
    "ImageDescription": "perception",
    "RegionAttributeDescription": "perception",
    "TextToBbox": "perception",
    "DrawBox": "operation",
    "AddText": "operation",
    "GoogleSearch": "operation",
    "Calculator": "logic",
    "Solver": "logic",
    "Plot": "logic",
    "MathOCR": "logic",
    "CountGivenObject": "logic",
    "TextToImage": "creativity",
    "ImageStylization": "creativity",
}


def _file_kind(kind: Any) -> FileKind:
    return "image" if kind == "image" else "file"


def _answer_spec(gt: Any, where: str) -> AnswerSpec | None:
    if gt is None:
        return None
    if isinstance(gt, dict):
        whitelist = gt.get("whitelist")
        if not isinstance(whitelist, list) or not all(isinstance(g, list) for g in whitelist):
            raise EvaluationError(f"{where}: gt_answer.whitelist must be a list of alias lists")
        blacklist = gt.get("blacklist")
        return AnswerSpec(whitelist=whitelist, blacklist=blacklist or None)
    if isinstance(gt, list) and all(isinstance(r, str) for r in gt):
        return AnswerSpec(references=gt) if gt else None
    raise EvaluationError(f"{where}: gt_answer must be a whitelist dict, a list of strings or null")


def sample_to_task(key: str, sample: Mapping[str, Any]) -> Task:
    where = f"GTA sample {key!r}"
    dialogs = sample.get("dialogs")
    if not isinstance(dialogs, list) or not dialogs or not isinstance(dialogs[0], dict):
        raise EvaluationError(f"{where}: 'dialogs' must be a non-empty list of turns")
    if dialogs[0].get("role") != "user" or not isinstance(dialogs[0].get("content"), str):
        raise EvaluationError(f"{where}: the first dialog turn must be the user's query")
    tools = sample.get("tools") or []
    files = sample.get("files") or []
    if not isinstance(tools, list) or not isinstance(files, list):
        raise EvaluationError(f"{where}: 'tools' and 'files' must be lists")
    golden: list[GoldenStep] = []
    verbatim = False  # dialogs that the golden chain cannot express are kept as they are
    n = 1
    while n < len(dialogs):
        turn = dialogs[n]
        role = turn.get("role")
        if role == "assistant" and turn.get("tool_calls"):
            for call in turn["tool_calls"]:
                fn = call.get("function", {}) if isinstance(call, dict) else {}
                args = fn.get("arguments", {})
                if isinstance(args, str):
                    try:
                        args = json.loads(args)
                    except ValueError:
                        raise EvaluationError(f"{where}: tool call arguments are not JSON") from None
                if not isinstance(fn.get("name"), str) or not isinstance(args, dict):
                    raise EvaluationError(f"{where}: a tool call needs a name and object arguments")
                expected = None
                if n + 1 < len(dialogs) and dialogs[n + 1].get("role") == "tool":
                    expected = dialogs[n + 1].get("content")
                thought = turn.get("thought") if isinstance(turn.get("thought"), str) else None
                golden.append(
                    GoldenStep(
                        action=ToolCall(name=fn["name"], arguments=args, thought=thought), expected=expected
                    )
                )
            if len(turn["tool_calls"]) != 1:
                verbatim = True
            n += 2 if n + 1 < len(dialogs) and dialogs[n + 1].get("role") == "tool" else 1
        elif role == "assistant" and isinstance(turn.get("content"), str):
            thought = turn.get("thought") if isinstance(turn.get("thought"), str) else None
            golden.append(GoldenStep(action=FinalAnswer(text=turn["content"], thought=thought)))
            n += 1
        else:
            verbatim = True  # a later user turn, or a shape we do not model
            n += 1
    meta: dict[str, Any] = {
        "id": key,
        "tools": tools,
        "files": files,
        "gt_answer": sample.get("gt_answer"),
    }
    if verbatim or sample_from_parts(meta, dialogs[0]["content"], golden)["dialogs"] != dialogs:
        meta["dialogs"] = dialogs
    return Task(
        id=ID_PREFIX + key,
        query=dialogs[0]["content"],
        files=[TaskFile(name=f["path"], path=f["path"], type=_file_kind(f.get("type"))) for f in files],
        tools=[t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)],
        golden=golden,
        answer=_answer_spec(sample.get("gt_answer"), where),
        category="gta",
        metadata={"gta": meta},
    )


def load_gta_dataset(path: Path | str) -> TaskSet:
    """GTA's dataset.json as a TaskSet whose file paths are relative to the dataset folder."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise EvaluationError(f"{path}: not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise EvaluationError(f"{path}: expected an object keyed by sample id")
    return TaskSet([sample_to_task(str(k), v) for k, v in data.items()], base_dir=path.parent)


def sample_from_parts(meta: Mapping[str, Any], query: str, golden: Iterable[GoldenStep]) -> dict[str, Any]:
    dialogs: list[dict[str, Any]] = [{"role": "user", "content": query}]
    for step in golden:
        action = step.action
        if isinstance(action, ToolCall):
            turn: dict[str, Any] = {"role": "assistant"}
            if action.thought is not None:
                turn["thought"] = action.thought
            turn["tool_calls"] = [
                {"type": "function", "function": {"name": action.name, "arguments": dict(action.arguments)}}
            ]
            dialogs.append(turn)
            dialogs.append({"role": "tool", "name": action.name, "content": step.expected})
        elif isinstance(action, FinalAnswer):
            answer: dict[str, Any] = {"role": "assistant"}
            if action.thought is not None:
                answer["thought"] = action.thought
            answer["content"] = action.text
            dialogs.append(answer)
    return {
        "tools": meta.get("tools", []),
        "files": meta.get("files", []),
        "dialogs": dialogs,
        "gt_answer": meta.get("gt_answer"),
    }


def task_to_gta_sample(task: Task, toolmeta: Mapping[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
    """(key, sample) for dataset.json. A task that did not come from GTA gets its tool records
    from `toolmeta` (GTA's toolmeta.json, or ToolSet.to_agentlego_toolmeta())."""
    meta = task.metadata.get("gta")
    if isinstance(meta, dict) and "id" in meta:
        sample = sample_from_parts(meta, task.query, task.golden)
        if "dialogs" in meta:
            sample["dialogs"] = meta["dialogs"]
        return str(meta["id"]), sample
    records = toolmeta or {}
    missing = [name for name in task.tools or [] if name not in records]
    if missing:
        raise EvaluationError(f"task {task.id!r}: no toolmeta record for {', '.join(missing)}")
    spec = task.answer
    gt: Any = None
    if spec is not None and spec.whitelist:
        gt = {"whitelist": spec.whitelist, "blacklist": spec.blacklist}
    elif spec is not None and spec.references:
        gt = list(spec.references)
    parts = {
        "tools": [records[name] for name in task.tools or []],
        "files": [{"type": f.type, "path": f.name} for f in task.files],
        "gt_answer": gt,
    }
    return task.id.removeprefix(ID_PREFIX), sample_from_parts(parts, task.query, task.golden)


def write_gta_dataset(
    tasks: Iterable[Task], path: Path | str, toolmeta: Mapping[str, Any] | None = None
) -> None:
    samples = dict(task_to_gta_sample(t, toolmeta) for t in tasks)
    Path(path).write_text(json.dumps(samples, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def load_toolmeta(path: Path | str) -> dict[str, Any]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise EvaluationError(f"{path}: toolmeta must be an object keyed by tool name")
    return data


# ---- tools for step mode -----------------------------------------------------------------------

_INPUT_TYPES = {"text": "string", "int": "integer", "float": "number", "bool": "boolean"}


def toolmeta_schema(record: Mapping[str, Any]) -> dict[str, Any]:
    """JSON Schema of a toolmeta record's inputs (image inputs are file references)."""
    properties: dict[str, Any] = {}
    required = []
    for item in record.get("inputs", []) or []:
        name = str(item.get("name"))
        kind = item.get("type")
        schema: dict[str, Any]
        if kind in ("image", "file", "audio"):
            schema = {"type": "string", "format": "image" if kind == "image" else "file"}
        else:
            schema = {"type": _INPUT_TYPES.get(str(kind), "string")}
        if item.get("description"):
            schema["description"] = item["description"]
        if item.get("optional"):
            if item.get("default") is not None:
                schema["default"] = item["default"]
        else:
            required.append(name)
        properties[name] = schema
    return {"type": "object", "properties": properties, "required": required}


def replay_toolset(task: Task, toolmeta: Mapping[str, Any] | None = None) -> ToolSet:
    """The task's tools, answering each golden call (same name and arguments) with its recorded
    result and anything else with GTA's "Dummy Result". File inputs are taken as names, not
    opened, since nothing runs."""
    meta = task.metadata.get("gta", {})
    records = (
        {r["name"]: r for r in meta.get("tools", []) if isinstance(r, dict)} if isinstance(meta, dict) else {}
    )
    records.update({k: v for k, v in (toolmeta or {}).items() if k not in records})
    recorded: dict[tuple[str, str], list[Any]] = {}
    for step in task.golden:
        if isinstance(step.action, ToolCall):
            key = (step.action.name, canonical_json(dict(step.action.arguments)))
            recorded.setdefault(key, []).append(step.expected)

    def answer_for(name: str) -> Any:
        def run(arguments: dict[str, Any], ctx: ToolContext) -> Any:
            queue = recorded.get((name, canonical_json(arguments)))
            if not queue:
                return DUMMY_RESULT
            value = queue.pop(0) if len(queue) > 1 else queue[0]
            if isinstance(value, dict) and value.get("type") == "text" and "content" in value:
                return value["content"]
            return value if value is not None else DUMMY_RESULT

        return run

    tools = ToolSet()
    for name in task.tools or []:
        record = records.get(name, {"name": name, "inputs": []})
        schema = toolmeta_schema(record)
        for prop in schema["properties"].values():
            prop.pop("format", None)  # names are passed through, never resolved to files
        tools.add(
            SchemaTool(
                name,
                schema,
                answer_for(name),
                description=str(record.get("description") or ""),
                category=_CATEGORY.get(name, "operation"),
                backend="gta-replay",
            )
        )
    return tools
