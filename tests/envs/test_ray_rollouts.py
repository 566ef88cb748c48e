"""Rollouts on a real local Ray instance (started once for the module, with a fake GPU): byte-
identical traces against one process, actors killed mid-episode, back-pressure, a GPU tool server
actor, actors that cannot be placed, kept actors (and a plug-in edited between two runs on them),
and the error when Ray is missing. A real cluster of two Ray nodes on this machine (`ray start`,
each with its own ports and temp dir) loses a node mid-run and a cluster with token authentication
refuses a client's token, each with its drivers in a network namespace the test makes (Ray's
cluster mode puts them on every interface). `toolgym run --ray` starts an instance of its own
beside a live or a stale one, with its ports on loopback (checked by its listening sockets and
from a network namespace the test makes) and token authentication on."""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.dynamic_tasks import write_dynamic_set
from tests.envs.rollout_agents import (
    HOLD_DIR_ENV,
    RELEASE,
    SLOW_START_S,
    STALL_DIR_ENV,
    WAIT_DIR_ENV,
    Bug,
    stalled_episodes,
)
from tests.envs.test_rollouts import DRAWING, HOSTILE, bundled_sets, kept_files, traces_of, whole_folder
from toolgym import plugins
from toolgym.cli import app
from toolgym.envs.demo import default_task_paths, demo_tasks_path
from toolgym.envs.ray_rollouts import (
    CLUSTER_MODE_ENV,
    INSTALL_HINT,
    NoActorLeft,
    RayExecutor,
    ToolServerSpec,
    import_ray,
    keepable,
    stop_kept_actors,
)
from toolgym.envs.rollouts import (
    AgentSpec,
    EpisodeOutcome,
    RolloutError,
    WorkerContext,
    episode_specs,
    rollout,
)
from toolgym.running.trials import SUMMARY_FILE, RunSummary, run_trials
from toolgym.tasks import Task, TaskSet
from toolgym.toolservers.hosting.process import free_ports
from toolgym.trace import read_trace

ray = pytest.importorskip("ray", reason="Ray rollouts are tested where toolgym[ray] is installed")


@pytest.fixture(scope="module")
def plugin_site() -> Iterator[Path]:
    """A folder on the module's actors' sys.path (PYTHONPATH when their instance starts) where a
    test installs a plug-in package as a folder and its `*.dist-info`."""
    site = Path(tempfile.mkdtemp(prefix="tg-site-"))
    yield site
    shutil.rmtree(site, ignore_errors=True)


@pytest.fixture(scope="module", autouse=True)
def local_ray(plugin_site: Path) -> Iterator[None]:
    """The module's instance, on loopback: Ray's cluster mode is off for it (in its processes'
    environment, and in this process's Ray, which read it at import, while it starts), else Ray
    puts the machine's outward address in place of 127.0.0.1, listens on every interface and is
    reached at that address."""
    from ray._private import ray_constants

    saved = {key: os.environ.get(key) for key in ("PYTHONPATH", CLUSTER_MODE_ENV)}
    cluster_mode = ray_constants.ENABLE_RAY_CLUSTER
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(plugin_site), saved["PYTHONPATH"]) if p)
    os.environ[CLUSTER_MODE_ENV] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:  # the instance's processes (and the workers they start) have them; this process keeps its own
        ray.init(
            num_cpus=2,
            num_gpus=1,  # a fake GPU: Ray schedules by declared resources, so placement is testable here
            include_dashboard=False,
            log_to_driver=False,
            _node_ip_address="127.0.0.1",
        )
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = cluster_mode
        for key, value in saved.items():
            os.environ.pop(key, None)
            if value is not None:
                os.environ[key] = value
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
    assert without_workers(whole_folder(on_ray)) == without_workers(expected, ray=False)


def test_toolgym_run_ray_on_a_world_that_moves_writes_the_one_process_bytes(tmp_path: Path) -> None:
    """A task with events of every trigger kind at verbosity high (which the actors' envs get from
    the run's EnvConfig), and the bundled dynamic sets: the same run folder as one process, the
    header naming the verbosity."""
    tasks = write_dynamic_set(tmp_path / "tasks")
    bundled = [
        "--tasks",
        "dynamic-at-time",
        "--tasks",
        "dynamic-world-changes",
        "--tasks",
        "dynamic-wait-for-reply",
    ]
    args = ["run", "--tasks", str(tasks), *bundled, "--trials", "2", "--notifications", "high"]
    one, on_ray = tmp_path / "one", tmp_path / "ray"
    runner = CliRunner()
    first = runner.invoke(app, [*args, "--out", str(one)])
    assert first.exit_code == 0, first.output
    second = runner.invoke(app, [*args, "--out", str(on_ray), "--ray"])
    assert second.exit_code == 0, second.output
    expected = whole_folder(one)
    assert without_workers(whole_folder(on_ray)) == without_workers(expected, ray=False)
    [trace] = [name for name in traces_of(expected) if "/dynamic/" in name and "trial-0" in name]
    header, *steps = [json.loads(line) for line in expected[trace].decode().splitlines()]
    assert header["env_config"]["notifications"] == "high"
    assert len(traces_of(expected)) == 2 * (1 + 37)  # two trials of the lunch task and the 37 bundled
    assert [e["id"] for s in steps for e in s.get("events") or []] == ["nudge", "reply", "ping"]


