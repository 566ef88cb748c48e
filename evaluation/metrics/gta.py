"""GTA: step-mode InstAcc, ToolAcc, ArgAcc, SummAcc; end-to-end AnsAcc, Ans+I and per-category
tool F1 (perception, operation, logic, creativity), from traces.

Teacher-forced traces (`env_config["mode"] == "teacher_forced"`, see
toolgym.evaluation.base.record_teacher_forced) give the step metrics: trace step i is the
prediction for golden step i. Other traces are end-to-end episodes. `compat` is GTA's
`GTABenchEvaluator.score` (open-compass/GTA, opencompass/datasets/gta_bench.py) with its quirks,
on predictions as GTA's pipeline records them: each reply is read again with lagent's ReAct
parse (toolgym.protocols.lagent) and run through a model of lagent's ActionExecutor holding only
the sample's tools (`LagentExecutor`), whatever protocol the env used. `fixed` scores the env's
own parse and corrects the quirks (docs/evaluation.md lists each difference).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolgym.actions import ToolCall
from toolgym.canonical import canonical_json, sha256_hex
from toolgym.evaluation.base import (
    EvaluationError,
    Mode,
    SuiteResult,
    check_mode,
    has_infra_error,
    is_teacher_forced,
    observation_error,
    pct,
    raw_text,
)
from toolgym.evaluation.metrics.similarity import (
    EmbedderUser,
    max_similarity,
    pair_similarities,
)
from toolgym.protocols.lagent import (
    FINISH_ACTION,
    INVALID_ACTION,
    NO_ACTION,
    LagentParse,
    lagent_json_input,
    lagent_parse,
    lagent_render,
)
from toolgym.tasks import AnswerSpec, Task, TaskSet
from toolgym.tasks import alias_found as alias_found  # the answer matcher lives with AnswerSpec
from toolgym.tasks import as_number as _as_number
from toolgym.trace import Trace, TraceStep

CATEGORIES: dict[str, tuple[str, ...]] = {
    "perception": ("OCR", "ImageDescription", "RegionAttributeDescription", "TextToBbox"),
    "operation": ("DrawBox", "AddText", "GoogleSearch"),
    "logic": ("Calculator", "Solver", "Plot", "MathOCR", "CountGivenObject"),
    "creativity": ("TextToImage", "ImageStylization"),
}
CATEGORY_OF = {tool: cat for cat, tools in CATEGORIES.items() for tool in tools}
F1_NAMES = {"perception": "P_F1", "operation": "O_F1", "logic": "L_F1", "creativity": "C_F1"}
IMAGEGEN_TOOLS = ("DrawBox", "AddText", "Plot", "TextToImage", "ImageStylization")
# errors that are the agent's fault; infra errors are kept apart, tool errors are the tool's
AGENT_ERRORS = frozenset({"format_error", "unknown_tool", "argument_error"})
# GTA's error kinds, as its pipeline records a failed tool step (lagent's ActionReturn): no_action
# (lagent's NoAction: the reply holds no action, the format was not followed), invalid_action
# (InvalidAction: a tool outside the sample's set), argument (ARGS_ERROR: the input is no JSON
# object, or its keys are wrong) and tool (API_ERROR of a named tool: the tool raised, e.g. on a
# file that does not exist). Counted per failed step as `step/errors/<kind>`, `e2e/errors/<kind>`.
ERROR_KINDS = ("no_action", "invalid_action", "argument", "tool")
# toolgym's typed errors onto GTA's kinds (fixed mode); infra errors are no kind of the agent's
_FIXED_ERROR_KIND = {
    "format_error": "no_action",
    "unknown_tool": "invalid_action",
    "argument_error": "argument",
    "tool_error": "tool",
    "timeout": "tool",
}


# ---- answers ---------------------------------------------------------------------------------


def gt_answer(spec: AnswerSpec | None) -> dict[str, Any] | list[str] | None:
    """The task's answer spec in GTA's `gt_answer` forms: a whitelist dict, a reference list, or
    None (image-generation queries)."""
    if spec is None:
        return None
    if spec.whitelist:
        return {"whitelist": spec.whitelist, "blacklist": spec.blacklist}
    if spec.references:
        return list(spec.references)
    return None


def compat_iscorrect(
    pred: str, whitelist: Sequence[Sequence[str]], blacklist: Sequence[Sequence[str]] | None
) -> bool:
    """GTA's rule: each whitelist group must match `\\b(?:a|b)\\b` (case-insensitive), and no
    blacklist alias may. `\\b` fails for aliases that start or end with a non-word character
    ("$5", "5%") and inside unspaced scripts ("58天")."""
    count = 0
    for aliases in whitelist:
        pattern = r"\b(?:" + "|".join(re.escape(a) for a in aliases) + r")\b"
        if re.search(pattern, pred, re.IGNORECASE):
            count += 1
    if count != len(whitelist):
        return False
    if not blacklist:
        return True
    flat = [re.escape(a) for aliases in blacklist for a in aliases]
    return not re.search(r"\b(?:" + "|".join(flat) + r")\b", pred, re.IGNORECASE)


def fixed_iscorrect(
    pred: str, whitelist: Sequence[Sequence[str]], blacklist: Sequence[Sequence[str]] | None
) -> bool:
    if not whitelist:
        return False
    if not all(any(alias_found(pred, a) for a in group) for group in whitelist):
        return False
    return not any(alias_found(pred, a) for group in blacklist or [] for a in group)


# ---- predictions from traces -------------------------------------------------------------------


@dataclass
class PredStep:
    kind: str  # "tool" | "answer"
    name: str | None
    arguments: dict[str, Any] | None
    n_calls: int
    content: str | None  # answer text, else the raw text
    final_answer: str | None
    errors: list[str]


def pred_step(step: TraceStep) -> PredStep:
    calls = [a for a in step.actions if a.get("type") == "tool_call"]
    final = next((a.get("text") for a in step.actions if a.get("type") == "final_answer"), None)
    if calls:
        first = calls[0]
        args = first.get("arguments")
        return PredStep(
            "tool",
            str(first.get("name")),
            args if isinstance(args, dict) else {},
            len(calls),
            None,
            None,
            step.error_kinds,
        )
    content = final if isinstance(final, str) else raw_text(step)
    return PredStep(
        "answer", None, None, 0, content, final if isinstance(final, str) else None, step.error_kinds
    )


@dataclass
class PredCall:
    name: str
    arguments: dict[str, Any]
    error: str | None


def episode_calls(trace: Trace) -> list[PredCall]:
    """Every tool call of an episode with the error kind of its own observation."""
    calls = []
    for step in trace.steps:
        observations = [o for o in step.observations]
        for n, action in enumerate(step.actions):
            if action.get("type") != "tool_call":
                continue
            obs = observations[n] if n < len(observations) else {}
            args = action.get("arguments")
            calls.append(
                PredCall(
                    str(action.get("name")), args if isinstance(args, dict) else {}, observation_error(obs)
                )
            )
    return calls


def last_step_answer(trace: Trace) -> str | None:
    """GTA: the episode's last predicted step must be an answer (max_turn hit scores 0)."""
    if not trace.steps:
        return None
    last = trace.steps[-1]
    for action in last.actions:
        if action.get("type") == "final_answer" and isinstance(action.get("text"), str):
            return str(action["text"])
    return None


