"""The catalog: what a session may choose, and refusals of what the server does not offer."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolgym.envs.demo import bundled_task_sets
from toolgym.envs.service.catalog import Catalog, ServiceError, SessionConfig
from toolgym.tools import ToolSet, tool


@tool(name="Echo", description="Says it back.")
def echo(text: str) -> str:
    return text


def test_the_server_offers_every_bundled_set() -> None:
    # the same names as `toolgym run --tasks` (ToolEyes included), from the one list of them
    catalog = Catalog.build(tools=ToolSet([echo]))
    assert set(catalog.describe()["task_sets"]) == set(bundled_task_sets())
    assert {"demo", "ctool", "mtu", "teval", "tooleyes"} <= set(catalog.describe()["task_sets"])
    assert len(catalog.task_set("tooleyes")) == 382


def test_a_registered_sets_file_keeps_its_one_name() -> None:
    # `--tasks PATH` of a registered set's file: the set's name, as run folders and run.json say it,
    # not the file's stem (demo's file is demo/tasks.jsonl)
    demo = bundled_task_sets()["demo"]
    catalog = Catalog.build(tools=ToolSet([echo]), task_files=[demo])
    names = catalog.describe()["task_sets"]
    assert demo.stem not in names and names.count("demo") == 1
    assert set(names) == set(bundled_task_sets())


def test_resolve_over_defaults(tmp_path: Path) -> None:
    tasks = tmp_path / "mine.jsonl"
    tasks.write_text('{"id": "t1", "query": "say hi", "tools": ["Echo"]}\n')
    catalog = Catalog.build(
        task_files=[tasks], tools=ToolSet([echo]), defaults=SessionConfig(tasks="mine", seed=4)
    )
    resolved = catalog.resolve(SessionConfig(protocol="json"))
    assert (resolved.tasks, resolved.protocol, resolved.seed, resolved.reward) == ("mine", "json", 4, "task")
    assert catalog.describe()["tools"] == ["Echo"]
    assert "mine" in catalog.describe()["task_sets"]


@pytest.mark.parametrize(
    "config",
    [
        SessionConfig(tasks="/etc/passwd"),
        SessionConfig(tasks="nope"),
        SessionConfig(protocol="smoke"),
        SessionConfig(reward="money"),
        SessionConfig(tools=["Echo", "Nope"]),
    ],
)
def test_refusals(config: SessionConfig) -> None:
    catalog = Catalog.build(tools=ToolSet([echo]))
    with pytest.raises(ServiceError) as refused:
        catalog.resolve(config)
    assert refused.value.kind == "argument_error" and refused.value.status == 422


def test_a_bad_default_fails_at_start() -> None:
    with pytest.raises(ServiceError):
        Catalog.build(tools=ToolSet([echo]), defaults=SessionConfig(tasks="nope"))


def test_a_session_chooses_its_user_and_llm_only_where_the_operator_gave_one() -> None:
    catalog = Catalog.build(tools=ToolSet([echo]))
    assert catalog.resolve(SessionConfig()).user == "rule"
    assert catalog.resolve(SessionConfig(user="scripted")).as_dict()["user"] == "scripted"
    assert catalog.describe()["users"] == ["rule", "scripted"]
    for user, message in (("llm", "this server has no user LLM"), ("robot", "no user 'robot'")):
        with pytest.raises(ServiceError) as refused:
            catalog.resolve(SessionConfig(user=user))
        assert refused.value.kind == "argument_error" and refused.value.status == 422
        assert message in refused.value.message