def without_workers(folder: dict[str, bytes], *, ray: bool = True) -> dict[str, Any]:
    """A run folder with run.json parsed and each episode's `worker` (where it ran) checked and
    taken out: on Ray a node id, an actor id and a process id; in one process none. The rest of
    run.json, and every other file, is the same whichever executor ran the episodes."""
    summary = json.loads(folder[SUMMARY_FILE])
    for episode in summary["episodes"]:
        worker = episode.pop("worker")
        if ray:
            assert isinstance(worker["node"], str) and isinstance(worker["actor"], str), episode
            assert isinstance(worker["pid"], int) and worker["pid"] > 0, episode
        else:
            assert worker is None, episode
    return {**folder, SUMMARY_FILE: summary}


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


def test_kept_actors_serve_the_next_run_with_their_worlds_and_the_same_bytes(
    tmp_path: Path, clean: dict[str, bytes]
) -> None:
    """keep_actors_s: the second run leases the first run's two actors, and their workers (envs
    and worlds built) since it runs the same context; both write the one-process bytes. A run
    naming code of its own gets fresh actors (a kept process would keep its first import)."""
    first, second = RayExecutor(2, keep_actors_s=60), RayExecutor(2, keep_actors_s=60)
    try:
        run_ray(tmp_path / "first", first)
        run_ray(tmp_path / "second", second)
    finally:
        killed = stop_kept_actors()  # their CPUs are the next tests'
    assert (first.stats.actors_reused, second.stats.actors_reused, second.stats.workers_reused) == (0, 2, 2)
    assert second.stats.actors_started == 2 and killed == 2
    assert whole_folder(tmp_path / "first") == clean and whole_folder(tmp_path / "second") == clean
    assert keepable(WorkerContext(ray_sets())) and not keepable(
        WorkerContext(ray_sets(), agent=AgentSpec(HOSTILE))
    )


LARDER_APP = """
from typing import Any

from toolgym.mocks import App, insert_rows, ok, read

JARS = 12


class LarderApp(App):
    name = "tg_larder"
    description = "A larder: how many jars it holds."
    version = "1"
    schema = "CREATE TABLE larder_shelves (shelf TEXT PRIMARY KEY, jars INTEGER NOT NULL);"

    def seed(self, db: Any, rng: Any, clock: Any) -> None:
        insert_rows(db, "larder_shelves", [{"shelf": "top", "jars": JARS}])

    @read
    def count_jars(self) -> dict[str, Any]:
        \"\"\"How many jars the larder holds.\"\"\"
        return ok(jars=self.rows("SELECT jars FROM larder_shelves")[0]["jars"])
"""


def install_larder(site: Path) -> Path:
    """A plug-in distribution `tg-larder` (its package, and a `*.dist-info` naming its app in the
    `toolgym.apps` entry points) in `site`, as an editable install leaves it: the package's source
    is what runs. Returns its app module."""
    package = site / "tg_larder"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "app.py").write_text(LARDER_APP, encoding="utf-8")
    info = site / "tg_larder-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tg-larder\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(
        "[toolgym.apps]\ntg_larder = tg_larder.app:LarderApp\n", encoding="utf-8"
    )
    return package / "app.py"


def larder_tasks() -> list[tuple[str, TaskSet]]:
    golden = [
        {"action": {"type": "tool_call", "name": "count_jars", "arguments": {}}},
        {"action": {"type": "final_answer", "text": "the jars"}},
    ]
    tasks = [
        Task.model_validate(
            {"id": f"larder-{i}", "query": "How many jars?", "apps": ["tg_larder"], "golden": golden}
        )
        for i in range(2)
    ]
    return [("larder", TaskSet(tasks))]


