"""T-Eval data as toolgym Tasks, and back; T-Eval result files scored directly.

A T-Eval file (`instruct_v2.json`, `plan_json_v2.json`, `reason_str_v2.json`,
`reason_retrieve_understand_json_v2.json`, `review_str_v2.json`, ...) maps an id to a datum:
`origin_prompt` (chat messages), `ground_truth`, `meta_data` (`response_format`) or `meta`
(`prompt_type`, `API_list`), `template` (instruct), and, in a result file, the model's
`prediction`. A datum becomes a one-turn task: `query` is the last user message, `golden` the
ground truth as actions (the call, the plan's calls, or the review's answer), and
`metadata["teval"]` the datum verbatim (less the prediction) with its subset name, so
`task_to_teval_item` writes it back unchanged and the T-Eval suite scores a trace's raw output
exactly as T-Eval scores a prediction.

`teval_toolset` builds the 50 APIs of T-Eval's `api_descrip.json` (named `Tool.api`, as T-Eval's
prompts name them) as SchemaTools that check calls and never run them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from toolgym.actions import Action, FinalAnswer, NoCall, ToolCall
from toolgym.evaluation.base import EvaluationError, Mode, SuiteResult, check_mode
from toolgym.evaluation.metrics.teval import (
    FINISH,
    INSTRUCT_FORMATS,
    Item,
    SimilarityCheck,
    TEvalSuite,
    aggregate,
    format_load,
    subset_dimension,
)
from toolgym.protocols.base import RawOutput
from toolgym.tasks import GoldenStep, Task, TaskSet
from toolgym.tools import SchemaTool, ToolContext, ToolSet
from toolgym.trace import Trace

ID_PREFIX = "teval-"


def _messages(prompt: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(prompt, str):
        try:
            prompt = json.loads(prompt)
        except ValueError:
            return [{"role": "user", "content": prompt}]
    if not isinstance(prompt, list) or not all(isinstance(m, dict) for m in prompt):
        raise EvaluationError(f"{where}: origin_prompt must be a list of chat messages")
    return prompt


def _golden(dimension: str, prompt_type: str, gt: Any) -> list[GoldenStep]:
    """The ground truth as actions, where it names calls; [] where it does not parse."""
    steps: list[GoldenStep] = []
    try:
        if dimension == "plan":
            plan = format_load(gt, "[", "]")
            for entry in plan if isinstance(plan, list) else []:
                step_name = str(entry.get("name", "")) if isinstance(entry, dict) else ""
                if not step_name or step_name == FINISH:
                    continue
                step_args = entry.get("args", {})
                if isinstance(step_args, str):
                    try:
                        step_args = format_load(step_args, "{", "}")
                    except ValueError:
                        step_args = {}
                args_dict = step_args if isinstance(step_args, dict) else {}
                steps.append(GoldenStep(action=ToolCall(name=step_name, arguments=args_dict)))
            return steps
        if dimension == "review":
            answer = gt.get("answer") if isinstance(gt, dict) else gt
            return [GoldenStep(action=FinalAnswer(text=str(answer)))]
        data = format_load(gt, "{", "}")
    except ValueError:
        return []
    if not isinstance(data, dict):
        return []
    name = data.get("name", data.get("action"))
    args = data.get("args", {})
    if isinstance(args, str):
        try:
            args = format_load(args, "{", "}")
        except ValueError:
            args = {}
    thought = str(data["thought"]) if data.get("thought") is not None else None
    action: Action
    if not isinstance(name, str) or not name:
        action = NoCall(thought=thought or "")
    elif name == FINISH:
        text = args.get("response", args.get("answer", "")) if isinstance(args, dict) else ""
        action = FinalAnswer(text=str(text), thought=thought)
    else:
        action = ToolCall(name=name, arguments=args if isinstance(args, dict) else {}, thought=thought)
    return [GoldenStep(action=action)]


def _meta(datum: Mapping[str, Any]) -> dict[str, Any]:
    """The datum's `meta_data` and `meta` merged (instruct and review use the first, plan the second)."""
    meta: dict[str, Any] = {}
    for field in ("meta_data", "meta"):
        if isinstance(datum.get(field), dict):
            meta.update(datum[field])
    return meta


