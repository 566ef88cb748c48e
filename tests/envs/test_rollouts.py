"""The rollout API without Ray: episode specs, batches, the in-process and process executors, and
`toolgym run --workers N`, whose run folder (traces, run.json and the images tools drew) is the
same bytes as a one-process run."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]  # in the dev install
import pytest
from typer.testing import CliRunner

from tests.envs.rollout_agents import Bug
from toolgym.actions import Action
from toolgym.canonical import canonical_json
from toolgym.cli import app
from toolgym.envs.agents import OracleAgent
from toolgym.envs.demo import default_task_paths, demo_tasks_path, mock_task_paths
from toolgym.envs.rollouts import (
    AgentSpec,
    Cancel,
    Deliver,
    EnvConfig,
    EpisodeBytes,
    EpisodeOutcome,
    EpisodeSpec,
    EpisodeWorker,
    InProcessExecutor,
    ProcessExecutor,
    RolloutCancelled,
    RolloutError,
    WorkerContext,
    batches,
    episode_specs,
    rollout,
)
from toolgym.envs.runner import FILES_DIR
from toolgym.protocols.base import ActionProtocol, RawOutput
from toolgym.running.trials import EpisodeRecord, RunSummary, run_trials, set_name
from toolgym.tasks import Task, TaskSet
from toolgym.trace import read_trace

# cheap demo tasks beside the mock-app sets; mark-total draws a box on a receipt (DrawBox): an image
# observation, kept beside the traces as files/<sha256>
DRAWING = "mark-total"
DEMO_IDS = ["fish-oil-days", "solve-system", DRAWING]
HOSTILE = "tests.envs.rollout_agents:hostile"


def bundled_sets() -> list[tuple[str, TaskSet]]:
    demo = TaskSet.load(demo_tasks_path())
    sets = [("demo", TaskSet([t for t in demo if t.id in DEMO_IDS], base_dir=demo.base_dir))]
    return sets + [(set_name(p), TaskSet.load(p)) for p in mock_task_paths()]


def tree(root: Path) -> dict[str, bytes]:
    """Every file under root (relative path -> bytes), hidden ones included."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def whole_folder(root: Path) -> dict[str, bytes]:
    """What `diff -r` compares: `tree`, and each folder (its path and a slash -> b""), so that an
    empty one left behind counts too."""
    folders = {p.relative_to(root).as_posix() + "/": b"" for p in root.rglob("*") if p.is_dir()}
    return dict(sorted({**tree(root), **folders}.items()))


def kept_files(folder: dict[str, bytes]) -> dict[str, bytes]:
    """The observation files of a run folder's tree (path -> bytes), each checked to be named by
    the sha256 of its bytes."""
    found = {k: v for k, v in folder.items() if f"/{FILES_DIR}/" in k and not k.endswith("/")}
    for path, data in found.items():
        assert path.rsplit("/", 1)[1] == hashlib.sha256(data).hexdigest(), path
    return found


def traces_of(folder: dict[str, bytes]) -> list[str]:
    return [k for k in folder if k.endswith(".jsonl")]


def without_latencies(trace: bytes) -> list[str]:
    """A trace's records with the steps' wall-clock latencies (the one measured figure) taken out."""
    records = [json.loads(line) for line in trace.decode().splitlines()]
    for record in records:
        record.pop("latency_ms", None)
        record.pop("model_latency_ms", None)
    return [canonical_json(r) for r in records]