# ---- compat: what GTA's pipeline records for a reply ----------------------------------------------

GTA_MAX_TURN = 10  # GTA's configs run lagent's ReAct with max_turn=10
# agentlego converts each argument to its toolmeta type: a path for these must exist...
_FILE_TYPES = frozenset({"image", "file", "audio", "video"})
# ...and these conversions can fail; str() and bool() never do
_NUMBER_TYPES: dict[str, type] = {"int": int, "float": float}


@dataclass
class GTAStep:
    """One prediction as GTA's LagentAgent records it: a tool step named by the ActionReturn's
    type (a tool, or lagent's NoAction / InvalidAction), with an error when lagent or the tool
    failed; or an answer step (lagent's FinishAction)."""

    kind: str  # "tool" | "answer"
    name: str | None = None
    arguments: Any = None  # a dict; after an argument error, the raw input text (GTA's fallback)
    error: str | None = None
    content: str | None = None
    # arguments in the reply's own key order (False: rendered from a trace's parsed actions,
    # whose keys the trace stores sorted)
    ordered: bool = True


def compat_error_kind(pred: GTAStep) -> str | None:
    """The GTA error kind of a step as GTA's pipeline recorded it (None: no error)."""
    if pred.kind != "tool" or pred.error is None:
        return None
    if pred.name == NO_ACTION:
        return "no_action"
    if pred.name == INVALID_ACTION:
        return "invalid_action"
    return "argument" if pred.error == "ARGS_ERROR" else "tool"


def fixed_error_kind(errors: Sequence[str]) -> str | None:
    """The GTA error kind of a step from toolgym's typed errors: the first that is one, in
    GTA's order (a reply without an action before a wrong tool before wrong arguments)."""
    kinds = {_FIXED_ERROR_KIND[e] for e in errors if e in _FIXED_ERROR_KIND}
    return next((k for k in ERROR_KINDS if k in kinds), None)


def count_error_kinds(kinds: Sequence[str | None], group: str, counts: dict[str, int]) -> None:
    """`<group>/errors/<kind>` for every GTA kind (zeros included, so tables line up)."""
    found = Counter(k for k in kinds if k is not None)
    for kind in ERROR_KINDS:
        counts[f"{group}/errors/{kind}"] = found[kind]


