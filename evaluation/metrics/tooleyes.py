"""ToolEyes: format alignment (IF), tool selection (TS, with tool and parameter hallucination),
and the judged dimensions intent comprehension (IU), behaviour planning (BP) and answer
organisation (AO), from end-to-end traces.

The rule-based parts follow ToolEyes' `Code/Evaluation/util/utils.py` (compat) or toolgym's
parsed actions and typed errors (fixed). The judged parts ask a pluggable judge
(toolgym.evaluation.metrics.judge) one question per criterion, on a 1-10 scale, as ToolEyes asks
GPT-4; verdicts are cached and recorded by the judge. Without a judge the judged dimensions (and
TS, which multiplies the rule-based tool reality by the judged action/thought match) are left
out and a note says so. Our judge prompts state ToolEyes' criteria in our own words, so judged
numbers are comparable with ToolEyes' but not byte-for-byte the same questions.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolgym.evaluation.base import (
    EvaluationError,
    Mode,
    SuiteResult,
    check_mode,
    final_answer,
    has_infra_error,
    mean,
    raw_text,
)
from toolgym.evaluation.metrics.expressions import ExpressionRejected, evaluate_literal_expression
from toolgym.evaluation.metrics.judge import Judge, Verdict, with_judge
from toolgym.tasks import Task, TaskSet
from toolgym.trace import Trace

FAILED_ANSWER = "I cannot handle the task."
# ToolEyes' five capability dimensions and their mean, as metric names (per scenario too)
DIMENSIONS = ("IF", "TS", "IU", "BP", "AO", "overall")
_THOUGHT = re.compile(r"Thought:.*?Action:", re.DOTALL)
_ACTION = re.compile(r"Action:.*?Action Input:", re.DOTALL)
_ACTION_INPUT = re.compile(r"Action Input:.*", re.DOTALL)
# the looser cut ToolEyes' judge prompts use (process_utils.process_message): no "Thought:" needed
_JUDGE_THOUGHT = re.compile(r".*?Action:", re.DOTALL)
_JUDGE_ACTION = re.compile(r"Action:.*?Input", re.DOTALL)
_JUDGE_LABELS = (re.compile(r"Action.:*"), re.compile(r"Thought\s*:"), re.compile(r"Action\s*:"))

# ---- ToolEyes' text checks (compat) --------------------------------------------------------------


def split_message(message: str) -> tuple[str, str, str] | None:
    """ToolEyes' process_message: (thought, action, action input), or None when a part is missing."""
    thought = _THOUGHT.search(message)
    action = _ACTION.search(message)
    action_input = _ACTION_INPUT.search(message)
    if thought is None or action is None or action_input is None:
        return None
    return (
        thought.group().replace("Action:", "").replace("Thought:", "").strip(),
        action.group().replace("\\n", "").replace("Action:", "").replace("Action Input:", "").strip(),
        action_input.group().replace("Action Input:", "").strip(),
    )


def judge_parts(message: str) -> tuple[str, str] | None:
    """(thought, tool) as ToolEyes' judge prompts cut them from a reply: the thought is the text
    before the first "Action:" with the labels removed, the tool what follows it up to "Input".
    None when "Action:", "Input" or "Action Input:" is missing (ToolEyes crashes building the
    questions then; compat asks with an empty thought and tool)."""
    thought = _JUDGE_THOUGHT.search(message)
    action = _JUDGE_ACTION.search(message)
    if thought is None or action is None or _ACTION_INPUT.search(message) is None:
        return None
    any_action, thought_label, action_label = _JUDGE_LABELS
    return (
        thought_label.sub("", any_action.sub("", thought.group())).strip().strip("\n"),
        action_label.sub("", action.group().replace("Action Input", "")).strip(),
    )


def reasoning_format_ok(message: str) -> bool:
    parts = split_message(message)
    return parts is not None and len(parts[1]) > 0


def action_input_value(text: str) -> Any:
    """The action input's value as ToolEyes' `eval` gives it, for expressions that build data
    from literals (`{'q': 'a' + 'b'}`, `dict(q='x')`, `1 + 1`); ExpressionRejected for anything
    else, where ToolEyes' eval would fail or run code (we never eval)."""
    return evaluate_literal_expression(text)