def oracle_run(out: Path, sets: Sequence[tuple[str, TaskSet]], **kwargs: object) -> RunSummary:
    return run_trials(sets, AgentSpec(), out=out, trials=2, agent_name="oracle", **kwargs)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled mock-app sets and two demo tasks, two trials, in one process, one at a time."""
    out = tmp_path_factory.mktemp("one-process")
    oracle_run(out, bundled_sets())
    return out


# ---- specs and batches -----------------------------------------------------------------------
def test_episode_specs_are_trials_times_tasks_in_order() -> None:
    sets = bundled_sets()
    specs = episode_specs(sets, trials=2, seed=7)
    total = sum(len(s) for _, s in sets)
    assert len(specs) == 2 * total and [s.index for s in specs] == list(range(2 * total))
    assert [(s.trial, s.task_set) for s in specs[:1]] == [(0, "demo")] and specs[total].trial == 1
    assert specs[0].trace_path == "trial-0/demo/fish-oil-days.seed7.jsonl"
    with pytest.raises(ValueError, match="distinct"):
        episode_specs([sets[0], sets[0]], trials=1, seed=0)


@pytest.mark.parametrize(
    ("n", "workers", "size", "expected"), [(100, 2, None, 8), (10, 2, None, 1), (7, 4, 3, 3)]
)
def test_batches_cover_every_spec_once(n: int, workers: int, size: int | None, expected: int) -> None:
    specs = [EpisodeSpec(i, 0, "s", f"t{i}", 0) for i in range(n)]
    got = batches(specs, workers, size)
    assert max(len(b) for b in got) == expected
    assert [s.index for b in got for s in b] == list(range(n))


# ---- byte-identical runs ---------------------------------------------------------------------
def test_threads_and_processes_write_the_same_bytes_as_one_process(baseline: Path, tmp_path: Path) -> None:
    threads = tmp_path / "threads"
    oracle_run(threads, bundled_sets(), concurrency=3)
    procs = tmp_path / "processes"
    summary = oracle_run(procs, bundled_sets(), executor=ProcessExecutor(2, batch_size=3))
    expected = whole_folder(baseline)
    assert len(traces_of(expected)) == 2 * sum(len(s) for _, s in bundled_sets()) and "run.json" in expected
    assert sorted(kept_files(expected)) == [  # the box DrawBox drew, in each trial's folder
        f"trial-{t}/demo/{FILES_DIR}/{sha}" for t in (0, 1) for sha in drawn(baseline / "trial-0/demo")
    ]
    assert all(e.success for e in summary.episodes)
    assert whole_folder(procs) == expected  # the same files, images too; no staging file or partial trace
    # run.json records the thread count; its episodes (scores, traces, pass@k) are the same
    assert whole_folder(threads).keys() == expected.keys()
    assert {k: v for k, v in whole_folder(threads).items() if k != "run.json"} == {
        k: v for k, v in expected.items() if k != "run.json"
    }
    assert RunSummary.load(threads).episodes == RunSummary.load(baseline).episodes


def drawn(folder: Path) -> list[str]:
    """The sha256 of every file the observations of the traces in `folder` carry, sorted."""
    return sorted(
        {
            entry["sha256"]
            for path in folder.glob("*.jsonl")
            for step in read_trace(path).steps
            for observation in step.observations
            for entry in observation.get("files") or []
        }
    )


def test_toolgym_run_with_workers_writes_the_same_run_folder(tmp_path: Path) -> None:
    """The command in one process and on 2, over tasks of every bundled set (an OCR task too, and
    two that draw images; tests/envs/test_ray_rollouts.py runs every bundled task): the same
    folder, byte for byte, images included."""
    firsts = [t.id for p in default_task_paths() for t in list(TaskSet.load(p))[:4]]
    ids = [*firsts, "receipt-total", DRAWING, "caption-cat"]
    picked = [arg for task_id in ids for arg in ("--task-id", task_id)]
    runner = CliRunner()
    one, two = tmp_path / "one", tmp_path / "two"
    first = runner.invoke(app, ["run", "--out", str(one), "--trials", "2", *picked])
    assert first.exit_code == 0, first.output
    second = runner.invoke(app, ["run", "--out", str(two), "--trials", "2", "--workers", "2", *picked])
    assert second.exit_code == 0, second.output
    expected = whole_folder(one)
    assert len(traces_of(expected)) == 2 * len(set(ids))
    images = {f"trial-{t}/demo/{FILES_DIR}/{sha}" for t in (0, 1) for sha in drawn(one / "trial-0/demo")}
    assert len(images) == 2 * 2 and set(kept_files(expected)) == images  # a box and a caption a trial
    assert whole_folder(two) == expected
    clash = runner.invoke(app, ["run", "--out", str(tmp_path / "x"), "--workers", "2", "--concurrency", "2"])
    assert clash.exit_code == 2 and "concurrency" in clash.output and not (tmp_path / "x").exists()


# ---- agents, aborts, bugs --------------------------------------------------------------------
def test_workers_build_agents_once_from_the_spec(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    sets = bundled_sets()[1:2]
    spec = AgentSpec("tests.envs.rollout_agents:pid_oracle", {"pid_file": str(pids)})
    outcomes = rollout(
        sets,
        episode_specs(sets, trials=1, seed=0),
        out=tmp_path / "run",
        executor=ProcessExecutor(2),
        agent=spec,
    )
    assert all(o.status == "terminated" and o.reward == 1.0 for o in outcomes)
    assert len(pids.read_text().split()) == 2  # one builder call per worker process, not per episode


def test_an_aborted_episode_keeps_its_partial_trace_and_the_run_goes_on(tmp_path: Path) -> None:
    """An abort_on exception (as LLMError is for LLM runs) records the episode as aborted; its
    partial trace is the same bytes whether it ran in process or on a worker."""
    sets = bundled_sets()[2:3]
    target = sets[0][1].tasks[3].id
    spec = AgentSpec(HOSTILE, {"targets": [target], "what": "abort", "at": 1})
    abort_on = ("tests.envs.rollout_agents:Abort",)
    runs = {}
    for name, executor in (("local", InProcessExecutor()), ("procs", ProcessExecutor(2))):
        out = tmp_path / name
        outcomes = rollout(
            sets,
            episode_specs(sets, trials=1, seed=0),
            out=out,
            executor=executor,
            agent=spec,
            abort_on=abort_on,
        )
        aborted = [o for o in outcomes if o.status == "aborted"]
        assert [o.task_id for o in aborted] == [target]
        assert aborted[0].error == f"Abort: stopped {target} at step 1" and aborted[0].steps == 1
        assert aborted[0].trace is not None and aborted[0].trace.endswith(".jsonl.partial")
        partial = read_trace(out / aborted[0].trace)
        assert partial.end is None and len(partial.steps) == 1
        runs[name] = tree(out)
    assert runs["local"] == runs["procs"]


def test_a_bug_in_a_worker_stops_the_run(tmp_path: Path) -> None:
    sets = bundled_sets()[1:2]
    spec = AgentSpec(HOSTILE, {"targets": [sets[0][1].tasks[0].id], "what": "bug"})
    with pytest.raises(Bug, match="bug in"):
        rollout(
            sets, episode_specs(sets, trials=1, seed=0), out=tmp_path, executor=ProcessExecutor(2), agent=spec
        )


# ---- worker processes that die ---------------------------------------------------------------
def test_a_worker_process_killed_mid_run_has_its_episodes_rerun_on_a_fresh_pool(
    baseline: Path, tmp_path: Path
) -> None:
    """The driver kills a worker process (SIGKILL) when the first episode reports, with most of
    the run still to go: a fresh pool re-runs what the broken one lost, and the traces and
    run.json are the one-process run's bytes, each written once."""
    pids = tmp_path / "pids"
    killed: list[int] = []

    def kill_a_worker(record: EpisodeRecord) -> None:
        if not killed:
            # both workers of the first pool running first (a quick first episode can report
            # before the second worker has even imported toolgym), then one of them killed
            deadline = time.monotonic() + 60
            while len(pids.read_text().split()) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            killed.append(int(pids.read_text().split()[0]))
            os.kill(killed[0], signal.SIGKILL)

    executor = ProcessExecutor(2, batch_size=3)
    summary = run_trials(
        bundled_sets(),
        AgentSpec("tests.envs.rollout_agents:pid_oracle", {"pid_file": str(pids)}),
        out=tmp_path / "run",
        trials=2,
        agent_name="oracle",
        executor=executor,
        on_episode=kill_a_worker,
    )
    assert killed and executor.stats.pools_broken == 1 and executor.stats.pools_started == 2
    assert executor.stats.resubmitted >= 1  # the killed worker's batch and every other one in flight
    assert len(pids.read_text().split()) == 4  # two workers in each pool
    assert all(e.success for e in summary.episodes)
    assert whole_folder(tmp_path / "run") == whole_folder(baseline)


