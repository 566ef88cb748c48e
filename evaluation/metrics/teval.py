"""T-Eval (v2): instruct, plan, reason, retrieve, understand and review, from traces.

Two kinds of traces are scored:

- traces of T-Eval items (tasks from toolgym.evaluation.loaders.teval, `metadata["teval"]` holds
  the item): the trace's first raw output is the model's response to the item's prompt and is
  scored exactly as T-Eval's evaluators do (open-compass/T-Eval `teval/evaluators/*`);
- traces of other tasks with golden chains: teacher-forced traces give instruct, retrieve,
  understand and reason step by step against the golden steps; end-to-end traces give plan (the
  episode's calls against the golden chain).

`compat` keeps T-Eval's behaviour, quirks included; `fixed` corrects them (docs/evaluation.md).
Similarity (plan, reason) uses the configured sentence embedder (all-MiniLM-L6-v2 by default;
T-Eval uses all-mpnet-base-v2 for English and gte-large-zh for Chinese). Those two dimensions
(EMBEDDING_DIMENSIONS) need the `ml` extra; without it the suite scores the other four and a note
names the two it left out and what installs them.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import re
import string
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from toolgym.evaluation.base import (
    EvaluationError,
    Mode,
    SuiteResult,
    check_mode,
    is_teacher_forced,
    mean,
    raw_text,
)
from toolgym.evaluation.metrics.similarity import (
    INSTALL_HINT,
    Embedder,
    EmbedderUser,
    ModelUnavailableError,
    cosine_blocks,
    pair_similarities,
)
from toolgym.tasks import Task, TaskSet
from toolgym.trace import Trace

DIMENSIONS = ("instruct", "plan", "reason", "retrieve", "understand", "review")
# T-Eval's PlanningEvaluator defaults; the paper writes 0.7 for the match threshold, the code 0.8
NAME_WEIGHT, ARGS_WEIGHT, MATCH_THRESHOLD = 0.75, 0.25, 0.8
EMBEDDING_DIMENSIONS = ("plan", "reason")  # scored by sentence similarity: they need the ml extra
FINISH = "FinishAction"
# instruct items name their response format "json" or "string" (the label T-Eval's evaluator reads;
# its metric keys are string_format_metric ...); "str" is accepted too. Our metric names say "str".
INSTRUCT_FORMATS = {"json": "json", "string": "str", "str": "str"}
# T-Eval rounds these subset means to 4 decimals (np.round) before convert_results combines them;
# plan and reason/retrieve/understand means are not rounded.
ROUNDED_IN_TEVAL = frozenset(
    {
        "instruct/json_format",
        "instruct/json_args_em",
        "instruct/str_format",
        "instruct/str_args_em",
        "review/json",
        "review/str",
    }
)
TEVAL_DECIMALS = 4

# ================================================================================================
# T-Eval's parsing helpers
# ================================================================================================


def format_load(raw: Any, start: str = "", end: str = "") -> Any:
    """T-Eval's `format_load`: cut a ```json fence, slice from the first `start` to the last
    `end`, then try a Python literal, JSON, and JSON with single quotes made double. Parsing is
    data only (ast.literal_eval), never evaluation. Raises ValueError when nothing parses."""
    if not isinstance(raw, str):
        return raw
    if "```json" in raw:
        raw = raw[raw.find("```json") + len("```json") :].strip("`")
    if start:
        raw = raw[raw.find(start) :]
    if end:
        raw = raw[: raw.rfind(end) + len(end)]
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    for candidate in (raw, raw.replace("'", '"')):
        try:
            return json.loads(candidate)
        except (ValueError, RecursionError):  # T-Eval catches every exception here
            continue
    raise ValueError("cannot parse raw data")


def parse_string(template: str, text: str, *, escape: bool = False) -> dict[str, Any] | None:
    """T-Eval's `parse_string`: each `{field}` of the template becomes `(.*)`. compat does it as
    T-Eval does: the fields named by string.Formatter are replaced in the raw template, whose text
    is then a regex as it is (`{{` stays two braces, a field with a format spec stays), and with a
    single field the first match is zipped character by character. fixed: the literal text is
    escaped and every field is a group."""
    keys: list[str] = []
    pattern = ""
    try:
        for literal, name, _, _ in string.Formatter().parse(template):
            pattern += re.escape(literal)
            if name is not None:
                keys.append(name)
                pattern += "(.*)"
    except ValueError:
        return None  # an unbalanced brace in the template: T-Eval raises here too
    if not escape:
        pattern = template
        for key in keys:
            pattern = pattern.replace("{" + key + "}", "(.*)")
    try:
        found = re.findall(pattern, text, re.S)
    except re.error:
        return None  # T-Eval raises here (a template that is not a valid regex)
    if not found:
        return None
    values = found[0] if isinstance(found[0], tuple) or not escape else (found[0],)
    data: dict[str, Any] = {}
    for key, value in zip(keys, values, strict=False):
        if key in data:
            data[key] = [*data[key], value] if isinstance(data[key], list) else [data[key], value]
        else:
            data[key] = value
    return data


# ================================================================================================
# typed comparison (fixed)
# ================================================================================================


def _typed(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = unicodedata.normalize("NFKC", value).strip()
        try:
            return float(text)
        except ValueError:
            return text
    if isinstance(value, list):
        return [_typed(v) for v in value]
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    return value


def typed_equal(a: Any, b: Any) -> bool:
    """Values equal as data: numbers numerically ("5" == 5 == 5.0), text after NFKC and
    trimming, containers element by element."""
    return bool(_typed(a) == _typed(b))


def args_score(gold: Mapping[str, Any], pred: Mapping[str, Any], mode: Mode) -> float:
    """T-Eval v2 "understand": the share of gold arguments the prediction has with the same
    value. compat: compared as str(), divided by |gold| + 1e-5, extra arguments free; fixed:
    typed values, divided by |gold ∪ predicted| (extra arguments cost)."""
    if mode == "compat":
        if not gold:
            return 1.0 if not pred else 0.0
        hits = sum(1 for k, v in gold.items() if k in pred and str(pred[k]) == str(v))
        return hits / (len(gold) + 1e-5)
    keys = set(gold) | set(pred)
    if not keys:
        return 1.0
    return sum(1 for k in gold if k in pred and typed_equal(gold[k], pred[k])) / len(keys)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


# ================================================================================================
# the six dimensions on T-Eval items
# ================================================================================================


@dataclass
class Item:
    """One T-Eval datum and the model's response to it."""

    key: str
    subset: str  # instruct_v2, plan_json_v2, reason_str_v2, ... (the file's stem)
    dimension: str  # instruct | plan | rru | reason | retrieve | understand | review
    prompt_type: str  # json | str
    ground_truth: Any
    prediction: str
    meta: dict[str, Any] = field(default_factory=dict)
    template: Any = None


