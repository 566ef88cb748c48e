"""The `toolgym` command line.

`main()` is the entry point: it runs the commands and turns every error into one line on stderr
(`file:line: reason` where the error names a place) with exit status 2 for a user's mistake (a
missing or malformed file, a bad option value, a port in use) and 1 for anything else, so a log
never ends in a traceback; `toolgym --debug ...` shows the traceback instead. Off a terminal it
also keeps tables wide (full headers in CI logs) and silences other libraries' progress bars.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

if not sys.stdout.isatty():
    # set before any rich Console exists: off a terminal rich assumes 80 columns and cuts headers
    os.environ.setdefault("COLUMNS", "200")
    # tqdm / Hugging Face bars are terminal animations; in a log they are noise
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from toolgym.tasks import TaskFileError

app = typer.Typer(
    help="toolgym: tool environments, tool servers and mock apps for LLM agents.", no_args_is_help=True
)
console = Console()
_debug = False  # `toolgym --debug`: tracebacks instead of one-line errors


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("toolgym")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


def _show_version(value: bool) -> None:
    if value:
        print(f"toolgym {_version()}")
        raise typer.Exit()


@app.callback()
def _global_options(
    debug: Annotated[
        bool, typer.Option("--debug", help="show the full traceback of an error instead of one line")
    ] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_show_version, is_eager=True, help="print the version and exit"),
    ] = False,
) -> None:
    """toolgym: tool environments, tool servers and mock apps for LLM agents."""
    global _debug
    _debug = debug or _debug


# user mistakes: the message says what to fix, exit status 2 (as for a bad option)
_USER_ERRORS: tuple[type[BaseException], ...] = (OSError, ValueError, KeyError, LookupError)


def one_line(exc: BaseException) -> str:
    """An exception as one line: its message with line breaks folded (pydantic's messages span
    several), the OS error's file name in front (`path: No such file or directory`)."""
    if isinstance(exc, OSError) and exc.strerror:
        where = exc.filename if exc.filename is not None else None
        message = f"{where}: {exc.strerror}" if where is not None else exc.strerror
    elif isinstance(exc, KeyError) and exc.args:
        message = str(exc.args[0])
    else:
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    lines = [part.strip() for part in str(message).splitlines() if part.strip()]
    # pydantic ends its messages with a link to its docs: noise on a one-line error
    return " ".join(line for line in lines if not line.startswith("For further information visit"))


def _fail(message: str, code: int) -> NoReturn:
    print(f"toolgym: error: {message}", file=sys.stderr)
    _exit(code)


def _exit(code: int) -> NoReturn:
    """The process's end. A command a signal stopped (Ctrl-C: 130, SIGTERM: 143) has written what
    it writes (run.json says why it stopped) and ends at once: with torch loaded (a model in this
    process) the interpreter's teardown alone takes a second or more, so the exit handlers run (a
    generation left behind stops and leaves the model, Ray shuts down), the output is flushed and
    the process ends without that teardown."""
    if code > 128 and "torch" in sys.modules:
        import atexit

        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # a closed pipe, a closed stream
                stream.flush()
        os._exit(code)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    """The `toolgym` command: every error is one line (exit 2: a user's mistake, 1: anything
    else) unless `--debug` (or TOOLGYM_DEBUG=1) asks for the traceback."""
    from typer._click import exceptions as click_errors

    global _debug
    args = list(sys.argv[1:] if argv is None else argv)
    _debug = _debug or os.environ.get("TOOLGYM_DEBUG", "") not in ("", "0")
    command = typer.main.get_command(app)
    try:
        code = command.main(args, prog_name="toolgym", standalone_mode=False)
    except typer.Exit as exc:
        code = exc.exit_code
    except click_errors.NoArgsIsHelpError as exc:  # bare `toolgym`: the help, as before
        exc.show()
        sys.exit(2)
    except click_errors.ClickException as exc:  # bad options and arguments: click's message, on one line
        if _debug:
            raise
        ctx = getattr(exc, "ctx", None)
        hint = f" (see {ctx.command_path} --help)" if ctx is not None else ""
        _fail(one_line(ValueError(exc.format_message())) + hint, 2)
    except (typer.Abort, KeyboardInterrupt):
        if _debug:
            raise
        _fail("interrupted", 130)
    except TaskFileError as exc:  # a task file's problems: one line each, as `toolgym check` prints them
        if _debug:
            raise
        for problem in exc.problems:
            print(f"toolgym: error: {' '.join(str(problem).split())}", file=sys.stderr)
        _exit(2)
    except _USER_ERRORS as exc:
        if _debug:
            raise
        _fail(one_line(exc), 2)
    except Exception as exc:  # a bug: still one line in a log, the traceback one flag away
        if _debug:
            raise
        _fail(f"{type(exc).__name__}: {one_line(exc)} (rerun with toolgym --debug for the traceback)", 1)
    _exit(code if isinstance(code, int) else 0)


