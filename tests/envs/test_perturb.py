"""Tool-schema perturbations: plans, the layer's names and schemas, distractors, the mapping back,
the oracle under every preset, milestones and byte-identical reruns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolgym.actions import ToolCall
from toolgym.envs.agents import OracleAgent, ScriptedAgent
from toolgym.envs.demo import mock_task_paths
from toolgym.envs.perturb import (
    PERTURBATION_KEY,
    PRESETS,
    PerturbedToolSet,
    PerturbLayer,
    PerturbPlan,
    PerturbPlanError,
    distractor_pool,
    ranked_distractors,
    unperturbed,
)
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.tasks import TaskSet
from toolgym.toolservers.registry import default_toolset
from toolgym.trace import Trace, read_trace

TOOLS = default_toolset()
POOL = distractor_pool(TOOLS)


def mock_set(name: str) -> TaskSet:
    return TaskSet.load(next(p for p in mock_task_paths() if p.stem == name))


def env_under(plan: PerturbPlan | None, tasks: TaskSet, **kwargs: Any) -> ToolEnv:
    layers = [PerturbLayer(plan, pool=POOL)] if plan is not None else []
    return ToolEnv(TOOLS, tasks, tool_layers=layers, **kwargs)


def trace_in(folder: Path) -> Trace:
    (path,) = folder.glob("*.jsonl")
    return read_trace(path)


# ---- plans -------------------------------------------------------------------------------------
def test_every_preset_is_a_valid_plan_named_after_it() -> None:
    for name in PRESETS:
        assert PerturbPlan.named(name).name == name


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ({"name": "nothing"}, "must change something"),
        ({"scramble_names": True, "colour": "red"}, "colour"),
        ({"distractors": -1}, "distractors"),
        ({"scramble_names": True, "name": "a b"}, "name"),
    ],
)
def test_a_bad_plan_is_a_typed_error_that_says_why(data: dict[str, Any], reason: str) -> None:
    with pytest.raises(PerturbPlanError) as caught:
        PerturbPlan.parse(data)
    assert reason in caught.value.message and caught.value.kind.value == "argument_error"


def test_plans_load_from_a_file_or_a_preset_name(tmp_path: Path) -> None:
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"rename_arguments": True, "seed": 3}))
    assert PerturbPlan.load(path) == PerturbPlan(name="mine", rename_arguments=True, seed=3)
    assert PerturbPlan.load("no-types") == PerturbPlan.named("no-types")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(PerturbPlanError, match="not JSON"):
        PerturbPlan.load(tmp_path / "broken.json")
    with pytest.raises(PerturbPlanError, match="or name a preset: scrambled-names"):
        PerturbPlan.load(tmp_path / "missing.json")


# ---- what the agent is offered -----------------------------------------------------------------
def offered_under(plan: PerturbPlan, task_id: str = "mtu-transfer-011") -> tuple[ToolEnv, dict[str, Any]]:
    env = env_under(plan, mock_set("mtu"))
    _, info = env.reset(options={"task": task_id})
    return env, info


def test_scrambled_names_are_a_function_of_the_seed_and_the_real_name() -> None:
    env, info = offered_under(PerturbPlan.named("scrambled-names"))
    again, _ = offered_under(PerturbPlan.named("scrambled-names"))
    other, _ = offered_under(PerturbPlan(name="s1", scramble_names=True, seed=1))
    real = {t.real_name for t in env.offered}  # type: ignore[attr-defined]
    assert env.offered.names == again.offered.names
    assert set(env.offered.names).isdisjoint(real) and set(env.offered.names).isdisjoint(other.offered.names)
    assert all(name.startswith("fn_") and len(name) == 11 for name in env.offered.names)
    mapping = info[PERTURBATION_KEY]["tools"]
    assert {entry["name"] for entry in mapping.values()} == real
    # the instructions the agent reads name the new tools only
    text = env.instructions()
    assert all(name in text for name in env.offered.names) and not any(f'"{r}"' in text for r in real)


def test_renamed_arguments_keep_the_schema_but_its_names() -> None:
    env, info = offered_under(PerturbPlan.named("renamed-arguments"))
    for tool in env.offered:
        assert isinstance(tool, type(next(iter(env.offered))))
        schema = tool.parameters_schema()
        real_schema = real_tools(env)[tool.name].parameters_schema()
        assert tool.name in info[PERTURBATION_KEY]["tools"] or not real_schema.get("properties")
        renamed = tool.arguments  # type: ignore[attr-defined]
        assert sorted(renamed.values()) == sorted(real_schema.get("properties", {}))
        assert [schema["properties"][k] for k in renamed] == [
            real_schema["properties"][v] for v in renamed.values()
        ]
        assert sorted(schema.get("required", [])) == sorted(
            k for k, v in renamed.items() if v in real_schema.get("required", [])
        )


def real_tools(env: ToolEnv) -> dict[str, Any]:
    """The real tool behind each offered name."""
    assert isinstance(env.offered, PerturbedToolSet)
    return {
        name: env.offered.inner.get(t.real_name)
        for name, t in env.offered.perturbed.items()
        if not t.distractor
    }


def walk_keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in walk_keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in walk_keys(v)}
    return set()


def test_dropped_descriptions_and_types_leave_none_in_any_schema() -> None:
    env, _ = offered_under(PerturbPlan(name="bare", drop_descriptions=True, drop_types=True))
    real = real_tools(env)
    assert any(t.description for t in real.values())
    assert any("type" in walk_keys(t.parameters_schema()["properties"]) for t in real.values())
    for tool in env.offered:
        assert tool.description == ""
        keys = walk_keys(tool.parameters_schema())
        assert "description" not in keys and "title" not in keys
        assert "type" not in walk_keys(tool.parameters_schema()["properties"])
        assert all(p.description is None for p in tool.params)
    assert env.offered.names == [t.name for t in real.values()]  # names and order kept


def test_distractors_are_the_most_similar_tools_not_offered() -> None:
    env, info = offered_under(PerturbPlan.named("distractors-3"))
    mapping = info[PERTURBATION_KEY]["tools"]
    distractors = [e["name"] for e in mapping.values() if e.get("distractor")]
    offered = [t for t in env.offered if not t.distractor]  # type: ignore[attr-defined]
    assert len(distractors) == 3 and len(env.offered) == len(offered) + 3
    real_offered = [real_tools(env)[t.name] for t in offered]
    assert not set(distractors) & {t.name for t in real_offered}
    assert sorted(distractors) == sorted(t.name for t in ranked_distractors(real_offered, POOL, 3))
    ranked = ranked_distractors(real_offered, POOL, 50)
    # most similar first: a transfer task's nearest unoffered tools are about money
    assert any("transfer" in t.name.lower() or "balance" in t.name.lower() for t in ranked[:3])
    everything = PerturbPlan.named("distractors-all")
    env_all, _ = offered_under(everything)
    every = {t.real_name for t in env_all.offered}  # type: ignore[attr-defined]
    assert every == {t.name for t in POOL} | {t.name for t in real_offered}


def test_a_distractor_call_is_a_tool_error_and_changes_nothing() -> None:
    env, info = offered_under(PerturbPlan.named("distractors-3"))
    name = next(n for n, e in info[PERTURBATION_KEY]["tools"].items() if e.get("distractor"))
    before = info["state_hash"]
    _, _, _, _, step = env.step([ToolCall(name=name, arguments={})])
    assert step["error_kinds"] == ["tool_error"] and step["state_hash"] == before
    assert "not available for this task" in step["observations"][0]["text"]


def test_an_error_names_the_offered_tool_and_arguments_never_the_real_ones() -> None:
    env, info = offered_under(PerturbPlan(name="both", scramble_names=True, rename_arguments=True))
    entry_name, entry = next(
        (n, e) for n, e in info[PERTURBATION_KEY]["tools"].items() if e["name"] == "transfer_funds"
    )
    real_args = set(entry["arguments"].values())
    _, _, _, _, step = env.step([ToolCall(name=entry_name, arguments={"amount": "lots"})])
    text = step["observations"][0]["text"]
    assert step["error_kinds"] == ["argument_error"]
    assert "transfer_funds" not in text and not any(f"'{a}'" in text for a in real_args)
    assert step["observations"][0]["tool"] == entry_name


def test_an_agent_that_calls_the_real_names_meets_unknown_tools() -> None:
    tasks = mock_set("mtu")
    task = tasks["mtu-transfer-011"]  # a write: its final state needs the call to run
    env = env_under(PerturbPlan.named("scrambled-names"), tasks)
    agent = ScriptedAgent(env.protocol, [g.action for g in task.golden])
    result = run_episode(env, agent, task)
    assert result.reward == 0.0 and result.error_counts.get("unknown_tool", 0) >= 1


# ---- the oracle under every plan, the mapping back, reruns ------------------------------------
@pytest.mark.parametrize("preset", list(PRESETS))
def test_the_oracle_passes_every_mock_task_under_every_preset(preset: str) -> None:
    plan = PerturbPlan.named(preset)
    for path in mock_task_paths():
        tasks = TaskSet.load(path)
        env = env_under(plan, tasks, protocol="openai" if preset == "all" else "react")
        for task in tasks:
            result = run_episode(env, OracleAgent(env.protocol), task)
            assert result.reward == 1.0, (preset, task.id, result.scores)


def calls_of(trace: Trace) -> list[tuple[str, Any]]:
    return [
        (a["name"], a["arguments"]) for s in trace.steps for a in s.actions if a.get("type") == "tool_call"
    ]


def test_a_perturbed_trace_maps_back_to_the_clean_calls_and_reruns_byte_identical(tmp_path: Path) -> None:
    tasks = mock_set("mtu")
    task = tasks["mtu-restaurant-chain-006"]
    plan = PerturbPlan.named("all")
    for folder, chosen in (("clean", None), ("a", plan), ("b", plan)):
        env = env_under(chosen, tasks)
        run_episode(env, OracleAgent(env.protocol), task, seed=0, trace_dir=tmp_path / folder)
    clean, first = trace_in(tmp_path / "clean"), trace_in(tmp_path / "a")
    assert [p.read_bytes() for p in (tmp_path / "a").glob("*")] == [
        p.read_bytes() for p in (tmp_path / "b").glob("*")
    ]
    record = first.header.env_config[PERTURBATION_KEY]
    assert record["plan"]["name"] == "all" and record["tools"]
    assert calls_of(first) != calls_of(clean)
    assert calls_of(unperturbed(first)) == calls_of(clean)
    assert [s.state_hash_after for s in first.steps] == [s.state_hash_after for s in clean.steps]
    assert unperturbed(clean) is clean


def test_milestones_are_reached_under_perturbed_names() -> None:
    tasks = mock_set("mtu")
    task = tasks["mtu-restaurant-chain-006"]
    env = env_under(PerturbPlan.named("all"), tasks, reward_mode="milestones")
    env.reset(options={"task": task.id})
    agent = OracleAgent(env.protocol)
    result = run_episode(env, agent, task)
    assert result.reward == 1.0
    assert env.checks is not None and env.checks.progress == 1.0
