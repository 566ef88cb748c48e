"""The demo environment: the built-in offline tools and the bundled demo task set."""

from __future__ import annotations

from importlib.resources import files as package_files
from pathlib import Path
from typing import Any

from toolgym.envs.tool_env import ToolEnv
from toolgym.tasks import TaskSet


def demo_tasks_path() -> Path:
    return Path(str(package_files("toolgym.fixtures").joinpath("demo/tasks.jsonl")))


def make_demo_env(**kwargs: Any) -> ToolEnv:
    from toolgym.toolservers.registry import default_toolset

    return ToolEnv(default_toolset(), TaskSet.load(demo_tasks_path()), **kwargs)
