"""Teacher-forced (step-by-step) episodes: the env feeds the golden history and scores the
agent's next action against the golden one at every step, as GTA's step mode, T-Eval and
MTU-Eval do. The agent's own action is scored, never executed: the golden action runs instead,
so every step starts from the golden history and the golden state.

API (built for the evaluation code to reuse):

    tf = TeacherForcedEnv(ToolEnv(tools, tasks), scorer=score_step)
    obs, info = tf.reset(options={"task": task})               # golden = the task's golden chain
    obs, info = tf.reset(options={"task": task, "golden": trace_or_turns})   # or a golden trace
    agent.start(task, obs, info)
    while True:
        output = agent.act(obs, info)                   # raw model output or Action(s)
        obs, reward, terminated, truncated, info = tf.step(output)
        if terminated or truncated:
            break
    tf.result.summary()    # {"inst_acc", "tool_acc", "arg_acc", "answer_acc", "steps"}

    result = run_teacher_forced(env, agent, task, golden=None)   # the same loop in one call
    result, path = record_teacher_forced(env, agent, task, trace_dir)   # and its trace

What the agent sees at golden step i (0-based): `obs` is the observation of golden step i-1 (the
task prompt at i = 0); `info["history"]` is the whole golden prefix as messages:
`{"role": "user", "content": prompt}`, then per earlier golden step
`{"role": "assistant", "content": <golden model output>}` and
`{"role": "observation", "content": <what the env returned>}`. Agents that keep their own chat
memory must build their prompt from `info["history"]` to be teacher-forced (their own earlier
outputs were not executed). `info["golden_step"]` is i, `info["golden_steps"]` the count.

Scores per step (`StepScore`): `parsed` (the output parsed into actions: GTA's InstAcc),
`type_match` (same action kinds), `tool_match` (same tool names; None when the golden step calls
no tool: GTA's ToolAcc), `args_match` (same names and arguments as canonical JSON: ArgAcc),
`answer_score` (a golden final answer: the agent's answer scored with the task's answer spec, or
None without a spec). `reward` = args_match for tool steps, answer_score (or type_match) for
final answers, type_match otherwise. Pass `scorer=` to score differently (e.g. MTU's per-slot
parameter scores); it gets (task, golden turn, predicted actions or None, parse error or None).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, SupportsFloat

import gymnasium as gym

from toolgym.actions import ACTION_ADAPTER, Action, FinalAnswer, Observation, ToolCall
from toolgym.canonical import canonical_json
from toolgym.envs.agents import Agent, golden_action
from toolgym.envs.rewards import score_answer
from toolgym.envs.runner import EpisodeAborted, EpisodeResult, model_turn, trace_header, trace_name
from toolgym.envs.tool_env import ToolEnv, argument_problem, json_record, kept_raw
from toolgym.errors import ErrorKind, InfraError, ToolgymError
from toolgym.protocols.base import RawOutput
from toolgym.tasks import Task
from toolgym.trace import Trace, TraceEnd, TraceStep, TraceWriter


@dataclass(frozen=True)
class GoldenTurn:
    """One golden step: its reference actions and, from a trace, the raw output that made them
    (fed to the env so its observation is the recorded one)."""

    actions: tuple[Action, ...]
    raw: Any = None


def golden_from_task(task: Task) -> list[GoldenTurn]:
    return [GoldenTurn(actions=(g.action,)) for g in task.golden]


def golden_from_trace(trace: Trace) -> list[GoldenTurn]:
    """Steps that parsed into actions (format-error steps are not golden steps)."""
    return [
        GoldenTurn(actions=tuple(ACTION_ADAPTER.validate_python(a) for a in s.actions), raw=s.raw)
        for s in trace.steps
        if s.actions
    ]


@dataclass
class StepScore:
    index: int
    golden: list[dict[str, Any]]
    predicted: list[dict[str, Any]]
    parsed: bool
    type_match: bool
    tool_match: bool | None
    args_match: bool | None
    answer_score: float | None
    error: str | None = None

    @property
    def reward(self) -> float:
        if self.args_match is not None:
            return float(self.args_match)
        if self.answer_score is not None:
            return self.answer_score
        return float(self.type_match)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "reward": self.reward}


StepScorer = Callable[[Task, int, GoldenTurn, "Sequence[Action] | None", "str | None"], StepScore]


def _calls(actions: Sequence[Action]) -> list[ToolCall]:
    return [a for a in actions if isinstance(a, ToolCall)]


def score_step(
    task: Task, index: int, golden: GoldenTurn, predicted: Sequence[Action] | None, error: str | None
) -> StepScore:
    """The default scorer (see the module docstring)."""
    wanted = list(golden.actions)
    got = list(predicted or [])
    golden_calls, got_calls = _calls(wanted), _calls(got)
    type_match = predicted is not None and [a.type for a in got] == [a.type for a in wanted]
    tool_match: bool | None = None
    args_match: bool | None = None
    if golden_calls:
        tool_match = [c.name for c in got_calls] == [c.name for c in golden_calls]
        # arguments that are not JSON data (deep, NaN, bytes, lone surrogates) match nothing
        args_match = tool_match and all(
            argument_problem(g) is None and canonical_json(g.arguments) == canonical_json(w.arguments)
            for g, w in zip(got_calls, golden_calls, strict=True)
        )
    answer_score: float | None = None
    golden_final = next((a for a in wanted if isinstance(a, FinalAnswer)), None)
    if golden_final is not None:
        got_final = next((a for a in got if isinstance(a, FinalAnswer)), None)
        if task.answer is not None:
            answer_score = score_answer(got_final.text if got_final else None, task.answer)
        else:
            answer_score = float(
                got_final is not None and got_final.text.strip() == golden_final.text.strip()
            )
    return StepScore(
        index=index,
        golden=[a.model_dump(mode="json") for a in wanted],
        predicted=[json_record(a) for a in got],
        parsed=predicted is not None and bool(got),
        type_match=type_match,
        tool_match=tool_match,
        args_match=args_match,
        answer_score=answer_score,
        error=error,
    )


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


@dataclass
class TeacherForcedResult:
    task_id: str
    steps: list[StepScore] = field(default_factory=list)

    def summary(self) -> dict[str, float]:
        tool_steps = [s for s in self.steps if s.tool_match is not None]
        answers = [s.answer_score for s in self.steps if s.answer_score is not None]
        return {
            "steps": float(len(self.steps)),
            "inst_acc": _mean([float(s.parsed) for s in self.steps]),
            "tool_acc": _mean([float(bool(s.tool_match)) for s in tool_steps]),
            "arg_acc": _mean([float(bool(s.args_match)) for s in tool_steps]),
            "answer_acc": _mean(answers),
            "reward": _mean([s.reward for s in self.steps]),
        }


class TeacherForcedEnv(gym.Wrapper[str, Any, str, Any]):
    """A gymnasium wrapper of a ToolEnv (possibly wrapped itself): see the module docstring for
    the loop, what the agent sees and the scores. Predictions are parsed by the ToolEnv's own
    `parse_action`, so a step-mode parse equals an end-to-end one."""

    def __init__(self, env: gym.Env[str, Any], *, scorer: StepScorer = score_step) -> None:
        super().__init__(env)
        unwrapped = env.unwrapped
        if not isinstance(unwrapped, ToolEnv):
            raise TypeError(f"teacher forcing wraps a ToolEnv, not {type(unwrapped).__name__}")
        self.tool_env: ToolEnv = unwrapped
        self.scorer = scorer
        self.golden: list[GoldenTurn] = []
        self.history: list[dict[str, Any]] = []
        self.result: TeacherForcedResult | None = None
        self.task: Task | None = None
        self._next = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        opts: dict[str, Any] = dict(options or {})
        golden = opts.pop("golden", None)
        if isinstance(golden, Trace) and seed is None:
            seed = golden.header.seed
        obs, info = self.env.reset(seed=seed, options=opts)
        task = self.tool_env.task
        assert task is not None
        if golden is None:
            turns = golden_from_task(task)
        elif isinstance(golden, Trace):
            if golden.header.task_id != task.id:
                raise ValueError(f"golden trace is of task {golden.header.task_id!r}, not {task.id!r}")
            turns = golden_from_trace(golden)
        else:
            turns = list(golden)
        if not turns:
            raise ValueError(f"task {task.id!r} has no golden steps to teacher-force")
        self.task, self.golden, self._next = task, turns, 0
        self.history = [{"role": "user", "content": obs}]
        self.result = TeacherForcedResult(task_id=task.id)
        return obs, {**info, **self._position()}

    def _position(self) -> dict[str, Any]:
        return {
            "teacher_forced": True,
            "history": list(self.history),
            "golden_step": self._next,
            "golden_steps": len(self.golden),
        }

    def _parse(self, output: Any) -> tuple[list[Action] | None, str | None]:
        parsed = self.tool_env.parse_action(output)
        if isinstance(parsed, list):
            return parsed, None
        return None, parsed.error.message if parsed.error is not None else parsed.text

    def _golden_output(self, turn: GoldenTurn) -> RawOutput | Action | list[Action]:
        if turn.raw is not None:
            return turn.raw  # type: ignore[no-any-return]
        return turn.actions[0] if len(turn.actions) == 1 else list(turn.actions)

    def _golden_text(self, turn: GoldenTurn) -> Any:
        if turn.raw is not None:
            return turn.raw
        protocol = self.tool_env.protocol  # the golden reply as the oracle writes it
        rendered = [protocol.format_action(golden_action(a, protocol)) for a in turn.actions]
        return rendered[0] if len(rendered) == 1 else rendered

    def step(self, output: Any) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        if self.task is None or self.result is None:
            raise RuntimeError("call reset() before step()")
        if self._next >= len(self.golden):
            raise RuntimeError("teacher-forced episode is over: call reset()")
        turn = self.golden[self._next]
        predicted, error = self._parse(output)
        score = self.scorer(self.task, self._next, turn, predicted, error)
        self.result.steps.append(score)
        obs, _, terminated, truncated, env_info = self.env.step(self._golden_output(turn))
        self.history.append({"role": "assistant", "content": self._golden_text(turn)})
        self.history.append({"role": "observation", "content": obs})
        self._next += 1
        done = self._next >= len(self.golden) or terminated
        info = {**self._position(), "score": score.as_dict(), "env_info": env_info}
        return obs, score.reward, done, truncated and not done, info


def run_teacher_forced(
    env: gym.Env[str, Any],
    agent: Agent,
    task: Task,
    *,
    golden: Trace | Sequence[GoldenTurn] | None = None,
    seed: int | None = None,
    scorer: StepScorer = score_step,
) -> TeacherForcedResult:
    """Score `agent` step by step against the golden chain of `task` (or a golden trace)."""
    tf = TeacherForcedEnv(env, scorer=scorer)
    options: dict[str, Any] = {"task": task}
    if golden is not None:
        options["golden"] = golden
    obs, info = tf.reset(seed=seed, options=options)
    agent.start(task, obs, info)
    while True:
        obs, _, terminated, truncated, info = tf.step(agent.act(obs, info))
        if terminated or truncated:
            break
    assert tf.result is not None
    return tf.result


# ---- teacher-forced traces ----------------------------------------------------------------------


def _check_prediction(env: ToolEnv, actions: Sequence[dict[str, Any]]) -> list[Observation]:
    """What the env would have said about the predicted calls without running them: an unknown
    tool or arguments its schema refuses (tools are never invoked here)."""
    checks = []
    for action in actions:
        if action.get("type") != "tool_call":
            continue
        name, call_id = str(action.get("name")), action.get("call_id")
        if name not in env.offered:
            checks.append(
                Observation.from_error(
                    ErrorKind.UNKNOWN_TOOL, f"tool {name!r} is not available", tool=name, call_id=call_id
                )
            )
            continue
        try:
            env.offered.get(name).validate(action.get("arguments") or {})
        except ToolgymError as exc:
            checks.append(Observation.from_error(exc.kind, exc.message, tool=name, call_id=call_id))
    return checks


def _prediction_step(
    env: ToolEnv, agent: Agent, index: int, output: Any, score: Mapping[str, Any]
) -> TraceStep:
    """The trace line of one prediction: its raw output, the actions it parsed to, and as
    observations the checks of those actions (a format error first), never results."""
    predicted: list[dict[str, Any]] = score["predicted"]
    observations = _check_prediction(env, predicted)
    if score["error"] is not None:
        observations.insert(0, Observation.from_error(ErrorKind.FORMAT_ERROR, score["error"]))
    return TraceStep(
        index=index,
        raw=kept_raw(output),  # Responses output items too, as the runner keeps them
        actions=predicted,
        observations=[o.model_dump(mode="json") for o in observations],
        error_kinds=[o.error.kind.value for o in observations if o.error is not None],
        **model_turn(agent),
    )


# the header's env_config["mode"] of the traces written here (`toolgym run --mode step`); loaders of
# other benchmarks' step-wise traces write their own (toolgym.evaluation.base.TEACHER_FORCED_MODES)
TEACHER_FORCED = "teacher_forced"


def record_teacher_forced(
    env: ToolEnv,
    agent: Agent,
    task: Task,
    trace_dir: Path,
    *,
    golden: Trace | Sequence[GoldenTurn] | None = None,
    seed: int | None = None,
    env_config: Mapping[str, Any] | None = None,
    kind: str = "tf",
) -> tuple[TeacherForcedResult, Path]:
    """Runs `agent` teacher-forced and writes a trace of its *predictions*: step i holds the
    agent's raw output for golden step i and the actions it parsed to; its observations are the
    checks of those actions (format error, unknown tool, arguments the schema refuses), never
    results, since predictions do not run. The header says `env_config["mode"] =
    "teacher_forced"`, which is how the suites tell step-mode traces; `env_config` adds entries of
    the caller's (e.g. how a replayed response was paired). The trace is
    `<task>.<kind>.seed<seed>.jsonl` (`kind=""`: the name an end-to-end episode's trace has, as
    `toolgym run --mode step` writes it). A backend that fails a golden step (or the reset)
    raises EpisodeAborted, the trace left `.partial`, as in `toolgym.envs.runner`."""
    result, path, _ = _record(env, agent, task, trace_dir, golden, seed, env_config, kind)
    return result, path


def _record(
    env: ToolEnv,
    agent: Agent,
    task: Task,
    trace_dir: Path,
    golden: Trace | Sequence[GoldenTurn] | None,
    seed: int | None,
    env_config: Mapping[str, Any] | None,
    kind: str,
) -> tuple[TeacherForcedResult, Path, TraceEnd]:
    """`record_teacher_forced`, with the trace's end record."""
    tf = TeacherForcedEnv(env)
    options: dict[str, Any] = {"task": task}
    if golden is not None:
        options["golden"] = golden
    try:
        obs, info = tf.reset(seed=seed, options=options)
    except InfraError as exc:
        raise EpisodeAborted(f"reset failed: {exc.message}") from exc
    agent.start(task, obs, info)
    config = {**(env_config or {}), "mode": TEACHER_FORCED, "golden_steps": len(tf.golden)}
    writer = TraceWriter(
        trace_dir / trace_name(task.id, seed, kind=kind), trace_header(env, agent, task, seed, config)
    )
    final: str | None = None
    errors: Counter[str] = Counter()
    try:
        steps = 0
        while True:
            output = agent.act(obs, info)
            obs, _, terminated, truncated, info = tf.step(output)
            steps += 1
            line = _prediction_step(env, agent, steps, output, info["score"])
            final = next((a["text"] for a in line.actions if a.get("type") == "final_answer"), final)
            errors.update(line.error_kinds)
            writer.step(line)
            if info["env_info"].get("aborted"):  # the golden step met a dead backend
                raise EpisodeAborted(str(info["env_info"]["aborted"]))
            if terminated or truncated:
                break
        assert tf.result is not None
        summary = tf.result.summary()
        end = TraceEnd(
            status="terminated",
            steps=steps,
            final_answer=final,
            reward=summary["reward"],
            error_counts=dict(errors),
            scores=summary,
        )
        path = writer.finish(end)
    finally:
        writer.close()
    return tf.result, path, end


def run_step_episode(
    env: ToolEnv, agent: Agent, task: Task, *, seed: int | None = None, trace_dir: Path
) -> EpisodeResult:
    """One teacher-forced episode as the rollouts run it (`toolgym run --mode step`): its trace
    where an end-to-end episode's would be, its result as `run_episode` returns one (reward: the
    mean step reward; scores: `TeacherForcedResult.summary`)."""
    _, path, end = _record(env, agent, task, trace_dir, None, seed, None, "")
    return EpisodeResult(
        task_id=task.id,
        reward=end.reward,
        steps=end.steps,
        terminated=True,
        final_answer=end.final_answer,
        error_counts=dict(end.error_counts),
        scores=dict(end.scores),
        trace_path=path,
    )