def test_episodes_that_kill_their_worker_mid_episode_run_again_alone(tmp_path: Path) -> None:
    """Two episodes SIGKILL their own worker process after one step, the first time they run (one
    of them draws an image once it runs on); every trace and image is there once, byte-identical
    to one process, no staged or partial file left."""
    sets = bundled_sets()[:3]
    specs = episode_specs(sets, trials=1, seed=0)
    clean = tmp_path / "clean"
    rollout(sets, specs, out=clean)
    assert kept_files(tree(clean))
    targets = [DRAWING, specs[-3].task_id]
    markers = tmp_path / "markers"
    markers.mkdir()
    executor = ProcessExecutor(2, batch_size=2)
    outcomes = rollout(
        sets,
        specs,
        out=tmp_path / "run",
        executor=executor,
        agent=AgentSpec(
            "tests.envs.rollout_agents:kill_self", {"targets": targets, "marker_dir": str(markers)}
        ),
    )
    assert sorted(p.name for p in markers.iterdir()) == sorted(targets)  # each did kill its worker
    assert executor.stats.pools_broken == 2 and executor.stats.pools_started == 3
    assert all(o.status == "terminated" and o.reward == 1.0 for o in outcomes)
    assert whole_folder(tmp_path / "run") == whole_folder(clean)