@app.command()
def demo(
    out: Annotated[Path, typer.Option(help="directory for the episode traces")] = Path("runs/demo"),
    tasks: Annotated[
        list[str] | None,
        typer.Option(
            help="task set files (JSONL) or bundled set names (`toolgym tasks`); default: the bundled "
            "demo set and every mock-app task set"
        ),
    ] = None,
    protocol: Annotated[
        str, typer.Option(help="action protocol the oracle speaks: react, json, openai")
    ] = "react",
    seed: Annotated[int, typer.Option(help="episode seed")] = 0,
    jobs: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="processes that run the task sets side by side (Linux; traces and table as with 1); "
            "default: one per CPU",
        ),
    ] = None,
) -> None:
    """Run the demo task sets with the oracle agent, on a process per CPU; print scores, write traces."""
    from toolgym.envs.demo import run_demo
    from toolgym.envs.rollouts import usable_cpus
    from toolgym.envs.task_sets import named_task_files
    from toolgym.protocols import get_protocol
    from toolgym.tasks import TaskSet

    get_protocol(protocol)  # a bad name: one line before any task is loaded
    sets = [(named.name, TaskSet.load(named.path)) for named in named_task_files(tasks)]
    # no refresh thread: run_demo forks its processes only from a process with one thread
    with Progress(console=console, transient=True, auto_refresh=False) as progress:
        bar = progress.add_task("episodes", total=sum(len(s) for _, s in sets))
        progress.refresh()

        def advance() -> None:
            progress.advance(bar)
            progress.refresh()

        episodes = run_demo(
            sets,
            out,
            protocol=protocol,
            seed=seed,
            jobs=usable_cpus() if jobs is None else jobs,
            on_episode=advance,
        )
    results = [(e.set_name, e.result) for e in episodes]
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


@app.command("tasks")
def tasks_command() -> None:
    """List the registered task sets (toolgym's and installed packages'): the names `--tasks` takes."""
    from toolgym.envs.demo import bundled_task_sets
    from toolgym.tasks import TaskSet

    table = Table(title="toolgym task sets (--tasks NAME)")
    for column in ("name", "tasks", "categories", "file"):
        table.add_column(column)
    for name, path in bundled_task_sets().items():
        task_set = TaskSet.load(path)
        categories = sorted({t.category for t in task_set if t.category})
        table.add_row(name, str(len(task_set)), ", ".join(categories), str(path))
    console.print(table)


class ToolFormat(StrEnum):
    table = "table"
    openai = "openai"
    responses = "responses"
    agentlego = "agentlego"
    teval = "teval"


