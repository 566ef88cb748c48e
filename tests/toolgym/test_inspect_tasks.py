"""toolgym's task sets as Inspect evals, run offline on Inspect's `mockllm`: a bundled set and a
plug-in's set score what `toolgym run` scores for the same replies; epochs; the trace beside the log."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai", reason="the Inspect tasks need inspect-ai (toolgym[inspect])")

from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog
from inspect_ai.model import ChatMessage, ModelOutput, ModelUsage, get_model

from toolgym import plugins
from toolgym.actions import Action, AskUser, FinalAnswer, ToolCall
from toolgym.envs.agents import ScriptedAgent
from toolgym.envs.demo import resolve_task_set
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.inspect_tasks import toolgym as toolgym_task
from toolgym.tasks import TaskSet
from toolgym.toolservers.registry import default_toolset
from toolgym.trace import read_trace

ROOT = Path(__file__).resolve().parents[2]
MODEL = "mockllm/model"


@pytest.fixture(autouse=True)
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Logs and traces in the test's folder."""
    monkeypatch.chdir(tmp_path)


def reply(action: Action, index: int) -> ModelOutput:
    """The model output that says `action` over native tool calls; each with a usage (without one,
    mockllm counts tokens with a tokenizer it downloads)."""
    if isinstance(action, ToolCall):
        output = ModelOutput.for_tool_call(
            MODEL, action.name, dict(action.arguments), tool_call_id=f"call_{index}"
        )
    elif isinstance(action, AskUser):  # the openai protocol's reserved function
        output = ModelOutput.for_tool_call(
            MODEL, "ask_user", {"text": action.text}, tool_call_id=f"call_{index}"
        )
    else:
        output = ModelOutput.from_content(MODEL, action.text if isinstance(action, FinalAnswer) else "Hmm.")
    output.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    return output


