"""`toolgym run`'s options, as data: each is a typer option with the RunConfig setting it gives
(running/config.py), so the command, a config file and the Python API share one model.
`run_signature` turns the table into the command's signature; `given_settings` reads back the
options given on the command line (only those: a config file's values stand otherwise)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Final

import typer

from toolgym.running.commands.common import FormatOption, given
from toolgym.running.commands.llm_options import (
    LLM_FIELDS,
    ApiKeyEnvOption,
    BaseUrlOption,
    LLMSeedOption,
    MaxRetriesOption,
    MaxTokensOption,
    ModelOption,
    TemperatureOption,
    ThreadsOption,
    TimeoutOption,
    TopPOption,
)
from toolgym.running.config import RunConfig

AGENT_HELP = (
    "oracle (golden chains), llm (a chat server: --base-url, --model), hf:PATH[#FILE.gguf] or "
    "hf:smollm2 (a local model in this process, transformers), scripted:FILE (actions per task, "
    "JSONL) or package.module:factory (your own agent; README: 'Your own agent')"
)


@dataclass(frozen=True)
class RunOption:
    name: str  # the parameter's name in the command's signature
    annotation: Any  # Annotated[type, typer.Option(...)]
    setting: str | None  # the RunConfig setting it gives (dotted); None: how to run, not what
    default: Any = None  # an option of no setting (a setting's default is RunConfig's)


def _opt(kind: Any, *decls: str, help: str) -> Any:
    return Annotated[kind, typer.Option(*decls, help=help)]


OPTIONS: Final[list[RunOption]] = [
    RunOption(
        "config",
        _opt(
            Path | None,
            help="a config file (TOML, or a run's run.json): its settings, under the options given here",
        ),
        None,
    ),
    RunOption(
        "print_config",
        _opt(
            bool, "--print-config", help="print the resolved configuration as TOML and exit, running nothing"
        ),
        None,
        False,
    ),
    RunOption("agent", _opt(str, help=AGENT_HELP), "agent"),
    RunOption(
        "out",
        _opt(
            Path | None,
            help="run directory: traces per trial and run.json (default: a new runs/run-<time>/); "
            "a directory holding the same run resumes it",
        ),
        "out",
    ),
    RunOption(
        "tasks",
        _opt(
            list[str] | None,
            help="task set files (JSONL) or bundled set names (`toolgym tasks` lists them); "
            "default: the bundled demo set and every mock-app task set",
        ),
        "tasks",
    ),
    RunOption("task_format", FormatOption, "task_format"),
    RunOption("task_id", _opt(list[str] | None, "--task-id", help="run only these task ids"), "task_ids"),
    RunOption(
        "mode",
        _opt(
            str,
            help="end-to-end: the agent's actions run; step: teacher-forced, the agent predicts each "
            "golden step given the golden history (GTA's and MTU's step metrics score it)",
        ),
        "mode",
    ),
    RunOption(
        "protocol",
        _opt(
            str | None,
            help="react, json, openai or responses; default: openai for llm (responses with "
            "--api responses), react otherwise",
        ),
        "protocol",
    ),
    RunOption(
        "api",
        _opt(
            str | None,
            help="the API the LLM agent calls: chat (/v1/chat/completions) or responses "
            "(/v1/responses); default: responses for --protocol responses, chat otherwise",
        ),
        "llm.api",
    ),
    RunOption("trials", _opt(int, help="trials per task (pass@k / pass^k need k <= trials)"), "trials"),
    RunOption("concurrency", _opt(int, help="episodes (and model requests) at once"), "concurrency"),
    RunOption(
        "workers",
        _opt(
            int | None,
            help="episodes on N local processes (no Ray needed); with --ray, N Ray actors "
            "(default: one per CPU of the Ray cluster)",
        ),
        "workers",
    ),
    RunOption("threads", ThreadsOption, "threads"),
    RunOption(
        "ray",
        _opt(bool, "--ray", help="spread episodes over Ray actors (pip install 'toolgym\\[ray]')"),
        "ray.enabled",
    ),
    RunOption(
        "ray_address",
        _opt(
            str | None,
            help="join this Ray cluster (auto, ray://head:10001; else the one RAY_ADDRESS names); implies "
            "--ray; default: a Ray instance of the run's own, on loopback (docs/scaling.md)",
        ),
        "ray.address",
    ),
    RunOption(
        "ray_allow_no_auth",
        _opt(
            bool,
            "--ray-allow-no-auth",
            help="let RAY_AUTH_MODE=disabled start the run's own Ray instance without token "
            "authentication (every local user may then run code through it)",
        ),
        "ray.allow_no_auth",
    ),
    RunOption(
        "ray_ready_timeout",
        _opt(
            float | None,
            help="seconds a Ray actor may take to be placed (default 60; a replacement for one on a "
            "lost node may never be; one placed may take 10 minutes to start); then its episodes go "
            "to the other actors, or abort if none is left",
        ),
        "ray.ready_timeout",
    ),
    RunOption(
        "ray_keep_actors",
        _opt(
            float | None,
            help="on a cluster the run joins (--ray-address), keep the actors for the next run for "
            "this many seconds unused, their imports, envs and worlds warm (docs/scaling.md)",
        ),
        "ray.keep_actors",
    ),
    RunOption(
        "ray_tool_server_gpus",
        _opt(
            float | None,
            help="place a tool server as its own Ray actor asking for this many GPUs (0: CPU only); "
            "the rollout actors call its tools over HTTP; implies --ray",
        ),
        "ray.tool_server_gpus",
    ),
    RunOption(
        "ray_tool_server_tool",
        _opt(
            list[str] | None,
            "--ray-tool-server-tool",
            help="a tool the tool-server actor serves (repeat; default: every tool); the others stay "
            "in the rollout actors",
        ),
        "ray.tool_server_tools",
    ),
    RunOption(
        "ray_tool_server_host",
        _opt(
            str,
            help="address the tool-server actor binds: loopback (one machine), or on a cluster the "
            "GPU node's address, with TOOLGYM_TOOL_SERVER_TOKEN set (16+ chars)",
        ),
        "ray.tool_server_host",
    ),
    RunOption("seed", _opt(int, help="episode seed (the same for every trial)"), "seed"),
    RunOption(
        "max_steps",
        _opt(int | None, help="step limit of tasks that set none (default 10, or the preset's)"),
        "max_steps",
    ),
    RunOption(
        "preset",
        _opt(
            str | None,
            help="a paper's published setup (protocol, turn limit, sampling): tooleyes, gta, mtu, "
            "teval, ctooleval; options given here win",
        ),
        "preset",
    ),
    RunOption(
        "limit",
        _opt(
            str | None,
            help="run only episodes N (the first N) or A:B (A to B-1), in (trial, set, task) order",
        ),
        "limit",
    ),
    RunOption(
        "retry_aborted",
        _opt(
            bool,
            "--retry-aborted",
            help="resuming: run again the episodes that infra errors aborted (kept otherwise)",
        ),
        None,
        False,
    ),
    RunOption(
        "overwrite",
        _opt(bool, "--overwrite", help="replace the run in --out instead of resuming it"),
        None,
        False,
    ),
    RunOption(
        "max_consecutive_aborts",
        _opt(int, help="stop the run after this many aborted episodes in a row (0: never)"),
        "max_consecutive_aborts",
    ),
    RunOption(
        "json_output",
        _opt(bool, "--json", help="print the run summary (run.json) as JSON on stdout"),
        None,
        False,
    ),
    RunOption("base_url", BaseUrlOption, "llm.base_url"),
    RunOption("model", ModelOption, "llm.model"),
    RunOption("api_key_env", ApiKeyEnvOption, "llm.api_key_env"),
    RunOption("temperature", TemperatureOption, "llm.temperature"),
    RunOption("top_p", TopPOption, "llm.top_p"),
    RunOption(
        "few_shot",
        _opt(
            Path | None,
            help="solved examples for the LLM agent (JSON list or JSONL of chat messages), put in the "
            "system message after the protocol's instructions",
        ),
        "llm.few_shot",
    ),
    RunOption(
        "tools_in_prompt",
        _opt(
            bool,
            "--tools-in-prompt",
            help="openai/responses protocols: list the tool schemas in the system message too, not "
            "only in the request's tools (for a server whose chat template renders no tools)",
        ),
        "llm.tools_in_prompt",
    ),
    RunOption("llm_seed", LLMSeedOption, "llm.seed"),
    RunOption("max_tokens", MaxTokensOption, "llm.max_tokens"),
    RunOption(
        "token_ids",
        _opt(
            bool,
            "--token-ids",
            help="ask the model server for each turn's token ids and logprobs (vLLM's return_token_ids; "
            "chat API) and keep them in the traces, for `toolgym export --format tokens`",
        ),
        "llm.token_ids",
    ),
    RunOption("timeout", TimeoutOption, "llm.timeout"),
    RunOption("max_retries", MaxRetriesOption, "llm.max_retries"),
    RunOption(
        "faults",
        _opt(
            list[Path] | None,
            "--faults",
            help="fault plan (JSON, docs/faults.md); the run is repeated under each, in OUT/faults/<plan>/",
        ),
        "faults",
    ),
    RunOption(
        "perturb",
        _opt(
            list[str] | None,
            "--perturb",
            help="tool-schema perturbation: a preset (scrambled-names, renamed-arguments, no-descriptions, "
            "no-types, distractors-3, distractors-10, distractors-all, all) or a plan file (JSON, "
            "docs/faults.md); the run is repeated under each, in OUT/perturbed/<plan>/",
        ),
        "perturb",
    ),
    RunOption(
        "user_base_url",
        _opt(
            str | None,
            help="play the user of tasks with a user scenario with an LLM on this OpenAI-compatible "
            "base URL (default: the rule-based user); needs --user-model",
        ),
        "user.base_url",
    ),
    RunOption("user_model", _opt(str | None, help="the user LLM's model name"), "user.model"),
    RunOption(
        "user_api_key_env",
        _opt(str | None, help="environment variable holding the user LLM's API key"),
        "user.api_key_env",
    ),
    RunOption(
        "simulator_base_url",
        _opt(
            str | None,
            help="answer simulated tools (docs/simulated-tools.md) with an LLM on this "
            "OpenAI-compatible base URL (default: the deterministic simulator); needs --simulator-model",
        ),
        "simulator.base_url",
    ),
    RunOption("simulator_model", _opt(str | None, help="the simulator LLM's model name"), "simulator.model"),
    RunOption(
        "simulator_api_key_env",
        _opt(str | None, help="environment variable holding the simulator LLM's API key"),
        "simulator.api_key_env",
    ),
    RunOption(
        "strict_arguments",
        _opt(
            bool,
            "--strict-arguments",
            help="app tools take arguments of their declared types only: no coercion of a JSON number "
            "or boolean into a string parameter (MTU's apps coerce by default), for benchmarks that "
            "score argument types",
        ),
        "strict_arguments",
    ),
    RunOption(
        "budget_tokens",
        _opt(
            int | None,
            help="stop an episode past this many prompt + completion tokens (truncated, the budget named)",
        ),
        "budget.tokens",
    ),
    RunOption(
        "budget_seconds",
        _opt(
            float | None,
            help="stop an episode past this much wall time (model turns and steps; not reproducible)",
        ),
        "budget.seconds",
    ),
    RunOption(
        "budget_cost",
        _opt(float | None, help="stop an episode past this cost in USD; needs --price or --price-table"),
        "budget.cost",
    ),
    RunOption(
        "price",
        _opt(
            str | None,
            help="the model's price: PROMPT,COMPLETION in USD per million tokens (for --budget-cost)",
        ),
        "budget.price",
    ),
    RunOption(
        "price_table",
        _opt(
            Path | None,
            help="prices per model (JSON: model name -> PROMPT,COMPLETION or {prompt, completion}, USD per "
            "million tokens); the run's model's price, for --budget-cost",
        ),
        "budget.price_table",
    ),
    RunOption(
        "reward_mode",
        _opt(
            str,
            help="milestones: each step's reward is the change in milestone progress (the task's own "
            "milestones, else those of its golden chain) and the last step's the usual one; final: "
            "the last step's only",
        ),
        "reward_mode",
    ),
    RunOption(
        "notifications",
        _opt(
            str,
            help="which events of a task with events notify the agent: none; low (the important "
            "ones); medium (those with a notification text); high (every event)",
        ),
        "notifications",
    ),
    RunOption(
        "retriever",
        _opt(
            str | None,
            help="offer each task the top K tools a retriever ranks for its query instead of its own "
            "list: topK (embedder of the ml extra, else BM25), embedding:topK or bm25:topK; the "
            "rankings go to OUT/retrieval.json, which `eval` scores with NDCG@k and recall@k",
        ),
        "retriever",
    ),
]
assert {o.setting for o in OPTIONS if o.setting and o.setting.startswith("llm.")} >= {
    f"llm.{f}" for f in LLM_FIELDS.values()
}


def _default(option: RunOption) -> Any:
    """The option's default: its setting's default in RunConfig (so --help shows it)."""
    if option.setting is None:
        return option.default
    value: Any = RunConfig()
    for part in option.setting.split("."):
        value = getattr(value, part)
    if isinstance(value, list) or value is None:
        return None  # typer's list options default to None
    return value.value if hasattr(value, "value") else value


def run_signature() -> inspect.Signature:
    """The command's signature: a typer.Context, then one parameter per option."""
    params = [inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)]
    params += [
        inspect.Parameter(
            o.name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=_default(o),
            annotation=o.annotation,
        )
        for o in OPTIONS
    ]
    return inspect.Signature(params)


def given_settings(ctx: typer.Context, values: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of the options given on the command line, nested as RunConfig's sections."""
    settings: dict[str, Any] = {}
    for option in OPTIONS:
        if option.setting is None or not given(ctx, option.name):
            continue
        value = values[option.name]
        section, _, key = option.setting.rpartition(".")
        target = settings.setdefault(section, {}) if section else settings
        target[key] = value.value if hasattr(value, "value") else value
    return settings
