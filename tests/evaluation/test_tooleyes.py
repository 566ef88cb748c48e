"""ToolEyes: the query/config loaders, the rule-based dimensions on recorded episodes (with
ToolEyes' quirks in compat mode) and the judged ones through a real OpenAI-compatible HTTP judge
on 127.0.0.1 whose verdicts are cached in SQLite."""

from __future__ import annotations

import builtins
import json
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.cli_text import flat
from tests.envs.test_rollouts import without_latencies
from tests.evaluation.helpers import run_e2e
from tests.evaluation.tooleyes_model import JUDGE_SCORE, tooleyes_script
from tests.models.fake_openai import FakeOpenAI, serve
from tests.shared_data import DATA
from toolgym.cli import app
from toolgym.envs.demo import tooleyes_tasks_path
from toolgym.evaluation import EvaluationError, get_suite
from toolgym.evaluation.base import MODES
from toolgym.evaluation.loaders.tooleyes import (
    SCENARIOS,
    config_key,
    load_tool_configs,
    load_tooleyes_queries,
    task_to_row,
    tooleyes_toolset,
    write_tooleyes_queries,
)
from toolgym.evaluation.metrics.expressions import (
    MAX_INT_BITS,
    ExpressionRejected,
    evaluate_literal_expression,
)
from toolgym.evaluation.metrics.judge import JudgeError, OpenAIJudge, parse_score
from toolgym.evaluation.metrics.tooleyes import (
    ToolEyesSuite,
    json_format_ok,
    judge_parts,
    reasoning_format_ok,
    split_message,
)
from toolgym.tasks import TaskSet
from toolgym.tools import ToolSet
from toolgym.trace import Trace, read_trace

TE = DATA / "tooleyes"
CONFIGS = sorted(TE.glob("config_gpt4.*.json"))


@pytest.fixture(scope="module")
def tasks() -> TaskSet:
    return load_tooleyes_queries(TE / "scenario_data_raw.json", load_tool_configs(CONFIGS))


def _finish(text: str) -> str:
    return f'Thought: I can answer now.\nAction: FinishAction\nAction Input: {{"response": "{text}"}}'


def _call(name: str, args: dict[str, Any], thought: str = "I should call a tool.") -> str:
    return f"Thought: {thought}\nAction: {name}\nAction Input: {json.dumps(args)}"


def _first(tasks: TaskSet, library: str) -> str:
    return next(t.id for t in tasks if t.metadata["tooleyes"]["path"].endswith(library))


# ---- loader ------------------------------------------------------------------------------------


def test_queries_and_configs_load_and_round_trip(tasks: TaskSet, tmp_path: Path) -> None:
    assert len(tasks) == 382
    assert {t.category for t in tasks} == {"TG", "RS", "DU", "PL", "AM", "IR", "FT"}
    random_task = tasks[_first(tasks, "Random/Random")]
    assert random_task.tools == [
        "get_random_number",
        "get_uuid",
        "generate_string",
        "generate_password",
        "generate_placeholder_text",
    ]
    assert [r["name"] for r in random_task.metadata["tooleyes"]["tools"]][-2:] == ["ask_to_user", "finish"]
    assert (
        config_key("ToolEyes/Tool_Library/Weather/weatherapi")
        == config_key(str(CONFIGS[-1]))
        == "Weather/weatherapi"
    )
    out = tmp_path / "rows.json"
    write_tooleyes_queries(tasks, out)
    original = json.loads((TE / "scenario_data_raw.json").read_text(encoding="utf-8"))
    assert json.loads(out.read_text(encoding="utf-8")) == original
    assert task_to_row(tasks[0]) == original[0]
    # no config for a library: the task offers every tool of the env and keeps no records
    assert sum(1 for t in tasks if t.tools is None) > 0


