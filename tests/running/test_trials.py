"""Multi-trial runs: pass@k / pass^k, parallel episodes with the oracle and with an LLM agent
against the scripted local server, aborted episodes, and the `toolgym run` command."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Mapping
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.cli_text import flat
from tests.models.fake_openai import FakeOpenAI, Fault, Reply, calls, serve, text
from toolgym.cli import app
from toolgym.envs.agents import OracleAgent
from toolgym.envs.demo import demo_tasks_path, mock_task_paths
from toolgym.envs.tool_env import ToolEnv
from toolgym.models.llm import ChatClient, LLMAgent, LLMConfig
from toolgym.running.trials import (
    EpisodeRecord,
    RunSummary,
    load_task_index,
    load_traces,
    pass_at_k,
    pass_hat_k,
    pass_k_table,
    records_from_traces,
    run_trials,
    trial_counts,
)
from toolgym.tasks import TaskSet
from toolgym.toolservers.registry import default_toolset
from toolgym.trace import read_trace


def mock_set(stem: str) -> TaskSet:
    return TaskSet.load(next(p for p in mock_task_paths() if p.stem == stem))


def only(task_set: TaskSet, *ids: str) -> TaskSet:
    return TaskSet([t for t in task_set if t.id in ids], base_dir=task_set.base_dir)


# ---- estimators ------------------------------------------------------------------------------
@pytest.mark.parametrize("n", range(1, 7))
def test_estimators_equal_the_average_over_every_k_subset(n: int) -> None:
    """pass^k / pass@k are the fraction of k-subsets of the n trials that all / any succeed."""
    for c in range(n + 1):
        outcomes = [True] * c + [False] * (n - c)
        for k in range(1, n + 1):
            subsets = list(combinations(outcomes, k))
            assert pass_hat_k(n, c, k) == pytest.approx(sum(all(s) for s in subsets) / len(subsets))
            assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets))


def test_estimators_reject_impossible_counts() -> None:
    for n, c, k in [(3, 4, 1), (3, 1, 0), (3, 1, 4), (0, 0, 1), (3, -1, 1)]:
        with pytest.raises(ValueError, match="need 0 <= c <= n"):
            pass_hat_k(n, c, k)
        with pytest.raises(ValueError, match="need 0 <= c <= n"):
            pass_at_k(n, c, k)


def test_pass_k_table_skips_aborted_and_averages_over_tasks_with_enough_trials() -> None:
    def record(task: str, trial: int, reward: float, status: str = "terminated") -> EpisodeRecord:
        return EpisodeRecord(trial=trial, task_set="s", task_id=task, status=status, reward=reward, steps=1)  # type: ignore[arg-type]

    records = [
        record("a", 0, 1.0),
        record("a", 1, 0.0),
        record("b", 0, 1.0),
        record("b", 1, 1.0),
        record("c", 0, 1.0),
        record("c", 1, 0.0, status="aborted"),  # c has one finished trial: not in the k = 2 row
        record("d", 0, 0.5),  # partial reward is not a success
    ]
    rows = pass_k_table(records)
    assert [r.k for r in rows] == [1, 2]
    assert rows[0].tasks == 4 and rows[0].pass_hat_k == pytest.approx((0.5 + 1 + 1 + 0) / 4)
    assert rows[1].tasks == 2
    assert rows[1].pass_hat_k == pytest.approx((0 + 1) / 2) and rows[1].pass_at_k == pytest.approx(1.0)
    assert pass_k_table([]) == []


# ---- runs ------------------------------------------------------------------------------------
def test_parallel_oracle_trials_keep_mock_state_apart(tmp_path: Path) -> None:
    """Write tasks (transfers, bookings) in parallel, two trials each: every episode's own world."""
    mtu = mock_set("mtu")
    summary = run_trials(
        [("mtu", mtu)],
        lambda env, trial: OracleAgent(env.protocol),
        out=tmp_path,
        toolset=default_toolset(),
        trials=2,
        concurrency=4,
        agent_name="oracle",
    )
    assert len(summary.episodes) == 2 * len(mtu)
    assert all(e.success for e in summary.episodes), [e for e in summary.episodes if not e.success]
    # records come back in (trial, set, task) order whatever order the threads finished in
    assert [(e.trial, e.task_id) for e in summary.episodes] == [(t, task.id) for t in (0, 1) for task in mtu]
    writes = [e for e in summary.episodes if e.category == "write"]
    assert writes and all(e.scores["state"] == 1.0 for e in writes)
    for e in summary.episodes:
        assert e.trace is not None and e.trace.startswith(f"trial-{e.trial}/mtu/")
        assert read_trace(tmp_path / e.trace).end is not None
    loaded = RunSummary.load(tmp_path)
    assert loaded.episodes == summary.episodes and loaded.trials == 2
    assert [(r.k, r.pass_hat_k) for r in pass_k_table(loaded.episodes)] == [(1, 1.0), (2, 1.0)]
    # the same records come back from the traces alone (folders without run.json)
    traces, problems = load_traces(tmp_path)
    rebuilt = records_from_traces(traces, load_task_index(mock_task_paths()))
    assert problems == []
    key = sorted((e.trial, e.task_id, e.reward, e.steps, e.category) for e in summary.episodes)
    assert sorted((e.trial, e.task_id, e.reward, e.steps, e.category) for e in rebuilt) == key


