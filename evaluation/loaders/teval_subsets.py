"""T-Eval's step-wise subsets built from toolgym traces, in T-Eval's own file format.

T-Eval evaluates a model step by step on annotated solution paths: six subsets (instruct, plan,
reason, retrieve, understand, review), each a JSON object keyed by datum id whose data hold the
chat prompt (`origin_prompt`), the `ground_truth`, `meta_data` / `meta` and, for instruct, the
response `template`. `build_subsets` writes them from end-to-end traces taken as reference
paths (golden traces: `toolgym record`, or the oracle's run), so any model can be evaluated step
by step on toolgym's tasks and scored with the T-Eval suite (`toolgym eval --teval-results`):

    instruct_v2.json                      each call of the path, once as JSON and once as string
    plan_json_v2.json, plan_str_v2.json   the whole path as a plan (ends with FinishAction)
    reason_retrieve_understand_json_v2.json, reason_str_v2.json, retrieve_str_v2.json,
    understand_str_v2.json                the next call given the path so far
    review_str_v2.json, review_json_v2.json  a call and its response: which of T-Eval's five
                                          classes the response is in

Review items come from the typed errors the trace recorded (`REVIEW_CLASS`): no error is a
success, infra errors and timeouts are internal errors, format, unknown-tool and argument errors
are input errors, a tool's own failure is "unable to accomplish"; a successful response of another
task's different tool shown as this call's response is an irrelevant response. The paths carry no
annotated thoughts: a step's thought is its golden thought where it has one, else a sentence
written from the call (`step_thought`), which reason then compares the model's thought with.

The prompts are ours (T-Eval's data ship their own, written for its 50 APIs); the file layout and
fields are T-Eval's, which its evaluators and toolgym's loader (`loaders/teval.py`) read.
`golden_prediction` fills a datum's `prediction` with its ground truth in the subset's response
format: those files score 100 in fixed mode (the test of the whole chain).

Any agent answers the subsets (`answer_subsets`, the `toolgym teval-answer` command): each datum's
`origin_prompt` goes to the agent as a teacher-forced step (`agent_prediction`: the system message
as its instructions, the rest as `info["history"]`, T-Eval's `function` role as an observation)
or, for the LLM agent, to its model as chat messages (`function` as `user`, as T-Eval's API
meta template sends it); the reply's text is the datum's `prediction`.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolgym.actions import ACTION_ADAPTER, Action
from toolgym.canonical import canonical_json
from toolgym.errors import ErrorKind
from toolgym.evaluation.base import EvaluationError, is_teacher_forced
from toolgym.evaluation.loaders.teval import read_teval_file
from toolgym.evaluation.metrics.teval import FINISH, subset_dimension
from toolgym.protocols.base import ActionProtocol
from toolgym.tasks import Task, TaskSet
from toolgym.tools import ToolSet
from toolgym.trace import Trace

REVIEW_CLASSES = ("success", "internal error", "input error", "irrelevant response", "unable to accomplish")
REVIEW_OPTIONS = dict(zip(REVIEW_CLASSES, "ABCDE", strict=True))
# typed error kind -> T-Eval review class (no error: success)
REVIEW_CLASS: dict[str, str] = {
    ErrorKind.INFRA_ERROR.value: "internal error",
    ErrorKind.TIMEOUT.value: "internal error",
    ErrorKind.FORMAT_ERROR.value: "input error",
    ErrorKind.UNKNOWN_TOOL.value: "input error",
    ErrorKind.ARGUMENT_ERROR.value: "input error",
    ErrorKind.TOOL_ERROR.value: "unable to accomplish",
}
SUBSETS = (
    "instruct_v2",
    "plan_json_v2",
    "plan_str_v2",
    "reason_retrieve_understand_json_v2",
    "reason_str_v2",
    "retrieve_str_v2",
    "understand_str_v2",
    "review_str_v2",
    "review_json_v2",
)
JSON_TEMPLATE = {"thought": "thought", "action": "name", "args": "args"}
STRING_TEMPLATE = {
    "thought_start": "Thought:",
    "thought_end": "\n",
    "action_start": "Action:",
    "action_end": "\n",
    "args_start": "Action Input:",
    "args_end": "",
}

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class Step:
    """One tool call of a reference path and what came back."""

    name: str
    arguments: dict[str, Any]
    thought: str
    response: str
    error_kind: str | None


@dataclass(frozen=True)
class RefPath:
    task: Task
    steps: tuple[Step, ...]
    tool_docs: tuple[dict[str, Any], ...]


def step_thought(name: str, arguments: Mapping[str, Any], description: str) -> str:
    """The thought of a step whose path has none: what the call does, written from the call."""
    purpose = f" ({description.splitlines()[0].rstrip('.')})" if description.strip() else ""
    return f"Next I call {name}{purpose} with {canonical_json(dict(arguments))}."


def tool_docs(tools: Iterable[Any]) -> tuple[dict[str, Any], ...]:
    return tuple(
        {"name": t.name, "description": t.description, "parameters": t.parameters_schema()}
        for t in sorted(tools, key=lambda t: t.name)
    )


def _paths(traces: Sequence[Trace], task_sets: Sequence[TaskSet], toolset: ToolSet) -> list[RefPath]:
    """The reference path of each end-to-end trace of a task in `task_sets`, in trace order per
    set (the tools each task offers are read from a ToolEnv reset to it: names, descriptions,
    schemas)."""
    paths: list[RefPath] = []
    claimed: set[int] = set()
    for tasks in task_sets:
        mine = [t for n, t in enumerate(traces) if n not in claimed and t.header.task_id in tasks]
        claimed.update(n for n, t in enumerate(traces) if t.header.task_id in tasks)
        paths.extend(_set_paths(mine, tasks, toolset))
    return paths


def _set_paths(traces: Sequence[Trace], tasks: TaskSet, toolset: ToolSet) -> list[RefPath]:
    from toolgym.envs.tool_env import ToolEnv

    env = ToolEnv(toolset, tasks)
    paths: list[RefPath] = []
    try:
        for trace in traces:
            if is_teacher_forced(trace):
                continue
            task = tasks[trace.header.task_id]
            env.reset(seed=trace.header.seed, options={"task": task})
            docs = tool_docs(env.offered)
            described = {d["name"]: str(d["description"] or "") for d in docs}
            golden_thoughts = [
                g.action.thought or "" for g in task.golden if getattr(g.action, "type", "") == "tool_call"
            ]
            steps: list[Step] = []
            for trace_step in trace.steps:
                for n, action in enumerate(trace_step.actions):
                    if action.get("type") != "tool_call":
                        continue
                    obs = trace_step.observations[n] if n < len(trace_step.observations) else {}
                    error = obs.get("error")
                    kind = error.get("kind") if isinstance(error, dict) else None
                    if kind is None and "format_error" in trace_step.error_kinds:
                        kind = "format_error"
                    name = str(action.get("name"))
                    args = dict(action.get("arguments") or {})
                    index = len(steps)
                    thought = str(action.get("thought") or "") or (
                        golden_thoughts[index] if index < len(golden_thoughts) else ""
                    )
                    steps.append(
                        Step(
                            name=name,
                            arguments=args,
                            thought=thought or step_thought(name, args, described.get(name, "")),
                            response=str(obs.get("text", "")),
                            error_kind=str(kind) if kind else None,
                        )
                    )
            paths.append(RefPath(task=task, steps=tuple(steps), tool_docs=docs))
    finally:
        env.close()
    return paths


# ---- prompts ---------------------------------------------------------------------------------------


def _system(path: RefPath, instruction: str) -> dict[str, str]:
    tools = json.dumps(list(path.tool_docs), ensure_ascii=False, sort_keys=True)
    return {
        "role": "system",
        "content": f"You are an assistant that solves the user's request with these tools:\n{tools}\n\n{instruction}",
    }


def _history(path: RefPath, upto: int) -> Messages:
    """The path's first `upto` calls as assistant turns (JSON) and their responses."""
    out: Messages = []
    for step in path.steps[:upto]:
        call = {"thought": step.thought, "name": step.name, "args": step.arguments}
        out.append({"role": "assistant", "content": json.dumps(call, ensure_ascii=False, sort_keys=True)})
        out.append({"role": "function", "content": step.response})
    return out