def test_kept_actors_run_a_plugin_edited_since_the_last_run_with_its_new_code(
    tmp_path: Path, plugin_site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plug-in app installed from its source folder (an editable install) is edited between two
    runs on kept actors: the second run's traces are the new code's (those of a run in this
    process after the edit), not the kept actors' old code's. The kept actors' name covers every
    plug-in package the entry points load, so the second run retires them for fresh ones."""
    app_file = install_larder(plugin_site)
    monkeypatch.syspath_prepend(str(plugin_site))
    plugins.refresh()
    sets = larder_tasks()
    specs = episode_specs(sets, trials=1, seed=0)
    first, second = RayExecutor(1, keep_actors_s=60), RayExecutor(1, keep_actors_s=60)
    try:
        rollout(sets, specs, out=tmp_path / "first", executor=first)
        # another length too: a same-size edit within the second would pass for the cached bytecode
        app_file.write_text(LARDER_APP.replace("JARS = 12", "JARS = 1234"), encoding="utf-8")
        rollout(sets, specs, out=tmp_path / "second", executor=second)
        sys.modules.pop("tg_larder.app", None)  # this process runs the edited code from here on
        sys.modules.pop("tg_larder", None)
        plugins.refresh()
        rollout(sets, specs, out=tmp_path / "here")
    finally:
        stop_kept_actors()  # their CPUs are the next tests'
        for name in ("tg_larder.app", "tg_larder"):
            sys.modules.pop(name, None)
        monkeypatch.undo()
        plugins.refresh()
    here, on_kept = whole_folder(tmp_path / "here"), whole_folder(tmp_path / "second")
    assert len(traces_of(here)) == 2 and b"1234" in here[traces_of(here)[0]]  # the edited seed
    assert on_kept == here  # before the fix: the first run's bytes (the kept actor's old code)
    assert whole_folder(tmp_path / "first") != here
    assert second.stats.actors_reused == 0 and second.stats.actors_started == 1


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
    from tests.models.fake_openai import FakeOpenAI, serve
    from tests.models.test_users import run_with_llm_user, tells_what_it_knows

    monkeypatch.setenv("USER_KEY", "user-secret")
    fake = FakeOpenAI(tells_what_it_knows, api_key="user-secret")
    with serve(fake):
        one = run_with_llm_user(fake.base_url, tmp_path / "one")
        assert one.exit_code == 0, one.output
        on_ray = run_with_llm_user(fake.base_url, tmp_path / "ray", "--ray")
        assert on_ray.exit_code == 0, on_ray.output
    assert len(fake.requests) == 12  # 3 tasks x 2 trials, once in process and once on Ray
    on_ray, one = whole_folder(tmp_path / "ray"), whole_folder(tmp_path / "one")
    assert without_workers(on_ray) == without_workers(one, ray=False)


def test_actors_that_cannot_be_placed_abort_their_episodes_as_infra(tmp_path: Path) -> None:
    """Actors asking for more CPUs than the local instance has are never placed: after the bound
    the run ends, every episode aborted with the reason (not the agent's failure), none waited for."""
    sets = mock_sets()[:1]
    specs = episode_specs(sets, trials=1, seed=0)[:3]
    executor = RayExecutor(2, actor_cpus=4, ready_timeout_s=0.5)  # the instance has 2 CPUs
    outcomes = rollout(sets, specs, out=tmp_path, executor=executor)
    assert executor.stats.actors_unplaced == 2 and executor.live == []
    assert [o.status for o in outcomes] == ["aborted"] * 3
    for o in outcomes:
        assert o.error is not None and o.error.startswith(f"{NoActorLeft.__name__}: no Ray actor was left")
        assert "2 could not be placed within 0.5 s" in o.error and o.trace is None and o.worker is None


def test_an_actor_placed_but_slow_to_start_is_waited_for(tmp_path: Path) -> None:
    """The bound is on placement: an actor that has its worker process and is still starting (its
    imports take longer than the bound, as on a loaded node) runs its episodes, none aborted."""
    sets = mock_sets()[:1]
    specs = episode_specs(sets, trials=1, seed=0)[:2]
    executor = RayExecutor(1, ready_timeout_s=SLOW_START_S / 3)
    abort_on = ("tests.envs.slow_start:SlowAbort",)
    outcomes = rollout(sets, specs, out=tmp_path, executor=executor, abort_on=abort_on)
    assert [o.status for o in outcomes] == ["terminated"] * 2, [o.error for o in outcomes]
    assert executor.stats.actors_unplaced == 0 and executor.stats.actors_started == 1


def test_a_tool_server_actor_that_cannot_be_placed_stops_the_run_at_once(tmp_path: Path) -> None:
    sets = mock_sets()[:1]
    spec = ToolServerSpec(tools=("Calculator",), num_gpus=2, num_cpus=0)  # the instance has 1 GPU
    executor = RayExecutor(1, tool_server=spec, ready_timeout_s=0.5)
    with pytest.raises(RolloutError, match=r"tool-server actor \(num_gpus=2, num_cpus=0\) was not placed"):
        rollout(sets, episode_specs(sets, trials=1, seed=0)[:1], out=tmp_path, executor=executor)
    assert executor.server is None and executor.stats.actors_started == 0


# ---- a real cluster of Ray nodes on this machine ----------------------------------------------
CLUSTER_ENV = "TOOLGYM_TEST_RAY_CLUSTER"  # in the environment of every process a test cluster starts
TOOLGYM = Path(sys.executable).with_name("toolgym")
NAMESPACE_OUTWARD = "198.51.100.7"  # TEST-NET-2 (RFC 5737): a namespace's outward address, no network's


def require_network_namespaces() -> None:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("a network namespace needs root and iproute2's `ip`")


def set_up_network(steps: list[list[str]]) -> None:
    """Runs iproute2's `steps` in order; at the first one this machine refuses, skips the test
    and says which and why."""
    for step in steps:
        made = subprocess.run(step, capture_output=True, text=True)
        if made.returncode != 0:
            pytest.skip(f"no network namespace here: {' '.join(step)}: {made.stderr.strip()}")


@dataclass(frozen=True)
class NetworkNamespace:
    name: str
    outward: str  # its only address besides loopback's, on a link the test made inside it

    def command(self, argv: Sequence[str]) -> list[str]:
        """`argv` run inside the namespace (`ip netns exec` execs it: the pid stays the same)."""
        return ["ip", "netns", "exec", self.name, *argv]

    def pids(self) -> list[int]:
        listed = subprocess.run(["ip", "netns", "pids", self.name], capture_output=True, text=True)
        return [int(pid) for pid in listed.stdout.split()]


@contextmanager
def network_namespace() -> Iterator[NetworkNamespace]:
    """A network namespace of the test's own, for Ray's cluster mode: its nodes listen on every
    interface and their clients connect through the outward address (Ray's, for a loopback
    address), which inside is `NAMESPACE_OUTWARD`, the test's, never this machine's. Its outward
    link is a veth pair with both ends inside (a kernel may lack `dummy` links), the default route
    on it so that Ray's lookup of that address (a UDP socket's route, no packet) finds it; nothing
    routes out of the namespace. Its processes are killed, by pid, and it is deleted on exit.
    Skips where the test may not make one (not root, no `ip`, no namespaces)."""
    require_network_namespaces()
    space = NetworkNamespace(f"tg-ray-{uuid.uuid4().hex[:8]}", NAMESPACE_OUTWARD)
    steps = [
        ["ip", "netns", "add", space.name],
        space.command(["ip", "link", "set", "lo", "up"]),
        space.command(["ip", "link", "add", "out0", "type", "veth", "peer", "name", "out1"]),
        space.command(["ip", "addr", "add", f"{space.outward}/24", "dev", "out0"]),
        space.command(["ip", "link", "set", "out1", "up"]),
        space.command(["ip", "link", "set", "out0", "up"]),
        space.command(["ip", "route", "add", "default", "dev", "out0"]),
    ]
    try:
        set_up_network(steps)
        yield space
    finally:
        deadline = time.monotonic() + 10
        while (left := space.pids()) and time.monotonic() < deadline:
            for pid in left:
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)
        subprocess.run(["ip", "netns", "del", space.name], capture_output=True)


def proc_environ(pid: int) -> dict[str, str]:
    """A process's environment ({} when it is gone or not ours to read)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (item.decode(errors="replace").partition("=") for item in raw.split(b"\0") if item)
    return {key: value for key, _, value in pairs}


def proc_children(pid: int) -> list[int]:
    try:
        listed = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in listed.split()]


def proc_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


@dataclass
class RayNodes:
    """Ray nodes started by `ray start --block` (one CLI process each, the parent of the node's
    daemons), each with its own ports and temp dir under `root`, and a HOME of their own (Ray
    reads its token from ~/.ray), in `namespace` where they have one. `stop` kills, by pid, every
    process they started."""

    root: Path
    env: dict[str, str]  # the nodes' environment, and that of a driver that joins them
    namespace: NetworkNamespace | None = None
    address: str = ""
    starters: list[subprocess.Popen[bytes]] = field(default_factory=list)
    raylets: list[int] = field(default_factory=list)

    def command(self, argv: Sequence[str]) -> list[str]:
        """`argv` run where the nodes are, as a node or a driver that joins them."""
        return self.namespace.command(argv) if self.namespace else list(argv)

    def start(self, name: str, extra_env: Mapping[str, str] | None = None) -> None:
        ports = free_ports(8)
        args = [
            f"--temp-dir={self.root / name}",
            f"--node-manager-port={ports[0]}",
            f"--object-manager-port={ports[1]}",
            f"--metrics-export-port={ports[2]}",
            f"--dashboard-agent-listen-port={ports[3]}",
            f"--dashboard-agent-grpc-port={ports[4]}",
            f"--runtime-env-agent-port={ports[5]}",
            "--min-worker-port=0",  # workers bind ports the system picks
            "--max-worker-port=0",
            "--num-cpus=1",
            "--node-ip-address=127.0.0.1",
            "--disable-usage-stats",
            "--block",
        ]
        if self.address:
            args.append(f"--address={self.address}")
        else:
            self.address = f"127.0.0.1:{ports[6]}"
            args += [
                "--head",
                f"--port={ports[6]}",
                "--include-dashboard=false",
                f"--dashboard-port={ports[7]}",
            ]
        log = self.root / f"{name}.log"
        with log.open("wb") as sink:
            starter = subprocess.Popen(
                self.command([str(TOOLGYM.with_name("ray")), "start", *args]),
                env={**self.env, **(extra_env or {})},
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.starters.append(starter)
        deadline = time.monotonic() + 120
        while b"Ray runtime started" not in log.read_bytes():
            assert starter.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        [raylet] = [pid for pid in proc_children(starter.pid) if proc_name(pid) == "raylet"]
        self.raylets.append(raylet)

    def processes(self) -> set[int]:
        """Every live process of these nodes: the CLI processes and their daemons (by descent or
        by the marker in their environment), and the agents and workers a raylet started (by the
        raylet's pid in theirs, even once the raylet is gone)."""
        found: set[int] = set()
        todo = [starter.pid for starter in self.starters]
        while todo:
            pid = todo.pop()
            found.add(pid)
            todo += proc_children(pid)
        raylets = {str(pid) for pid in self.raylets}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                env = proc_environ(int(entry.name))
                if env.get(CLUSTER_ENV) == str(self.root) or env.get("RAY_RAYLET_PID") in raylets:
                    found.add(int(entry.name))
        return found - {os.getpid()}

    def stop(self) -> None:
        for _ in range(3):  # again for a process forked meanwhile
            for pid in self.processes():
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        for starter in self.starters:
            starter.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(proc_environ(pid) for pid in self.processes()):
            time.sleep(0.1)


@contextmanager
def ray_nodes(*, auth_mode: str = "disabled", namespace: bool = True) -> Iterator[RayNodes]:
    """Nodes to `start`, given 127.0.0.1, and stopped whatever happens. With Ray's cluster mode on
    (a cluster of several nodes needs it) they listen on every interface and are reached at the
    outward address, so they and their drivers run in a `network_namespace` of their own, unless
    `namespace` is False (for a node with the cluster mode off, which stays on loopback). Their
    folder is short (Ray's socket paths under it must fit in 107 bytes) and goes with them."""
    with ExitStack() as stack:
        space = stack.enter_context(network_namespace()) if namespace else None  # deleted after they stop
        root = Path(tempfile.mkdtemp(prefix="tg-ray-"))
        home = root / "home"
        home.mkdir()
        ambient = {"RAY_ADDRESS", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"}  # the user's cluster, not ours
        env = {key: value for key, value in os.environ.items() if key not in ambient}
        env |= {
            CLUSTER_ENV: str(root),
            "HOME": str(home),
            "RAY_AUTH_MODE": auth_mode,
            "PYTHONPATH": str(Path(__file__).parents[2]),  # the actors import the test agents
            # a lost node's checks fail at once (nothing listens): the head knows in 2.5 s, not 15 s;
            # a slow one still has Ray's 10 s to answer each check
            "RAY_health_check_period_ms": "500",
            "RAY_health_check_failure_threshold": "5",
        }
        nodes = RayNodes(root, env, space)
        try:
            yield nodes
        finally:
            nodes.stop()
            shutil.rmtree(root, ignore_errors=True)


def test_a_lost_node_hangs_no_run(tmp_path: Path) -> None:
    """Two nodes of one CPU, one actor each. Node 2's actor stalls on its first episode, and node
    2's raylet is killed (SIGKILL) meanwhile: its actor dies, the replacement can never be placed
    (the head's CPU is taken), so after the bound the episodes run on the head's actor, and
    run.json says each ran there. The head's actor holds its first episode until node 2 stalls
    one (else under load it may run all six before node 2's actor is up)."""
    stall = tmp_path / "stall"
    stall.mkdir()
    out = tmp_path / "run"
    with ray_nodes() as nodes:
        nodes.start("head", {WAIT_DIR_ENV: str(stall)})
        nodes.start("node2", {STALL_DIR_ENV: str(stall)})
        args = ["run", "--ray-address", nodes.address, "--workers", "2", "--ray-ready-timeout", "30"]
        args += ["--agent", "tests.envs.rollout_agents:stall_where_told", "--tasks", "teval", "--limit", "6"]
        driver = subprocess.Popen(
            nodes.command([str(TOOLGYM), *args, "--out", str(out)]),
            env=nodes.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        try:
            while not stalled_episodes(stall):
                assert driver.poll() is None, driver.communicate()[0].decode(errors="replace")
                time.sleep(0.2)
            os.kill(nodes.raylets[1], signal.SIGKILL)  # node 2 is lost, with an episode on it
            output, _ = driver.communicate(timeout=180)  # before the fix: no end
        finally:
            driver.kill()
            driver.wait()
    assert driver.returncode == 0, output.decode(errors="replace")
    [stalled] = [json.loads(p.read_text()) for p in stall.iterdir()]
    summary = RunSummary.load(out)
    assert [(e.status, e.reward) for e in summary.episodes] == [("terminated", 1.0)] * 6
    workers = [e.worker for e in summary.episodes]
    assert all(w is not None and w["node"] != stalled["node"] and w["pid"] != stalled["pid"] for w in workers)
    assert len({(w["node"], w["actor"], w["pid"]) for w in workers if w is not None}) == 1  # the head's actor


def test_a_cluster_that_refuses_the_token_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """Ray's token authentication: the head holds one token, the driver another (both in
    ~/.ray/auth_token, RAY_AUTH_MODE=token); `toolgym run` says so in one line, exit 2, at once."""
    with ray_nodes(auth_mode="token") as nodes:
        (Path(nodes.env["HOME"]) / ".ray").mkdir()
        (Path(nodes.env["HOME"]) / ".ray" / "auth_token").write_text("cluster-token-" + "a" * 32)
        nodes.start("head")
        home = tmp_path / "driver-home"
        (home / ".ray").mkdir(parents=True)
        (home / ".ray" / "auth_token").write_text("another-token-" + "b" * 32)
        out = tmp_path / "run"
        args = ["run", "--ray-address", nodes.address, "--tasks", "teval", "--limit", "1", "--out", str(out)]
        env = {**nodes.env, "HOME": str(home)}
        result = subprocess.run(
            nodes.command([str(TOOLGYM), *args]), env=env, capture_output=True, text=True, timeout=120
        )
    assert result.returncode == 2 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(
        f"toolgym: error: Invalid value for --ray-address: the Ray cluster at {nodes.address}"
    )
    assert "refused this client's token" in line and "RAY_AUTH_TOKEN" in line
    assert not out.exists()


# ---- the Ray instance `toolgym run --ray` starts for itself --------------------------------------
def run_toolgym(args: list[str], env: dict[str, str], timeout: int = 300) -> subprocess.CompletedProcess[str]:
    """The real command in a subprocess, its output in pipes."""
    return subprocess.run([str(TOOLGYM), *args], env=env, capture_output=True, text=True, timeout=timeout)


def driver_env(home: Path, **extra: str) -> dict[str, str]:
    """A `toolgym run` process's environment: none of the user's Ray settings, a HOME of its own
    (Ray reads and writes ~/.ray there), the test agents importable."""
    ambient = {"RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_TMPDIR"}
    env = {key: value for key, value in os.environ.items() if key not in ambient and key != CLUSTER_MODE_ENV}
    return env | {"HOME": str(home), "PYTHONPATH": str(Path(__file__).parents[2]), **extra}


def listening(pids: list[int]) -> list[tuple[str, str, int, int]]:
    """(process name, address, port, pid) of every TCP socket these processes listen on."""
    psutil = pytest.importorskip("psutil")
    found = []
    for pid in pids:
        with suppress(psutil.Error):
            process = psutil.Process(pid)
            for conn in process.net_connections(kind="tcp"):
                if conn.status == psutil.CONN_LISTEN:
                    found.append((process.name(), conn.laddr.ip, conn.laddr.port, pid))
    return found


def on_loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip.split("%")[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # ::ffff:127.0.0.1, a dual-stack socket bound to loopback
    return address.is_loopback


PROBE = """
import socket, sys
host, ports = sys.argv[1], sys.argv[2:]
for port in ports:
    with socket.socket() as s:
        s.settimeout(5)
        print(port, "open" if s.connect_ex((host, int(port))) == 0 else "closed")
"""


@contextmanager
def another_host() -> Iterator[tuple[str, Any]]:
    """A network namespace joined to this one by a veth pair: what another host on a LAN reaches.
    Yields this side's address on the pair and `probe(ports) -> {port: "open" | "closed"}`, which
    connects from the namespace. Skips where the test may not make one (not root, no `ip`)."""
    require_network_namespaces()
    tag = uuid.uuid4().hex[:8]
    space, ours, theirs = f"tg{tag}", f"tgh{tag}", f"tgn{tag}"
    base = 4 * (int(tag, 16) % 64)  # a /30 of TEST-NET-2 (RFC 5737), no real network's
    here, there = f"198.51.100.{base + 1}", f"198.51.100.{base + 2}"
    steps = [
        ["ip", "netns", "add", space],
        ["ip", "link", "add", ours, "type", "veth", "peer", "name", theirs],
        ["ip", "link", "set", theirs, "netns", space],
        ["ip", "addr", "add", f"{here}/30", "dev", ours],
        ["ip", "link", "set", ours, "up"],
        ["ip", "netns", "exec", space, "ip", "addr", "add", f"{there}/30", "dev", theirs],
        ["ip", "netns", "exec", space, "ip", "link", "set", theirs, "up"],
    ]

    def probe(ports: list[int]) -> dict[int, str]:
        command = ["ip", "netns", "exec", space, sys.executable, "-c", PROBE, here, *map(str, ports)]
        answer = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout
        return {int(port): said for port, said in (line.split() for line in answer.splitlines())}

    try:
        set_up_network(steps)
        yield here, probe
    finally:
        subprocess.run(["ip", "link", "del", ours], capture_output=True)
        subprocess.run(["ip", "netns", "del", space], capture_output=True)


def test_toolgym_run_ray_starts_its_own_instance_on_loopback_with_token_auth(tmp_path: Path) -> None:
    """`toolgym run --ray`, its episode held while the test looks: every port of the instance it
    starts (GCS, raylet, agents, driver, actor) listens on loopback, and none answers from a
    network namespace (another host) where a port this test opens on every interface does; token
    authentication is on, with a token in a 0600 file of the instance's own (no ~/.ray written),
    and a client without it is refused. Ray's temp folder names a cluster that is gone (a stale
    `ray_current_cluster` of a closed loopback port): the run never waits for it. After the run,
    no process of the instance and no file of it is left."""
    hold, home, out = tmp_path / "hold", tmp_path / "home", tmp_path / "run"
    hold.mkdir()
    home.mkdir()
    ray_tmp = Path(tempfile.mkdtemp(prefix="tg-rt-"))  # short: Ray's socket paths go below it
    (ray_tmp / "ray").mkdir()
    (ray_tmp / "ray" / "ray_current_cluster").write_text(f"127.0.0.1:{free_ports(1)[0]}")  # closed
    env = driver_env(home, RAY_TMPDIR=str(ray_tmp), **{HOLD_DIR_ENV: str(hold)})
    args = ["run", "--ray", "--workers", "1", "--agent", "tests.envs.rollout_agents:stall_where_told"]
    args += ["--tasks", "teval", "--limit", "1", "--out", str(out)]
    driver = subprocess.Popen(
        [str(TOOLGYM), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    instance: list[int] = []
    try:
        deadline = time.monotonic() + 240  # generous: a loaded 2-core machine starts Ray slowly
        while not stalled_episodes(hold):  # before the fix: it retried the stale cluster for minutes
            assert driver.poll() is None and time.monotonic() < deadline, driver.communicate()[0].decode()
            time.sleep(0.2)
        instance = [driver.pid, *ray_descendants(driver.pid)]
        sockets = listening(instance)
        assert {"gcs_server", "raylet"} <= {name for name, *_ in sockets}, sockets
        assert all(on_loopback(ip) for _, ip, *_ in sockets), sockets  # before the fix: * and the outward IP
        with socket.create_server(("0.0.0.0", 0)) as everywhere, another_host() as (_, probe):
            control = everywhere.getsockname()[1]
            reached = probe([control, *(port for _, _, port, _ in sockets)])
        assert reached.pop(control) == "open"  # the namespace does reach this host
        assert set(reached.values()) == {"closed"}, reached
        [(gcs_port, gcs_pid)] = [(port, pid) for name, _, port, pid in sockets if name == "gcs_server"]
        token = Path(proc_environ(gcs_pid)["RAY_AUTH_TOKEN_PATH"])  # the instance's, set as it started
        assert (
            stat.S_IMODE(token.stat().st_mode) == 0o600 and stat.S_IMODE(token.parent.stat().st_mode) == 0o700
        )
        assert not (home / ".ray").exists()  # before the fix: ~/.ray/auth_token, mode 0644
        assert_refused_without_token(f"127.0.0.1:{gcs_port}", tmp_path)
        (hold / RELEASE).touch()
        output, _ = driver.communicate(timeout=240)
        assert driver.returncode == 0, output.decode(errors="replace")
        assert wait_gone(instance)  # the instance ended with the run
        assert not token.parent.exists()
    finally:
        for pid in [driver.pid, *ray_descendants(driver.pid), *instance]:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        driver.wait()
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert [e.status for e in RunSummary.load(out).episodes] == ["terminated"]


def ray_descendants(pid: int) -> list[int]:
    """A process's descendants, those its threads started included (by their parent pid)."""
    psutil = pytest.importorskip("psutil")
    with suppress(psutil.Error):
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    return []


def wait_gone(pids: list[int], bound_s: float = 60.0) -> bool:
    deadline = time.monotonic() + bound_s
    while any(proc_environ(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def assert_refused_without_token(address: str, tmp_path: Path) -> None:
    """A client with token authentication off (`RAY_AUTH_MODE=disabled`, no token) is refused,
    in one line, exit 2. (Its cluster mode is off so that it keeps the loopback address.)"""
    home = tmp_path / "intruder"
    home.mkdir()
    env = driver_env(home, RAY_AUTH_MODE="disabled", **{CLUSTER_MODE_ENV: "0"})
    args = ["run", "--ray-address", address, "--tasks", "teval", "--limit", "1", "--out", str(home / "run")]
    result = run_toolgym(args, env, timeout=120)
    assert result.returncode == 2 and "refused this client's token" in result.stderr, result.stderr
    assert not (home / "run").exists()


def test_toolgym_run_ray_joins_a_cluster_only_when_told(tmp_path: Path) -> None:
    """A live cluster started by `ray start` in Ray's temp folder (its `ray_current_cluster` names
    it): `toolgym run --ray` starts an instance of its own beside it (before the fix it ran its
    episodes there); with RAY_ADDRESS naming it, the run joins it and says so in one line."""
    # Ray's cluster mode off, for the node and the drivers: the node stays on 127.0.0.1 and the
    # drivers keep that address (with it on, Ray puts the machine's outward address in its place;
    # a node of a cluster of several refuses it)
    loopback = {CLUSTER_MODE_ENV: "0"}
    with ray_nodes(namespace=False) as nodes:
        nodes.start("ray", loopback)  # --temp-dir=<root>/ray: Ray's temp folder when RAY_TMPDIR is <root>
        assert (nodes.root / "ray" / "ray_current_cluster").read_text().strip() == nodes.address
        cluster_node = raylet_node_id(nodes.raylets[0])
        env = driver_env(Path(nodes.env["HOME"]), RAY_TMPDIR=str(nodes.root), **loopback)
        args = ["run", "--ray", "--workers", "1", "--tasks", "teval", "--limit", "2"]
        alone = run_toolgym([*args, "--out", str(tmp_path / "alone")], env)
        told_env = env | {"RAY_ADDRESS": nodes.address, "RAY_AUTH_MODE": "disabled"}
        told = run_toolgym([*args, "--out", str(tmp_path / "told")], told_env)
    assert alone.returncode == 0, alone.stderr
    assert {w["node"] for w in run_workers(tmp_path / "alone")} != {cluster_node}
    assert "joining the Ray cluster" not in alone.stderr
    assert told.returncode == 0, told.stderr
    assert {w["node"] for w in run_workers(tmp_path / "told")} == {cluster_node}
    [said] = [line for line in told.stderr.splitlines() if "joining the Ray cluster" in line]
    assert said.startswith(f"toolgym: joining the Ray cluster at {nodes.address}, which RAY_ADDRESS names")


def raylet_node_id(pid: int) -> str:
    arguments = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    [node] = [a.removeprefix("--node_id=") for a in arguments if a.startswith("--node_id=")]
    return node


def run_workers(out: Path) -> list[dict[str, Any]]:
    workers = [e.worker for e in RunSummary.load(out).episodes]
    assert workers and all(w is not None for w in workers)
    return [w for w in workers if w is not None]


WORKER_START_S = 6.0  # how long each Ray worker process of the slow site takes to start


def slow_worker_site(folder: Path) -> Path:
    """A folder whose sitecustomize.py makes every Ray worker process (Ray's default_worker.py) take
    WORKER_START_S before it starts, as on a loaded machine; on PYTHONPATH, nothing else changes."""
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(
        "import sys, time\n"
        "if sys.argv and sys.argv[0].endswith('default_worker.py'):\n"
        f"    time.sleep({WORKER_START_S})\n",
        encoding="utf-8",
    )
    return folder


def test_on_the_runs_own_instance_actors_whose_workers_start_slowly_are_waited_for(tmp_path: Path) -> None:
    """`toolgym run --ray` on an instance of its own, its worker processes slower to start than the
    bound on placement: the one actor fits the instance's CPUs, nothing else takes them, so it is
    waited for and runs every episode (before: both aborted, as in CI on a saturated machine)."""
    home = tmp_path / "home"
    home.mkdir()
    site = slow_worker_site(tmp_path / "site")
    # no worker started ahead (Ray would start them with the instance, inside ray.init): the actor's
    # own worker process starts when it is asked for
    env = driver_env(home, RAY_prestart_worker_first_driver="0", RAY_enable_worker_prestart="0")
    env["PYTHONPATH"] = os.pathsep.join((str(site), env["PYTHONPATH"]))
    args = ["run", "--ray", "--workers", "1", "--tasks", "teval", "--limit", "2"]
    args += ["--ray-ready-timeout", str(WORKER_START_S / 6), "--out", str(tmp_path / "run")]
    result = run_toolgym(args, env)
    assert result.returncode == 0, result.stderr
    episodes = RunSummary.load(tmp_path / "run").episodes
    assert [e.status for e in episodes] == ["terminated"] * 2, [e.error for e in episodes]


def test_an_own_instance_without_token_auth_needs_the_opt_in(tmp_path: Path) -> None:
    """RAY_AUTH_MODE=disabled: `toolgym run --ray` stops in one line (exit 2, nothing started or
    written) unless --ray-allow-no-auth says the instance may go without token authentication.
    The instance's folder is gone with it."""
    home = tmp_path / "home"
    home.mkdir()
    ray_tmp = Path(tempfile.mkdtemp(prefix="tg-rt-"))  # short: Ray's socket paths go below it
    env = driver_env(home, RAY_AUTH_MODE="disabled", RAY_TMPDIR=str(ray_tmp))
    args = ["run", "--ray", "--workers", "1", "--tasks", "teval", "--limit", "1"]
    refused = run_toolgym([*args, "--out", str(tmp_path / "refused")], env, timeout=120)
    assert refused.returncode == 2 and refused.stdout == "", refused.stderr
    [line] = refused.stderr.splitlines()
    assert line.startswith("toolgym: error: Invalid value for --ray: RAY_AUTH_MODE=disabled would start")
    assert "--ray-allow-no-auth" in line and not (tmp_path / "refused").exists()
    try:
        allowed = run_toolgym([*args, "--ray-allow-no-auth", "--out", str(tmp_path / "allowed")], env)
        left = list(ray_tmp.iterdir())
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert allowed.returncode == 0, allowed.stderr
    assert left == []  # the instance's folder (tg-ray-*) went with it
    assert [e.status for e in RunSummary.load(tmp_path / "allowed").episodes] == ["terminated"]
