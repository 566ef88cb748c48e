from __future__ import annotations

from typing import Any

import pytest

from toolgym.envs.rewards import LexicalSimilarity, answer_matches, score_answer
from toolgym.tasks import AnswerSpec


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The bottle lasts 58 days.", True),
        ("58 day", True),
        ("It lasts 580 days.", False),  # whole words only
        ("It lasts fifty-eight days.", True),
        ("about 58.5 days", False),  # the blacklist alias 58.5 is present
        ("", False),
    ],
)
def test_whitelist_blacklist(text: str, expected: bool) -> None:
    spec = AnswerSpec(whitelist=[["58", "fifty-eight"], ["days", "day"]], blacklist=[["58.5"]])
    assert answer_matches(text, spec) is expected


def test_case_insensitive_phrase_and_symbols() -> None:
    spec = AnswerSpec(whitelist=[["Golden Gate Bridge"], ["$23.50"]])
    assert answer_matches("the golden gate bridge costs $23.50 to cross", spec)
    assert not answer_matches("the golden gate costs $23.50", spec)
    assert not answer_matches("the golden gate bridge costs $23.500", spec)


def test_regex_metacharacters_are_literal() -> None:
    spec = AnswerSpec(whitelist=[["C++"], ["a.b"]])
    assert answer_matches("I like C++ and a.b", spec)
    assert not answer_matches("I like C and axb", spec)


def test_reference_answers_by_similarity() -> None:
    spec = AnswerSpec(references=["A cat sleeping on a sofa"])
    sim = LexicalSimilarity()
    close = score_answer("a cat sleeping on the sofa", spec, sim)
    far = score_answer("stock prices fell sharply", spec, sim)
    assert 0.8 < close <= 1.0
    assert far < 0.5


def test_no_spec_or_no_answer_scores_zero() -> None:
    assert score_answer(None, AnswerSpec(whitelist=[["x"]])) == 0.0
    assert score_answer("x", None) == 0.0


def test_combined_weighs_named_rewards_and_reports_each_part() -> None:
    from toolgym.actions import FinalAnswer
    from toolgym.envs.rewards import Episode, EpisodeStep, answer_reward, combined
    from toolgym.tasks import Task

    task = Task(id="t", query="q", answer=AnswerSpec(whitelist=[["58"]]))
    episode = Episode(task=task, steps=[EpisodeStep(0, "58", [FinalAnswer(text="58 days")], [])])
    reward = combined(
        {"answer": (answer_reward, 0.75), "steps": (lambda _t, e: float(len(e.steps) <= 0), 0.25)}
    )
    assert reward(task, episode) == {"answer": 1.0, "steps": 0.0, "reward": 0.75}


def test_golden_end_state_is_replayed_once_per_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolgym.actions import ToolCall
    from toolgym.envs import rewards
    from toolgym.mocks import rewards as mock_rewards
    from toolgym.tasks import GoldenStep, Task

    replays: list[int] = []
    real = mock_rewards.replay_golden_state_hash

    def counted(*args: object, **kwargs: object) -> str:
        replays.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(mock_rewards, "replay_golden_state_hash", counted)
    # an empty cache: another test in this process may have replayed the same chain already
    monkeypatch.setattr(rewards, "_golden_hashes", type(rewards._golden_hashes)())
    pay = ToolCall(
        name="transfer",
        arguments={"from_account_id": "ACC-10001", "to_account_id": "ACC-10002", "amount": 3.5},
    )
    task = Task(id="pay", query="q", apps=["banking"], golden=[GoldenStep(action=pay)])
    expected = real(["banking"], task.seed, task.clock, [pay])
    assert rewards.golden_state_hash(task) == expected
    # another task (another id, another trial) with the same chain: served from the cache
    assert rewards.golden_state_hash(task.model_copy(update={"id": "pay-again"})) == expected
    assert len(replays) == 1
    # a different amount is another end state, replayed on its own
    other = pay.model_copy(update={"arguments": {**pay.arguments, "amount": 4.0}})
    changed = rewards.golden_state_hash(task.model_copy(update={"golden": [GoldenStep(action=other)]}))
    assert changed is not None and changed != expected and len(replays) == 2
    # a chain that fails on a fresh world is remembered as None (a task bug, scored golden_error)
    broken = ToolCall(name="transfer", arguments={**pay.arguments, "from_account_id": "ACC-NOPE"})
    assert rewards.golden_state_hash(task.model_copy(update={"golden": [GoldenStep(action=broken)]})) is None


