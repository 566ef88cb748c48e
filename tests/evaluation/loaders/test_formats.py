"""Task files in each benchmark's format: told apart by content, loaded, run from the CLI, and a
file of the wrong shape named in one line (file, row, problem) with exit code 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolgym.cli import app
from toolgym.evaluation.loaders.formats import benchmark_tools, detect_format, load_tasks
from toolgym.tasks import TaskFileError as CoreTaskFileError
from toolgym.tools import to_openai_tool
from toolgym.toolservers.registry import default_toolset
from toolgym.trace import read_trace

DATA = Path(__file__).resolve().parents[2] / "data"
GTA = DATA / "gta" / "dataset_sample.json"
TEVAL = DATA / "t-eval" / "results_sample" / "plan_json_v2.json"
TOOLEYES = DATA / "tooleyes" / "scenario_data_raw.json"
MTU = DATA / "mtu-bench" / "S-S_eval.jsonl"
TOOLGYM = Path(__file__).resolve().parents[3] / "fixtures" / "mock_tasks" / "ctool.jsonl"


@pytest.mark.parametrize(
    ("path", "fmt"),
    [(GTA, "gta"), (TEVAL, "teval"), (TOOLEYES, "tooleyes"), (MTU, "mtu"), (TOOLGYM, "toolgym")],
)
def test_each_format_is_told_by_its_content(path: Path, fmt: str) -> None:
    assert detect_format(path) == fmt
    kind, tasks = load_tasks(path)
    assert kind == fmt and len(tasks) > 0


def test_loaded_benchmark_tasks_keep_what_runs_need() -> None:
    _, gta = load_tasks(GTA)
    assert gta.base_dir == GTA.parent  # files resolve against the dataset folder (its image/)
    assert all((gta.base_dir / f.path).is_file() for t in gta for f in t.files)
    _, tooleyes = load_tasks(TOOLEYES)
    with_tools = [t for t in tooleyes if t.tools]
    assert with_tools, "the tool configs beside the queries are read"
    # ToolEyes queries and MTU rows run end to end: their apps (simulated libraries, mock apps)
    # serve their tools, so they need no stand-ins
    assert all(t.apps for t in with_tools)
    assert benchmark_tools("tooleyes", TOOLEYES, tooleyes, default_toolset()).names == []
    _, mtu = load_tasks(MTU)
    stand_ins = set(benchmark_tools("mtu", MTU, mtu, default_toolset()).names)
    # only the APIs no app serves (a row's made-up API, say) get not-run stand-ins
    assert all(not set(t.tools or []) & stand_ins for t in mtu if t.apps)
    assert all(set(t.tools or []) <= stand_ins for t in mtu if not t.apps)
    _, teval = load_tasks(TEVAL)
    teval_tools = benchmark_tools("teval", TEVAL, teval, default_toolset())
    # T-Eval's api_descrip.json (one folder up) gives its 50 APIs; names it lacks get stand-ins
    assert teval_tools.get("AirbnbSearch.search_property_by_place").backend == "teval-not-run"
    assert to_openai_tool(teval_tools.get("AirbnbSearch.search_property_by_place"))["function"]["parameters"][
        "required"
    ]
    assert teval_tools.get("WeatherAPI.get_weather_today").backend == "teval-not-run"
    assert benchmark_tools("gta", GTA, gta, default_toolset()).names == []


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("name", "text", "fmt", "where", "problem"),
    [
        ("t.jsonl", '{"id": "a", "query": "q"}\n{"id": "b", "query": 3}\n', None, "line 2", "query"),
        # a task without its query: the field and the line, not a guess at another format
        (
            "t.jsonl",
            '{"id": "a", "tools": ["Calculator"]}\n',
            None,
            "line 1",
            "a: missing field 'query'",
        ),
        ("t.jsonl", '{"id": "a"}\n{"id": "b", "query": "q"}\n', None, "line 1", "a: missing field 'query'"),
        ("t.jsonl", '{"query": "q"}\n', None, "line 1", "missing field 'id'"),
        ("t.jsonl", '{"id": "a", "query": "q"}\nnot json\n', None, "line 2", "not JSON"),
        ("d.json", '{"s1": {"dialogs": []}}', None, "sample 's1'", "non-empty list"),
        (
            "d.json",
            '{"s1": {"dialogs": [{"role": "user", "content": "q"}]}, "s2": 3}',
            "gta",
            "sample 's2'",
            "not an object",
        ),
        (
            "q.json",
            '[{"query": "q", "path": "A/B", "scenario": "TG"}, 5]',
            "tooleyes",
            "row 1",
            "not an object",
        ),
        ("q.json", '[{"query": "q", "path": 1, "scenario": "TG"}]', None, "row 0", "'path'"),
        (
            "m.jsonl",
            '{"id": "S-S_0", "question": "q", "answer": {}}\n{"id": "S-S_1", "question": "q", "answer": 2}\n',
            None,
            "line 2",
            "'answer'",
        ),
        ("x.json", '{"k": {"foo": 1}}', None, None, "neither GTA samples"),
        ("x.json", "[1, 2]", None, None, "not ToolEyes queries"),
        (
            "t.jsonl",
            '{"id": "a", "query": "q"}\n{"id": "b", "query": "q"}\n',
            "gta",
            None,
            "keyed by sample id",
        ),
        ("t.jsonl", '{"id": "a", "query": "q"}\n', "gta", "sample 'id'", "not an object"),
    ],
)
def test_a_file_of_the_wrong_shape_is_named_in_one_line(
    tmp_path: Path, name: str, text: str, fmt: str | None, where: str | None, problem: str
) -> None:
    path = _write(tmp_path, name, text)
    # toolgym's own format raises the core's error (every problem of the file); the others its subclass
    with pytest.raises(CoreTaskFileError) as caught:
        load_tasks(path, fmt)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(path))
    assert problem in message
    if where is not None:
        line = where.removeprefix("line ")
        assert (f"{path}:{line}: " if line.isdigit() else f"{path}: {where}: ") in message


@pytest.mark.parametrize("command", ["run", "eval"])
def test_the_cli_stops_on_a_bad_task_file_with_one_line(tmp_path: Path, command: str) -> None:
    path = _write(tmp_path, "bad.jsonl", '{"id": "a", "query": "q"}\n{"id": "b"}\n')
    args = ["run", "--out", str(tmp_path / "run")] if command == "run" else ["eval", str(tmp_path)]
    result = CliRunner().invoke(app, [*args, "--tasks", str(path)])
    assert result.exit_code == 2
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == [f"error: {path}:2: b: missing field 'query'"]


def test_run_and_eval_take_a_gta_dataset_with_its_image_folder(tmp_path: Path) -> None:
    data = tmp_path / "gta"
    shutil.copytree(GTA.parent, data)
    dataset = data / "dataset_sample.json"
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["run", "--tasks", str(dataset), "--task-id", "gta-3", "--task-id", "gta-0", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    traces = sorted(out.rglob("*.jsonl"))
    assert {read_trace(p).header.task_id for p in traces} == {"gta-0", "gta-3"}
    scored = CliRunner().invoke(app, ["eval", str(out), "--tasks", str(dataset), "--suite", "gta"])
    assert scored.exit_code == 0, scored.output
    results = json.loads((out / "eval.fixed.json").read_text(encoding="utf-8"))["results"]["gta"]
    assert results["counts"]["e2e/tasks"] == 2


def test_run_takes_mtu_rows_and_teval_files_with_their_tools(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(MTU.read_text(encoding="utf-8").splitlines(keepends=True)[:3]), encoding="utf-8")
    for path, fmt in ((rows, "mtu"), (TEVAL, "teval")):
        out = tmp_path / fmt
        result = CliRunner().invoke(app, ["run", "--tasks", str(path), "--format", fmt, "--out", str(out)])
        assert result.exit_code == 0, result.output
        traces = [read_trace(p) for p in sorted(out.rglob("*.jsonl"))]
        assert len(traces) == len(load_tasks(path)[1])
        called = [a for t in traces for s in t.steps for a in s.actions if a.get("type") == "tool_call"]
        observed = [o for t in traces for s in t.steps for o in s.observations]
        # every call reached a tool that ran (MTU's dialogs may ask the seeded world for data it
        # lacks: a tool's own error is fine, an unknown tool or an infra error is not)
        kinds = {(o.get("error") or {}).get("kind") for o in observed}
        assert called and not kinds & {"unknown_tool", "infra_error", "argument_error"}, observed


def test_the_oracle_refuses_tasks_without_golden_actions(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["run", "--tasks", str(TOOLEYES), "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "tooleyes-000" in result.output and "--agent llm" in result.output