class FileCheck:
    """Whether a file argument names an existing file, as agentlego's ImageIO/File check a path.
    toolgym announces task files by name, so a task file's name or content handle exists, as does
    a path on disk (absolute, or relative to the dataset folder) and anything `add_from` saw: a
    file a tool returned earlier (end to end) or the golden history showed (step mode)."""

    def __init__(self, task: Task, base_dir: Path | None) -> None:
        self.base_dir = base_dir
        self.known: set[str] = set()
        for f in task.files:
            self.known.add(f.name)
            if base_dir is not None and (base_dir / f.path).is_file():
                self.known.add(f"file:{sha256_hex((base_dir / f.path).read_bytes())}")

    def add_from(self, value: Any) -> None:
        if isinstance(value, str):
            self.known.add(value)
        elif isinstance(value, Mapping):
            if isinstance(value.get("sha256"), str):
                self.known.add(f"file:{value['sha256']}")
            for item in value.values():
                self.add_from(item)
        elif isinstance(value, list):
            for item in value:
                self.add_from(item)

    def __call__(self, value: str) -> bool:
        if value in self.known:
            return True
        try:
            path = Path(value)
            if path.is_absolute():
                return path.exists()
            return bool(value) and self.base_dir is not None and (self.base_dir / path).exists()
        except (OSError, ValueError):  # NUL bytes, names too long
            return False


def gta_tool_records(task: Task) -> dict[str, Mapping[str, Any] | None]:
    """The sample's tools (only those: GTA's executor holds the sample's set) with their toolmeta
    records: the sample's own, else GTA's toolmeta for the name (toolgym's GTA tools carry it),
    else None (arguments are then taken as they are). A task without a tool list gets the
    sample's records, or all of GTA's tools."""
    meta = task.metadata.get("gta")
    own = meta.get("tools", []) if isinstance(meta, dict) else []
    records: dict[str, Mapping[str, Any] | None] = {
        str(r["name"]): r for r in own if isinstance(r, dict) and isinstance(r.get("name"), str)
    }
    names = task.tools if task.tools is not None else list(records) or list(_builtin_toolmeta())
    return {name: records[name] if name in records else _builtin_toolmeta().get(name) for name in names}


_BUILTIN_TOOLMETA: dict[str, dict[str, Any]] | None = None


def _builtin_toolmeta() -> dict[str, dict[str, Any]]:
    global _BUILTIN_TOOLMETA
    if _BUILTIN_TOOLMETA is None:
        from toolgym.tools import to_agentlego_meta
        from toolgym.toolservers.registry import all_gta_tools

        _BUILTIN_TOOLMETA = {t.name: to_agentlego_meta(t) for t in all_gta_tools()}
    return _BUILTIN_TOOLMETA


class LagentExecutor:
    """lagent's ActionExecutor holding only the sample's tools, each an agentlego tool of its
    toolmeta record (GTA's DummyTool in step mode, a RemoteTool end to end), as far as the reply
    alone decides: the tool's own outcome end to end comes from the trace."""

    def __init__(self, records: Mapping[str, Mapping[str, Any] | None], file_exists: FileCheck) -> None:
        self.records = records
        self.file_exists = file_exists

    def __call__(self, parsed: LagentParse) -> GTAStep:
        name, command = parsed.action, parsed.action_input
        tool, api = name, "run"
        if name not in self.records and "." in name:
            tool, api = name.rsplit(".", 1)  # GTA patches lagent to split "tool.api" from the right
        if tool not in self.records:
            if name == NO_ACTION:  # no action found: "Please follow the format"
                return GTAStep("tool", NO_ACTION, {"text": command}, "API_ERROR")
            if name == FINISH_ACTION:
                return GTAStep("answer", content=command)
            # a tool outside the sample's set: lagent's InvalidAction, a name of no category
            return GTAStep("tool", INVALID_ACTION, {"text": command}, "API_ERROR")
        if api != "run":
            return GTAStep("tool", tool, command, "API_ERROR")
        try:
            args = lagent_json_input(command)
        except (ValueError, RecursionError):
            return GTAStep("tool", tool, command, "ARGS_ERROR")
        if not isinstance(args, dict):  # lagent errs (or crashes) on JSON that is no object
            return GTAStep("tool", tool, command, "ARGS_ERROR")
        record = self.records[tool]
        if record is None:
            return GTAStep("tool", tool, args)
        inputs = [i for i in record.get("inputs") or [] if isinstance(i, Mapping)]
        names = {str(i.get("name")) for i in inputs}
        required = {str(i.get("name")) for i in inputs if not i.get("optional")}
        if not set(args) <= names or not required <= set(args):  # JsonParser's key checks
            return GTAStep("tool", tool, command, "ARGS_ERROR")
        types = {str(i.get("name")): str(i.get("type")) for i in inputs}
        if not all(self._converts(types.get(key), value) for key, value in args.items()):
            return GTAStep("tool", tool, args, "API_ERROR")  # the tool raised: args are kept
        return GTAStep("tool", tool, args)

    def _converts(self, kind: str | None, value: Any) -> bool:
        if kind in _FILE_TYPES:
            return isinstance(value, str) and self.file_exists(value)
        convert = _NUMBER_TYPES.get(kind or "")
        if convert is None or isinstance(value, convert):
            return True
        try:
            convert(value)
        except (TypeError, ValueError, OverflowError):
            return False
        return True


