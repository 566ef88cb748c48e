"""A run's configuration: the model, its TOML form, config files (paths relative to the file),
one-line errors that name the option, and the `run` command's options, which are the model's
settings one for one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer

from toolgym.cli import app
from toolgym.running.commands.run_options import OPTIONS, run_signature
from toolgym.running.config import (
    BudgetOptions,
    EndpointOptions,
    LLMOptions,
    RayOptions,
    RunConfig,
    RunConfigError,
    TaskFormat,
    load_config,
    option_of,
    read_config_file,
    to_toml,
    validated,
)


def a_config(root: Path) -> RunConfig:
    """Every section off its defaults."""
    return RunConfig(
        agent="llm",
        out=root / "runs" / "x",
        tasks=["mtu", str(root / "mine.jsonl")],
        task_format=TaskFormat.toolgym,
        task_ids=["a", "b"],
        mode="step",
        protocol="react",
        preset="gta",
        trials=3,
        seed=7,
        max_steps=4,
        limit="2:5",
        concurrency=2,
        max_consecutive_aborts=0,
        faults=[root / "flaky.json"],
        perturb=["all", str(root / "plans" / "mine.json")],
        retriever="bm25:top3",
        llm=LLMOptions(
            base_url="http://127.0.0.1:8000/v1",
            model="M",
            api_key_env="KEY",
            api="chat",
            temperature=0.5,
            top_p=0.9,
            seed=11,
            max_tokens=64,
            timeout=30.5,
            max_retries=0,
            token_ids=True,
            few_shot=root / "shots.json",
        ),
        user=EndpointOptions(base_url="http://127.0.0.1:8001/v1", model="U"),
        simulator=EndpointOptions(base_url="http://127.0.0.1:8002/v1", model="S", api_key_env="SIM"),
        ray=RayOptions(enabled=True, address="auto", ready_timeout=5.0, tool_server_tools=["OCR"]),
    )


def test_the_toml_form_reads_back_to_the_same_configuration(tmp_path: Path) -> None:
    config = a_config(tmp_path)
    path = tmp_path / "run.toml"
    path.write_text(to_toml(config), encoding="utf-8")
    assert load_config(path, {}) == config
    # relative to the file's folder, as a committed file keeps them
    path.write_text(to_toml(config.relative_paths(tmp_path)), encoding="utf-8")
    assert '"runs/x"' in path.read_text(encoding="utf-8")
    assert load_config(path, {}) == config


def test_a_config_files_paths_are_relative_to_its_folder_and_options_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / "mine.jsonl").write_text("", encoding="utf-8")
    (folder / "run.toml").write_text(
        'agent = "scripted:script.jsonl"\ntasks = ["mine.jsonl", "mtu"]\nout = "runs/a"\ntrials = 2\n'
        'perturb = ["no-types", "plans/mine.json"]\n'
        '[llm]\nfew_shot = "shots.json"\ntemperature = 0.3\n',
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)  # elsewhere: the file's paths still point beside it
    config = load_config(folder / "run.toml", {"trials": 5, "llm": {"top_p": 0.5}})
    assert config.tasks == [str(folder / "mine.jsonl"), "mtu"]  # a registered name stays a name
    assert config.agent == f"scripted:{folder / 'script.jsonl'}"
    assert config.out == folder / "runs" / "a" and config.llm.few_shot == folder / "shots.json"
    # a perturbation preset stays a name, a plan file is taken beside the config file
    assert config.perturb == ["no-types", str(folder / "plans" / "mine.json")]
    assert config.trials == 5  # the command line wins
    assert (config.llm.temperature, config.llm.top_p) == (0.3, 0.5)  # a section merges key by key
    # the options' own paths are the current folder's
    assert load_config(None, {"out": "runs/b"}).out == tmp_path / "runs" / "b"


def test_a_run_json_is_a_config_file(tmp_path: Path) -> None:
    config = a_config(tmp_path)
    run_json = tmp_path / "run.json"
    run_json.write_text(
        json.dumps({"agent": "llm", "episodes": [], "run_config": config.model_dump(mode="json")}),
        encoding="utf-8",
    )
    placement = {"out": config.out, "concurrency": config.concurrency, "ray": config.ray}
    assert load_config(run_json, {}) == config
    recorded = json.dumps({"agent": "llm", "episodes": [], "run_config": config.recorded()})
    run_json.write_text(recorded, encoding="utf-8")
    assert load_config(run_json, placement) == config  # run.json keeps what ran, not where
    run_json.write_text(json.dumps({"agent": "llm", "episodes": [], "run_config": None}), encoding="utf-8")
    with pytest.raises(RunConfigError, match="records no configuration"):
        read_config_file(run_json)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"llm": {"timeout": -5}}, "--timeout: Input should be greater than 0 (got -5)"),
        ({"trials": 0}, "--trials: Input should be greater than or equal to 1 (got 0)"),
        ({"llm": {"api": "soap"}}, "--api: Input should be 'chat' or 'responses' (got 'soap')"),
        ({"ray": {"tool_server_tools": "OCR"}}, "--ray-tool-server-tool: Input should be a valid list"),
        ({"user": {"model": 3}}, "--user-model: Input should be a valid string (got 3)"),
        ({"mode": "both"}, "--mode: Input should be 'end-to-end' or 'step' (got 'both')"),
    ],
)
def test_a_bad_value_is_one_line_that_names_its_option(data: dict[str, object], message: str) -> None:
    with pytest.raises(RunConfigError) as caught:
        validated(data)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_a_config_files_mistakes_name_the_file_and_the_key(tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_text("[llm]\nmodle = 'M'\n", encoding="utf-8")
    with pytest.raises(RunConfigError, match=r"run\.toml: llm\.modle: unknown setting"):
        read_config_file(path)
    path.write_text("trials = [", encoding="utf-8")
    with pytest.raises(RunConfigError, match="not TOML"):
        read_config_file(path)
    with pytest.raises(RunConfigError, match="No such file"):
        read_config_file(tmp_path / "none.toml")


def test_the_run_commands_options_are_the_models_settings() -> None:
    """Each option gives one setting under the name `option_of` says (the one errors name), and
    its default is the model's: the command line and a config file mean the same run."""
    params = run_signature().parameters
    settings = [o.setting for o in OPTIONS if o.setting is not None]
    assert len(settings) == len(set(settings))

    def leaves(model: type[RunConfig] | type[LLMOptions], prefix: str = "") -> set[str]:
        found = set()
        for name, info in model.model_fields.items():
            kind = info.annotation
            if isinstance(kind, type) and issubclass(
                kind, LLMOptions | EndpointOptions | RayOptions | BudgetOptions
            ):
                found |= leaves(kind, f"{name}.")  # type: ignore[arg-type]
            else:
                found.add(prefix + name)
        return found

    assert set(settings) == leaves(RunConfig)
    defaults = RunConfig().model_dump(mode="json")
    command = typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]
    flags = {p.name: max(p.opts, key=len) for p in command.params}
    for option in OPTIONS:
        if option.setting is None:
            continue
        assert option_of(option.setting) == flags[option.name], option.name
        value: Any = defaults
        for part in option.setting.split("."):
            value = value[part]
        assert params[option.name].default == (None if value == [] else value), option.name


def test_threads_say_on_what_a_run_ran_not_what_it_ran() -> None:
    config = RunConfig(agent="hf:smollm2", threads=2)
    assert "threads" not in config.recorded()  # run.json: a resume elsewhere may take other threads
    with pytest.raises(RunConfigError, match="--threads: Input should be greater than or equal to 1"):
        validated({"threads": 0})