def subset_dimension(subset: str) -> tuple[str, str]:
    """(dimension, prompt type) of a T-Eval file stem, e.g. plan_str_v2 -> (plan, str)."""
    name = subset.lower()
    prompt_type = "str" if "_str" in name else "json"
    for dim in (
        "reason_retrieve_understand",
        "instruct",
        "plan",
        "review",
        "reason",
        "retrieve",
        "understand",
    ):
        if name.startswith(dim):
            return ("rru" if dim == "reason_retrieve_understand" else dim), prompt_type
    raise EvaluationError(f"T-Eval subset {subset!r}: unknown dimension (expected instruct_, plan_, ...)")


def instruct_format(item: Item) -> str:
    """The item's response format as our metric label: "json" or "str" ("string" in T-Eval's data)."""
    label = item.meta.get("response_format", "json")
    if not isinstance(label, str) or label not in INSTRUCT_FORMATS:
        # T-Eval parses such an item as a string and then leaves it out of every mean
        raise EvaluationError(
            f"T-Eval {item.subset} item {item.key}: response_format {label!r} is not one of "
            f"{', '.join(sorted(INSTRUCT_FORMATS))}"
        )
    return INSTRUCT_FORMATS[label]


def score_instruct(item: Item, mode: Mode) -> dict[str, float]:
    response_format = instruct_format(item)
    template = item.template if isinstance(item.template, dict) else {}
    gt = _dict(item.ground_truth)
    pred: dict[str, Any] | None
    if response_format == "json":
        try:
            data = format_load(item.prediction)
            pred = {
                "action": data[template["action"]],
                "args": _dict(data[template["args"]]),
                "thought": data[template["thought"]],
            }
        except (ValueError, KeyError, TypeError, IndexError):
            pred = None
    else:
        parts = [template.get(k, "") for k in ("thought_start", "thought_end", "action_start", "action_end")]
        pattern = (
            f"{parts[0]}{{thought}}{parts[1]}{parts[2]}{{action}}{parts[3]}"
            f"{template.get('args_start', '')}{{args}}{template.get('args_end', '')}"
        )
        res = parse_string(pattern, item.prediction, escape=mode == "fixed")
        pred = None
        if res is not None:
            try:
                args = ast.literal_eval(str(res["args"]).strip())
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                args = {}
            pred = {"action": str(res["action"]).strip(), "args": _dict(args), "thought": res.get("thought")}
    if pred is None:
        return {f"{response_format}_format": 0.0, f"{response_format}_args_em": 0.0}
    gold_args = _dict(gt.get("args"))
    if mode == "compat":
        hits = float(gt.get("action") == pred["action"])
        hits += sum(1 for k, v in gold_args.items() if pred["args"].get(k, "") == v)
        em = hits / (len(gold_args) + 1)
    else:
        keys = set(gold_args) | set(pred["args"])
        hits = float(gt.get("action") == pred["action"])
        hits += sum(1 for k in gold_args if k in pred["args"] and typed_equal(gold_args[k], pred["args"][k]))
        em = hits / (len(keys) + 1)
    return {f"{response_format}_format": 1.0, f"{response_format}_args_em": em}


