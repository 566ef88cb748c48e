"""Simulated libraries as mock apps: stateful within an episode (create, then get/list/update/
delete find it; the state hash covers it), typed errors like any tool, every ToolEyes tool
answers, and the registry resolves bundled and registered libraries by name."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.mocks.simulated.test_docs import OPENAPI
from toolgym.actions import ToolCall
from toolgym.mocks.apps import get_app
from toolgym.mocks.simulated.app import bundled_libraries, get_simulated_app, register_library, simulated_app
from toolgym.mocks.simulated.docs import DocError, parse_docs
from toolgym.mocks.simulated.simulator import DETERMINISTIC
from toolgym.mocks.world import MockWorld

CLOCK = datetime(2024, 5, 1, tzinfo=UTC)
CALENDAR = parse_docs(
    [
        {
            "name": "create_event",
            "description": "Create a calendar event.",
            "parameters": {
                "type": "object",
                "properties": {"title": {"type": "string"}, "date": {"type": "string"}},
                "required": ["title", "date"],
            },
        },
        {
            "name": "get_event",
            "description": "One event by id.",
            "parameters": {
                "type": "object",
                "properties": {"event_id": {"type": "string"}},
                "required": ["event_id"],
            },
        },
        {
            "name": "list_events",
            "description": "Events on a date.",
            "parameters": {"type": "object", "properties": {"date": {"type": "string"}}},
        },
        {
            "name": "update_event",
            "description": "Rename an event.",
            "parameters": {
                "type": "object",
                "properties": {"event_id": {"type": "string"}, "title": {"type": "string"}},
                "required": ["event_id", "title"],
            },
        },
        {
            "name": "delete_event",
            "description": "Delete an event.",
            "parameters": {
                "type": "object",
                "properties": {"event_id": {"type": "string"}},
                "required": ["event_id"],
            },
        },
    ],
    "calendar.json",
)
Calendar = simulated_app("test-calendar", CALENDAR)


def _content(world: MockWorld, name: str, **arguments: Any) -> Any:
    obs = world.step(ToolCall(name=name, arguments=arguments))
    assert obs.error is None, obs.text
    return obs.content


def test_create_then_get_list_update_delete() -> None:
    with MockWorld([Calendar], clock=CLOCK) as world:
        start = world.state_hash()
        created = _content(world, "create_event", title="Dentist", date="2024-05-02")
        event_id = created["event_id"]
        assert event_id == "SIM-EVENT-000001" and created["title"] == "Dentist"
        assert world.state_hash() != start  # the record is in the world's state
        assert _content(world, "get_event", event_id=event_id) == created
        listing = _content(world, "list_events", date="2024-05-02")
        assert listing["results"][0] == created and listing["count"] == len(listing["results"])
        other_day = _content(world, "list_events", date="2024-06-01")
        assert created not in other_day["results"]
        renamed = _content(world, "update_event", event_id=event_id, title="Dentist (moved)")
        assert renamed["title"] == "Dentist (moved)"
        assert _content(world, "get_event", event_id=event_id)["title"] == "Dentist (moved)"
        assert _content(world, "delete_event", event_id=event_id)["deleted"] == event_id
        gone = world.step(ToolCall(name="delete_event", arguments={"event_id": event_id}))
        assert gone.error is not None and gone.error.kind == "tool_error" and "404" in gone.text
        # an id the episode never made is the simulator's: a fresh, stable answer
        assert _content(world, "get_event", event_id="E-7") == _content(world, "get_event", event_id="E-7")


def test_reset_forgets_the_episode_and_replays_identically() -> None:
    with MockWorld([Calendar], clock=CLOCK) as world:
        start = world.state_hash()
        first = [_content(world, "create_event", title=f"T{n}", date="2024-05-02") for n in range(2)]
        after = world.state_hash()
        world.reset(seed=0, clock=CLOCK)
        assert world.state_hash() == start
        missing = _content(world, "list_events", date="2024-05-02")
        assert all(e not in missing["results"] for e in first)
        again = [_content(world, "create_event", title=f"T{n}", date="2024-05-02") for n in range(2)]
        assert again == first and world.state_hash() == after


def test_arguments_are_checked_like_any_tool() -> None:
    with MockWorld([Calendar], clock=CLOCK) as world:
        start = world.state_hash()
        missing = world.step(ToolCall(name="create_event", arguments={"title": "x"}))
        assert missing.error is not None and missing.error.kind == "argument_error"
        assert "'date' is a required property" in missing.text
        mistyped = world.step(ToolCall(name="create_event", arguments={"title": 3, "date": "d"}))
        assert mistyped.error is not None and mistyped.error.kind == "argument_error"
        assert world.state_hash() == start  # nothing was created


def test_tools_say_they_are_simulated() -> None:
    with MockWorld([Calendar]) as world:
        tools = {t.name: t for t in world.tools}
    assert {t.backend for t in tools.values()} == {DETERMINISTIC}
    assert tools["create_event"].mutates_state and not tools["get_event"].mutates_state
    assert tools["create_event"].category == "app"


def test_openapi_create_then_get() -> None:
    Notes = simulated_app("test-notes", parse_docs(OPENAPI, "notes.json"))
    with MockWorld([Notes], clock=CLOCK) as world:
        note = _content(world, "create_note", title="Groceries")
        assert note["title"] == "Groceries" and note["note_id"].startswith("SIM-NOTE-")
        assert _content(world, "get_note", note_id=note["note_id"]) == note


def test_registry_and_bad_libraries() -> None:
    cls = register_library("test-registered", CALENDAR)
    assert get_app("simulated:test-registered") is cls
    with pytest.raises(ValueError, match="exists already"):
        register_library("test-registered", CALENDAR)
    with pytest.raises(KeyError, match="no simulated library"):
        get_app("simulated:nowhere")
    with pytest.raises(DocError, match="at least one tool"):
        simulated_app("empty", [])
    with pytest.raises(DocError, match="two tools have this name"):
        simulated_app("twice", [CALENDAR[0], CALENDAR[0]])


def _valid_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties", {})
    kinds = {"string": "1", "integer": 1, "number": 1.0, "boolean": True, "array": [], "object": {}}
    return {
        n: kinds.get(str(props.get(n, {}).get("type", "string")), "1") for n in schema.get("required", [])
    }


def test_every_tooleyes_tool_answers_a_valid_call() -> None:
    libraries = [name for name in bundled_libraries() if name.startswith("tooleyes/")]
    assert len(libraries) == 95
    answered = 0
    for library in libraries:
        with MockWorld([get_simulated_app("simulated:" + library)], clock=CLOCK) as world:
            for tool in world.tools:
                obs = world.step(
                    ToolCall(name=tool.name, arguments=_valid_arguments(tool.parameters_schema()))
                )
                assert obs.error is None, f"{library}/{tool.name}: {obs.text}"
                assert json.loads(obs.text) == obs.content
                answered += 1
    # 568 records, three of them a second record under a name already documented (ToolEyes' data)
    assert answered == 565
