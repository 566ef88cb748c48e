"""MTU-Eval: TS, PS (single call per turn), TN, TO (several calls per turn), and the dialog
metrics ATS, SATS, SR, TPR (multi-turn splits).

`compat` is MTU-Bench's own scorer (`MTU-Eval/cal_score.py`) with only its crashes fixed and the
M-S per-turn flag reset, as `tests/data/mtu-bench/SCORER.md` specifies: it reads the raw response
text with MTU's parsers and reproduces the published GPT-4 reference numbers exactly. `fixed`
reads the actions toolgym's ReAct protocol parsed, compares calls as multisets with typed values
and penalises extra calls; docs/evaluation.md lists every difference.

Two entry points: `score_mtu_files(eval_jsonl, response_jsonl, mode)` for the benchmark's own
files, and `MTUSuite().score(traces, tasks, mode)` for traces of MTU rows run as episodes
(toolgym.evaluation.loaders.mtu).
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from toolgym.actions import ACTION_ADAPTER, Action, ToolCall
from toolgym.errors import FormatError
from toolgym.evaluation.base import (
    EvaluationError,
    Mode,
    SuiteResult,
    check_mode,
    mean,
    raw_text,
)
from toolgym.tasks import Task, TaskSet
from toolgym.trace import Trace

SPLITS = ("S-S", "S-M", "M-S", "M-M")
# traces of tasks that are not MTU rows: a whole episode's calls against its golden chain
EPISODE = "episode"
SINGLE_CALL_SPLITS = frozenset({"S-S", "M-S"})
MULTI_TURN_SPLITS = frozenset({"M-S", "M-M"})

# ================================================================================================
# compat: MTU's own parsing and comparison (SCORER.md sections 4.1-4.6)
# ================================================================================================

_DIGIT_WORDS = (
    ("0", "zero"),
    ("1", "one"),
    ("2", "two"),
    ("3", "three"),
    ("4", "four"),
    ("5", "five"),
    ("6", "six"),
    ("7", "seven"),
    ("8", "eight"),
    ("9", "nine"),
    ("10", "ten"),  # never fires: its digits are already words
)
_DATE_DAYS = (
    ("2024-01-04", "monday"),
    ("2024-01-05", "tuesday"),
    ("2024-01-06", "wednesday"),
    ("2024-01-07", "thursday"),
    ("2024-01-08", "friday"),
    ("2024-01-09", "saturday"),
    ("2024-01-10", "sunday"),
)


def compat_lower(params: Mapping[str, Any]) -> dict[str, str]:
    """Values through Python's str() then lower-cased; keys untouched (as MTU does)."""
    return {k: str(v).lower() for k, v in params.items()}


def compat_normalize(value: str) -> str:
    value = value.replace("my ", "")
    for digit, word in _DIGIT_WORDS:
        value = value.replace(digit, word)
    value = value.replace("findprovider.", "bookappointment.")
    for date, day in _DATE_DAYS:
        value = value.replace(date, day).replace("today", day)
    return value


def compat_compare(d1: Mapping[str, str], d2: Mapping[str, str]) -> bool:
    """True when every value of d1 is a substring of d2's value under the same key (after
    dropping 'hotel' values from both sides); both must have the same number of keys."""
    a = {k: v for k, v in d1.items() if v != "hotel"}
    b = {k: v for k, v in d2.items() if v != "hotel"}
    if len(a) != len(b):
        return False
    for key, value in a.items():
        if key not in b:
            return False
        if compat_normalize(value) not in compat_normalize(b[key]):
            return False
    return True


def _mtu_spacing(response: str) -> str:
    text = response.replace("Action", "\nAction").replace("Action Input", "\nAction Input")
    return text.replace("\n\n", "\n")