def json_format_ok(message: str) -> bool:
    parts = split_message(message)
    if parts is None:
        return False
    try:
        action_input_value(parts[2])
    except ExpressionRejected:
        return False
    return True


def _doc_entry(doc: Sequence[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    return next((d for d in doc if d.get("name") == name), None)


def _required(entry: Mapping[str, Any]) -> list[str]:
    holder = entry if "required" in entry else entry.get("parameters", {})
    required = holder.get("required", [])
    return required if isinstance(required, list) else []


def _properties(entry: Mapping[str, Any]) -> list[str]:
    props = entry.get("parameters", {}).get("properties", {})
    return list(props) if isinstance(props, dict) else []


# ---- per-episode data ------------------------------------------------------------------------------


@dataclass
class Episode:
    task: Task
    messages: list[str]  # the assistant's raw outputs, in order
    last_value: str  # the conversation's last message (ToolEyes compares messages to it)
    doc: list[dict[str, Any]] | None  # the tool documentation shown (OpenAI function records)
    thoughts: list[str]
    tool_turns: list[dict[str, Any]] = field(default_factory=list)  # fixed: per step facts
    answer: str = ""
    # the agent gave its final answer before the turn limit (ToolEyes' p_AO: 9 turns in the paper)
    answered_in_time: bool = False


def episode_of(trace: Trace, task: Task) -> Episode:
    meta = task.metadata.get("tooleyes")
    doc = meta.get("tools") if isinstance(meta, dict) else None
    if doc is None:
        doc = [{"name": t.name, "parameters": {}} for t in trace.header.tools]
    messages = [raw_text(s) for s in trace.steps]
    last_step = trace.steps[-1] if trace.steps else None
    ended_by_answer = last_step is not None and any(
        a.get("type") == "final_answer" for a in last_step.actions
    )
    if ended_by_answer:
        last_value = messages[-1]
    elif last_step is not None and last_step.observations:
        last_value = str(last_step.observations[-1].get("text", ""))
    else:
        last_value = ""
    thoughts = []
    turns = []
    for step in trace.steps:
        thought = next((str(a.get("thought") or "") for a in step.actions), "")
        thoughts.append(thought)
        turns.append(
            {
                "parsed": bool(step.actions) and "format_error" not in step.error_kinds,
                "calls": [a for a in step.actions if a.get("type") == "tool_call"],
                "errors": list(step.error_kinds),
            }
        )
    return Episode(
        task=task,
        messages=messages,
        last_value=last_value,
        doc=[dict(d) for d in doc if isinstance(d, dict)],
        thoughts=thoughts,
        tool_turns=turns,
        answer=final_answer(trace) or "",
        answered_in_time=ended_by_answer and (trace.end is None or trace.end.status == "terminated"),
    )


# ---- rule-based scores -----------------------------------------------------------------------------


def compat_rules(ep: Episode) -> dict[str, Any]:
    """IF, tool reality and the turns whose action/thought match counts, as ToolEyes computes
    them (including its quirks: a message equal to the last one is "the last one"; after one
    tool hallucination, parameters are no longer checked; required parameters once given stop
    being required for later turns of the episode)."""
    doc = copy.deepcopy(ep.doc or [])
    names = [d.get("name") for d in doc]
    format_ok = responses = 0
    tool_hallu = param_hallu = format_ok_ts = 0
    ts_turns: list[int] = []
    for n, value in enumerate(ep.messages):
        is_last = value == ep.last_value
        responses += 1
        if (
            is_last
            and FAILED_ANSWER in value
            and ("trying too many times" in value or "During execution, an error occurs." in value)
        ):
            ts_turns.append(n)  # ToolEyes keeps the judged score of the final turn
            continue
        if is_last and reasoning_format_ok(value):
            format_ok += 1
            ts_turns.append(n)
            continue
        if not (reasoning_format_ok(value) and json_format_ok(value)):
            continue
        format_ok += 1
        format_ok_ts += 1
        ts_turns.append(n)
        parts = split_message(value)
        assert parts is not None
        action, action_input = parts[1], action_input_value(parts[2])
        tool_hallu += action not in names
        if tool_hallu:
            continue  # the original gates on the running count
        entry = _doc_entry(doc, action)
        assert entry is not None
        args = action_input if isinstance(action_input, dict) else {}
        required = _required(entry)
        for key in args:
            if key in required:
                required.remove(key)  # mutates the doc, as the original does
        unknown = sum(1 for k in args if k not in _properties(entry))
        param_hallu += min(int(bool(required)) + unknown, 1)
    reality = 1 - (tool_hallu + param_hallu) / format_ok_ts if format_ok_ts else 0.0
    return {
        "IF": format_ok / responses if responses else 0.0,
        "tool_reality": reality,
        "ts_turns": ts_turns,
        "tool_hallucinations": tool_hallu,
        "param_hallucinations": param_hallu,
    }


def fixed_rules(ep: Episode) -> dict[str, Any]:
    """IF from toolgym's parser; hallucinations per tool turn: an unknown tool (the env's
    unknown_tool error or a name not documented), or parameters the tool does not take or
    misses (the env's argument_error, or the documentation, never mutated)."""
    doc = ep.doc or []
    names = {d.get("name") for d in doc}
    turns = ep.tool_turns
    parsed = [t for t in turns if t["parsed"]]
    tool_turns = [(n, t) for n, t in enumerate(turns) if t["parsed"] and t["calls"]]
    tool_hallu = param_hallu = 0
    for _, turn in tool_turns:
        unknown_tool = "unknown_tool" in turn["errors"] or any(
            c.get("name") not in names for c in turn["calls"]
        )
        if unknown_tool:
            tool_hallu += 1
            continue
        bad_params = "argument_error" in turn["errors"]
        for call in turn["calls"]:
            entry = _doc_entry(doc, str(call.get("name")))
            args = call.get("arguments") or {}
            if entry is not None and (
                any(k not in args for k in _required(entry))
                or (_properties(entry) and any(k not in _properties(entry) for k in args))
            ):
                bad_params = True
        param_hallu += bad_params
    return {
        "IF": len(parsed) / len(turns) if turns else 0.0,
        "tool_reality": 1 - (tool_hallu + param_hallu) / len(tool_turns) if tool_turns else 1.0,
        "ts_turns": [n for n, t in enumerate(turns) if t["parsed"]],
        "tool_hallucinations": tool_hallu,
        "param_hallucinations": param_hallu,
    }


# ---- judged questions -------------------------------------------------------------------------------

_FORMAT = (
    "Answer in this format:\n"
    "Scoring Reason: <why, with reference to the criteria>\n"
    "Evaluation Score: <an integer from 1 to 10>"
)
_EXPERT = "You are an impartial expert grader. Judge the data below strictly by the criteria given."


def _doc_text(ep: Episode) -> str:
    return repr(ep.doc or [])


def _chain(thoughts: Sequence[str]) -> str:
    return "\n\n".join(f"Turn {n}:\n{t.strip()}" for n, t in enumerate(thoughts, 1))


def action_thought_question(ep: Episode, thought: str, tool: str) -> list[dict[str, str]]:
    system = (
        f"{_EXPERT}\nGiven a tool document, a THOUGHT and a tool chosen from the document, rate how "
        "well the chosen tool fits the plan in the THOUGHT. An empty THOUGHT scores 5. Otherwise, "
        "the more relevant the chosen tool is to the THOUGHT compared with the other documented "
        f"tools, the higher the score.\n{_FORMAT}"
    )
    user = f'Tool document:\n{_doc_text(ep)}\n\nTHOUGHT:\n"""\n{thought}\n"""\n\nTool:\n"""\n{tool}\n"""'
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def chain_question(ep: Episode, criteria: str, thoughts: Sequence[str]) -> list[dict[str, str]]:
    system = (
        f"{_EXPERT}\nGiven a tool document, a user query and the chain of thoughts an assistant "
        f"wrote while solving it, rate the chain of thoughts:\n{criteria}\n{_FORMAT}"
    )
    user = (
        f'Tool document:\n{_doc_text(ep)}\n\nUser query:\n"""\n{ep.task.query}\n"""\n\n'
        f'Thought chain:\n"""\n{_chain(thoughts)}\n"""'
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


QUALITY = (
    "1. Fewer grammatical errors score higher.\n2. Fewer logical inconsistencies score higher.\n"
    "3. Inconsistencies noticed and corrected sooner score higher."
)
FOCUS = (
    "1. The more consistently the chain works on the user's query, the higher the score.\n"
    "2. The better it adapts when the user adds information or requests (ignore if none), the higher."
)
VALIDITY = (
    "1. Each step sums up what the previous step found: the more complete, the higher.\n"
    "2. Each step plans the next one in time: the more concrete, the higher.\n"
    "3. Each step moves the task on without repeating earlier ones: less repetition scores higher."
)


def relevance_question(ep: Episode) -> list[dict[str, str]]:
    system = (
        f"{_EXPERT}\nGiven a tool document, a user's query and the assistant's final response, rate "
        "how well the response meets the user's needs:\n1. The more directly it answers the query, "
        "the higher.\n2. Fewer inaccuracies score higher (assume information is correct unless you "
        "know otherwise).\n3. Helpful suggestions toward solving the query score higher (ignore if "
        f"the query is fully answered).\n{_FORMAT}"
    )
    user = (
        f'Tool document:\n{_doc_text(ep)}\n\nUser query:\n"""\n{ep.task.query}\n"""\n\n'
        f'Response:\n"""\n{ep.answer}\n"""'
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _value(verdict: Verdict, mode: Mode) -> float | None:
    """A verdict as 0-1. compat: a reply without a score counts 0 (ToolEyes); fixed: left out."""
    if verdict.score is None:
        return 0.0 if mode == "compat" else None
    return verdict.score / 10


# ---- the suite -------------------------------------------------------------------------------------


class ToolEyesSuite:
    name = "tooleyes"

    def __init__(self, judge: Judge | None = None) -> None:
        self.judge = judge

    def _judged(
        self, ep: Episode, rules: Mapping[str, Any], mode: Mode, judge: Judge, unscored: Counter[str]
    ) -> dict[str, float]:
        """The judged dimensions of one episode; `unscored` counts, per dimension, the verdicts
        whose reply carried no score (fixed leaves them out, compat counts them 0)."""

        def value(verdict: Verdict, dimension: str) -> float | None:
            if verdict.score is None:
                unscored[dimension] += 1
            return _value(verdict, mode)

        thoughts = ep.thoughts
        if mode == "compat":
            thoughts = [(p[0] if (p := judge_parts(m)) else "") for m in ep.messages]
        matches = []
        for n in rules["ts_turns"]:
            tool = ""
            parts = split_message(ep.messages[n])
            if mode == "compat":
                tool = cut[1] if (cut := judge_parts(ep.messages[n])) else ""
            elif ep.tool_turns[n]["calls"]:
                tool = str(ep.tool_turns[n]["calls"][0].get("name"))
            elif parts is not None:
                tool = parts[1]
            match = value(judge.ask(action_thought_question(ep, thoughts[n], tool)), "TS")
            if match is not None:
                matches.append(match)
        out: dict[str, float] = {}
        quality = value(judge.ask(chain_question(ep, QUALITY, thoughts)), "BP")
        validity = value(judge.ask(chain_question(ep, VALIDITY, thoughts)), "BP")
        focus = value(judge.ask(chain_question(ep, FOCUS, thoughts)), "IU")
        relevance = value(judge.ask(relevance_question(ep)), "AO")
        if matches:
            out["TS"] = rules["tool_reality"] * mean(matches)
        elif mode == "compat":
            out["TS"] = 0.0
        if focus is not None:
            out["IU"] = focus
        if quality is not None and validity is not None:
            out["BP"] = quality * validity
        if relevance is not None:
            # the paper's S_AO = r_AO x p_AO, p_AO: answered within the turn limit; ToolEyes' code
            # keeps p_AO at 1 (`Ans_pass`), which compat follows
            out["AO"] = relevance if mode == "compat" else relevance * float(ep.answered_in_time)
        return out

    def score(self, traces: Sequence[Trace], tasks: TaskSet | None, mode: Mode) -> SuiteResult:
        mode = check_mode(mode)
        if tasks is None:
            raise EvaluationError("the tooleyes suite needs the task set the traces were run on")
        return with_judge(self.judge, True, lambda judge: self._score(traces, tasks, mode, judge))

    def _score(self, traces: Sequence[Trace], tasks: TaskSet, mode: Mode, judge: Judge | None) -> SuiteResult:
        per_task: dict[str, dict[str, float]] = {}
        values: dict[str, list[float]] = {}
        by_scenario: dict[str, dict[str, list[float]]] = {}
        skipped = infra = 0
        unscored: Counter[str] = Counter()
        for trace in traces:
            if trace.header.task_id not in tasks or not trace.steps:
                skipped += 1
                continue
            if mode == "fixed" and has_infra_error(trace):
                infra += 1
                continue
            task = tasks[trace.header.task_id]
            ep = episode_of(trace, task)
            rules = compat_rules(ep) if mode == "compat" else fixed_rules(ep)
            got: dict[str, float] = {
                "IF": rules["IF"],
                "tool_reality": rules["tool_reality"],
                "tool_hallucinations": float(rules["tool_hallucinations"]),
                "param_hallucinations": float(rules["param_hallucinations"]),
            }
            if judge is not None:
                got.update(self._judged(ep, rules, mode, judge, unscored))
                five = [got[k] for k in ("IF", "TS", "BP", "IU", "AO") if k in got]
                if len(five) == 5:
                    got["overall"] = mean(five)
            per_task[task.id] = got
            for key in ("IF", "tool_reality", "TS", "IU", "BP", "AO", "overall"):
                if key in got:
                    values.setdefault(key, []).append(got[key])
            scenario = task.category or str(task.metadata.get("tooleyes", {}).get("scenario", ""))
            if scenario:
                dims = by_scenario.setdefault(scenario, {})
                for key in DIMENSIONS:
                    if key in got:
                        dims.setdefault(key, []).append(got[key])
        if not per_task:
            raise EvaluationError(f"none of the {len(traces)} traces could be scored (no task, or no steps)")
        metrics = {k: 100 * mean(v) for k, v in values.items()}
        # per scenario (TG, RS, ...): each of the five dimensions and the overall score
        for scenario in sorted(by_scenario):
            for key in DIMENSIONS:
                if key in by_scenario[scenario]:
                    metrics[f"{scenario}/{key}"] = 100 * mean(by_scenario[scenario][key])
        result = SuiteResult(suite=self.name, mode=mode, metrics=metrics, per_task=per_task)
        result.counts = {"episodes": len(per_task)}
        if skipped:
            result.counts["skipped"] = skipped
            result.notes.append(f"{skipped} traces skipped: no task in the task set, or no steps")
        if infra:
            result.counts["infra_error_episodes"] = infra
        if judge is None:
            result.notes.append(
                "no judge configured: TS, IU, BP, AO and overall need one (ToolEyesSuite(judge=...) "
                "or TOOLGYM_JUDGE_BASE_URL and TOOLGYM_JUDGE_MODEL)"
            )
        else:
            requests = getattr(judge, "requests", None)
            hits = getattr(judge, "cache_hits", None)
            if isinstance(requests, int) and isinstance(hits, int):
                result.counts["judge_requests"] = requests
                result.counts["judge_cache_hits"] = hits
            result.notes.append(f"judged by {judge.name}; our prompts restate ToolEyes' criteria")
            _note_unscored(result, unscored, mode)
        return result


def _note_unscored(result: SuiteResult, unscored: Counter[str], mode: Mode) -> None:
    """Judge replies without a score: counted per dimension and said, never silently dropped."""
    if not unscored:
        return
    for dimension, n in sorted(unscored.items()):
        result.counts[f"judge_unscored/{dimension}"] = n
    each = ", ".join(f"{dimension} {n}" for dimension, n in sorted(unscored.items()))
    treated = (
        "each counted 0, as ToolEyes does (compat)"
        if mode == "compat"
        else "each left out: an episode without its dimension's verdicts has no score there, nor an overall"
    )
    result.notes.append(f"{sum(unscored.values())} judge replies carried no score ({each}): {treated}")
