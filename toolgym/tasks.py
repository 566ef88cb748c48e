"""Tasks: what an episode asks, which files and tools it has, its golden chain and answer spec.

The native format is JSONL, one Task per line; file paths are relative to the JSONL file.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from toolgym.actions import AskUser, FinalAnswer, NoCall, ToolCall
from toolgym.files import FileKind
from toolgym.tools import DEFAULT_CLOCK


class TaskFile(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str  # how the task and the agent refer to it, e.g. "image/receipt.png"
    path: str  # where the bytes are, relative to the task set file
    type: FileKind = "image"


class GoldenStep(BaseModel):
    """One step of the reference chain: an action and, for tool calls, the expected result."""

    model_config = ConfigDict(frozen=True)

    action: ToolCall | FinalAnswer | NoCall | AskUser = Field(discriminator="type")
    expected: Any = None  # expected observation content (JSON); None when not checked


class AnswerSpec(BaseModel):
    """GTA semantics: every whitelist group must match (any alias, case-insensitive, whole word
    or phrase) and no blacklist alias may match; `references` are scored by similarity."""

    model_config = ConfigDict(frozen=True)

    whitelist: list[list[str]] | None = None
    blacklist: list[list[str]] | None = None
    references: list[str] | None = None


class Task(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    query: str
    files: list[TaskFile] = Field(default_factory=list)
    tools: list[str] | None = None  # the tool subset offered; None = every tool of the env
    golden: list[GoldenStep] = Field(default_factory=list)
    answer: AnswerSpec | None = None
    clock: datetime = DEFAULT_CLOCK
    seed: int = 0
    category: str | None = None
    max_steps: int | None = None
    # scripted user: the replies AskUser actions get, in order (multi-turn tasks)
    user_replies: list[str] = Field(default_factory=list)
    # mock apps the task's world needs (names in toolgym.mocks.apps), and the expected final
    # state: state assertions as JSON (toolgym.mocks.rewards.StateAssertion); the golden chain
    # replayed on a fresh world gives the expected state hash
    apps: list[str] | None = None
    expected_state: list[dict[str, Any]] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class TaskSet:
    """An ordered collection of tasks plus the directory their file paths are relative to."""

    def __init__(self, tasks: Iterable[Task], base_dir: Path | str = ".") -> None:
        self.tasks = list(tasks)
        self.base_dir = Path(base_dir)
        self._by_id = {t.id: t for t in self.tasks}
        if len(self._by_id) != len(self.tasks):
            raise ValueError("duplicate task ids in task set")

    @classmethod
    def load(cls, path: Path | str) -> TaskSet:
        path = Path(path)
        tasks = []
        with path.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    tasks.append(Task.model_validate_json(line))
                except ValueError as exc:
                    raise ValueError(f"{path}:{lineno}: invalid task: {exc}") from exc
        return cls(tasks, base_dir=path.parent)

    def dump(self, path: Path | str) -> None:
        with Path(path).open("w", encoding="utf-8") as fh:
            for t in self.tasks:
                fh.write(t.model_dump_json(exclude_none=True) + "\n")

    def file_path(self, f: TaskFile) -> Path:
        return self.base_dir / f.path

    def __getitem__(self, key: str | int) -> Task:
        return self._by_id[key] if isinstance(key, str) else self.tasks[key]

    def __contains__(self, key: object) -> bool:
        return key in self._by_id

    def __iter__(self) -> Iterator[Task]:
        return iter(self.tasks)

    def __len__(self) -> int:
        return len(self.tasks)
