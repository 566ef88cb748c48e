"""The SkyRL-Gym adapter against skyrl-gym's own registry and BaseTextEnv: an episode made by
`skyrl_gym.make("toolgym", ...)` from a dataset row scores what the same actions score through
toolgym's runner, and writes the same trace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolgym import FinalAnswer, ToolEnv
from toolgym.actions import Action
from toolgym.envs.agents import ScriptedAgent
from toolgym.envs.demo import resolve_task_set
from toolgym.envs.rewards import reward_value
from toolgym.envs.runner import run_episode
from toolgym.protocols import get_protocol
from toolgym.trace import read_trace

skyrl_gym = pytest.importorskip(
    "skyrl_gym", reason="skyrl-gym is not installed (pip install skyrl-gym==0.4.0)"
)
from toolgym.envs.adapters.skyrl import ToolgymSkyRLEnv, skyrl_dataset  # noqa: E402

TASK_SET = "ctool"
WRITE_TASK = "ctool-express-cancel-002"  # a write: the state checks score it


def _scripts(task_id: str) -> dict[str, list[Action]]:
    golden = [step.action for step in resolve_task_set(TASK_SET)[task_id].golden]
    return {"golden": golden, "no_calls": [FinalAnswer(text="I cannot tell.")], "half": golden[:1]}


def _row(task_id: str) -> dict[str, Any]:
    (row,) = [r for r in skyrl_dataset(TASK_SET) if r["task_id"] == task_id]
    return row


def _through_skyrl(row: dict[str, Any], actions: list[Action], trace_dir: Path) -> tuple[float, list[Any]]:
    extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
    env = skyrl_gym.make(row["env_class"], env_config={"trace_dir": str(trace_dir)}, extras=extras)
    assert isinstance(env, ToolgymSkyRLEnv)
    chat, _ = env.init(row["prompt"])
    assert chat == row["prompt"]
    react = get_protocol("react")
    outputs = []
    for action in actions:
        reply = react.format_action(action)
        assert isinstance(reply, str)  # ReAct's replies are text
        out = env.step(reply)
        outputs.append(out)
        if out["done"]:
            break
    env.close()
    return outputs[-1]["reward"], outputs


@pytest.mark.parametrize("script", ["golden", "no_calls"])
@pytest.mark.parametrize("task_id", [WRITE_TASK, "ctool-express-track-001"])
def test_an_episode_scores_what_toolgym_run_scores(task_id: str, script: str, tmp_path: Path) -> None:
    actions = _scripts(task_id)[script]
    reward, outputs = _through_skyrl(_row(task_id), actions, tmp_path / "skyrl")
    assert outputs[-1]["done"] and all(not o["done"] and o["reward"] == 0 for o in outputs[:-1])
    assert all(o["observations"][0]["role"] == "user" for o in outputs[:-1])

    env = ToolEnv(None, resolve_task_set(TASK_SET))
    task = env.tasks[task_id]
    ran = run_episode(env, ScriptedAgent(env.protocol, actions), task, trace_dir=tmp_path / "run")
    assert reward == ran.reward == (1.0 if script == "golden" else 0.0)

    (ours,) = (tmp_path / "skyrl").glob("*.jsonl")
    theirs = read_trace(ran.trace_path) if ran.trace_path else None
    assert theirs is not None
    mine = read_trace(ours)
    assert mine.header.agent == "skyrl" and mine.header.task_id == task_id
    assert [s.model_dump() for s in mine.steps] == [s.model_dump() for s in theirs.steps]
    assert mine.end == theirs.end


def test_the_turn_cap_ends_the_episode_and_scores_what_it_did(tmp_path: Path) -> None:
    """Turns used up before a final answer: SkyRL gets done and the reward of the state the
    episode left (the golden write done, no answer given: the state checks pass, the answer not)."""
    row = {**_row(WRITE_TASK), "max_turns": 1}
    reward, outputs = _through_skyrl(row, _scripts(WRITE_TASK)["half"], tmp_path)
    assert len(outputs) == 1 and outputs[0]["done"] and outputs[0]["observations"] == []
    env = ToolEnv(None, resolve_task_set(TASK_SET))
    env.reset(options={"task": WRITE_TASK})
    env.step(get_protocol("react").format_action(_scripts(WRITE_TASK)["half"][0]))
    assert env.task is not None and env.episode is not None
    assert reward == reward_value(env.reward_fn(env.task, env.episode)) < 1.0
    (trace,) = tmp_path.glob("*.jsonl")
    end = read_trace(trace).end
    assert end is not None and end.status == "truncated" and end.reward == reward


def test_rows_name_the_env_and_every_task() -> None:
    rows = skyrl_dataset(TASK_SET)
    assert [r["task_id"] for r in rows] == [t.id for t in resolve_task_set(TASK_SET)]
    assert {r["env_class"] for r in rows} == {"toolgym"} and "toolgym" in skyrl_gym.registry
    assert rows[0]["prompt"][0]["role"] == "system" and "Action Input" in rows[0]["prompt"][0]["content"]


def test_dense_rewards_arrive_step_by_step(tmp_path: Path) -> None:
    row = _row(WRITE_TASK)
    extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
    env = skyrl_gym.make(row["env_class"], env_config={"reward_mode": "milestones"}, extras=extras)
    env.init(row["prompt"])
    react = get_protocol("react")
    local = ToolEnv(tasks=resolve_task_set(TASK_SET), reward_mode="milestones")
    local.reset(options={"task": WRITE_TASK})
    got, expected = [], []
    for action in _scripts(WRITE_TASK)["golden"]:
        reply = react.format_action(action)
        got.append(env.step(reply)["reward"])
        expected.append(local.step(reply)[1])
    env.close()
    local.close()
    assert got == expected and got[0] > 0 and got[-1] == 1.0