def _plan_list(raw: Any) -> list[dict[str, Any]]:
    try:
        data = format_load(raw, "[", "]")
    except ValueError:
        return []
    if not isinstance(data, list):
        return []
    out = []
    for entry in data:
        try:
            out.append({"name": str(entry["name"]), "id": int(entry["id"]), "args": str(entry["args"])})
        except (KeyError, TypeError, ValueError):
            return []
    return out


def _str_plan(text: str, api_names: Sequence[str]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for line in text.replace(". ", "\n").split("\n"):
        first, chosen = None, ""
        for name in api_names:
            at = line.find(name)
            if at != -1 and (first is None or at < first):
                first, chosen = at, name
        if chosen:
            steps.append({"id": len(steps), "name": chosen, "args": line})
    return steps


def _max_weight_matching(weights: Any, threshold: float) -> dict[int, int]:
    """pred index -> gold index of a maximum-weight matching over the pairs above threshold
    (networkx.max_weight_matching, as T-Eval uses)."""
    try:
        nx: Any = importlib.import_module("networkx")
    except ImportError:
        raise ModelUnavailableError(f"plan matching needs networkx: {INSTALL_HINT}") from None
    graph = nx.Graph()
    rows, cols = weights.shape
    for i in range(rows):
        for j in range(cols):
            if weights[i][j] > threshold:
                graph.add_edge(i, str(j), weight=float(weights[i][j]))
    mapping: dict[int, int] = {}
    for a, b in nx.max_weight_matching(graph):
        if isinstance(a, int):
            mapping[a] = int(b)
        else:
            mapping[int(b)] = int(a)
    return mapping


def plan_scores(
    pred: Sequence[Mapping[str, Any]],
    gold: Sequence[Mapping[str, Any]],
    embedder: Embedder,
    mode: Mode,
    threshold: float = MATCH_THRESHOLD,
) -> dict[str, float]:
    """T-Eval's bertscore_match: name/args similarity (0.75/0.25), max-weight matching of the
    pairs above `threshold` (0.8 in T-Eval's code, 0.7 in its paper), then the longest increasing run of matched gold positions in predicted
    order. compat starts every predicted step at length 1, so a plan with no match at all still
    counts one correct step; fixed counts matched steps only."""
    zero = {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    if mode == "compat" and (not pred or not gold):
        return zero
    p = sorted(pred, key=lambda x: int(x.get("id", 0)))
    g = sorted(gold, key=lambda x: int(x.get("id", 0)))
    if p and p[-1]["name"] == FINISH:
        p = p[:-1]
    if g and g[-1]["name"] == FINISH:
        g = g[:-1]
    if not p or not g:
        if mode == "fixed" and not p and not g:
            # both plans call no tool (a str plan with no line, or only FinishAction)
            return {"precision": 1.0, "recall": 1.0, "f1": 1.0}
        return zero  # T-Eval crashes here (max() of an empty list)
    names, args = cosine_blocks(
        embedder,
        [
            ([str(x["name"]) for x in p], [str(x["name"]) for x in g]),
            ([str(x["args"]) for x in p], [str(x["args"]) for x in g]),
        ],
    )
    weights = names * NAME_WEIGHT + args * ARGS_WEIGHT
    mapping = _max_weight_matching(weights, threshold)
    matched = [mapping.get(i, -1) for i in range(len(p))]
    start = 1 if mode == "compat" else 0
    dp = [start if (mode == "compat" or matched[i] != -1) else 0 for i in range(len(p))]
    for i in range(len(p)):
        if matched[i] == -1:
            continue
        dp[i] = max(dp[i], 1)
        for j in range(i):
            if matched[j] != -1 and matched[i] > matched[j]:
                dp[i] = max(dp[i], dp[j] + 1)
    correct = max(dp)
    recall, precision = correct / len(g), correct / len(p)
    f1 = 2 * recall * precision / (recall + precision) if recall + precision else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def _rru_fields(raw: Any, prompt_type: str) -> dict[str, Any]:
    """T-Eval's ReasonRetrieveUnderstand format_load: {} when nothing parses."""
    try:
        data = format_load(raw, "{", "}")
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    out: dict[str, Any] = {
        "thought": str(data["thought"]) if "thought" in data else "",
        "name": str(data["name"]) if "name" in data else "",
    }
    if prompt_type == "json":
        out["args"] = data["args"] if isinstance(data.get("args"), dict) else {}
    else:
        out["args"] = str(data["args"]) if "args" in data else ""
    return out


_DOTTED = re.compile(r"\w+\.\w+")
# fixed: an API name is Tool.api with identifiers of two or more characters ("e.g", "3.5" are not)
_API_NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w+\.[A-Za-z_]\w+(?![\w])")


def retrieve_str_score(pred_text: str, gold_name: str, mode: Mode) -> float:
    if mode == "compat":
        if gold_name not in pred_text:
            return 0.0
        named = _DOTTED.findall(pred_text) + re.findall(FINISH, pred_text)
        return 0.0 if any(n != gold_name for n in named) else 1.0
    # fixed: the gold name as a whole identifier (not inside a longer one), no other API named
    if not gold_name or not re.search(rf"(?<![\w.]){re.escape(gold_name)}(?![\w])", pred_text):
        return 0.0
    named = _API_NAME.findall(pred_text) + re.findall(rf"\b{FINISH}\b", pred_text)
    return 0.0 if any(n != gold_name for n in named) else 1.0


def understand_str_score(pred_text: str, gold_args: Any, mode: Mode) -> float:
    if mode == "compat":
        return float(str(gold_args) == pred_text.strip("'").strip('"'))
    try:
        gold = format_load(gold_args, "{", "}") if isinstance(gold_args, str) else gold_args
        pred = format_load(pred_text, "{", "}")
    except ValueError:
        return float(str(gold_args).strip() == pred_text.strip().strip("'").strip('"'))
    if isinstance(gold, dict) and isinstance(pred, dict):
        return args_score(gold, pred, "fixed")
    return float(typed_equal(gold, pred))


_OPTION = re.compile(r"(?:^|[\s:(\[（【])([A-E])(?=$|[\s).\]:,，。）】])")


def review_json_choice(prediction: str, mode: Mode) -> Any:
    """The parsed `is_finished` of a json review, None when it does not parse. compat keeps
    T-Eval's shape: `{"review": value}` with any value `in [True, False]` (1 and 0.0 pass), which
    never equals the gold answer, so T-Eval scores every json review 0; fixed: the bool itself."""
    try:
        data = format_load(prediction)
    except ValueError:
        return None
    if not isinstance(data, dict) or "is_finished" not in data:
        return None
    finished = data["is_finished"]
    if mode == "compat":
        return {"review": finished} if finished in [True, False] else None
    return finished if isinstance(finished, bool) else None


def review_choice(prediction: str, mode: Mode) -> str | None:
    if mode == "compat":
        text = prediction[prediction.find(":") + 1 :].strip()
        return text[0] if text and text[0] in "ABCDE" else None
    text = unicodedata.normalize("NFKC", prediction).strip()
    match = _OPTION.search(text)
    return match.group(1) if match else None


# ================================================================================================
# the suite
# ================================================================================================


@dataclass
class _Scores:
    values: dict[str, list[float]] = field(default_factory=dict)

    def add(self, metric: str, value: float) -> None:
        self.values.setdefault(metric, []).append(value)


@dataclass
class SimilarityCheck:
    """Whether this scoring pass can embed: checked once, on the first item that needs it."""

    unavailable: str | None = None  # why not (the install hint), once checked
    checked: bool = False
    skipped: set[str] = field(default_factory=set)  # dimensions left unscored for it


def _review_item(item: Item, mode: Mode) -> dict[str, float]:
    """A review's choice against the gold class (JSON: is_finished; str: the option letter)."""
    gt = item.ground_truth.get("answer") if isinstance(item.ground_truth, dict) else item.ground_truth
    if item.prompt_type == "json":
        choice: Any = review_json_choice(item.prediction, mode)
    else:
        choice = review_choice(item.prediction, mode)
    return {"review": float(choice is not None and choice == gt), "review_parsed": float(choice is not None)}


class TEvalSuite(EmbedderUser):
    """`plan_threshold`: the similarity a predicted and a gold plan step need to match (T-Eval's
    code: 0.8, its paper: 0.7)."""

    name = "teval"

    def __init__(self, embedder: Embedder | None = None, *, plan_threshold: float = MATCH_THRESHOLD) -> None:
        super().__init__(embedder)
        self.plan_threshold = plan_threshold

    def _can_embed(self, similarity: SimilarityCheck, dimension: str) -> bool:
        """Whether `dimension` (plan or reason) can be scored here; records it as skipped if not."""
        if not similarity.checked:
            similarity.checked = True
            try:
                _ = self.embedder
                if importlib.util.find_spec("networkx") is None:
                    raise ModelUnavailableError(f"plan matching needs networkx: {INSTALL_HINT}")
            except ModelUnavailableError as exc:
                similarity.unavailable = str(exc)
        if similarity.unavailable is not None:
            similarity.skipped.add(dimension)
            return False
        return True

    @staticmethod
    def similarity_notes(similarity: SimilarityCheck) -> list[str]:
        if not similarity.skipped:
            return []
        left_out = ", ".join(d for d in EMBEDDING_DIMENSIONS if d in similarity.skipped)
        return [
            f"{left_out} not scored: {', '.join(EMBEDDING_DIMENSIONS)} need sentence embeddings "
            f"({similarity.unavailable})"
        ]

    # ---- T-Eval items ----
    def score_items(
        self, items: Sequence[Item], mode: Mode, similarity: SimilarityCheck | None = None
    ) -> tuple[_Scores, dict[str, dict[str, float]]]:
        """Scores and per-item figures; plan and reason items are left out when nothing can embed
        (`similarity` then lists them: see `similarity_notes`)."""
        mode = check_mode(mode)
        similarity = similarity if similarity is not None else SimilarityCheck()
        scores = _Scores()
        per_task: dict[str, dict[str, float]] = {}
        thoughts: list[tuple[str, str, str]] = []  # (key, prediction thought, gold thought)
        for item in items:
            got: dict[str, float] = {}
            if item.dimension == "instruct":
                got = score_instruct(item, mode)
                for k, v in got.items():
                    scores.add(f"instruct/{k}", v)
            elif item.dimension == "plan":
                got = self._plan_item(item, mode, similarity, scores)
            elif item.dimension == "review":
                got = _review_item(item, mode)
                scores.add(f"review/{item.prompt_type}", got["review"])
            else:  # rru (json) or reason / retrieve / understand (str)
                got = self._rru_item(item, mode, similarity, thoughts)
                for k in ("retrieve", "understand"):
                    if k in got:
                        scores.add(f"{k}/{item.prompt_type}", got[k])
                if "reason" in got:
                    scores.add(f"reason/{item.prompt_type}", got["reason"])
            per_task[item.key] = got
        if thoughts:
            # the thoughts are embedded together, then each is scored where it was left out
            sims = pair_similarities(self.embedder, [t[1] for t in thoughts], [t[2] for t in thoughts])
            by_key = {i.key: i for i in items}
            for (key, _, _), sim in zip(thoughts, sims, strict=True):
                per_task[key]["reason"] = sim
                scores.add(f"reason/{by_key[key].prompt_type}", sim)
        return scores, per_task

    def _plan_item(
        self, item: Item, mode: Mode, similarity: SimilarityCheck, scores: _Scores
    ) -> dict[str, float]:
        """A plan's F1 against the gold plan (nothing when nothing can embed)."""
        gold = _plan_list(item.ground_truth)
        if item.prompt_type == "str":
            api_names = [str(n) for n in item.meta.get("API_list", [])]
            pred = _str_plan(item.prediction, api_names)
        else:
            pred = _plan_list(item.prediction)
        if not self._can_embed(similarity, "plan"):
            return {}
        result = plan_scores(pred, gold, self.embedder, mode, self.plan_threshold)
        scores.add(f"plan/{item.prompt_type}", result["f1"])
        return {"plan": result["f1"], "plan_parsed": float(bool(pred and gold))}

    def _rru_item(
        self,
        item: Item,
        mode: Mode,
        similarity: SimilarityCheck,
        thoughts: list[tuple[str, str, str]],
    ) -> dict[str, float]:
        """An rru item (JSON: reason, retrieve and understand) or a str one (one of them). A
        thought to compare goes to `thoughts`, embedded with the others once all are read."""
        got: dict[str, float] = {}
        gold_fields = _rru_fields(item.ground_truth, item.prompt_type)
        if item.prompt_type == "json":
            pred_fields = _rru_fields(item.prediction, "json")
            if not pred_fields or not gold_fields:
                pred_fields = {}
            wanted: tuple[str, ...] = ("reason", "retrieve", "understand")
        else:
            field = {"reason": "thought", "retrieve": "name", "understand": "args"}[item.dimension]
            pred_fields = {field: item.prediction}
            wanted = (item.dimension,)
        if "reason" in wanted and self._can_embed(similarity, "reason"):
            if "thought" in pred_fields and "thought" in gold_fields:
                thoughts.append((item.key, str(pred_fields["thought"]), str(gold_fields["thought"])))
            else:
                got["reason"] = 0.0
        if "retrieve" in wanted:
            if "name" in pred_fields and "name" in gold_fields:
                if item.prompt_type == "json":
                    got["retrieve"] = float(pred_fields["name"] == gold_fields["name"])
                else:
                    got["retrieve"] = retrieve_str_score(
                        str(pred_fields["name"]), str(gold_fields["name"]), mode
                    )
            else:
                got["retrieve"] = 0.0
        if "understand" in wanted:
            if "args" in pred_fields and "args" in gold_fields:
                if isinstance(gold_fields["args"], dict):
                    got["understand"] = args_score(gold_fields["args"], _dict(pred_fields["args"]), mode)
                else:
                    got["understand"] = understand_str_score(
                        str(pred_fields["args"]), gold_fields["args"], mode
                    )
            else:
                got["understand"] = 0.0
        return got

    # ---- generic traces (golden chains) ----
    def _generic(
        self,
        trace: Trace,
        task: Task,
        mode: Mode,
        scores: _Scores,
        per_task: dict[str, dict[str, float]],
        similarity: SimilarityCheck,
    ) -> None:
        from toolgym.canonical import canonical_json

        got: dict[str, float] = {}
        golden = [g.action for g in task.golden]
        if is_teacher_forced(trace):
            fmt, em, retrieve, understand = [], [], [], []
            pairs: list[tuple[str, str]] = []
            for i, gold in enumerate(golden):
                step = trace.steps[i] if i < len(trace.steps) else None
                parsed = step is not None and "format_error" not in step.error_kinds and bool(step.actions)
                fmt.append(float(parsed))
                calls = [a for a in step.actions if a.get("type") == "tool_call"] if step else []
                first = calls[0] if calls else None
                if gold.type != "tool_call":
                    continue
                gold_args = dict(gold.arguments)
                pred_args = _dict(first.get("arguments")) if first else {}
                name_ok = first is not None and first.get("name") == gold.name
                if mode == "fixed":
                    name_ok = name_ok and len(calls) == 1
                retrieve.append(float(name_ok))
                understand.append(args_score(gold_args, pred_args, mode) if first is not None else 0.0)
                if parsed:
                    if mode == "compat":
                        hits = float(name_ok) + sum(
                            1 for k, v in gold_args.items() if pred_args.get(k, "") == v
                        )
                        em.append(hits / (len(gold_args) + 1))
                    else:
                        keys = set(gold_args) | set(pred_args)
                        hits = float(name_ok) + sum(
                            1 for k in gold_args if k in pred_args and typed_equal(gold_args[k], pred_args[k])
                        )
                        em.append(hits / (len(keys) + 1))
                else:
                    em.append(0.0)
                if gold.thought and first is not None and first.get("thought"):
                    pairs.append((str(first["thought"]), gold.thought))
            got["instruct"] = (mean(fmt) + mean(em)) / 2 if em else mean(fmt)
            if retrieve:
                got["retrieve"] = mean(retrieve)
                got["understand"] = mean(understand)
            if pairs and self._can_embed(similarity, "reason"):
                got["reason"] = mean(
                    pair_similarities(self.embedder, [p[0] for p in pairs], [p[1] for p in pairs])
                )
        else:
            gold_plan = [
                {"id": n, "name": g.name, "args": canonical_json(dict(g.arguments))}
                for n, g in enumerate(a for a in golden if a.type == "tool_call")
            ]
            calls = [a for s in trace.steps for a in s.actions if a.get("type") == "tool_call"]
            pred_plan = [
                {"id": n, "name": str(c.get("name")), "args": canonical_json(_dict(c.get("arguments")))}
                for n, c in enumerate(calls)
            ]
            gold_plan.append({"id": len(gold_plan), "name": FINISH, "args": "{}"})
            pred_plan.append({"id": len(pred_plan), "name": FINISH, "args": "{}"})
            if self._can_embed(similarity, "plan"):
                got["plan"] = plan_scores(pred_plan, gold_plan, self.embedder, mode, self.plan_threshold)[
                    "f1"
                ]
        for k, v in got.items():
            scores.add(f"{k}/trace", v)
        per_task.setdefault(task.id, {}).update(got)

    def score(self, traces: Sequence[Trace], tasks: TaskSet | None, mode: Mode) -> SuiteResult:
        from toolgym.evaluation.loaders.teval import item_from_task

        mode = check_mode(mode)
        if tasks is None:
            raise EvaluationError("the teval suite needs the task set the traces were run on")
        items: list[Item] = []
        generic: list[tuple[Trace, Task]] = []
        skipped = 0
        for trace in traces:
            if trace.header.task_id not in tasks:
                skipped += 1
                continue
            task = tasks[trace.header.task_id]
            if "teval" in task.metadata:
                prediction = raw_text(trace.steps[0]) if trace.steps else ""
                items.append(item_from_task(task, prediction))
            elif task.golden:
                generic.append((trace, task))
            else:
                skipped += 1
        if not items and not generic:
            raise EvaluationError(f"none of the {len(traces)} traces belongs to a task with a golden chain")
        similarity = SimilarityCheck()
        scores, per_task = self.score_items(items, mode, similarity)
        for trace, task in generic:
            self._generic(trace, task, mode, scores, per_task, similarity)
        result = aggregate(scores, mode, self.name)
        result.notes.extend(self.similarity_notes(similarity))
        result.per_task = per_task
        result.counts = {"items": len(items), "traces": len(generic)}
        if skipped:
            result.counts["skipped"] = skipped
            result.notes.append(f"{skipped} traces skipped: no task, or a task without golden steps")
        return result


def teval_mean(values: Sequence[float], metric: str, mode: Mode) -> float:
    """A subset mean as T-Eval computes it: numpy's mean (pairwise summation), rounded to 4
    decimals with np.round for the metrics T-Eval rounds (compat only)."""
    value = np.mean(np.asarray(values, dtype=np.float64))
    if mode == "compat" and metric in ROUNDED_IN_TEVAL:
        value = np.round(value, TEVAL_DECIMALS)
    return float(value)


def aggregate(scores: _Scores, mode: Mode, suite: str = "teval") -> SuiteResult:
    """T-Eval's convert_results: each dimension is the mean of its formats (instruct: the mean of
    format and argument-EM per response format); Overall is the mean of the dimensions present.
    Means are taken on the 0-1 scale and multiplied by 100 last, as T-Eval prints them."""
    metrics: dict[str, float] = {}
    notes: list[str] = []
    subset = {key: teval_mean(values, key, mode) for key, values in scores.values.items() if values}
    dims: dict[str, list[float]] = {}
    for fmt in ("json", "str"):
        f, e = subset.get(f"instruct/{fmt}_format"), subset.get(f"instruct/{fmt}_args_em")
        if f is not None and e is not None:
            dims.setdefault("instruct", []).append((f + e) / 2)
    for dim in ("plan", "reason", "retrieve", "understand"):
        for fmt in ("str", "json"):  # convert_results lists the str subset first
            if f"{dim}/{fmt}" in subset:
                dims.setdefault(dim, []).append(subset[f"{dim}/{fmt}"])
    # convert_results reads review_str only (for both of its review entries); fixed averages both
    for fmt in ("str",) if mode == "compat" else ("str", "json"):
        if f"review/{fmt}" in subset:
            dims.setdefault("review", []).append(subset[f"review/{fmt}"])
    if mode == "compat" and "review/json" in subset:
        notes.append("review/json is scored but, as in T-Eval's convert_results, not part of review")
    for dim in DIMENSIONS:
        if f"{dim}/trace" in subset:
            dims.setdefault(dim, []).append(subset[f"{dim}/trace"])
    present = {dim: float(np.mean(dims[dim])) for dim in DIMENSIONS if dim in dims}
    for dim in DIMENSIONS:
        if dim in present:
            metrics[dim] = 100 * present[dim]
        else:
            notes.append(f"{dim}: nothing to score")
    if present:
        metrics["overall"] = 100 * float(np.mean(list(present.values())))
    for key, value in subset.items():
        metrics[key] = 100 * value
    return SuiteResult(suite=suite, mode=mode, metrics=metrics, notes=notes)
