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


def bundled_task_sets() -> dict[str, Path]:
    """The bundled task sets by short name: demo, and each mock-app set by its file stem."""
    return {(p.parent.name if p.stem == "tasks" else p.stem): p for p in default_task_paths()}


def resolve_task_set(name_or_path: str | Path) -> TaskSet:
    """A bundled task set by name (`demo`, `mtu`, ...) or a task file; ValueError for neither."""
    bundled = bundled_task_sets()
    path = bundled.get(str(name_or_path)) or Path(name_or_path)
    if not path.is_file():
        raise ValueError(
            f"no task set {str(name_or_path)!r}: give a task file or one of {', '.join(sorted(bundled))}"
        )
    return TaskSet.load(path)


def make_demo_env(**kwargs: Any) -> ToolEnv:
    from toolgym.toolservers.registry import default_toolset

    return ToolEnv(default_toolset(), TaskSet.load(demo_tasks_path()), **kwargs)
