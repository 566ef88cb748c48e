"""One env-service session: a ToolEnv, its trace file and the wire types (`ToolgymAction`,
`ToolgymObservation`, `ToolgymState`, OpenEnv's body types extended, wire.py).

The service's `/ws` and stateful HTTP routes (app.py) call a session on worker threads, one call
of a session at a time (workers.py, sessions.py). The session writes one trace per episode with
the runner's pieces, so a session's trace is byte-identical to `run_episode`'s for the same task,
seed and actions.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from pathlib import Path
from typing import Any, SupportsFloat

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from toolgym.actions import ACTION_ADAPTER, Action
from toolgym.envs.agents import Agent
from toolgym.envs.faults import FaultLayer
from toolgym.envs.runner import step_fields, trace_end, trace_header, trace_name
from toolgym.envs.service.catalog import REWARDS, Catalog, ResolvedConfig, ServiceError, SessionConfig
from toolgym.envs.service.traces import TraceFile, TraceRetention, spare_descriptor
from toolgym.envs.service.wire import EnvironmentMetadata, WireAction, WireObservation, WireState
from toolgym.envs.tool_env import ToolEnv
from toolgym.mocks.app import strict_arguments
from toolgym.mocks.world import MockWorld
from toolgym.protocols.base import RawOutput
from toolgym.tasks import Task
from toolgym.trace import TraceEnd
from toolgym.world import World

# a session's memory bound (--max-session-bytes): its worlds' databases and its episode's inputs
# and observations; half of it for the worlds it keeps between episodes
DEFAULT_MAX_SESSION_BYTES = 64 << 20


class ToolgymAction(WireAction):
    """One step's input, exactly one of: `text` (raw model output, parsed by the session's
    protocol), `message` (an OpenAI-style assistant message) or `action` (a structured toolgym
    action, `{"type": "tool_call", "name": ..., "arguments": {...}}`, or a list of them)."""

    text: str | None = None
    message: dict[str, Any] | None = None
    action: dict[str, Any] | list[dict[str, Any]] | None = None
    _size: int | None = PrivateAttr(default=None)  # `size()`, once computed

    @model_validator(mode="after")
    def _exactly_one(self) -> ToolgymAction:
        given = [n for n in ("text", "message", "action") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(f"a step needs exactly one of text, message, action; got {given or 'none'}")
        if self.action is not None:  # a malformed structured action is a request error: nothing ran
            items = self.action if isinstance(self.action, list) else [self.action]
            if not items:
                raise ValueError("action: an empty list")
            for item in items:
                ACTION_ADAPTER.validate_python(item)
        return self

    def size(self) -> int:
        """The input's size as the session's memory bound counts it: the text's characters, or
        the message's or action's JSON (encoded once: the server asks before and in the step)."""
        if self._size is None:
            given = self.message if self.message is not None else self.action
            self._size = len(self.text) if self.text is not None else len(json.dumps(given))
        return self._size

    def payload(self) -> RawOutput | Action | list[Action]:
        """What `ToolEnv.step` gets: the text, the message, or the parsed action(s)."""
        if self.text is not None:
            return self.text
        if self.message is not None:
            return self.message
        assert self.action is not None
        if isinstance(self.action, list):
            return [ACTION_ADAPTER.validate_python(a) for a in self.action]
        return ACTION_ADAPTER.validate_python(self.action)


class ToolgymObservation(WireObservation):
    """What reset and step return: `text` is ToolEnv's observation, `info` its info (JSON; the
    wall-clock `timing` as plain numbers), `reward` and `done` as openenv has them."""

    text: str = ""
    info: dict[str, Any] = Field(default_factory=dict)
    terminated: bool = False
    truncated: bool = False
    session_id: str | None = None


class ToolgymState(WireState):
    """A session's state (`/state`, the WebSocket `state` message)."""

    session_id: str | None = None
    task_id: str | None = None
    state_hash: str | None = None
    state_diff: dict[str, Any] | None = None
    error_counts: dict[str, int] = Field(default_factory=dict)
    done: bool = False
    trace: str | None = Field(None, description="file name of the episode's trace on the server")
    config: dict[str, Any] | None = None


class ResetOptions(BaseModel):
    """The keys a reset may carry besides OpenEnv's `seed` and `episode_id`."""

    model_config = ConfigDict(extra="forbid")

    task_id: str | None = Field(None, description="the task to run; default: a seeded pick from the set")
    config: SessionConfig | None = None
    agent: str = Field("remote", max_length=200, description="the agent's name in the trace header")