# ---- EpisodeStep: lean records, built on access ---------------------------------------------------
def test_a_step_of_records_gives_the_models_and_compares_as_one() -> None:
    from toolgym.actions import ActionRecord, FinalAnswer, Observation, ObservationRecord, ToolCall
    from toolgym.envs.rewards import EpisodeStep

    call = ActionRecord("tool_call", "add", {"b": 2, "a": 1}, thought="sum")
    result = ObservationRecord("tool_result", "3", "add", None, 3)
    lean = EpisodeStep.of_records(1, "raw", [call], [result])
    models = EpisodeStep(
        1,
        "raw",
        [ToolCall(name="add", arguments={"b": 2, "a": 1}, thought="sum")],
        [Observation(type="tool_result", text="3", tool="add", content=3)],
    )
    assert lean == models
    assert repr(lean) == repr(models)
    assert lean.actions is lean.actions  # built once, then kept (and mutable, as before)
    lean.actions.append(FinalAnswer(text="3"))
    assert [a.type for a in lean.actions] == ["tool_call", "final_answer"]
    first = lean.actions[0]
    assert isinstance(first, ToolCall) and list(first.arguments) == ["b", "a"]  # the order written


def test_episode_scans_read_records_without_building_models() -> None:
    from toolgym.actions import ActionRecord, ObservationRecord
    from toolgym.envs.rewards import Episode, EpisodeStep
    from toolgym.tasks import Task

    steps = [
        EpisodeStep.of_records(1, None, [ActionRecord("tool_call", "t")], [ObservationRecord("note", "n")]),
        EpisodeStep.of_records(2, None, [ActionRecord("final_answer", text="42")], []),
    ]
    episode = Episode(task=Task(id="t", query="q"), steps=steps)
    assert episode.final_answer == "42"
    assert all(step._lean for step in steps)  # nothing was built to find it


def test_a_packed_step_reads_back_what_it_held() -> None:
    """Packing keeps a result's content as its text, the state diff as its canonical JSON and
    ReAct tool calls as the text they were parsed from; reading them gives what they were."""
    from toolgym.actions import Observation, ObservationRecord, ToolCall
    from toolgym.canonical import render_json
    from toolgym.envs.rewards import EpisodeStep
    from toolgym.protocols.react import ReActProtocol

    react = ReActProtocol()
    raw = 'Action: add\nAction Input: {"b": 2, "a": 1}'
    actions: list[Any] = list(react.parse_records(raw))
    content = {"sum": 3, "parts": [1, 2.5, None, "é"]}
    text = render_json(content)
    diff = {"t": {"added": [{"id": 1}], "removed": [], "changed": []}}
    result = Observation(type="tool_result", text=text, tool="add", content=content)
    expected = EpisodeStep(1, raw, react.parse(raw), [result], "h", diff)
    step = EpisodeStep.of_records(
        1, raw, actions, [ObservationRecord("tool_result", text, "add", None, content)], parser=react
    )
    step.state_hash, step.state_diff = "h", diff
    step.pack()
    assert step._actions is None  # the raw text stands for the calls
    assert step._observations[0].content is not content  # the text stands for the content
    assert isinstance(step._state_diff, bytes)  # marshalled: no trace line encoded it
    assert step == expected
    assert list(step.state_diff or {}) == ["t"]
    first = step.actions[0]
    assert isinstance(first, ToolCall) and list(first.arguments) == ["b", "a"]


def test_a_step_of_models_is_not_packed() -> None:
    from toolgym.actions import Observation, ToolCall
    from toolgym.envs.rewards import EpisodeStep

    diff: dict[str, Any] = {"t": {}}
    obs = Observation(type="tool_result", text="{}", content={})
    step = EpisodeStep(1, "x", [ToolCall(name="t")], [obs], None, diff)
    step.pack()
    assert step.state_diff is diff and step.observations[0] is obs


def test_a_diff_a_trace_line_encoded_is_kept_as_that_text() -> None:
    from toolgym.actions import ObservationRecord
    from toolgym.canonical import canonical_json, render_json
    from toolgym.envs.rewards import EpisodeStep

    diff = {"t": {"added": [], "removed": [], "changed": [{"before": {"v": 1.5}, "after": {"v": 2}}]}}
    text = render_json(diff)  # what `step_json` does with a step line's diff
    step = EpisodeStep.of_records(1, None, [], [ObservationRecord("note", "n")])
    step.state_diff = diff
    step.pack()
    assert step._state_diff == text == canonical_json(diff)
    assert step.state_diff == diff
    empty = EpisodeStep.of_records(2, None, [], [])
    empty.state_diff = {}
    empty.pack()
    assert empty.state_diff == {} and empty.state_diff is not diff


# ---- golden chains that replay as the task says -------------------------------------------------
PAY_ARGS = {"from_account_id": "ACC-10001", "to_account_id": "ACC-10002", "amount": 3.5}


def _banking_task(*steps: dict[str, Any]) -> Any:
    from toolgym.tasks import Task

    golden = [
        {
            "action": {"type": "tool_call", "name": "transfer", "arguments": step["arguments"]},
            **({"expect_error": step["expect_error"]} if "expect_error" in step else {}),
        }
        for step in steps
    ]
    return Task.model_validate({"id": "chain", "query": "q", "apps": ["banking"], "golden": golden})


def test_an_unexpected_golden_failure_is_one_line_naming_the_step() -> None:
    from toolgym.envs.rewards import golden_chain_problem, golden_state_hash

    broken = _banking_task(
        {"arguments": PAY_ARGS}, {"arguments": {**PAY_ARGS, "from_account_id": "ACC-NOPE"}}
    )
    problem = golden_chain_problem(broken)
    assert problem is not None and len(problem.splitlines()) == 1
    assert problem.startswith("golden call #1 transfer(") and "failed (tool_error)" in problem
    assert "ACC-NOPE" in problem and golden_state_hash(broken) is None


