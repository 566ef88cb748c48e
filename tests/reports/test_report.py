"""`toolgym report` (HTML with inline plots) and `toolgym eval` (metric suites, MTU-Eval files)."""

from __future__ import annotations

import base64
import io
import json
from collections import Counter
from collections.abc import Mapping
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from typer.testing import CliRunner

from tests.cli_text import flat
from tests.models.fake_openai import FakeOpenAI, Fault, Reply, calls, serve, text
from tests.shared_data import MTU_DIR
from toolgym.actions import FinalAnswer
from toolgym.cli import app
from toolgym.envs.agents import OracleAgent
from toolgym.envs.demo import default_task_paths, demo_tasks_path, mock_task_paths
from toolgym.envs.tool_env import ToolEnv
from toolgym.evaluation.base import SuiteResult
from toolgym.evaluation.loaders.mtu import load_mtu_tasks, recorded_responses, run_mtu_episodes
from toolgym.models.llm import ChatClient, LLMAgent, LLMConfig
from toolgym.reports.report import (
    MAX_TASK_ROWS,
    ReportData,
    collect_report_data,
    render_report,
    tasks_section,
    tool_error_counts,
    write_report,
)
from toolgym.running.trials import EpisodeRecord, load_task_index, load_traces, run_trials, traces_digest
from toolgym.tasks import AnswerSpec, GoldenStep, Task, TaskSet
from toolgym.toolservers.registry import default_toolset

MTU_TASKS = next(p for p in mock_task_paths() if p.stem == "mtu")
MTU_REFERENCE = {
    "S-S": {"TS": 88.46, "PS": 57.69},
    "M-M": {"TN": 70.71, "TO": 71.83, "ATS": 65.76, "SATS": 63.15, "SR": 22.78, "TPR": 58.10},
}


class Page(HTMLParser):
    """What the tests look at in a report: section ids, headings, images, table cells, scripts."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.images: list[dict[str, str | None]] = []
        self.cells: list[str] = []
        self.tags: Counter[str] = Counter()
        self._in_cell = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        attributes = dict(attrs)
        if tag == "section":
            self.sections.append(attributes.get("id") or "")
        elif tag == "img":
            self.images.append(attributes)
        elif tag in ("td", "th"):
            self._in_cell = True
            self.cells.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th"):
            self._in_cell = False

    def handle_data(self, data: str) -> None:
        if self._in_cell:
            self.cells[-1] += data


def parse(html_text: str) -> Page:
    page = Page()
    page.feed(html_text)
    page.close()
    return page


def decode_images(page: Page) -> list[Image.Image]:
    images: list[Image.Image] = []
    for attributes in page.images:
        src = attributes.get("src") or ""
        assert src.startswith("data:image/png;base64,"), src[:40]
        raw = base64.b64decode(src.removeprefix("data:image/png;base64,"), validate=True)
        image = Image.open(io.BytesIO(raw))
        image.load()
        assert image.format == "PNG" and image.width > 100 and image.height > 100
        assert attributes.get("alt")
        images.append(image)
    return images


def _clumsy_script(body: Mapping[str, Any]) -> Reply | Fault:
    """fish-oil with an unknown tool, bad arguments and unparseable arguments before the answer;
    the balance question right away; the door question always a server error."""
    messages = body["messages"]
    prompt = next(m["content"] for m in messages if m["role"] == "user")
    turn = sum(1 for m in messages if m["role"] == "assistant")
    if "family of 5" in prompt:
        chain = [
            calls(("Magnifier", {"image": "image/fish_oil.png"})),
            calls(("OCR", {"img": "image/fish_oil.png"})),
            calls(("Calculator", "{not json")),
            calls(("OCR", {"image": "image/fish_oil.png"})),
            calls(("Calculator", {"expression": "290 // 5"})),
            text("58 days"),
        ]
        return chain[turn]
    if "bank account 123456" in prompt:
        return [calls(("get_account_balance", {"account_number": "123456"})), text("$4,825.50")][turn]
    return Fault(status=503)


def only(path: Path, *ids: str) -> TaskSet:
    task_set = TaskSet.load(path)
    return TaskSet([t for t in task_set if t.id in ids], base_dir=task_set.base_dir)


@pytest.fixture(scope="module")
def llm_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A two-trial LLM run against the scripted server: tool errors, an aborted task, token usage."""
    out = tmp_path_factory.mktemp("llm_run")
    mtu_path = next(p for p in mock_task_paths() if p.stem == "mtu")
    sets = [
        ("demo", only(demo_tasks_path(), "fish-oil-days")),
        ("mtu", only(mtu_path, "mtu-balance-002", "mtu-door-003")),
    ]
    fake = FakeOpenAI(_clumsy_script)
    with serve(fake):
        config = LLMConfig(base_url=fake.base_url, model="fake-model", max_retries=0, concurrency=2)
        with ChatClient(config) as client:

            def make_agent(env: ToolEnv, trial: int) -> LLMAgent:
                return LLMAgent(client, env)

            run_trials(
                sets,
                make_agent,
                out=out,
                toolset=default_toolset(),
                protocol="openai",
                trials=2,
                concurrency=2,
                agent_name="llm:fake-model",
                model="fake-model",
            )
    return out