def reply_text(step: TraceStep) -> tuple[str, bool]:
    """The reply as lagent reads it, and whether it is the model's own text. A step recorded
    without text (an Action object, a function-calling message) is rendered in lagent's format
    from its parsed actions."""
    raw = step.raw
    if isinstance(raw, str):
        return raw, True
    if isinstance(raw, dict):
        content = raw.get("content")
        if isinstance(content, list):  # text parts
            content = "".join(
                p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
            )
        if isinstance(content, str) and content.strip():
            return content, True
    parts = []
    for action in step.actions:
        if action.get("type") == "tool_call":
            parts.append(lagent_render(str(action.get("name")), action.get("arguments") or {}))
        elif action.get("type") == "final_answer":
            parts.append(f"Final Answer: {action.get('text')}")
    return "".join(parts), False


def _executed_error(step: TraceStep, record: GTAStep) -> str | None:
    """The error the env met running the same call in this step (end to end)."""
    for n, action in enumerate(step.actions):
        if (
            action.get("type") == "tool_call"
            and action.get("name") == record.name
            and action.get("arguments") == record.arguments
        ):
            obs = step.observations[n] if n < len(step.observations) else {}
            return observation_error(obs)
    return None


def gta_step_predictions(trace: Trace, task: Task, base_dir: Path | None) -> list[GTAStep]:
    """Each step of a teacher-forced trace as GTA's `next_step` records it: the reply through
    lagent's parse and an executor of the sample's tools (DummyTools: they never fail once
    agentlego accepts the arguments)."""
    records = gta_tool_records(task)
    files = FileCheck(task, base_dir)
    out = []
    for i, step in enumerate(trace.steps):
        if 0 < i <= len(task.golden):  # the golden history grows by the previous gold step
            files.add_from(task.golden[i - 1].expected)
        text, ordered = reply_text(step)
        record = LagentExecutor(records, files)(lagent_parse(text))
        record.ordered = ordered
        out.append(record)
    return out


def gta_episode_predictions(trace: Trace, task: Task, base_dir: Path | None) -> list[GTAStep]:
    """An end-to-end trace as GTA's ReAct loop records it: at most GTA_MAX_TURN replies, up to
    the first one lagent reads as a finish (the loop stops there); a call lagent lets through
    fails when the env's run of the same call failed."""
    records = gta_tool_records(task)
    files = FileCheck(task, base_dir)
    out = []
    for step in trace.steps[:GTA_MAX_TURN]:
        text, ordered = reply_text(step)
        record = LagentExecutor(records, files)(lagent_parse(text))
        record.ordered = ordered
        if record.kind == "tool" and record.error is None:
            record.error = _executed_error(step, record)
        out.append(record)
        if record.kind == "answer":
            break
        for obs in step.observations:  # files the tools returned can be passed on
            if obs.get("error") is None:
                files.add_from(obs.get("content"))
                files.add_from(obs.get("files"))
                files.add_from(obs.get("text"))
    return out


# ---- argument comparison (fixed) -----------------------------------------------------------------


class FileRefs:
    """Canonical names of a task's files: a value naming one (by its task name, a path ending in
    it, its basename or its content handle) compares as that file."""

    def __init__(self, task: Task, base_dir: Path | None) -> None:
        self.names = {f.name for f in task.files}
        self.by_alias: dict[str, str] = {}
        for f in task.files:
            self.by_alias[f.name] = f.name
            self.by_alias.setdefault(Path(f.name).name, f.name)
            if base_dir is not None:
                path = base_dir / f.path
                if path.is_file():
                    self.by_alias[f"file:{sha256_hex(path.read_bytes())}"] = f.name

    def canonical(self, value: str) -> str | None:
        v = value.strip()
        if v in self.by_alias:
            return self.by_alias[v]
        for name in self.names:
            if v.replace("\\", "/").endswith("/" + name):
                return name
        base = v.replace("\\", "/").rsplit("/", 1)[-1]
        return self.by_alias.get(base) if base in self.by_alias and base != v else None


