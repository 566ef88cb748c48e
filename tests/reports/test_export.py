"""`toolgym export`: runs as training data (checked against OpenAI's format rules and the openai
SDK's own message types, loaded back with `datasets`) and as OpenTelemetry spans (the SDK's
in-memory exporter). The runs are real episodes on the bundled MTU mock tasks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter
from typer.testing import CliRunner

from tests.envs import dynamic_fixture as dyn
from tests.models.fake_openai import FakeOpenAI, Reply, calls, serve, text
from tests.reports.export_checks import check_exports_equal_requests, export
from tests.running.test_commands import llm_args
from toolgym.actions import Action, FinalAnswer, ToolCall
from toolgym.cli import app
from toolgym.envs.agents import OracleAgent, ScriptedAgent
from toolgym.envs.demo import mock_task_paths
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.protocols import OpenAIProtocol, ReActProtocol
from toolgym.protocols.base import RawOutput
from toolgym.reports.export import (
    EpisodeFilter,
    ExportFormat,
    ToolSchemas,
    export_records,
    finished_episodes,
    openai_format_problems,
)
from toolgym.running.trials import load_traces
from toolgym.tasks import Task, TaskSet
from toolgym.tools import ToolSet
from toolgym.trace import TurnTokens, read_trace

MTU = next(p for p in mock_task_paths() if p.stem == "mtu")
TASKS = TaskSet.load(MTU)
TASK_IDS = ["mtu-balance-002", "mtu-transfer-011", "mtu-door-003"]


class GarblesFirst(ScriptedAgent):
    """Its first output of an episode does not parse; then its script (`start` sets `_garbled`)."""

    _garbled = False

    def act(self, observation: str, info: dict[str, Any]) -> RawOutput | Action:
        if not self._garbled:
            self._garbled = True
            return "this is not an assistant message"
        return super().act(observation, info)


class WrongAnswer(GarblesFirst):
    """The golden calls, then a wrong final answer (reward 0); its first output does not parse."""

    name = "wrong"

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        calls = [s.action for s in task.golden if not isinstance(s.action, FinalAnswer)]
        self._actions = [*calls, FinalAnswer(text="I could not find out.")]
        self._next = 0
        self._garbled = False


class TokenOracle(OracleAgent):
    """The oracle, reporting token ids the way an agent whose server returned them does: each
    prompt is the previous prompt and completion plus the env's tokens."""

    name = "token-oracle"

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        super().start(task, observation, info)
        self._ids = [1, 2, 3]
        self.turn_tokens: TurnTokens | None = None

    def act(self, observation: str, info: dict[str, Any]) -> RawOutput | Action:
        prompt = [*self._ids, 900 + self._next] if self.turn_tokens is not None else list(self._ids)
        completion = [100 + self._next, 200 + self._next]
        self.turn_tokens = TurnTokens(prompt_ids=prompt, completion_ids=completion, logprobs=[-0.5, -0.25])
        self._ids = prompt + completion
        return super().act(observation, info)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run")
    env = ToolEnv(ToolSet(), TASKS, protocol="openai")
    agents = [OracleAgent(env.protocol), WrongAnswer(env.protocol), TokenOracle(env.protocol)]
    for trial, agent in enumerate(agents):
        for task_id in TASK_IDS:
            run_episode(env, agent, TASKS[task_id], seed=0, trace_dir=out / f"trial-{trial}" / "mtu")
    env.close()
    return out


def _episodes(run_dir: Path, keep: EpisodeFilter | None = None) -> list[Any]:
    loaded, problems = load_traces(run_dir)
    assert not problems
    return finished_episodes(loaded, {t.id: t for t in TASKS}, keep or EpisodeFilter())


