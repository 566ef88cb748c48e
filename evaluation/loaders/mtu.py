"""MTU-Bench (MTU-Eval) rows as toolgym Tasks, and back; model responses replayed as episodes.

An MTU-Eval row is `{id, question, answer}`: `question` is the whole ReAct prompt (rules, the API
list, the dialog history, the user's last turn) and `answer` the expected calls of the next turn,
`{tool: {param: value}}` (`{}` or `{"": {}}`: no call). A row becomes a one-turn task:

- `query` is the prompt exactly as the benchmark gives it, so the model sees what MTU showed;
- `tools` are the APIs of the prompt's list; `apps` are where they run end to end: the mock apps
  that implement them and, for the APIs no mock app implements, the simulated MTU library
  ("simulated:mtu", toolgym.mocks.simulated), so `toolgym run --tasks S-S_eval.jsonl` runs the
  dialog against real state. Teacher-forced (`run_mtu_episodes`), they are offered as SchemaTools
  that accept the call and do not run it (MTU scores the next turn only, as GTA's step mode does
  with dummy tools);
- `golden` is the expected next turn (its calls, or a NoCall);
- `metadata["mtu"]` keeps the row (`id`, `answer` verbatim, `split`, `row` index, `dialog`,
  `turn`) and the parsed dialog history (`history`), so the row can be written back unchanged.

`run_mtu_episodes` replays a response file (e.g. GPT-4's) through ToolEnv with the ReAct protocol
and writes one trace per row; `toolgym.evaluation.metrics.mtu.MTUSuite` scores those traces.
Each row runs teacher-forced (toolgym.envs.teacher) for one golden turn: the history is
inside the prompt, the expected next turn is the golden turn, and the trace holds the model's
prediction for it (toolgym.evaluation.base.record_teacher_forced).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolgym.actions import Action, NoCall, ToolCall
from toolgym.evaluation.base import EvaluationError
from toolgym.evaluation.metrics.mtu import (
    HISTORY_MARKER,
    MULTI_TURN_SPLITS,
    PAIRING_KEY,
    describe_move,
    describe_response,
    dialog_keys,
    dialog_turn,
    gold_calls,
    pair_responses,
    read_id_rows,
    read_rows,
    response_text,
    split_of,
    split_prompt,
    unique_keys,
)
from toolgym.mocks.simulated.docs import list_parameters_schema
from toolgym.protocols.base import RawOutput
from toolgym.tasks import GoldenStep, Task, TaskSet
from toolgym.tools import SchemaTool, ToolContext, ToolSet
from toolgym.trace import Trace

if TYPE_CHECKING:
    from toolgym.envs.teacher import GoldenTurn

NOT_RUN = {"status": "not run: MTU scores the next turn only"}


def read_jsonl(path: Path | str) -> list[dict[str, Any]]:
    """The rows of an MTU JSONL file; a bad line is an EvaluationError naming file and line."""
    return [row for _, row in read_rows(path)]


# ---- parsing the prompt ----------------------------------------------------------------------


def _literal(text: str) -> Any:
    """A JSON or Python literal (the S-S prompts print the API list with Python's repr); parsed
    as data only, never evaluated."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError) as exc:
        raise EvaluationError(f"API list is neither JSON nor a Python literal: {exc}") from None


def parse_api_list(question: str) -> list[dict[str, Any]]:
    """The API documentation the prompt lists (dicts with name, description, parameters);
    entries that are not API objects are dropped."""
    parts = split_prompt(question)
    if parts is None:
        raise EvaluationError("MTU prompt has no API list ('The following is a list of APIs ...')")
    apis = _literal(parts[0])
    shared: Any = None
    if isinstance(apis, dict) and isinstance(apis.get("apis"), list):
        # some OOD prompts: {"apis": [...], "available_parameters": [...]}, parameters shared by all
        shared, apis = apis.get("available_parameters"), apis["apis"]
    if not isinstance(apis, list):
        raise EvaluationError("MTU API list must be a list (or an object with an 'apis' list)")
    # entries that document no API are left out (S-S_17 lists only the string 'api_descriptions')
    found = [a for a in apis if isinstance(a, dict) and isinstance(a.get("name"), str)]
    if isinstance(shared, list):
        found = [
            a
            if "required_parameters" in a or "optional_parameters" in a
            else {**a, "optional_parameters": shared}
            for a in found
        ]
    return found


def api_parameters_schema(api: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON Schema of an MTU API's parameters. Types are left out on purpose: MTU's documented
    types are loose ("integer" parameters get "5"), and its scorer compares text."""
    return list_parameters_schema(api, typed=False)


@cache
def api_homes() -> dict[str, str]:
    """Where each MTU API name runs end to end: its mock app, or the simulated MTU library
    ("simulated:mtu", fixtures/mtu: the APIs no mock app implements, with their own schemas)."""
    from toolgym.mocks.app import app_apis
    from toolgym.mocks.apps.mtu import MTU_APPS
    from toolgym.mocks.simulated.app import get_simulated_app

    homes = {d.name: "simulated:mtu" for d in get_simulated_app("simulated:mtu").docs}
    homes.update({api.name: cls.name for cls in MTU_APPS for api in app_apis(cls)})
    return homes


def apps_for(names: Iterable[str]) -> list[str] | None:
    """The apps a row's APIs need to run end to end (None when one of them has no home)."""
    homes = api_homes()
    wanted = list(names)
    if not wanted or any(n not in homes for n in wanted):
        return None
    return sorted({homes[n] for n in wanted})


def _not_run(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, str]:
    return dict(NOT_RUN)


def toolset_for(apis: Iterable[Mapping[str, Any]]) -> ToolSet:
    """SchemaTools for an MTU API list: calls are validated (names, required parameters) and
    answered with a fixed note, never run."""
    tools = ToolSet()
    for api in apis:
        name = str(api["name"]).strip()
        if not name or name in tools:
            continue
        tools.add(
            SchemaTool(
                name,
                api_parameters_schema(api),
                _not_run,
                description=str(api.get("description", "")),
                backend="mtu-not-run",
            )
        )
    return tools


_TURN_RE = re.compile(r"^(User|Assistant|Action):[ \t]?(.*)$")


def parse_history(question: str) -> list[dict[str, Any]]:
    """The dialog history of an M-S/M-M prompt as [{role: user|assistant, content} and
    {role: action, calls: {...}}], in order; [] for single-turn prompts."""
    start = question.find(HISTORY_MARKER)
    if start < 0:
        return []
    body = question[start + len(HISTORY_MARKER) :]
    history: list[dict[str, Any]] = []
    for line in body.splitlines():
        match = _TURN_RE.match(line)
        if match is None:
            if history and line.strip() and history[-1]["role"] != "action":
                history[-1]["content"] += "\n" + line.strip()
            continue
        role, text = match.group(1).lower(), match.group(2).strip()
        if role == "action":
            try:
                calls = _literal(text) if text else {}
            except EvaluationError:
                calls = {"_unparsed": text}
            history.append({"role": "action", "calls": calls if isinstance(calls, dict) else {}})
        else:
            history.append({"role": role, "content": text})
    return history


# ---- rows <-> tasks ------------------------------------------------------------------------------


def golden_of(answer: Mapping[str, Any]) -> list[GoldenStep]:
    calls = gold_calls(answer)
    if not calls:
        return [GoldenStep(action=NoCall(thought="no API call this turn"))]
    return [GoldenStep(action=ToolCall(name=c.name, arguments=c.arguments)) for c in calls]


def row_to_task(
    row: Mapping[str, Any], *, index: int = 0, key: str | None = None, dialog: str | None = None
) -> Task:
    item_id = row.get("id")
    question = row.get("question")
    answer = row.get("answer")
    if not isinstance(item_id, str) or not isinstance(question, str) or not isinstance(answer, dict):
        raise EvaluationError(
            f"MTU row {index}: needs a string 'id', a string 'question' and an object 'answer'"
        )
    split = split_of(item_id)
    prefix, turn = dialog_turn(item_id) if split in MULTI_TURN_SPLITS else (item_id, 0)
    apis = parse_api_list(question)
    names = list(dict.fromkeys(str(a["name"]).strip() for a in apis if str(a["name"]).strip()))
    return Task(
        id=key or item_id,
        query=question,
        tools=names,
        apps=apps_for(names),
        golden=golden_of(answer),
        category=split,
        max_steps=1,
        metadata={
            "mtu": {
                "id": item_id,
                "split": split,
                "row": index,
                "dialog": dialog or prefix,
                "turn": turn,
                "answer": answer,
                "history": parse_history(question),
            }
        },
    )


def load_mtu_tasks(eval_jsonl: Path | str) -> TaskSet:
    """An MTU-Eval file as a TaskSet (task ids are the row ids; a repeated id gets '~2', '~3')."""
    rows = read_jsonl(eval_jsonl)
    ids = [str(r.get("id")) for r in rows]
    keys = unique_keys(ids)
    multi = any(split_of(i) in MULTI_TURN_SPLITS for i in ids)
    questions = [q if isinstance(q := r.get("question"), str) else "" for r in rows]
    dialogs = dialog_keys(ids, questions) if multi else ids
    tasks = [row_to_task(r, index=n, key=keys[n], dialog=dialogs[n]) for n, r in enumerate(rows)]
    return TaskSet(tasks, base_dir=Path(eval_jsonl).parent)


def task_to_row(task: Task) -> dict[str, Any]:
    """The MTU-Eval row a task came from (or one built from its golden step for a new task)."""
    meta = task.metadata.get("mtu")
    if isinstance(meta, dict) and "id" in meta and "answer" in meta:
        return {"id": meta["id"], "question": task.query, "answer": meta["answer"]}
    answer: dict[str, Any] = {}
    for step in task.golden:
        if isinstance(step.action, ToolCall):
            answer[step.action.name] = dict(step.action.arguments)
    return {"id": task.id, "question": task.query, "answer": answer}


def write_mtu_rows(tasks: Iterable[Task], path: Path | str) -> None:
    with Path(path).open("w", encoding="utf-8") as fh:
        for task in tasks:
            fh.write(json.dumps(task_to_row(task), ensure_ascii=False) + "\n")


def responses_from_traces(traces: Sequence[Trace], tasks: TaskSet, model: str = "") -> list[dict[str, Any]]:
    """MTU response rows `{id, model, response}` from traces (the first step's raw text)."""
    out = []
    for trace in traces:
        task = tasks[trace.header.task_id]
        raw = trace.steps[0].raw if trace.steps else ""
        text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
        out.append({"id": task_to_row(task)["id"], "model": model or trace.header.agent, "response": text})
    return out


# ---- replay --------------------------------------------------------------------------------------


class RecordedAgent:
    """Replays recorded model outputs: for each task, its outputs in order (raw text goes through
    the env's protocol exactly as a live model's would). A task with no recording answers ''."""

    def __init__(self, outputs: Mapping[str, Sequence[RawOutput | Action]], name: str = "recorded") -> None:
        self.name = name
        self._outputs = {k: list(v) for k, v in outputs.items()}
        self._queue: list[RawOutput | Action] = []

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        self._queue = list(self._outputs.get(task.id, []))

    def act(self, observation: str, info: dict[str, Any]) -> RawOutput | Action:
        return self._queue.pop(0) if self._queue else ""


class RecordedResponses(dict[str, list[RawOutput | Action]]):
    """Task id -> [response] from a response file, and how each row got its response:
    `pairing[task_id]` is {"how": "id" | "content" | "missing", "response": ..., "moved": ...}
    and `unused` describes the responses that belong to no row. `run_mtu_episodes` writes this
    into each trace's header, so the suite reports unpaired rows and responses from traces."""

    def __init__(
        self,
        outputs: Mapping[str, list[RawOutput | Action]],
        pairing: Mapping[str, dict[str, Any]],
        unused: Sequence[str],
    ) -> None:
        super().__init__(outputs)
        self.pairing = dict(pairing)
        self.unused = list(unused)

    def trace_config(self, task_id: str) -> dict[str, Any]:
        entry = dict(self.pairing.get(task_id, {"how": "missing"}))
        if self.unused:
            entry["unused"] = list(self.unused)
        return {PAIRING_KEY: entry}


def recorded_responses(tasks: TaskSet, response_jsonl: Path | str) -> RecordedResponses:
    """Task id -> [response] from an MTU response file, paired with the tasks' rows by
    toolgym.evaluation.metrics.mtu.pair_responses (rows without a response get no entry)."""
    lined = read_id_rows(response_jsonl, "response row")
    responses = [r for _, r in lined]
    task_list = list(tasks)
    rows = [task_to_row(t) for t in task_list]
    pairing = pair_responses(rows, responses)
    by_content = set(pairing.by_content)
    outputs: dict[str, list[RawOutput | Action]] = {}
    how: dict[str, dict[str, Any]] = {}
    for n, (task, j) in enumerate(zip(task_list, pairing.response_of, strict=True)):
        if j is None:
            how[task.id] = {"how": "missing"}
            continue
        outputs[task.id] = [response_text(responses[j])]
        response_id, line = str(responses[j]["id"]), lined[j][0]
        entry = {
            "how": "content" if n in by_content else "id",
            "response": describe_response(response_id, line),
        }
        if response_id != rows[n]["id"]:
            meta = task.metadata.get("mtu")
            index = int(meta.get("row", n)) if isinstance(meta, dict) else n
            entry["moved"] = describe_move(response_id, line, str(rows[n]["id"]), index)
        how[task.id] = entry
    unused = [describe_response(str(responses[j]["id"]), lined[j][0]) for j in pairing.unused]
    return RecordedResponses(outputs, how, unused)


def golden_turn(task: Task) -> GoldenTurn:
    """The expected next turn as one golden turn (its calls together, or a NoCall)."""
    from toolgym.envs.teacher import GoldenTurn

    return GoldenTurn(actions=tuple(step.action for step in task.golden))


def run_mtu_episodes(
    tasks: TaskSet,
    outputs: Mapping[str, Sequence[RawOutput | Action]],
    trace_dir: Path,
    *,
    agent_name: str = "recorded",
) -> list[Path]:
    """Runs each MTU task teacher-forced (toolgym.envs.teacher) for its one scored turn, in
    ToolEnv with the ReAct protocol (prose is a no-call turn, as MTU scores it), with the
    recorded outputs as the agent; returns the trace paths (one per row). A row without a
    recorded output answers '' (scored as an empty reply, as the file scorer does); outputs from
    `recorded_responses` also write how each row was paired into its trace header."""
    from toolgym.envs.tool_env import ToolEnv
    from toolgym.evaluation.base import record_teacher_forced
    from toolgym.protocols.react import ReActProtocol

    protocol = ReActProtocol(prose_as_no_call=True)
    agent = RecordedAgent(outputs, name=agent_name)
    paths = []
    for task in tasks:
        # teacher-forced: the prompt's APIs as documented, not run (the task's apps run it end to end)
        task = task.model_copy(update={"apps": None})
        env = ToolEnv(toolset_for(parse_api_list(task.query)), [task], protocol=protocol, max_steps=1)
        try:
            config = outputs.trace_config(task.id) if isinstance(outputs, RecordedResponses) else None
            _, path = record_teacher_forced(
                env, agent, task, trace_dir, golden=[golden_turn(task)], env_config=config
            )
        finally:
            env.close()
        paths.append(path)
    return paths