def compat_parse_single(response: str) -> tuple[str, dict[str, Any]]:
    """MTU's single-call parser: the first Action / Action Input pair, or ('', {})."""
    text = _mtu_spacing(response)
    if "\nAction" not in text or "\nAction Input" not in text:
        return "", {}
    parts = text.split("\nAction:")
    if len(parts) < 2:
        return "", {}  # the original raises IndexError here; no response in the data does this
    action = parts[1].split("\nAction Input:")[0].strip()
    inputs = text.split("\nAction Input:")
    raw = inputs[1].strip() if len(inputs) > 1 else ""
    raw = raw.rsplit("}", 1)[0] + "}"
    raw = raw.replace("\n", "").replace("True", "true").replace("False", "false")
    found = re.findall(r"\{.*?\}", raw)
    raw = found[0] if found else raw
    params: Any
    try:
        params = json.loads(raw)
    except ValueError:
        try:
            params = json.loads(raw.replace("'", '"'))
        except ValueError:
            return "", {}
    if not isinstance(params, dict):
        params = {}  # a crash in the original (a JSON scalar); never happens in the data
    if "None" in action:
        return "", {}
    if "," in action:
        action = action.split(",")[0].strip()
    return action, params


def compat_parse_multi(response: str) -> dict[str, dict[str, Any]]:
    """MTU's multi-call parser: {tool: params}; a repeated tool keeps its first position and
    its last params; nested or unparseable inputs give {}."""
    text = _mtu_spacing(response)
    thought = text.split("\nAction")[0].replace("Thought: ", "")
    segments = text.replace("Thought: " + thought, "").split("\nAction: ")[1:]
    out: dict[str, dict[str, Any]] = {}
    for segment in segments:
        if "The name of the API to be called." in segment:
            continue
        if "Please provide your" in segment:
            segment = segment.split("Please provide your")[0].strip("\n")
        segment = segment.strip("\n")
        if "\nAction Input:" not in segment:
            continue
        name = segment.split("\nAction Input")[0].strip().replace('"', "")
        raw = segment.split("\nAction Input:")[1].strip().replace("\n  ", "").split("}")[0] + "}"
        raw = raw.replace("True", "true").replace("False", "false")
        try:
            params = json.loads(raw)
        except ValueError:
            params = {}
        out[name] = params if isinstance(params, dict) else {}
    return out


def compat_order_score(seq: Sequence[str], gold: Sequence[str]) -> float:
    """MTU's TO: the longest contiguous common run of gold and seq over |gold|, times a cosine
    penalty on where the run starts in seq."""
    if list(seq) == list(gold):
        return 1.0
    if not seq or not gold:
        return 0.0
    match = SequenceMatcher(None, list(gold), list(seq), autojunk=False).find_longest_match(
        0, len(gold), 0, len(seq)
    )
    return math.cos(math.pi / 2 * match.b / len(seq)) * match.size / len(gold)


def compat_multi_scores(
    pred: Mapping[str, Mapping[str, Any]], gold: Mapping[str, Mapping[str, Any]]
) -> tuple[float, float]:
    """(TN, TO) of one item, MTU's way: seq in gold order, extra predicted tools ignored."""
    p = {name.strip(): params for name, params in pred.items()}
    g = {name.strip(): params for name, params in gold.items()}
    gold_names = list(g)
    if not p and not g:
        return 1.0, compat_order_score([], gold_names)
    if not p or not g:
        return 0.0, compat_order_score(list(p), gold_names)
    seq: list[str] = []
    for name in gold_names:
        if name not in p:
            continue
        ok = compat_compare(compat_lower(p[name]), compat_lower(g[name]))
        seq.append(name if ok else name + "wrong")
    correct = sum(1 for s in seq if s in g)
    wrong = len(seq) - correct
    return correct / (len(g) + wrong), compat_order_score(seq, gold_names)


# ================================================================================================
# fixed: typed values, calls as multisets, extra calls penalised, order on the prediction
# ================================================================================================

_NUMBER_WORDS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
_TRUE = frozenset({"true", "yes"})
_FALSE = frozenset({"false", "no"})
_NUMBER_RE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def _norm_text(value: str) -> str:
    text = unicodedata.normalize("NFKC", value).casefold().strip()
    text = re.sub(r"\s+", " ", text)
    return text.removeprefix("my ").strip(" .,;!?\"'")