def test_bad_inputs_give_typed_errors(tmp_path: Path) -> None:
    bad = tmp_path / "config_gpt4.X__Y.json"
    bad.write_text('{"name": "x"}', encoding="utf-8")
    with pytest.raises(EvaluationError, match="list of function records"):
        load_tool_configs([bad])
    rows = tmp_path / "rows.json"
    rows.write_text('[{"query": 1, "path": "a/b", "scenario": "TG"}]', encoding="utf-8")
    with pytest.raises(EvaluationError, match="row 0"):
        load_tooleyes_queries(rows)


def test_toolset_leaves_pseudo_tools_out() -> None:
    records = json.loads(CONFIGS[0].read_text(encoding="utf-8"))
    tools = tooleyes_toolset(records)
    assert "finish" not in tools and "ask_to_user" not in tools and "read_file" in tools


# ---- text checks ------------------------------------------------------------------------------------


def test_tooleyes_text_checks() -> None:
    good = _call("get_uuid", {"cnt": "2"})
    assert reasoning_format_ok(good) and json_format_ok(good)
    assert split_message(good) == ("I should call a tool.", "get_uuid", '{"cnt": "2"}')
    assert not reasoning_format_ok("Action: get_uuid\nAction Input: {}")  # no Thought
    assert not json_format_ok(
        'Thought: t\nAction: get_uuid\nAction Input: {"cnt": true}'
    )  # eval has no `true`
    assert not json_format_ok("Thought: t\nAction: x\nAction Input: __import__('os').getcwd()")  # never run
    assert parse_score("Scoring Reason: fine.\nEvaluation Score: 10") == 10
    assert parse_score("Evaluation Score: 7/10") == 7
    assert parse_score("I think it is good") is None


# ---- rule-based dimensions -------------------------------------------------------------------------


def _episode(tasks: TaskSet, task_id: str, outputs: list[str], out: Path) -> Trace:
    # the task's world serves its library's tools, simulated (toolgym.mocks.simulated)
    return run_e2e(ToolSet(), tasks, tasks[task_id], outputs, out)


def test_rules_on_a_clean_episode(tasks: TaskSet, tmp_path: Path) -> None:
    task_id = _first(tasks, "Random/Random")
    trace = _episode(
        tasks, task_id, [_call("generate_string", {"len": "8", "cnt": "1"}), _finish("x8k2p0qa")], tmp_path
    )
    for mode in MODES:
        result = ToolEyesSuite().score([trace], tasks, mode)
        assert result.metrics["IF"] == 100.0 and result.metrics["tool_reality"] == 100.0
        assert "TS" not in result.metrics and any("no judge" in n for n in result.notes)


def test_hallucination_counting(tasks: TaskSet, tmp_path: Path) -> None:
    task_id = _first(tasks, "Random/Random")
    outputs = [
        _call("make_string", {"len": "8"}),  # a tool that does not exist
        _call("generate_string", {"length": "8"}),  # a parameter the tool does not take
        _finish("I cannot handle the task."),
    ]
    trace = _episode(tasks, task_id, outputs, tmp_path)
    assert trace.steps[0].error_kinds == ["unknown_tool"]
    compat = ToolEyesSuite().score([trace], tasks, "compat")
    fixed = ToolEyesSuite().score([trace], tasks, "fixed")
    # compat stops checking parameters after the first tool hallucination: 1 of 2 turns
    assert compat.per_task[task_id]["tool_hallucinations"] == 1.0
    assert compat.per_task[task_id]["param_hallucinations"] == 0.0
    assert compat.metrics["tool_reality"] == 50.0
    assert fixed.per_task[task_id]["param_hallucinations"] == 1.0 and fixed.metrics["tool_reality"] == 0.0
    assert compat.metrics["IF"] == fixed.metrics["IF"] == 100.0


