"""`toolgym schema task|trace`: the published schemas are the command's output, and the task schema
holds every bundled task and refuses what the task format refuses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner

from toolgym.cli import app
from toolgym.envs.demo import bundled_task_sets
from toolgym.jsonl import read_jsonl

DOCS = Path(__file__).resolve().parents[3] / "docs"


def schema_output(kind: str) -> str:
    result = CliRunner().invoke(app, ["schema", kind])
    assert result.exit_code == 0, result.output
    return result.output


def test_the_published_task_schema_is_the_command_s_output() -> None:
    assert (DOCS / "task-schema.json").read_text(encoding="utf-8") == schema_output("task"), (
        "docs/task-schema.json is stale: toolgym schema task > docs/task-schema.json"
    )
    assert (DOCS / "trace-schema.json").read_text(encoding="utf-8") == schema_output("trace")


def test_the_task_schema_holds_every_bundled_task() -> None:
    schema = json.loads(schema_output("task"))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    checked = 0
    for name, path in bundled_task_sets().items():
        for row in read_jsonl(path, "task"):
            errors = [e.message for e in validator.iter_errors(row)]
            assert not errors, (name, row.get("id"), errors)
            checked += 1
    assert checked > 600  # the demo, mock-app and ToolEyes sets at least


@pytest.mark.parametrize(
    "change",
    [
        {"expected_sate": []},
        {"expected_state": [{"kind": "row_exist", "table": "t"}]},
        {"expected_state": [{"kind": "count", "table": "t"}]},
        {"expected_state": [{"table": "t"}]},
        {"golden": [{"action": {"type": "tool_call", "name": "x", "argz": {}}}]},
        {"golden": [{"action": {"name": "x"}}]},
        {"golden": [{"action": {"type": "tool_call", "name": "x"}, "expect_error": "tool_eror"}]},
        {"answer": {"whitelst": [["a"]]}},
    ],
)
def test_the_task_schema_refuses_what_the_format_refuses(change: dict[str, Any]) -> None:
    schema = json.loads(schema_output("task"))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"id": "t", "query": "q", **change}, schema)
    jsonschema.validate(
        {
            "id": "t",
            "query": "q",
            "golden": [{"action": {"type": "tool_call", "name": "x"}, "expect_error": "tool_error"}],
        },
        schema,
    )
