"""Run setups: paper presets, --top-p and few-shot examples reach a real local chat server
(tests/models/fake_openai.py records every request)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.models.fake_openai import FakeOpenAI, Reply, serve, text
from toolgym.cli import app
from toolgym.envs.demo import demo_tasks_path
from toolgym.models.setups import PRESETS, FewShotError, few_shot_block, load_few_shot
from toolgym.running.trials import RunSummary

EXAMPLE = [
    {"role": "user", "content": "What is 2 + 3?"},
    {"role": "assistant", "content": 'Thought: add\nAction: Calculator\nAction Input: {"expression": "2+3"}'},
    {"role": "tool", "content": "5"},
    {"role": "assistant", "content": "Thought: done\nFinal Answer: 5"},
]


def _answer(body: Mapping[str, Any]) -> Reply:
    return text("Thought: I know it\nFinal Answer: 58 days")


def _run(tmp_path: Path, fake: FakeOpenAI, *extra: str) -> Any:
    args = ["run", "--agent", "llm", "--base-url", fake.base_url, "--model", "fake-model"]
    args += ["--tasks", str(demo_tasks_path()), "--task-id", "fish-oil-days", "--out", str(tmp_path), *extra]
    return CliRunner().invoke(app, args)


def test_few_shot_files_in_json_and_jsonl(tmp_path: Path) -> None:
    as_json = tmp_path / "shots.json"
    as_json.write_text(json.dumps([EXAMPLE, {"messages": EXAMPLE[:2]}]), encoding="utf-8")
    as_jsonl = tmp_path / "shots.jsonl"
    as_jsonl.write_text(
        json.dumps(EXAMPLE) + "\n\n" + json.dumps({"messages": EXAMPLE}) + "\n", encoding="utf-8"
    )
    assert load_few_shot(as_json) == [EXAMPLE, EXAMPLE[:2]]
    assert load_few_shot(as_jsonl) == [EXAMPLE, EXAMPLE]
    block = few_shot_block([EXAMPLE])
    assert "User: What is 2 + 3?" in block and "Observation: 5" in block and "Final Answer: 5" in block


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("[]", "no examples"),
        ('[[{"role": "bot", "content": "x"}]]', "example 0, message 0"),
        ('[[{"role": "assistant", "content": "x"}]]', "starts with the user"),
        ('[{"role": "user", "content": "q"}]\n{', "line 2: not JSON"),
    ],
)
def test_a_bad_few_shot_file_names_the_example(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(FewShotError, match=problem):
        load_few_shot(path)


def test_the_tooleyes_preset_and_few_shot_examples_reach_the_server(tmp_path: Path) -> None:
    shots = tmp_path / "shots.json"
    shots.write_text(json.dumps([EXAMPLE] * 5), encoding="utf-8")
    fake = FakeOpenAI(_answer)
    with serve(fake):
        result = _run(tmp_path / "run", fake, "--preset", "tooleyes", "--few-shot", str(shots))
    assert result.exit_code == 0, result.output
    assert fake.requests and {(r["temperature"], r["top_p"]) for r in fake.requests} == {(0.3, 0.5)}
    system = fake.requests[0]["messages"][0]
    assert system["role"] == "system" and system["content"].count("--- Example") == 5
    # the examples close the protocol's instructions (react, the preset's protocol)
    assert system["content"].index("Final Answer") < system["content"].index("--- Example 1 ---")
    summary = RunSummary.load(tmp_path / "run")
    assert summary.protocol == "react" and summary.settings["max_steps"] == PRESETS["tooleyes"].max_steps == 9
    assert summary.settings["preset"] == "tooleyes" and summary.settings["few_shot"]["examples"] == 5


def test_options_win_over_the_preset_and_top_p_alone_is_sent(tmp_path: Path) -> None:
    fake = FakeOpenAI(_answer)
    with serve(fake):
        result = _run(tmp_path / "a", fake, "--preset", "tooleyes", "--temperature", "0.9", "--top-p", "0.2")
        assert result.exit_code == 0, result.output
        assert {(r["temperature"], r["top_p"]) for r in fake.requests} == {(0.9, 0.2)}
        fake.requests.clear()
        result = _run(tmp_path / "b", fake, "--top-p", "0.7", "--protocol", "react")
        assert result.exit_code == 0, result.output
    assert {r["top_p"] for r in fake.requests} == {0.7} and all("temperature" not in r for r in fake.requests)
    assert RunSummary.load(tmp_path / "b").settings["top_p"] == 0.7


@pytest.mark.parametrize("preset", ["teval", "mtu", "ctooleval"])
def test_published_sampling_reaches_the_server_and_unpublished_is_left_out(
    preset: str, tmp_path: Path
) -> None:
    fake = FakeOpenAI(_answer)
    with serve(fake):
        result = _run(tmp_path / preset, fake, "--preset", preset)
    assert result.exit_code == 0, result.output
    setup = PRESETS[preset]
    if preset == "teval":
        # T-Eval's test.py decodes greedily (do_sample=False): temperature 0, no top_p
        assert {r["temperature"] for r in fake.requests} == {0.0}
    else:
        # MTU and CToolEval publish no sampling: the server's default, nothing sent
        assert setup.temperature is None and all("temperature" not in r for r in fake.requests)
    assert setup.top_p is None and all("top_p" not in r for r in fake.requests)
    # the source line names where a number comes from, or says that none is published
    expected = {"teval": "do_sample=False", "mtu": "not published", "ctooleval": "not found"}[preset]
    assert expected in setup.source


def test_bad_setups_are_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["run", "--preset", "nope", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "unknown preset" in result.output
    shots = tmp_path / "shots.json"
    shots.write_text(json.dumps([EXAMPLE]), encoding="utf-8")
    result = CliRunner().invoke(app, ["run", "--few-shot", str(shots), "--out", str(tmp_path)])
    assert result.exit_code == 2 and "--agent llm" in result.output