def test_required_parameters_are_not_used_up(tasks: TaskSet, tmp_path: Path) -> None:
    task_id = _first(tasks, "Weather/weatherapi")
    outputs = [
        _call("current_weather", {"q": "Paris"}),
        _call("current_weather", {"lang": "fr"}),  # misses the required "q"
        _finish("It is sunny in Paris."),
    ]
    trace = _episode(tasks, task_id, outputs, tmp_path)
    assert trace.steps[1].error_kinds == ["argument_error"]
    compat = ToolEyesSuite().score([trace], tasks, "compat")
    fixed = ToolEyesSuite().score([trace], tasks, "fixed")
    # ToolEyes removes a given required parameter from the tool document for the rest of the
    # episode, so the second call passes; fixed counts it
    assert compat.metrics["tool_reality"] == 100.0
    assert fixed.metrics["tool_reality"] == 50.0


def test_format_alignment(tasks: TaskSet, tmp_path: Path) -> None:
    task_id = _first(tasks, "Random/Random")
    outputs = [
        "I will generate it.",  # no labels: a format error
        'Thought: ok\nAction: generate_string\nAction Input: {"len": "8", "cnt": 1+1}',  # not JSON
        _finish("abcdefgh"),
    ]
    trace = _episode(tasks, task_id, outputs, tmp_path)
    compat = ToolEyesSuite().score([trace], tasks, "compat")
    fixed = ToolEyesSuite().score([trace], tasks, "fixed")
    # ToolEyes' eval reads `1+1` (2), so the call is format-correct there; toolgym's parser refuses it
    assert compat.metrics["IF"] == pytest.approx(200 / 3)
    assert fixed.metrics["IF"] == pytest.approx(100 / 3)
    assert compat.metrics["tool_reality"] == 100.0  # one format-correct tool turn, no hallucination


# ---- judged dimensions ----------------------------------------------------------------------------