def _prompt(path: RefPath, instruction: str, upto: int) -> Messages:
    return [_system(path, instruction), {"role": "user", "content": path.task.query}, *_history(path, upto)]


INSTRUCT_JSON = (
    "Give your next step as one JSON object with the keys thought (your reasoning), name (the tool) "
    "and args (the arguments, an object)."
)
INSTRUCT_STRING = (
    "Give your next step in three lines:\nThought: <your reasoning>\nAction: <the tool>\n"
    "Action Input: <the arguments, as a dict literal>"
)
PLAN_JSON = (
    "Before calling any tool, write the whole plan as a JSON list of steps "
    '{"id": <0, 1, ...>, "name": <the tool>, "args": <the arguments, as a string>}, ending with '
    f'{{"name": "{FINISH}"}}.'
)
PLAN_STR = (
    "Before calling any tool, write the whole plan, one step per line, naming the tool each step calls."
)
RRU_JSON = (
    "Give your next step as one JSON object with the keys thought (why this step), name (the tool) "
    "and args (the arguments, an object)."
)
REASON_STR = "Say in one sentence what you should do next and why; do not call a tool."
RETRIEVE_STR = "Name the one tool you should call next; name no other tool."
UNDERSTAND_STR = "The next tool to call is {name}. Give its arguments as one JSON object."
REVIEW_STR = (
    "Review the tool response of the last call. Which of these describes it?\n"
    + "\n".join(f"{letter}. {cls}" for cls, letter in REVIEW_OPTIONS.items())
    + "\nAnswer with 'Answer: <letter>'."
)
REVIEW_JSON = (
    "Review the tool response of the last call. Answer with one JSON object "
    '{"is_finished": true} when the call succeeded and its response serves the request, '
    'else {"is_finished": false}.'
)