def test_report_of_a_multi_trial_llm_run(llm_run: Path, tmp_path: Path) -> None:
    data = collect_report_data(llm_run, load_task_index(default_task_paths()))
    target = write_report(data, tmp_path / "report.html")
    page = parse(target.read_text(encoding="utf-8"))
    assert page.sections == [
        "summary",
        "metrics",
        "categories",
        "tasks",
        "milestones",  # the run's mock-app tasks: milestones derived from their golden chains
        "errors",
        "steps",
        "pass-k",
        "glossary",
    ]
    assert page.tags["script"] == 0 and page.tags["link"] == 0  # self-contained, nothing runs
    images = decode_images(page)
    assert len(images) == 5  # episode scores, categories, errors per tool, steps, pass@k
    cells = page.cells
    assert "llm:fake-model" in cells and "fake-model" in cells
    assert cells[cells.index("episodes") + 1] == "6"
    assert cells[cells.index("success rate (reward = 1)") + 1] == "4/4 = 100.0%"
    assert any("LLMUnavailable" in c and "HTTP 503" in c for c in cells)  # the aborted episodes' reason
    tokens = cells[cells.index("tokens") + 1]
    assert "prompt" in tokens and "(0 retries)" in tokens
    # error kinds per tool, counted from the traces: two trials of the clumsy fish-oil chain
    errors = tool_error_counts(data.traces)
    assert errors["Magnifier"] == {"unknown_tool": 2}
    assert errors["OCR"] == {"argument_error": 2}
    assert errors["(no tool)"] == {"format_error": 2}
    row = cells.index("Magnifier")
    assert cells[row + 1] == "2"  # calls
    # steps per episode: fish-oil took 6, balance 2
    assert sorted(e.steps for e in data.finished) == [2, 2, 6, 6]


def test_single_trial_report_has_no_pass_k_and_says_there_are_no_errors(tmp_path: Path) -> None:
    run_trials(
        [("mtu", only(MTU_TASKS, "mtu-balance-002", "mtu-door-003"))],
        lambda env, trial: OracleAgent(env.protocol),
        out=tmp_path,
        toolset=default_toolset(),
    )
    html_text = render_report(collect_report_data(tmp_path, load_task_index(default_task_paths())))
    page = parse(html_text)
    assert "pass-k" not in page.sections and "tool-f1" not in page.sections
    assert "No errors in 2 traces (2 tool calls)." in html_text
    # the door's write has milestones, derived from its golden chain and scored again from the trace
    assert "milestones" in page.sections
    door = page.cells.index("mtu-door-003", page.cells.index("milestone progress %"))
    assert page.cells[door + 1 : door + 4] == ["100.00", "-", "0/1"]
    assert len(decode_images(page)) == 3
    # the same data gives the same bytes (PNG metadata carries no version or date)
    assert render_report(collect_report_data(tmp_path, load_task_index(default_task_paths()))) == html_text