def _seeded_script(body: Mapping[str, Any]) -> Reply | Fault:
    """fish-oil: right on every sampling seed but 102; balance: always right; door: server error."""
    messages = body["messages"]
    prompt = next(m["content"] for m in messages if m["role"] == "user")
    turn = sum(1 for m in messages if m["role"] == "assistant")
    if "family of 5" in prompt:
        if body.get("seed") == 102:
            return text("About 60 days.")
        chain = [
            calls(("OCR", {"image": "image/fish_oil.png"})),
            calls(("Calculator", {"expression": "290 // 5"})),
            text("58 days"),
        ]
        return chain[turn]
    if "bank account 123456" in prompt:
        return [calls(("get_account_balance", {"account_number": "123456"})), text("It holds $4,825.50.")][
            turn
        ]
    return Fault(status=500)


def test_llm_trials_in_parallel_give_pass_k_usage_and_aborted_episodes(tmp_path: Path) -> None:
    demo = TaskSet.load(demo_tasks_path())
    sets = [
        ("demo", only(demo, "fish-oil-days")),
        ("mtu", only(mock_set("mtu"), "mtu-balance-002", "mtu-door-003")),
    ]
    fake = FakeOpenAI(_seeded_script)
    with serve(fake):
        config = LLMConfig(base_url=fake.base_url, model="fake-model", concurrency=3, max_retries=1)
        with ChatClient(config) as client:

            def make_agent(env: ToolEnv, trial: int) -> LLMAgent:
                return LLMAgent(client, env, seed=100 + trial)

            summary = run_trials(
                sets,
                make_agent,
                out=tmp_path,
                toolset=default_toolset(),
                protocol="openai",
                trials=3,
                concurrency=3,
                agent_name="llm:fake-model",
                model="fake-model",
            )
    assert fake.max_in_flight <= 3
    by_task: dict[str, list[EpisodeRecord]] = {}
    for e in summary.episodes:
        by_task.setdefault(e.task_id, []).append(e)
    assert [e.success for e in by_task["fish-oil-days"]] == [True, True, False]
    assert all(e.success for e in by_task["mtu-balance-002"])
    door = by_task["mtu-door-003"]
    assert all(e.status == "aborted" and not e.success for e in door)
    assert door[0].error is not None and "LLMUnavailable" in door[0].error and "HTTP 500" in door[0].error
    assert door[0].trace is not None and door[0].trace.endswith(".partial")
    assert read_trace(tmp_path / door[0].trace).end is None  # the partial trace is readable
    rows = {r.k: r for r in pass_k_table(summary.episodes)}
    assert rows[1].pass_hat_k == pytest.approx((2 / 3 + 1) / 2) and rows[1].tasks == 2
    assert rows[2].pass_hat_k == pytest.approx((1 / 3 + 1) / 2) and rows[2].pass_at_k == pytest.approx(1.0)
    assert rows[3].pass_hat_k == pytest.approx(0.5) and rows[3].pass_at_k == pytest.approx(1.0)
    # token accounting: the episodes' usage adds up to what the server reported
    served = fake.served_usage
    assert summary.usage["prompt_tokens"] == sum(u["prompt_tokens"] for u in served)
    assert summary.usage["completion_tokens"] == sum(u["completion_tokens"] for u in served)
    assert summary.usage["requests"] == len(served) == 2 * 3 + 1 + 3 * 2  # seed 102 answers at once
    stored = json.loads((tmp_path / "run.json").read_text())
    assert stored["usage"]["total_tokens"] == summary.usage["total_tokens"] > 0
    assert stored["episodes"][0]["usage"]["requests"] == 3