def test_an_episode_that_always_kills_its_worker_is_aborted_with_a_typed_error(tmp_path: Path) -> None:
    sets = bundled_sets()[1:2]
    specs = episode_specs(sets, trials=1, seed=0)
    clean = tmp_path / "clean"
    rollout(sets, specs, out=clean)
    poison = specs[1].task_id
    outcomes = rollout(
        sets,
        specs,
        out=tmp_path / "run",
        executor=ProcessExecutor(2, max_attempts=2),
        agent=AgentSpec("tests.envs.rollout_agents:kill_self", {"targets": [poison]}),
    )
    [lost] = [o for o in outcomes if o.status == "aborted"]
    assert lost.task_id == poison and lost.trace is None
    assert lost.error is not None and lost.error.startswith(
        "WorkerLost: the worker running this episode alone died 2 times (last: "
    )
    assert all(o.reward == 1.0 for o in outcomes if o is not lost)
    assert tree(tmp_path / "run") == {k: v for k, v in tree(clean).items() if poison not in k}


def test_objects_only_run_in_process(tmp_path: Path) -> None:
    sets = bundled_sets()[1:2]
    with pytest.raises(TypeError, match="AgentSpec"):
        rollout(
            sets,
            episode_specs(sets, trials=1, seed=0),
            out=tmp_path,
            executor=ProcessExecutor(2),
            agent=lambda env, trial: OracleAgent(env.protocol),
        )


class Repeating:
    """An executor that reports every episode twice (a worker thought lost that came back)."""

    def run(
        self,
        specs: Sequence[EpisodeSpec],
        context: WorkerContext,
        deliver: Deliver,
        cancel: Cancel | None = None,
    ) -> None:
        worker = EpisodeWorker(context)
        try:
            for spec in specs:
                outcome, data = worker.run(spec)
                deliver(outcome, data)
                deliver(outcome, EpisodeBytes(b"not the trace\n", {"0" * 64: b"not a file"}))
        finally:
            worker.close()


