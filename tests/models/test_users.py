"""The LLM-played user (toolgym.models.users, toolgym.envs.users.LLMUser) against a real local
OpenAI-compatible HTTP server that plays the user from scripted completions; its calls recorded
in a cassette and replayed byte-identically with the server gone; timeouts, garbage and a user
that never stops."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.envs.test_rollouts import tree
from tests.models.fake_openai import FakeOpenAI, Fault, Reply, serve, text
from toolgym.actions import AskUser
from toolgym.cli import app
from toolgym.envs.agents import OracleAgent, ScriptedAgent
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.envs.users import STOP_SIGNAL, LLMUser
from toolgym.models.llm import ChatClient, LLMConfig
from toolgym.models.users import ChatUserLLM, llm_user
from toolgym.recorder.cassette import USER_LLM_TOOL, Cassette
from toolgym.running.trials import RunSummary
from toolgym.tasks import Task, TaskSet
from toolgym.tools import ToolSet
from toolgym.trace import read_trace

ROOT = Path(__file__).resolve().parents[2]
MULTITURN = ROOT / "fixtures" / "mock_tasks" / "multiturn.jsonl"
TASKS = TaskSet.load(MULTITURN)
TRANSFER = TASKS["multiturn-transfer-022"]  # asks for the account number and the amount


def config(fake: FakeOpenAI, **overrides: Any) -> LLMConfig:
    settings: dict[str, Any] = {"base_url": fake.base_url, "model": "user-model"}
    settings.update(overrides)
    return LLMConfig(**settings)


def plays_the_transfer_user(body: Mapping[str, Any]) -> Reply:
    """The user's side of the transfer conversation, by what the agent said last."""
    last = body["messages"][-1]["content"]
    if "account number" in last:
        return text("It's account 123456, and please move $150.")
    return text(f"Great, thanks! {STOP_SIGNAL}")


class CountingLLM:
    """A UserLLM that counts the calls that reach it."""

    def __init__(self, inner: ChatUserLLM) -> None:
        self.inner = inner
        self.model = inner.model
        self.calls = 0

    def chat(self, messages: Sequence[Mapping[str, str]], *, seed: int | None) -> str:
        self.calls += 1
        return self.inner.chat(messages, seed=seed)


def oracle_episode(user: Any, task: Task, trace_dir: Path | None = None, **env_kwargs: Any) -> Any:
    env = ToolEnv(ToolSet(), [task], user=user, **env_kwargs)
    try:
        return run_episode(env, OracleAgent(env.protocol), task, trace_dir=trace_dir)
    finally:
        env.close()


def test_the_llm_user_answers_the_oracle_and_the_episode_is_solved(tmp_path: Path) -> None:
    with serve(FakeOpenAI(plays_the_transfer_user)) as fake, ChatClient(config(fake, seed=None)) as client:
        result = oracle_episode(llm_user(client), TRANSFER, tmp_path)
    assert result.reward == 1.0 and result.scores["state"] == 1.0 and result.error_counts == {}
    (request,) = fake.requests
    system, opening, question = request["messages"]
    assert request["model"] == "user-model" and request["seed"] == TRANSFER.seed
    assert system["role"] == "system" and TRANSFER.user is not None
    assert TRANSFER.user.persona in system["content"] and STOP_SIGNAL in system["content"]
    assert "Never mention these unless the assistant asks for them: account number" in system["content"]
    assert "- account number: 123456" in system["content"]
    assert opening == {"role": "assistant", "content": TRANSFER.query}
    assert question["role"] == "user" and "account number" in question["content"]
    assert result.trace_path is not None
    trace = read_trace(result.trace_path)
    assert trace.header.env_config["user"] == "llm:user-model"
    observation = trace.steps[0].observations[0]
    assert (
        observation["type"] == "user" and observation["text"] == "It's account 123456, and please move $150."
    )
    assert observation["content"]["user"] == {
        "simulator": "llm:user-model",
        "turn": 1,
        "asked": True,
        "slots": [],
        "stop": False,
    }


def test_the_stop_signal_ends_the_episode() -> None:
    agent_says = [AskUser(text="What is your account number?"), AskUser(text="Anything else?")]
    with serve(FakeOpenAI(plays_the_transfer_user)) as fake, ChatClient(config(fake)) as client:
        env = ToolEnv(ToolSet(), [TRANSFER], user=llm_user(client))
        result = run_episode(env, ScriptedAgent(env.protocol, agent_says), TRANSFER)
        env.close()
    assert result.terminated and result.steps == 2 and result.final_answer is None
    assert env.user.name == "llm:user-model" and len(fake.requests) == 2
    # the second request holds the first exchange as the model said it
    assert fake.requests[1]["messages"][-2] == {
        "role": "assistant",
        "content": "It's account 123456, and please move $150.",
    }


