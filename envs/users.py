"""Simulated users: who answers the agent's `AskUser` (and, in tasks with a user scenario, its plain
messages, `NoCall` with text) in a multi-turn episode.

Three simulators, one protocol (`UserSimulator`):
- `ScriptedUser`: the task's `user_replies`, in order (toolgym's behaviour before scenarios; tasks
  without a scenario always get it, so their traces stay byte-identical);
- `RuleBasedUser`: answers the slots a message asks for from the scenario's known facts, by slot
  name and keywords; deterministic, no LLM; "I don't know" for anything else; facts listed in
  `must_not_volunteer` are told only when asked for;
- `LLMUser`: a chat model plays the scenario through a `UserLLM` (one method, `chat`). envs sits
  below evaluation, so the adapter for the existing OpenAI-compatible client is
  `toolgym.models.users.ChatUserLLM`, and the cassette wrapper that records and replays its
  calls is `toolgym.recorder.cassette.Cassette.wrap_user_llm`.

The one seam in `ToolEnv` is `ToolEnv(user=...)`: the simulator for tasks with a scenario (default:
a `RuleBasedUser`). A simulator's failure (`InfraError`: a dead endpoint, a timeout, a reply that
is not text) is an `infra_error` observation, never an exception out of `step`; the scenario's
`max_turns` bounds the conversation (docs/users.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from toolgym.envs.rewards import answer_matches
from toolgym.errors import InfraError
from toolgym.tasks import AnswerSpec, Task, UserScenario

NO_MORE_USER_INPUT = "The user has nothing to add."
STOP_SIGNAL = "###STOP###"  # what an LLM user writes when it is satisfied (tau-bench's token)
MAX_USER_REPLY_CHARS = 4000
I_DONT_KNOW = "I don't know."
SATISFIED_REPLY = "Thank you, that's all I needed."


@dataclass(frozen=True)
class UserReply:
    """One user turn: the text the agent sees, whether the user ends the conversation, and which
    known facts it told (rule-based users)."""

    text: str
    stop: bool = False
    slots: tuple[str, ...] = ()


@runtime_checkable
class UserSimulator(Protocol):
    """Plays the user of one episode at a time."""

    name: str

    def start(self, task: Task, seed: int) -> None:
        """A new episode of `task` begins (its scenario is `task.user`)."""
        ...

    def reply(self, message: str, *, asked: bool) -> UserReply:
        """The user's answer to the agent's `message`: a question (`AskUser`, asked=True) or a plain
        message (asked=False). Raises InfraError when the user cannot be reached."""
        ...


class ScriptedUser:
    """The task's `user_replies`, one per turn, then NO_MORE_USER_INPUT; never stops."""

    name = "scripted"

    def __init__(self) -> None:
        self._replies: list[str] = []
        self._next = 0

    def start(self, task: Task, seed: int) -> None:
        self._replies = list(task.user_replies)
        self._next = 0

    def reply(self, message: str, *, asked: bool) -> UserReply:
        text = self._replies[self._next] if self._next < len(self._replies) else NO_MORE_USER_INPUT
        self._next += 1
        return UserReply(text=text)


def _scenario(task: Task) -> UserScenario:
    if task.user is None:
        raise ValueError(f"task {task.id!r} has no user scenario")
    return task.user


def slot_label(slot: str) -> str:
    return slot.replace("_", " ").strip()


def _keyword_pattern(words: Sequence[str]) -> re.Pattern[str]:
    # whole words, any case, an optional plural "s": "people" in "How many people?", "date" in "dates"
    body = "|".join(re.escape(w.strip().lower()) for w in words if w.strip())
    return re.compile(rf"(?<!\w)(?:{body})s?(?!\w)", re.IGNORECASE)


def satisfied(scenario: UserScenario, text: str) -> bool:
    """Whether `text` (something the agent told the user) meets the scenario's satisfied_phrases."""
    return bool(scenario.satisfied_phrases) and answer_matches(
        text, AnswerSpec(whitelist=scenario.satisfied_phrases)
    )