def _check_meta(dimension: str, prompt_type: str, datum: Mapping[str, Any], where: str) -> None:
    """Settings the scorer cannot use are errors here, where T-Eval crashes or drops the item."""
    meta = _meta(datum)
    label = meta.get("response_format", "json")
    if dimension == "instruct" and (not isinstance(label, str) or label not in INSTRUCT_FORMATS):
        # T-Eval would parse it as a string and leave it out of every mean
        raise EvaluationError(
            f"{where}: response_format {label!r} is not one of {', '.join(sorted(INSTRUCT_FORMATS))}"
        )
    if dimension != "plan":
        return
    plan_type = meta.get("prompt_type", prompt_type)
    if plan_type not in ("json", "str"):  # T-Eval: NotImplementedError (ReWOO is deprecated)
        raise EvaluationError(f"{where}: plan prompt_type {plan_type!r} is not json or str")
    api_list = meta.get("API_list", [])
    if plan_type == "str" and not (isinstance(api_list, list) and all(isinstance(n, str) for n in api_list)):
        raise EvaluationError(f"{where}: API_list must be a list of API names")


def datum_to_task(subset: str, key: str, datum: Mapping[str, Any]) -> Task:
    where = f"T-Eval {subset}/{key}"
    if not isinstance(datum, Mapping) or "origin_prompt" not in datum or "ground_truth" not in datum:
        raise EvaluationError(f"{where}: a datum needs 'origin_prompt' and 'ground_truth'")
    dimension, prompt_type = subset_dimension(subset)
    _check_meta(dimension, prompt_type, datum, where)
    messages = _messages(datum["origin_prompt"], where)
    query = next((str(m.get("content", "")) for m in reversed(messages) if m.get("role") == "user"), "")
    kept = {k: v for k, v in datum.items() if k != "prediction"}
    return Task(
        id=f"{ID_PREFIX}{subset}-{key}",
        query=query,
        golden=_golden(dimension, prompt_type, datum["ground_truth"]),
        category=dimension,
        max_steps=1,
        metadata={"teval": {"subset": subset, "key": key, "datum": kept}},
    )


def _read(path: Path) -> dict[str, Any]:
    """A T-Eval file: one JSON object keyed by datum id (a repeated id keeps its last datum, as
    T-Eval's json loader does), each datum an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise EvaluationError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise EvaluationError(f"{path}: not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise EvaluationError(f"{path}: expected an object keyed by datum id")
    for key, datum in data.items():
        if not isinstance(datum, dict):
            raise EvaluationError(f"{path}: datum {key!r} is not an object")
    return data


read_teval_file = _read  # the one reader of T-Eval's files (the subsets' answerer reads them too)


def is_teval_file(path: Path | str) -> bool:
    """Whether a file is one JSON object keyed by id whose values are objects: a T-Eval data or
    result file (load_teval_file checks each datum), not a JSONL task set or MTU rows."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return False  # JSONL (several documents), or not JSON at all
    return isinstance(data, dict) and bool(data) and all(isinstance(d, dict) for d in data.values())


def load_teval_file(path: Path | str, subset: str | None = None) -> TaskSet:
    """A T-Eval data (or result) file as a TaskSet; the subset is the file name's stem unless given."""
    path = Path(path)
    name = subset or path.stem
    try:
        tasks = [datum_to_task(name, str(k), v) for k, v in _read(path).items()]
    except EvaluationError as exc:
        raise _in_file(path, exc) from None
    return TaskSet(tasks, base_dir=path.parent)


def _in_file(path: Path, exc: EvaluationError) -> EvaluationError:
    """The error with the file's path in front, unless it names the file already."""
    message = str(exc)
    return exc if message.startswith(str(path)) else EvaluationError(f"{path}: {message}")


def task_to_teval_item(task: Task) -> tuple[str, dict[str, Any]]:
    meta = task.metadata.get("teval")
    if not isinstance(meta, dict) or "datum" not in meta:
        raise EvaluationError(f"task {task.id!r} did not come from a T-Eval file")
    return str(meta["key"]), dict(meta["datum"])


def item_from_task(task: Task, prediction: str) -> Item:
    _, datum = task_to_teval_item(task)
    subset = str(task.metadata["teval"]["subset"])
    dimension, prompt_type = subset_dimension(subset)
    meta = _meta(datum)
    if dimension == "plan" and isinstance(meta.get("prompt_type"), str):
        prompt_type = meta["prompt_type"]
    return Item(
        key=task.id,
        subset=subset,
        dimension=dimension,
        prompt_type=prompt_type,
        ground_truth=datum.get("ground_truth"),
        prediction=prediction,
        meta=meta,
        template=datum.get("template"),
    )