def test_a_bug_in_an_episode_stops_the_run(tmp_path: Path) -> None:
    def make_agent(env: ToolEnv, trial: int) -> OracleAgent:
        if trial == 1:
            raise RuntimeError("agent factory bug")
        return OracleAgent(env.protocol)

    with pytest.raises(RuntimeError, match="agent factory bug"):
        run_trials(
            [("mtu", only(mock_set("mtu"), "mtu-balance-002", "mtu-door-003"))],
            make_agent,
            out=tmp_path,
            toolset=default_toolset(),
            trials=2,
            concurrency=2,
        )
    # run.json is checkpointed from the start: it keeps only the episodes that finished (trial 0)
    kept = RunSummary.load(tmp_path).episodes
    assert all(e.trial == 0 for e in kept)


def test_bad_run_settings_are_rejected(tmp_path: Path) -> None:
    mtu = mock_set("mtu")
    with pytest.raises(ValueError, match="at least 1"):
        run_trials(
            [("mtu", mtu)],
            lambda env, t: OracleAgent(env.protocol),
            out=tmp_path,
            toolset=default_toolset(),
            trials=0,
        )
    with pytest.raises(ValueError, match="distinct"):
        run_trials(
            [("x", mtu), ("x", mtu)],
            lambda env, t: OracleAgent(env.protocol),
            out=tmp_path,
            toolset=default_toolset(),
        )


def test_load_traces_reports_files_that_are_not_traces(tmp_path: Path) -> None:
    (tmp_path / "notes.jsonl").write_text('{"hello": "world"}\n')
    (tmp_path / "empty.jsonl").write_text("")
    traces, problems = load_traces(tmp_path)
    assert traces == [] and len(problems) == 2
    assert all("not a trace" in p for p in problems)


# ---- the command -----------------------------------------------------------------------------
def test_run_command_with_the_oracle(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            *["run", "--out", str(tmp_path), "--trials", "2", "--concurrency", "2"],
            *[
                "--tasks",
                str(mock_set_path("mtu")),
                "--task-id",
                "mtu-balance-002",
                "--task-id",
                "mtu-door-003",
            ],
        ],
    )
    assert result.exit_code == 0, result.output
    assert "success: 4/4 episodes = 100.0%" in result.output and "pass^k" in result.output
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.jsonl")) == [
        f"trial-{t}/mtu/{task}.seed0.jsonl" for t in (0, 1) for task in ("mtu-balance-002", "mtu-door-003")
    ]


def test_run_command_with_an_llm_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLGYM_TEST_KEY", "sk-test")
    fake = FakeOpenAI(_seeded_script, api_key="sk-test")
    with serve(fake):
        args = ["run", "--agent", "llm", "--base-url", fake.base_url, "--model", "fake-model"]
        args += ["--api-key-env", "TOOLGYM_TEST_KEY", "--llm-seed", "100", "--temperature", "0.5"]
        args += ["--tasks", str(demo_tasks_path()), "--task-id", "fish-oil-days", "--trials", "3"]
        args += ["--concurrency", "2", "--out", str(tmp_path)]
        result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "success: 2/3 episodes" in result.output and "tokens:" in result.output
    assert {r["seed"] for r in fake.requests} == {100, 101, 102}
    assert {r["temperature"] for r in fake.requests} == {0.5}
    summary = RunSummary.load(tmp_path)
    assert (
        summary.agent == "llm:fake-model" and summary.protocol == "openai" and summary.model == "fake-model"
    )
    assert "sk-test" not in (tmp_path / "run.json").read_text()