class _NamedAgent:
    """The trace header names the agent; the agent itself runs on the client."""

    def __init__(self, name: str) -> None:
        self.name = name

    def start(self, task: Task, observation: str, info: dict[str, Any]) -> None:
        raise NotImplementedError("the agent of a service session runs on the client")

    def act(self, observation: str, info: dict[str, Any]) -> RawOutput | Action:
        raise NotImplementedError("the agent of a service session runs on the client")


# what a slim info leaves out: the heavy parts, which the trace and the state message keep
SLIM_DROPS = frozenset({"actions", "observations", "state_diff", "faults"})


def wire_info(info: dict[str, Any], slim: bool = False) -> dict[str, Any]:
    """ToolEnv's info as JSON: `timing` (a dataclass) becomes numbers; `slim` drops SLIM_DROPS."""
    out = {k: v for k, v in info.items() if k not in SLIM_DROPS} if slim else dict(info)
    timing = out.pop("timing", None)
    if timing is not None:
        out["timing"] = {"latency_s": timing.latency_s, "tool_latency_s": timing.tool_latency_s}
    return out


Answer = dict[str, Any]  # OpenEnv's wire answer: {observation: {...}, reward, done}


_DATABASE_BYTES = "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()"
_PAGE_SIZE = "PRAGMA page_size"


def world_bytes(world: World | None) -> int:
    """The size of a mock world's database (0 for other worlds, which hold no database here)."""
    if not isinstance(world, MockWorld):
        return 0
    size: int = world.store.conn.execute(_DATABASE_BYTES).fetchone()[0]
    return size


