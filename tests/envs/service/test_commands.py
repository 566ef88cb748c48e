"""`toolgym env-server` refuses what it must before serving (running it is test_client's)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolgym.cli import app
from toolgym.envs.agents import OracleAgent
from toolgym.envs.runner import run_episode
from toolgym.envs.service.catalog import Catalog

from .support import TASK_ID, TASK_SET, env_server, golden_outputs, local_env, without_timing


def test_generic_env_client_against_the_command(
    server_process: tuple[str, subprocess.Popen[bytes], Path], catalog: Catalog
) -> None:
    """`toolgym env-server` in its own process: openenv-core's client gets the in-process episode."""
    pytest.importorskip("openenv.core.generic_client", reason="openenv-core's client (the dev extra)")
    from openenv.core.generic_client import GenericEnvClient

    url, _, trace_dir = server_process
    local = local_env(catalog)
    obs, info = local.reset(seed=0, options={"task": TASK_ID})
    with GenericEnvClient(base_url=url).sync() as remote:
        result = remote.reset(seed=0, task_id=TASK_ID, config={"tasks": TASK_SET})
        assert result.observation["text"] == obs
        for raw in golden_outputs(local):
            obs, reward, terminated, truncated, info = local.step(raw)
            result = remote.step({"text": raw})
            assert (result.observation["text"], result.reward, result.done) == (
                obs,
                reward,
                terminated or truncated,
            )
            assert without_timing(result.observation["info"]) == without_timing(info)
        session_id = remote.state()["session_id"]
    local.close()
    assert result.reward == 1.0
    assert list((trace_dir / session_id).glob("*.jsonl"))


def test_the_command_declines_websocket_compression(
    server_process: tuple[str, subprocess.Popen[bytes], Path],
) -> None:
    """Clients offer permessage-deflate by default; the service answers uncompressed frames."""
    from websockets.sync.client import connect

    url, _, _ = server_process
    with connect(url.replace("http://", "ws://") + "/ws") as ws:  # offers deflate, as openenv's client does
        assert ws.response is not None
        assert "Sec-WebSocket-Extensions" not in ws.response.headers
        ws.send('{"type": "state"}')
        assert '"type":"state"' in str(ws.recv(timeout=30)).replace(" ", "")


def test_no_token_beyond_loopback() -> None:
    result = CliRunner().invoke(app, ["env-server", "--host", "0.0.0.0"], env={"TOOLGYM_TOKEN": ""})
    assert result.exit_code == 2
    assert "token" in result.output


# the server's process as if no OpenEnv were installed (nor the MCP SDK): neither is needed
NOTHING_ELSE = "import sys; sys.modules['openenv'] = sys.modules['mcp'] = None"


def test_without_openenv_or_mcp_the_command_serves_episodes(tmp_path: Path, catalog: Catalog) -> None:
    """OpenEnv's protocol is toolgym's own code: a server with no `openenv` and no `mcp` to import
    runs an episode over each transport as in-process."""
    from toolgym.envs.service.client import RemoteToolEnv, Transport

    outputs = golden_outputs(local_env(catalog))
    transports: tuple[Transport, ...] = ("ws", "http")
    with env_server(tmp_path / "traces", prelude=NOTHING_ELSE) as (url, _, _):
        for transport in transports:
            remote = RemoteToolEnv(url, transport=transport, config={"tasks": TASK_SET})
            try:
                remote.reset(seed=0, options={"task": TASK_ID})
                for raw in outputs:
                    _, reward, terminated, _, _ = remote.step(raw)
            finally:
                remote.close()
            assert terminated and reward == 1.0, transport


