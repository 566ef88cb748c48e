"""The NeMo Gym adapter through NeMo Gym's own servers and rollout collection: `ng_run` (NeMo Gym
0.4.0, in its own Python 3.12 venv) serves the toolgym resources server that
`write_resources_server` wrote, its `gymnasium_agent` and its `openai_model` (a scripted
OpenAI-compatible server on 127.0.0.1 behind it); `ng_collect_rollouts` plays toolgym tasks, whose
sessions run in `toolgym env-server` in toolgym's venv. Each rollout's reward is what toolgym's
runner gives the same replies, and the env server's traces are the runner's.

The venv is `.venv-nemo-gym` at the repository root, or the one TOOLGYM_NEMO_GYM_VENV names;
without it the test is skipped. The rows and the config are checked without it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from omegaconf import DictConfig, OmegaConf

from tests.models.fake_openai import FakeOpenAI, serve, text
from toolgym import FinalAnswer, ToolEnv
from toolgym.actions import Action
from toolgym.envs.adapters.nemo_gym import has_environment_servers, nemo_gym_rows, write_resources_server
from toolgym.envs.agents import ScriptedAgent
from toolgym.envs.demo import resolve_task_set
from toolgym.envs.runner import run_episode
from toolgym.protocols import get_protocol
from toolgym.trace import read_trace

ROOT = Path(__file__).resolve().parents[3]
VENV = Path(os.environ.get("TOOLGYM_NEMO_GYM_VENV", ROOT / ".venv-nemo-gym"))
TASK_SET = "ctool"
SCRIPTS = {
    "ctool-express-track-001": "golden",
    "ctool-express-cancel-002": "golden",
    "ctool-express-redirect-003": "no_calls",
}
# the servers whose venv NeMo Gym would build with uv: they get NeMo Gym's venv instead (0.5 on
# adds the environment server that relays rollouts to the agent)
SERVER_DIRS = (
    "resources_servers/toolgym",
    "responses_api_agents/gymnasium_agent",
    "responses_api_models/openai_model",
)
ENVIRONMENT_SERVER_DIR = "environment_servers/legacy_agent"


def venv_nemo_gym(venv: Path) -> str:
    """The NeMo Gym release installed in `venv` (its dist-info's version)."""
    (info,) = next((venv / "lib").glob("python3.*/site-packages")).glob("nemo_gym-*.dist-info")
    return info.name.removeprefix("nemo_gym-").removesuffix(".dist-info")


def _actions(task_id: str) -> list[Action]:
    if SCRIPTS[task_id] == "no_calls":
        return [FinalAnswer(text="Done.")]
    return [step.action for step in resolve_task_set(TASK_SET)[task_id].golden]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_for(port: int, process: subprocess.Popen[bytes], limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{process.args!r} exited with {process.returncode}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise AssertionError(f"nothing listened on {port} within {limit_s} s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Ends a process this test started and every process of its session (NeMo Gym's servers)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def _collect_beside(
    command: list[str], servers: subprocess.Popen[bytes], cwd: Path, environ: dict[str, str], log: Path
) -> tuple[int, str]:
    """Runs the rollout collection while NeMo Gym's servers run; fails at once (no 600 s hang:
    `ng_collect_rollouts` waits forever on servers that died) when `ng_run` exits first."""
    with log.open("wb") as out:
        collect = subprocess.Popen(
            command, cwd=cwd, env=environ, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + 600
        try:
            while collect.poll() is None:
                if servers.poll() is not None:
                    raise AssertionError(
                        f"ng_run exited with {servers.returncode} while the rollouts were collected: "
                        + log.read_text(errors="replace")[-2000:]
                    )
                if time.monotonic() > deadline:
                    raise AssertionError(
                        "ng_collect_rollouts took over 600 s: " + log.read_text(errors="replace")[-2000:]
                    )
                time.sleep(0.5)
        finally:
            _stop(collect)
    return collect.returncode, log.read_text(errors="replace")


def test_the_rows_open_with_the_instructions_and_the_query(tmp_path: Path) -> None:
    rows = nemo_gym_rows(TASK_SET)
    tasks = resolve_task_set(TASK_SET)
    assert [r["task_id"] for r in rows] == [t.id for t in tasks]
    system, user = rows[1]["responses_create_params"]["input"]
    assert system["role"] == "system" and "Action Input" in system["content"]
    assert user == {"role": "user", "content": tasks[1].query}
    config = OmegaConf.load(write_resources_server(tmp_path, TASK_SET, toolgym_url="http://127.0.0.1:1"))
    assert isinstance(config, DictConfig)  # what NeMo Gym reads the file with
    agent = config["toolgym_agent"]["responses_api_agents"]["gymnasium_agent"]
    assert (
        agent["resources_server"]["name"] == "toolgym_resources_server"
        and rows[0]["agent_ref"]["name"] == "toolgym_agent"
    )
    assert (tmp_path / "resources_servers" / "toolgym" / "app.py").read_text().count(
        "class ToolgymServer("
    ) == 1
    # the current layout: an environment server relays rollouts to the agent; 0.4.0 has none
    relay = config["toolgym_environment_server"]["environment_servers"]["legacy_agent"]
    assert relay["agent_server"] == {"type": "responses_api_agents", "name": "toolgym_agent"}
    old = OmegaConf.load(
        write_resources_server(tmp_path / "old", TASK_SET, toolgym_url="x", nemo_gym="0.4.0")
    )
    assert isinstance(old, DictConfig) and "toolgym_environment_server" not in old
    requirement = (tmp_path / "old" / "resources_servers" / "toolgym" / "requirements.txt").read_text()
    assert requirement.startswith("nemo-gym==0.4.0\n")
    assert (
        (tmp_path / "resources_servers" / "toolgym" / "requirements.txt")
        .read_text()
        .startswith("nemo-gym==0.7.0")
    )


@pytest.fixture
def env_server(tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    args = [
        sys.executable,
        "-m",
        "toolgym.cli",
        "env-server",
        "--port",
        str(port),
        "--trace-dir",
        str(tmp_path / "toolgym"),
    ]
    server = subprocess.Popen(
        args, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        _wait_for(port, server, 120)
        yield f"http://127.0.0.1:{port}"
    finally:
        _stop(server)


@pytest.mark.skipif(
    not (VENV / "bin" / "ng_run").exists(), reason=f"no NeMo Gym venv at {VENV} (or TOOLGYM_NEMO_GYM_VENV)"
)
def test_nemo_gym_rollouts_score_as_toolgym_run(tmp_path: Path, env_server: str) -> None:
    work = tmp_path / "ng"
    release = venv_nemo_gym(VENV)
    config = write_resources_server(work, TASK_SET, toolgym_url=env_server, nemo_gym=release)
    data = work / "rows.jsonl"
    rows = [r for r in nemo_gym_rows(TASK_SET) if r["task_id"] in SCRIPTS]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for folder in (*SERVER_DIRS, *((ENVIRONMENT_SERVER_DIR,) if has_environment_servers(release) else ())):
        (work / folder).mkdir(parents=True, exist_ok=True)
        (work / folder / ".venv").symlink_to(VENV)
    site = next((VENV / "lib").glob("python3.*/site-packages"))
    model_config = site / "responses_api_models" / "openai_model" / "configs" / "openai_model.yaml"

    tasks = resolve_task_set(TASK_SET)
    react = get_protocol("react")
    script = {tasks[i].query: [text(str(react.format_action(a))) for a in _actions(i)] for i in SCRIPTS}
    head = _free_port()
    common = [f"+head_server={{host: 127.0.0.1, port: {head}}}", "+skip_venv_if_present=true"]
    environ = {**os.environ, "WANDB_MODE": "disabled"}
    environ.pop("PYTHONPATH", None)
    with serve(FakeOpenAI(script)) as fake:
        run = [str(VENV / "bin" / "ng_run"), f"+config_paths=[{config},{model_config}]", *common]
        run += [
            f"+policy_base_url={fake.base_url}",
            "+policy_api_key=none",
            f"+policy_model_name={fake.model}",
        ]
        log = (tmp_path / "ng_run.log").open("wb")
        servers = subprocess.Popen(
            run, cwd=work, env=environ, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            _wait_for(head, servers, 300)
            collect = [str(VENV / "bin" / "ng_collect_rollouts"), "+agent_name=toolgym_agent", *common]
            collect += [f"+input_jsonl_fpath={data}", f"+output_jsonl_fpath={tmp_path / 'rollouts.jsonl'}"]
            code, output = _collect_beside(collect, servers, work, environ, tmp_path / "collect.log")
        finally:
            _stop(servers)
    assert code == 0, output[-3000:] + (tmp_path / "ng_run.log").read_text()[-3000:]

    rollouts = [json.loads(line) for line in (tmp_path / "rollouts.jsonl").open()]
    rewards = {r["info"]["task_id"]: r["reward"] for r in rollouts}
    assert sorted(rewards) == sorted(SCRIPTS)
    traces = {read_trace(p).header.task_id: read_trace(p) for p in (tmp_path / "toolgym").rglob("*.jsonl")}
    for task_id in SCRIPTS:
        env = ToolEnv(None, tasks)
        runner = run_episode(
            env, ScriptedAgent(env.protocol, _actions(task_id)), tasks[task_id], trace_dir=tmp_path / "run"
        )
        assert rewards[task_id] == runner.reward == (1.0 if SCRIPTS[task_id] == "golden" else 0.0), task_id
        assert runner.trace_path is not None
        theirs, mine = read_trace(runner.trace_path), traces[task_id]
        assert mine.header.agent == "nemo_gym"
        assert [s.model_dump() for s in mine.steps] == [s.model_dump() for s in theirs.steps]
        assert mine.end == theirs.end
