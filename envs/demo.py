"""The demo environment: the built-in offline tools and the bundled demo task set."""

from __future__ import annotations

from importlib.resources import files as package_files
from pathlib import Path
from typing import Any

from toolgym.envs.tool_env import ToolEnv
from toolgym.tasks import TaskSet


def demo_tasks_path() -> Path:
    return Path(str(package_files("toolgym.fixtures").joinpath("demo/tasks.jsonl")))


def mock_task_paths() -> list[Path]:
    """The bundled mock-app task sets (fixtures/mock_tasks/*.jsonl)."""
    root = Path(str(package_files("toolgym.fixtures"))) / "mock_tasks"
    return sorted(root.glob("*.jsonl"))


def default_task_paths() -> list[Path]:
    return [demo_tasks_path(), *mock_task_paths()]


def tooleyes_tasks_path() -> Path:
    """ToolEyes' 382 queries over its 95 simulated tool libraries (fixtures/tooleyes)."""
    return Path(str(package_files("toolgym.fixtures").joinpath("tooleyes/tasks.jsonl")))


def bundled_task_sets() -> dict[str, Path]:
    """The task sets shipped with toolgym by name (`--tasks demo`, `--tasks mtu`, ...). ToolEyes
    is not among the defaults: its 382 episodes are run when asked for."""
    named = {"demo": demo_tasks_path(), "tooleyes": tooleyes_tasks_path()}
    named.update({p.stem: p for p in mock_task_paths()})
    return named


def resolve_task_sets(given: list[str] | None) -> list[Path]:
    """Task set files from `--tasks` values: a bundled set's name or a file path (default: every
    bundled set). ValueError names what is neither, and the bundled names."""
    if not given:
        return default_task_paths()
    bundled = bundled_task_sets()
    paths: list[Path] = []
    for value in given:
        path = Path(value)
        if value in bundled and not path.exists():
            paths.append(bundled[value])
        elif path.is_file():
            paths.append(path)
        else:
            raise ValueError(
                f"no such task set file or bundled set: {value} (bundled: {', '.join(bundled)}; "
                "`toolgym tasks` lists them)"
            )
    return paths


def resolve_task_set(name_or_path: str | Path) -> TaskSet:
    """A bundled task set by name (`demo`, `mtu`, ...) or a task file; ValueError for neither."""
    (path,) = resolve_task_sets([str(name_or_path)])
    return TaskSet.load(path)


def make_demo_env(**kwargs: Any) -> ToolEnv:
    from toolgym.toolservers.registry import default_toolset

    return ToolEnv(default_toolset(), TaskSet.load(demo_tasks_path()), **kwargs)