class Silent:
    def run(
        self,
        specs: Sequence[EpisodeSpec],
        context: WorkerContext,
        deliver: Deliver,
        cancel: Cancel | None = None,
    ) -> None:
        return None


def test_each_trace_is_written_once_and_every_episode_must_report(tmp_path: Path) -> None:
    sets = bundled_sets()[1:2]
    specs = episode_specs(sets, trials=1, seed=0)
    seen: list[int] = []
    outcomes = rollout(
        sets, specs, out=tmp_path / "a", executor=Repeating(), on_outcome=lambda o: seen.append(o.index)
    )
    assert sorted(seen) == [s.index for s in specs] and len(outcomes) == len(specs)
    for o in outcomes:
        assert o.trace is not None and read_trace(tmp_path / "a" / o.trace).end is not None
    assert not list((tmp_path / "a").rglob(FILES_DIR))  # the second report's file was dropped too
    with pytest.raises(RolloutError, match=f"{len(specs)} episodes never reported"):
        rollout(sets, specs, out=tmp_path / "b", executor=Silent())


def test_a_worker_reuses_one_env_per_task_set(tmp_path: Path) -> None:
    sets = bundled_sets()[1:3]
    worker = EpisodeWorker(WorkerContext(sets, EnvConfig(max_steps=10)))
    try:
        for spec in episode_specs(sets, trials=2, seed=0):
            outcome, data = worker.run(spec)
            assert outcome.reward == 1.0 and data is not None and data.trace.endswith(b"\n")
            assert data.files == {}  # the mock apps' tools draw nothing
        assert sorted(worker._envs) == sorted(name for name, _ in sets)
    finally:
        worker.close()


def test_a_reused_env_starts_each_episode_with_a_fresh_file_store(tmp_path: Path) -> None:
    """A file an earlier task announced is unknown to the next one, as in a fresh env (an agent that
    names it gets the same error, listing the same known files, either way)."""
    sets = bundled_sets()[:1]
    worker = EpisodeWorker(WorkerContext(sets))
    try:
        fish, solve, _ = episode_specs(sets, trials=1, seed=0)
        worker.run(fish)
        assert "image/fish_oil.png" in worker.env_for("demo").files
        worker.run(solve)
        assert "image/fish_oil.png" not in worker.env_for("demo").files
    finally:
        worker.close()


def test_a_worker_sends_each_file_an_episode_drew_once_with_its_trace() -> None:
    sets = bundled_sets()[:1]
    worker = EpisodeWorker(WorkerContext(sets))
    try:
        *_, mark = episode_specs(sets, trials=1, seed=0)
        outcome, data = worker.run(mark)
    finally:
        worker.close()
    assert outcome.task_id == DRAWING and outcome.reward == 1.0 and data is not None
    records = [json.loads(line) for line in data.trace.splitlines()]
    carried = [
        entry["sha256"]
        for record in records
        for observation in record.get("observations", [])
        for entry in observation.get("files") or []
    ]
    assert carried and sorted(data.files) == sorted(set(carried))
    assert all(hashlib.sha256(blob).hexdigest() == sha for sha, blob in data.files.items())


def test_a_run_stopped_mid_way_and_resumed_on_workers_writes_the_one_process_folder(
    baseline: Path, tmp_path: Path
) -> None:
    """Stopped when its first batch reports (as by Ctrl-C: the worker processes are ended with
    batches in flight, their staged traces and images gone), then resumed into the same folder
    on workers: every trace and image is there once, the one-process run's bytes."""
    out = tmp_path / "run"
    cancel = Cancel(grace_s=0.0)
    executor = ProcessExecutor(2, batch_size=2)
    stopped = oracle_run(
        out, bundled_sets(), executor=executor, cancel=cancel, on_episode=lambda r: cancel.set("stop")
    )
    total = 2 * sum(len(s) for _, s in bundled_sets())
    assert stopped.stopped == "stop" and 0 < len(stopped.episodes) < total
    resumed = oracle_run(out, bundled_sets(), executor=ProcessExecutor(2, batch_size=2))
    assert resumed.stopped is None and len(resumed.episodes) == total
    assert whole_folder(out) == whole_folder(baseline)


