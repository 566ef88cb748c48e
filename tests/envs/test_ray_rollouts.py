"""Rollouts on a real local Ray instance (started once for the module, with a fake GPU): byte-
identical traces against one process, actors killed mid-episode, back-pressure, a GPU tool server
actor, actors that cannot be placed, and the error when Ray is missing. A real cluster of two Ray
nodes on this machine (`ray start`, each with its own ports and temp dir) loses a node mid-run, and
a cluster with token authentication refuses a client's token."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.envs.rollout_agents import STALL_DIR_ENV, WAIT_DIR_ENV, Bug, stalled_episodes
from tests.envs.test_rollouts import DRAWING, HOSTILE, bundled_sets, kept_files, traces_of, whole_folder
from toolgym.cli import app
from toolgym.envs.demo import default_task_paths, demo_tasks_path
from toolgym.envs.ray_rollouts import (
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
from toolgym.evaluation.runs import SUMMARY_FILE, RunSummary, run_trials
from toolgym.tasks import TaskSet
from toolgym.toolservers.hosting.process import free_ports
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
    assert without_workers(whole_folder(on_ray)) == without_workers(expected, ray=False)


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
    reads its token from ~/.ray). `stop` kills, by pid, every process they started."""

    root: Path
    env: dict[str, str]  # the nodes' environment, and that of a driver that joins them
    address: str = ""
    starters: list[subprocess.Popen[bytes]] = field(default_factory=list)
    raylets: list[int] = field(default_factory=list)

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
                [str(TOOLGYM.with_name("ray")), "start", *args],
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
def ray_nodes(*, auth_mode: str = "disabled") -> Iterator[RayNodes]:
    """Nodes to `start`, on loopback, and stopped whatever happens. Their folder is short (Ray's
    socket paths under it must fit in 107 bytes) and goes with them."""
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
    nodes = RayNodes(root, env)
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
            [str(TOOLGYM), *args, "--out", str(out)],
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
        result = subprocess.run([str(TOOLGYM), *args], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(
        f"toolgym: error: Invalid value for --ray-address: the Ray cluster at {nodes.address}"
    )
    assert "refused this client's token" in line and "RAY_AUTH_TOKEN" in line
    assert not out.exists()
