"""ToolEnv over mock apps: per-task worlds, state hash and diff in info, state-based rewards."""

from __future__ import annotations

from typing import Any

from toolgym import AnswerSpec, FinalAnswer, GoldenStep, Task, ToolCall, ToolEnv
from toolgym.envs.agents import OracleAgent, ScriptedAgent
from toolgym.envs.runner import run_episode

TRANSFER = ToolCall(
    name="transfer", arguments={"from_account_id": "ACC-10001", "to_account_id": "ACC-10002", "amount": 100.0}
)
TASK = Task(
    id="move-100",
    query="Move $100 from my checking ACC-10001 to my savings ACC-10002.",
    apps=["banking"],
    tools=["get_balance", "transfer", "list_accounts"],
    golden=[GoldenStep(action=TRANSFER), GoldenStep(action=FinalAnswer(text="Done: moved $100."))],
    answer=AnswerSpec(whitelist=[["done", "moved", "transferred"]]),
    expected_state=[
        {
            "kind": "field_equals",
            "table": "bank_accounts",
            "where": {"account_id": "ACC-10001"},
            "field": "balance_cents",
            "value": 1010138 - 10000,
        },
    ],
)


def test_oracle_reaches_expected_state() -> None:
    env = ToolEnv(tasks=[TASK])
    result = run_episode(env, OracleAgent(env.protocol), TASK)
    assert result.reward == 1.0
    assert result.scores == {
        "answer": 1.0,
        "state_match": 1.0,
        "assertions": 1.0,
        "state": 1.0,
        "reward": 1.0,
    }
    env.close()


def test_info_has_state_hash_and_diff() -> None:
    env = ToolEnv(tasks=[TASK])
    _, info = env.reset(options={"task": TASK})
    start = info["state_hash"]
    _, _, _, _, info = env.step(ToolCall(name="get_balance", arguments={"account_id": "ACC-10001"}))
    assert info["state_hash"] == start
    _, _, _, _, info = env.step(TRANSFER)
    assert info["state_hash"] != start
    diff = info["state_diff"]
    changed = diff["bank_accounts"]["changed"]
    assert {c["before"]["account_id"] for c in changed} == {"ACC-10001", "ACC-10002"}
    assert len(diff["bank_transactions"]["added"]) == 2
    # a failed write changes nothing and shows an empty diff
    _, _, _, _, info = env.step(
        ToolCall(
            name="transfer",
            arguments={"from_account_id": "ACC-10001", "to_account_id": "ACC-10002", "amount": 10**9},
        )
    )
    assert info["error_kind"] == "tool_error"
    assert info["observations"][0]["content"]["status"] == "error"
    assert not any(v["added"] or v["removed"] or v["changed"] for v in info["state_diff"].values())
    # reset restores the seeded state
    _, info = env.reset(options={"task": TASK})
    assert info["state_hash"] == start
    env.close()


def run_with(actions: list[Any]) -> dict[str, float]:
    env = ToolEnv(tasks=[TASK])
    result = run_episode(env, ScriptedAgent(env.protocol, actions), TASK)
    env.close()
    return result.scores


def test_wrong_amount_fails_state_check_even_with_right_words() -> None:
    wrong = ToolCall(name="transfer", arguments={**TRANSFER.arguments, "amount": 90.0})
    scores = run_with([wrong, FinalAnswer(text="Done: moved $100.")])
    assert scores["answer"] == 1.0 and scores["state"] == 0.0 and scores["reward"] == 0.0


def test_collateral_write_fails_state_match() -> None:
    extra = ToolCall(
        name="transfer",
        arguments={"from_account_id": "ACC-10002", "to_account_id": "ACC-10001", "amount": 1.0},
    )
    scores = run_with([TRANSFER, extra, FinalAnswer(text="Done.")])
    assert scores["state_match"] == 0.0 and scores["reward"] == 0.0


def test_parallel_envs_never_see_each_others_writes() -> None:
    import gymnasium as gym

    envs = gym.vector.SyncVectorEnv([lambda: ToolEnv(tasks=[TASK]) for _ in range(3)])
    _, infos = envs.reset(seed=[0, 0, 0])
    start = infos["state_hash"][0]
    balance = ToolCall(name="get_balance", arguments={"account_id": "ACC-10001"})
    _, _, _, _, infos = envs.step([TRANSFER, balance, TRANSFER])
    hashes = list(infos["state_hash"])
    assert hashes[1] == start and hashes[0] == hashes[2] != start
    _, _, _, _, infos = envs.step([balance, balance, balance])
    balances = [obs["content"]["balance"] for obs in (o[0] for o in infos["observations"])]
    assert balances == [10001.38, 10101.38, 10001.38]
    envs.close()
