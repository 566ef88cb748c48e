"""Rollouts on a real local Ray instance (started once for the module, with a fake GPU): byte-
identical traces against one process, actors killed mid-episode, back-pressure, a GPU tool server
actor, and the error when Ray is missing."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.envs.rollout_agents import Bug
from tests.envs.test_rollouts import DRAWING, HOSTILE, bundled_sets, kept_files, traces_of, whole_folder
from toolgym.cli import app
from toolgym.envs.demo import default_task_paths, demo_tasks_path
from toolgym.envs.ray_rollouts import INSTALL_HINT, RayExecutor, ToolServerSpec, import_ray
from toolgym.envs.rollouts import AgentSpec, EpisodeOutcome, RolloutError, episode_specs, rollout
from toolgym.evaluation.runs import run_trials
from toolgym.tasks import TaskSet
from toolgym.trace import read_trace

ray = pytest.importorskip("ray", reason="Ray rollouts are tested where toolgym[ray] is installed")


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    ray.init(
        num_cpus=2,
        num_gpus=1,  # a fake GPU: Ray schedules by declared resources, so placement is testable here
        include_dashboard=False,
        log_to_driver=False,
        _node_ip_address="127.0.0.1",
    )
    yield
    ray.shutdown()


def mock_sets() -> list[tuple[str, TaskSet]]:
    return bundled_sets()[1:]


def ray_sets() -> list[tuple[str, TaskSet]]:
    """The mock-app sets after a demo task that draws an image (kept as files/<sha256>)."""
    demo = bundled_sets()[0][1]
    return [("demo", TaskSet([demo[DRAWING]], base_dir=demo.base_dir)), *mock_sets()]


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """`ray_sets` with the oracle in one process: what every faulty run must end up with."""
    out = tmp_path_factory.mktemp("clean")
    sets = ray_sets()
    rollout(sets, episode_specs(sets, trials=1, seed=0), out=out)
    assert kept_files(whole_folder(out))
    return whole_folder(out)


def run_ray(
    out: Path, executor: RayExecutor, agent: AgentSpec | None = None, **kwargs: Any
) -> list[EpisodeOutcome]:
    sets = ray_sets()
    specs = episode_specs(sets, trials=1, seed=0)
    return rollout(sets, specs, out=out, executor=executor, agent=agent or AgentSpec(), **kwargs)


def test_toolgym_run_ray_over_every_bundled_task_set_writes_the_one_process_bytes(tmp_path: Path) -> None:
    runner = CliRunner()
    one, on_ray = tmp_path / "one", tmp_path / "ray"
    first = runner.invoke(app, ["run", "--out", str(one)])
    assert first.exit_code == 0, first.output
    second = runner.invoke(app, ["run", "--out", str(on_ray), "--ray"])  # joins the running instance
    assert second.exit_code == 0, second.output
    # the whole folder, byte for byte: traces, run.json and the images tools drew (`toolgym view`)
    expected = whole_folder(one)
    assert len(traces_of(expected)) == sum(len(TaskSet.load(p)) for p in default_task_paths())
    assert len(kept_files(expected)) >= 3  # the demo's plot, box and caption at least
    assert whole_folder(on_ray) == expected


def test_actors_killed_mid_episode_have_their_episodes_rerun_elsewhere(
    tmp_path: Path, clean: dict[str, bytes]
) -> None:
    """Two episodes each kill their actor after one step (the first time they run; one draws an
    image when it runs on); every trace and image is there once, byte-identical to the clean run,
    and no staged or partial file is left."""
    specs = episode_specs(ray_sets(), trials=1, seed=0)
    targets = [DRAWING, specs[30].task_id]
    markers = tmp_path / "markers"
    markers.mkdir()
    executor = RayExecutor(2, batch_size=4)
    agent = AgentSpec(HOSTILE, {"targets": targets, "marker_dir": str(markers)})
    outcomes = run_ray(tmp_path / "run", executor, agent)
    assert sorted(p.name for p in markers.iterdir()) == sorted(targets)  # each did kill its actor
    assert executor.stats.actors_lost == 2 and executor.stats.actors_started == 4
    assert executor.stats.resubmitted >= 2  # the killers and their batch mates, one by one
    assert all(o.status == "terminated" and o.reward == 1.0 for o in outcomes)
    assert whole_folder(tmp_path / "run") == clean


def test_an_episode_that_always_kills_its_actor_is_aborted_with_a_typed_error(
    tmp_path: Path, clean: dict[str, bytes]
) -> None:
    sets = ray_sets()
    poison = sets[2][1].tasks[2].id
    summary = run_trials(
        sets,
        AgentSpec(HOSTILE, {"targets": [poison]}),
        out=tmp_path,
        agent_name="oracle",
        executor=RayExecutor(2, max_attempts=2),
    )
    [lost] = summary.aborted
    assert lost.task_id == poison and lost.trace is None
    assert lost.error is not None and lost.error.startswith(
        "WorkerLost: the worker running this episode alone died 2 times"
    )
    assert all(e.success for e in summary.episodes if e is not lost)
    written = {k: v for k, v in whole_folder(tmp_path).items() if k != "run.json"}
    assert written == {k: v for k, v in clean.items() if poison not in k}  # the others are intact


def test_an_actor_killed_by_the_driver_loses_no_trace_and_back_pressure_holds(
    tmp_path: Path, clean: dict[str, bytes]
) -> None:
    executor = RayExecutor(2, batch_size=1, per_actor=4, max_in_flight=3)
    killed: list[int] = []

    def kill_first_actor(outcome: EpisodeOutcome) -> None:
        if not killed:
            killed.append(outcome.index)
            ray.kill(executor.live[0])  # while it has episodes queued (per_actor 4, in flight 3)

    outcomes = run_ray(tmp_path, executor, on_outcome=kill_first_actor)
    assert killed and executor.stats.actors_lost == 1
    assert executor.stats.peak_in_flight == 3  # never more episodes out than max_in_flight
    assert all(o.status == "terminated" for o in outcomes)
    assert whole_folder(tmp_path) == clean


def test_a_bug_in_an_actor_stops_the_run(tmp_path: Path) -> None:
    agent = AgentSpec(HOSTILE, {"targets": [mock_sets()[0][1].tasks[1].id], "what": "bug"})
    with pytest.raises(Bug, match="bug in"):
        run_ray(tmp_path, RayExecutor(2), agent)


def test_a_gpu_tool_server_actor_serves_the_cpu_rollout_actors(tmp_path: Path) -> None:
    """The Calculator served by an actor that holds the (fake) GPU; rollout actors call it over
    loopback HTTP, so their traces name the remote backend and the answers are right."""
    demo = TaskSet.load(demo_tasks_path())
    sets = [("demo", TaskSet([t for t in demo if t.id == "fish-oil-days"], base_dir=demo.base_dir))]
    executor = RayExecutor(1, tool_server=ToolServerSpec(tools=("Calculator",), num_gpus=1, num_cpus=0))
    outcomes = rollout(sets, episode_specs(sets, trials=2, seed=0), out=tmp_path, executor=executor)
    assert executor.stats.server_accelerators == {"GPU": ["0"]}  # the server actor holds the one GPU
    assert all(o.reward == 1.0 for o in outcomes)
    for o in outcomes:
        assert o.trace is not None
        header = read_trace(tmp_path / o.trace).header
        assert next(t.backend for t in header.tools if t.name == "Calculator").startswith("remote:")
    assert executor.server is None  # the server actor is gone with the run


def test_toolgym_run_places_the_gpu_tool_server_actor(tmp_path: Path) -> None:
    """`toolgym run --ray-tool-server-gpus 1`: the Calculator runs in an actor holding the (fake)
    GPU, the rollout actors call it over loopback HTTP, and the command says what it placed."""
    args = ["run", "--tasks", str(demo_tasks_path()), "--task-id", "fish-oil-days", "--trials", "2"]
    placed = [*args, "--out", str(tmp_path), "--ray-tool-server-gpus", "1"]
    result = CliRunner().invoke(app, [*placed, "--ray-tool-server-tool", "Calculator"])
    assert result.exit_code == 0, result.output
    assert "tool-server actor: Calculator at 127.0.0.1, asked num_gpus=1, Ray gave it GPU 0" in result.output
    traces = sorted(tmp_path.rglob("*.jsonl"))
    assert len(traces) == 2
    for path in traces:
        trace = read_trace(path)
        assert trace.end is not None and trace.end.reward == 1.0
        backends = {t.name: t.backend for t in trace.header.tools}
        assert backends["Calculator"].startswith("remote:")  # served by the actor
        assert not any(b.startswith("remote:") for name, b in backends.items() if name != "Calculator")


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--ray-tool-server-gpus", "1", "--ray-tool-server-tool", "Abacus"], "unknown tools ['Abacus']"),
        (["--ray-tool-server-gpus", "1", "--ray-tool-server-host", "0.0.0.0"], "TOOLGYM_TOOL_SERVER_TOKEN"),
        (["--ray-tool-server-tool", "Calculator"], "need --ray-tool-server-gpus"),
    ],
)
def test_bad_tool_server_options_stop_the_command_before_any_episode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: list[str], said: str
) -> None:
    monkeypatch.delenv("TOOLGYM_TOOL_SERVER_TOKEN", raising=False)
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", "--out", str(out), "--task-id", "fish-oil-days", *extra])
    assert result.exit_code == 2 and said in " ".join(result.output.split())
    assert not out.exists()


def test_without_ray_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # what a default install (no ray) sees
    with pytest.raises(RolloutError, match=r"pip install 'toolgym\[ray\]'"):
        import_ray()
    result = CliRunner().invoke(app, ["run", "--out", str(tmp_path), "--ray", "--task-id", "fish-oil-days"])
    assert result.exit_code == 2 and "toolgym[ray]" in result.output and INSTALL_HINT.startswith("pip")


def test_an_llm_user_on_ray_actors_writes_the_one_process_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`toolgym run --ray --user-base-url ... --user-model ...`: each actor builds its user LLM
    client from the EnvConfig's UserSpec, and the multi-turn traces match one process's."""
    from tests.evaluation.fake_openai import FakeOpenAI, serve
    from tests.evaluation.test_users import run_with_llm_user, tells_what_it_knows

    monkeypatch.setenv("USER_KEY", "user-secret")
    fake = FakeOpenAI(tells_what_it_knows, api_key="user-secret")
    with serve(fake):
        one = run_with_llm_user(fake.base_url, tmp_path / "one")
        assert one.exit_code == 0, one.output
        on_ray = run_with_llm_user(fake.base_url, tmp_path / "ray", "--ray")
        assert on_ray.exit_code == 0, on_ray.output
    assert len(fake.requests) == 12  # 3 tasks x 2 trials, once in process and once on Ray
    assert whole_folder(tmp_path / "ray") == whole_folder(tmp_path / "one")