def test_recorded_multiturn_episode_replays_byte_identically_with_no_llm(tmp_path: Path) -> None:
    path = tmp_path / "cassette.sqlite"
    with serve(FakeOpenAI(plays_the_transfer_user)) as fake, ChatClient(config(fake)) as client:
        with Cassette(path, mode="record") as cassette:
            recorded = oracle_episode(llm_user(client, cassette=cassette), TRANSFER, tmp_path / "record")
            assert cassette.stats.recorded == 1 and cassette.stats.live_calls == 1
            assert [k["tool"] for k in cassette.recorded_keys()] == [USER_LLM_TOOL]
        url = fake.base_url
    # the server is gone, and the user LLM counts every call that would reach it
    dead = ChatClient(LLMConfig(base_url=url, model="user-model", max_retries=0, timeout_s=0.5))
    counting = CountingLLM(ChatUserLLM(dead))
    with Cassette(path, mode="replay") as replay:
        replayed = oracle_episode(LLMUser(replay.wrap_user_llm(counting)), TRANSFER, tmp_path / "replay")
        assert replay.stats.hits == 1 and replay.stats.live_calls == 0 and replay.stats.misses == 0
    assert counting.calls == 0
    dead.close()
    assert recorded.trace_path is not None and replayed.trace_path is not None
    assert replayed.trace_path.read_bytes() == recorded.trace_path.read_bytes()
    assert replayed.reward == 1.0


def test_a_replay_miss_is_an_infra_error_naming_the_request(tmp_path: Path) -> None:
    path = tmp_path / "cassette.sqlite"
    Cassette(path, mode="record").close()  # an empty recording
    client = ChatClient(LLMConfig(base_url="http://127.0.0.1:9/v1", model="user-model", max_retries=0))
    with Cassette(path, mode="replay") as replay:
        env = ToolEnv(ToolSet(), [TRANSFER], user=llm_user(client, cassette=replay))
        env.reset(options={"task": TRANSFER.id})
        obs, _, terminated, truncated, info = env.step(AskUser(text="What is your account number?"))
        env.close()
        assert replay.stats.misses == 1 and replay.stats.live_calls == 0
    assert info["error_kinds"] == ["infra_error"] and not (terminated or truncated)
    assert "cassette miss in strict replay" in obs and USER_LLM_TOOL in obs
    client.close()


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        (Fault(status=200, delay_s=2.0, body="{}"), "timed out"),  # outlasts the client's timeout
        (Fault(status=200, body="<html>not json</html>"), "response is not JSON"),
        (Fault(status=200, body='{"choices": [{"message": {"content": null}}]}'), "no text content"),
        (Fault(status=503), "attempts failed"),
    ],
)
def test_a_broken_user_endpoint_is_tried_once_more_then_aborts_the_episode(
    fault: Fault, message: str
) -> None:
    """One bad answer: the step's second try reaches the user, nothing shows. Two in a row: the
    step ends the episode aborted (unscored, `info["aborted"]` says why), never an exception."""
    fake = FakeOpenAI(plays_the_transfer_user, faults=deque([fault]))
    with serve(fake), ChatClient(config(fake, timeout_s=0.5, max_retries=0)) as client:
        env = ToolEnv(ToolSet(), [TRANSFER], user=llm_user(client))
        env.reset(options={"task": TRANSFER.id})
        obs, _, terminated, truncated, info = env.step(AskUser(text="What is your account number?"))
        assert info["error_kinds"] == [] and not (terminated or truncated) and info["user"]["turns"] == 1
        assert obs == "Observation: It's account 123456, and please move $150."
        fake.faults.extend([fault, fault])
        obs, reward, terminated, truncated, info = env.step(AskUser(text="How much?"))
        env.close()
    assert info["error_kinds"] == ["infra_error"] and message in obs and info["user"]["turns"] == 1
    assert (reward, terminated, truncated) == (0.0, False, True) and message in info["aborted"]


