"""Servers in real Docker containers through the SDK: hardening, loopback-only ports, episodes
against tools and mock apps in containers, and a container killed or frozen mid-episode."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolgym.actions import FinalAnswer, ToolCall
from toolgym.envs.agents import OracleAgent
from toolgym.envs.demo import default_task_paths
from toolgym.envs.lab import InfraRetry, Lab, LabEnv
from toolgym.envs.runner import run_episode
from toolgym.mocks.service import MockServiceClient
from toolgym.tasks import AnswerSpec, GoldenStep, Task, TaskSet
from toolgym.toolservers.hosting.base import ServerSpec, ServerStartError
from toolgym.toolservers.hosting.container import ContainerHost
from toolgym.toolservers.hosting.images import IMAGES, ImageBuilder, ImageDef
from toolgym.trace import read_trace

TRANSFER = {"from_account_id": "ACC-10001", "to_account_id": "ACC-10002", "amount": 25.0}
BANKING = Task(
    id="bank-twice",
    query="Move $25 from ACC-10001 to ACC-10002 twice and tell me when done.",
    apps=["banking"],
    golden=[
        GoldenStep(action=ToolCall(name="transfer", arguments=TRANSFER)),
        GoldenStep(action=ToolCall(name="get_balance", arguments={"account_id": "ACC-10001"})),
        GoldenStep(action=ToolCall(name="transfer", arguments=TRANSFER)),
        GoldenStep(action=FinalAnswer(text="Done.")),
    ],
    answer=AnswerSpec(whitelist=[["done"]]),
)
ARITHMETIC = Task(
    id="arithmetic",
    query="What is (290 // 5) * 3?",
    tools=["Calculator"],
    golden=[
        GoldenStep(action=ToolCall(name="Calculator", arguments={"expression": "290 // 5"})),
        GoldenStep(action=ToolCall(name="Calculator", arguments={"expression": "58 * 3"})),
        GoldenStep(action=FinalAnswer(text="174")),
    ],
    answer=AnswerSpec(whitelist=[["174"]]),
)


def _demo_tasks() -> TaskSet:
    return TaskSet.load(next(p for p in default_task_paths() if p.parent.name == "demo"))


@pytest.fixture(scope="module")
def lab(container_backend: ContainerHost) -> Iterator[Lab]:
    """A mock service and a tool server, both without a network (unix sockets)."""
    with Lab.start(container_backend, tools=["Calculator", "OCR", "Solver"], network=False) as started:
        handles = list(started.handles.values())
        yield started
    for handle in handles:  # stopped: container and socket directory gone
        assert not Path(handle.extra["runtime"]).exists()
        assert not container_backend.client.containers.list(all=True, filters={"id": handle.ident})


def _crash_at(step: int, fault: Any) -> Any:
    def listener(event: str, info: dict[str, Any]) -> None:
        if event == "step" and info["step"] == step:
            fault()

    return listener


# ---- images -------------------------------------------------------------------------------------
def test_images_are_current_hardened_and_healthy(docker_client: Any, images: dict[str, str]) -> None:
    builder = ImageBuilder(docker_client, log=lambda _: None)
    for name in ("toolserver", "mockserver"):
        assert builder.current(name), name  # built from these sources, by the offline builder
        config = docker_client.images.get(IMAGES[name].tag).attrs["Config"]
        assert config["User"] == "10001:10001"
        assert config["Healthcheck"]["Test"][:2] == ["CMD", "/opt/toolgym/bin/python"]
        assert config["Entrypoint"] == ["/opt/toolgym/bin/toolgym"]


def test_image_builds_have_no_network(docker_client: Any, images: dict[str, str], tmp_path: Path) -> None:
    """The builder's `docker build` runs with network_mode none: only the loopback interface."""
    builder = ImageBuilder(docker_client, build_dir=tmp_path, log=lambda _: None)
    (tmp_path / "Dockerfile").write_text(
        f"FROM {IMAGES['base'].tag}\n"
        "RUN python3 -c \"import socket; n = [x for _, x in socket.if_nameindex()]; assert n == ['lo'], n\"\n"
    )
    probe = ImageDef("probe", "toolgym/test-offline-probe:latest", "")
    builder._docker_build(probe, tmp_path, "probe")
    docker_client.images.remove(probe.tag, force=True)


