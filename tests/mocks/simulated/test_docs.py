"""Tool documentation in each format becomes ToolDocs; bad documents are DocErrors naming the
file and the tool."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.shared_data import DATA, TEVAL_API_DOC
from toolgym.mocks.simulated.docs import DocError, classify, detect_format, load_docs, parse_docs

TOOLBENCH = {
    "tool_name": "Open Weather",
    "tool_description": "Weather data.",
    "api_list": [
        {
            "name": "Current Weather",
            "description": "Weather now in a city.",
            "method": "GET",
            "required_parameters": [{"name": "city", "type": "STRING", "description": "city name"}],
            "optional_parameters": [{"name": "days", "type": "NUMBER", "description": "", "default": ""}],
            "template_response": {"temp": "float", "city": "str", "alerts": [{"title": "str"}]},
        }
    ],
}

OPENAPI: dict[str, Any] = {
    "openapi": "3.0.0",
    "info": {"title": "Notes", "version": "1"},
    "components": {
        "schemas": {
            "Note": {
                "type": "object",
                "properties": {"note_id": {"type": "string"}, "title": {"type": "string"}},
                "required": ["note_id", "title"],
            }
        }
    },
    "paths": {
        "/notes": {
            "post": {
                "operationId": "create_note",
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {"title": {"type": "string"}},
                                "required": ["title"],
                            }
                        }
                    }
                },
                "responses": {
                    "201": {
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Note"}}}
                    }
                },
            }
        },
        "/notes/{note_id}": {
            "get": {
                "operationId": "get_note",
                "parameters": [{"name": "note_id", "in": "path", "schema": {"type": "string"}}],
                "responses": {
                    "200": {
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Note"}}}
                    }
                },
            }
        },
    },
}


def test_openai_records_from_tooleyes() -> None:
    docs = load_docs(DATA / "tooleyes" / "config_gpt4.Random__Random.json", exclude=("finish", "ask_to_user"))
    assert [d.name for d in docs] == [
        "get_random_number",
        "get_uuid",
        "generate_string",
        "generate_password",
        "generate_placeholder_text",
    ]
    assert docs[0].parameters["type"] == "object" and docs[0].returns is None
    wrapped = parse_docs([{"type": "function", "function": {"name": "f", "parameters": {}}}], "x.json")
    assert wrapped[0].name == "f" and wrapped[0].parameters["properties"] == {}


def test_toolbench_tool_json() -> None:
    (doc,) = parse_docs(TOOLBENCH, "weather.json")
    assert doc.name == "current_weather_for_open_weather"  # ToolBench's own naming
    assert doc.parameters["properties"]["city"]["type"] == "string"
    assert doc.parameters["properties"]["days"]["type"] == "number"
    assert doc.parameters["required"] == ["city"]
    assert doc.returns is not None and doc.returns["properties"]["alerts"]["type"] == "array"


def test_teval_api_descrip() -> None:
    docs = load_docs(TEVAL_API_DOC)
    assert len(docs) == 50  # T-Eval's 15 tools, 50 APIs
    details = next(d for d in docs if d.name == "AirbnbSearch.get_property_details")
    assert details.parameters["properties"]["propertyId"]["type"] == "number"
    assert details.returns is not None and "latitude" in details.returns["properties"]


def test_mtu_api_list() -> None:
    apis = [
        {
            "name": "ReserveRestaurant",
            "description": "Reserve a table",
            "required_parameters": ["restaurant_name", "city", "time"],
            "optional_parameters": {"date": "2019-03-01", "party_size": "2"},
            "result_parameters": ["restaurant_name", "date", "time", "phone_number"],
        }
    ]
    (doc,) = parse_docs(apis, "mtu")
    assert doc.required == ["restaurant_name", "city", "time"]
    assert doc.parameters["properties"]["party_size"] == {"default": "2"}  # MTU's types stay loose
    assert doc.returns is not None and list(doc.returns["properties"]) == [
        "restaurant_name",
        "date",
        "time",
        "phone_number",
    ]
    assert (doc.action, doc.resource) == ("create", "restaurant")


def test_openapi_operations_without_a_server() -> None:
    docs = parse_docs(OPENAPI, "notes.yaml")
    create, get = docs
    assert (create.name, create.action, create.required) == ("create_note", "create", ["title"])
    assert (get.name, get.action, get.required) == ("get_note", "get", ["note_id"])
    assert get.returns is not None and get.returns["required"] == ["note_id", "title"]  # $ref resolved


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("create_event", ("create", "event")),
        ("getEvents", ("list", "event")),
        ("SearchHotel", ("list", "hotel")),
        ("country_info", ("get", "country")),
        ("cancel_booking", ("delete", "booking")),
        ("update_contact", ("update", "contact")),
        ("generate_password", ("call", "password")),
        ("Calendar.add_event", ("create", "event")),
    ],
)
def test_classify_reads_the_verb(name: str, expected: tuple[str, str]) -> None:
    assert classify(name) == expected


def _write(tmp_path: Path, data: Any, name: str = "doc.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_bad_documents_name_file_and_tool(tmp_path: Path) -> None:
    with pytest.raises(DocError, match=r"empty\.json: the file is empty"):
        load_docs(_write(tmp_path, "  \n", "empty.json"))
    with pytest.raises(DocError, match="not JSON"):
        load_docs(_write(tmp_path, "{nope"))
    with pytest.raises(DocError, match="no tools"):
        load_docs(_write(tmp_path, []))
    with pytest.raises(DocError, match="not a tool document"):
        load_docs(_write(tmp_path, {"hello": "world"}))
    bad_schema = [{"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "strin"}}}}]
    with pytest.raises(DocError, match=r"doc\.json: tool 'f': parameters are not JSON Schema") as info:
        load_docs(_write(tmp_path, bad_schema))
    assert info.value.tool == "f" and info.value.source.endswith("doc.json")
    not_object = [{"name": "g", "parameters": {"type": "array"}}]
    with pytest.raises(DocError, match="tool 'g': parameters must be a JSON Schema of type object"):
        load_docs(_write(tmp_path, not_object))
    twice = [{"name": "h", "parameters": {}}, {"name": "h", "description": "other", "parameters": {}}]
    with pytest.raises(DocError, match="tool 'h': two tools have this name"):
        load_docs(_write(tmp_path, twice))
    with pytest.raises(DocError, match="non-empty string name"):
        parse_docs([{"name": "", "parameters": {}}], "x.json")
    with pytest.raises(DocError, match="does not resolve"):
        broken = json.loads(json.dumps(OPENAPI))
        broken["paths"]["/notes/{note_id}"]["get"]["responses"]["200"]["content"]["application/json"][
            "schema"
        ] = {"$ref": "#/components/schemas/Missing"}
        parse_docs(broken, "notes.json")
    with pytest.raises(DocError, match="cannot read"):
        load_docs(tmp_path / "absent.json")


def test_detect_format() -> None:
    assert detect_format(OPENAPI) == "openapi"
    assert detect_format(TOOLBENCH) == "toolbench"
    assert detect_format([{"name": "T", "api_list": []}]) == "teval"
    assert detect_format([{"name": "a", "required_parameters": []}]) == "mtu"
    assert detect_format([{"name": "a", "parameters": {}}]) == "openai"
    assert detect_format("text") is None