def _scalar(value: Any) -> Any:
    """A comparable form: numbers (numeric strings and number words too), booleans
    (true/false/yes/no), normalised text."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = _norm_text(value)
        if _NUMBER_RE.fullmatch(text.replace(",", "")):
            return float(text.replace(",", ""))
        if text in _NUMBER_WORDS:
            return float(_NUMBER_WORDS[text])
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        return text
    return value


def _words(value: Any) -> list[str]:
    if isinstance(value, float):
        value = f"{value:g}"
    return re.findall(r"\w+", _norm_text(str(value)))


def _contains_words(gold: Any, pred: Any) -> bool:
    """Gold's words appear in the prediction as one contiguous run of whole words: a prediction
    may qualify a value ("Atlanta, GA" for "Atlanta"), but "2" never matches "12" and an empty
    prediction never matches."""
    g, p = _words(gold), _words(pred)
    if not g:
        return not p
    return any(p[i : i + len(g)] == g for i in range(len(p) - len(g) + 1))


def values_equal(gold: Any, pred: Any) -> bool:
    """Typed comparison: numbers numerically, booleans as booleans, lists as multisets, objects
    key by key; text is normalised (Unicode NFKC, case-folded) and gold's words must appear as
    whole words in the prediction."""
    if isinstance(gold, Mapping) or isinstance(pred, Mapping):
        return isinstance(gold, Mapping) and isinstance(pred, Mapping) and params_equal(gold, pred)
    if isinstance(gold, list) or isinstance(pred, list):
        g = gold if isinstance(gold, list) else [gold]
        p = pred if isinstance(pred, list) else [pred]
        if len(g) != len(p):
            return False
        remaining = list(p)
        for item in g:
            hit = next((i for i, cand in enumerate(remaining) if values_equal(item, cand)), None)
            if hit is None:
                return False
            remaining.pop(hit)
        return True
    a, b = _scalar(gold), _scalar(pred)
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    if a is None or b is None:
        return a is b
    return _contains_words(a, b)


def params_equal(gold: Mapping[str, Any], pred: Mapping[str, Any]) -> bool:
    """Same parameter names (no missing, no extra), every value equal."""
    g = {k.strip(): v for k, v in gold.items()}
    p = {k.strip(): v for k, v in pred.items()}
    if set(g) != set(p):
        return False
    return all(values_equal(v, p[k]) for k, v in g.items())


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


def gold_calls(answer: Mapping[str, Any]) -> list[Call]:
    """An MTU answer dict as calls; {} and {"": {}} are "no call"."""
    calls = []
    for name, params in answer.items():
        if name.strip():
            calls.append(Call(name.strip(), dict(params) if isinstance(params, Mapping) else {}))
    return calls


def match_calls(gold: Sequence[Call], pred: Sequence[Call]) -> tuple[list[int | None], int]:
    """For each predicted call (in predicted order) the gold index it matches (same name, equal
    arguments) or None; each gold call matches at most once. Also the number of predicted calls
    whose name matched a gold call but whose arguments did not."""
    used: set[int] = set()
    labels: list[int | None] = []
    wrong = 0
    for call in pred:
        hit = next(
            (
                i
                for i, g in enumerate(gold)
                if i not in used and g.name == call.name and params_equal(g.arguments, call.arguments)
            ),
            None,
        )
        if hit is None:
            if any(g.name == call.name for i, g in enumerate(gold) if i not in used):
                wrong += 1
            labels.append(None)
        else:
            used.add(hit)
            labels.append(hit)
    return labels, wrong


def fixed_multi_scores(gold: Sequence[Call], pred: Sequence[Call]) -> tuple[float, float]:
    """(TN, TO): TN is the multiset Jaccard of gold and predicted calls (a call counts when name
    and arguments match; extra and wrong calls enlarge the union); TO is MTU's run-and-cosine
    formula on the predicted order."""
    if not gold and not pred:
        return 1.0, 1.0
    if not gold or not pred:
        return 0.0, 0.0
    labels, _ = match_calls(gold, pred)
    correct = sum(1 for label in labels if label is not None)
    tn = correct / (len(gold) + len(pred) - correct)
    seq = [str(label) if label is not None else f"x{i}" for i, label in enumerate(labels)]
    order = compat_order_score(seq, [str(i) for i in range(len(gold))])
    return tn, order


def actions_to_calls(actions: Iterable[Action]) -> list[Call]:
    return [Call(a.name, dict(a.arguments)) for a in actions if isinstance(a, ToolCall)]


def parse_fixed(response: str) -> tuple[list[Call], bool]:
    """The response through toolgym's ReAct parser (prose is a no-call turn, as MTU scores it);
    returns the calls and whether the reply was unparseable (then it is a no-call turn)."""
    from toolgym.protocols.react import ReActProtocol

    try:
        return actions_to_calls(ReActProtocol(prose_as_no_call=True).parse(response)), False
    except FormatError:
        return [], True


# ================================================================================================
# items and aggregation (shared by both modes)
# ================================================================================================


@dataclass
class Item:
    """One MTU turn: gold answer, the model's reply, and where it sits in its dialog."""

    id: str  # the benchmark's id, e.g. "M-M_19_0" (not unique in M-M)
    split: str
    answer: dict[str, Any]
    response: str
    dialog: str  # compat: the id prefix; fixed: one key per real dialog (see dialog_keys)
    dialog_fixed: str
    turn: int
    key: str  # unique item key (task id)
    calls: list[Call] | None = None  # fixed mode: calls already parsed (from a trace)
    format_error: bool = False
    compat_pred: dict[str, dict[str, Any]] | None = None  # compat: calls of a whole episode


