"""The import paths issue 35 moved keep working (toolgym/moved.py): every documented old path gives
the module at its new path, the same object, in a fresh interpreter, and the old files are gone."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from toolgym.moved import MOVED

ROOT = Path(__file__).resolve().parents[2]
# the old paths the docs, the README and earlier run.json files and specs name
DOCUMENTED = [
    ("toolgym.evaluation.llm", "ChatClient"),
    ("toolgym.evaluation.llm", "LLMConfig"),
    ("toolgym.evaluation.users", "llm_user"),
    ("toolgym.evaluation.users", "LLMUsers"),
    ("toolgym.evaluation.simulators", "simulated_worlds"),
    ("toolgym.evaluation.simulators", "LLMSimulatedWorlds"),
    ("toolgym.evaluation.rollout_agents", "LLMAgents"),
    ("toolgym.evaluation.rollout_agents", "HFAgents"),
    ("toolgym.evaluation.hf_models", "parse_hf_spec"),
    ("toolgym.evaluation.hf_agent", "HFModel"),
    ("toolgym.evaluation.runs", "run_trials"),
    ("toolgym.evaluation.runs", "RunSummary"),
    ("toolgym.evaluation.runs", "set_name"),
    ("toolgym.evaluation.run_plan", "run"),
    ("toolgym.evaluation.run_config", "RunConfig"),
]


@pytest.mark.parametrize(("old", "name"), DOCUMENTED)
def test_a_documented_old_path_gives_the_moved_module_itself(old: str, name: str) -> None:
    module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])
    assert getattr(module, name) is getattr(importlib.import_module(MOVED[old]), name)


def test_every_moved_module_exists_at_its_new_path_and_not_at_its_old_one() -> None:
    for old, new in MOVED.items():
        assert importlib.import_module(new).__name__ == new
        assert not (ROOT / (old.removeprefix("toolgym.").replace(".", "/") + ".py")).exists(), old


def test_old_paths_work_in_a_fresh_interpreter_through_from_imports_and_module_attribute_names() -> None:
    probe = (
        "from toolgym.evaluation.llm import LLMConfig\n"
        "import toolgym.evaluation.runs as runs\n"
        "from toolgym.envs.rollouts import load_object\n"
        "import toolgym.running.trials, toolgym.models.llm, toolgym.models.users\n"
        "assert LLMConfig is toolgym.models.llm.LLMConfig\n"
        "assert runs is toolgym.running.trials\n"
        "assert load_object('toolgym.evaluation.users:LLMUsers', 'user') is toolgym.models.users.LLMUsers\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_a_name_that_never_existed_is_still_an_import_error() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("toolgym.evaluation.no_such_module")
