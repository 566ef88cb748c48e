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


def make_demo_env(**kwargs: Any) -> ToolEnv:
    from toolgym.toolservers.registry import default_toolset

    return ToolEnv(default_toolset(), TaskSet.load(demo_tasks_path()), **kwargs)