def split_of(item_id: str) -> str:
    split = item_id.split("_", 1)[0]
    if split not in SPLITS:
        raise EvaluationError(f"MTU id {item_id!r}: unknown split (expected one of {', '.join(SPLITS)})")
    return split


def dialog_turn(item_id: str) -> tuple[str, int]:
    dialog, _, turn = item_id.rpartition("_")
    try:
        return dialog, int(turn)
    except ValueError:
        raise EvaluationError(f"MTU id {item_id!r}: no turn number after the last '_'") from None


def dialog_keys(ids: Sequence[str]) -> list[str]:
    """One key per real dialog: a turn number that does not grow starts a new dialog, so two
    dialogs sharing an id prefix (M-M_19) stay apart; the second gets the key 'M-M_19~2'."""
    keys: list[str] = []
    seen: dict[str, int] = {}
    current: dict[str, tuple[int, int]] = {}  # prefix -> (occurrence, last turn)
    for item_id in ids:
        prefix, turn = dialog_turn(item_id)
        occurrence, last = current.get(prefix, (0, -1))
        if occurrence == 0 or turn <= last:
            seen[prefix] = seen.get(prefix, 0) + 1
            occurrence = seen[prefix]
        current[prefix] = (occurrence, turn)
        keys.append(prefix if occurrence == 1 else f"{prefix}~{occurrence}")
    return keys


def _single_flags(item: Item, mode: Mode) -> tuple[float, float]:
    target = next(iter(item.answer), "")
    if mode == "compat":
        action, params = compat_parse_single(item.response)
        tool_ok = action == target
        gold = item.answer.get(target, {}) if item.answer else {}
        param_ok = tool_ok and compat_compare(compat_lower(gold), compat_lower(params))
        return float(tool_ok), float(param_ok)
    if item.format_error:
        return 0.0, 0.0  # an unreadable reply is a failed turn, not a deliberate "no call"
    calls = item.calls if item.calls is not None else parse_fixed(item.response)[0]
    gold_list = gold_calls(item.answer)
    if not gold_list:
        return float(not calls), float(not calls)
    tool_ok = len(calls) == 1 and calls[0].name == gold_list[0].name
    param_ok = tool_ok and params_equal(gold_list[0].arguments, calls[0].arguments)
    return float(tool_ok), float(param_ok)


