"""GTA: the dataset.json loader and exporter, and the metrics on hand-checked episodes, with the
known quirks of GTA's scorer in compat mode and their corrections in fixed mode."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from tests.evaluation.helpers import Output, run_e2e, run_step
from tests.shared_data import DATA, GTA_TOOLMETA
from toolgym.actions import FinalAnswer, ToolCall
from toolgym.envs.agents import OracleAgent
from toolgym.envs.faults import FaultLayer, FaultPlan, FaultRule
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.errors import InfraError, ToolError
from toolgym.evaluation import EvaluationError, Mode, get_suite
from toolgym.evaluation.base import error_kinds, record_teacher_forced
from toolgym.evaluation.loaders.gta import (
    load_gta_dataset,
    load_toolmeta,
    replay_toolset,
    sample_to_task,
    task_to_gta_sample,
    write_gta_dataset,
)
from toolgym.evaluation.metrics.gta import (
    GTASuite,
    alias_found,
    compat_iscorrect,
    fixed_iscorrect,
    gta_episode_predictions,
    gta_step_predictions,
)
from toolgym.tasks import GoldenStep, Task, TaskFile, TaskSet
from toolgym.tools import SchemaTool, ToolContext, ToolSet
from toolgym.trace import Trace, read_trace

SAMPLE = DATA / "gta" / "dataset_sample.json"
DEMO = Path(__file__).resolve().parents[2] / "fixtures" / "demo" / "tasks.jsonl"


@pytest.fixture(scope="module")
def sample() -> TaskSet:
    return load_gta_dataset(SAMPLE)


# ---- loader ----------------------------------------------------------------------------------------


def test_dataset_loads_into_tasks(sample: TaskSet) -> None:
    assert [t.id for t in sample] == ["gta-0", "gta-1", "gta-2", "gta-3"]
    fish = sample["gta-0"]
    assert fish.tools == ["OCR", "Calculator"]
    assert fish.files == [TaskFile(name="image/fish_oil.png", path="image/fish_oil.png", type="image")]
    first, second, answer = fish.golden
    assert first.action == ToolCall(
        name="OCR", arguments={"image": "image/fish_oil.png"}, thought="Read the label first."
    )
    assert first.expected["content"].endswith("290 SOFTGELS")
    assert second.action.type == "tool_call" and answer.action == FinalAnswer(text="58")
    assert fish.answer is not None and fish.answer.whitelist == [["58"]] and fish.answer.blacklist is None
    assert sample["gta-1"].answer is None  # image generation: no answer
    assert sample["gta-2"].answer is not None and sample["gta-2"].answer.references
    assert sample["gta-3"].answer is not None and sample["gta-3"].answer.blacklist == [["7.50"]]
    assert sample.file_path(fish.files[0]).is_file()


def test_dataset_round_trips(sample: TaskSet, tmp_path: Path) -> None:
    out = tmp_path / "dataset.json"
    write_gta_dataset(sample, out)
    assert json.loads(out.read_text(encoding="utf-8")) == json.loads(SAMPLE.read_text(encoding="utf-8"))
    # through the TaskSet JSONL form as well
    sample.dump(tmp_path / "tasks.jsonl")
    again = TaskSet.load(tmp_path / "tasks.jsonl")
    assert dict(task_to_gta_sample(t) for t in again) == json.loads(SAMPLE.read_text(encoding="utf-8"))


def test_other_tasks_export_with_toolmeta() -> None:
    demo = TaskSet.load(DEMO)
    key, out = task_to_gta_sample(demo["fish-oil-days"], load_toolmeta(GTA_TOOLMETA))
    assert key == "fish-oil-days"
    assert [t["name"] for t in out["tools"]] == ["OCR", "Calculator"]
    assert out["dialogs"][0] == {"role": "user", "content": demo["fish-oil-days"].query}
    assert out["dialogs"][1]["tool_calls"][0]["function"]["name"] == "OCR"
    assert out["gt_answer"] == {"whitelist": [["58"]], "blacklist": None}
    # and it loads back as the same chain
    task = sample_to_task(key, out)
    assert [g.action for g in task.golden] == [g.action for g in demo["fish-oil-days"].golden]
    with pytest.raises(EvaluationError, match="no toolmeta record"):
        task_to_gta_sample(demo["fish-oil-days"], {})


def test_bad_samples_give_typed_errors(tmp_path: Path) -> None:
    good = json.loads(SAMPLE.read_text(encoding="utf-8"))["0"]
    with pytest.raises(EvaluationError, match="gt_answer"):
        sample_to_task("x", {**good, "gt_answer": {"whitelist": "58"}})
    with pytest.raises(EvaluationError, match="first dialog turn"):
        sample_to_task("x", {**good, "dialogs": [{"role": "assistant", "content": "hi"}]})
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(EvaluationError, match="keyed by sample id"):
        load_gta_dataset(bad)
    bad.write_text("{oops", encoding="utf-8")
    with pytest.raises(EvaluationError, match="not JSON"):
        load_gta_dataset(bad)


# ---- answer matching ---------------------------------------------------------------------------------


def test_answer_matching_quirks_and_fixes() -> None:
    # GTA's \b cannot match an alias that starts with "$", nor a number inside unspaced text
    assert not compat_iscorrect("Your change is $6.50.", [["$6.50", "6.5"]], None)
    assert fixed_iscorrect("Your change is $6.50.", [["$6.50", "6.5"]], None)
    assert not compat_iscorrect("可以吃58天", [["58"]], None)
    assert fixed_iscorrect("可以吃58天", [["58"]], None)
    # numbers compare as numbers in fixed mode, never as a piece of a longer number
    assert fixed_iscorrect("The balance is 4,825.50 dollars", [["4825.5"]], None)
    assert not fixed_iscorrect("It lasts 158 days", [["58"]], None)
    assert not fixed_iscorrect("It lasts 5.8 days", [["58"]], None)
    # both modes: every group must match, and a blacklisted alias fails the answer
    assert compat_iscorrect("Room 204 on Friday", [["204"], ["Friday"]], None)
    assert not compat_iscorrect("change 6.5, not 7.50", [["6.5"]], [["7.50"]])
    assert not fixed_iscorrect("change 6.5, not 7.50", [["6.5"]], [["7.50"]])
    assert alias_found("ＡＢＣ costs", "abc")  # NFKC


# ---- step mode ---------------------------------------------------------------------------------------


def _oracle_step_traces(tasks: TaskSet, tools_for: object, out: Path) -> list[Trace]:
    traces = []
    for task in tasks:
        env = ToolEnv(tools_for(task), tasks)  # type: ignore[operator]
        try:
            _, path = record_teacher_forced(env, OracleAgent(env.protocol), task, out)
        finally:
            env.close()
        traces.append(read_trace(path))
    return traces


def test_step_metrics_of_the_golden_chain(sample: TaskSet, tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers", reason="gta-2's reference answer needs the ml extra")
    traces = _oracle_step_traces(sample, replay_toolset, tmp_path)
    assert all(t.header.env_config["mode"] == "teacher_forced" for t in traces)
    compat = GTASuite().score(traces, sample, "compat")
    # 10 golden steps, all predicted right; GTA divides by 6 tool steps + 3 samples with an
    # answer, so the image-generation sample's answer step pushes InstAcc over 100
    assert compat.metrics["InstAcc"] == pytest.approx(1000 / 9)
    assert compat.metrics["ToolAcc"] == 100.0 and compat.metrics["ArgAcc"] == 100.0
    # "$6.50" never matches with \b: one of the three answers fails; the reference answer of
    # gta-2 is the golden text itself (similarity 1)
    assert compat.metrics["SummAcc"] == pytest.approx(200 / 3, abs=1e-3)
    fixed = GTASuite().score(traces, sample, "fixed")
    assert fixed.metrics["InstAcc"] == 100.0
    assert fixed.metrics["SummAcc"] == pytest.approx(100.0, abs=1e-3)
    assert fixed.counts["step/gold_tool_steps"] == 6 and fixed.counts["step/answer_steps"] == 3


def test_step_argument_comparison(sample: TaskSet, tmp_path: Path) -> None:
    fish = sample["gta-0"]
    absolute = str(sample.file_path(fish.files[0]).resolve())
    outputs: list[Output] = [
        ToolCall(name="OCR", arguments={"image": absolute}),  # the path GTA's prompt announces
        ToolCall(name="Calculator", arguments={"expression": "290/5"}),
        "Thought: done\nFinal Answer: 58 days",
    ]
    trace = run_step(replay_toolset(fish), sample, fish, outputs, tmp_path)
    compat = GTASuite().score([trace], sample, "compat")
    fixed = GTASuite().score([trace], sample, "fixed")
    # compat compares argument dicts exactly: an absolute path and "290/5" both miss
    assert compat.metrics["ToolAcc"] == 100.0 and compat.metrics["ArgAcc"] == 0.0
    # fixed compares the file named and the expression without whitespace differences
    assert fixed.metrics["ArgAcc"] == 100.0
    assert fixed.metrics["SummAcc"] == 100.0


def test_step_format_errors_and_extra_calls(sample: TaskSet, tmp_path: Path) -> None:
    fish = sample["gta-0"]
    outputs = [
        "I would read the label with OCR.",  # prose: a format error
        'Action: Calculator\nAction Input: {"expression": "290 / 5"}\n'
        'Action: Calculator\nAction Input: {"expression": "1 + 1"}',  # two calls at once
        "Final Answer: 58",
    ]
    trace = run_step(replay_toolset(fish), sample, fish, outputs, tmp_path)
    assert trace.steps[0].error_kinds == ["format_error"]
    compat = GTASuite().score([trace], sample, "compat")
    fixed = GTASuite().score([trace], sample, "fixed")
    # compat, as lagent reads the replies (this test asserted the first call's score before):
    # step 1 is a NoAction tool step with an error, step 2 one Calculator call (the last
    # Action's name) whose input runs to the end of the reply, not JSON: an argument error. Only
    # the answer is an error-free step of the right kind; the name still counts for ToolAcc.
    assert compat.metrics["InstAcc"] == pytest.approx(100 / 3)
    assert compat.metrics["ToolAcc"] == 50.0 and compat.metrics["ArgAcc"] == 0.0
    assert compat.counts["step/tool_call"] == compat.counts["step/tool_call_error"] == 2
    # fixed: an extra call in the step is penalised
    assert fixed.metrics["ToolAcc"] == 0.0
    assert fixed.metrics["InstAcc"] == pytest.approx(100 * 2 / 3)


def test_missing_predictions_count_in_fixed_mode_only(sample: TaskSet, tmp_path: Path) -> None:
    fish = sample["gta-0"]
    trace = run_step(replay_toolset(fish), sample, fish, [fish.golden[0].action], tmp_path)
    short = trace.model_copy(update={"steps": trace.steps[:1]})  # an episode cut after step 1
    compat = GTASuite().score([short], sample, "compat")
    fixed = GTASuite().score([short], sample, "fixed")
    # GTA zips predictions with gold steps: the missing steps leave the denominator too
    assert compat.metrics["ToolAcc"] == 100.0
    assert fixed.metrics["ToolAcc"] == 50.0 and fixed.metrics["InstAcc"] == pytest.approx(100 / 3)


# ---- compat: replies as GTA's pipeline reads them ------------------------------------------------------
# GTA's LagentAgent parses each reply with lagent's ReAct parse and runs it through an
# ActionExecutor holding only the sample's tools (agentlego tools); every expected value below
# follows from that path (opencompass/models/lagent.py, lagent 0.2 ReActProtocol.parse,
# ActionExecutor, JsonParser, agentlego's DefaultParser and ImageIO) and gta_bench.py's score.


def test_compat_prose_is_a_tool_step_with_an_error(sample: TaskSet, tmp_path: Path) -> None:
    fish = sample["gta-0"]
    ocr, calc = (g.action for g in fish.golden[:2])
    trace = run_step(replay_toolset(fish), sample, fish, [ocr, calc, "The bottle lasts 58 days."], tmp_path)
    compat = GTASuite().score([trace], sample, "compat")
    # neither "Action:" nor "Final Answer:": lagent's NoAction, which next_step records as a tool
    # call with an error. Against the gold answer it is another type (no InstAcc), and the text is
    # never matched against the whitelist: SummAcc 0, though "58" is in it
    assert compat.metrics["SummAcc"] == 0.0
    assert compat.metrics["InstAcc"] == pytest.approx(100 * 2 / 3)  # / (2 gold tool steps + 1 answer)
    assert compat.counts["step/tool_call"] == 3 and compat.counts["step/tool_call_error"] == 1
    assert GTASuite().score([trace], sample, "fixed").metrics["SummAcc"] == 0.0


def test_compat_two_action_blocks_parse_as_lagent_parses_them(sample: TaskSet, tmp_path: Path) -> None:
    fish = sample["gta-0"]
    two = (
        'Thought: compute, then check\nAction: Calculator\nAction Input: {"expression": "290 / 5"}\n'
        'Action: OCR\nAction Input: {"image": "image/fish_oil.png"}\n'
    )
    trace = run_step(
        replay_toolset(fish), sample, fish, [fish.golden[0].action, two, "Final Answer: 58"], tmp_path
    )
    pred = gta_step_predictions(trace, fish, sample.base_dir)[1]
    # one call, named by the last "Action:" line; its input runs from the first "Action Input:" to
    # the end: JSON with extra data, an argument error whose arguments are the raw text
    assert (pred.kind, pred.name, pred.error) == ("tool", "OCR", "ARGS_ERROR")
    assert isinstance(pred.arguments, str) and pred.arguments.startswith(
        '{"expression": "290 / 5"}\nAction: OCR'
    )
    compat = GTASuite().score([trace], sample, "compat")
    # gold Calculator vs predicted OCR: ToolAcc and ArgAcc miss on step 2; the error fails InstAcc
    assert compat.metrics["ToolAcc"] == 50.0 and compat.metrics["ArgAcc"] == 50.0
    assert compat.metrics["InstAcc"] == pytest.approx(100 * 2 / 3)
    assert compat.counts["step/tool_call_error"] == 1


@pytest.mark.parametrize(
    "reply",
    [
        "Action: Calculator\nAction Input: {'expression': '290 / 5'}\n",
        "Action: Calculator\nAction Input: 290 / 5",
    ],
)
def test_compat_non_json_input_is_an_argument_error_of_the_named_tool(
    sample: TaskSet, tmp_path: Path, reply: str
) -> None:
    fish = sample["gta-0"]
    trace = run_step(
        replay_toolset(fish), sample, fish, [fish.golden[0].action, reply, "Final Answer: 58"], tmp_path
    )
    pred = gta_step_predictions(trace, fish, sample.base_dir)[1]
    # JsonParser takes JSON only: Python quotes or a bare expression raise ParseError, an
    # ARGS_ERROR that GTA records under the tool's name with the raw input as its arguments
    assert (pred.name, pred.error, pred.arguments) == (
        "Calculator",
        "ARGS_ERROR",
        reply.split("Input: ")[1].strip(),
    )
    compat = GTASuite().score([trace], sample, "compat")
    assert compat.metrics["ToolAcc"] == 100.0  # the name matches gold: ToolAcc ignores errors
    assert compat.metrics["ArgAcc"] == 50.0  # a string never equals the gold dict
    assert compat.metrics["InstAcc"] == pytest.approx(100 * 2 / 3)  # the error fails InstAcc
    assert compat.counts["step/tool_call_error"] == 1


def test_compat_final_answer_with_an_action_is_an_answer(sample: TaskSet, tmp_path: Path) -> None:
    fish = sample["gta-0"]
    ocr, calc = (g.action for g in fish.golden[:2])
    both = 'Thought: done\nAction: Calculator\nAction Input: {"expression": "290 / 5"}\nFinal Answer: 58'
    step = run_step(replay_toolset(fish), sample, fish, [ocr, calc, both], tmp_path / "step")
    compat = GTASuite().score([step], sample, "compat")
    # "Final Answer:" anywhere makes the reply lagent's FinishAction, the answer " 58": an
    # error-free answer step against the gold answer
    assert compat.metrics["InstAcc"] == 100.0 and compat.metrics["SummAcc"] == 100.0
    # end to end the ReAct loop stops there: the last step is that answer, and the Calculator
    # call in the same reply never runs (no logic call predicted)
    e2e = run_e2e(replay_toolset(fish), sample, fish, [ocr, both.replace("58", "58 days")], tmp_path / "e2e")
    result = GTASuite().score([e2e], sample, "compat")
    assert result.metrics["AnsAcc"] == 100.0
    assert result.counts["e2e/tool_call"] == 1 and result.metrics["L_F1"] == 0.0
    # fixed reads the reply with toolgym's ReAct protocol: a format error, no answer
    assert GTASuite().score([e2e], sample, "fixed").metrics["AnsAcc"] == 0.0


def test_compat_a_missing_file_fails_the_step(sample: TaskSet, tmp_path: Path) -> None:
    fish = sample["gta-0"]
    calc = fish.golden[1].action
    wrong = 'Action: OCR\nAction Input: {"image": "image/fish_oil.jpg"}\n'
    trace = run_step(replay_toolset(fish), sample, fish, [wrong, calc, "Final Answer: 58"], tmp_path / "a")
    compat = GTASuite().score([trace], sample, "compat")
    # agentlego turns an image argument into ImageIO(path), which raises FileNotFoundError: the
    # tool step has an error (no InstAcc) but keeps its name (ToolAcc) and its arguments
    assert compat.metrics["InstAcc"] == pytest.approx(100 * 2 / 3)
    assert compat.metrics["ToolAcc"] == 100.0 and compat.metrics["ArgAcc"] == 50.0
    assert compat.counts["step/tool_call_error"] == 1
    pred = gta_step_predictions(trace, fish, sample.base_dir)[0]
    assert (pred.error, pred.arguments) == ("API_ERROR", {"image": "image/fish_oil.jpg"})
    # the file's absolute path exists: no error (ArgAcc still compares the text exactly)
    absolute = json.dumps({"image": str(sample.file_path(fish.files[0]).resolve())})
    there = f"Action: OCR\nAction Input: {absolute}\n"
    trace = run_step(replay_toolset(fish), sample, fish, [there, calc, "Final Answer: 58"], tmp_path / "b")
    compat = GTASuite().score([trace], sample, "compat")
    assert compat.metrics["InstAcc"] == 100.0 and compat.counts["step/tool_call_error"] == 0


def test_compat_a_tool_outside_the_sample_is_an_invalid_action(sample: TaskSet, tmp_path: Path) -> None:
    fish = sample["gta-0"]
    outside = 'Action: TextToBbox\nAction Input: {"image": "image/fish_oil.png", "text": "label"}\n'
    ocr, calc = (g.action for g in fish.golden[:2])
    trace = run_e2e(replay_toolset(fish), sample, fish, [outside, ocr, calc, "Final Answer: 58"], tmp_path)
    preds = gta_episode_predictions(trace, fish, sample.base_dir)
    # the executor holds OCR and Calculator only: TextToBbox is lagent's InvalidAction, a name
    # that gettype puts in no category
    assert (preds[0].name, preds[0].error) == ("InvalidAction", "API_ERROR")
    compat = GTASuite().score([trace], sample, "compat")
    # perception: 1 predicted (OCR), 1 hit, 1 gold: P = 1 / (1 + 1e-5), R = 1
    p = 1 / (1 + 1e-5)
    assert compat.metrics["P_F1"] == pytest.approx(100 * 2 * p / (p + 1 + 1e-5))
    assert compat.counts["e2e/tool_call"] == 3 and compat.counts["e2e/tool_call_error"] == 1
    assert compat.metrics["AnsAcc"] == 100.0


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "Action: OCR\nAction Input: " + '{"a":' * 5000 + "1" + "}" * 5000,  # too deep for json
        'Action: OCR\nAction Input: {"image": "\\u0000/x.png"}\n',  # a NUL in the path
        'Action: OCR\nAction Input: {"image": "/' + "a" * 5000 + '.png"}\n',  # a name too long
        "Action: OCR\nAction Input: 12\n",  # JSON that is no object
        'Action: Calculator.run\nAction Input: {"expression": "1"}\n',  # lagent's "tool.api" form
        'Action: Calculator.other\nAction Input: {"expression": "1"}\n',
        "Action: FinishAction\nAction Input: 58\n",  # lagent's finish, named
        {"role": "assistant", "content": [{"type": "text", "text": "Final Answer: 58"}]},
    ],
)
def test_compat_odd_replies_never_raise(sample: TaskSet, tmp_path: Path, reply: Output) -> None:
    fish = sample["gta-0"]
    trace = run_step(replay_toolset(fish), sample, fish, [reply], tmp_path)
    pred = gta_step_predictions(trace, fish, sample.base_dir)[0]
    if reply == "Action: FinishAction\nAction Input: 58\n" or isinstance(reply, dict):
        assert (pred.kind, (pred.content or "").strip()) == ("answer", "58")
    elif "Calculator.run" in str(reply):
        assert (pred.name, pred.error, pred.arguments) == ("Calculator", None, {"expression": "1"})
    else:
        assert pred.kind == "tool" and pred.error is not None
    GTASuite().score([trace], sample, "compat")


class _ExactEmbedder:
    """Similarity 1 for identical texts and 0 otherwise; remembers what it was given."""

    name = "exact"

    def __init__(self) -> None:
        self.seen: list[str] = []
        self._ids: dict[str, int] = {}

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float64]:
        self.seen.extend(texts)
        rows = np.zeros((len(texts), 256))
        for n, text in enumerate(texts):
            rows[n, self._ids.setdefault(text, len(self._ids))] = 1.0
        return rows


def test_compat_ans_plus_i_dumps_arguments_as_gta(sample: TaskSet, tmp_path: Path) -> None:
    task = sample["gta-1"]
    box = task.golden[0].action
    swapped = 'Action: DrawBox\nAction Input: {"bbox": "(120, 40, 330, 260)", "image": "image/chelsea.jpg"}\n'
    trace = run_e2e(replay_toolset(task), sample, task, [box, swapped, "Final Answer: done"], tmp_path / "a")
    embedder = _ExactEmbedder()
    result = GTASuite(embedder).score([trace], sample, "compat")
    # GTA compares json.dumps(gold) with json.dumps(pred), each dict in its own key order: the
    # same arguments written in another order are other texts
    gold = json.dumps({"image": "image/chelsea.jpg", "bbox": "(120, 40, 330, 260)"})
    assert embedder.seen == [gold, json.dumps({"bbox": "(120, 40, 330, 260)", "image": "image/chelsea.jpg"})]
    assert result.metrics["Ans+I"] == 0.0
    same = 'Action: DrawBox\nAction Input: {"image": "image/chelsea.jpg", "bbox": "(120, 40, 330, 260)"}\n'
    trace = run_e2e(replay_toolset(task), sample, task, [box, same, "Final Answer: done"], tmp_path / "b")
    assert GTASuite(_ExactEmbedder()).score([trace], sample, "compat").metrics["Ans+I"] == 100.0


# ---- end to end ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_traces(tmp_path_factory: pytest.TempPathFactory) -> tuple[TaskSet, list[Trace]]:
    demo = TaskSet.load(DEMO)
    out = tmp_path_factory.mktemp("demo")
    toolmeta = load_toolmeta(GTA_TOOLMETA)
    traces = []
    for task in demo:
        # the tools answer with the results recorded in the golden chain (fast, no OCR model)
        env = ToolEnv(replay_toolset(task, toolmeta), demo)
        try:
            result = run_episode(env, OracleAgent(env.protocol), task, trace_dir=out)
        finally:
            env.close()
        assert result.trace_path is not None
        traces.append(read_trace(result.trace_path))
    return demo, traces


def test_end_to_end_metrics_on_the_demo_set(demo_traces: tuple[TaskSet, list[Trace]]) -> None:
    demo, traces = demo_traces
    compat = get_suite("gta").score(traces, demo, "compat")
    fixed = get_suite("gta").score(traces, demo, "fixed")
    # the oracle answers "(4, 2)": GTA's \b never matches an alias that starts with "("
    assert compat.per_task["solve-system"]["answer"] == 0.0
    assert compat.metrics["AnsAcc"] == pytest.approx(100 * 11 / 12)
    assert fixed.metrics["AnsAcc"] == 100.0 and fixed.metrics["Ans+I"] == 100.0
    assert (
        fixed.metrics["P_F1"] == 100.0 and fixed.metrics["L_F1"] == 100.0 and fixed.metrics["O_F1"] == 100.0
    )
    # compat reports every category (0 without gold calls) and keeps GTA's 1e-5 terms
    assert compat.metrics["C_F1"] == 0.0 and compat.metrics["P_F1"] == pytest.approx(100, abs=1e-2)
    assert "C_F1" not in fixed.metrics
    assert fixed.counts["e2e/tool_call"] == compat.counts["e2e/tool_call"] == 20
    assert "InstAcc" not in fixed.metrics  # no teacher-forced traces here


def test_f1_counts_repeated_calls_as_a_multiset(tmp_path: Path) -> None:
    demo = TaskSet.load(DEMO)
    base = demo["memo-room"]
    ocr = base.golden[0].action
    task = base.model_copy(update={"id": "memo-twice", "golden": [GoldenStep(action=ocr), *base.golden]})
    tasks = TaskSet([*demo, task], base_dir=demo.base_dir)
    tools = replay_toolset(task, load_toolmeta(GTA_TOOLMETA))
    trace = run_e2e(tools, tasks, task, [ocr, "Final Answer: Room 204 on Friday"], tmp_path)
    compat = GTASuite().score([trace], tasks, "compat")
    fixed = GTASuite().score([trace], tasks, "fixed")
    # gold OCR twice, predicted once: GTA counts both gold calls as hits (precision 2/1)
    assert compat.metrics["P_F1"] == pytest.approx(100 * 2 * 2 * 1 / (3 + 1e-5), rel=1e-4)
    assert fixed.metrics["P_F1"] == pytest.approx(100 * 2 * 1 * 0.5 / 1.5)
    assert compat.metrics["AnsAcc"] == fixed.metrics["AnsAcc"] == 100.0


def test_unfinished_episode_scores_no_answer(
    demo_traces: tuple[TaskSet, list[Trace]], tmp_path: Path
) -> None:
    demo, _ = demo_traces
    task = demo["fish-oil-days"]
    trace = run_e2e(replay_toolset(task), demo, task, [task.golden[0].action], tmp_path)
    assert trace.end is not None and trace.end.status == "truncated"
    result = GTASuite().score([trace], demo, "fixed")
    assert result.metrics["AnsAcc"] == 0.0


def _failing_tools() -> ToolSet:
    def down(arguments: dict[str, object], ctx: ToolContext) -> str:
        raise InfraError("OCR server unreachable")

    return ToolSet(
        [SchemaTool("OCR", {"properties": {"image": {"type": "string"}}}, down, category="perception")]
    )


def test_infra_errors_are_kept_apart_in_fixed_mode(tmp_path: Path) -> None:
    demo = TaskSet.load(DEMO)
    task = demo["memo-room"]
    # a dead backend aborts the episode (never scored); infra errors that a complete trace holds are
    # a fault plan's (or an older recorder's): the scorers keep those apart
    outage = FaultLayer(FaultPlan(name="ocr-down", rules=[FaultRule(tools="OCR", kind="error")]))
    outputs = [task.golden[0].action, "Final Answer: no idea"]
    trace = run_e2e(_failing_tools(), demo, task, outputs, tmp_path, tool_layers=[outage])
    assert "infra_error" in trace.steps[0].error_kinds
    compat = GTASuite().score([trace], demo, "compat")
    assert compat.counts["e2e/tool_call_error"] == 1 and compat.metrics["AnsAcc"] == 0.0
    fixed = GTASuite().score([trace], demo, "fixed")
    assert fixed.counts["e2e/infra_error_tasks"] == 1 and fixed.counts["e2e/tasks"] == 0


def test_image_generation_answers_ans_plus_i(sample: TaskSet, tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers", reason="similarity needs the ml extra")
    task = sample["gta-1"]
    tools = replay_toolset(task)
    gold_calls = [g.action for g in task.golden if g.action.type == "tool_call"]
    right = run_e2e(tools, sample, task, [*gold_calls, "Final Answer: done"], tmp_path / "a")
    no_draw = run_e2e(tools, sample, task, [gold_calls[0], "Final Answer: done"], tmp_path / "b")
    other_box = ToolCall(name="DrawBox", arguments={"image": "image/chelsea.jpg", "bbox": "(0, 0, 5, 5)"})
    moved = run_e2e(tools, sample, task, [gold_calls[0], other_box, "Final Answer: done"], tmp_path / "c")
    suite = GTASuite()
    modes: tuple[Mode, ...] = ("compat", "fixed")
    for mode in modes:
        per = [suite.score([t], sample, mode).metrics["Ans+I"] for t in (right, no_draw, moved)]
        assert per[0] == pytest.approx(100.0, abs=1e-3)  # the same arguments: similarity 1
        assert per[1] == 0.0  # the gold DrawBox call is missing
        assert 0.0 < per[2] < 100.0  # another box: the arguments' similarity
        both = suite.score([right, no_draw], sample, mode)
        assert both.counts["e2e/answer_tasks"] == 0 and both.metrics["Ans+I"] == pytest.approx(50.0, abs=1e-3)


def test_scoring_needs_the_tasks(sample: TaskSet, tmp_path: Path) -> None:
    traces = _oracle_step_traces(TaskSet([sample["gta-3"]]), replay_toolset, tmp_path)
    with pytest.raises(EvaluationError, match="needs the task set"):
        GTASuite().score(traces, None, "compat")
    with pytest.raises(EvaluationError, match="none of the 1 traces"):
        GTASuite().score(traces, TaskSet([Task(id="x", query="q")]), "compat")
    result = GTASuite().score(traces, sample, "compat")
    assert "skipped_unknown_task" not in result.counts


# ---- error kinds -----------------------------------------------------------------------------------


def test_error_kinds_of_an_episode_in_both_modes(sample: TaskSet, tmp_path: Path) -> None:
    fish = sample["gta-0"]
    ocr, calc = (g.action for g in fish.golden[:2])
    outputs: list[Output] = [
        "I would read the label with OCR.",  # no action: lagent's NoAction, toolgym's format error
        'Action: TextToBbox\nAction Input: {"image": "image/fish_oil.png", "text": "label"}\n',
        ToolCall(name="Calculator", arguments={"expr": "1"}),  # a key Calculator does not take
        'Action: OCR\nAction Input: {"image": "image/fish_oil.jpg"}\n',  # no such file
        ocr,
        calc,
        "Final Answer: 58",
    ]
    trace = run_e2e(replay_toolset(fish), sample, fish, outputs, tmp_path)
    compat = GTASuite().score([trace], sample, "compat")
    assert error_kinds(compat.counts) == {
        "e2e": {"no_action": 1, "invalid_action": 1, "argument": 1, "tool": 1}
    }
    assert compat.counts["e2e/tool_call_error"] == 4
    fixed = GTASuite().score([trace], sample, "fixed")
    # fixed resolves a task file by its name: the OCR call on "fish_oil.jpg" is no error there
    assert error_kinds(fixed.counts) == {
        "e2e": {"no_action": 1, "invalid_action": 1, "argument": 1, "tool": 0}
    }
    assert fixed.metrics["AnsAcc"] == 100.0  # errors on the way do not cost the answer


def test_error_kinds_of_teacher_forced_steps(sample: TaskSet, tmp_path: Path) -> None:
    fish = sample["gta-0"]
    outputs: list[Output] = [
        'Action: TextToBbox\nAction Input: {"image": "image/fish_oil.png", "text": "label"}\n',
        "I would add them up.",
        "Final Answer: 58",
    ]
    trace = run_step(replay_toolset(fish), sample, fish, outputs, tmp_path)
    for mode in ("compat", "fixed"):
        result = GTASuite().score([trace], sample, mode)
        assert error_kinds(result.counts) == {
            "step": {"no_action": 1, "invalid_action": 1, "argument": 0, "tool": 0}
        }, mode


def test_a_failing_tool_is_a_tool_error_in_both_modes(tmp_path: Path) -> None:
    def broken(arguments: dict[str, object], ctx: ToolContext) -> str:
        raise ToolError("OCR model crashed on the image")

    tools = ToolSet(
        [SchemaTool("OCR", {"properties": {"image": {"type": "string"}}}, broken, category="perception")]
    )
    demo = TaskSet.load(DEMO)
    task = demo["memo-room"]
    trace = run_e2e(tools, demo, task, [task.golden[0].action, "Final Answer: no idea"], tmp_path)
    assert trace.steps[0].error_kinds == ["tool_error"]
    for mode in ("compat", "fixed"):
        kinds = error_kinds(GTASuite().score([trace], demo, mode).counts)
        assert kinds == {"e2e": {"no_action": 0, "invalid_action": 0, "argument": 0, "tool": 1}}, mode
