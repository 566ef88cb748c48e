"""The `toolgym` command line."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

app = typer.Typer(
    help="toolgym: tool environments, tool servers and mock apps for LLM agents.", no_args_is_help=True
)
console = Console()


@app.command()
def demo(
    out: Annotated[Path, typer.Option(help="directory for the episode traces")] = Path("runs/demo"),
    tasks: Annotated[
        list[Path] | None,
        typer.Option(
            help="task set files (JSONL); default: the bundled demo set and every mock-app task set"
        ),
    ] = None,
    protocol: Annotated[
        str, typer.Option(help="action protocol the oracle speaks: react, json, openai")
    ] = "react",
    seed: Annotated[int, typer.Option(help="episode seed")] = 0,
) -> None:
    """Run the demo task sets in-process with the oracle agent; print scores, write traces."""
    from toolgym.envs.agents import OracleAgent
    from toolgym.envs.demo import default_task_paths
    from toolgym.envs.runner import EpisodeResult, run_episode
    from toolgym.envs.tool_env import ToolEnv
    from toolgym.tasks import TaskSet
    from toolgym.toolservers.registry import default_toolset

    task_sets = [TaskSet.load(p) for p in (tasks or default_task_paths())]
    toolset = default_toolset()
    results: list[tuple[str, EpisodeResult]] = []
    with Progress(console=console, transient=True) as progress:
        bar = progress.add_task("episodes", total=sum(len(ts) for ts in task_sets))
        for path, task_set in zip(tasks or default_task_paths(), task_sets, strict=True):
            env = ToolEnv(toolset, task_set, protocol=protocol)
            agent = OracleAgent(env.protocol)
            for task in task_set:
                results.append(
                    (path.stem, run_episode(env, agent, task, seed=seed, trace_dir=out / path.stem))
                )
                progress.advance(bar)
            env.close()
    table = Table(title=f"toolgym demo: {len(results)} tasks, oracle agent, {protocol} protocol")
    for column in ("set", "task", "steps", "errors", "answer", "state", "reward", "ms"):
        table.add_column(column, no_wrap=True)
    for set_name, r in results:
        state = r.scores.get("state")
        answer = r.scores.get("answer")
        table.add_row(
            set_name,
            r.task_id,
            str(r.steps),
            str(sum(r.error_counts.values())),
            "-" if answer is None else f"{answer:.2f}",
            "-" if state is None else f"{state:.2f}",
            f"{r.reward:.2f}",
            f"{r.latency_s * 1000:.1f}",
        )
    console.print(table)
    solved = sum(r.reward >= 1.0 for _, r in results)
    with_state = [r for _, r in results if "state" in r.scores]
    console.print(f"answer accuracy: {solved}/{len(results)} = {solved / max(len(results), 1):.1%}")
    if with_state:
        reached = sum(r.scores["state"] >= 1.0 for r in with_state)
        console.print(f"expected state reached: {reached}/{len(with_state)}")
    console.print(f"traces written to {out}/")
    if solved != len(results):
        raise typer.Exit(code=1)


class ToolFormat(StrEnum):
    table = "table"
    openai = "openai"
    agentlego = "agentlego"
    teval = "teval"


@app.command()
def tools(
    fmt: Annotated[ToolFormat, typer.Option("--format", help="table, or a schema export")] = ToolFormat.table,
) -> None:
    """List the built-in tools and their schemas."""
    from toolgym.toolservers.registry import default_toolset

    toolset = default_toolset()
    if fmt is ToolFormat.openai:
        print(json.dumps(toolset.to_openai(), indent=2))
    elif fmt is ToolFormat.agentlego:
        print(json.dumps(toolset.to_agentlego_toolmeta(), indent=2))
    elif fmt is ToolFormat.teval:
        print(json.dumps(toolset.to_teval_api_list(), indent=2))
    else:
        table = Table(title="toolgym tools")
        for column in ("name", "category", "backend", "parameters", "returns"):
            table.add_column(column)
        for t in toolset:
            params = ", ".join(f"{p.name}: {p.type}{'?' if p.optional else ''}" for p in t.params)
            table.add_row(t.name, t.category, t.backend, params, ", ".join(r.type for r in t.returns))
        console.print(table)


# Command groups of other modules register here, one line each (keep this order):
# recorder (record / verify / replay)  -- toolgym/recorder/commands.py
# tool server (serve / models)         -- toolgym/toolservers/commands.py
from toolgym.toolservers.models import models_command  # noqa: E402

app.command(name="models")(models_command)
from toolgym.toolservers.commands import serve  # noqa: E402  (registration block)

app.command()(serve)
# containers and lab node (lab ...)     -- toolservers/hosting/commands.py
from toolgym.toolservers.hosting.commands import register as register_lab  # noqa: E402

register_lab(app)
# evaluation (eval / report / run)     -- evaluation/commands.py
from toolgym.evaluation.commands import register as register_evaluation  # noqa: E402
from toolgym.recorder.commands import register as register_recorder  # noqa: E402

if TYPE_CHECKING:
    from toolgym.evaluation.users import ChatUserLLM


def _open_user_llm(base_url: str, model: str, api_key_env: str | None) -> ChatUserLLM:
    """`toolgym record`'s live user LLM: the chat client sits above the recorder (imported when used)."""
    from toolgym.evaluation.users import open_user_llm

    return open_user_llm(base_url, model, api_key_env)


register_recorder(app, user_llm=_open_user_llm)
register_evaluation(app)
# env service (env-server)             -- envs/service/commands.py
from toolgym.envs.service.commands import register as register_env_service  # noqa: E402

register_env_service(app, user_llm=_open_user_llm)
# MCP server over mock worlds (mcp)     -- envs/mcp_server.py
from toolgym.envs.mcp_server import mcp_command  # noqa: E402

app.command(name="mcp")(mcp_command)


if __name__ == "__main__":
    app()