def _multi_flags(item: Item, mode: Mode) -> tuple[float, float]:
    if mode == "compat":
        pred = item.compat_pred if item.compat_pred is not None else compat_parse_multi(item.response)
        return compat_multi_scores(pred, item.answer)
    if item.format_error:
        return 0.0, 0.0
    calls = item.calls if item.calls is not None else parse_fixed(item.response)[0]
    return fixed_multi_scores(gold_calls(item.answer), calls)


def _sats(flags: Sequence[float]) -> float:
    scores = []
    last_fail: int | None = None
    for j, r in enumerate(flags):
        if r != 1:
            scores.append(0.0)
            last_fail = j
        elif last_fail is None:
            scores.append(1.0)
        else:
            scores.append(1.0 - math.exp(-(j - last_fail)))
    return mean(scores)


def dialog_metrics(dialogs: Mapping[str, Mapping[int, float]]) -> dict[str, float]:
    ats, sats, sr, tpr = [], [], [], []
    for turns in dialogs.values():
        flags = [turns[k] for k in sorted(turns)]
        n = len(flags)
        ats.append(sum(flags) / n)
        sats.append(_sats(flags))
        sr.append(1.0 if all(f == 1 for f in flags) else 0.0)
        lead = next((i for i, f in enumerate(flags) if f != 1), n)
        tpr.append(lead / n)
    return {"ATS": 100 * mean(ats), "SATS": 100 * mean(sats), "SR": 100 * mean(sr), "TPR": 100 * mean(tpr)}


def score_items(items: Sequence[Item], mode: Mode, suite: str = "mtu") -> SuiteResult:
    """Scores MTU items in their benchmark order; metric names carry the split ("M-M/TN")
    unless the items are all of one split."""
    mode = check_mode(mode)
    by_split: dict[str, list[Item]] = {}
    for item in items:
        by_split.setdefault(item.split, []).append(item)
    metrics: dict[str, float] = {}
    per_task: dict[str, dict[str, float]] = {}
    counts: dict[str, int] = {}
    notes: list[str] = []
    for split, rows in by_split.items():
        split_metrics: dict[str, float] = {}
        flags: dict[str, dict[int, float]] = {}
        if split in SINGLE_CALL_SPLITS:
            ts, ps = [], []
            for it in rows:
                t, p = _single_flags(it, mode)
                ts.append(t)
                ps.append(p)
                per_task[it.key] = {"TS": t, "PS": p}
                if split == "M-S":
                    flags.setdefault(it.dialog if mode == "compat" else it.dialog_fixed, {})[it.turn] = p
            split_metrics["TS"] = 100 * mean(ts)
            split_metrics["PS"] = 100 * mean(ps)
            # MTU's "average_score": the mean of TS and PS; the script averages the rounded
            # percentages and multiplies by 100 a second time (7307.50 for GPT-4 on S-S)
            if mode == "compat":
                rounded = (round(split_metrics["TS"], 2) + round(split_metrics["PS"], 2)) / 2
                split_metrics["AVG"] = rounded * 100
            else:
                split_metrics["AVG"] = (split_metrics["TS"] + split_metrics["PS"]) / 2
        else:
            tn, to = [], []
            for it in rows:
                n, o = _multi_flags(it, mode)
                tn.append(n)
                to.append(o)
                per_task[it.key] = {"TN": n, "TO": o}
                if split == EPISODE:
                    per_task[it.key]["success"] = float(n == 1 and o == 1)
                if split == "M-M":
                    ok = float(n == 1 and o == 1)
                    flags.setdefault(it.dialog if mode == "compat" else it.dialog_fixed, {})[it.turn] = ok
            split_metrics["TN"] = 100 * mean(tn)
            split_metrics["TO"] = 100 * mean(to)
            if split == EPISODE:
                split_metrics["SR"] = 100 * mean([per_task[it.key]["success"] for it in rows])
        if split in MULTI_TURN_SPLITS:
            split_metrics.update(dialog_metrics(flags))
            counts[f"{split}/dialogs"] = len(flags)
            counts[f"{split}/dialog_turns"] = sum(len(t) for t in flags.values())
        counts[f"{split}/items"] = len(rows)
        counts[f"{split}/no_call_gold"] = sum(1 for it in rows if not gold_calls(it.answer))
        if mode == "fixed":
            counts[f"{split}/format_errors"] = sum(1 for it in rows if it.format_error)
        prefix = "" if len(by_split) == 1 else f"{split}/"
        metrics.update({prefix + k: round(v, 2) for k, v in split_metrics.items()})
    if mode == "compat":
        notes.append("compat: MTU-Eval cal_score.py semantics with crash fixes only (SCORER.md)")
        if any(c.endswith("/dialogs") for c in counts):
            notes.append("compat: dialogs are keyed by id prefix, so dialogs sharing one are merged")
    return SuiteResult(suite=suite, mode=mode, metrics=metrics, per_task=per_task, counts=counts, notes=notes)


