"""Teacher-forced episodes: the golden history is fed, the agent's next action is scored, the
golden action (not the agent's) runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolgym import (
    Action,
    AnswerSpec,
    FinalAnswer,
    GoldenStep,
    NoCall,
    Task,
    ToolCall,
    ToolEnv,
    ToolSet,
    tool,
)
from toolgym.envs.agents import OracleAgent, ScriptedAgent
from toolgym.envs.runner import run_episode
from toolgym.envs.teacher import (
    GoldenTurn,
    StepScore,
    TeacherForcedEnv,
    golden_from_trace,
    run_teacher_forced,
    score_step,
)
from toolgym.mocks.world import MockWorld
from toolgym.protocols.base import RawOutput
from toolgym.trace import read_trace

CALLED: list[tuple[int, int]] = []


@tool(category="logic")
def add(a: int, b: int) -> int:
    """Add two integers."""
    CALLED.append((a, b))
    return a + b


TASK = Task(
    id="sums",
    query="What is (1 + 2) + 4?",
    tools=["add"],
    golden=[
        GoldenStep(action=ToolCall(name="add", arguments={"a": 1, "b": 2})),
        GoldenStep(action=ToolCall(name="add", arguments={"a": 3, "b": 4})),
        GoldenStep(action=FinalAnswer(text="7")),
    ],
    answer=AnswerSpec(whitelist=[["7"]]),
)


class Recorder:
    """Plays fixed outputs and keeps what it was shown."""

    name = "recorder"

    def __init__(self, outputs: list[RawOutput | Action]) -> None:
        self.outputs = outputs
        self.seen: list[tuple[str, dict[str, Any]]] = []

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        self.seen = []

    def act(self, observation: str, info: dict[str, Any]) -> RawOutput | Action:
        self.seen.append((observation, info))
        return self.outputs[len(self.seen) - 1]


def env() -> ToolEnv:
    return ToolEnv(ToolSet([add]), [TASK])


def test_oracle_scores_full_marks() -> None:
    e = env()
    result = run_teacher_forced(e, OracleAgent(e.protocol), TASK)
    assert [s.reward for s in result.steps] == [1.0, 1.0, 1.0]
    assert result.summary() == {
        "steps": 3.0,
        "inst_acc": 1.0,
        "tool_acc": 1.0,
        "arg_acc": 1.0,
        "answer_acc": 1.0,
        "reward": 1.0,
    }


def test_agent_is_scored_but_the_golden_action_runs() -> None:
    e = env()
    agent = Recorder(
        [
            "I would rather chat.",  # no action: not parsed
            ToolCall(name="add", arguments={"a": 4, "b": 3}),  # right tool, wrong arguments
            "Thought: done\nFinal Answer: it is 7",
        ]
    )
    CALLED.clear()
    result = run_teacher_forced(e, agent, TASK)
    first, second, third = result.steps
    assert (first.parsed, first.type_match, first.tool_match, first.args_match) == (
        False,
        False,
        False,
        False,
    )
    assert first.error is not None
    assert (second.parsed, second.tool_match, second.args_match, second.reward) == (True, True, False, 0.0)
    assert (third.answer_score, third.tool_match, third.reward) == (1.0, None, 1.0)
    assert CALLED == [(1, 2), (3, 4)]  # only golden calls ran
    # at golden step i the agent saw the golden prefix: prompt + (golden output, observation) pairs
    histories = [info["history"] for _, info in agent.seen]
    assert [len(h) for h in histories] == [1, 3, 5]
    assert [info["golden_step"] for _, info in agent.seen] == [0, 1, 2]
    assert histories[2][1]["role"] == "assistant" and "add" in histories[2][1]["content"]
    assert histories[2][2] == {"role": "observation", "content": "Observation: 3"}
    assert agent.seen[2][0] == "Observation: 7"
    assert result.summary()["arg_acc"] == 0.0 and result.summary()["inst_acc"] == pytest.approx(2 / 3)


def test_gym_style_loop_and_its_guards() -> None:
    tf = TeacherForcedEnv(env())
    with pytest.raises(RuntimeError, match="reset"):
        tf.step("x")
    obs, info = tf.reset(options={"task": TASK})
    assert obs.startswith("What is") and info["teacher_forced"] and info["golden_steps"] == 3
    rewards = []
    for output in (TASK.golden[0].action, TASK.golden[1].action, FinalAnswer(text="8")):
        _, reward, terminated, truncated, info = tf.step(output)
        rewards.append(reward)
    assert rewards == [1.0, 1.0, 0.0] and terminated and not truncated
    assert info["score"]["answer_score"] == 0.0 and info["env_info"]["final_answer"] == "7"
    with pytest.raises(RuntimeError, match="over"):
        tf.step("x")
    with pytest.raises(ValueError, match="no golden steps"):
        tf.reset(options={"task": Task(id="empty", query="?", tools=["add"])})


def test_teacher_forcing_from_a_golden_trace(tmp_path: Path) -> None:
    e = env()
    actions: list[Action] = [g.action for g in TASK.golden]

    class Sloppy(ScriptedAgent):
        name = "sloppy"

        def act(self, observation: str, info: dict[str, Any]) -> RawOutput | Action:
            if self._next == 1 and not getattr(self, "stumbled", False):
                self.stumbled = True
                return "Action add with a=3"  # a format error in the golden trace
            return super().act(observation, info)

    result = run_episode(e, Sloppy(e.protocol, actions), TASK, seed=3, trace_dir=tmp_path, golden=True)
    trace = read_trace(result.trace_path or tmp_path)
    assert len(trace.steps) == 4 and trace.steps[1].error_kinds == ["format_error"]
    turns = golden_from_trace(trace)
    assert [t.actions for t in turns] == [(a,) for a in actions]
    scored = run_teacher_forced(e, OracleAgent(e.protocol), TASK, golden=trace)
    assert [s.reward for s in scored.steps] == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="of task"):
        TeacherForcedEnv(e).reset(options={"task": TASK.model_copy(update={"id": "other"}), "golden": trace})


def test_mock_world_follows_the_golden_chain_whatever_the_agent_says() -> None:
    world = MockWorld(["banking"])
    a, b = (r["account_id"] for r in world.rows("bank_accounts", {"status": "active"})[:2])
    world.close()
    move = ToolCall(name="transfer", arguments={"from_account_id": a, "to_account_id": b, "amount": 5})
    task = Task(
        id="bank",
        query="Send 5.",
        apps=["banking"],
        tools=["transfer"],
        golden=[GoldenStep(action=move), GoldenStep(action=FinalAnswer(text="sent"))],
        answer=AnswerSpec(whitelist=[["sent"]]),
    )
    e = ToolEnv(ToolSet(), [task])
    wrong = ToolCall(name="transfer", arguments={"from_account_id": a, "to_account_id": b, "amount": 500})
    tf = TeacherForcedEnv(e)
    tf.reset(options={"task": task})
    _, reward, *_ = tf.step(wrong)
    *_, info = tf.step(FinalAnswer(text="sent"))
    assert reward == 0.0 and info["score"]["reward"] == 1.0
    assert info["env_info"]["scores"]["state"] == 1.0  # the world reached the golden state


def test_custom_scorer_and_no_call_turns() -> None:
    task = Task(
        id="quiet", query="Just say hi.", golden=[GoldenStep(action=NoCall(thought="no tool needed"))]
    )
    seen: list[tuple[int, GoldenTurn, Any]] = []

    def scorer(t: Task, index: int, turn: GoldenTurn, predicted: Any, error: str | None) -> StepScore:
        seen.append((index, turn, predicted))
        return score_step(t, index, turn, predicted, error)

    e = ToolEnv(ToolSet([add]), [task])
    result = run_teacher_forced(e, Recorder([NoCall(thought="hi")]), task, scorer=scorer)
    assert result.steps[0].type_match and result.steps[0].reward == 1.0
    assert seen[0][0] == 0 and seen[0][2] == [NoCall(thought="hi")]


def test_teacher_forcing_is_a_gymnasium_wrapper_with_the_env_parse() -> None:
    import gymnasium as gym

    from toolgym.protocols.base import MAX_OUTPUT_CHARS

    inner = env()
    tf = TeacherForcedEnv(gym.wrappers.RecordEpisodeStatistics(inner))
    assert isinstance(tf, gym.Wrapper) and tf.unwrapped is inner
    tf.reset(options={"task": TASK})
    # the same refusal (and message) as an end-to-end step of the same output
    too_long = "x" * (MAX_OUTPUT_CHARS + 1)
    refusal = inner.parse_action(too_long)
    assert not isinstance(refusal, list) and refusal.error is not None
    _, reward, _, _, info = tf.step(too_long)
    assert reward == 0.0 and info["score"]["parsed"] is False
    assert info["score"]["error"] == refusal.error.message
    with pytest.raises(TypeError, match="wraps a ToolEnv"):
        TeacherForcedEnv(gym.make("CartPole-v1"))


def test_hostile_predictions_are_scored_not_raised() -> None:
    """Predictions with arguments JSON cannot hold (deep, NaN, bytes, lone surrogates) score as
    wrong arguments; the golden chain goes on."""
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(5000):
        node["a"] = {}
        node = node["a"]
    e = env()
    agent = Recorder(
        [
            ToolCall(name="add", arguments={"a": deep, "b": float("nan")}),
            ToolCall(name="add", arguments={"a": b"\xff", "b": "\ud800"}),
            "Final Answer: 7 \ud800",
        ]
    )
    result = run_teacher_forced(e, agent, TASK)
    first, second, third = result.steps
    assert (first.tool_match, first.args_match, second.tool_match, second.args_match) == (
        True,
        False,
        True,
        False,
    )
    assert third.answer_score == 1.0
    json.dumps(first.predicted) and json.dumps(second.predicted)
