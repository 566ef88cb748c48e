"""Rephrasing generated queries with a model, for variety (`toolgym generate --rewrite-model M
--rewrite-base-url URL`): any OpenAI-compatible server through toolgym.models.llm's `ChatClient`.

Every call goes through a cassette (toolgym.recorder.cassette, tool `rewriter`), keyed by the whole
request: recorded once, the same run replays from it with no model, so the output stays the same
bytes. A rephrased query replaces the template's only when it is a new query (not one of the set's),
keeps every value of the query that the golden chain needs (ids, amounts, names, quoted text) and
names no id the original did not, does not say what the user is to be asked for, and the task with
it still passes `toolgym check`; otherwise the task keeps its query and the reason is counted.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from toolgym.actions import ToolCall
from toolgym.tasks import Task, TaskProblem, alias_found

REWRITE_TOOL: Final = "rewriter"  # the cassette's tool name for the rewriter's chat calls
REWRITE_VERSION: Final = "1"  # bump when the prompt or the request's layout changes
PROMPT: Final = {
    "en": (
        "Rewrite the user's request below in other words, as another person would type it to an"
        " assistant. Keep every name, number, id, amount, date and quoted text exactly as written, and"
        " add nothing. Reply with the rewritten request only."
    ),
    "zh": "用另一种说法改写下面的用户请求，像另一个人对助手说的那样。所有名字、数字、编号、金额、日期和引号里的文字保持原样，不要添加内容。只回复改写后的请求。",
}
_ID: Final = re.compile(r"(?<![A-Za-z0-9_-])[A-Z]{1,6}-?\d{3,}(?![0-9])")
_NUMBER: Final = re.compile(r"\d+(?:[.,:]\d+)*")
# a proper name inside a sentence (a payee, a city, a shop): a capitalised word not first in it
_NAME: Final = re.compile(r"(?<=[a-z,;:] )[A-Z][a-z]+(?: [A-Z][a-z]+)*")
# how a model answers or refuses instead of rephrasing, and how it turns the user's "my" into "your"
_ASSISTANT: Final = re.compile(
    r"\b(?:I'?m sorry|as an AI|I am an AI|I'?m an AI|I'?m unable|I cannot|I can'?t help)\b|抱歉|作为(?:一个)?AI",
    re.IGNORECASE,
)
_SECOND_PERSON: Final = re.compile(r"\byour?\b", re.IGNORECASE)
_QUOTED: Final = re.compile(r"\"([^\"]+)\"|“([^”]+)”|《([^》]+)》")


class ChatLLM(Protocol):
    """What the rewriter asks: one chat turn's text (toolgym.models.users.ChatUserLLM is one)."""

    def chat(self, messages: Sequence[Mapping[str, str]], *, seed: int | None) -> str: ...


def _scalars(value: Any) -> Iterable[str]:
    if isinstance(value, dict):
        for v in value.values():
            yield from _scalars(v)
    elif isinstance(value, list):
        for v in value:
            yield from _scalars(v)
    elif value is not None and not isinstance(value, bool):
        yield f"{value:g}" if isinstance(value, float) else str(value)


def needed_values(task: Task) -> list[str]:
    """The parts of a task's query a rephrasing must keep: every argument value of the golden
    chain that the query says (an id, an amount, a name), every quoted text, every id."""
    query = task.query
    values = {
        v
        for step in task.golden
        if isinstance(step.action, ToolCall)
        for v in _scalars(step.action.arguments)
        if len(v) > 1 and alias_found(query, v)
    }
    values.update(_ID.findall(query))
    values.update(next(g for g in m.groups() if g) for m in _QUOTED.finditer(query))
    return sorted(values)


def rejection(task: Task, new_query: str, taken: set[str]) -> str | None:
    """Why a rephrasing of `task`'s query cannot replace it (None: it can, as far as the words go)."""
    new = " ".join(new_query.split()).strip().strip('"')
    if not new or new == task.query:
        return "no new wording"
    if new in taken:
        return "the set has this query already"
    if len(new) > 3 * len(task.query) + 40:
        return "much longer than the query"
    lost = [v for v in needed_values(task) if not alias_found(new, v) and v not in new]
    if lost:
        return "loses what the golden chain needs"
    if set(_ID.findall(new)) - set(_ID.findall(task.query)):
        return "names an id the query did not"
    if task.user is not None and any(
        alias_found(new, task.user.known[s]) for s in task.user.must_not_volunteer
    ):
        return "says what the user is to be asked for"
    return _unfaithful(task, new)


def _numbers(text: str) -> set[str]:
    return {m.replace(",", "") for m in _NUMBER.findall(text)}


def _unfaithful(task: Task, new: str) -> str | None:
    """What a small model does instead of rephrasing (seen with SmolLM2-135M): states a made-up
    result, answers or refuses as the assistant, speaks to the user, drops a name, gives the answer."""
    if _numbers(new) - _numbers(task.query):
        return "says a number the query did not"
    if _ASSISTANT.search(new) and not _ASSISTANT.search(task.query):
        return "answers instead of asking"
    if _SECOND_PERSON.search(new) and not _SECOND_PERSON.search(task.query):
        return "speaks to the user, not as the user"
    if any(name not in new for name in _NAME.findall(task.query)):
        return "drops a name the query said"
    answers = [alias for group in (task.answer.whitelist or []) for alias in group] if task.answer else []
    if any(alias_found(new, a) and not alias_found(task.query, a) for a in answers):
        return "says the answer"
    return None


@dataclass
class Rewritten:
    """The tasks after rewriting (rephrased or as they were) and what happened to each."""

    tasks: list[Task]
    kept: int = 0
    reasons: Counter[str] = field(default_factory=Counter)


class Rewriter:
    """Rephrases queries with `llm` (the model `model`), every call through `cassette` when one is
    given (`toolgym.recorder.cassette.Cassette`, in any of its modes)."""

    def __init__(self, llm: ChatLLM, model: str, cassette: Any | None = None) -> None:
        self.llm = llm
        self.model = model
        self.cassette = cassette

    def rephrase(self, task: Task) -> str:
        lang = str(task.metadata.get("lang", "en"))
        messages = [
            {"role": "system", "content": PROMPT.get(lang, PROMPT["en"])},
            {"role": "user", "content": task.query},
        ]
        seed = task.seed
        if self.cassette is None:
            return self.llm.chat(messages, seed=seed)
        request = {"model": self.model, "messages": messages}
        return str(
            self.cassette.chat_call(
                lambda: self.llm.chat(messages, seed=seed),
                tool=REWRITE_TOOL,
                version=REWRITE_VERSION,
                request=request,
                seed=seed,
            )
        )

    def rewrite(self, tasks: Sequence[Task], check: Callable[[Task], list[TaskProblem]]) -> Rewritten:
        """Each task with its rephrased query where that passes (module docstring), in order."""
        taken = {t.query for t in tasks}
        out = Rewritten(tasks=[])
        for task in tasks:
            new = " ".join(self.rephrase(task).split()).strip().strip('"')
            reason = rejection(task, new, taken)
            candidate = task.model_copy(update={"query": new}) if reason is None else task
            if reason is None and check(candidate):
                reason, candidate = "fails toolgym check", task
            if reason is None:
                taken.discard(task.query)
                taken.add(new)
                out.kept += 1
            else:
                out.reasons[reason] += 1
            out.tasks.append(candidate)
        return out


__all__ = ["PROMPT", "REWRITE_TOOL", "REWRITE_VERSION", "Rewriter", "Rewritten", "needed_values", "rejection"]
