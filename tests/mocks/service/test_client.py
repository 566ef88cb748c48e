"""RemoteMockWorld under ToolEnv: the mock-app task sets give the same episodes through a mock
service as in-process, and a server that goes away mid-episode costs one infra_error step."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolgym.actions import FinalAnswer, ToolCall
from toolgym.canonical import canonical_json
from toolgym.envs.agents import OracleAgent
from toolgym.envs.demo import default_task_paths
from toolgym.envs.lab import InfraRetry, Lab, LabEnv
from toolgym.envs.runner import run_episode
from toolgym.envs.tool_env import ToolEnv
from toolgym.errors import InfraError
from toolgym.mocks.service import MockServiceClient, RemoteMockWorld, ThreadedServer, create_app
from toolgym.tasks import Task, TaskSet
from toolgym.trace import read_trace

TRANSFER = {"from_account_id": "ACC-10001", "to_account_id": "ACC-10002", "amount": 25.0}


def _mock_task_sets(per_set: int = 7) -> list[TaskSet]:
    """The first tasks of each mock-app task set (each set covers its apps' reads and writes)."""
    sets = [TaskSet.load(p) for p in default_task_paths() if "mock_tasks" in str(p)]
    return [TaskSet(s.tasks[:per_set], base_dir=s.base_dir) for s in sets]


def _steps(path: Path) -> list[str]:
    trace = read_trace(path)
    return [canonical_json(s.model_dump(mode="json", exclude={"latency_ms"})) for s in trace.steps]


def test_mock_task_sets_run_the_same_through_the_service(service_url: str, tmp_path: Path) -> None:
    """Mock-app tasks of the demo sets, oracle agent: same rewards, scores and step records
    (observations, state hashes, diffs) as the in-process run."""
    sets = _mock_task_sets()
    # ctool, its Chinese set, mtu, teval and the multi-turn set (a simulated user beside a remote world)
    assert len(sets) == 5 and all(len(s) == 7 for s in sets)
    lab = Lab.attach(mocks_url=service_url)
    for task_set in sets:
        local_env = ToolEnv(tasks=task_set)
        remote_env = lab.env(task_set)
        for task in task_set:
            local = run_episode(
                local_env, OracleAgent(local_env.protocol), task, trace_dir=tmp_path / "local"
            )
            remote = run_episode(
                remote_env, OracleAgent(remote_env.protocol), task, trace_dir=tmp_path / "remote"
            )
            assert (remote.reward, remote.scores) == (local.reward, local.scores), task.id
            assert local.trace_path is not None and remote.trace_path is not None
            assert _steps(remote.trace_path) == _steps(local.trace_path), task.id
        local_env.close()
        remote_env.close()
    lab.close()


def _banking_task() -> Task:
    from toolgym.tasks import AnswerSpec, GoldenStep

    return Task(
        id="two-transfers",
        query="Move $25 from ACC-10001 to ACC-10002, twice.",
        apps=["banking"],
        golden=[
            GoldenStep(action=ToolCall(name="transfer", arguments=TRANSFER)),
            GoldenStep(action=ToolCall(name="get_balance", arguments={"account_id": "ACC-10001"})),
            GoldenStep(action=ToolCall(name="transfer", arguments=TRANSFER)),
            GoldenStep(action=ToolCall(name="get_balance", arguments={"account_id": "ACC-10002"})),
            GoldenStep(action=FinalAnswer(text="Done, moved $50.")),
        ],
        answer=AnswerSpec(whitelist=[["done"]]),
    )


class _Restartable:
    """A mock service on a fixed loopback port that the test stops and starts again."""

    def __init__(self) -> None:
        self.server = ThreadedServer(create_app())
        self.port = self.server.port
        self.url = self.server.start()
        self.down_count = 0

    def stop(self) -> None:
        self.server.stop()
        self.down_count += 1

    def start(self) -> None:
        self.server = ThreadedServer(create_app(), port=self.port)
        self.server.start()


def test_server_lost_mid_episode_costs_nothing_when_it_is_back_for_the_second_try(tmp_path: Path) -> None:
    """The server dies after step 2; the supervisor hook brings a new one up; the step that met
    the outage tries its call once more, the journal rebuilds the session, and the episode is the
    clean one: no infra_error step, same final state, full reward, complete trace."""
    task = _banking_task()
    service = _Restartable()
    client = MockServiceClient(service.url, timeout_s=5)
    hooks: list[InfraError] = []

    def recover(exc: InfraError) -> None:
        hooks.append(exc)
        service.start()  # what a Supervisor does through its backend

    env = LabEnv(tasks=[task], mock_client=client, on_infra_error=recover)
    env.subscribe(lambda event, info: service.stop() if event == "step" and info["step"] == 2 else None)
    agent = InfraRetry(OracleAgent(env.protocol))
    result = run_episode(env, agent, task, trace_dir=tmp_path)
    assert service.down_count == 1 and len(hooks) == 1
    assert result.reward == 1.0 and result.error_counts == {}
    assert "infra_errors" not in result.scores and result.scores["answer"] == 1.0
    assert result.trace_path is not None
    trace = read_trace(result.trace_path)
    assert trace.complete and len(trace.steps) == len(task.golden)

    clean_env = ToolEnv(tasks=[task])
    clean = run_episode(clean_env, OracleAgent(clean_env.protocol), task, trace_dir=tmp_path / "clean")
    assert clean.trace_path is not None
    assert read_trace(clean.trace_path).steps[-1].state_hash_after == trace.steps[-1].state_hash_after
    world = env.world
    assert isinstance(world, RemoteMockWorld) and world.recoveries == 1
    env.close()
    clean_env.close()
    client.close()
    service.server.stop()


def test_unreachable_server_is_an_infra_error_and_recovery_checks_the_state() -> None:
    service = _Restartable()
    with MockServiceClient(service.url, timeout_s=5) as client:
        world = client.world(["banking"])
        world.call("transfer", **TRANSFER)
        world.take_diff()
        service.stop()
        obs = world.step(ToolCall(name="get_balance", arguments={"account_id": "ACC-10001"}))
        assert obs.error is not None and obs.error.kind.value == "infra_error"
        assert obs.content == {"reason": "unreachable"}
        with pytest.raises(InfraError):  # still down: every operation says so, none hangs
            world.state_hash()
        service.start()
        hashes = world.state_hash()
        assert world.take_diff() == {}  # the rebuilt session continues the diff baseline
        world.call("transfer", **TRANSFER)
        local = client.world(["banking"])
        local.call("transfer", **TRANSFER)
        local.call("transfer", **TRANSFER)
        assert world.state_hash() == local.state_hash() != hashes
        # a journal that no longer reproduces the state is refused, not silently accepted
        world._journal.clear()
        world._suspect = True
        with pytest.raises(InfraError, match="expected"):
            world.state_hash()
        world.close()
        local.close()
    service.server.stop()


def test_plain_tool_env_on_a_remote_world_scores_state_with_the_default_reward(service_url: str) -> None:
    """ToolEnv(world=RemoteMockWorld) with the default task_scores: the state part is computed
    by the server, with the same result as an in-process world."""
    task = _banking_task()
    local_env = ToolEnv(tasks=[task])
    local = run_episode(local_env, OracleAgent(local_env.protocol), task)
    world = RemoteMockWorld(MockServiceClient(service_url), task.apps or [], seed=task.seed, clock=task.clock)
    remote_env = ToolEnv(tasks=[task], world=world)
    remote = run_episode(remote_env, OracleAgent(remote_env.protocol), task)
    assert remote.scores["state"] == 1.0 and remote.scores == local.scores
    local_env.close()
    remote_env.close()


def test_a_table_the_remote_world_lacks_is_named_with_the_task_s_file_line_and_id(
    service_url: str, tmp_path: Path
) -> None:
    # the service answers 400 for a table its world does not have: the task's mistake, said at
    # the task's file and line as an in-process world says it (tests/envs/test_tool_env.py)
    from toolgym.tasks import TaskUseError

    row = {
        "id": "named",
        "query": "move money",
        "apps": ["banking"],
        "expected_state": [{"kind": "row_exists", "table": "bank_acounts", "where": {}}],
    }
    (tmp_path / "tasks.jsonl").write_text(canonical_json(row) + "\n", encoding="utf-8")
    task = TaskSet.load(tmp_path / "tasks.jsonl")[0]
    world = RemoteMockWorld(MockServiceClient(service_url), ["banking"], seed=task.seed, clock=task.clock)
    try:
        with pytest.raises(TaskUseError) as caught:
            world.state_scores(task)
    finally:
        world.close()
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'tasks.jsonl'}:1: named: ")
    assert "bank_acounts" in message and len(message.splitlines()) == 1