def _plan_line(step: Step) -> str:
    # str plans are split at ". " and line ends (T-Eval's reading): a line holds neither
    text = f"{step.name} with {canonical_json(step.arguments)}"
    return text.replace("\n", " ").replace(". ", ".")


# ---- the subsets -------------------------------------------------------------------------------------


def _review_items(paths: Sequence[RefPath], seed: int) -> list[tuple[RefPath, int, str, str]]:
    """(path, call index, response shown, class) per call of every path, plus one irrelevant
    response per successful call where another task's different tool answered successfully."""
    items: list[tuple[RefPath, int, str, str]] = []
    successes = [(p, i, s) for p in paths for i, s in enumerate(p.steps) if s.error_kind is None]
    rng = random.Random(seed)
    for path in paths:
        for i, step in enumerate(path.steps):
            label = (
                "success" if step.error_kind is None else REVIEW_CLASS.get(step.error_kind, "internal error")
            )
            items.append((path, i, step.response, label))
            if step.error_kind is not None:
                continue
            others = [
                s.response for p, _, s in successes if p.task.id != path.task.id and s.name != step.name
            ]
            if others:
                items.append((path, i, rng.choice(others), "irrelevant response"))
    return items


def build_subsets(
    traces: Sequence[Trace],
    tasks: TaskSet | Sequence[TaskSet],
    toolset: ToolSet | None = None,
    *,
    seed: int = 0,
) -> dict[str, dict[str, dict[str, Any]]]:
    """Subset name -> {datum id: datum}, for the traces' reference paths (`seed` picks the
    irrelevant responses of review). `tasks`: the task set(s) the traces ran on, each with its
    own folder for task files. Traces of other tasks, and teacher-forced ones, are left out; a
    trace set with no path raises EvaluationError."""
    if toolset is None:
        from toolgym.toolservers.registry import default_toolset

        toolset = default_toolset()
    paths = _paths(traces, [tasks] if isinstance(tasks, TaskSet) else list(tasks), toolset)
    if not paths:
        raise EvaluationError(f"none of the {len(traces)} traces is an end-to-end episode of a known task")
    subsets: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in SUBSETS}
    for subset, datum in _data(paths, seed):
        subsets[subset][str(len(subsets[subset]))] = datum
    return {name: data for name, data in subsets.items() if data}


Datum = tuple[str, dict[str, Any]]  # (subset, datum)


def _data(paths: Sequence[RefPath], seed: int) -> Iterator[Datum]:
    """Every datum of the paths, in each subset's order: path by path, then review."""
    for path in paths:
        yield from _plan_data(path)
        yield from _step_data(path)
    yield from _review_data(paths, seed)


def _plan_data(path: RefPath) -> Iterator[Datum]:
    """The path as a whole plan: its successful calls, then FinishAction, as JSON and as lines."""
    source = {"task_id": path.task.id}
    # a call that failed is no ground truth: it feeds review alone (and the history)
    succeeded = [s for s in path.steps if s.error_kind is None]
    plan_gold = [
        {"id": i, "name": s.name, "args": canonical_json(s.arguments)} for i, s in enumerate(succeeded)
    ]
    plan_gold.append({"id": len(plan_gold), "name": FINISH, "args": "{}"})
    yield (
        "plan_json_v2",
        {
            "origin_prompt": _prompt(path, PLAN_JSON, 0),
            "ground_truth": plan_gold,
            "meta": {"prompt_type": "json", "source": source},
        },
    )
    names = sorted(
        {d["name"] for d in path.tool_docs} | {s.name for s in path.steps}, key=lambda n: (-len(n), n)
    )
    str_gold = [{"id": i, "name": s.name, "args": _plan_line(s)} for i, s in enumerate(succeeded)]
    str_gold.append({"id": len(str_gold), "name": FINISH, "args": "{}"})
    yield (
        "plan_str_v2",
        {
            "origin_prompt": _prompt(path, PLAN_STR, 0),
            "ground_truth": str_gold,
            # longest names first: a line naming get_weather_today is not read as get_weather
            "meta": {"prompt_type": "str", "API_list": names, "source": source},
        },
    )