def test_run_command_exits_1_when_episodes_abort(tmp_path: Path) -> None:
    fake = FakeOpenAI(_seeded_script)
    with serve(fake):
        args = ["run", "--agent", "llm", "--base-url", fake.base_url, "--model", "m", "--max-retries", "0"]
        args += ["--tasks", str(mock_set_path("mtu")), "--task-id", "mtu-door-003", "--out", str(tmp_path)]
        result = CliRunner().invoke(app, args)
    assert result.exit_code == 1
    assert "1 episodes aborted" in result.output and "HTTP 500" in result.output


def mock_set_path(stem: str) -> Path:
    return next(p for p in mock_task_paths() if p.stem == stem)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agent", "llm"], "needs --base-url and --model"),
        (["--protocol", "lagent"], "unknown protocol"),
        (["--task-id", "no-such-task"], "no task with id"),
        (["--tasks", "/nonexistent/tasks.jsonl"], "no such task set file"),
        (["--trials", "0"], "greater than or equal to 1"),
        (
            [
                "--agent",
                "llm",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model",
                "m",
                "--api-key-env",
                "TOOLGYM_UNSET_KEY",
            ],
            "TOOLGYM_UNSET_KEY",
        ),
    ],
)
def test_run_command_rejects_bad_input(
    args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLGYM_UNSET_KEY", raising=False)
    result = CliRunner().invoke(app, ["run", "--out", str(tmp_path), *args])
    assert result.exit_code == 2, result.output
    assert message in flat(result.output)
    assert not (tmp_path / "run.json").exists()


# ---- a backend that dies mid-episode: aborted, never failed (issue 27, item 6) --------------------
def test_a_mock_service_killed_mid_episode_aborts_and_retry_aborted_reruns_it(tmp_path: Path) -> None:
    """`toolgym lab mock-server` SIGKILLed by the agent before the transfer of the first task: that
    episode and the next (whose world cannot be made) end aborted with the reason, no episode
    counts as failed; with the service back on its port, `retry_aborted` reruns both, and both pass.
    (Threads here; the process pool meets a killed tool server in tests/envs/test_rollouts.py.)"""
    from tests.backends import Killers, banking_sets, mock_service
    from toolgym.envs.rollouts import AgentSpec, WorldSpec

    def run(url: str, pid: int, *, retry_aborted: bool) -> RunSummary:
        return run_trials(
            banking_sets(),
            AgentSpec(
                "tests.backends:Killers",
                {"pid": pid, "target": "first", "at": 1, "marker": str(tmp_path / "killed")},
            ),
            out=tmp_path / "run",
            agent_name="oracle",
            worlds=WorldSpec("toolgym.mocks.service.client:ServiceWorlds", {"url": url, "timeout_s": 10.0}),
            retry_aborted=retry_aborted,
        )

    assert callable(Killers)  # the builder the spec names
    with mock_service() as service:
        summary = run(service.url, service.pid, retry_aborted=False)
    assert [e.status for e in summary.episodes] == ["aborted", "aborted"]
    first, second = summary.episodes
    assert first.error is not None and first.error.startswith("EpisodeAborted: transfer: mock service at")
    assert "unreachable" in first.error and first.steps == 2
    assert second.error is not None and "reset failed" in second.error
    assert trial_counts(summary.episodes) == {}  # no finished trial: nothing scored as a failure
    assert pass_k_table(summary.episodes) == []
    assert first.trace is not None and first.trace.endswith(".partial")
    with mock_service(service.port) as back:
        rerun = run(back.url, back.pid, retry_aborted=True)
    assert [(e.status, e.success) for e in rerun.episodes] == [("terminated", True), ("terminated", True)]
    assert rerun.aborted == []


# ---- half-written files (issue 27, item 7) --------------------------------------------------------
def test_a_full_disk_stops_the_run_says_where_in_run_json_and_one_line_then_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real 1 MiB tmpfs with 96 KiB free: the second episode's image (200 KB) does not fit."""
    from tests.writes import fill, small_disk, temps
    from toolgym.cli import main

    with small_disk(tmp_path / "disk", "1m") as disk:
        out = disk / "run"
        args = ["run", "--tasks", "demo", "--task-id", "memo-room", "--task-id", "caption-cat"]
        args += ["--out", str(out)]
        filler = fill(disk, leave=96 * 1024)
        with pytest.raises(SystemExit) as stop:
            main(args)
        assert stop.value.code == 2
        errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("toolgym: error:")]
        summary = json.loads((out / "run.json").read_text(encoding="utf-8"))
        assert [e["task_id"] for e in summary["episodes"]] == ["memo-room"]
        full = f"the disk is full: {out}/trial-0/demo/files/"
        assert summary["stopped"].startswith(full) and summary["stopped"].endswith(
            ": No space left on device"
        )
        path = summary["stopped"].split(": ")[1]
        assert len(errors) == 1 and errors[0].startswith(f"toolgym: error: {path}: No space left on device")
        assert "resume with: " in errors[0] and temps(disk) == []
        filler.unlink()
        with pytest.raises(SystemExit) as resumed:
            main(args)
        assert resumed.value.code == 0
        summary = json.loads((out / "run.json").read_text(encoding="utf-8"))
        assert summary["stopped"] is None
        assert [(e["task_id"], e["reward"]) for e in summary["episodes"]] == [
            ("memo-room", 1.0),
            ("caption-cat", 1.0),
        ]
        assert temps(disk) == [] and all(read_trace(out / e["trace"]).complete for e in summary["episodes"])