def cap_world(world: MockWorld, max_bytes: int) -> None:
    """A mock world's database grows to `max_bytes` at most (never below its size now)."""
    conn = world.store.conn
    page_size: int = conn.execute(_PAGE_SIZE).fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {max(1, max_bytes // page_size)}")  # SQLite keeps >= page_count


def observation_of(answer: Answer) -> ToolgymObservation:
    """The answer as an Observation object (its fields are built, not parsed: no checks)."""
    return ToolgymObservation.model_construct(
        **answer["observation"], reward=answer["reward"], done=answer["done"]
    )


def metadata() -> EnvironmentMetadata:
    """What a session is (`GET /metadata`)."""
    from toolgym.trace import toolgym_version

    return EnvironmentMetadata(
        name="toolgym",
        description="toolgym ToolEnv sessions: tasks, real tools and deterministic mock apps",
        version=toolgym_version(),
    )


class ToolgymEnvironment:
    """A session: builds its ToolEnv from the catalog at the first reset (and again when a reset
    changes the config), writes each episode's trace under `trace_dir/<session id>/`."""

    def __init__(
        self,
        catalog: Catalog,
        trace_dir: Path | None = None,
        session_id: str | None = None,
        *,
        retention: TraceRetention | None = None,
        max_bytes: int | None = DEFAULT_MAX_SESSION_BYTES,
    ) -> None:
        self.max_bytes = max_bytes  # the session's memory bound (None: none), see _check_bound
        self.catalog = catalog
        self.trace_dir = trace_dir
        self.retention = retention  # keeps the trace folder within its bound
        self._folder: Path | None = None  # the folder this session writes into, once it does
        self.session_id = session_id or uuid.uuid4().hex
        self._env: ToolEnv | None = None
        self._config: ResolvedConfig | None = None
        self._writer: TraceFile | None = None
        self._episodes = 0
        self._closed = False
        self._done = False
        self._seed: int | None = None
        self._hash_before: str | None = None
        self._last: dict[str, Any] = {}
        # the state's fields (`state` builds the model when asked): a fresh dict per step, swapped
        # in whole, so a reader on another thread never sees half a step
        self._status: dict[str, Any] = {"session_id": self.session_id}
        self._held = 0  # characters of the episode's inputs and observations the env keeps
        self._refused = False  # a step went past the memory bound: the episode takes no more
        self._idle_bytes: dict[int, int] = {}  # database bytes of the worlds other than the current

    # ---- the session as Python objects (the service's routes call the `*_answer` methods) -----
    def reset(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> ToolgymObservation:
        return observation_of(self.reset_answer(seed, episode_id, **kwargs))

    def step(self, action: ToolgymAction) -> ToolgymObservation:
        return observation_of(self.step_answer(action))

    # ---- the wire answers (what the service's routes send, without an Observation object) ------
    def reset_answer(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Answer:
        """`reset`'s answer as OpenEnv's wire dict."""
        self._check_open()
        raw_config = kwargs.get("config")
        # a config resolved before is not validated again (a valid config gives no errors of
        # its own, so the other options' errors read as they would with it)
        config = self.catalog.cached(raw_config) if raw_config is not None else None
        try:
            options = ResetOptions.model_validate(kwargs if config is None else {**kwargs, "config": None})
        except ValueError as exc:
            raise ServiceError("argument_error", f"bad reset options: {exc}", 422) from None
        if seed is not None and (not isinstance(seed, int) or seed < 0):
            raise ServiceError("argument_error", f"seed must be an integer >= 0, got {seed!r}", 422)
        if config is None and options.config is None and self._config is not None:
            config = self._config  # a session keeps its config until a reset names another
        elif config is None:
            config = self.catalog.resolve(options.config or SessionConfig(), raw=raw_config)
        if options.task_id is not None and options.task_id not in self.catalog.task_set(config.tasks):
            raise ServiceError(
                "argument_error", f"no task {options.task_id!r} in the task set {config.tasks!r}", 422
            )
        # the new trace's descriptor, taken before anything changes (503 when none is free)
        with spare_descriptor(self.trace_dir is not None) as spare:
            self._abort_episode()
            self._done = True  # until the new episode's trace has started
            env = self._env_for(config)
            self._fit_worlds(env)
            seed = config.seed if seed is None else seed
            obs, info = env.reset(seed=seed, options={"task": options.task_id} if options.task_id else None)
            self._cap_world(env)
            assert env.task is not None
            self._held, self._refused = len(obs), False
            self._episodes += 1
            self._seed = seed
            trace: str | None = None
            if self.trace_dir is not None:
                agent: Agent = _NamedAgent(options.agent)
                with strict_arguments(config.strict_arguments):  # the header says so, as the runner's does
                    header = trace_header(
                        env, agent, env.task, seed, {"max_steps": env.task.max_steps or env.max_steps}
                    )
                trace = f"ep{self._episodes}.{trace_name(env.task.id, seed)}"
                spare.release()
                self._writer = TraceFile(self._trace_folder() / trace, header)
        self._done = False
        self._hash_before = info.get("state_hash")
        self._last = info
        self._status = {
            "session_id": self.session_id,
            "episode_id": episode_id or f"{self.session_id}:{self._episodes}",
            "step_count": 0,
            "task_id": env.task.id,
            "state_hash": info.get("state_hash"),
            "state_diff": None,
            "error_counts": {},
            "done": False,
            "trace": trace,
            "config": config.as_dict(),
        }
        return self._answer(obs, info, None, False, False)

    def _env_for(self, config: ResolvedConfig) -> ToolEnv:
        """The session's ToolEnv for `config`: the one it has, or one built afresh (a new config
        closes the old env and its worlds)."""
        if self._config is not None and config != self._config:
            assert self._env is not None
            self._env.close()
            self._env = None
            self._idle_bytes.clear()
        if self._env is None:
            self._env = ToolEnv(
                self.catalog.tools.subset(config.tools) if config.tools is not None else self.catalog.tools,
                self.catalog.task_set(config.tasks),
                protocol=config.protocol,
                reward_fn=REWARDS[config.reward],
                max_steps=config.max_steps,
                tool_layers=[FaultLayer(config.faults, known_tools=config.tool_names(self.catalog))]
                if config.faults is not None
                else (),
                user=config.simulator(self.catalog),
                reward_mode="milestones" if config.reward_mode == "milestones" else "final",
                verbosity=config.notifications,
            )
        self._config = config
        return self._env

    def step_answer(self, action: ToolgymAction) -> Answer:
        """`step`'s answer as OpenEnv's wire dict."""
        self._check_open()
        env = self._env
        if env is None or env.task is None:
            raise ServiceError("not_reset", "call reset before step", 409)
        if self._done:
            raise ServiceError("episode_over", "the episode is over: call reset", 409)
        size = self._check_bound(action)
        raw = action.payload()
        assert self._config is not None
        # the trace's descriptor first: a server out of them refuses the step before it runs
        with self._writer.held() if self._writer is not None else contextlib.nullcontext():
            with strict_arguments(self._config.strict_arguments):
                obs, reward, terminated, truncated, info = env.step(raw)
            self._held += size + len(obs)
            self._record(raw, reward, terminated, truncated, info)
        return self._answer(obs, info, float(reward), terminated, truncated)

    def _answer(
        self, text: str, info: dict[str, Any], reward: float | None, terminated: bool, truncated: bool
    ) -> Answer:
        assert self._config is not None
        observation = {
            "text": text,
            "info": wire_info(info, slim=self._config.info == "slim"),
            "terminated": terminated,
            "truncated": truncated,
            "session_id": self.session_id,
        }
        return {"observation": observation, "reward": reward, "done": terminated or truncated}

    @property
    def state(self) -> ToolgymState:
        # from the fields kept at reset and step: the service reads it beside a running step
        # (HTTP /state), and the world's SQLite connection belongs to the step's thread
        return ToolgymState.model_construct(**self._status)

    def get_metadata(self) -> EnvironmentMetadata:
        return metadata()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            with contextlib.suppress(ServiceError):  # no descriptor free: the trace stays .partial
                self._abort_episode()
        finally:
            if self.retention is not None and self._folder is not None:
                self.retention.closed(self._folder)
            if self._env is not None:
                self._env.close()
                self._env = None

    # ---- the memory bound ----------------------------------------------------------------
    def _fit_worlds(self, env: ToolEnv) -> None:
        """Before a reset: the worlds this session keeps (their databases, grown by its episodes'
        writes) stay within half its bound, or are all built afresh from their shared templates."""
        if self.max_bytes is None:
            return
        if env.world is not None:  # the finished episode's world becomes idle, at its size now
            self._idle_bytes[id(env.world)] = world_bytes(env.world)
        if sum(self._idle_bytes.values()) > self.max_bytes // 2:
            env.drop_worlds()
            self._idle_bytes.clear()

    def _cap_world(self, env: ToolEnv) -> None:
        """After a reset: the episode's world may grow to what is left of the worlds' half of the
        bound; a write past it fails in SQLite ("database or disk is full", a tool_error
        observation) and leaves the episode's state as it was."""
        self._idle_bytes.pop(id(env.world), None)
        if self.max_bytes is not None and isinstance(env.world, MockWorld):
            left = self.max_bytes // 2 - sum(self._idle_bytes.values())
            cap_world(env.world, left)

    def _check_bound(self, action: ToolgymAction) -> int:
        """The step's input size; a step whose input would take the episode's inputs and
        observations past the other half of the bound is refused (413 `session_memory`, nothing
        run), and so is every later step of the episode, however small, until a reset starts
        the episode's count afresh."""
        size = action.size()
        bound = self.max_bytes
        if not self._refused and (bound is None or self._held + size <= bound // 2):
            return size
        went = "went past" if self._refused else f"would reach {self._held + size} characters, over"
        self._refused = True
        raise ServiceError(
            "session_memory",
            f"the episode's inputs and observations {went} half the session's bound of {bound} "
            "bytes (the server's --max-session-bytes): reset to start a new episode",
            413,
        )

    # ---- plumbing ------------------------------------------------------------------------
    def _trace_folder(self) -> Path:
        """The session's trace folder, registered with the retention while the session lives."""
        assert self.trace_dir is not None
        if self._folder is None:
            self._folder = self.trace_dir / self.session_id
            if self.retention is not None:
                self.retention.opened(self._folder)
        return self._folder

    def _finished(self, path: Path) -> None:
        if self.retention is not None:
            self.retention.finished(path)

    def _check_open(self) -> None:
        if self._closed:
            raise ServiceError("session_closed", f"session {self.session_id} is closed", 410)

    def _record(
        self,
        raw: RawOutput | Action | list[Action],
        reward: SupportsFloat,
        terminated: bool,
        truncated: bool,
        info: dict[str, Any],
    ) -> None:
        """The trace lines `run_episode` writes for the same step, and the cached state."""
        env = self._env
        assert env is not None
        if self._writer is not None:
            self._writer.step(step_fields(raw, info, self._hash_before))
        self._hash_before = info.get("state_hash")
        self._done = terminated or truncated
        if self._done and self._writer is not None:
            self._finished(
                self._writer.finish(trace_end(env, info, terminated=terminated, reward=float(reward)))
            )
            self._writer = None
        self._status = {
            **self._status,
            "step_count": info["step"],
            "state_hash": info.get("state_hash"),
            "state_diff": info.get("state_diff"),
            "error_counts": dict(env.error_counts),
            "done": self._done,
        }

    def _abort_episode(self) -> None:
        """An unfinished episode (reset again, session closed or reaped) ends `aborted`; a server
        out of descriptors refuses the call (503) with the episode as it was."""
        if self._writer is None or self._env is None:
            return
        writer, env = self._writer, self._env
        end = TraceEnd(
            status="aborted",
            steps=self._status.get("step_count", 0),
            final_answer=None,
            reward=0.0,
            error_counts=dict(env.error_counts),
            scores={},
        )
        with writer.held():
            self._writer = None  # whatever happens now, the trace is done with (a torn one stays .partial)
            finished = writer.finish(end)
        self._finished(finished)
