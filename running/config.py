"""A run's configuration: one typed model that `toolgym run`'s options, a config file
(`toolgym run --config run.toml`), the Python API (`toolgym.running.plan.run`) and run.json
share.

Precedence: the model's defaults, then the config file, then the options given on the command
line. `toolgym run --print-config` prints the resolved configuration as TOML (a file `--config`
takes), and run.json keeps it (`run_config`) beside the task sets' sources and digests, so a run
can be repeated (`toolgym run --config RUN/run.json --out NEW`) and scored without naming its
tasks again. run.json leaves out where and on what the run ran (`PLACEMENT`).

Paths in a config file (task files, `out`, `few_shot`, `faults`, `scripted:FILE` agents) are
relative to the file's folder; the configuration run.json keeps has them absolute.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections.abc import Callable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from toolgym.envs.budgets import Budget, Price, PriceTableError, load_price_table, price_of
from toolgym.envs.runner import DEFAULT_VERBOSITY
from toolgym.mocks.events import Verbosity


class TaskFormat(StrEnum):
    """The formats of task files `--tasks` takes (evaluation/loaders/formats.py)."""

    toolgym = "toolgym"
    gta = "gta"
    teval = "teval"
    tooleyes = "tooleyes"
    mtu = "mtu"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LLMOptions(_Section):
    """The model server an LLM agent asks (`--agent llm`), and how; the sampling options also
    drive a local model (`--agent hf:...`)."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    api: Literal["chat", "responses"] | None = None
    temperature: float | None = Field(None, ge=0)
    top_p: float | None = Field(None, ge=0, le=1)
    seed: int | None = None  # trial t sends seed + t
    max_tokens: int | None = Field(None, ge=1)
    timeout: float = Field(120.0, gt=0, allow_inf_nan=False)  # seconds per request
    max_retries: int = Field(4, ge=0)
    token_ids: bool = False
    tools_in_prompt: bool = False
    few_shot: Path | None = None