def test_a_golden_argument_of_the_wrong_type_is_reported_as_an_argument_error() -> None:
    from toolgym.envs.rewards import golden_chain_problem

    problem = golden_chain_problem(_banking_task({"arguments": {**PAY_ARGS, "amount": "lots"}}))
    assert problem is not None and problem.startswith("golden call #0 transfer(")
    assert "failed (argument_error)" in problem and "amount" in problem


def test_a_failure_the_chain_expects_is_allowed_and_one_that_did_not_happen_is_reported() -> None:
    from toolgym.envs.rewards import golden_chain_problem, golden_state_hash

    tried = _banking_task(
        {"arguments": {**PAY_ARGS, "from_account_id": "ACC-NOPE"}, "expect_error": "tool_error"},
        {"arguments": PAY_ARGS},
    )
    assert golden_chain_problem(tried) is None
    assert golden_state_hash(tried) == golden_state_hash(_banking_task({"arguments": PAY_ARGS}))
    # the same calls, the first one expected to fail: the expectations are part of the cache's key
    not_failing = _banking_task({"arguments": PAY_ARGS, "expect_error": "tool_error"})
    assert golden_state_hash(not_failing) is None
    problem = golden_chain_problem(not_failing)
    assert (
        problem is not None and "was expected to fail with tool_error (expect_error) but succeeded" in problem
    )


def test_a_chain_on_an_unknown_app_cannot_replay_and_says_so() -> None:
    from toolgym.envs.rewards import golden_chain_problem
    from toolgym.tasks import Task

    assert golden_chain_problem(Task(id="no-apps", query="q")) is None
    problem = golden_chain_problem(Task(id="typo", query="q", apps=["bankng"]))
    assert problem is not None and problem.startswith("no mock app 'bankng'")


# ---- dynamic tasks: the golden chain in simulated time, the end state by its assertions ------------
def _payday_task() -> Any:
    """Savings ACC-10002 holds $5,947.00; $1,000.00 lands in it at 00:30 (an event calling
    `deposit`), and the chain waits for it, then moves $6,500.00 out: possible only after the event."""
    from toolgym.tasks import Task

    return Task.model_validate(
        {
            "id": "payday",
            "query": "When the $1,000 lands in ACC-10002, move $6,500 from it to ACC-10001.",
            "apps": ["banking"],
            "time": {"per_step_s": 30},
            "events": [
                {
                    "id": "payday",
                    "at": "2024-01-01T00:30:00Z",
                    "calls": [
                        {"tool": "deposit", "arguments": {"account_id": "ACC-10002", "amount": 1000.0}}
                    ],
                    "notify": {"text": "Deposit received in ACC-10002: $1,000.00."},
                }
            ],
            "golden": [
                {"action": {"type": "tool_call", "name": "wait", "arguments": {"seconds": 3600}}},
                {
                    "action": {
                        "type": "tool_call",
                        "name": "transfer",
                        "arguments": {
                            "from_account_id": "ACC-10002",
                            "to_account_id": "ACC-10001",
                            "amount": 6500.0,
                        },
                    }
                },
                {"action": {"type": "final_answer", "text": "Moved $6,500.00."}},
            ],
            "expected_state": [
                {
                    "kind": "field_equals",
                    "table": "bank_accounts",
                    "where": {"account_id": "ACC-10002"},
                    "field": "balance_cents",
                    "value": 44700,
                }
            ],
        }
    )


def test_a_dynamic_chain_replays_with_its_events_and_is_scored_by_its_assertions() -> None:
    from toolgym.actions import FinalAnswer, ToolCall
    from toolgym.envs.agents import OracleAgent, ScriptedAgent
    from toolgym.envs.rewards import golden_chain_problem
    from toolgym.envs.runner import run_episode
    from toolgym.envs.tool_env import ToolEnv
    from toolgym.mocks.rewards import GoldenReplayError, replay_golden

    task = _payday_task()
    with pytest.raises(GoldenReplayError, match="insufficient funds"):  # without its event it cannot replay
        replay_golden(task.apps, task.seed, task.clock, task.golden)
    assert golden_chain_problem(task) is None
    env = ToolEnv(tasks=[task])
    try:
        oracle = run_episode(env, OracleAgent(env.protocol), task)
        assert oracle.reward == 1.0 and "state_match" not in oracle.scores, oracle.scores
        # another pace (a look at the clock first) ends at another time, and is as right
        slower = [ToolCall(name="current_time", arguments={}), *(s.action for s in task.golden)]
        assert run_episode(env, ScriptedAgent(env.protocol, slower), task).reward == 1.0
        early = [task.golden[1].action, FinalAnswer(text="Moved $6,500.00.")]  # before the money came
        assert run_episode(env, ScriptedAgent(env.protocol, early), task).reward == 0.0
    finally:
        env.close()