def _rollout_worker_processes() -> list[Any]:
    """The worker processes of this process's rollouts: the forkserver's children."""

    servers = [p for p in psutil.Process().children() if "forkserver" in " ".join(p.cmdline())]
    return [child for server in servers for child in server.children()]


def test_a_cancel_after_workers_died_does_not_hang(tmp_path: Path) -> None:
    """The run's cancel reaches the worker processes without waiting on them: with worker processes
    that died (the cancel ends them too, so this is a race a real Ctrl-C can lose), setting the
    cancel returns at once and the run stops. A multiprocessing Event waited there forever for
    the dead processes to wake (the fresh-clone suite hung on it)."""

    cancel = Cancel(grace_s=0.0)

    def kill_workers_then_cancel(_record: object) -> None:
        if cancel.is_set():
            return
        workers = _rollout_worker_processes()
        assert workers
        for process in workers:
            process.kill()
        psutil.wait_procs(workers, timeout=30)
        cancel.set("stop")

    done: list[RunSummary] = []
    run = threading.Thread(
        target=lambda: done.append(
            oracle_run(
                tmp_path / "run",
                bundled_sets(),
                executor=ProcessExecutor(2, batch_size=2),
                cancel=cancel,
                on_episode=kill_workers_then_cancel,
            )
        ),
        daemon=True,
    )
    run.start()
    run.join(timeout=180)  # a hang, not a slow machine: the run stops within seconds
    assert not run.is_alive(), "the cancel hung on the dead worker processes"
    assert done and done[0].stopped == "stop"


def test_one_rollout_runs_several_agents(tmp_path: Path, baseline: Path) -> None:
    """Episodes are tasks x trials x agents: each agent's traces go under its name, and the
    oracle's are the one-process oracle run's bytes."""
    sets = bundled_sets()[1:2]
    name = sets[0][0]
    ids = [t.id for t in sets[0][1]]
    agents = {
        "oracle": AgentSpec(),
        "quitter": AgentSpec(HOSTILE, {"targets": ids, "what": "abort", "at": 0}),
    }
    specs = episode_specs(sets, trials=1, seed=0, agents=list(agents))
    outcomes = rollout(
        sets,
        specs,
        out=tmp_path,
        executor=ProcessExecutor(2),
        agent=agents,
        abort_on=("tests.envs.rollout_agents:Abort",),
    )
    assert [o.agent for o in outcomes] == ["oracle"] * len(ids) + ["quitter"] * len(ids)
    assert all(o.status == "terminated" for o in outcomes[: len(ids)])
    assert all(
        o.status == "aborted" and o.trace and o.trace.startswith("quitter/") for o in outcomes[len(ids) :]
    )
    expected = {k: v for k, v in tree(baseline).items() if k.startswith(f"trial-0/{name}/")}
    assert tree(tmp_path / "oracle") == expected
    with pytest.raises(ValueError, match="not among"):
        rollout(sets, specs, out=tmp_path / "x", agent={"oracle": AgentSpec()})


class Blocking(OracleAgent):
    """The oracle, except that the episodes of `stuck` wait on `release` (a request that hangs).
    Every episode's first action first waits at `arrived`, so none acts (and none finishes)
    before all of them are running, however quick an episode is."""

    def __init__(
        self, protocol: ActionProtocol, stuck: set[str], release: threading.Event, arrived: threading.Barrier
    ) -> None:
        super().__init__(protocol)
        self.stuck, self.release, self.arrived = stuck, release, arrived
        self.task_id = ""
        self.waited = False

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        self.task_id = task.id
        super().start(task, observation, info)

    def act(self, observation: str, info: dict[str, Any]) -> RawOutput | Action:
        if not self.waited:
            self.waited = True
            self.arrived.wait(60)
        if self.task_id in self.stuck:
            self.release.wait(60)
        return super().act(observation, info)