class _JudgeServer:
    """Scripted chat completions: the score depends on the question's criteria; one question
    type is answered without a score."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail = False
        parent = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                parent.requests.append(
                    {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
                )
                if parent.fail:
                    self.send_response(503)
                    self.end_headers()
                    return
                system = body["messages"][0]["content"]
                if "fits the plan" in system:
                    reply = "Scoring Reason: the tool fits.\nEvaluation Score: 8"
                elif "grammatical" in system:
                    reply = "Scoring Reason: clean.\nEvaluation Score: 6"
                elif "sums up" in system:
                    reply = "Scoring Reason: good steps.\nEvaluation Score: 5"
                elif "consistently" in system:
                    reply = "Scoring Reason: focused.\nEvaluation Score: 9"
                else:
                    reply = "The answer is helpful."  # no score line
                data = json.dumps(
                    {
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": reply},
                                "finish_reason": "stop",
                            }
                        ]
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


@pytest.fixture
def judge_server() -> Iterator[_JudgeServer]:
    server = _JudgeServer()
    server.thread.start()
    try:
        yield server
    finally:
        server.server.shutdown()
        server.server.server_close()


def test_judged_dimensions_cached_and_recorded(
    tasks: TaskSet, tmp_path: Path, judge_server: _JudgeServer
) -> None:
    task_id = _first(tasks, "Random/Random")
    trace = _episode(
        tasks, task_id, [_call("generate_string", {"len": "8", "cnt": "1"}), _finish("x8k2p0qa")], tmp_path
    )
    cache = tmp_path / "judge.sqlite"
    judge = OpenAIJudge(judge_server.base_url, "judge-model", api_key="secret", cache_path=cache)
    try:
        compat = ToolEyesSuite(judge).score([trace], tasks, "compat")
        asked = len(judge_server.requests)
        # two action/thought questions (both turns), quality, validity, focus, relevance
        assert asked == 6 and judge.requests == 6 and judge.cache_hits == 0
        assert judge_server.requests[0]["path"] == "/v1/chat/completions"
        assert judge_server.requests[0]["auth"] == "Bearer secret"
        assert judge_server.requests[0]["body"]["temperature"] == 0.0
        assert compat.metrics["TS"] == pytest.approx(80.0)  # tool reality 1 x 8/10
        assert compat.metrics["IU"] == pytest.approx(90.0)
        assert compat.metrics["BP"] == pytest.approx(30.0)  # 6/10 x 5/10
        assert compat.metrics["AO"] == 0.0  # no score in the reply: ToolEyes counts 0
        assert compat.metrics["overall"] == pytest.approx((100 + 80 + 30 + 90 + 0) / 5)
        assert (
            compat.metrics[
                "RS/overall" if tasks[task_id].category == "RS" else f"{tasks[task_id].category}/overall"
            ]
            > 0
        )
        fixed = ToolEyesSuite(judge).score([trace], tasks, "fixed")
        # fixed asks different thoughts (the parsed ones) only where they differ; the rest is cached
        assert judge.cache_hits > 0
        assert "AO" not in fixed.metrics and "overall" not in fixed.metrics  # an unscored verdict is left out
        # ... and counted and said, in both modes
        assert fixed.counts["judge_unscored/AO"] == 1 and compat.counts["judge_unscored/AO"] == 1
        assert "1 judge replies carried no score (AO 1): each left out" in " ".join(fixed.notes)
        assert "each counted 0, as ToolEyes does (compat)" in " ".join(compat.notes)
        # the same questions again: all from the cache, no request reaches the server
        before = len(judge_server.requests)
        again = ToolEyesSuite(judge).score([trace], tasks, "compat")
        assert len(judge_server.requests) == before and again.metrics == compat.metrics
        records = judge.cache.records() if judge.cache else []
        assert records and all(r["request"]["model"] == "judge-model" and "reply" in r for r in records)
    finally:
        judge.close()
    # a new judge on the same cache file answers from it
    reopened = OpenAIJudge(judge_server.base_url, "judge-model", cache_path=cache)
    try:
        before = len(judge_server.requests)
        ToolEyesSuite(reopened).score([trace], tasks, "compat")
        assert len(judge_server.requests) == before and reopened.cache_hits > 0
    finally:
        reopened.close()


def test_judge_failures_are_typed(tasks: TaskSet, tmp_path: Path, judge_server: _JudgeServer) -> None:
    task_id = _first(tasks, "Random/Random")
    trace = _episode(tasks, task_id, [_finish("hello")], tmp_path)
    judge_server.fail = True
    judge = OpenAIJudge(judge_server.base_url, "judge-model")
    try:
        with pytest.raises(JudgeError, match="503"):
            ToolEyesSuite(judge).score([trace], tasks, "compat")
    finally:
        judge.close()
    down = OpenAIJudge("http://127.0.0.1:9/v1", "judge-model", timeout_s=2)
    try:
        with pytest.raises(JudgeError, match="failed"):
            down.ask([{"role": "user", "content": "x"}])
    finally:
        down.close()


def test_judge_from_the_environment(
    tasks: TaskSet, tmp_path: Path, judge_server: _JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLGYM_JUDGE_BASE_URL", judge_server.base_url)
    monkeypatch.setenv("TOOLGYM_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("TOOLGYM_JUDGE_CACHE", str(tmp_path / "env.sqlite"))
    task_id = _first(tasks, "Random/Random")
    trace = _episode(tasks, task_id, [_finish("hello")], tmp_path)
    result = get_suite("tooleyes").score([trace], tasks, "compat")
    assert "IU" in result.metrics and result.counts["judge_requests"] > 0
    assert (tmp_path / "env.sqlite").is_file()


# ---- Action Input as ToolEyes' eval reads it (issue 10, item 4) -----------------------------------

# the values Python's eval gives these action inputs, worked out by hand
LITERAL_BUILDING = [
    ("{'q': 'Par' + 'is'}", {"q": "Paris"}),
    ("dict(q='Paris', lang='fr')", {"q": "Paris", "lang": "fr"}),
    (
        "{'days': 2 * 3 - 1, 'ratio': 7 / 2, 'n': -(2 ** 3) // 3, 'r': 7 % 4}",
        {"days": 5, "ratio": 3.5, "n": -3, "r": 3},
    ),
    ("{'ok': True, 'none': None, 'no': not 1}", {"ok": True, "none": None, "no": False}),
    (
        "{'ids': [1, 2] + [3], 'pair': (1,) * 2, 'tags': {'a'} | {'b'}}",
        {"ids": [1, 2, 3], "pair": (1, 1), "tags": {"a", "b"}},
    ),
    ("dict([('q', 'x')], **{'lang': 'en'})", {"q": "x", "lang": "en"}),
    ("{**{'q': 'x'}, 'lang': 'en', 'q': 'y'}", {"q": "y", "lang": "en"}),
    ("list('ab') + [*'cd']", ["a", "b", "c", "d"]),
    (
        "{'bits': 1 << 4 | 1, 'mask': ~0 & 0xff ^ 1, 'shift': 256 >> 2}",
        {"bits": 17, "mask": 254, "shift": 64},
    ),
    ('  {"q": "x"}  # a comment', {"q": "x"}),
    ("tuple([1]), set()", ((1,), set())),
    ("{'big': 2 ** 100}", {"big": 1267650600228229401496703205376}),
    ("{'pad': '-' * 3, 'raw': b'a' + b'b', 'z': 1j * 1j}", {"pad": "---", "raw": b"ab", "z": -1 + 0j}),
    ("{'pattern': '\\d+'}", {"pattern": "\\d+"}),  # an invalid escape: eval warns and keeps the backslash
]

# each fails ToolEyes' eval, or runs code there; all are rejected here, quickly
HOSTILE = [
    "__import__('os').system('echo hi')",
    "open('/etc/passwd').read()",
    "().__class__.__bases__[0].__subclasses__()",
    "{'q': 'x'}.get('q')",
    "{'q': 'x'}['q']",
    "lambda: 1",
    "[x for x in range(10)]",
    "{k: 1 for k in 'ab'}",
    "(x := 1)",
    "9 ** 9 ** 9",
    "2 ** 10 ** 8",
    "10 ** 100000",
    "'a' * 10 ** 9",
    "[0] * 10 ** 9",
    "1 << 10 ** 9",
    "'%0999999999d' % 1",
    "123456789 ** 123456789",
    "('a' * 10 ** 6) + ('b' * 10 ** 6)",
    "{'q': true}",
    "{'q': null}",
    "print('x')",
    "dict.fromkeys(range(10 ** 9))",
    "list(range(10 ** 9))",
    "f'{1}'",
    "1 if True else 2",
    "1 < 2",
    "1 and 2",
    "1 / 0",
    "{[]: 1}",
    "dict('ab')",
    "dict(**{1: 2})",
    "dict(q=1, **{'q': 2})",
    "[*5]",
    "{**[1]}",
    "10.0 ** 400",
    "-" * 150 + "1",
    "[" * 150 + "]" * 150,
    "1" + "+1" * 5000,
    "(" * 300 + ")" * 300,
    "{'q': 'x'} {'r': 'y'}",
    # each string is under the length limit, together they are too much to build
    "{" + ", ".join(f"'{n}': 'x' * 90000" for n in range(20)) + "}",
    "{'q': dict}",
    "{'q': 'x'}\nObservation: done",
    "",
    "\x00",
]


# (reasoning_format_check, json_format_check) as ToolEyes' utils.py gives them, worked out by hand
REPLIES = [
    ("prose without an action", "I will look up the weather in Paris.", False, False),
    ("two calls in one reply", "Thought: t\nAction: current_weather\nAction Input: {'q': 'Paris'}\n"
     "Thought: u\nAction: forecast\nAction Input: {'q': 'Paris'}", True, False),
    ("JSON true", 'Thought: t\nAction: current_weather\nAction Input: {"q": "Paris", "aqi": true}', True, False),
    ("broken brackets", "Thought: t\nAction: current_weather\nAction Input: {'q': 'Paris'", True, False),
    ("no Thought label", "Action: current_weather\nAction Input: {'q': 'Paris'}", False, False),
    ("empty action", "Thought: t\nAction: \nAction Input: {'q': 'Paris'}", False, True),
    ("input then prose", "Thought: t\nAction: current_weather\nAction Input: {'q': 'Paris'}\nDone.", True, False),
    ("a string input", "Thought: t\nAction: current_weather\nAction Input: 'Paris'", True, True),
    ("a built input", "Thought: t\nAction: current_weather\nAction Input: dict(q='Par' + 'is')", True, True),
]  # fmt: skip


@pytest.mark.parametrize(("name", "reply", "reasoning", "json_ok"), REPLIES)
def test_format_checks_on_wrong_replies_equal_tooleyes(
    name: str, reply: str, reasoning: bool, json_ok: bool
) -> None:
    assert (reasoning_format_ok(reply), json_format_ok(reply)) == (reasoning, json_ok), name


@pytest.mark.parametrize(("text", "value"), LITERAL_BUILDING)
def test_literal_building_action_inputs_evaluate_as_eval_does(text: str, value: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no warning escapes
        assert evaluate_literal_expression(text) == value
    assert json_format_ok(f"Thought: t\nAction: get_uuid\nAction Input: {text}")


@pytest.fixture
def no_eval(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("eval/exec called")

    monkeypatch.setattr(builtins, "eval", refuse)
    monkeypatch.setattr(builtins, "exec", refuse)


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_action_inputs_are_rejected_fast(text: str, no_eval: None) -> None:
    # CPU seconds, not wall time (a loaded machine stretched 0.05 s of work past a 0.5 s wall bound):
    # an input that got evaluated (9**9**9, a huge repeat) would spend minutes
    start = time.process_time()
    with pytest.raises(ExpressionRejected):
        evaluate_literal_expression(text)
    assert time.process_time() - start < 2
    assert not json_format_ok(f"Thought: t\nAction: get_uuid\nAction Input: {text}")


_ATOMS = st.sampled_from(
    ["1", "0", "-1", "2", "9", "10", "99", "1.5", "'a'", "b'x'", "None", "True", "[]", "{}", "()", "set()",
     "x", "os", "__import__", "open", "().__class__", "'%d'", "1e308", "[0]", "'ab'"]
)  # fmt: skip
_OPS = st.sampled_from(
    [" + ", " - ", " * ", " / ", " // ", " % ", " ** ", " << ", " >> ", " | ", " & ", " ^ "]
)


@st.composite
def _expressions(draw: st.DrawFn, depth: int = 0) -> str:
    if depth > 3 or draw(st.booleans()):
        return draw(_ATOMS)
    kind = draw(st.sampled_from(["binop", "unary", "list", "dict", "call", "attr", "paren"]))
    a, b = draw(_expressions(depth + 1)), draw(_expressions(depth + 1))
    if kind == "binop":
        return f"{a}{draw(_OPS)}{b}"
    if kind == "unary":
        return f"{draw(st.sampled_from(['-', '+', '~', 'not ']))}{a}"
    if kind == "list":
        return f"[{a}, *{b}]"
    if kind == "dict":
        return f"{{{a}: {b}, **{b}}}"
    if kind == "call":
        return f"{draw(st.sampled_from(['dict', 'list', 'tuple', 'set', 'len', 'eval']))}({a})"
    if kind == "attr":
        return f"({a}).__class__"
    return f"({a})"


@settings(max_examples=300, deadline=None)
@given(_expressions())
def test_any_expression_is_a_value_or_a_clean_rejection(text: str) -> None:
    start = time.perf_counter()
    try:
        value = evaluate_literal_expression(text)
    except ExpressionRejected:
        value = None
    assert time.perf_counter() - start < 0.5, text
    if isinstance(value, int):
        assert value.bit_length() <= MAX_INT_BITS


def test_compat_scores_literal_building_inputs_as_tooleyes(tasks: TaskSet, tmp_path: Path) -> None:
    task_id = _first(tasks, "Weather/weatherapi")
    outputs = [
        "Thought: weather in Paris\nAction: current_weather\nAction Input: {'q': 'Par' + 'is'}",
        "Thought: in French\nAction: current_weather\nAction Input: dict(q='Paris', lang='fr')",
        # days is no parameter of current_weather: a parameter hallucination
        "Thought: two days\nAction: current_weather\nAction Input: {'q': 'Paris', 'days': 2 * 1}",
        "Thought: sneaky\nAction: current_weather\nAction Input: {'q': __import__('os').getcwd()}",
        _finish("It is sunny in Paris."),
    ]
    trace = _episode(tasks, task_id, outputs, tmp_path)
    compat = ToolEyesSuite().score([trace], tasks, "compat")
    # ToolEyes' eval accepts the first three as we do; the fourth runs code under its eval (and
    # passes there), compat refuses to run it: a format failure (docs/evaluation.md lists this)
    assert compat.metrics["IF"] == pytest.approx(100 * 4 / 5)
    assert compat.per_task[task_id]["param_hallucinations"] == 1.0
    assert compat.metrics["tool_reality"] == pytest.approx(100 * (1 - 1 / 3))


def test_compat_judge_questions_quote_thoughts_as_tooleyes_cuts_them(
    tasks: TaskSet, tmp_path: Path, judge_server: _JudgeServer
) -> None:
    """ToolEyes' judge prompts take the text before the first "Action:" as the thought, with or
    without a "Thought:" label (its format check does need the label)."""
    assert judge_parts("I need a UUID.\nAction: get_uuid\nAction Input: {}") == ("I need a UUID.", "get_uuid")
    assert judge_parts("Thought: t\nAction: get_uuid\nAction Input: {}") == ("t", "get_uuid")
    assert judge_parts("no labels at all") is None
    task_id = _first(tasks, "Random/Random")
    outputs = ["I need a UUID first.\nAction: get_uuid\nAction Input: {'cnt': '1'}", _finish("done")]
    trace = _episode(tasks, task_id, outputs, tmp_path)
    judge = OpenAIJudge(judge_server.base_url, "judge-model")
    try:
        compat = ToolEyesSuite(judge).score([trace], tasks, "compat")
    finally:
        judge.close()
    assert compat.metrics["IF"] == 50.0  # the unlabelled reply fails the format check
    chains = [
        r["body"]["messages"][1]["content"]
        for r in judge_server.requests
        if "Thought chain" in r["body"]["messages"][1]["content"]
    ]
    assert chains and all("Turn 1:\nI need a UUID first." in c for c in chains)


# ---- end to end: the bundled task set over simulated tools ---------------------------------------


def _run_args(base_url: str, out: Path, ids: Sequence[str] = ()) -> list[str]:
    args = ["run", "--tasks", "tooleyes", "--agent", "llm", "--protocol", "react"]
    args += ["--base-url", base_url, "--model", "m", "--out", str(out)]
    for task_id in ids:
        args += ["--task-id", task_id]
    return args


def _traces(out: Path) -> dict[str, list[str]]:
    """The run's traces, without the measured latencies."""
    return {
        p.name: without_latencies(p.read_bytes())
        for p in sorted((out / "trial-0" / "tooleyes").glob("*.jsonl"))
    }