def test_text_from_traces_and_tasks_is_escaped(tmp_path: Path) -> None:
    hostile = Task(
        id="<script>alert(1)</script>",
        query="Say hi",
        category="<img src=x onerror=alert(2)>",
        golden=[GoldenStep(action=FinalAnswer(text="hi"))],
        answer=AnswerSpec(whitelist=[["hi"]]),
    )
    run_trials(
        [("evil", TaskSet([hostile]))],
        lambda env, trial: OracleAgent(env.protocol),
        out=tmp_path,
        toolset=default_toolset(),
    )
    html_text = render_report(collect_report_data(tmp_path, {}, title="<b>title</b>"))
    page = parse(html_text)
    assert page.tags["script"] == 0 and len(page.images) == len(decode_images(page))
    assert "<script>alert" not in html_text and "onerror=alert(2)>" not in html_text
    assert "<script>alert(1)</script>" in page.cells  # the task id, shown as text in the task table
    assert "<img src=x onerror=alert(2)>" in page.cells  # shown as text, not markup
    assert "<b>title</b>" not in html_text and "&lt;b&gt;title&lt;/b&gt;" in html_text


def test_report_shows_suite_results_and_gta_tool_f1(tmp_path: Path) -> None:
    run_trials(
        [("mtu", only(MTU_TASKS, "mtu-balance-002"))],
        lambda env, trial: OracleAgent(env.protocol),
        out=tmp_path,
        toolset=default_toolset(),
    )
    gta = SuiteResult(
        suite="gta",
        mode="fixed",
        metrics={"AnsAcc": 100.0, "P_F1": 80.0, "O_F1": 50.0, "L_F1": 100.0, "C_F1": 0.0},
        counts={"traces": 1},
        notes=["hand-made result for the report layout"],
    )
    payload = {
        "mode": "fixed",
        "results": {"gta": gta.model_dump(mode="json")},
        "failures": {"mtu": "no MTU traces"},
        "traces_digest": traces_digest(load_traces(tmp_path)[0]),  # scored on these very traces
    }
    (tmp_path / "eval.fixed.json").write_text(json.dumps(payload))
    (tmp_path / "eval.compat.json").write_text("{not json")
    html_text = render_report(collect_report_data(tmp_path, load_task_index(default_task_paths())))
    page = parse(html_text)
    assert "tool-f1" in page.sections
    assert "P_F1" in page.cells and "hand-made result for the report layout" in html_text
    assert "mtu (fixed): not scored: no MTU traces" in html_text
    assert "eval.compat.json: unreadable evaluation results" in html_text
    decode_images(page)


# ---- commands --------------------------------------------------------------------------------


def test_report_command_writes_the_file(llm_run: Path, tmp_path: Path) -> None:
    target = tmp_path / "out" / "r.html"
    result = CliRunner().invoke(app, ["report", str(llm_run), "--out", str(target), "--title", "LLM run"])
    assert result.exit_code == 0, result.output
    assert "6 episodes; report written to" in flat(result.output)
    page = parse(target.read_text(encoding="utf-8"))
    assert "summary" in page.sections and len(decode_images(page)) == 5
    bad = CliRunner().invoke(app, ["report", str(tmp_path / "missing")])
    assert bad.exit_code == 2 and "is not a directory" in flat(bad.output)