# ---- one container --------------------------------------------------------------------------------
def test_containers_are_locked_down_and_have_no_network(lab: Lab) -> None:
    backend = lab.backend
    assert isinstance(backend, ContainerHost)
    for kind, handle in lab.handles.items():
        container = backend.container(handle)
        host = container.attrs["HostConfig"]
        assert host["NetworkMode"] == "none" and host["PortBindings"] in (None, {}), kind
        assert host["ReadonlyRootfs"] is True and host["Init"] is True
        assert host["CapDrop"] == ["ALL"] and host["SecurityOpt"] == ["no-new-privileges"]
        assert host["Memory"] == 2048 << 20 and host["MemorySwap"] == 2048 << 20
        assert host["NanoCpus"] == 2_000_000_000 and host["PidsLimit"] == 256
        assert "/tmp" in host["Tmpfs"]
        code, out = container.exec_run(["/opt/toolgym/bin/python", "/opt/toolgym/healthcheck.py"])
        assert code == 0, out  # the image's HEALTHCHECK works over the unix socket
        code, _ = container.exec_run(["/bin/sh", "-c", "echo x > /opt/x"])
        assert code != 0  # read-only root
        code, out = container.exec_run(["/bin/sh", "-c", "id -u; ls /sys/class/net"])
        assert out.decode().split() == ["10001", "lo"]  # non-root; only the loopback interface
        assert handle.uds is not None and Path(handle.uds).is_socket()


def test_a_server_that_cannot_start_reports_its_logs(container_backend: ContainerHost) -> None:
    spec = ServerSpec(name="broken", kind="mocks", argv=("lab", "mock-server", "--max-sessions", "many"))
    before = len(container_backend.handles)
    with pytest.raises(ServerStartError, match="Invalid value for '--max-sessions'"):
        container_backend.start(spec)
    assert len(container_backend.handles) == before  # the failed container was removed
    labelled = container_backend.client.containers.list(
        all=True, filters={"label": "org.toolgym.server=broken"}
    )
    assert labelled == []


# ---- episodes --------------------------------------------------------------------------------------
def test_episodes_against_tools_and_mock_apps_in_containers(lab: Lab, tmp_path: Path) -> None:
    demo = _demo_tasks()
    tasks = TaskSet([*demo.tasks[:3], BANKING], base_dir=demo.base_dir)
    env = lab.env(tasks)
    for task in tasks:
        result = run_episode(env, OracleAgent(env.protocol), task, trace_dir=tmp_path)
        assert result.reward == 1.0, (task.id, result.scores)
        assert result.error_counts == {}
    assert all(t.backend.startswith("remote:") for t in env.tools)
    env.close()


def test_mock_container_killed_mid_episode(lab: Lab, tmp_path: Path) -> None:
    handle, backend = lab.handles["mocks"], lab.backend
    assert backend is not None
    kill = _crash_at(2, lambda: backend.kill(handle))
    before = handle.restarts
    env = lab.env([BANKING])
    env.subscribe(kill)
    result = run_episode(env, InfraRetry(OracleAgent(env.protocol)), BANKING, trace_dir=tmp_path)
    assert handle.restarts == before + 1
    # the step's second try ran on the restarted container: the outage cost nothing
    assert result.reward == 1.0 and "infra_errors" not in result.scores and result.error_counts == {}
    assert result.trace_path is not None
    trace = read_trace(result.trace_path)
    assert trace.complete and [s.error_kinds for s in trace.steps] == [[], [], [], []]
    clean = run_episode(lab.env([BANKING]), OracleAgent(env.protocol), BANKING, trace_dir=tmp_path / "c")
    assert clean.trace_path is not None
    assert read_trace(clean.trace_path).steps[-1].state_hash_after == trace.steps[-1].state_hash_after
    env.close()


def test_tool_container_killed_mid_episode(lab: Lab, tmp_path: Path) -> None:
    demo = _demo_tasks()
    task = demo["receipt-change"]  # OCR, then Calculator, then the answer
    handle, backend = lab.handles["tools"], lab.backend
    assert backend is not None
    before = handle.restarts
    env = lab.env(TaskSet([task], base_dir=demo.base_dir))
    env.subscribe(_crash_at(1, lambda: backend.kill(handle)))
    result = run_episode(env, InfraRetry(OracleAgent(env.protocol)), task, trace_dir=tmp_path)
    assert handle.restarts == before + 1
    assert result.reward == 1.0 and result.error_counts == {}  # the second try got through
    assert result.trace_path is not None
    trace = read_trace(result.trace_path)
    assert [s.error_kinds for s in trace.steps] == [[], [], []]
    env.close()


HUNG_AFTER_S = 6.0