def test_a_cancelled_rollout_reports_what_finished_and_what_was_running(tmp_path: Path) -> None:
    sets = bundled_sets()[1:2]
    specs = episode_specs(sets, trials=1, seed=0)
    stuck = {specs[1].task_id, specs[2].task_id}
    release, cancel = threading.Event(), Cancel(grace_s=0.2)
    arrived = threading.Barrier(3)  # the three episodes on the executor's three threads
    finished: list[int] = []

    def on_outcome(outcome: EpisodeOutcome) -> None:
        finished.append(outcome.index)
        if len(finished) == 1:
            cancel.set("test")  # after the first episode; two more are stuck in flight

    try:
        with pytest.raises(RolloutCancelled) as stopped:
            rollout(
                sets,
                specs,
                out=tmp_path,
                executor=InProcessExecutor(3),
                agent=lambda env, trial: Blocking(env.protocol, stuck, release, arrived),
                on_outcome=on_outcome,
                cancel=cancel,
            )
    finally:
        release.set()
    assert stopped.value.reason == "test"
    assert [o.index for o in stopped.value.finished] == [0]
    assert sorted(s.index for s in stopped.value.in_flight) == [1, 2]  # never waited for
    assert len(cancel.started) == 3  # nothing started after the cancel


def _run_one_and_exit(sets: list[tuple[str, TaskSet]], report: Connection) -> None:
    """A worker process's life: one episode staged, then a normal exit, never closed."""
    worker = EpisodeWorker(WorkerContext(sets))
    spec = episode_specs(sets, trials=1, seed=0)[0]
    worker.run(spec)
    report.send(worker._staging)


def test_a_worker_process_leaves_no_staging_folder_behind() -> None:
    # pool workers and Ray actors are ended, not closed: the folder goes with the process
    receive, send = multiprocessing.Pipe(duplex=False)
    child = multiprocessing.get_context("spawn").Process(
        target=_run_one_and_exit, args=(bundled_sets()[:1], send)
    )
    child.start()
    staging = receive.recv()
    child.join(60)
    assert child.exitcode == 0 and isinstance(staging, str) and "toolgym-rollout-" in staging
    assert not Path(staging).exists()


def test_a_tool_server_killed_mid_episode_aborts_the_episode_on_a_process_worker(tmp_path: Path) -> None:
    """`toolgym serve` SIGKILLed by the agent before its second call: the call and its one retry
    fail, the episode is aborted with the reason (never terminated with reward 0), its partial
    trace keeps the steps it took, and the episode after it (whose tool server is gone) too."""
    from tests.backends import calculator_task, tool_server

    sets = [("calc", TaskSet([calculator_task("calc"), calculator_task("again")]))]
    with tool_server() as server:
        marker = str(tmp_path / "killed")
        outcomes = rollout(
            sets,
            episode_specs(sets, trials=1, seed=0),
            out=tmp_path,
            executor=ProcessExecutor(1),
            env=EnvConfig(tool_url=server.url),
            agent=AgentSpec(
                "tests.backends:Killers", {"pid": server.pid, "target": "calc", "at": 1, "marker": marker}
            ),
        )
    assert [o.status for o in outcomes] == ["aborted", "aborted"]
    killed = outcomes[0]
    assert killed.error is not None and killed.error.startswith("EpisodeAborted: Calculator: ")
    assert killed.steps == 2 and killed.error_counts == {"infra_error": 1}
    assert killed.trace is not None and killed.trace.endswith(".partial")
    trace = read_trace(tmp_path / killed.trace)
    assert trace.end is None and [s.error_kinds for s in trace.steps] == [[], ["infra_error"]]
    assert trace.steps[0].observations[0]["content"] == "4"