def test_a_disk_filled_to_its_last_byte_mid_run_still_gets_why_the_run_stopped_in_run_json(
    tmp_path: Path,
) -> None:
    """Issue 34: the disk fills up whole (another writer took every byte) after the first episode;
    the next write fails, and run.json, which then has no room for its own rewrite, still says why
    the run stopped: the run kept room for it, and gives it back for that last write."""
    from tests.writes import fill, small_disk, temps

    tasks = only(mock_set("mtu"), "mtu-door-003", "mtu-balance-002")
    with small_disk(tmp_path / "disk", "1m") as disk:
        out = disk / "run"
        fillers: list[Path] = []

        def fill_the_disk(record: EpisodeRecord) -> None:
            if not fillers:
                fillers.append(fill(disk, leave=0))
                assert os.statvfs(disk).f_bavail == 0

        with pytest.raises(OSError) as stop:
            run_trials(
                [("mtu", tasks)], "oracle", out=out, toolset=default_toolset(), on_episode=fill_the_disk
            )
        assert stop.value.errno == errno.ENOSPC
        summary = RunSummary.load(out)
        assert [e.task_id for e in summary.episodes] == [tasks[0].id]
        assert summary.stopped is not None and summary.stopped.startswith(f"the disk is full: {out}/")
        assert summary.stopped.endswith(": No space left on device") and temps(disk) == []
        fillers[0].unlink()
        resumed = run_trials([("mtu", tasks)], "oracle", out=out, toolset=default_toolset())
    assert resumed.stopped is None
    assert [(e.task_id, e.success) for e in resumed.episodes] == [(t.id, True) for t in tasks]


def test_a_resume_removes_what_writers_killed_mid_write_left(tmp_path: Path) -> None:
    from tests.writes import killed_writer, temps

    tasks = only(mock_set("mtu"), "mtu-door-003")
    first = run_trials([("mtu", tasks)], "oracle", out=tmp_path, toolset=default_toolset())
    before = (tmp_path / "run.json").read_bytes()
    killed_writer(tmp_path / "run.json")  # SIGKILL in the middle of run.json's rewrite
    killed_writer(tmp_path / "trial-0" / "mtu" / "files" / ("0" * 64))  # and of a kept file's
    assert len(temps(tmp_path)) == 2 and (tmp_path / "run.json").read_bytes() == before
    again = run_trials([("mtu", tasks)], "oracle", out=tmp_path, toolset=default_toolset())
    assert temps(tmp_path) == [] and again.episodes == first.episodes
    assert (tmp_path / "run.json").read_bytes() == before