def _canon_value(value: Any, files: FileRefs) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        ref = files.canonical(value)
        if ref is not None:
            return ("file", ref)
        number = _as_number(value)
        if number is not None:
            return number
        return re.sub(r"\s+", "", unicodedata.normalize("NFKC", value))
    if isinstance(value, list):
        return [_canon_value(v, files) for v in value]
    if isinstance(value, dict):
        return {k: _canon_value(v, files) for k, v in value.items()}
    return value


def tool_defaults(task: Task) -> dict[str, dict[str, Any]]:
    """Documented defaults of optional inputs, per tool (from the GTA loader's tool records)."""
    out: dict[str, dict[str, Any]] = {}
    tools = (
        task.metadata.get("gta", {}).get("tools", []) if isinstance(task.metadata.get("gta"), dict) else []
    )
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict):
            continue
        for item in tool.get("inputs", []) or []:
            if isinstance(item, dict) and item.get("optional"):
                out.setdefault(str(tool.get("name")), {})[str(item.get("name"))] = item.get("default")
    return out


def fixed_args_equal(
    tool: str, gold: Mapping[str, Any], pred: Mapping[str, Any], files: FileRefs, defaults: Mapping[str, Any]
) -> bool:
    """Typed comparison: file references by the file they name, numbers numerically, text
    without whitespace differences; an optional argument left out equals its default."""
    for key in set(gold) | set(pred):
        if key in gold and key in pred:
            if _canon_value(gold[key], files) != _canon_value(pred[key], files):
                return False
        else:
            present = gold.get(key, pred.get(key))
            if key not in defaults or _canon_value(present, files) != _canon_value(defaults[key], files):
                return False
    return True


# ---- scoring ---------------------------------------------------------------------------------------


def _golden_kind(action_type: str) -> str:
    return "tool" if action_type == "tool_call" else "answer"


@dataclass
class _StepTally:
    """One trace's step scores (InstAcc, ToolAcc, ArgAcc and SummAcc numerators), or their sums
    over the traces, and the gold steps they divide by."""

    inst: float = 0.0
    tool: float = 0.0
    arg: float = 0.0
    answer: float = 0.0
    tools: int = 0  # gold tool steps
    steps: int = 0  # gold steps

    def add(self, other: _StepTally) -> None:
        self.inst += other.inst
        self.tool += other.tool
        self.arg += other.arg
        self.answer += other.answer
        self.tools += other.tools
        self.steps += other.steps

    def per_task(self) -> dict[str, float]:
        return {
            "inst_acc": self.inst / self.steps if self.steps else 0.0,
            "tool_acc": self.tool / self.tools if self.tools else 0.0,
            "arg_acc": self.arg / self.tools if self.tools else 0.0,
            "summ_acc": self.answer,
        }


@dataclass
class _StepCounts:
    """What step mode counts over all traces besides the scores."""

    answer_tasks: int = 0  # tasks with a reference answer
    answer_steps: int = 0  # gold answer steps with a prediction (fixed)
    tool_call: int = 0
    tool_call_error: int = 0
    infra_skipped: int = 0  # traces with an infra error (fixed)
    errors: list[str | None] = field(default_factory=list)  # each step's GTA error kind


def _report_step_metrics(
    result: SuiteResult, mode: Mode, total: _StepTally, counts: _StepCounts, traces: int
) -> None:
    """The step metrics and counts of the summed tallies."""
    if mode == "compat":
        # GTA divides by gold tool steps + samples with an answer (answer steps of samples
        # without an answer count in the numerator only)
        result.metrics["InstAcc"] = pct(total.inst, total.tools + counts.answer_tasks)
        result.metrics["SummAcc"] = pct(total.answer, counts.answer_tasks)
    else:
        result.metrics["InstAcc"] = pct(total.inst, total.steps)
        result.metrics["SummAcc"] = pct(total.answer, counts.answer_steps)
        result.counts["step/answer_steps"] = counts.answer_steps
        if counts.infra_skipped:
            result.counts["step/infra_error_tasks"] = counts.infra_skipped
    result.metrics["ToolAcc"] = pct(total.tool, total.tools)
    result.metrics["ArgAcc"] = pct(total.arg, total.tools)
    result.counts.update(
        {
            "step/tasks": traces - counts.infra_skipped,
            "step/gold_tool_steps": total.tools,
            "step/answer_tasks": counts.answer_tasks,
            "step/tool_call": counts.tool_call,
            "step/tool_call_error": counts.tool_call_error,
        }
    )
    count_error_kinds(counts.errors, "step", result.counts)