def test_garbage_text_is_kept_clipped_and_an_empty_reply_is_an_infra_error() -> None:
    replies = iter(["x" * 10_000, "   ", "   "])  # the empty reply twice: the step's retry too
    with (
        serve(FakeOpenAI(lambda _body: text(next(replies)))) as fake,
        ChatClient(config(fake)) as client,
    ):
        env = ToolEnv(ToolSet(), [TRANSFER], user=llm_user(client))
        env.reset(options={"task": TRANSFER.id})
        _, _, _, _, info = env.step(AskUser(text="?"))
        assert info["observations"][0]["type"] == "user"
        assert info["observations"][0]["text"].endswith("[... 6000 characters cut]")
        _, _, _, _, info = env.step(AskUser(text="?"))
        env.close()
    assert info["error_kinds"] == ["infra_error"] and "empty reply" in info["observations"][0]["text"]


def test_a_user_that_never_stops_is_bounded_by_the_turn_limit() -> None:
    assert TRANSFER.user is not None
    limit = TRANSFER.user.max_turns
    with (
        serve(FakeOpenAI(lambda _body: text("Hmm, let me think about it."))) as fake,
        ChatClient(config(fake)) as client,
    ):
        env = ToolEnv(ToolSet(), [TRANSFER], user=llm_user(client), max_steps=100)
        agent = ScriptedAgent(env.protocol, [AskUser(text="Are you sure?")] * 100)
        result = run_episode(env, agent, TRANSFER)
        env.close()
    assert not result.terminated and result.steps == limit + 1 and len(fake.requests) == limit


def test_chat_user_llm_names_its_model() -> None:
    client = ChatClient(LLMConfig(base_url="http://127.0.0.1:9/v1", model="m-1"))
    assert ChatUserLLM(client).model == "m-1" and llm_user(client).name == "llm:m-1"
    client.close()


# ---- toolgym run with an LLM user ------------------------------------------------------------
def tells_what_it_knows(body: Mapping[str, Any]) -> Reply:
    """Any scenario's user: the facts its system prompt lists, whatever the agent asked."""
    system = body["messages"][0]["content"]
    known = system.split("What you know:\n", 1)[1].split("\nNever mention", 1)[0]
    return text(" ".join(line.removeprefix("- ") + "." for line in known.splitlines()))


RUN_TASKS = ["multiturn-alarm-001", "multiturn-transfer-022", "multiturn-alarm-002"]


def run_with_llm_user(base_url: str, out: Path, *extra: str) -> Any:
    args = ["run", "--tasks", str(MULTITURN), "--trials", "2", "--out", str(out)]
    args += [arg for task_id in RUN_TASKS for arg in ("--task-id", task_id)]
    args += ["--user-base-url", base_url, "--user-model", "user-model", "--user-api-key-env", "USER_KEY"]
    return CliRunner().invoke(app, [*args, *extra])


def test_run_plays_the_user_with_an_llm_in_process_and_on_workers_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("USER_KEY", "user-secret")
    fake = FakeOpenAI(tells_what_it_knows, api_key="user-secret")  # a request without the key is refused
    with serve(fake):
        one = run_with_llm_user(fake.base_url, tmp_path / "one")
        assert one.exit_code == 0, one.output
        assert len(fake.requests) == 6  # the oracle asks once per episode: 3 tasks x 2 trials
        workers = run_with_llm_user(fake.base_url, tmp_path / "workers", "--workers", "2")
        assert workers.exit_code == 0, workers.output
        assert len(fake.requests) == 12
    runs = {name: tree(tmp_path / name) for name in ("one", "workers")}
    assert runs["workers"] == runs["one"] and len(runs["one"]) == 7  # 6 traces and run.json
    assert all(r["model"] == "user-model" and r["seed"] == 0 for r in fake.requests)
    summary = RunSummary.load(tmp_path / "one")
    assert [e.success for e in summary.episodes] == [True] * 6
    assert summary.settings["user"] == {
        "simulator": "llm:user-model",
        "model": "user-model",
        "base_url": fake.base_url,
    }
    assert b"user-secret" not in runs["one"]["run.json"]
    trace = read_trace(tmp_path / "one" / "trial-0" / "multiturn" / "multiturn-transfer-022.seed0.jsonl")
    assert trace.header.env_config["user"] == "llm:user-model"
    reply = trace.steps[0].observations[0]
    assert reply["type"] == "user" and reply["content"]["user"]["simulator"] == "llm:user-model"
    assert reply["text"] == "account number: 123456. amount: $150."