class EndpointOptions(_Section):
    """Another model on an OpenAI-compatible server: the LLM that plays the user, or the one that
    answers simulated tools."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None


class RayOptions(_Section):
    enabled: bool = False
    address: str | None = None
    ready_timeout: float | None = Field(None, ge=0.1)
    keep_actors: float | None = Field(None, gt=0)
    allow_no_auth: bool = False  # RAY_AUTH_MODE=disabled may turn the run's own instance's token auth off
    tool_server_gpus: float | None = Field(None, ge=0)
    tool_server_tools: list[str] = Field(default_factory=list)
    tool_server_host: str = "127.0.0.1"


class BudgetOptions(_Section):
    """What each episode may spend (toolgym.envs.budgets); None: no limit of that kind."""

    tokens: int | None = Field(None, ge=1)
    seconds: float | None = Field(None, gt=0)
    cost: float | None = Field(None, gt=0)
    price: Price | None = None  # the run's model's price, USD per million tokens (needed for cost)
    price_table: Path | None = None  # model name -> price (JSON), for the run's model; `price` wins

    @model_validator(mode="after")
    def _checked(self) -> BudgetOptions:
        if self.price is None and self.price_table is not None:
            return self  # the table is read when the run's model is known (`budget(model)`)
        try:
            self.budget()  # Budget's own checks (a cost needs a price) when the config is read
        except ValidationError as exc:
            raise ValueError(
                "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
            ) from None
        return self

    def budget(self, model: str | None = None) -> Budget | None:
        """The episodes' budget; a cost budget without `price` takes `model`'s price from the
        price table (PriceTableError when the table cannot say it)."""
        if self.tokens is None and self.seconds is None and self.cost is None:
            return None
        price = self.price
        if price is None and self.cost is not None and self.price_table is not None:
            if model is None:
                raise PriceTableError(
                    "a price table prices a model, and this run names none (--agent llm --model M)"
                )
            price = price_of(load_price_table(self.price_table), model)
        return Budget(tokens=self.tokens, seconds=self.seconds, cost=self.cost, price=price)


class RunConfig(_Section):
    """Everything that says what a run runs (not how this invocation treats an earlier run in the
    same folder: `--overwrite`, `--retry-aborted` are no part of it)."""

    agent: str = "oracle"
    out: Path | None = None  # None: a new runs/run-<UTC time>/
    tasks: list[str] = Field(default_factory=list)  # names or files; none: the default sets
    task_format: TaskFormat | None = None
    task_ids: list[str] = Field(default_factory=list)
    mode: Literal["end-to-end", "step"] = "end-to-end"
    protocol: str | None = None
    preset: str | None = None
    trials: int = Field(1, ge=1)
    seed: int = 0
    max_steps: int | None = Field(None, ge=1)
    limit: str | None = None
    concurrency: int = Field(1, ge=1)
    workers: int | None = Field(None, ge=1)
    threads: int | None = Field(None, ge=1)  # torch's threads for an hf: model; None: torch_threads()
    max_consecutive_aborts: int = Field(5, ge=0)
    faults: list[Path] = Field(default_factory=list)
    # tool-schema perturbation plans: preset names (toolgym.envs.perturb.PRESETS) or JSON files
    perturb: list[str] = Field(default_factory=list)
    retriever: str | None = None
    strict_arguments: bool = False  # no argument coercion (toolgym.mocks.app.strict_arguments)
    budget: BudgetOptions = BudgetOptions()
    reward_mode: Literal["final", "milestones"] = "final"  # dense: each step's change in milestone progress
    notifications: Verbosity = DEFAULT_VERBOSITY  # which events of a task with events notify the agent
    llm: LLMOptions = LLMOptions()
    user: EndpointOptions = EndpointOptions()
    simulator: EndpointOptions = EndpointOptions()
    ray: RayOptions = RayOptions()

    def recorded(self) -> dict[str, Any]:
        """What run.json keeps: what was run, not where or on what (`out`, `concurrency`,
        `workers`, `threads`, `ray`), so a run's run.json is the same bytes whichever executor ran it, and
        `toolgym run --config RUN/run.json --out NEW` runs it again."""
        return self.model_dump(mode="json", exclude=set(PLACEMENT))

    def resolved_paths(self, root: Path) -> RunConfig:
        """The same configuration with its relative paths taken from `root` (a config file's
        folder; the current one for the command line), made absolute."""
        return self._map_paths(root, lambda path: path if path.is_absolute() else (root / path).absolute())

    def relative_paths(self, root: Path) -> RunConfig:
        """The same configuration with the paths below `root` relative to it (a config file to
        keep beside its tasks)."""

        def relative(path: Path) -> Path:
            return path.relative_to(root.absolute()) if path.is_relative_to(root.absolute()) else path

        return self._map_paths(root, relative)

    def _map_paths(self, root: Path, absolute: Callable[[Path], Path]) -> RunConfig:
        from toolgym.envs.demo import bundled_task_sets
        from toolgym.envs.perturb import PRESETS

        bundled = bundled_task_sets()
        tasks = [
            t if t in bundled and not (root / t).exists() else str(absolute(Path(t))) for t in self.tasks
        ]
        agent = self.agent
        if agent.startswith("scripted:"):
            agent = f"scripted:{absolute(Path(agent.removeprefix('scripted:')))}"
        llm = self.llm
        if llm.few_shot is not None:
            llm = llm.model_copy(update={"few_shot": absolute(llm.few_shot)})
        budget = self.budget
        if budget.price_table is not None:
            budget = budget.model_copy(update={"price_table": absolute(budget.price_table)})
        return self.model_copy(
            update={
                "tasks": tasks,
                "agent": agent,
                "out": None if self.out is None else absolute(self.out),
                "faults": [absolute(p) for p in self.faults],
                "budget": budget,
                "perturb": [
                    p if p in PRESETS and not (root / p).exists() else str(absolute(Path(p)))
                    for p in self.perturb
                ],
                "llm": llm,
            }
        )


PLACEMENT = ("out", "concurrency", "workers", "threads", "ray")  # where and on what a run ran, not what


class RunConfigError(ValueError):
    """A configuration that cannot run, in one line; `option` names the command-line option to
    blame (the CLI's hint), where there is one."""

    def __init__(self, message: str, option: str | None = None) -> None:
        super().__init__(f"{option}: {message}" if option else message)
        self.message = message
        self.option = option


# the command-line option of each field, where the two names differ from `--<field>`
_OPTION_OF: dict[str, str] = {
    "task_ids": "--task-id",
    "task_format": "--format",
    "llm.seed": "--llm-seed",
    "ray.enabled": "--ray",
    "ray.tool_server_tools": "--ray-tool-server-tool",
    "budget.price": "--price",
    "budget.price_table": "--price-table",
}
_PREFIXED = ("user", "simulator", "ray", "budget")  # their options are --user-*, --simulator-*, ...


def option_of(path: str) -> str:
    """The command-line option that sets a field (`llm.base_url` -> `--base-url`)."""
    if path in _OPTION_OF:
        return _OPTION_OF[path]
    section, _, name = path.rpartition(".")
    words = f"{section}_{name}" if section in _PREFIXED else name
    return "--" + words.replace("_", "-")


def validated(data: Mapping[str, Any], where: str | None = None) -> RunConfig:
    """A RunConfig from plain data; RunConfigError names the option (or key) and the problem of
    the first bad value, in one line."""
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        path = ".".join(str(p) for p in error["loc"])
        value = error.get("input")
        given = f" (got {value!r})" if not isinstance(value, Mapping) and error["type"] != "missing" else ""
        message = f"{error['msg']}{given}"
        if error["type"] == "extra_forbidden":
            message = "unknown setting"
        prefix = f"{where}: {path}" if where else option_of(path)
        raise RunConfigError(message, prefix) from None


def merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`over` on top of `base`, section by section (a file's [llm] keeps the keys a command line
    does not give)."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def read_config_file(path: Path) -> dict[str, Any]:
    """A config file's settings, its relative paths taken from its folder: TOML, or JSON (a
    run.json: the configuration it recorded). RunConfigError for a file that is neither, or whose
    settings are wrong."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RunConfigError(f"{path}: {exc.strerror or exc}", "--config") from None
    data: Any
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise RunConfigError(f"{path}: not {'JSON' if path.suffix == '.json' else 'TOML'}: {exc}") from None
    if isinstance(data, dict) and "run_config" in data and "episodes" in data:  # a run.json
        data = data["run_config"]
        if data is None:
            raise RunConfigError(f"{path}: this run.json records no configuration (an older toolgym)")
    if not isinstance(data, dict):
        raise RunConfigError(f"{path}: a config file holds a table of settings")
    config = validated(data, where=str(path))
    relative = config.resolved_paths(path.parent)
    return relative.model_dump(mode="json", include=set(data))  # only what the file sets


def load_config(file: Path | None, overrides: Mapping[str, Any]) -> RunConfig:
    """The configuration a command line resolves to: defaults, the file's settings, then
    `overrides` (the options given); paths absolute."""
    data = read_config_file(file) if file is not None else {}
    config = validated(merged(data, overrides))
    return config.resolved_paths(Path.cwd())


# ---- TOML out ---------------------------------------------------------------------------------
def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)  # a TOML basic string is a JSON string


def to_toml(config: RunConfig) -> str:
    """The configuration as TOML that `--config` reads back to the same model (unset values,
    None, are left out: they are the defaults)."""
    data = config.model_dump(mode="json")
    lines: list[str] = []
    tables: list[str] = []
    for key, value in data.items():
        if isinstance(value, dict):
            body = [f"{k} = {_toml_value(v)}" for k, v in value.items() if v is not None]
            tables += ["", f"[{key}]", *body] if body else []
        elif value is not None:
            lines.append(f"{key} = {_toml_value(value)}")
    return "\n".join(lines + tables) + "\n"