@dataclass
class _E2ETotals:
    """What end-to-end mode sums and counts over the traces."""

    tasks: int = 0
    answer_tasks: int = 0  # tasks with a reference answer
    answer: float = 0.0  # AnsAcc's numerator
    answer_w_imggen: float = 0.0  # Ans+I's
    tool_call: int = 0
    tool_call_error: int = 0
    infra_skipped: int = 0  # traces with an infra error (fixed)
    errors: list[str | None] = field(default_factory=list)  # each step's GTA error kind
    gold_n: Counter[str] = field(default_factory=Counter)  # gold calls per tool category
    pred_n: Counter[str] = field(default_factory=Counter)  # predicted calls per category
    hits: Counter[str] = field(default_factory=Counter)  # gold calls predicted, per category


def _count_categories(task: Task, calls: Sequence[PredCall], mode: Mode, totals: _E2ETotals) -> None:
    """The episode's gold and predicted calls per tool category, and the gold ones predicted."""
    gold_names = [g.action.name for g in task.golden if g.action.type == "tool_call"]
    counted = calls if mode == "compat" else [c for c in calls if c.error != "infra_error"]
    pred_names = [c.name for c in counted]
    for name in pred_names:
        if name in CATEGORY_OF:
            totals.pred_n[CATEGORY_OF[name]] += 1
    if mode == "compat":
        # a gold call is a hit when its tool appears anywhere among the predicted calls
        for name in gold_names:
            if name in CATEGORY_OF:
                totals.gold_n[CATEGORY_OF[name]] += 1
                totals.hits[CATEGORY_OF[name]] += name in pred_names
    else:
        common = Counter(gold_names) & Counter(pred_names)  # repeated calls as a multiset
        for name in gold_names:
            if name in CATEGORY_OF:
                totals.gold_n[CATEGORY_OF[name]] += 1
        for name, n in common.items():
            if name in CATEGORY_OF:
                totals.hits[CATEGORY_OF[name]] += n


def _report_e2e_metrics(result: SuiteResult, mode: Mode, totals: _E2ETotals) -> None:
    """AnsAcc, Ans+I, each category's tool F1 and the counts."""
    result.metrics["AnsAcc"] = pct(totals.answer, totals.answer_tasks)
    result.metrics["Ans+I"] = pct(totals.answer_w_imggen, totals.tasks)
    gold_n, pred_n, hits = totals.gold_n, totals.pred_n, totals.hits
    for cat, metric in F1_NAMES.items():
        if mode == "compat":
            precision = hits[cat] / (pred_n[cat] + 1e-5)
            if gold_n[cat] == 0:
                f1 = 0.0
            else:
                recall = hits[cat] / gold_n[cat]
                f1 = 2 * precision * recall / (precision + recall + 1e-5)
            result.metrics[metric] = 100 * f1
        elif gold_n[cat] or pred_n[cat]:
            precision = hits[cat] / pred_n[cat] if pred_n[cat] else 0.0
            recall = hits[cat] / gold_n[cat] if gold_n[cat] else 0.0
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
            result.metrics[metric] = 100 * f1
        else:
            result.notes.append(f"{metric}: no gold or predicted {cat} calls, left out")
    result.counts.update(
        {
            "e2e/tasks": totals.tasks,
            "e2e/answer_tasks": totals.answer_tasks,
            "e2e/tool_call": totals.tool_call,
            "e2e/tool_call_error": totals.tool_call_error,
        }
    )
    count_error_kinds(totals.errors, "e2e", result.counts)
    if totals.infra_skipped:
        result.counts["e2e/infra_error_tasks"] = totals.infra_skipped