def run_inspect(sample: str, actions: Sequence[Action], log_dir: Path, **args: Any) -> EvalLog:
    """`toolgym(**args)` (the generic task) on one sample, the model replying `actions`. (By its
    registry name, `toolgym/toolgym`, in the subprocess test below: in this process the checkout's
    own toolgym.egg-info is on the path, and Inspect would not see an installed package.)"""

    def answer(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        """The reply to this turn of this conversation (epochs run at once: no shared queue)."""
        turn = sum(1 for m in messages if m.role == "assistant")
        return reply(actions[min(turn, len(actions) - 1)], turn)

    model = get_model(MODEL, custom_outputs=answer)
    (log,) = inspect_eval(
        toolgym_task(**args), model=model, sample_id=sample, log_dir=str(log_dir), display="none"
    )
    assert log.status == "success", log.error
    return log


def toolgym_scores(tasks: TaskSet, task_id: str, actions: Sequence[Action]) -> tuple[float, dict[str, float]]:
    """What toolgym's own runner scores for the same replies (the openai protocol, seed 0)."""
    env = ToolEnv(default_toolset(), tasks, protocol="openai")
    result = run_episode(env, ScriptedAgent(env.protocol, list(actions)), tasks[task_id], seed=0)
    return result.reward, dict(result.scores)


def golden(tasks: TaskSet, task_id: str) -> list[Action]:
    return [step.action for step in tasks[task_id].golden]


@pytest.mark.parametrize(
    ("set_name", "task_id", "change"),
    [
        ("mtu", "mtu-transfer-011", None),  # the golden replies: solved
        ("mtu", "mtu-transfer-011", "wrong_argument"),  # a write with a wrong amount: the state differs
        ("mtu", "mtu-balance-002", "prose"),  # prose without a call: a wrong final answer
        ("multiturn", "multiturn-alarm-001", None),  # asks the simulated user, then writes
        ("multiturn", "multiturn-alarm-001", "guess"),  # writes before the user answered: a minefield
    ],
)
def test_a_bundled_set_scores_what_toolgym_run_scores(
    tmp_path: Path, set_name: str, task_id: str, change: str | None
) -> None:
    tasks = resolve_task_set(set_name)
    actions = golden(tasks, task_id)
    if change == "wrong_argument":
        first = actions[0]
        assert isinstance(first, ToolCall)
        actions[0] = first.model_copy(update={"arguments": {**first.arguments, "amount": 1.0}})
    elif change == "prose":
        actions = [FinalAnswer(text="I think it is about a thousand dollars.")]
    elif change == "guess":
        actions = [a for a in actions if not isinstance(a, AskUser)]
    log = run_inspect(task_id, actions, tmp_path / "logs", tasks=set_name)
    reward, scores = toolgym_scores(tasks, task_id, actions)
    assert log.samples is not None
    (score,) = log.samples[0].scores.values()  # type: ignore[union-attr]
    value = dict(score.value)  # type: ignore[arg-type]
    assert value["reward"] == reward and value["success"] == float(reward >= 1.0)
    assert {k: value[k] for k in scores if k != "reward"} == {
        k: v for k, v in scores.items() if k != "reward"
    }
    assert (reward == 1.0) is (change is None)
    assert "mtu/TN" in value  # the set's suite (multiturn's tasks are MTU's), per task
    # the episode's toolgym trace, beside Inspect's log
    trace_path = Path(score.metadata["trace"])  # type: ignore[index]
    if not trace_path.is_absolute():
        trace_path = Path.cwd() / trace_path
    assert trace_path.parent.parent.name.endswith(".toolgym") and trace_path.parent.name == "epoch-1"
    assert Path(log.location).with_suffix(".toolgym") == trace_path.parent.parent
    trace = read_trace(trace_path)
    assert trace.end is not None and trace.end.reward == reward and trace.header.agent == f"inspect:{MODEL}"
    roles = [m.role for m in log.samples[0].messages]
    assert roles[:2] == ["system", "user"] and "assistant" in roles  # the conversation, in the log


def test_epochs_play_each_sample_again_with_a_trace_each(tmp_path: Path) -> None:
    tasks = resolve_task_set("mtu")
    log = run_inspect("mtu-balance-002", golden(tasks, "mtu-balance-002"), tmp_path, tasks="mtu", epochs=2)
    assert log.samples is not None and [s.epoch for s in log.samples] == [1, 2]
    traces = sorted(Path(log.location).with_suffix(".toolgym").glob("epoch-*/*.jsonl"))
    assert [p.parent.name for p in traces] == ["epoch-1", "epoch-2"]
    assert traces[0].read_bytes().replace(b"inspect", b"") != b""
    first, second = (read_trace(p) for p in traces)
    assert [s.actions for s in first.steps] == [s.actions for s in second.steps]  # seeded worlds alike
    assert log.results is not None
    metrics = {s.name: s.metrics["mean"].value for s in log.results.scores}
    assert metrics["reward"] == 1.0 and metrics["success"] == 1.0


@pytest.fixture
def pantry_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """examples/pantry laid out as an installed plug-in (its entry points, its package on the path):
    a task set, an app, a tool and a suite of its own."""
    site = tmp_path / "site"
    shutil.copytree(ROOT / "examples" / "pantry" / "pantry_env", site / "pantry_env")
    info = site / "pantry_env-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: pantry-env\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[toolgym.apps]\npantry = pantry_env.app:PantryApp\n"
        "[toolgym.tools]\nconvert_units = pantry_env.tools:convert_units\n"
        "[toolgym.tasks]\npantry = pantry_env:TASKS\n"
        "[toolgym.suites]\npantry_stock = pantry_env.suite:StockSuite\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(site))
    plugins.refresh()
    yield
    monkeypatch.undo()
    for name in [m for m in sys.modules if m.startswith("pantry_env")]:
        sys.modules.pop(name)
    plugins.refresh()


def test_a_plugins_set_scores_what_toolgym_run_scores(tmp_path: Path, pantry_plugin: None) -> None:
    tasks = resolve_task_set("pantry")
    for task in list(tasks)[:2]:
        actions = golden(tasks, task.id)
        log = run_inspect(task.id, actions, tmp_path / task.id, tasks="pantry")
        assert log.samples is not None
        (score,) = log.samples[0].scores.values()  # type: ignore[union-attr]
        reward, scores = toolgym_scores(tasks, task.id, actions)
        value = dict(score.value)  # type: ignore[arg-type]
        assert reward == 1.0 and value["reward"] == reward
        assert all(value[k] == v for k, v in scores.items())


def test_an_unknown_set_is_refused_before_any_sample() -> None:
    with pytest.raises(ValueError, match="no-such-set"):
        toolgym_task(tasks="no-such-set")
    with pytest.raises(ValueError, match="reward_mode 'dense': one of final, milestones"):
        toolgym_task(tasks="mtu", reward_mode="dense")


SCRIPT = """
import sys
from inspect_ai import eval
from inspect_ai.model import ChatMessage, ModelOutput, ModelUsage, get_model
outputs = [
    ModelOutput.for_tool_call("mockllm/model", "get_account_balance", {"account_number": "123456"}),
    ModelOutput.from_content("mockllm/model", "Account 123456 has a balance of $4,825.50."),
]
for output in outputs:
    output.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
(log,) = eval(sys.argv[1], model=get_model("mockllm/model", custom_outputs=outputs),
              sample_id="mtu-balance-002", log_dir="logs", display="none")
print(log.status, log.eval.task, log.samples[0].scores["toolgym_scorer"].value["reward"])
"""


@pytest.mark.parametrize("name", ["toolgym/mtu", "toolgym/toolgym"])
def test_inspect_finds_the_tasks_by_their_registry_names(tmp_path: Path, name: str) -> None:
    """As `inspect eval toolgym/mtu` finds them: through the `inspect_ai` entry point of the
    installed package, from a folder of the user's."""
    (tmp_path / "run.py").write_text(SCRIPT, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "run.py", name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["success", name, "1.0"]