def test_openai_records_follow_the_fine_tuning_rules(run_dir: Path) -> None:
    from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionMessageParam

    records = export_records(_episodes(run_dir), ExportFormat.openai)
    assert len(records) == 9
    messages = TypeAdapter(list[ChatCompletionMessageParam])
    tools = TypeAdapter(list[ChatCompletionFunctionToolParam])
    for record in records:
        assert openai_format_problems(record) == []
        messages.validate_python(record["messages"])
        tools.validate_python(record["tools"])
        assert record["parallel_tool_calls"] is False
        assert {"task_id", "seed", "reward"} <= record["metadata"].keys()
    transfer = next(
        r for r in records if r["metadata"]["task_id"] == "mtu-transfer-011" and r["metadata"]["trial"] == 0
    )
    roles = [m["role"] for m in transfer["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    call = transfer["messages"][2]["tool_calls"][0]
    assert (
        call["function"]["name"] == "transfer_funds" and transfer["messages"][3]["tool_call_id"] == call["id"]
    )
    # no request kept (the oracle asks no model): what the LLM agent would have sent, the
    # protocol's instructions and its tools, the reserved ask_user / no_call functions included
    env = ToolEnv(ToolSet(), TASKS, protocol="openai")
    _, info = env.reset(options={"task": "mtu-transfer-011"})
    assert transfer["messages"][0] == {"role": "system", "content": info["instructions"]}
    assert transfer["tools"] == OpenAIProtocol().tools_json(env.offered)
    env.close()
    wrong = next(r for r in records if r["metadata"]["trial"] == 1)
    assert wrong["messages"][2] == {
        "role": "assistant",
        "content": "this is not an assistant message",
        "weight": 0,
    }
    assert wrong["messages"][3]["role"] == "user" and "format_error" in wrong["messages"][3]["content"]
    assert wrong["metadata"]["reward"] == 0.0

    # the checker catches what the rules forbid
    broken = {**transfer, "messages": transfer["messages"][:4], "extra": 1}
    assert openai_format_problems(broken) == [
        "unknown keys ['extra']",
        "the last message must be the assistant's",
    ]


def test_filters(run_dir: Path) -> None:
    assert len(_episodes(run_dir, EpisodeFilter(passed_only=True))) == 6
    assert len(_episodes(run_dir, EpisodeFilter(min_reward=0.5))) == 6
    assert len(_episodes(run_dir, EpisodeFilter(task_sets=frozenset({"other"})))) == 0
    kept = _episodes(run_dir, EpisodeFilter(categories=frozenset({"write"})))
    assert {e.task.id for e in kept} == {"mtu-transfer-011"} and len(kept) == 3


def test_hf_and_sharegpt_load_with_datasets(run_dir: Path, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    runner = CliRunner()
    for fmt in ("hf", "sharegpt"):
        out = tmp_path / f"{fmt}.jsonl"
        result = runner.invoke(
            app, ["export", str(run_dir), "--format", fmt, "--out", str(out), "--passed-only"]
        )
        assert result.exit_code == 0, result.output
        data = datasets.load_dataset("json", data_files=str(out), split="train")
        assert len(data) == 6 and set(data["reward"]) == {1.0} and set(data["seed"]) == {0}
        if fmt == "hf":
            row = next(r for r in data if r["task_id"] == "mtu-transfer-011")
            assert row["messages"][0]["role"] == "system"
            call = row["messages"][2]["tool_calls"][0]["function"]
            assert call["name"] == "transfer_funds" and call["arguments"]["amount"] == 500
            assert row["messages"][3]["role"] == "tool" and row["messages"][3]["name"] == "transfer_funds"
            assert row["tools"][0]["type"] == "function"
        else:
            for row in data:
                turns = row["conversations"]
                # LLaMA-Factory: human/observation at odd positions, gpt/function_call at even ones
                assert all(t["from"] in ("human", "observation") for t in turns[0::2])
                assert all(t["from"] in ("gpt", "function_call") for t in turns[1::2])
                assert turns[-1]["from"] == "gpt"
                assert row["system"].startswith("You are an assistant that can call the functions")
            calls = [
                json.loads(t["value"])
                for r in data
                for t in r["conversations"]
                if t["from"] == "function_call"
            ]
            assert {"name": "get_account_balance", "arguments": {"account_number": "123456"}} in calls
            assert json.loads(data[0]["tools"])[0]["name"]


def test_formats_without_weights_never_learn_a_reply_that_did_not_parse(run_dir: Path) -> None:
    """hf (TRL) and sharegpt (LLaMA-Factory) learn every assistant turn they hold: the wrong
    agent's first output, which did not parse, is in neither, nor is the env's answer to it; the
    turns after it are (openai keeps it, weighted 0)."""
    episodes = _episodes(run_dir)
    wrong = [e for e in episodes if e.loaded.trial == 1]
    garbled = "this is not an assistant message"
    for record in export_records(wrong, ExportFormat.hf):
        assert garbled not in json.dumps(record) and "format_error" not in json.dumps(record)
        assert [m["role"] for m in record["messages"]][1:3] == ["user", "assistant"]
        assert record["messages"][-1]["content"] == "I could not find out."
    for record in export_records(wrong, ExportFormat.sharegpt):
        assert garbled not in json.dumps(record) and "format_error" not in json.dumps(record)
        assert record["conversations"][-1] == {"from": "gpt", "value": "I could not find out."}
    for record in export_records(wrong, ExportFormat.openai):
        assert [m for m in record["messages"] if m.get("weight") == 0] == [
            {"role": "assistant", "content": garbled, "weight": 0}
        ]


def test_preference_pairs(run_dir: Path) -> None:
    records = export_records(_episodes(run_dir), ExportFormat.preference)
    assert len(records) == len(TASK_IDS)  # oracle (reward 1) against the wrong answer (reward 0)
    for record in records:
        assert set(record) == {"input", "preferred_output", "non_preferred_output", "metadata"}
        assert (
            record["metadata"]["preferred_reward"] == 1.0
            and record["metadata"]["non_preferred_reward"] == 0.0
        )
        assert record["input"]["messages"][-1]["role"] == "user"  # they part at the first output
        assert record["preferred_output"][0]["role"] == "assistant"
        assert record["non_preferred_output"][0]["content"] == "this is not an assistant message"
        assert (
            openai_format_problems({"messages": [*record["input"]["messages"], *record["preferred_output"]]})
            == []
        )


class GarbledThenGolden(GarblesFirst, OracleAgent):
    """The oracle, after a first output that does not parse (reward 1 all the same)."""

    name = "garbled-then-golden"

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        super().start(task, observation, info)
        self._garbled = False


def test_no_preference_pair_prefers_a_reply_that_did_not_parse(tmp_path: Path) -> None:
    """The better trial (reward 1) parts from the worse (reward 0) at a reply that did not parse:
    preferring it would teach the format error, so the task gives no pair."""
    env = ToolEnv(ToolSet(), TASKS, protocol="openai")
    task = TASKS["mtu-balance-002"]
    gives_up = ScriptedAgent(env.protocol, [FinalAnswer(text="I could not find out.")])
    for trial, agent in enumerate([GarbledThenGolden(env.protocol), gives_up]):
        run_episode(env, agent, task, seed=0, trace_dir=tmp_path / f"trial-{trial}" / "mtu")
    env.close()
    episodes = _episodes(tmp_path)
    assert sorted(e.reward for e in episodes) == [0.0, 1.0]
    assert export_records(episodes, ExportFormat.preference) == []


def test_token_trajectories(run_dir: Path) -> None:
    records = export_records(_episodes(run_dir), ExportFormat.tokens)
    assert len(records) == len(TASK_IDS)  # only the token oracle's traces kept token ids
    balance = next(r for r in records if r["task_id"] == "mtu-balance-002")
    assert balance["turns"][0] == {
        "prompt_ids": [1, 2, 3],
        "completion_ids": [100, 200],
        "logprobs": [-0.5, -0.25],
    }
    assert balance["input_ids"] == [1, 2, 3, 100, 200, 901, 101, 201]
    assert balance["loss_mask"] == [0, 0, 0, 1, 1, 0, 1, 1]
    assert balance["logprobs"] == [None, None, None, -0.5, -0.25, None, -0.5, -0.25]


def test_tool_schemas_skip_unknown_tools(run_dir: Path) -> None:
    episode = _episodes(run_dir)[0]
    assert [t["function"]["name"] for t in ToolSchemas(ToolSet()).of(episode)] == TASKS[episode.task.id].tools


def test_otel_spans_follow_the_genai_conventions(run_dir: Path) -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import StatusCode

    from toolgym.reports.otel import export_spans

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    episodes = [e for e in _episodes(run_dir) if e.task.id == "mtu-transfer-011" and e.loaded.trial in (0, 1)]
    count = export_spans(episodes, provider, start_ns=1_000_000_000)
    spans = exporter.get_finished_spans()
    assert count == len(spans) == 2 + 2 + 1 + 3 + 1  # per episode: the agent, its chats, its tool calls
    roots = [s for s in spans if s.parent is None]
    assert [s.name for s in roots] == ["invoke_agent oracle", "invoke_agent wrong"]
    assert roots[0].attributes is not None and roots[0].attributes["toolgym.reward"] == 1.0
    tools = [s for s in spans if s.attributes and s.attributes["gen_ai.operation.name"] == "execute_tool"]
    assert [s.name for s in tools] == ["execute_tool transfer_funds"] * 2
    for span in tools:
        assert span.attributes is not None and span.attributes["gen_ai.tool.call.id"]
        assert span.parent is not None and span.parent.span_id == next(
            r.context.span_id for r in roots if r.context.trace_id == span.context.trace_id
        )
    chats = [s for s in spans if s.attributes and s.attributes["gen_ai.operation.name"] == "chat"]
    garbled = [s for s in chats if s.status.status_code is StatusCode.ERROR]
    assert (
        len(garbled) == 1
        and garbled[0].attributes is not None
        and garbled[0].attributes["error.type"] == "format_error"
    )
    assert all(
        s.start_time is not None and s.end_time is not None and s.start_time < s.end_time for s in spans
    )


def test_export_command_otel_and_errors(run_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.sdk")
    runner = CliRunner()
    out = tmp_path / "spans.jsonl"
    result = runner.invoke(
        app, ["export", str(run_dir), "--format", "otel", "--out", str(out), "--passed-only"]
    )
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert sum(line["name"].startswith("invoke_agent") for line in lines) == 6
    upload = tmp_path / "upload.jsonl"
    result = runner.invoke(app, ["export", str(run_dir), "--out", str(upload), "--strip-metadata"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in upload.read_text().splitlines()]
    assert len(rows) == 9 and all(set(r) == {"messages", "tools", "parallel_tool_calls"} for r in rows)
    bad = runner.invoke(app, ["export", str(run_dir), "--format", "csv"])
    assert bad.exit_code == 2 and "choose one of" in bad.output
    other = tmp_path / "tasks.jsonl"
    TaskSet([Task(id="x", query="q")]).dump(other)
    unknown = runner.invoke(app, ["export", str(run_dir), "--tasks", str(other)])
    assert unknown.exit_code == 2 and "none of the task sets" in unknown.output


def test_export_command_sends_otlp_to_a_collector(run_dir: Path) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from toolgym.http import ServerThread

    received: list[bytes] = []

    async def traces(request: Request) -> Response:
        received.append(await request.body())
        return Response(b"", media_type="application/x-protobuf")

    collector = Starlette(routes=[Route("/v1/traces", traces, methods=["POST"])])
    with ServerThread(collector) as url:
        result = CliRunner().invoke(
            app,
            [
                "export",
                str(run_dir),
                "--format",
                "otel",
                "--otlp-endpoint",
                f"{url}/v1/traces",
                "--passed-only",
            ],
        )
    assert result.exit_code == 0, result.output
    names = []
    for body in received:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        names += [s.name for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    assert names.count("invoke_agent oracle") == 3 and "execute_tool transfer_funds" in names


def test_export_names_and_counts_a_trace_cut_short(run_dir: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    cut = copy / "trial-0" / "mtu" / "mtu-door-003.seed0.jsonl"
    data = cut.read_bytes()
    cut.write_bytes(data[: len(data) - 30])  # a copy cut short: the end record is torn
    last = data.count(b"\n")
    result = CliRunner().invoke(app, ["export", str(copy), "--out", str(tmp_path / "out.jsonl")])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "1 incomplete traces (no end record), not exported:" in out
    assert f"{cut}:{last}: incomplete trace: the file ends in the middle of line {last}" in out
    assert "8 episodes kept" in out


# ---- exports equal what the model saw: a real run against an OpenAI-compatible server -----------
FISH_OIL = "family of 5"  # a substring of the fish-oil-days prompt: the fake server's script key
OCR_CALL = ToolCall(name="OCR", arguments={"image": "image/fish_oil.png"})
CALC_CALL = ToolCall(name="Calculator", arguments={"expression": "290 // 5"})
ANSWER = "The bottle holds 290 softgels: it lasts 58 days."


def _fish_oil_script(protocol: str) -> dict[str, list[Reply]]:
    """Three turns that solve fish-oil-days, the first of them a reply that does not parse."""
    if protocol == "openai":
        return {
            FISH_OIL: [
                calls(("OCR", '{"image": "image/fish_oil.png"')),  # cut short: not JSON
                calls(("OCR", OCR_CALL.arguments), content="Read the label first."),
                calls(("Calculator", CALC_CALL.arguments)),
                text(ANSWER),
            ]
        }
    react = ReActProtocol()
    return {
        FISH_OIL: [
            text("I will read the label."),  # no Action: a format error
            text(react.format_action(OCR_CALL.model_copy(update={"thought": "Read the label."}))),
            text(react.format_action(CALC_CALL)),
            text(react.format_action(FinalAnswer(text=ANSWER))),
        ]
    }


@pytest.mark.parametrize("protocol", ["openai", "react"])
def test_every_export_carries_the_requests_the_model_was_sent(protocol: str, tmp_path: Path) -> None:
    """toolgym run --agent llm against an OpenAI-compatible server, then each export format: for
    every turn, the exported messages up to that turn and the tools are the request the trace
    recorded for it (the system message included), and the model's reply follows them."""
    from tests.models.fake_openai import render_prompt, tokenize
    from toolgym.envs.demo import demo_tasks_path

    run = tmp_path / "run"
    with serve(FakeOpenAI(_fish_oil_script(protocol))) as fake:
        args = ["run", "--agent", "llm", "--base-url", fake.base_url, "--model", "fake-model"]
        args += ["--protocol", protocol, "--token-ids", "--tasks", str(demo_tasks_path())]
        result = CliRunner().invoke(app, [*args, "--task-id", "fish-oil-days", "--out", str(run)])
    assert result.exit_code == 0, result.output
    checked = check_exports_equal_requests(next(run.rglob("fish-oil-days.seed0.jsonl")), run, tmp_path)
    trace, requests, exported = checked.trace, checked.requests, checked.messages
    assert trace.end is not None and trace.end.reward == 1.0 and len(trace.steps) == 4
    assert trace.steps[0].error_kinds == ["format_error"]
    assert [r["messages"] for r in requests] == [r["messages"] for r in fake.requests]  # as sent
    assert (checked.tools == []) == (protocol == "react")
    for step, request in zip(trace.steps, requests, strict=True):
        # rendered through the (fake) server's chat template, the exported prefix is the prompt
        n = len(request["messages"])
        assert step.tokens is not None and tokenize(render_prompt(exported[:n])) == step.tokens.prompt_ids
    assert exported[-1]["content"].endswith(ANSWER)
    assert openai_format_problems(checked.record) == (
        [] if protocol == "react" else ["message 2: arguments of OCR are not JSON"]
    )
    # the token ids: the first turn, which did not parse, is seen and never learnt
    (tokens,) = export(run, "tokens", tmp_path / "tokens.jsonl")
    assert [t.get("weight") for t in tokens["turns"]] == [0, None, None, None]
    first = trace.steps[0].tokens
    assert first is not None and tokens["input_ids"][: len(first.prompt_ids)] == first.prompt_ids
    start = len(first.prompt_ids)
    assert tokens["loss_mask"][start : start + len(first.completion_ids)] == [0] * len(first.completion_ids)
    assert sum(tokens["loss_mask"]) == sum(len(s.tokens.completion_ids) for s in trace.steps[1:] if s.tokens)


def test_a_step_mode_export_marks_the_model_reply_and_learns_the_golden_history(tmp_path: Path) -> None:
    """`toolgym run --mode step`: each request holds the golden history, never the model's own
    predictions. The export is the last request and the model's last reply: the golden replies
    (learnt, in the ReAct form the prompt asks for: a Thought, then the action) and the model's
    reply, weighted 0 in openai and left out of hf and sharegpt when it did not parse. A reply
    that did not parse earlier is in no request, and marks no golden reply."""
    from toolgym.envs.demo import demo_tasks_path

    react = ReActProtocol()
    garbled = "I will read the label."  # no Action: a format error
    script = {FISH_OIL: [text(garbled), text(react.format_action(CALC_CALL)), text("It lasts long.")]}
    run = tmp_path / "run"
    with serve(FakeOpenAI(script)) as fake:
        task_options = ["--tasks", str(demo_tasks_path()), "--task-id", "fish-oil-days"]
        args = llm_args(fake, run, "--mode", "step", "--protocol", "react", *task_options)
        result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    task = TaskSet.load(demo_tasks_path())["fish-oil-days"]
    (record,) = export(run, "openai", tmp_path / "openai.jsonl")
    messages = record["messages"]
    assert [m["role"] for m in messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert messages[-1] == {"role": "assistant", "content": "It lasts long.", "weight": 0}
    golden = [messages[2], messages[4]]
    assert all("weight" not in m for m in golden) and garbled not in json.dumps(record)
    for message, step in zip(golden, task.golden, strict=False):
        assert message["content"].startswith("Thought: ")
        (parsed,) = react.parse(message["content"])
        assert parsed.model_copy(update={"thought": None}) == step.action
    (hf,) = export(run, "hf", tmp_path / "hf.jsonl")
    assert hf["messages"] == messages[:5]  # the golden history, up to its last reply
    (sharegpt,) = export(run, "sharegpt", tmp_path / "sharegpt.jsonl")
    # under ReAct the env answers in a user message (`Observation: ...`): a human turn
    assert [t["from"] for t in sharegpt["conversations"]] == ["human", "gpt", "human", "gpt"]
    assert sharegpt["conversations"][-1]["value"] == messages[4]["content"]


def test_a_step_mode_run_without_requests_is_refused_in_one_line(tmp_path: Path) -> None:
    """The oracle asks no model: its step-mode trace holds its predictions, not the golden history
    it was shown, so no record could be what a model saw."""
    from toolgym.envs.demo import demo_tasks_path

    run = tmp_path / "run"
    args = ["run", "--mode", "step", "--tasks", str(demo_tasks_path()), "--task-id", "fish-oil-days"]
    assert CliRunner().invoke(app, [*args, "--out", str(run)]).exit_code == 0
    result = CliRunner().invoke(app, ["export", str(run), "--out", str(tmp_path / "out.jsonl")])
    assert result.exit_code == 2 and not (tmp_path / "out.jsonl").exists()
    assert "a step-mode trace of an agent that kept no requests (oracle)" in " ".join(result.output.split())


def test_oracle_react_exports_teach_the_form_the_prompt_asks_for(tmp_path: Path) -> None:
    """The ReAct prompt asks for a Thought before every Action and Final Answer: every golden reply
    of an oracle run's export has one, and parses back to the task's golden action."""
    run = tmp_path / "run"
    args = [
        "run",
        "--protocol",
        "react",
        "--tasks",
        str(MTU),
        *[a for i in TASK_IDS for a in ("--task-id", i)],
    ]
    assert CliRunner().invoke(app, [*args, "--out", str(run)]).exit_code == 0
    react = ReActProtocol()
    records = export(run, "hf", tmp_path / "hf.jsonl")
    assert len(records) == len(TASK_IDS)
    for record in records:
        replies = [m["content"] for m in record["messages"] if m["role"] == "assistant"]
        golden = TASKS[record["task_id"]].golden
        assert len(replies) == len(golden)
        for reply, step in zip(replies, golden, strict=True):
            assert reply.startswith("Thought: ")
            (parsed,) = react.parse(reply)
            assert parsed.model_copy(update={"thought": None}) == step.action


def test_a_responses_run_exports_its_system_message_tools_and_calls(tmp_path: Path) -> None:
    """--api responses: the export is in chat form, with the request's system message, its tools
    (flat Responses tools nested as chat function schemas) and each call paired by its call_id."""
    from toolgym.envs.demo import demo_tasks_path

    script = {
        FISH_OIL: [calls(("OCR", OCR_CALL.arguments), ("Calculator", CALC_CALL.arguments)), text(ANSWER)]
    }
    run = tmp_path / "run"
    with serve(FakeOpenAI(script)) as fake:
        task_options = ["--tasks", str(demo_tasks_path()), "--task-id", "fish-oil-days"]
        result = CliRunner().invoke(app, llm_args(fake, run, "--api", "responses", *task_options))
        assert result.exit_code == 0, result.output
        first = fake.requests[0]
    (record,) = export(run, "openai", tmp_path / "openai.jsonl")
    assert record["messages"][0] == first["input"][0] and record["messages"][1] == first["input"][1]
    assert record["tools"] == [
        {"type": "function", "function": {k: t[k] for k in ("name", "description", "parameters", "strict")}}
        for t in first["tools"]
    ]
    assert [m["role"] for m in record["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    ids = [c["id"] for c in record["messages"][2]["tool_calls"]]
    assert ids == ["fake_0_0", "fake_0_1"] == [m["tool_call_id"] for m in record["messages"][3:5]]
    assert record["messages"][-1] == {"role": "assistant", "content": ANSWER}
    assert openai_format_problems(record) == []


# ---- a world that moves: notifications are what the model saw after the step's tool messages -----
def _dynamic_script(protocol: str) -> dict[str, list[Reply]]:
    """Ask, wait for the reply (its notification ends the wait), answer (tests/envs/dynamic_fixture.py)."""
    ask, wait, answer = dyn.actions()
    if protocol == "openai":
        assert isinstance(ask, ToolCall) and isinstance(wait, ToolCall)
        return {
            dyn.QUERY_KEY: [
                calls((ask.name, ask.arguments)),
                calls((wait.name, wait.arguments)),
                text(dyn.FINAL),
            ]
        }
    react = ReActProtocol()
    return {dyn.QUERY_KEY: [text(react.format_action(a)) for a in (ask, wait, answer)]}


def _notification_texts(trace_path: Path) -> list[str]:
    trace = read_trace(trace_path)
    return [o["text"] for s in trace.steps for o in s.observations if o.get("type") == "notification"]


@pytest.mark.parametrize("protocol", ["openai", "react"])
def test_a_dynamic_episodes_exports_carry_the_notifications_the_model_was_sent(
    protocol: str, tmp_path: Path
) -> None:
    """The invariant above on a world that moves: each notification reached the model in the next
    request, after the step's tool messages, and every export carries it there."""
    run = tmp_path / "run"
    with serve(FakeOpenAI(_dynamic_script(protocol))) as fake:
        args = ["--protocol", protocol, "--token-ids", "--tasks", str(dyn.write_task_file(tmp_path))]
        result = CliRunner().invoke(app, llm_args(fake, run, *args))
    assert result.exit_code == 0, result.output
    trace_path = next(run.rglob(f"{dyn.TASK_ID}.seed0.jsonl"))
    checked = check_exports_equal_requests(trace_path, run, tmp_path)
    notes = _notification_texts(trace_path)
    assert len(notes) == 2 and checked.trace.end is not None and checked.trace.end.reward == 1.0
    messages = checked.messages
    if protocol == "openai":  # a user message each, right after the step's tool message
        for note in notes:
            at = messages.index({"role": "user", "content": note})
            assert messages[at - 1]["role"] == "tool" and messages[at + 1]["role"] == "assistant"
    else:  # the step's observation text: the tool result's line, then the notification's
        for note in notes:
            (seen,) = [m for m in messages if m["role"] == "user" and note in m["content"]]
            assert seen["content"].endswith("\nObservation: " + note)
    (sharegpt,) = export(run, "sharegpt", tmp_path / "sharegpt.jsonl")
    turns = sharegpt["conversations"]
    assert [t["from"] in ("human", "observation") for t in turns] == [i % 2 == 0 for i in range(len(turns))]
    assert all(any(note in t["value"] for t in turns) for note in notes)


@pytest.mark.parametrize("protocol", ["openai", "react"])
def test_a_dynamic_episode_without_requests_exports_the_notifications_as_the_agent_sends_them(
    protocol: str, tmp_path: Path
) -> None:
    """A scripted agent's trace keeps no requests: the export rebuilds what the LLM agent would have
    sent, each notification a user message after the step's tool message (openai), or the line
    after the tool result's in the step's observation (react)."""
    env = ToolEnv(tasks=[dyn.dynamic_task()], protocol=protocol)
    run = tmp_path / "run"
    agent = ScriptedAgent(env.protocol, dyn.actions())
    run_episode(env, agent, env.tasks[dyn.TASK_ID], seed=0, trace_dir=run)
    env.close()
    notes = _notification_texts(run / f"{dyn.TASK_ID}.seed0.jsonl")
    tasks = dyn.write_task_file(tmp_path)

    def exported(fmt: str) -> dict[str, Any]:
        out = tmp_path / f"{fmt}.jsonl"
        args = ["export", str(run), "--format", fmt, "--tasks", str(tasks), "--out", str(out)]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        (record,) = [json.loads(line) for line in out.read_text().splitlines()]
        assert isinstance(record, dict)
        return record

    record = exported("openai")
    roles = [m["role"] for m in record["messages"]]
    assert openai_format_problems(record) == []
    if protocol == "react":
        assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
        assert [record["messages"][i]["content"].split("\n")[-1] for i in (3, 5)] == [
            "Observation: " + note for note in notes
        ]
        return
    assert roles == ["system", "user", "assistant", "tool", "user", "assistant", "tool", "user", "assistant"]
    assert [record["messages"][i]["content"] for i in (4, 7)] == notes
    hf = exported("hf")
    assert [m["content"] for m in hf["messages"] if m["role"] == "user"][1:] == notes