class GTASuite(EmbedderUser):
    name = "gta"

    def _answer_score(self, text: str, ref: dict[str, Any] | list[str], mode: Mode) -> float:
        if isinstance(ref, dict):
            check = compat_iscorrect if mode == "compat" else fixed_iscorrect
            return float(check(text, ref.get("whitelist") or [], ref.get("blacklist")))
        return max_similarity(self.embedder, text, ref)

    def score(self, traces: Sequence[Trace], tasks: TaskSet | None, mode: Mode) -> SuiteResult:
        mode = check_mode(mode)
        if tasks is None:
            raise EvaluationError("the gta suite needs the task set the traces were run on")
        known = [t for t in traces if t.header.task_id in tasks]
        skipped = len(traces) - len(known)
        if not known:
            raise EvaluationError(f"none of the {len(traces)} traces belongs to a task of the task set")
        step_traces = [t for t in known if is_teacher_forced(t)]
        e2e_traces = [t for t in known if not is_teacher_forced(t)]
        result = SuiteResult(suite=self.name, mode=mode, metrics={})
        if step_traces:
            self._step_metrics(step_traces, tasks, mode, result)
        if e2e_traces:
            self._e2e_metrics(e2e_traces, tasks, mode, result)
        if skipped:
            result.counts["skipped_unknown_task"] = skipped
            result.notes.append(f"{skipped} traces skipped: their task is not in the task set")
        if mode == "compat" and (self._embedder is not None and self._embedder.name != "all-mpnet-base-v2"):
            result.notes.append(f"similarity uses {self._embedder.name}; GTA's scorer uses all-mpnet-base-v2")
        return result

    # -- step mode --
    def _step_metrics(self, traces: Sequence[Trace], tasks: TaskSet, mode: Mode, result: SuiteResult) -> None:
        total = _StepTally()
        counts = _StepCounts()
        for trace in traces:
            task = tasks[trace.header.task_id]
            if mode == "fixed" and has_infra_error(trace):
                counts.infra_skipped += 1
                continue
            ref = gt_answer(task.answer)
            files = FileRefs(task, tasks.base_dir)
            defaults = tool_defaults(task)
            if ref:
                counts.answer_tasks += 1
            if mode == "compat":
                tally = self._compat_step_tally(trace, task, tasks.base_dir, ref, counts)
            else:
                tally = self._fixed_step_tally(trace, task, ref, files, defaults, counts)
            total.add(tally)
            result.per_task.setdefault(task.id, {}).update(tally.per_task())
        _report_step_metrics(result, mode, total, counts, len(traces))

    def _compat_step_tally(
        self,
        trace: Trace,
        task: Task,
        base_dir: Path | None,
        ref: dict[str, Any] | list[str] | None,
        counts: _StepCounts,
    ) -> _StepTally:
        """GTA's step scores of one trace: its predictions as GTA's pipeline records them."""
        t = _StepTally()
        # GTA zips predictions with gold steps: missing steps vanish
        for pred, gold in zip(gta_step_predictions(trace, task, base_dir), task.golden, strict=False):
            gold_kind = _golden_kind(gold.action.type)
            t.steps += 1
            t.tools += gold_kind == "tool"
            if pred.kind == gold_kind and pred.error is None:
                t.inst += 1
            if pred.kind == "tool":
                counts.tool_call += 1
                counts.tool_call_error += pred.error is not None
                counts.errors.append(compat_error_kind(pred))
            gold_call = gold.action if isinstance(gold.action, ToolCall) else None
            if pred.kind == "tool" and gold_call is not None and pred.name == gold_call.name:
                # the name counts even for a call that failed; arguments compare exactly
                # (after an argument error they are the raw input text)
                t.tool += 1
                t.arg += float(pred.arguments == dict(gold_call.arguments))
            elif pred.kind == gold_kind == "answer" and ref and pred.content:
                t.answer += self._answer_score(pred.content, ref, "compat")
        return t

    def _fixed_step_tally(
        self,
        trace: Trace,
        task: Task,
        ref: dict[str, Any] | list[str] | None,
        files: FileRefs,
        defaults: dict[str, dict[str, Any]],
        counts: _StepCounts,
    ) -> _StepTally:
        """The fixed step scores of one trace: trace step i against golden step i, by the env's
        own parse; a missing step counts as a miss."""
        t = _StepTally()
        for i, gold in enumerate(task.golden):
            step = trace.steps[i] if i < len(trace.steps) else None
            gold_kind = _golden_kind(gold.action.type)
            t.steps += 1
            if gold_kind == "tool":
                t.tools += 1
            if step is None:
                continue
            if gold_kind == "answer" and ref:
                counts.answer_steps += 1
            fixed_pred = pred_step(step)
            counts.errors.append(fixed_error_kind(fixed_pred.errors))
            errors = [e for e in fixed_pred.errors if e in AGENT_ERRORS]
            if fixed_pred.kind == gold_kind and not errors:
                t.inst += 1
            if fixed_pred.kind == "tool":
                counts.tool_call += 1
                counts.tool_call_error += bool(errors)
            if fixed_pred.kind == "tool" and isinstance(gold.action, ToolCall):
                gold_call = gold.action
                if fixed_pred.name == gold_call.name and fixed_pred.n_calls == 1:
                    t.tool += 1
                    same = fixed_args_equal(
                        gold_call.name,
                        dict(gold_call.arguments),
                        fixed_pred.arguments or {},
                        files,
                        defaults.get(gold_call.name, {}),
                    )
                    t.arg += float(same)
            elif fixed_pred.kind == gold_kind == "answer" and ref and fixed_pred.final_answer:
                t.answer += self._answer_score(fixed_pred.final_answer, ref, "fixed")
        return t

    # -- end to end --
    def _compat_imggen_score(self, task: Task, preds: Sequence[GTAStep]) -> float:
        """GTA: the last error-free call per image tool; each gold call's arguments against it by
        the similarity of their json.dumps (default settings, each dict in its own key order)."""
        last: dict[str, GTAStep] = {}
        for pred in preds:
            if pred.kind == "tool" and pred.error is None and pred.name in IMAGEGEN_TOOLS:
                last[pred.name] = pred
        score = 1.0
        for g in task.golden:
            if g.action.type != "tool_call" or g.action.name not in IMAGEGEN_TOOLS:
                continue
            if g.action.name not in last:
                return 0.0
            pred = last[g.action.name]
            # a step without the model's text has its arguments from the trace, keys sorted: the
            # gold side is then sorted too, so key order alone never lowers the score
            gold_text = json.dumps(dict(g.action.arguments), sort_keys=not pred.ordered)
            pred_text = json.dumps(pred.arguments, sort_keys=not pred.ordered)
            score *= pair_similarities(self.embedder, [gold_text], [pred_text])[0]
        return score

    def _imggen_score(self, task: Task, calls: Sequence[PredCall], files: FileRefs) -> float:
        gold = [
            g.action for g in task.golden if g.action.type == "tool_call" and g.action.name in IMAGEGEN_TOOLS
        ]
        usable = [c for c in calls if c.name in IMAGEGEN_TOOLS and c.error is None]
        score = 1.0
        taken: set[int] = set()
        for g in gold:
            candidates = [i for i, c in enumerate(usable) if c.name == g.name and i not in taken]
            if not candidates:
                return 0.0
            gold_text = canonical_json(_jsonable(_canon_value(dict(g.arguments), files)))
            sims = pair_similarities(
                self.embedder,
                [gold_text] * len(candidates),
                [canonical_json(_jsonable(_canon_value(usable[i].arguments, files))) for i in candidates],
            )
            best = max(range(len(candidates)), key=lambda k: sims[k])
            taken.add(candidates[best])
            score *= sims[best]
        return score

    def _e2e_metrics(self, traces: Sequence[Trace], tasks: TaskSet, mode: Mode, result: SuiteResult) -> None:
        totals = _E2ETotals()
        for trace in traces:
            task = tasks[trace.header.task_id]
            if mode == "fixed" and has_infra_error(trace):
                totals.infra_skipped += 1
                continue
            ref = gt_answer(task.answer)
            files = FileRefs(task, tasks.base_dir)
            totals.tasks += 1
            if mode == "compat":
                score, img, calls = self._compat_episode(trace, task, tasks.base_dir, ref, totals)
            else:
                score, img, calls = self._fixed_episode(trace, task, ref, files, totals)
            totals.answer_w_imggen += img
            for call in calls:
                totals.tool_call += 1
                totals.tool_call_error += call.error is not None
            _count_categories(task, calls, mode, totals)
            result.per_task.setdefault(task.id, {}).update({"answer": score, "answer_w_imggen": img})
        _report_e2e_metrics(result, mode, totals)

    def _compat_episode(
        self,
        trace: Trace,
        task: Task,
        base_dir: Path | None,
        ref: dict[str, Any] | list[str] | None,
        totals: _E2ETotals,
    ) -> tuple[float, float, list[PredCall]]:
        """One episode as GTA scores it, from its predictions as GTA's pipeline records them:
        (answer score, answer or image-generation score, tool steps)."""
        score = 0.0
        preds = gta_episode_predictions(trace, task, base_dir)
        totals.errors += [compat_error_kind(p) for p in preds]
        # (name, error) of every tool step: NoAction and InvalidAction steps included
        calls = [PredCall(str(p.name), {}, p.error) for p in preds if p.kind == "tool"]
        if ref:
            totals.answer_tasks += 1
            last = preds[-1] if preds else None
            # the last step must be an answer (a loop that hit max_turn ends on a tool)
            if last is not None and last.kind == "answer" and last.content:
                score = self._answer_score(last.content, ref, "compat")
            totals.answer += score
            img = score
        else:
            img = self._compat_imggen_score(task, preds)
        return score, img, calls

    def _fixed_episode(
        self,
        trace: Trace,
        task: Task,
        ref: dict[str, Any] | list[str] | None,
        files: FileRefs,
        totals: _E2ETotals,
    ) -> tuple[float, float, list[PredCall]]:
        """One episode as the fixed mode scores it, from the env's own calls: (answer score,
        answer or image-generation score, calls)."""
        score = 0.0
        calls = episode_calls(trace)
        # each call's own error, and each reply that held no action
        totals.errors += [fixed_error_kind([c.error]) for c in calls if c.error is not None]
        totals.errors += ["no_action" for step in trace.steps if "format_error" in step.error_kinds]
        if ref:
            totals.answer_tasks += 1
            answer = last_step_answer(trace)
            if answer:
                score = self._answer_score(answer, ref, "fixed")
            totals.answer += score
            img = score
        else:
            img = self._imggen_score(task, calls, files)
        return score, img, calls


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value