def _step_data(path: RefPath) -> Iterator[Datum]:
    """Each successful call of the path as the next step given the path so far: instruct (JSON
    and string), reason-retrieve-understand, reason, retrieve and understand."""
    source = {"task_id": path.task.id}
    for i, step in enumerate(path.steps):
        if step.error_kind is not None:
            continue
        at = {**source, "step": i}
        gold = {"thought": step.thought, "name": step.name, "args": step.arguments}
        for fmt, instruction, template in (
            ("json", INSTRUCT_JSON, JSON_TEMPLATE),
            ("string", INSTRUCT_STRING, STRING_TEMPLATE),
        ):
            yield (
                "instruct_v2",
                {
                    "origin_prompt": _prompt(path, instruction, i),
                    "template": template,
                    "meta_data": {"response_format": fmt, "source": at},
                    "ground_truth": {"action": step.name, "args": step.arguments},
                },
            )
        yield (
            "reason_retrieve_understand_json_v2",
            {
                "origin_prompt": _prompt(path, RRU_JSON, i),
                "ground_truth": gold,
                "meta_data": {"response_format": "json", "source": at},
            },
        )
        for subset, instruction in (
            ("reason_str_v2", REASON_STR),
            ("retrieve_str_v2", RETRIEVE_STR),
            ("understand_str_v2", UNDERSTAND_STR.format(name=step.name)),
        ):
            yield (
                subset,
                {
                    "origin_prompt": _prompt(path, instruction, i),
                    "ground_truth": gold,
                    "meta_data": {"response_format": "str", "source": at},
                },
            )


def _review_data(paths: Sequence[RefPath], seed: int) -> Iterator[Datum]:
    """Each call's response (and an irrelevant one, `_review_items`) to be classed, as a
    letter and as JSON."""
    for path, i, response, label in _review_items(paths, seed):
        prompt = _prompt(path, "", i + 1)
        prompt[-1] = {"role": "function", "content": response}
        at = {"task_id": path.task.id, "step": i, "class": label}
        for subset, instruction, answer in (
            ("review_str_v2", REVIEW_STR, REVIEW_OPTIONS[label]),
            ("review_json_v2", REVIEW_JSON, label == "success"),
        ):
            yield (
                subset,
                {
                    "origin_prompt": [_system(path, instruction), *prompt[1:]],
                    "template": {},
                    "meta_data": {
                        "response_format": "json" if subset.startswith("review_json") else "str",
                        "source": at,
                    },
                    "ground_truth": {"answer": answer},
                },
            )


def golden_prediction(subset: str, datum: Mapping[str, Any]) -> str:
    """The datum's ground truth written as a reply in the subset's response format: what a model
    that answers every step right would say."""
    dimension, prompt_type = subset_dimension(subset)
    gt = datum["ground_truth"]
    if dimension == "instruct":
        fmt = datum["meta_data"]["response_format"]
        thought = "following the path"
        if fmt == "json":
            return json.dumps(
                {"thought": thought, "name": gt["action"], "args": gt["args"]}, ensure_ascii=False
            )
        return f"Thought: {thought}\nAction: {gt['action']}\nAction Input: {gt['args']!r}"
    if dimension == "plan":
        if prompt_type == "json" or datum.get("meta", {}).get("prompt_type") == "json":
            return json.dumps(gt, ensure_ascii=False)
        return "\n".join(str(step["args"]) for step in gt if step["name"] != FINISH)
    if dimension == "review":
        if datum["meta_data"]["response_format"] == "json":
            return json.dumps({"is_finished": gt["answer"]})
        return f"Answer: {gt['answer']}"
    if dimension == "rru":
        return json.dumps(gt, ensure_ascii=False)
    field = {"reason": "thought", "retrieve": "name", "understand": "args"}[dimension]
    return str(gt[field])  # arguments as a dict literal, as T-Eval's str subsets write them


