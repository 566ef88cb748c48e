"""The verifiers adapter through verifiers' own evaluation entry point: `vf-eval toolgym_verifiers`
in verifiers' venv (verifiers 0.4.0 pins mcp and openai apart from toolgym's, so it has its own;
toolgym reaches it through a .pth line) plays toolgym tasks against a scripted OpenAI-compatible
server on 127.0.0.1; each episode's reward in verifiers' traces is what toolgym's runner gives the
same replies, and the toolgym traces written under it are the runner's.

The venv is `.venv-verifiers` at the repository root, or the one TOOLGYM_VERIFIERS_VENV names
(Makefile: `make verifiers-venv`); without it the test is skipped."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.models.fake_openai import FakeOpenAI, serve, text
from toolgym import FinalAnswer, ToolEnv
from toolgym.actions import Action
from toolgym.envs.agents import ScriptedAgent
from toolgym.envs.demo import resolve_task_set
from toolgym.envs.runner import run_episode
from toolgym.protocols import get_protocol
from toolgym.trace import read_trace

ROOT = Path(__file__).resolve().parents[3]
VENV = Path(os.environ.get("TOOLGYM_VERIFIERS_VENV", ROOT / ".venv-verifiers"))
VF_EVAL = VENV / "bin" / "vf-eval"
pytestmark = pytest.mark.skipif(
    not VF_EVAL.exists(),
    reason=f"no verifiers venv at {VENV} (make verifiers-venv; or TOOLGYM_VERIFIERS_VENV)",
)

TASK_SET = "ctool"
# a read and a write played by their golden chains, and a write answered without doing it
SCRIPTS = {
    "ctool-express-track-001": "golden",
    "ctool-express-cancel-002": "golden",
    "ctool-express-redirect-003": "no_calls",
}


def _actions(task_id: str) -> list[Action]:
    if SCRIPTS[task_id] == "no_calls":
        return [FinalAnswer(text="Done.")]
    return [step.action for step in resolve_task_set(TASK_SET)[task_id].golden]


def test_vf_eval_scores_toolgym_tasks_as_toolgym_run_does(tmp_path: Path) -> None:
    tasks = resolve_task_set(TASK_SET)
    react = get_protocol("react")
    script = {tasks[i].query: [text(str(react.format_action(a))) for a in _actions(i)] for i in SCRIPTS}
    with serve(FakeOpenAI(script)) as fake:
        args = [str(VF_EVAL), "toolgym_verifiers", "--env.taskset.tasks", TASK_SET]
        args += [
            "--env.taskset.trace-dir",
            str(tmp_path / "toolgym"),
            "--select.include.ids",
            json.dumps(list(SCRIPTS)),
        ]
        args += ["--model", fake.model, "--client.base-url", fake.base_url, "--no-push", "--no-rich"]
        args += ["-o", str(tmp_path / "vf"), "--run.name", "toolgym"]
        # the checkout on the path: an editable install made before toolgym_verifiers existed lacks it
        environ = {**os.environ, "PYTHONPATH": str(ROOT)}
        ran = subprocess.run(
            args, cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=600, check=False
        )
    assert ran.returncode == 0, ran.stderr[-3000:]

    episodes = [json.loads(line) for line in (tmp_path / "vf" / "toolgym" / "traces.jsonl").open()]
    rewards = {
        e["task"]["data"]["task_id"]: e["traces"][0]["rewards"]["toolgym_reward"]["score"] for e in episodes
    }
    assert all(e["ok"] for e in episodes) and sorted(rewards) == sorted(SCRIPTS)

    for task_id in SCRIPTS:
        env = ToolEnv(None, tasks)
        runner = run_episode(
            env, ScriptedAgent(env.protocol, _actions(task_id)), tasks[task_id], trace_dir=tmp_path / "run"
        )
        assert rewards[task_id] == runner.reward == (1.0 if SCRIPTS[task_id] == "golden" else 0.0), task_id
        (ours,) = (tmp_path / "toolgym").glob(f"verifiers-*.{task_id}.jsonl")
        mine = read_trace(ours)
        assert runner.trace_path is not None
        theirs = read_trace(runner.trace_path)
        assert mine.header.agent == "verifiers"
        assert [s.model_dump() for s in mine.steps] == [s.model_dump() for s in theirs.steps]
        assert mine.end == theirs.end