# ================================================================================================
# raw benchmark files
# ================================================================================================


def _read_jsonl(path: Path | str, what: str) -> list[dict[str, Any]]:
    rows = []
    with Path(path).open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise EvaluationError(f"{path}:{lineno}: {what} is not JSON: {exc}") from None
            if not isinstance(row, dict) or not isinstance(row.get("id"), str):
                raise EvaluationError(f"{path}:{lineno}: {what} needs an object with a string 'id'")
            rows.append(row)
    return rows


def join_responses(
    rows: Sequence[Mapping[str, Any]], responses: Sequence[Mapping[str, Any]]
) -> tuple[list[str | None], int]:
    """Each eval row's response: the k-th response with an id belongs to the k-th row with it
    (the response files are shuffled; M-M repeats some ids). Also the count of unused responses."""
    queues: dict[str, list[str]] = {}
    for r in responses:
        text = r.get("response")
        queues.setdefault(str(r["id"]), []).append(text if isinstance(text, str) else "")
    out: list[str | None] = []
    for row in rows:
        queue = queues.get(str(row["id"]))
        out.append(queue.pop(0) if queue else None)
    return out, sum(len(q) for q in queues.values())


def items_from_rows(
    rows: Sequence[Mapping[str, Any]], responses: Sequence[str | None], keys: Sequence[str] | None = None
) -> list[Item]:
    ids = [str(r["id"]) for r in rows]
    fixed_dialogs = dialog_keys(ids) if any(split_of(i) in MULTI_TURN_SPLITS for i in ids) else ids
    items = []
    for n, (row, response) in enumerate(zip(rows, responses, strict=True)):
        item_id = ids[n]
        answer = row.get("answer")
        if not isinstance(answer, dict):
            raise EvaluationError(f"MTU row {item_id!r}: 'answer' must be an object, got {answer!r}")
        split = split_of(item_id)
        dialog, turn = dialog_turn(item_id) if split in MULTI_TURN_SPLITS else (item_id, 0)
        text = response or ""
        calls, bad = parse_fixed(text) if text else ([], False)
        items.append(
            Item(
                id=item_id,
                split=split,
                answer=answer,
                response=text,
                dialog=dialog,
                dialog_fixed=fixed_dialogs[n],
                turn=turn,
                key=keys[n] if keys else item_id,
                calls=calls,
                format_error=bad,
            )
        )
    return items


def unique_keys(ids: Sequence[str]) -> list[str]:
    """Unique item keys: the id, and 'id~k' for its k-th repeat (k >= 2)."""
    seen: dict[str, int] = {}
    keys = []
    for item_id in ids:
        seen[item_id] = seen.get(item_id, 0) + 1
        keys.append(item_id if seen[item_id] == 1 else f"{item_id}~{seen[item_id]}")
    return keys