class RuleBasedUser:
    """Answers from the scenario's known facts, by slot name (underscores read as spaces) and the
    scenario's `slot_keywords`. Deterministic: the same messages get the same replies."""

    name = "rule_based"

    def __init__(self) -> None:
        self._scenario: UserScenario | None = None
        self._patterns: dict[str, re.Pattern[str]] = {}
        self._told: set[str] = set()

    def start(self, task: Task, seed: int) -> None:
        scenario = _scenario(task)
        self._scenario = scenario
        self._patterns = {
            slot: _keyword_pattern([slot_label(slot), *scenario.slot_keywords.get(slot, [])])
            for slot in scenario.known
        }
        self._told = set()

    def asked_slots(self, message: str) -> list[str]:
        """The known slots `message` asks for, in the scenario's order."""
        return [slot for slot, pattern in self._patterns.items() if pattern.search(message)]

    def _facts(self, slots: Sequence[str]) -> str:
        assert self._scenario is not None
        parts = []
        for s in slots:
            value = self._scenario.known[s]
            end = "" if value.rstrip()[-1:] in (".", "!", "?") else "."
            parts.append(f"{slot_label(s)[:1].upper()}{slot_label(s)[1:]}: {value}{end}")
        return " ".join(parts)

    def reply(self, message: str, *, asked: bool) -> UserReply:
        scenario = self._scenario
        if scenario is None:
            raise RuntimeError("RuleBasedUser.reply before start")
        slots = self.asked_slots(message)
        if slots:
            self._told.update(slots)
            return UserReply(text=self._facts(slots), slots=tuple(slots))
        if satisfied(scenario, message):
            return UserReply(text=SATISFIED_REPLY, stop=True)
        # nothing asked that the user knows: offer what it may volunteer and has not said yet,
        # never a must_not_volunteer fact
        free = [s for s in scenario.known if s not in self._told and s not in scenario.must_not_volunteer]
        if free:
            self._told.update(free)
            return UserReply(
                text=f"{I_DONT_KNOW} What I can tell you: {self._facts(free)}", slots=tuple(free)
            )
        return UserReply(text=I_DONT_KNOW)


class UserLLM(Protocol):
    """A chat model for `LLMUser`. `model` names it in cassette keys (another model never replays
    this one's answers)."""

    model: str

    def chat(self, messages: Sequence[Mapping[str, str]], *, seed: int | None) -> str:
        """The reply text to `messages` (OpenAI chat format). Raises InfraError when the endpoint
        fails, times out or answers with something that is not a chat reply."""
        ...


def user_system_prompt(task: Task) -> str:
    """What the LLM user is told: the scenario, the rules, and the stop signal."""
    scenario = _scenario(task)
    facts = "\n".join(f"- {slot_label(k)}: {v}" for k, v in scenario.known.items()) or "- (nothing)"
    private = ", ".join(slot_label(s) for s in scenario.must_not_volunteer) or "(none)"
    return (
        "You play a user talking to an assistant. Stay in character; reply in one or two short "
        "sentences, as the user, never as the assistant.\n"
        f"Who you are: {scenario.persona}\n"
        f"What you want: {scenario.goal}\n"
        f"What you know:\n{facts}\n"
        f"Never mention these unless the assistant asks for them: {private}\n"
        "If the assistant asks for something you do not know, say you don't know. Do not invent facts.\n"
        f"You are satisfied when: {scenario.satisfied_when}\n"
        f"When you are satisfied, or have nothing more to say, end your message with {STOP_SIGNAL}"
    )


class LLMUser:
    """A chat model plays the scenario. The history it sees: its instructions as the system
    message, the task query as its own first message, then the agent's messages (role "user") and
    its earlier replies (role "assistant"). A reply that holds STOP_SIGNAL ends the conversation."""

    def __init__(self, llm: UserLLM, *, max_reply_chars: int = MAX_USER_REPLY_CHARS) -> None:
        self.llm = llm
        self.name = f"llm:{llm.model}"
        self.max_reply_chars = max_reply_chars
        self.messages: list[dict[str, str]] = []
        self._seed: int | None = None

    def start(self, task: Task, seed: int) -> None:
        self.messages = [
            {"role": "system", "content": user_system_prompt(task)},
            {"role": "assistant", "content": task.query},
        ]
        self._seed = seed

    def reply(self, message: str, *, asked: bool) -> UserReply:
        request = [*self.messages, {"role": "user", "content": message}]
        raw = self.llm.chat(request, seed=self._seed)
        if not isinstance(raw, str):
            raise InfraError(f"the user LLM returned {type(raw).__name__}, not text")
        stop = STOP_SIGNAL in raw
        text = raw.replace(STOP_SIGNAL, "").strip()
        if len(text) > self.max_reply_chars:
            text = text[: self.max_reply_chars] + f" [... {len(text) - self.max_reply_chars} characters cut]"
        if not text and not stop:
            raise InfraError("the user LLM returned an empty reply")
        # the history keeps what the model said, so a replayed conversation asks the same requests
        self.messages = [*request, {"role": "assistant", "content": raw}]
        return UserReply(text=text or SATISFIED_REPLY, stop=stop)