def test_the_service_and_the_command_import_neither_openenv_nor_mcp() -> None:
    code = (
        "import sys\n"
        "import toolgym.cli\n"
        "from toolgym.envs.service.app import create_app\n"
        "from toolgym.envs.service.catalog import Catalog\n"
        "import toolgym.envs.service.client\n"
        "import toolgym.toolservers.clients, toolgym.toolservers.server\n"
        "create_app(Catalog.build())\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'openenv', 'mcp', 'fastmcp'}))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_unreachable_tool_server() -> None:
    result = CliRunner().invoke(app, ["env-server", "--tool-server", "http://127.0.0.1:1"])
    assert result.exit_code == 2
    assert "cannot start the env service" in result.output


def test_bad_default_task_set() -> None:
    result = CliRunner().invoke(app, ["env-server", "--default-tasks", "nope"])
    assert result.exit_code == 2
    assert "nope" in result.output


def test_a_half_given_or_keyless_user_llm_stops_the_server_before_serving() -> None:
    for options, message in (
        (["--user-model", "m"], "needs both --user-base-url and --user-model"),
        (["--user-api-key-env", "K"], "--user-api-key-env needs --user-base-url and --user-model"),
        (
            ["--user-base-url", "http://127.0.0.1:9/v1", "--user-model", "m", "--user-api-key-env", "NO_KEY"],
            "NO_KEY",
        ),
    ):
        result = CliRunner().invoke(app, ["env-server", *options], env={"COLUMNS": "200", "NO_KEY": ""})
        assert result.exit_code == 2 and message in " ".join(result.output.split()), result.output


def test_the_command_offers_the_operators_user_llm(tmp_path: Path) -> None:
    """`toolgym env-server --user-base-url ... --user-model ...` in its own process: a session that
    chooses `user: llm` is answered by that endpoint, and the key never leaves the server."""
    import httpx

    from tests.models.fake_openai import FakeOpenAI, text
    from tests.models.fake_openai import serve as serve_openai

    from .support import env_server

    fake = FakeOpenAI(lambda _body: text("It's account 123456."), api_key="k3y")
    user_options = ["--user-model", "user-model", "--user-api-key-env", "USER_KEY"]
    with (
        serve_openai(fake),  # gives the fake its address
        env_server(
            tmp_path / "traces", "--user-base-url", fake.base_url, *user_options, env={"USER_KEY": "k3y"}
        ) as (url, _, _),
        httpx.Client(base_url=url, timeout=60) as http,
    ):
        assert http.get("/catalog").json()["users"] == ["rule", "scripted", "llm"]
        config = {"tasks": "multiturn", "user": "llm"}
        reset = http.post("/reset", json={"task_id": "multiturn-transfer-022", "seed": 0, "config": config})
        session_id = reset.json()["observation"]["session_id"]
        ask = {"action": {"type": "ask_user", "text": "What is your account number?"}}
        step = http.post("/step", json={"session_id": session_id, "action": ask}).json()
        state = http.get("/state", params={"session_id": session_id}).text
    assert step["observation"]["text"] == "Observation: It's account 123456."
    assert len(fake.requests) == 1 and "k3y" not in state


def test_strict_arguments_are_the_servers_default_and_each_sessions_choice(tmp_path: Path) -> None:
    """`toolgym env-server --strict-arguments` over real HTTP: a session that says nothing gets a
    number refused for a string parameter (argument_error), one that sets config.strict_arguments
    false gets it coerced, as `toolgym run` without --strict-arguments does."""
    import httpx

    from toolgym.toolservers.hosting.base import wait_healthy

    from .support import free_port

    port = free_port()
    args = ["env-server", "--port", str(port), "--no-traces", "--strict-arguments"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path.cwd()), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolgym.cli", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    url = f"http://127.0.0.1:{port}"
    call = {"type": "tool_call", "name": "get_account_balance", "arguments": {"account_number": 123456}}
    errors: dict[str, object] = {}
    strict: dict[str, object] = {}  # what each session's state says it runs with
    try:
        wait_healthy(
            url, timeout_s=120, alive=lambda: proc.poll() is None, logs=lambda: "", what="env-server"
        )
        with httpx.Client(base_url=url, timeout=60) as http:
            assert http.get("/catalog").json()["defaults"]["strict_arguments"] is True
            for name, extra in (("server default", {}), ("session false", {"strict_arguments": False})):
                config = {"tasks": "mtu", **extra}
                reset = http.post("/reset", json={"task_id": "mtu-balance-002", "seed": 0, "config": config})
                assert reset.status_code == 200, reset.text
                session_id = reset.json()["observation"]["session_id"]
                step = http.post("/step", json={"session_id": session_id, "action": {"action": call}})
                assert step.status_code == 200, step.text
                [observation] = step.json()["observation"]["info"]["observations"]
                errors[name] = (observation.get("error") or {}).get("kind")
                state = http.get("/state", params={"session_id": session_id}).json()
                strict[name] = state["config"]["strict_arguments"]
    finally:
        proc.kill()
        proc.wait(30)
    assert errors == {"server default": "argument_error", "session false": None}
    assert strict == {"server default": True, "session false": False}


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _count(pid: int, what: str) -> int:
    """Entries of /proc/<pid>/<what>: `task` (its threads), `fd` (its open files)."""
    return len(os.listdir(f"/proc/{pid}/{what}"))


def test_idle_sessions_stay_within_their_share_of_memory_and_hold_no_thread_or_file(
    server_process: tuple[str, subprocess.Popen[bytes], Path], catalog: Catalog
) -> None:
    """100 idle HTTP sessions, each reset into a ctool episode (its world built, its trace
    started): the server's resident memory grows by less than 2 MiB a session, the share that
    puts 1000 sessions in 2 GiB (about 0.8 MiB measured; bench/bench_env_sessions.py), and it
    holds no thread and no open file per session (issue 34: one of each ran a server at ~1000
    sessions into `ulimit -n 1024`)."""
    import httpx

    if not Path("/proc/self/status").exists():
        pytest.skip("reads the server's memory from /proc")
    url, proc, _ = server_process
    task_ids = [t.id for t in catalog.task_set(TASK_SET)]
    with httpx.Client(base_url=url, timeout=60) as client:
        client.post("/reset", json={"task_id": task_ids[0], "config": {"tasks": TASK_SET}}).raise_for_status()
        before = _rss(proc.pid)  # one session open: imports done, the first template built
        threads, files = _count(proc.pid, "task"), _count(proc.pid, "fd")
        for i in range(100):
            body = {"task_id": task_ids[i % len(task_ids)], "seed": 0, "config": {"tasks": TASK_SET}}
            client.post("/reset", json=body).raise_for_status()
        grown = _rss(proc.pid) - before
        more_threads, more_files = _count(proc.pid, "task") - threads, _count(proc.pid, "fd") - files
        assert len(client.get("/sessions").json()["sessions"]) == 101
    assert grown / 100 < 2 << 20, f"{grown / 100 / 1024:.0f} kB a session"
    # a worker or two may start while the requests come in; a session holds none of either
    assert more_threads < 10 and more_files < 10, (more_threads, more_files)


def _lowest_free_descriptor(pid: int) -> int:
    used = {int(fd) for fd in os.listdir(f"/proc/{pid}/fd")}
    return next(n for n in range(len(used) + 1) if n not in used)


def test_the_command_raises_its_file_limit_and_answers_503_when_out_of_descriptors(
    catalog: Catalog, tmp_path: Path
) -> None:
    """Started under `ulimit -Sn 256`, the server raises its soft limit on open files to the
    hard one. With every descriptor taken (the test lowers the running server's limit to the
    ones it has open), a step and resets answer 503 `capacity`, never 500, with nothing run
    (the state as it was); with descriptors free again the episode goes on to the runner's trace."""
    import resource

    import httpx

    if not Path("/proc/self/fd").is_dir():
        pytest.skip("reads the server's descriptors from /proc")
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard <= 256:
        pytest.skip("the hard limit leaves no room to raise the soft one")
    local = local_env(catalog)
    raws = golden_outputs(local)
    reset = {"task_id": TASK_ID, "seed": 0, "config": {"tasks": TASK_SET}, "agent": "oracle"}
    with (
        env_server(tmp_path / "traces", soft_file_limit=256) as (url, proc, trace_dir),
        httpx.Client(base_url=url, timeout=60) as http,
    ):
        soft, hard = resource.prlimit(proc.pid, resource.RLIMIT_NOFILE)
        assert soft == hard or (hard == resource.RLIM_INFINITY and soft >= 1 << 16), (soft, hard)
        session_id = http.post("/reset", json=reset).json()["observation"]["session_id"]
        assert (
            http.post("/step", json={"session_id": session_id, "action": {"text": raws[0]}}).status_code
            == 200
        )
        state = http.get("/state", params={"session_id": session_id}).json()
        resource.prlimit(proc.pid, resource.RLIMIT_NOFILE, (_lowest_free_descriptor(proc.pid), hard))
        try:
            step = {"session_id": session_id, "action": {"text": raws[1]}}
            for path, body in (
                ("/step", step),
                ("/reset", {**reset, "session_id": session_id}),
                ("/reset", reset),
            ):
                refused = http.post(path, json=body)
                assert refused.status_code == 503, (path, refused.text)
                assert refused.json()["error"]["kind"] == "capacity", refused.text
            assert http.get("/state", params={"session_id": session_id}).json() == state
        finally:
            resource.prlimit(proc.pid, resource.RLIMIT_NOFILE, (soft, hard))
        for raw in raws[1:]:
            answer = http.post("/step", json={"session_id": session_id, "action": {"text": raw}}).json()
        assert answer["done"] and answer["reward"] == 1.0
        assert len(http.get("/sessions").json()["sessions"]) == 1  # the refused reset left none behind
        trace = (trace_dir / session_id / state["trace"]).read_bytes()
    result = run_episode(
        local, OracleAgent(local.protocol), local.tasks[TASK_ID], seed=0, trace_dir=tmp_path / "a"
    )
    local.close()
    assert result.trace_path is not None and trace == result.trace_path.read_bytes()