def score_mtu_files(eval_jsonl: Path | str, response_jsonl: Path | str, mode: Mode) -> SuiteResult:
    """Scores a response file against an MTU-Eval file (`{id, question, answer}` rows and
    `{id, response}` rows), e.g. S-S_eval.jsonl with S-S_gpt4_response.jsonl."""
    mode = check_mode(mode)
    rows = _read_jsonl(eval_jsonl, "eval row")
    responses = _read_jsonl(response_jsonl, "response row")
    joined, unused = join_responses(rows, responses)
    items = items_from_rows(rows, joined, unique_keys([str(r["id"]) for r in rows]))
    result = score_items(items, mode)
    result.counts["missing_responses"] = sum(1 for r in joined if r is None)
    result.counts["unused_responses"] = unused
    return result


# ================================================================================================
# traces
# ================================================================================================


def _trace_calls(trace: Trace) -> tuple[list[Call], bool]:
    if not trace.steps:
        return [], False
    step = trace.steps[0]
    actions = [ACTION_ADAPTER.validate_python(a) for a in step.actions]
    return actions_to_calls(actions), "format_error" in step.error_kinds


def _episode_item(trace: Trace, task: Task) -> Item:
    """A whole episode as one multi-call item: all its calls against the golden chain's calls."""
    gold = [g.action for g in task.golden if isinstance(g.action, ToolCall)]
    answer: dict[str, Any] = {}
    for call in gold:
        answer.setdefault(call.name, dict(call.arguments))
    actions = [ACTION_ADAPTER.validate_python(a) for s in trace.steps for a in s.actions]
    calls = actions_to_calls(actions)
    compat_pred: dict[str, dict[str, Any]] = {}
    for c in calls:
        compat_pred[c.name] = c.arguments  # MTU's dict: last params at the first position
    return Item(
        id=task.id,
        split=EPISODE,
        answer=answer,
        response="",
        dialog=task.id,
        dialog_fixed=task.id,
        turn=0,
        key=task.id,
        calls=calls,
        compat_pred=compat_pred,
    )


class MTUSuite:
    """Scores traces of MTU rows (one teacher-forced turn per trace; tasks from
    toolgym.evaluation.loaders.mtu carry the row in `metadata["mtu"]`). Traces of other tasks
    are scored as whole episodes (split "episode": TN, TO and SR of all their calls against the
    golden chain); traces whose task is not in the task set are skipped and counted."""

    name = "mtu"

    def score(self, traces: Sequence[Trace], tasks: TaskSet | None, mode: Mode) -> SuiteResult:
        mode = check_mode(mode)
        if tasks is None:
            raise EvaluationError("the mtu suite needs the task set the traces were run on")
        rows: list[tuple[int, str, dict[str, Any], Trace]] = []
        episodes: list[Item] = []
        skipped = 0
        for trace in traces:
            if trace.header.task_id not in tasks:
                skipped += 1
                continue
            task = tasks[trace.header.task_id]
            meta = task.metadata.get("mtu")
            if isinstance(meta, dict) and "id" in meta and "answer" in meta:
                rows.append((int(meta.get("row", 0)), task.id, meta, trace))
            else:
                episodes.append(_episode_item(trace, task))
        if not rows and not episodes:
            raise EvaluationError(f"none of the {len(traces)} traces belongs to a task of the task set")
        rows.sort(key=lambda e: e[0])  # the benchmark's row order: later rows overwrite (compat)
        items = []
        for _, task_id, meta, trace in rows:
            item_id = str(meta["id"])
            split = split_of(item_id)
            dialog, turn = dialog_turn(item_id) if split in MULTI_TURN_SPLITS else (item_id, 0)
            calls, bad = _trace_calls(trace)
            items.append(
                Item(
                    id=item_id,
                    split=split,
                    answer=dict(meta["answer"]),
                    response=raw_text(trace.steps[0]) if trace.steps else "",
                    dialog=dialog,
                    dialog_fixed=str(meta.get("dialog", dialog)),
                    turn=turn,
                    key=task_id,
                    calls=calls,
                    format_error=bad,
                )
            )
        result = score_items([*items, *episodes], mode, self.name)
        if skipped:
            result.counts["skipped_unknown_task"] = skipped
            result.notes.append(f"{skipped} traces skipped: their task is not in the task set")
        return result
