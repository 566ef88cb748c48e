"""The `toolgym` command line."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

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
        Path | None, typer.Option(help="task set (JSONL); default: the bundled demo set")
    ] = None,
    protocol: Annotated[
        str, typer.Option(help="action protocol the oracle speaks: react, json, openai")
    ] = "react",
    seed: Annotated[int, typer.Option(help="episode seed")] = 0,
) -> None:
    """Run the demo task set in-process with the oracle agent; print scores, write traces."""
    from toolgym.agents import OracleAgent
    from toolgym.envs.demo import demo_tasks_path
    from toolgym.envs.tool_env import ToolEnv
    from toolgym.runner import run_episode
    from toolgym.tasks import TaskSet
    from toolgym.toolservers.registry import default_toolset

    task_set = TaskSet.load(tasks or demo_tasks_path())
    env = ToolEnv(default_toolset(), task_set, protocol=protocol)
    agent = OracleAgent(env.protocol)
    results = []
    with Progress(console=console, transient=True) as progress:
        bar = progress.add_task("episodes", total=len(task_set))
        for task in task_set:
            results.append(run_episode(env, agent, task, seed=seed, trace_dir=out))
            progress.advance(bar)
    env.close()
    table = Table(title=f"toolgym demo: {len(results)} tasks, oracle agent, {protocol} protocol")
    for column in ("task", "steps", "errors", "reward", "latency ms", "final answer"):
        table.add_column(column)
    for r in results:
        table.add_row(
            r.task_id,
            str(r.steps),
            str(sum(r.error_counts.values())),
            f"{r.reward:.2f}",
            f"{r.latency_s * 1000:.1f}",
            (r.final_answer or "")[:60],
        )
    console.print(table)
    solved = sum(r.reward >= 1.0 for r in results)
    console.print(f"answer accuracy: {solved}/{len(results)} = {solved / max(len(results), 1):.1%}")
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


if __name__ == "__main__":
    app()
