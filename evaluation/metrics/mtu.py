"""MTU-Eval: TS, PS (single call per turn), TN, TO (several calls per turn), and the dialog
metrics ATS, SATS, SR, TPR (multi-turn splits).

`compat` is MTU-Bench's own scorer (`MTU-Eval/cal_score.py`) with only its crashes fixed and the
M-S per-turn flag reset, as `tests/data/mtu-bench/SCORER.md` specifies: it reads the raw response
text with MTU's parsers and reproduces the published GPT-4 reference numbers exactly. `fixed`
reads the actions toolgym's ReAct protocol parsed, compares calls as multisets with typed values
and penalises extra calls; docs/evaluation.md lists every difference.

Two entry points: `score_mtu_files(eval_jsonl, response_jsonl, mode)` for the benchmark's own
files, and `MTUSuite().score(traces, tasks, mode)` for traces of MTU rows run as episodes
(toolgym.evaluation.loaders.mtu). Both pair responses with rows by `pair_responses` (ids, then
content) and report every unpaired row and response; both read a dialog's turns in turn-number
order (`dialog_keys`), whatever order the rows come in.
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
    is_teacher_forced,
    mean,
    raw_text,
)
from toolgym.jsonl import JSONLError, read_jsonl_lines
from toolgym.tasks import Task, TaskSet
from toolgym.trace import Trace

# the four splits MTU's score() scores, and OOD (released with them, scored in fixed mode only)
SPLITS = ("S-S", "S-M", "M-S", "M-M", "OOD")
COMPAT_SPLITS = frozenset({"S-S", "S-M", "M-S", "M-M"})
# traces of tasks that are not MTU rows: a whole episode's calls against its golden chain
EPISODE = "episode"
# teacher-forced traces of tasks that are not MTU rows (`toolgym run --mode step`): each golden
# step a turn of the task's dialog, given the golden history, scored as M-S scores its turns
STEP = "step"
SINGLE_CALL_SPLITS = frozenset({"S-S", "M-S", STEP})
MULTI_TURN_SPLITS = frozenset({"M-S", "M-M", "OOD", STEP})
# the splits whose score() result has an "average_score" (the mean of its two call metrics)
AVERAGED_SPLITS = frozenset({"S-S", "S-M"})

API_LIST_MARKER = "The following is a list of APIs and their parameters that you can use:"
HISTORY_MARKER = "History Dialog:"

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


def compat_quote_repair(text: str) -> str:
    """MTU's second try at single-quoted input: every ' becomes ", but an escaped \\' becomes
    \\\\' (MTU's helper parks it under the placeholder "__SINGLE_QUOTE__", so that literal
    text ends the same way)."""
    parts = text.replace("__SINGLE_QUOTE__", "\\'").split("\\'")
    return "\\\\'".join(part.replace("'", '"') for part in parts)


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
            params = json.loads(compat_quote_repair(raw))
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


def decode_answer(answer: Any, where: str = "MTU row") -> dict[str, dict[str, Any]]:
    """An MTU answer `{tool: params}` with every tool's params as a dict: params stored as a JSON
    string (the OOD split does this) are decoded; anything else that is
    not an object is an EvaluationError naming the row and the tool."""
    if not isinstance(answer, Mapping):
        raise EvaluationError(f"{where}: 'answer' must be an object, got {answer!r}")
    out: dict[str, dict[str, Any]] = {}
    for name, params in answer.items():
        value = params
        if isinstance(params, str):
            try:
                value = json.loads(params) if params.strip() else {}
            except ValueError as exc:
                raise EvaluationError(
                    f"{where}: parameters of {name!r} are a string that is not JSON: {exc}"
                ) from None
        if not isinstance(value, Mapping):
            raise EvaluationError(
                f"{where}: parameters of {name!r} must be an object (or a JSON string of one), got {params!r}"
            )
        out[str(name)] = dict(value)
    return out


def gold_calls(answer: Mapping[str, Any]) -> list[Call]:
    """An MTU answer dict as calls; {} and {"": {}} are "no call"."""
    return [Call(name.strip(), params) for name, params in decode_answer(answer).items() if name.strip()]


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
# prompts, and one assignment routine (response pairing and dialog grouping both use it)
# ================================================================================================


# where the dialog starts after the API list: M-S and M-M write "History Dialog:", S-S and S-M
# go straight to "User:", OOD's multi-turn prompts to a lower-case "user:" history
_DIALOG_STARTS = ("\n" + HISTORY_MARKER, "\nUser:", "\nuser:")


def split_prompt(question: str) -> tuple[str, str] | None:
    """(API list text, dialog text) of an MTU prompt: the list after "The following is a list of
    APIs ..." up to the dialog (history or first user turn), then the dialog; None without a list."""
    start = question.find(API_LIST_MARKER)
    if start < 0:
        return None
    body = question[start + len(API_LIST_MARKER) :].lstrip("\n")
    ends = [i for i in (body.find(marker) for marker in _DIALOG_STARTS) if i >= 0]
    if not ends:
        return body.strip(), ""
    return body[: min(ends)].strip(), body[min(ends) :]