def test_all_382_queries_run_end_to_end_and_replay_byte_identically(tmp_path: Path) -> None:
    """`toolgym run --tasks tooleyes --agent llm` on a local OpenAI-compatible server: every
    query runs (no aborted episode), each calls its library's simulated tool without an error and
    finishes with ToolEyes' `finish`; `toolgym eval` scores them; a second process running some of
    the same episodes writes the same bytes."""
    runner = CliRunner()
    out = tmp_path / "run"
    with serve(FakeOpenAI(tooleyes_script)) as fake:
        result = runner.invoke(app, _run_args(fake.base_url, out))
        assert result.exit_code == 0, result.output
        summary = json.loads((out / "run.json").read_text(encoding="utf-8"))
        assert len(summary["episodes"]) == 382
        assert all(e["status"] == "terminated" and not e["error_counts"] for e in summary["episodes"])
        traces = _traces(out)
        assert len(traces) == 382
        for name in traces:
            trace = read_trace(out / "trial-0" / "tooleyes" / name)
            assert {t.backend for t in trace.header.tools} == {"simulated:deterministic"}
            call, finish = trace.steps
            assert call.actions[0]["type"] == "tool_call" and call.observations[0]["error"] is None
            assert finish.actions[0]["type"] == "final_answer"  # `Action: finish` is the protocol's
        some = sorted(traces)[::40]
        again = tmp_path / "again"
        child = subprocess.run(
            [
                sys.executable,
                "-m",
                "toolgym.cli",
                *_run_args(fake.base_url, again, [n.split(".")[0] for n in some]),
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert child.returncode == 0, child.stderr[-2000:]
    assert _traces(again) == {name: traces[name] for name in some}
    scored = runner.invoke(
        app, ["eval", str(out), "--suite", "tooleyes", "--tasks", "tooleyes"], env=_NO_JUDGE
    )
    assert scored.exit_code == 0, scored.output
    metrics = json.loads((out / "eval.fixed.json").read_text(encoding="utf-8"))["results"]["tooleyes"][
        "metrics"
    ]
    assert metrics["IF"] == 100.0 and metrics["tool_reality"] == 100.0
    assert {f"{s}/IF" for s in SCENARIOS} <= set(metrics)


_NO_JUDGE = {"TOOLGYM_JUDGE_BASE_URL": "", "TOOLGYM_JUDGE_MODEL": ""}


def test_eval_and_report_show_five_dimensions_per_scenario(tmp_path: Path) -> None:
    tasks = TaskSet.load(tooleyes_tasks_path())
    one_each = [next(t.id for t in tasks if t.category == s) for s in SCENARIOS]
    out = tmp_path / "run"
    runner = CliRunner()
    with serve(FakeOpenAI(tooleyes_script)) as fake:
        assert runner.invoke(app, _run_args(fake.base_url, out, one_each)).exit_code == 0
        judge = {
            "TOOLGYM_JUDGE_BASE_URL": fake.base_url,
            "TOOLGYM_JUDGE_MODEL": "judge",
            "TOOLGYM_JUDGE_CACHE": str(tmp_path / "judge.sqlite"),
        }
        scored = runner.invoke(
            app, ["eval", str(out), "--suite", "tooleyes", "--tasks", "tooleyes"], env=judge
        )
    assert scored.exit_code == 0, scored.output
    metrics = json.loads((out / "eval.fixed.json").read_text(encoding="utf-8"))["results"]["tooleyes"][
        "metrics"
    ]
    for scenario in SCENARIOS:
        for dimension in ("IF", "TS", "IU", "BP", "AO", "overall"):
            assert f"{scenario}/{dimension}" in metrics
        assert metrics[f"{scenario}/IU"] == 10 * JUDGE_SCORE  # the judge's 7 of 10
        assert metrics[f"{scenario}/BP"] == pytest.approx((10 * JUDGE_SCORE) ** 2 / 100)
    assert f"{SCENARIOS[0]}/TS" in scored.output
    reported = runner.invoke(app, ["report", str(out), "--tasks", "tooleyes"])
    assert reported.exit_code == 0, reported.output
    page = (out / "report.html").read_text(encoding="utf-8")
    assert (
        '<table class="grid"><thead><tr><th></th><th>IF</th><th>TS</th><th>IU</th><th>BP</th><th>AO</th>'
        in page
    )
    assert all(f"<td>{s}</td>" in page for s in SCENARIOS)
    assert "simulated:deterministic" in page


def test_the_oracle_cannot_play_tooleyes(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["run", "--tasks", "tooleyes", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "the oracle replays golden actions, and tooleyes/tooleyes-000 and 381 more has none" in flat(
        result.output
    )
    assert not (tmp_path / "run.json").exists()