def test_run_without_user_options_keeps_the_rule_based_user(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["run", "--tasks", str(MULTITURN), "--task-id", RUN_TASKS[0], "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert "user" not in RunSummary.load(tmp_path).settings
    (path,) = tmp_path.rglob("*.jsonl")
    assert read_trace(path).header.env_config["user"] == "rule_based"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--user-base-url", "http://127.0.0.1:9/v1"], "needs both --user-base-url and --user-model"),
        (["--user-model", "m"], "needs both --user-base-url and --user-model"),
        (["--user-api-key-env", "USER_KEY"], "needs --user-base-url and --user-model"),
        (
            [
                "--user-base-url",
                "http://127.0.0.1:9/v1",
                "--user-model",
                "m",
                "--user-api-key-env",
                "NO_SUCH_KEY",
            ],
            "NO_SUCH_KEY",
        ),
    ],
)
def test_incomplete_user_options_stop_the_run_before_any_episode(
    tmp_path: Path, options: list[str], message: str
) -> None:
    args = ["run", "--tasks", str(MULTITURN), "--task-id", RUN_TASKS[0], "--out", str(tmp_path / "run")]
    result = CliRunner().invoke(app, [*args, *options], env={"COLUMNS": "200"})
    assert result.exit_code == 2 and message in " ".join(result.output.split())
    assert not (tmp_path / "run").exists()


# ---- toolgym record / replay with an LLM user ------------------------------------------------
def test_record_keeps_the_user_llm_calls_and_replay_needs_no_user_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("USER_KEY", "user-secret")
    golden = tmp_path / "golden"
    fake = FakeOpenAI(tells_what_it_knows, api_key="user-secret")
    with serve(fake):
        args = ["record", "--tasks", str(MULTITURN), "--out", str(golden)]
        args += [
            "--user-base-url",
            fake.base_url,
            "--user-model",
            "user-model",
            "--user-api-key-env",
            "USER_KEY",
        ]
        recorded = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
        assert recorded.exit_code == 0, recorded.output
    episodes = len(TASKS)
    assert len(fake.requests) == episodes  # the oracle asks the user once in every episode
    with Cassette(golden / "cassette.sqlite", mode="replay") as cassette:
        assert sum(k["tool"] == USER_LLM_TOOL for k in cassette.recorded_keys()) == episodes
    trace = read_trace(golden / "multiturn" / "multiturn-transfer-022.seed0.jsonl")
    assert trace.header.env_config["user"] == "llm:user-model"
    assert trace.steps[0].observations[0]["text"] == "account number: 123456. amount: $150."
    # the server is gone: replay answers the user from the cassette alone, with no user options
    replayed = CliRunner().invoke(
        app, ["replay", str(golden), "--out", str(tmp_path / "replay")], env={"COLUMNS": "200"}
    )
    assert replayed.exit_code == 0, replayed.output
    assert f"{episodes}/{episodes} byte-identical traces" in replayed.output
    assert "live tool calls: 0;" in replayed.output and "misses: 0" in replayed.output
    assert len(fake.requests) == episodes
    golden_traces = {k: v for k, v in tree(golden).items() if k.endswith(".jsonl")}
    assert tree(tmp_path / "replay") == golden_traces


def test_a_user_llm_answer_missing_from_the_cassette_fails_the_replay(tmp_path: Path) -> None:
    golden = tmp_path / "golden"
    with serve(FakeOpenAI(tells_what_it_knows)) as fake:
        args = ["record", "--tasks", str(MULTITURN), "--out", str(golden), "--mode", "live"]
        args += ["--user-base-url", fake.base_url, "--user-model", "user-model"]
        assert CliRunner().invoke(app, args).exit_code == 0
        # a cassette with the tool calls but not the user's answers: the user is never called live
        args = ["record", "--tasks", str(MULTITURN), "--out", str(tmp_path / "rule")]
        assert CliRunner().invoke(app, args).exit_code == 0
        calls = len(fake.requests)
        path = golden / "multiturn" / "multiturn-transfer-022.seed0.jsonl"
        result = CliRunner().invoke(
            app,
            [
                "replay",
                str(path),
                "--cassette",
                str(tmp_path / "rule" / "cassette.sqlite"),
                "--out",
                str(tmp_path / "r"),
            ],
            env={"COLUMNS": "200"},
        )
        assert len(fake.requests) == calls  # the live server was up, and still nothing reached it
    assert result.exit_code == 1 and "misses: 1" in " ".join(result.output.split())
