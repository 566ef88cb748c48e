"""Tasks: what an episode asks, which files and tools it has, its golden chain and answer spec.

The native format is JSONL, one Task per line; file paths are relative to the JSONL file.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

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


# A "word character" for answer boundaries: letters and digits of spaced scripts. Han, kana and
# other unspaced scripts are no word characters here (Chinese has no spaces between words), so
# "58" is found in "58天" and "南京" in "寄往南京的包裹".
_UNSPACED = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u0e00-\u0e7f"
_WORD = rf"[^\W{_UNSPACED}]"
# one word character at a position (compiled once: a pattern with _WORD in it costs about a
# millisecond to compile, and every alias of every scored answer used to compile its own)
_WORD_CHAR = re.compile(_WORD)
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\d])")


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def as_number(text: str) -> float | None:
    """A plain decimal number ("4,825.50" -> 4825.5), or None."""
    t = text.strip().replace(",", "")
    if re.fullmatch(r"[-+]?\d+(?:\.\d+)?", t):
        return float(t)
    return None


def _whole_word_in(text: str, needle: str) -> bool:
    """Whether `needle` (not empty) occurs in `text` with no word character (`_WORD`) right
    before or right after it: `re.search(rf"(?<!{_WORD})" + re.escape(needle) + rf"(?!{_WORD})",
    text)`, each occurrence tried in turn, without a pattern compiled per needle."""
    start = text.find(needle)
    while start >= 0:
        end = start + len(needle)
        if (start == 0 or _WORD_CHAR.match(text, start - 1) is None) and (
            end == len(text) or _WORD_CHAR.match(text, end) is None
        ):
            return True
        start = text.find(needle, start + 1)
    return False


def alias_found(text: str, alias: str) -> bool:
    """Unicode-aware whole-word match (NFKC, so full-width digits and punctuation count as their
    ASCII forms; case-folded; boundaries that work for "$5", "C++" and unspaced scripts such as
    Chinese); a numeric alias also matches the same number written differently ("4,825.50" for
    "4825.5")."""
    a = _norm(alias).strip()
    if not a:
        return False
    t = _norm(text)
    if _whole_word_in(t, a):
        return True
    value = as_number(a)
    if value is None:
        return False
    return any(
        math.isclose(float(m.group().replace(",", "")), value, rel_tol=1e-9, abs_tol=1e-9)
        for m in _NUMBER.finditer(t)
    )


class UserScenario(BaseModel):
    """The simulated user of a multi-turn task (toolgym.envs.users): who they are, what they want,
    what they know (slot -> value), which of those facts they never offer unprompted, when they
    are satisfied, and how many turns they give the agent. Facts the agent cannot know from the
    query live here, so the agent has to ask for them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    persona: str = Field(min_length=1, description="who the user is, in a sentence")
    goal: str = Field(min_length=1, description="what the user wants done, in words")
    known: dict[str, str] = Field(description="what the user knows: slot name -> value")
    must_not_volunteer: list[str] = Field(
        default_factory=list, description="known slots told only when the agent asks for them"
    )
    satisfied_when: str = Field(min_length=1, description="when the user is satisfied, in words")
    # deterministic form of satisfied_when: every group matched (any alias, whole word) by what
    # the agent tells the user; empty = only the words above (an LLM user reads them)
    satisfied_phrases: list[list[str]] = Field(default_factory=list)
    # extra words that ask for a slot (the slot name with spaces always does), for the rule-based user
    slot_keywords: dict[str, list[str]] = Field(default_factory=dict)
    max_turns: int = Field(default=5, ge=1, le=100, description="user turns before the user leaves")

    @model_validator(mode="after")
    def _consistent(self) -> UserScenario:
        unknown = sorted(set(self.must_not_volunteer) - set(self.known))
        if unknown:
            raise ValueError(f"must_not_volunteer names slots the user does not know: {', '.join(unknown)}")
        stray = sorted(set(self.slot_keywords) - set(self.known))
        if stray:
            raise ValueError(f"slot_keywords names slots the user does not know: {', '.join(stray)}")
        return self


class ScenarioError(ValueError):
    """A task whose user scenario is missing fields or contradicts itself; names the task."""

    def __init__(self, task_id: str, problem: str) -> None:
        super().__init__(f"task {task_id!r}: invalid user scenario: {problem}")
        self.task_id = task_id
        self.problem = problem


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
    # a simulated user (toolgym.envs.users); takes precedence over user_replies when set. Left
    # out of dumps when absent, so older tasks dump and hash (trace headers' task_hash) as before
    user: UserScenario | None = Field(default=None, exclude_if=lambda v: v is None)
    # mock apps the task's world needs (names in toolgym.mocks.apps), and the expected final
    # state: state assertions as JSON (toolgym.mocks.rewards.StateAssertion); the golden chain
    # replayed on a fresh world gives the expected state hash
    apps: list[str] | None = None
    expected_state: list[dict[str, Any]] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _scenario_names_the_task(cls, data: Any) -> Any:
        # a bad scenario is reported with the task's id, not just as field "user.goal"
        if isinstance(data, dict) and isinstance(data.get("user"), dict):
            try:
                UserScenario.model_validate(data["user"])
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or 'scenario'}: {e['msg']}" for e in exc.errors()
                )
                raise ScenarioError(str(data.get("id", "?")), problems) from None
        return data


def scenario_error(exc: ValidationError) -> ScenarioError | None:
    """The ScenarioError inside a task's ValidationError, if that is what failed."""
    for error in exc.errors():
        cause = (error.get("ctx") or {}).get("error")
        if isinstance(cause, ScenarioError):
            return cause
    return None


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
                except ValidationError as exc:
                    bad = scenario_error(exc)
                    if bad is not None:
                        raise ScenarioError(bad.task_id, f"{bad.problem} ({path}:{lineno})") from exc
                    raise ValueError(f"{path}:{lineno}: invalid task: {exc}") from exc
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