def write_subsets(
    subsets: Mapping[str, Mapping[str, Mapping[str, Any]]],
    out: Path,
    *,
    golden_predictions: bool = False,
    predictions: Mapping[str, Mapping[str, str]] | None = None,
) -> list[Path]:
    """One T-Eval file per subset in `out` (`<subset>.json`); with `golden_predictions`, each
    datum carries `golden_prediction` as its `prediction` (a result file that scores 100); with
    `predictions` (subset -> datum id -> reply), those."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data in subsets.items():
        rows = {
            key: {**datum, "prediction": golden_prediction(name, datum)}
            if golden_predictions
            else {**datum, "prediction": predictions[name][key]}
            if predictions is not None
            else dict(datum)
            for key, datum in data.items()
        }
        path = out / f"{name}.json"
        path.write_text(json.dumps(rows, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        written.append(path)
    return written


# ---- answering the subsets -------------------------------------------------------------------------

Subsets = dict[str, dict[str, dict[str, Any]]]
Answer = Callable[[str, str, Mapping[str, Any]], str]  # (subset, datum id, datum) -> the reply


def read_subsets(folder: Path) -> Subsets:
    """The T-Eval files of a folder (`<subset>.json`, as `toolgym teval-subsets` writes them) by
    subset name; EvaluationError for a folder with none, or a file T-Eval cannot read."""
    found = {name: folder / f"{name}.json" for name in SUBSETS if (folder / f"{name}.json").is_file()}
    if not found:
        raise EvaluationError(f"{folder}: no T-Eval subset files ({', '.join(f'{n}.json' for n in SUBSETS)})")
    subsets: Subsets = {}
    for name, path in found.items():
        data = read_teval_file(path)
        for key, datum in data.items():
            if not isinstance(datum.get("origin_prompt"), list):
                raise EvaluationError(f"{path}: datum {key!r} has no origin_prompt (a list of messages)")
        subsets[name] = data
    return subsets


def chat_messages(datum: Mapping[str, Any]) -> list[dict[str, str]]:
    """A datum's prompt as chat messages: T-Eval's `function` role (a tool's response) is sent
    as `user`, as T-Eval's meta template for API models does."""
    return [
        {
            "role": "user" if m.get("role") == "function" else str(m.get("role")),
            "content": str(m.get("content", "")),
        }
        for m in datum["origin_prompt"]
    ]


def reply_text(output: Any, protocol: ActionProtocol) -> str:
    """An agent's output as the text T-Eval scores: text as is, a chat message's content, an
    Action written in the protocol's form."""
    if isinstance(output, str):
        return output
    if isinstance(output, dict):
        content = output.get("content")
        return content if isinstance(content, str) else json.dumps(output, ensure_ascii=False)
    if isinstance(output, list):
        return "\n".join(reply_text(o, protocol) for o in output)
    action: Action = ACTION_ADAPTER.validate_python(output)  # an Action (or its dict) an agent returned
    formatted = protocol.format_action(action)
    return formatted if isinstance(formatted, str) else json.dumps(formatted, ensure_ascii=False)


def agent_prediction(
    agent: Any, protocol: ActionProtocol, subset: str, key: str, datum: Mapping[str, Any]
) -> str:
    """One datum answered by an agent (`toolgym.envs.agents.Agent`) as a teacher-forced step
    (toolgym.envs.teacher's contract): the system message is `info["instructions"]`, the rest
    of the prompt `info["history"]` (`function` messages as observations), the last message the
    observation; the agent's output is the prediction."""
    messages = [dict(m) for m in datum["origin_prompt"]]
    system = messages.pop(0)["content"] if messages and messages[0].get("role") == "system" else ""
    history = [
        {"role": "observation" if m.get("role") == "function" else m.get("role"), "content": m.get("content")}
        for m in messages
    ]
    query = next((str(m["content"]) for m in history if m["role"] == "user"), "")
    task = Task(id=f"{subset}/{key}", query=query)
    info: dict[str, Any] = {
        "instructions": system,
        "teacher_forced": True,
        "history": history,
        "golden_step": sum(1 for m in history if m["role"] == "assistant"),
    }
    observation = str(history[-1]["content"]) if history else query
    agent.start(task, observation, info)
    return reply_text(agent.act(observation, info), protocol)


def answer_subsets(
    subsets: Mapping[str, Mapping[str, Mapping[str, Any]]], answer: Answer, *, concurrency: int = 1
) -> dict[str, dict[str, str]]:
    """subset -> datum id -> the reply `answer` gives, `concurrency` data at once (the first
    error stops it and is raised: nothing half-answered is returned)."""
    jobs = [(name, key, datum) for name, data in subsets.items() for key, datum in data.items()]
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        replies = list(pool.map(lambda job: answer(*job), jobs))
    out: dict[str, dict[str, str]] = {name: {} for name in subsets}
    for (name, key, _), reply in zip(jobs, replies, strict=True):
        out[name][key] = reply
    return out