def test_hung_servers_time_out_and_are_restarted(lab: Lab, tmp_path: Path) -> None:
    """A frozen container (docker pause) answers nothing: the client gives up after its timeout,
    the supervisor restarts the container, the step's second try gets through, the episode continues."""
    assert lab.backend is not None
    backend = lab.backend
    assert isinstance(backend, ContainerHost)
    tools, mocks = lab.handles["tools"], lab.handles["mocks"]
    # long enough for the restarted container's first answer on a loaded machine (1.5 s was not)
    lab.tool_call_timeout_s = HUNG_AFTER_S
    try:
        env = lab.env([ARITHMETIC])
    finally:
        lab.tool_call_timeout_s = None
    env.subscribe(_crash_at(1, lambda: backend.pause(tools)))
    before = tools.restarts
    result = run_episode(env, InfraRetry(OracleAgent(env.protocol)), ARITHMETIC, trace_dir=tmp_path)
    assert tools.restarts == before + 1
    assert result.reward == 1.0 and result.error_counts == {}  # the second try got through
    env.close()

    assert lab.mocks is not None
    client = MockServiceClient(
        lab.mocks.url, token=lab.mocks.token, uds=lab.mocks.uds, timeout_s=HUNG_AFTER_S
    )
    env = LabEnv(tasks=[BANKING], mock_client=client, on_infra_error=lab.recovery_hook("mocks"))
    env.subscribe(_crash_at(1, lambda: backend.pause(mocks)))
    before = mocks.restarts
    result = run_episode(env, InfraRetry(OracleAgent(env.protocol)), BANKING, trace_dir=tmp_path / "m")
    assert mocks.restarts == before + 1
    assert result.reward == 1.0 and result.error_counts == {}
    assert [e.reason for e in lab.supervisors["mocks"].events][-1] == "dead"  # paused: not running
    env.close()
    client.close()


def test_compose_file_starts_the_lab_stack(
    docker_client: Any, images: dict[str, str], tmp_path: Path
) -> None:
    compose = shutil.which("docker-compose")
    if compose is None:
        pytest.skip("docker-compose is not installed (apt-get install docker-compose); .ci/run installs it")
    import subprocess

    from toolgym.toolservers.hosting.process import free_port

    root = Path(__file__).resolve().parents[3]
    token = "compose-test-token-0123456789"
    ports = {"TOOLGYM_MOCKS_PORT": str(free_port()), "TOOLGYM_TOOLS_PORT": str(free_port())}
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "TOOLGYM_TOKEN": token, **ports}
    project = f"toolgymtest{tmp_path.name[-8:].lower().replace('_', '')}"
    base = [compose, "-p", project, "-f", str(root / "docker" / "compose.lab.yml")]
    up = subprocess.run([*base, "up", "-d"], env=env, capture_output=True, text=True, timeout=300)
    try:
        assert up.returncode == 0, up.stderr
        running = docker_client.containers.list(filters={"label": f"com.docker.compose.project={project}"})
        services = sorted(c.labels["com.docker.compose.service"] for c in running)
        assert services == ["mocks", "tools-cpu"]  # the GPU services need --profile gpu
        for c in running:
            host = c.attrs["HostConfig"]
            assert host["ReadonlyRootfs"] and host["CapDrop"] == ["ALL"]
            assert host["RestartPolicy"]["Name"] == "unless-stopped"
            assert [b["HostIp"] for b in host["PortBindings"]["8000/tcp"]] == ["127.0.0.1"]
        lab = Lab.attach(
            mocks_url=f"http://127.0.0.1:{ports['TOOLGYM_MOCKS_PORT']}",
            tools_url=f"http://127.0.0.1:{ports['TOOLGYM_TOOLS_PORT']}",
            token=token,
        )
        from toolgym.toolservers.hosting.base import probe_health, wait_healthy

        for endpoint, path in ((lab.mocks, "/health"), (lab.tools, "/v1/ready")):
            assert endpoint is not None
            wait_healthy(endpoint.url, path=path, timeout_s=120, alive=lambda: True, logs=str, what="compose")
        assert probe_health(f"http://127.0.0.1:{ports['TOOLGYM_TOOLS_PORT']}", path="/v1/health") is not None
        env_ = lab.env([ARITHMETIC, BANKING])
        for task in (ARITHMETIC, BANKING):
            assert run_episode(env_, OracleAgent(env_.protocol), task).reward == 1.0
        env_.close()
        lab.close()
    finally:
        down = subprocess.run(
            [*base, "down", "-t", "2"], env=env, capture_output=True, text=True, timeout=120
        )
        assert down.returncode == 0, down.stderr