@app.command()
def tools(
    fmt: Annotated[ToolFormat, typer.Option("--format", help="table, or a schema export")] = ToolFormat.table,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="schemas for OpenAI strict function calling (objects closed, every property "
            "required, optional ones nullable); with --format openai (the default then) or responses",
        ),
    ] = False,
) -> None:
    """List the registered tools (toolgym's and installed packages') and their schemas."""
    from toolgym.toolservers.registry import default_toolset

    toolset = default_toolset()
    if strict and fmt is ToolFormat.table:
        fmt = ToolFormat.openai
    if strict and fmt not in (ToolFormat.openai, ToolFormat.responses):
        raise typer.BadParameter("--strict exports the openai or responses format", param_hint="--strict")
    if fmt is ToolFormat.openai:
        print(json.dumps(toolset.to_openai(strict=strict), indent=2))
    elif fmt is ToolFormat.responses:
        print(json.dumps(toolset.to_responses(strict=strict), indent=2))
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
# runs (run / teval-*) and what a run becomes (eval / report / winrate / export / view)
#                                        -- running/commands/, reports/commands/
from toolgym.recorder.commands import register as register_recorder  # noqa: E402
from toolgym.reports.commands import COMMANDS as REPORT_COMMANDS  # noqa: E402
from toolgym.running.commands import COMMANDS as RUN_COMMANDS  # noqa: E402

if TYPE_CHECKING:
    from toolgym.models.users import ChatUserLLM


def _open_user_llm(base_url: str, model: str, api_key_env: str | None) -> ChatUserLLM:
    """`toolgym record`'s live user LLM: the chat client sits above the recorder (imported when used)."""
    from toolgym.models.users import open_user_llm

    return open_user_llm(base_url, model, api_key_env)


register_recorder(app, user_llm=_open_user_llm)
# in the order `toolgym --help` lists them
_RUNS_AND_REPORTS = RUN_COMMANDS | REPORT_COMMANDS
for _name in ("run", "eval", "report", "teval-subsets", "teval-answer", "winrate", "export", "view"):
    app.command(_name)(_RUNS_AND_REPORTS[_name])
# task authoring (schema, check, generate)  -- authoring/commands/
from toolgym.authoring.commands import COMMANDS as AUTHORING_COMMANDS  # noqa: E402

for _name, _command in AUTHORING_COMMANDS.items():
    app.command(_name)(_command)
# a local model behind transformers serve (serve-model)  -- models/serve_model.py
from toolgym.models.serve_model import serve_model_command  # noqa: E402

app.command(name="serve-model")(serve_model_command)
# env service (env-server)             -- envs/service/commands.py
from toolgym.envs.service.commands import register as register_env_service  # noqa: E402

register_env_service(app, user_llm=_open_user_llm)
# MCP server over mock worlds (mcp)     -- envs/mcp_command.py (the server: envs/mcp_server.py)
from toolgym.envs.mcp_command import mcp_command  # noqa: E402

app.command(name="mcp")(mcp_command)
# plug-in packages (new app|tool|tasks|suite NAME)  -- toolgym/scaffold.py
from toolgym.scaffold import register as register_new  # noqa: E402


def _taken_names() -> dict[str, str]:
    """Each name a registered app, tool, task set or suite has (toolgym's or a plug-in's), and
    which package has it: `toolgym new` refuses them."""
    from toolgym.envs.demo import TASK_SETS
    from toolgym.evaluation.suites import SUITES
    from toolgym.mocks.apps import ALL_APPS
    from toolgym.plugins import Plugin
    from toolgym.toolservers.registry import tool_owners

    def owned(kind: str, owners: Mapping[str, Plugin]) -> dict[str, str]:
        return {name: f"the {kind} {name!r} of package {p.package}" for name, p in owners.items()}

    taken = owned("tool", tool_owners())
    for kind, registry in (("suite", SUITES), ("task set", TASK_SETS), ("app", ALL_APPS)):
        taken.update(owned(kind, {name: registry.owner(name) for name in registry}))
    return taken


register_new(app, taken=_taken_names)


if __name__ == "__main__":
    main()