def test_eval_command_reproduces_the_mtu_reference_numbers_in_compat_mode(tmp_path: Path) -> None:
    target = tmp_path / "eval.compat.json"
    args = ["eval", "--mode", "compat", "--out", str(target)]
    for split in MTU_REFERENCE:
        args += ["--mtu-eval", str(MTU_DIR / f"{split}_eval.jsonl")]
        args += ["--mtu-responses", str(MTU_DIR / f"{split}_gpt4_response.jsonl")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    stored = json.loads(target.read_text())
    assert stored["mode"] == "compat" and stored["failures"] == {}
    for split, expected in MTU_REFERENCE.items():
        metrics = stored["results"][f"mtu:{split}"]["metrics"]
        assert {k: metrics[k] for k in expected} == expected
    assert "88.46" in result.output and "22.78" in result.output


@pytest.mark.parametrize("split", list(MTU_REFERENCE))
def test_eval_command_scores_mtu_traces_to_the_reference_numbers(split: str, tmp_path: Path) -> None:
    """GPT-4's MTU responses replayed as episodes (traces), then `toolgym eval DIR --suite mtu`."""
    eval_file = MTU_DIR / f"{split}_eval.jsonl"
    tasks = load_mtu_tasks(eval_file)
    outputs = recorded_responses(tasks, MTU_DIR / f"{split}_gpt4_response.jsonl")
    run_mtu_episodes(tasks, outputs, tmp_path / "traces", agent_name="gpt-4")
    args = ["eval", str(tmp_path / "traces"), "--suite", "mtu", "--mode", "compat", "--tasks", str(eval_file)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    stored = json.loads((tmp_path / "traces" / "eval.compat.json").read_text())
    metrics = stored["results"]["mtu"]["metrics"]
    assert {k: metrics[k] for k in MTU_REFERENCE[split]} == MTU_REFERENCE[split]
    # and the report of that folder carries the suite's table
    report = CliRunner().invoke(app, ["report", str(tmp_path / "traces"), "--tasks", str(eval_file)])
    assert report.exit_code == 0, report.output
    page = parse((tmp_path / "traces" / "report.html").read_text(encoding="utf-8"))
    first = next(iter(MTU_REFERENCE[split]))
    assert page.cells[page.cells.index(first) + 1] == f"{MTU_REFERENCE[split][first]:.2f}"
    decode_images(page)


def test_eval_command_rejects_an_unknown_suite_before_reading_traces(llm_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "eval.json"
    result = CliRunner().invoke(app, ["eval", str(llm_run), "--suite", "gta,nosuch", "--out", str(out)])
    assert result.exit_code == 2
    assert "unknown metric suite nosuch" in flat(result.output) and "traces in" not in result.output
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give a run directory"),
        (["/nonexistent/dir"], "is not a directory"),
        (["--mtu-eval", str(MTU_DIR / "S-S_eval.jsonl")], "one --mtu-responses per --mtu-eval"),
        (["--mtu-eval", "/nonexistent.jsonl", "--mtu-responses", "/nonexistent2.jsonl"], "no such file"),
    ],
)
def test_eval_command_rejects_bad_input(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["eval", *args])
    assert result.exit_code == 2, result.output
    assert message in flat(result.output)


def test_the_task_table_is_capped(tmp_path: Path) -> None:
    records = [
        EpisodeRecord(trial=0, task_set="s", task_id=f"t{i:04d}", status="terminated", reward=1.0, steps=1)
        for i in range(MAX_TASK_ROWS + 7)
    ]
    data = ReportData(title="big", directory=tmp_path, episodes=records, traces=[], tasks={})
    page = parse(tasks_section(data))
    assert (
        "t0000" in page.cells
        and f"t{MAX_TASK_ROWS - 1:04d}" in page.cells
        and f"t{MAX_TASK_ROWS:04d}" not in page.cells
    )
    assert f"The first {MAX_TASK_ROWS} of {MAX_TASK_ROWS + 7} tasks" in tasks_section(data)


def test_eval_command_rejects_task_sets_that_share_ids(tmp_path: Path) -> None:
    (tmp_path / "traces").mkdir()
    demo = str(demo_tasks_path())
    result = CliRunner().invoke(app, ["eval", str(tmp_path / "traces"), "--tasks", demo, "--tasks", demo])
    assert result.exit_code == 2 and "appears in more than one task set" in flat(result.output)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "x", "query": 3}\n')
    result = CliRunner().invoke(app, ["eval", str(tmp_path / "traces"), "--tasks", str(broken)])
    assert result.exit_code == 2 and "broken.jsonl:1: x: query: Input should be a valid string" in flat(
        result.output
    )