def write_teval_results(traces: Sequence[Trace], tasks: TaskSet, path: Path | str) -> None:
    """A T-Eval result file (each datum with the trace's raw output as `prediction`), which
    T-Eval's own evaluators read."""
    out: dict[str, Any] = {}
    for trace in traces:
        key, datum = task_to_teval_item(tasks[trace.header.task_id])
        raw = trace.steps[0].raw if trace.steps else ""
        datum["prediction"] = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
        out[key] = datum
    Path(path).write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def score_teval_files(
    paths: Iterable[Path | str], mode: Mode, *, suite: TEvalSuite | None = None
) -> SuiteResult:
    """T-Eval result files (data with `prediction`) scored as T-Eval scores them; the subset of
    each file is its name's stem (instruct_v2, plan_json_v2, review_str_v2, ...)."""
    mode = check_mode(mode)
    items: list[Item] = []
    for raw_path in paths:
        path = Path(raw_path)
        try:
            for key, datum in _read(path).items():
                task = datum_to_task(path.stem, str(key), datum)
                prediction = datum.get("prediction", "")
                items.append(
                    item_from_task(task, prediction if isinstance(prediction, str) else str(prediction))
                )
        except EvaluationError as exc:
            raise _in_file(path, exc) from None
    scorer = suite or TEvalSuite()
    similarity = SimilarityCheck()
    scores, per_task = scorer.score_items(items, mode, similarity)
    result = aggregate(scores, mode)
    result.notes.extend(scorer.similarity_notes(similarity))
    result.per_task = per_task
    result.counts = {"items": len(items)}
    return result


# ---- T-Eval's tool documentation ---------------------------------------------------------------------

_TYPES = {"STRING": "string", "NUMBER": "number", "BOOLEAN": "boolean", "ARRAY": "array", "OBJECT": "object"}


def _not_run(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, str]:
    return {"status": "not run: T-Eval scores the predicted call"}


def teval_toolset(api_descrip: Sequence[Mapping[str, Any]]) -> ToolSet:
    """T-Eval's `api_descrip.json` as SchemaTools named `Tool.api`."""
    tools = ToolSet()
    for tool in api_descrip:
        for api in tool.get("api_list", []):
            properties: dict[str, Any] = {}
            required = []
            for group, is_required in (("required_parameters", True), ("optional_parameters", False)):
                for p in api.get(group, []):
                    schema: dict[str, Any] = {"description": p.get("description", "")}
                    kind = _TYPES.get(str(p.get("type", "")).upper())
                    if kind is not None:
                        schema["type"] = kind
                    properties[str(p["name"])] = schema
                    if is_required:
                        required.append(str(p["name"]))
            tools.add(
                SchemaTool(
                    f"{tool['name']}.{api['name']}",
                    {"type": "object", "properties": properties, "required": required},
                    _not_run,
                    description=str(api.get("description", "")),
                    backend="teval-not-run",
                )
            )
    return tools


def load_teval_api_docs(path: Path | str) -> list[dict[str, Any]]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise EvaluationError(f"{path}: expected T-Eval's list of tool descriptions")
    return data


# ---- replay ------------------------------------------------------------------------------------------


def run_teval_items(
    tasks: TaskSet,
    outputs: Mapping[str, Sequence[RawOutput | Action]],
    trace_dir: Path,
    *,
    tools: ToolSet | None = None,
    protocol: str = "json",
    agent_name: str = "recorded",
) -> list[Path]:
    """Runs each T-Eval task teacher-forced for its one scored turn with the recorded outputs as
    the agent (T-Eval's JSON protocol by default); returns the trace paths. The raw output is
    what the suite scores; `tools` (e.g. `teval_toolset(...)`) only adds call checks."""
    from toolgym.envs.teacher import GoldenTurn
    from toolgym.envs.tool_env import ToolEnv
    from toolgym.evaluation.base import record_teacher_forced
    from toolgym.evaluation.loaders.mtu import RecordedAgent

    agent = RecordedAgent(outputs, name=agent_name)
    paths = []
    for task in tasks:
        env = ToolEnv(tools or ToolSet(), tasks, protocol=protocol, max_steps=1)
        turn = GoldenTurn(actions=tuple(g.action for g in task.golden) or (NoCall(),))
        try:
            _, path = record_teacher_forced(env, agent, task, trace_dir, golden=[turn])
        finally:
            env.close()
        paths.append(path)
    return paths


def predictions_from_file(path: Path | str, tasks: TaskSet) -> dict[str, list[RawOutput | Action]]:
    """Task id -> [prediction] from a T-Eval result file loaded with `load_teval_file`."""
    path = Path(path)
    out: dict[str, list[RawOutput | Action]] = {}
    for key, datum in _read(path).items():
        task_id = f"{ID_PREFIX}{path.stem}-{key}"
        if task_id in tasks and isinstance(datum.get("prediction"), str):
            out[task_id] = [datum["prediction"]]
    return out