def dialog_text(question: str) -> str:
    """The dialog part of a prompt (history and the user's last turn); the whole prompt when it
    lists no APIs."""
    parts = split_prompt(question)
    return parts[1] if parts is not None else question


def best_assignment(weights: Sequence[Sequence[int]]) -> list[int | None]:
    """For each row of an integer weight matrix, the column it gets in a maximum-weight matching
    (each column at most once; a pair of weight <= 0 is never made). Hungarian method, O(n^3)."""
    n = len(weights)
    m = max((len(w) for w in weights), default=0)
    size = max(n, m)
    if size == 0:
        return []
    top = max((max(0, w) for row in weights for w in row), default=0)
    # a square cost matrix: padding and non-pairs cost `top`, a pair of weight w costs top - w
    cost = [
        [top - max(0, weights[i][j]) if i < n and j < len(weights[i]) else top for j in range(size)]
        for i in range(size)
    ]
    inf = float("inf")
    u = [0.0] * (size + 1)
    v = [0.0] * (size + 1)
    owner = [0] * (size + 1)  # owner[j]: the (1-based) row holding column j
    way = [0] * (size + 1)
    for i in range(1, size + 1):
        owner[0] = i
        j0 = 0
        minv = [inf] * (size + 1)
        used = [False] * (size + 1)
        while True:
            used[j0] = True
            i0, delta, j1 = owner[j0], inf, 0
            for j in range(1, size + 1):
                if not used[j]:
                    cur = cost[i0 - 1][j - 1] - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j], way[j] = cur, j0
                    if minv[j] < delta:
                        delta, j1 = minv[j], j
            for j in range(size + 1):
                if used[j]:
                    u[owner[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if owner[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            owner[j0] = owner[j1]
            j0 = j1
    out: list[int | None] = [None] * n
    for j in range(1, size + 1):
        i = owner[j] - 1
        if i < n and j - 1 < len(weights[i]) and weights[i][j - 1] > 0:
            out[i] = j - 1
    return out


# ================================================================================================
# pairing responses with rows
# ================================================================================================

_API_NAME_RE = re.compile(r"""["']name["']\s*:\s*["']\s*([^"']+?)\s*["']""")
# pairing across ids compares every left-over row with every left-over response: beyond this
# many on a side only responses with the row's own id are considered
PAIRING_POOL_LIMIT = 300


@dataclass(frozen=True)
class Request:
    """What a row asks, for pairing responses by content: the API names its prompt offers and
    the words of its dialog (" w1 w2 ... ", so a value's words can be found whole)."""

    names: frozenset[str]
    words: str


def request_of(row: Mapping[str, Any]) -> Request:
    question = row.get("question")
    text = question if isinstance(question, str) else ""
    parts = split_prompt(text)
    apis, dialog = parts if parts is not None else ("", text)
    return Request(frozenset(_API_NAME_RE.findall(apis)), " " + " ".join(_words(dialog)) + " ")


def response_calls(response: str) -> list[Call]:
    """The calls a response makes, for pairing: toolgym's parser, or MTU's multi-call parser when
    the text does not parse."""
    calls, bad = parse_fixed(response)
    if bad:
        calls = [Call(n.strip(), p) for n, p in compat_parse_multi(response).items() if n.strip()]
    return calls


def _leaves(value: Any) -> Iterable[Any]:
    if isinstance(value, Mapping):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    elif value is not None and not isinstance(value, bool):
        yield value


def content_fit(request: Request, calls: Sequence[Call]) -> tuple[int, int]:
    """How well a response fits a row's request: (called APIs the row's prompt offers, argument
    values (text or numbers) whose words all appear, in order, in the row's dialog)."""
    apis = values = 0
    for call in calls:
        apis += call.name in request.names
        for leaf in _leaves(call.arguments):
            words = _words(leaf)
            values += bool(words) and f" {' '.join(words)} " in request.words
    return apis, values


def response_text(response: Mapping[str, Any]) -> str:
    text = response.get("response")
    return text if isinstance(text, str) else ""


@dataclass
class Pairing:
    """Which response each row gets. `response_of[i]`: the index of row i's response, None when
    it has none; `by_content`: rows whose response the content rule chose (their id was not
    unique on both sides); `unused`: responses paired with no row."""

    response_of: list[int | None]
    by_content: list[int]
    unused: list[int]

    @property
    def missing(self) -> list[int]:
        return [i for i, j in enumerate(self.response_of) if j is None]


def pair_responses(rows: Sequence[Mapping[str, Any]], responses: Sequence[Mapping[str, Any]]) -> Pairing:
    """Pairs model responses with eval rows.

    An id held by exactly one row and one response pairs them. The rest (ids repeated on either
    side, rows whose id has no response, responses whose id has no row) are paired by a
    maximum-weight matching that prefers, in this order: (1) as many pairs of equal id as
    possible; (2) the best fit of content (`content_fit`: the response's called APIs the row's
    prompt offers, plus its argument values found in the row's dialog); (3) file order (the k-th
    response with an id to the k-th row with it). A response may go to a row of another id of the
    same split only when that row's id has fewer responses than rows, the response's id more
    responses than rows, and at least one of its argument values is found in the row's dialog.
    Whatever is left is unpaired."""
    pairer = _Pairer(rows, responses)
    pool_rows, pool_resps = pairer.pair_unique_ids()
    row_ids, resp_ids = pairer.row_ids, pairer.resp_ids
    for split in sorted({row_ids[i].split("_", 1)[0] for i in pool_rows}):
        split_rows = sorted(i for i in pool_rows if row_ids[i].split("_", 1)[0] == split)
        split_resps = sorted(j for j in pool_resps if resp_ids[j].split("_", 1)[0] == split)
        if len(split_rows) <= PAIRING_POOL_LIMIT and len(split_resps) <= PAIRING_POOL_LIMIT:
            if split_resps:
                pairer.match(split_rows, split_resps, across=True)
            continue
        for rid in sorted({row_ids[i] for i in split_rows}):  # too many: each id on its own
            same = [j for j in split_resps if resp_ids[j] == rid]
            if same:
                pairer.match([i for i in split_rows if row_ids[i] == rid], same, across=False)
    return pairer.pairing()


class _Pairer:
    """pair_responses' work: both sides' ids and the pairs made so far."""

    def __init__(self, rows: Sequence[Mapping[str, Any]], responses: Sequence[Mapping[str, Any]]) -> None:
        self.rows, self.responses = rows, responses
        self.row_ids = [str(r.get("id")) for r in rows]
        self.resp_ids = [str(r.get("id")) for r in responses]
        self.rows_by: dict[str, list[int]] = {}
        for i, rid in enumerate(self.row_ids):
            self.rows_by.setdefault(rid, []).append(i)
        self.resps_by: dict[str, list[int]] = {}
        for j, rid in enumerate(self.resp_ids):
            self.resps_by.setdefault(rid, []).append(j)
        # ids with fewer responses than rows, and ids with more
        self.short = {rid for rid, idx in self.rows_by.items() if len(self.resps_by.get(rid, [])) < len(idx)}
        self.surplus = {rid for rid, js in self.resps_by.items() if len(js) > len(self.rows_by.get(rid, []))}
        self.response_of: list[int | None] = [None] * len(rows)
        self.by_content: list[int] = []

    def pair_unique_ids(self) -> tuple[list[int], list[int]]:
        """Pairs each id held by exactly one row and one response; the rows and responses left."""
        pool_rows: list[int] = []
        for rid, idx in self.rows_by.items():
            answers = self.resps_by.get(rid, [])
            if len(idx) == 1 and len(answers) == 1:
                self.response_of[idx[0]] = answers[0]
            else:
                pool_rows.extend(idx)
        pool_resps = [
            j
            for rid, js in self.resps_by.items()
            if not (len(js) == 1 and len(self.rows_by.get(rid, [])) == 1)
            for j in js
        ]
        return pool_rows, pool_resps

    def match(self, group_rows: list[int], group_resps: list[int], across: bool) -> None:
        """Pairs one group's left-over rows and responses (same split; same id unless `across`)."""
        for a, got in enumerate(best_assignment(self._weights(group_rows, group_resps, across))):
            if got is not None:
                self.response_of[group_rows[a]] = group_resps[got]
                self.by_content.append(group_rows[a])

    def _weights(self, group_rows: list[int], group_resps: list[int], across: bool) -> list[list[int]]:
        """The matching's weights: an equal id above any content fit, a content fit above file order."""
        row_ids, resp_ids = self.row_ids, self.resp_ids
        requests = [request_of(self.rows[i]) for i in group_rows]
        calls = [response_calls(response_text(self.responses[j])) for j in group_resps]
        fits = [
            [
                content_fit(req, calls[b])
                if row_ids[i] == resp_ids[j]
                or (across and row_ids[i] in self.short and resp_ids[j] in self.surplus)
                else None
                for b, j in enumerate(group_resps)
            ]
            for req, i in zip(requests, group_rows, strict=True)
        ]
        content = [[sum(fit) if fit else 0 for fit in line] for line in fits]
        k = min(len(group_rows), len(group_resps)) + 1  # the file-order bonuses sum below k
        big = k * (sum(max(col) for col in zip(*content, strict=True)) + 1)  # above any content sum
        weights = []
        for a, i in enumerate(group_rows):
            line = []
            for b, j in enumerate(group_resps):
                fit = fits[a][b]
                if row_ids[i] == resp_ids[j]:
                    in_order = self.rows_by[row_ids[i]].index(i) == self.resps_by[resp_ids[j]].index(j)
                    line.append(big + k * content[a][b] + int(in_order))
                elif fit is not None and fit[1] > 0:  # another id: an argument value must fit
                    line.append(k * content[a][b])
                else:
                    line.append(0)
            weights.append(line)
        return weights

    def pairing(self) -> Pairing:
        self.by_content.sort()
        used = {j for j in self.response_of if j is not None}
        return Pairing(
            self.response_of, self.by_content, [j for j in range(len(self.responses)) if j not in used]
        )


def describe_row(item_id: str, index: int) -> str:
    return f"eval row {index + 1} ({item_id})"


def describe_response(item_id: str, line: int) -> str:
    return f"response line {line} ({item_id})"


def describe_move(response_id: str, line: int, row_id: str, index: int) -> str:
    return f"{describe_response(response_id, line)} -> {describe_row(row_id, index)}"


def pairing_report(
    missing: Sequence[str], unused: Sequence[str], by_content: int, moved: Sequence[str]
) -> tuple[dict[str, int], list[str]]:
    """Counts and notes for unpaired rows (`missing`), unpaired responses (`unused`) and
    responses moved to a row of another id (`moved`), each given as its description."""
    counts = {
        "missing_responses": len(missing),
        "unused_responses": len(unused),
        "paired_by_content": by_content,
    }
    notes = []
    if missing:
        notes.append(f"{len(missing)} rows have no response (scored as empty replies): {', '.join(missing)}")
    if unused:
        notes.append(f"{len(unused)} responses belong to no row (not scored): {', '.join(unused)}")
    if moved:
        notes.append(f"{len(moved)} responses paired by content with a row of another id: {', '.join(moved)}")
    return counts, notes


def unpaired_count(result: SuiteResult) -> int:
    """Rows without a response plus responses without a row (0 for results with no pairing)."""
    return result.counts.get("missing_responses", 0) + result.counts.get("unused_responses", 0)


def join_responses(
    rows: Sequence[Mapping[str, Any]], responses: Sequence[Mapping[str, Any]]
) -> tuple[list[str | None], int]:
    """Each eval row's response text (None: no response), by `pair_responses`; also the count
    of responses paired with no row."""
    pairing = pair_responses(rows, responses)
    texts = [None if j is None else response_text(responses[j]) for j in pairing.response_of]
    return texts, len(pairing.unused)


# ================================================================================================
# items, dialogs and aggregation (shared by both modes)
# ================================================================================================


@dataclass
class Item:
    """One MTU turn: gold answer, the model's reply, and where it sits in its dialog."""

    id: str  # the benchmark's id, e.g. "M-M_19_0" (not unique in M-M)
    split: str
    answer: dict[str, Any]
    response: str
    dialog: str  # compat: the id prefix, as MTU keys dialogs
    dialog_fixed: str  # fixed: one key per real dialog (see dialog_keys)
    turn: int
    key: str  # unique item key (task id)
    calls: list[Call] | None = None  # fixed mode: calls already parsed (from a trace)
    format_error: bool = False
    missing: bool = False  # no response was paired with this row
    compat_pred: dict[str, dict[str, Any]] | None = None  # compat: calls of a whole episode
    # fixed mode: the gold calls as a list (a whole episode's chain may call one tool twice,
    # which `answer`, a dict keyed by tool name as MTU writes it, cannot hold)
    gold: list[Call] | None = None


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


def _shared_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def dialog_keys(ids: Sequence[str], questions: Sequence[str] | None = None) -> list[str]:
    """One key per real dialog, whatever order the rows come in. Rows are grouped by id prefix
    (M-M_19_2 -> M-M_19). A prefix that repeats no turn number is one dialog. One that repeats
    turn numbers holds several dialogs (M-M_19 holds two; OOD_0 twenty-one one-turn dialogs):
    going up the turn numbers, the rows with a turn number join the dialogs that lack it,
    matched so that a row's dialog text (history and request, from `questions`) shares the
    longest opening with the dialog's latest turn (ties: file order); rows left over start new
    dialogs. The first dialog of a prefix is keyed by the prefix, the k-th by 'prefix~k'."""
    parsed = [dialog_turn(i) for i in ids]
    # the transcript without the history marker, so a first turn (which may lack it) compares too
    texts = (
        [dialog_text(q).replace(HISTORY_MARKER, "", 1).lstrip() for q in questions]
        if questions is not None
        else [""] * len(ids)
    )
    keys = [prefix for prefix, _ in parsed]
    by_prefix: dict[str, list[int]] = {}
    for n, (prefix, _) in enumerate(parsed):
        by_prefix.setdefault(prefix, []).append(n)
    for prefix, members in by_prefix.items():
        turns = sorted({parsed[n][1] for n in members})
        if len(turns) == len(members):
            continue
        dialogs: list[dict[int, int]] = []  # turn -> row, per dialog in the order they start
        for turn in turns:
            level = [n for n in members if parsed[n][1] == turn]
            free = [d for d, dialog in enumerate(dialogs) if turn not in dialog]
            k = len(level) + 1  # the file-order bonuses sum below k
            weights = [
                [
                    k * (1 + _shared_prefix(texts[n], texts[dialogs[d][max(dialogs[d])]])) + int(a == b)
                    for b, d in enumerate(free)
                ]
                for a, n in enumerate(level)
            ]
            for n, got in zip(level, best_assignment(weights), strict=True):
                if got is None:
                    dialogs.append({turn: n})
                else:
                    dialogs[free[got]][turn] = n
        for number, dialog in enumerate(dialogs, 1):
            for n in dialog.values():
                keys[n] = prefix if number == 1 else f"{prefix}~{number}"
    return keys


def _single_flags(item: Item, mode: Mode) -> tuple[float, float]:
    target = next(iter(item.answer), "")
    if mode == "compat":
        # a trace's parsed calls as MTU's dict (teacher-forced steps), else MTU's parse of the reply
        pred = item.compat_pred
        action, params = (
            next(iter(pred.items()), ("", {})) if pred is not None else compat_parse_single(item.response)
        )
        tool_ok = action == target
        gold = item.answer.get(target, {}) if item.answer else {}
        param_ok = tool_ok and compat_compare(compat_lower(gold), compat_lower(params))
        return float(tool_ok), float(param_ok)
    if item.format_error or item.missing:
        return 0.0, 0.0  # an unreadable or absent reply is a failed turn, not a deliberate "no call"
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
    if item.format_error or item.missing:
        return 0.0, 0.0
    calls = item.calls if item.calls is not None else parse_fixed(item.response)[0]
    return fixed_multi_scores(item.gold if item.gold is not None else gold_calls(item.answer), calls)


def error_split(
    rows: Sequence[Item], per_task: Mapping[str, Mapping[str, float]], tool: str, params: str
) -> dict[str, int]:
    """MTU's error analysis: each failed turn is a format error (a reply that cannot be read), an
    action error (the wrong tools, or a call where none was due) or a parameter error (the right
    tools with wrong arguments)."""
    out = {"action": 0, "parameter": 0, "format": 0}
    for it in rows:
        flags = per_task[it.key]
        if it.format_error:
            out["format"] += 1
        elif flags[tool] < 1:
            out["action"] += 1
        elif flags[params] < 1:
            out["parameter"] += 1
    return out


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
    """ATS, SATS, SR, TPR over dialogs given as {dialog: {turn number: turn flag}}: each
    dialog's turns are read in turn-number order, whatever order they were scored in."""
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
    """Scores MTU items; metric names carry the split ("M-M/TN") unless the items are all of one
    split. Each split gets the metrics MTU's score() returns for it: TS, PS (+AVG for S-S);
    TN, TO (+AVG for S-M); TS, PS and the dialog metrics for M-S; TN, TO and the dialog metrics
    for M-M. OOD (fixed mode only: MTU's score() has no OOD split) gets M-M's set."""
    mode = check_mode(mode)
    by_split: dict[str, list[Item]] = {}
    for item in items:
        by_split.setdefault(item.split, []).append(item)
    if mode == "compat":
        foreign = sorted(s for s in by_split if s not in COMPAT_SPLITS and s not in (EPISODE, STEP))
        if foreign:
            raise EvaluationError(
                f"compat mode: MTU's scorer has no {', '.join(foreign)} split; score it in fixed mode"
            )
    metrics: dict[str, float] = {}
    per_task: dict[str, dict[str, float]] = {}
    counts: dict[str, int] = {}
    notes: list[str] = []
    for split, rows in by_split.items():
        split_metrics: dict[str, float] = {}
        flags: dict[str, dict[int, float]] = {}
        single = split in SINGLE_CALL_SPLITS
        first, second = ("TS", "PS") if single else ("TN", "TO")
        values: tuple[list[float], list[float]] = ([], [])
        # in row order: compat keys dialogs by id prefix, and a later row overwrites a turn (as MTU)
        for it in rows:
            a, b = _single_flags(it, mode) if single else _multi_flags(it, mode)
            values[0].append(a)
            values[1].append(b)
            per_task[it.key] = {first: a, second: b}
            if split == EPISODE:
                per_task[it.key]["success"] = float(a == 1 and b == 1)
            if split in MULTI_TURN_SPLITS:
                # M-S: the turn's PS flag (reset every turn); M-M and OOD: TN == TO == 1
                ok = b if single else float(a == 1 and b == 1)
                flags.setdefault(it.dialog if mode == "compat" else it.dialog_fixed, {})[it.turn] = ok
        split_metrics[first] = 100 * mean(values[0])
        split_metrics[second] = 100 * mean(values[1])
        if split in AVERAGED_SPLITS:
            # MTU's "average_score": the script averages the two rounded percentages and
            # multiplies by 100 a second time (7307.50 for GPT-4 on S-S); fixed: the plain mean
            if mode == "compat":
                split_metrics["AVG"] = (
                    (round(split_metrics[first], 2) + round(split_metrics[second], 2)) / 2 * 100
                )
            else:
                split_metrics["AVG"] = (split_metrics[first] + split_metrics[second]) / 2
        if split == EPISODE:
            split_metrics["SR"] = 100 * mean([per_task[it.key]["success"] for it in rows])
        if split in MULTI_TURN_SPLITS:
            split_metrics.update(dialog_metrics(flags))
            counts[f"{split}/dialogs"] = len(flags)
            counts[f"{split}/dialog_turns"] = sum(len(t) for t in flags.values())
        counts[f"{split}/items"] = len(rows)
        counts[f"{split}/no_call_gold"] = sum(1 for it in rows if not gold_calls(it.answer))
        for kind, n in error_split(rows, per_task, first, second).items():
            counts[f"{split}/errors/{kind}"] = n
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


def read_rows(path: Path | str, what: str = "row") -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) per line of an MTU JSONL file; a bad file is an EvaluationError
    naming the file and line."""
    try:
        return read_jsonl_lines(path, what)
    except JSONLError as exc:
        raise EvaluationError(str(exc)) from None


def read_id_rows(path: Path | str, what: str) -> list[tuple[int, dict[str, Any]]]:
    """`read_rows`, and every row must have a string 'id'."""
    rows = read_rows(path, what)
    for lineno, row in rows:
        if not isinstance(row.get("id"), str):
            raise EvaluationError(f"{path}:{lineno}: {what} needs a string 'id'")
    return rows


def items_from_rows(
    rows: Sequence[Mapping[str, Any]], responses: Sequence[str | None], keys: Sequence[str] | None = None
) -> list[Item]:
    ids = [str(r["id"]) for r in rows]
    questions = [q if isinstance(q := r.get("question"), str) else "" for r in rows]
    fixed_dialogs = dialog_keys(ids, questions) if any(split_of(i) in MULTI_TURN_SPLITS for i in ids) else ids
    items = []
    for n, (row, response) in enumerate(zip(rows, responses, strict=True)):
        item_id = ids[n]
        split = split_of(item_id)
        answer = decode_answer(row.get("answer"), f"MTU row {item_id!r}")
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
                missing=response is None,
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
    `{id, response}` rows), e.g. S-S_eval.jsonl with S-S_gpt4_response.jsonl. Responses are
    paired with rows by `pair_responses`; counts and notes report every unpaired row and
    response (`unpaired_count` sums them)."""
    mode = check_mode(mode)
    rows = [r for _, r in read_id_rows(eval_jsonl, "eval row")]
    lined = read_id_rows(response_jsonl, "response row")
    responses = [r for _, r in lined]
    pairing = pair_responses(rows, responses)
    joined = [None if j is None else response_text(responses[j]) for j in pairing.response_of]
    ids = [str(r["id"]) for r in rows]
    items = items_from_rows(rows, joined, unique_keys(ids))
    result = score_items(items, mode)
    moved = []
    for i in pairing.by_content:
        j = pairing.response_of[i]
        if j is not None and responses[j]["id"] != ids[i]:
            moved.append(describe_move(responses[j]["id"], lined[j][0], ids[i], i))
    counts, notes = pairing_report(
        [describe_row(ids[i], i) for i in pairing.missing],
        [describe_response(responses[j]["id"], lined[j][0]) for j in pairing.unused],
        len(pairing.by_content),
        moved,
    )
    result.counts.update(counts)
    result.notes.extend(notes)
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
    """A whole episode as one multi-call item: all its calls against the golden chain's calls.
    Fixed mode compares the two call lists, repeats included; compat keeps MTU's dict keyed by
    tool name (a repeated tool keeps its first arguments), as MTU's scorer reads an answer."""
    gold = actions_to_calls(g.action for g in task.golden)
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
        gold=gold,
    )


def _step_items(trace: Trace, task: Task) -> list[Item]:
    """A teacher-forced trace as MTU scores a dialog turn by turn: golden step i (its call, or no
    call for an answer or a question) against trace step i, the prediction given the golden
    history. A golden step the trace has no prediction for is a missing (failed) turn."""
    items = []
    for i, golden in enumerate(task.golden):
        step = trace.steps[i] if i < len(trace.steps) else None
        gold = actions_to_calls([golden.action])
        calls = actions_to_calls(ACTION_ADAPTER.validate_python(a) for a in step.actions) if step else []
        compat_pred: dict[str, dict[str, Any]] = {}
        for c in calls:
            compat_pred.setdefault(c.name, c.arguments)
        items.append(
            Item(
                id=f"{task.id}#{i}",
                split=STEP,
                answer={c.name: dict(c.arguments) for c in gold},
                response=raw_text(step) if step is not None else "",
                dialog=task.id,
                dialog_fixed=task.id,
                turn=i,
                key=f"{task.id}#{i}",
                calls=calls,
                format_error=step is not None and "format_error" in step.error_kinds,
                missing=step is None,
                compat_pred=compat_pred,
                gold=gold,
            )
        )
    return items


def _fold_steps(result: SuiteResult, items: Sequence[Item]) -> None:
    """Per-step scores of teacher-forced traces folded into one entry per task: the mean of its
    turns' TS and PS, and `success` (every turn right)."""
    by_task: dict[str, list[dict[str, float]]] = {}
    for it in items:
        by_task.setdefault(it.dialog, []).append(result.per_task.pop(it.key))
    for task_id, turns in by_task.items():
        result.per_task[task_id] = {
            "TS": mean([t["TS"] for t in turns]),
            "PS": mean([t["PS"] for t in turns]),
            "success": float(all(t["TS"] == 1 and t["PS"] == 1 for t in turns)),
        }


# trace header key (env_config) where replayed MTU responses record how their row was paired
PAIRING_KEY = "mtu_pairing"


class MTUSuite:
    """Scores traces of MTU rows (one teacher-forced turn per trace; tasks from
    toolgym.evaluation.loaders.mtu carry the row in `metadata["mtu"]`). Traces of other tasks
    are scored as whole episodes (split "episode": TN, TO and SR of all their calls against the
    golden chain), or, teacher-forced (`toolgym run --mode step`), turn by turn (split "step": TS
    and PS of each golden step's prediction, and the dialog metrics); traces whose task is not in the task set are skipped and counted. Traces of
    replayed response files (loaders.mtu.run_mtu_episodes) say how their row was paired; the
    result reports unpaired rows and responses as `score_mtu_files` does."""

    name = "mtu"

    def score(self, traces: Sequence[Trace], tasks: TaskSet | None, mode: Mode) -> SuiteResult:
        mode = check_mode(mode)
        if tasks is None:
            raise EvaluationError("the mtu suite needs the task set the traces were run on")
        rows: list[tuple[int, str, dict[str, Any], Trace]] = []
        episodes: list[Item] = []
        steps: list[Item] = []
        skipped = 0
        for trace in traces:
            if trace.header.task_id not in tasks:
                skipped += 1
                continue
            task = tasks[trace.header.task_id]
            meta = task.metadata.get("mtu")
            if isinstance(meta, dict) and "id" in meta and "answer" in meta:
                rows.append((int(meta.get("row", 0)), task.id, meta, trace))
            elif is_teacher_forced(trace):
                steps.extend(_step_items(trace, task))
            else:
                episodes.append(_episode_item(trace, task))
        if not rows and not episodes and not steps:
            raise EvaluationError(f"none of the {len(traces)} traces belongs to a task of the task set")
        rows.sort(key=lambda e: e[0])  # the benchmark's row order: later rows overwrite (compat)
        items = []
        missing: list[str] = []
        unused: dict[str, None] = {}
        moved: list[str] = []
        by_content = 0
        replayed = False
        for index, task_id, meta, trace in rows:
            item_id = str(meta["id"])
            split = split_of(item_id)
            dialog, turn = dialog_turn(item_id) if split in MULTI_TURN_SPLITS else (item_id, 0)
            calls, bad = _trace_calls(trace)
            pairing = trace.header.env_config.get(PAIRING_KEY)
            how = pairing.get("how") if isinstance(pairing, dict) else None
            items.append(
                Item(
                    id=item_id,
                    split=split,
                    answer=decode_answer(meta["answer"], f"MTU row {item_id!r}"),
                    response=raw_text(trace.steps[0]) if trace.steps else "",
                    dialog=dialog,
                    dialog_fixed=str(meta.get("dialog", dialog)),
                    turn=turn,
                    key=task_id,
                    calls=calls,
                    format_error=bad and how != "missing",  # the replay's empty reply is no format error
                    missing=how == "missing",
                )
            )
            if isinstance(pairing, dict):
                replayed = True
                if how == "missing":
                    missing.append(describe_row(item_id, index))
                elif how == "content":
                    by_content += 1
                    if isinstance(pairing.get("moved"), str):
                        moved.append(pairing["moved"])
                unused.update(dict.fromkeys(str(u) for u in pairing.get("unused", [])))
        result = score_items([*items, *episodes, *steps], mode, self.name)
        _fold_steps(result, steps)
        if replayed:
            counts, notes = pairing_report(missing, list(unused), by_content, moved)
            result.counts.update(counts)
            result.notes.extend(notes)
        if skipped:
            result.counts["skipped_unknown_task"] = skipped
            result.notes.append(f"{skipped} traces skipped: their task is not in the task set")
        return result
