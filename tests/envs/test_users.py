"""Simulated users (toolgym.envs.users) and their seam in ToolEnv: scenario validation, the
rule-based user, turn limits, stop signals, failing simulators, and the shipped multi-turn tasks
solved by the oracle with the rule-based user on real mock-app worlds."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from gymnasium.utils.env_checker import check_env
from pydantic import ValidationError

from toolgym.actions import AskUser, FinalAnswer, NoCall, ToolCall
from toolgym.envs.agents import OracleAgent, ScriptedAgent
from toolgym.envs.demo import default_task_paths
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.envs.users import (
    I_DONT_KNOW,
    SATISFIED_REPLY,
    RuleBasedUser,
    ScriptedUser,
    UserReply,
    UserSimulator,
)
from toolgym.errors import InfraError
from toolgym.tasks import AnswerSpec, ScenarioError, Task, TaskSet, UserScenario
from toolgym.tools import ToolSet
from toolgym.trace import read_trace

ROOT = Path(__file__).resolve().parents[2]
MULTITURN = ROOT / "fixtures" / "mock_tasks" / "multiturn.jsonl"
TASKS = TaskSet.load(MULTITURN)

SCENARIO = UserScenario(
    persona="A bank customer.",
    goal="move money to savings",
    known={"account_number": "123456", "amount": "$150", "pet_name": "Rex"},
    must_not_volunteer=["account_number"],
    satisfied_when="the money is moved",
    satisfied_phrases=[["moved"], ["150"]],
    slot_keywords={"amount": ["how much"]},
    max_turns=3,
)


def chat_task(**changes: Any) -> Task:
    base = Task(
        id="chat",
        query="Move some money to my savings.",
        answer=AnswerSpec(whitelist=[["150"]]),
        user=SCENARIO,
    )
    return base.model_copy(update=changes)


# ---- the scenario ------------------------------------------------------------------------------
def test_a_scenario_missing_fields_is_a_typed_error_naming_the_task(tmp_path: Path) -> None:
    line = {"id": "broken-001", "query": "q", "user": {"persona": "p", "known": {"a": "1"}}}
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"id": "fine", "query": "q"}) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(ScenarioError) as caught:
        TaskSet.load(path)
    error = caught.value
    assert error.task_id == "broken-001" and isinstance(error, ValueError)
    assert "goal" in error.problem and "satisfied_when" in error.problem and f"{path}:2" in str(error)
    # built directly, the task's validation error names the task too
    with pytest.raises(ValidationError, match="task 'broken-001': invalid user scenario: goal"):
        Task.model_validate(line)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"must_not_volunteer": ["pin"]}, "must_not_volunteer names slots the user does not know: pin"),
        ({"slot_keywords": {"pin": ["code"]}}, "slot_keywords names slots the user does not know: pin"),
        ({"max_turns": 0}, "max_turns"),
        ({"persona": ""}, "persona"),
        ({"mood": "grumpy"}, "mood"),
    ],
)
def test_a_scenario_that_contradicts_itself_is_refused(change: dict[str, Any], message: str) -> None:
    data = {**SCENARIO.model_dump(), **change}
    with pytest.raises(ValidationError, match=message):
        Task.model_validate({"id": "t", "query": "q", "user": data})


def test_tasks_without_a_scenario_dump_and_hash_as_before() -> None:
    task = Task(id="plain", query="q", user_replies=["yes"])
    dumped = task.model_dump(mode="json")
    assert "user" not in dumped and "user" not in json.loads(task.model_dump_json())
    # every field as before scenarios existed, so the trace header's task_hash is unchanged
    assert set(dumped) == set(Task.model_fields) - {"user", "milestones", "minefields", "events", "time"}
    with_user = chat_task()
    assert Task.model_validate_json(with_user.model_dump_json()) == with_user
    assert "user" in Task.model_json_schema(mode="serialization")["properties"]


# ---- the simulators ----------------------------------------------------------------------------
def test_rule_based_user_answers_asked_slots_and_keeps_private_ones() -> None:
    user = RuleBasedUser()
    user.start(chat_task(), seed=0)
    assert isinstance(user, UserSimulator)
    reply = user.reply("How much should I move?", asked=True)
    assert reply == UserReply(text="Amount: $150.", slots=("amount",))
    # nothing asked that the user knows: it offers what it may volunteer, never the account number
    reply = user.reply("Which bank branch do you use?", asked=True)
    assert reply.text == f"{I_DONT_KNOW} What I can tell you: Pet name: Rex." and reply.slots == ("pet_name",)
    assert user.reply("And the branch's city?", asked=True) == UserReply(text=I_DONT_KNOW)
    # asked by name, the private fact is told
    reply = user.reply("What is your account number?", asked=True)
    assert reply.text == "Account number: 123456." and not reply.stop
    assert user.reply("I have moved $150 to savings.", asked=False) == UserReply(
        text=SATISFIED_REPLY, stop=True
    )


def test_rule_based_user_is_deterministic_and_restarts() -> None:
    def conversation() -> list[UserReply]:
        user = RuleBasedUser()
        user.start(chat_task(), seed=0)
        return [user.reply(m, asked=True) for m in ("Who?", "amounts?", "Who?")]

    first = conversation()
    assert first == conversation()
    assert first[0].slots == ("amount", "pet_name")  # volunteered, then never again
    assert first[2].text == I_DONT_KNOW


def test_scripted_user_plays_the_replies_then_has_nothing_to_add() -> None:
    user = ScriptedUser()
    user.start(Task(id="s", query="q", user_replies=["one"]), seed=0)
    assert user.reply("?", asked=True).text == "one"
    assert user.reply("?", asked=True).text == "The user has nothing to add."


# ---- the seam in ToolEnv -----------------------------------------------------------------------
def test_gymnasium_env_checker_passes_with_a_simulated_user() -> None:
    check_env(ToolEnv(ToolSet(), [chat_task(), TASKS["multiturn-lock-013"]]), skip_render_check=True)


def test_env_routes_questions_and_plain_messages_to_the_scenario_user() -> None:
    env = ToolEnv(ToolSet(), [chat_task()])
    _, info = env.reset(options={"task": "chat"})
    assert info["user"] == {"simulator": "rule_based", "turns": 0, "max_turns": 3, "ended": None}
    obs, _, terminated, truncated, info = env.step("Ask User: how much?")
    assert obs == "Observation: Amount: $150." and not (terminated or truncated)
    observation = info["observations"][0]
    assert observation["type"] == "user"
    assert observation["content"] == {
        "user": {"simulator": "rule_based", "turn": 1, "asked": True, "slots": ["amount"], "stop": False}
    }
    obs, *_ = env.step(NoCall(thought="What is your account number?"))  # a plain message
    assert obs == "Observation: Account number: 123456."
    obs, *_ = env.step(NoCall())  # no text: nothing to say to the user
    assert "No tool was called" in obs
    assert env.user.name == "rule_based" and info["user"]["turns"] == 1


def test_the_user_stopping_ends_the_episode() -> None:
    env = ToolEnv(ToolSet(), [chat_task()])
    env.reset(options={"task": "chat"})
    obs, reward, terminated, truncated, info = env.step(NoCall(thought="Done: moved $150 to savings."))
    assert terminated and not truncated and obs == f"Observation: {SATISFIED_REPLY}"
    assert info["user"]["ended"] == "stop"
    # the user left satisfied, but before any final answer: the reward is the answer's
    assert info["scores"] == {"answer": 0.0, "reward": 0.0, "user_turns": 1.0, "user_satisfied": 1.0}
    assert reward == 0.0


def test_user_scores_count_turns_and_satisfaction_beside_the_reward() -> None:
    env = ToolEnv(ToolSet(), [chat_task()])
    env.reset(options={"task": "chat"})
    env.step(AskUser(text="How much?"))
    _, reward, terminated, _, info = env.step(FinalAnswer(text="I sent 150 euros."))
    assert terminated and reward == 1.0
    # "moved" was never said: the answer is right, the user is not (yet) satisfied
    assert info["scores"] == {"answer": 1.0, "reward": 1.0, "user_turns": 1.0, "user_satisfied": 0.0}


def test_turn_limit_truncates_the_episode_and_says_why() -> None:
    env = ToolEnv(ToolSet(), [chat_task()], max_steps=50)
    env.reset(options={"task": "chat"})
    for _ in range(3):
        _, _, terminated, truncated, info = env.step(AskUser(text="Anything else?"))
        assert not (terminated or truncated)
    obs, _, terminated, truncated, info = env.step(AskUser(text="Anything else?"))
    assert truncated and not terminated and info["step"] == 4
    assert info["user"] == {"simulator": "rule_based", "turns": 3, "max_turns": 3, "ended": "turn_limit"}
    assert (
        "limit of 3 user turns" in obs and info["observations"][0]["content"]["user"]["ended"] == "turn_limit"
    )
    assert "scores" in info  # scored like any truncated episode


class _Failing:
    """A simulator whose endpoint is gone (InfraError) or that has a bug (anything else)."""

    name = "failing"

    def __init__(self, exc: Exception) -> None:
        self.exc = exc
        self.calls = 0

    def start(self, task: Task, seed: int) -> None:
        pass

    def reply(self, message: str, *, asked: bool) -> UserReply:
        self.calls += 1
        raise self.exc


@pytest.mark.parametrize("exc", [InfraError("connection refused"), KeyError("bug")])
def test_a_failing_user_is_an_infra_error_never_an_exception(exc: Exception) -> None:
    """The simulator's failure is not the agent's: asked once more, then the step ends the
    episode aborted, unscored."""
    user = _Failing(exc)
    env = ToolEnv(ToolSet(), [chat_task()], user=user)
    env.reset(options={"task": "chat"})
    obs, reward, terminated, truncated, info = env.step(AskUser(text="How much?"))
    assert (reward, terminated, truncated) == (0.0, False, True) and info["error_kinds"] == ["infra_error"]
    assert "the user simulator failing failed" in obs and "scores" not in info
    assert info["aborted"].startswith("the user simulator failing failed")
    assert info["user"]["turns"] == 0  # a failed turn is not a user turn
    assert user.calls == (2 if isinstance(exc, InfraError) else 1)  # a bug is not tried again


def test_tasks_without_a_scenario_keep_the_scripted_user_whatever_the_seam_says() -> None:
    task = Task(id="old", query="q", user_replies=["Use 7."])
    env = ToolEnv(ToolSet(), [task], user=_Failing(InfraError("never called")))
    _, info = env.reset(options={"task": "old"})
    assert "user" not in info
    obs, _, _, _, info = env.step(AskUser(text="Which?"))
    assert obs == "Observation: Use 7." and info["observations"][0]["content"] is None
    assert "user" not in info
    obs, *_ = env.step(NoCall(thought="a thought, not a message"))
    assert "No tool was called" in obs


# ---- the shipped multi-turn tasks --------------------------------------------------------------
def test_multiturn_tasks_are_shipped_in_the_demo() -> None:
    assert MULTITURN.name in [p.name for p in default_task_paths()]
    assert len(TASKS) >= 30
    assert all(re.fullmatch(r"multiturn-[a-z]+-\d{3}", t.id) for t in TASKS)
    assert all(t.category == "multi_turn" and t.user is not None and t.apps for t in TASKS)


@pytest.mark.parametrize("task", TASKS.tasks, ids=lambda t: t.id)
def test_the_agent_must_ask_and_the_rule_based_user_tells_what_the_chain_needs(task: Task) -> None:
    scenario = task.user
    assert scenario is not None and task.expected_state and task.answer is not None
    asks = [g.action for g in task.golden if isinstance(g.action, AskUser)]
    calls = [g.action for g in task.golden if isinstance(g.action, ToolCall)]
    assert asks and calls and isinstance(task.golden[-1].action, FinalAnswer)
    user = RuleBasedUser()
    user.start(task, seed=task.seed)
    told = {slot for ask in asks for slot in user.reply(ask.text, asked=True).slots}
    assert told == set(scenario.known)
    arguments = json.dumps([c.arguments for c in calls])
    for slot, value in scenario.known.items():
        # a fact the chain uses that the query does not give: only the user can tell it
        assert value.strip("$.") in arguments, slot
        assert value not in task.query, slot


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("multiturn")
    env = ToolEnv(ToolSet(), TASKS)
    try:
        for task in TASKS:
            result = run_episode(env, OracleAgent(env.protocol), task, trace_dir=out)
            assert result.terminated and result.reward == 1.0, (task.id, result.scores)
            assert result.scores["state"] == 1.0 and result.error_counts == {}
            asks = sum(isinstance(g.action, AskUser) for g in task.golden)
            assert result.scores["user_turns"] == asks and result.scores["user_satisfied"] == 1.0
    finally:
        env.close()
    return out


def test_oracle_with_the_rule_based_user_solves_every_task(oracle_run: Path) -> None:
    traces = sorted(oracle_run.glob("*.jsonl"))
    assert len(traces) == len(TASKS)
    for path in traces:
        trace = read_trace(path)
        user_turns = [
            o["content"]["user"] for s in trace.steps for o in s.observations if o["type"] == "user"
        ]
        assert user_turns and all(u["simulator"] == "rule_based" and not u["stop"] for u in user_turns)
        assert trace.end is not None and trace.end.status == "terminated"
        assert trace.header.env_config == {"max_steps": 10, "user": "rule_based"}


def test_multiturn_traces_are_byte_identical_across_runs(oracle_run: Path, tmp_path: Path) -> None:
    env = ToolEnv(ToolSet(), TASKS)
    try:
        for task in TASKS.tasks[::7]:
            result = run_episode(env, OracleAgent(env.protocol), task, trace_dir=tmp_path)
            assert result.trace_path is not None
            assert result.trace_path.read_bytes() == (oracle_run / result.trace_path.name).read_bytes()
    finally:
        env.close()


def test_an_agent_that_never_stops_asking_is_bounded() -> None:
    task = TASKS["multiturn-transfer-022"]
    assert task.user is not None
    env = ToolEnv(ToolSet(), [task], max_steps=100)
    agent = ScriptedAgent(env.protocol, [AskUser(text="Tell me more?")] * 50)
    try:
        result = run_episode(env, agent, task)
    finally:
        env.close()
    assert not result.terminated and result.steps == task.user.max_turns + 1
