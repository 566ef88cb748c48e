"""API snapshots ("cassettes"): every tool response keyed by a canonical request key, in SQLite.

    cassette = Cassette("runs/golden/cassette.sqlite", mode="record")
    env = ToolEnv(default_toolset(), tasks, cassette=cassette)   # every tool call goes through it
    ...
    replay = Cassette("runs/golden/cassette.sqlite", mode="replay")  # strict: a miss is an error
    env = ToolEnv(default_toolset(), tasks, cassette=replay)       # zero live tool calls

The cassette wraps tools at the ToolSet level (`CassetteToolSet`), so it works the same for every
tool: typed in-process tools, sandboxed ones, remote `SchemaTool`s and mock-app APIs.

Request key (canonical JSON, sha256 of it is the row key):
  tool, version      the tool's name and version (a new version never replays an old answer)
  arguments          the call's arguments as given, secrets redacted
  files              sha256 of every file argument (None = names no file in the store)
  state              the world's state hash before the call, for tools bound to a stateful world
  ordinal            for stateful tools with no state hash: the n-th identical call of the episode
  seed               the episode seed, for generative tools (category "creativity" or named ones)

Modes: `live` (no cassette involved), `record` (call, store, overwrite), `replay` (never call; a
miss is an `infra_error` observation naming the nearest recorded keys, counted in `stats.misses`),
`record_missing` (replay what is there, call and store the rest).

What an entry holds: the observation (call id left out: the current call's is put back), the
bytes of every file it returned (content-addressed blobs, restored into the env's FileStore on
replay), the seed, and for stateful tools the state hash after the call and the state effect
(rows changed), so a replayed mock-app write leaves the world exactly as the live call did.
Error observations are recorded (a tool_error replays as the same tool_error); `infra_error`s
are not (the server was down: not an answer). Configured secrets (argument names, environment
variables, literal values) are replaced by `[REDACTED]` in keys and in everything stored.

Simulated users' LLM calls go through the same cassette (`cassette.wrap_user_llm(llm)`, for
`toolgym.envs.users.LLMUser`): keyed by tool `user_llm`, version USER_LLM_VERSION, arguments
{"model", "messages"} (the whole chat request) and the episode seed; the entry holds the reply as
a `user` observation. A miss in strict replay raises InfraError, which the env turns into an
`infra_error` observation; failed calls are not recorded.

LLM judges' calls too (`cassette.chat_call`, used by `toolgym.evaluation.metrics.judge.RecordedJudge`):
keyed by tool `judge`, version JUDGE_VERSION and the whole chat request (model, messages, sampling
settings), so a judged score replays with no LLM.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from toolgym.actions import Observation, ToolCall
from toolgym.canonical import canonical_json
from toolgym.envs.users import UserLLM
from toolgym.errors import ErrorKind, InfraError, UnknownToolError
from toolgym.files import FileHandle, UnknownFileError
from toolgym.tools import ENV_BACKEND, BaseTool, ToolContext, ToolSet
from toolgym.world import StateEffects, World

CassetteMode = Literal["live", "record", "replay", "record_missing"]
MODES: tuple[CassetteMode, ...] = ("live", "record", "replay", "record_missing")
CASSETTE_FORMAT = "1"
REDACTED = "[REDACTED]"
MIN_SECRET_CHARS = 4
DEFAULT_SECRET_ARGS = frozenset(
    {"api_key", "apikey", "access_token", "auth_token", "token", "authorization", "password", "secret"}
)
GENERATIVE_CATEGORIES = frozenset({"creativity"})
USER_LLM_TOOL = "user_llm"  # the cassette's tool name for a simulated user's chat calls
USER_LLM_VERSION = "1"  # bump when the user's request layout changes
JUDGE_TOOL = "judge"  # the cassette's tool name for an LLM judge's chat calls (evaluation)
JUDGE_VERSION = "1"  # bump when the judge's request layout changes

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entries(
    key_hash TEXT PRIMARY KEY,
    tool TEXT NOT NULL,
    version TEXT NOT NULL,
    key_json TEXT NOT NULL,
    response_json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_tool ON entries(tool);
CREATE TABLE IF NOT EXISTS blobs(sha256 TEXT PRIMARY KEY, media_type TEXT NOT NULL, data BLOB NOT NULL);
"""


class CassetteError(RuntimeError):
    """A cassette that cannot be used: a missing file in replay, another format, a bad setting."""


# ---- secrets ---------------------------------------------------------------------------------------
def _norm_name(name: str) -> str:
    return name.lower().replace("-", "_")


@dataclass(frozen=True)
class Secrets:
    """What never goes into a cassette: values of arguments with these names (any depth,
    case-insensitive, `-` = `_`), the values of these environment variables, and literal values.
    Values shorter than MIN_SECRET_CHARS are refused: scrubbing them would mangle every payload."""

    arg_names: frozenset[str] = DEFAULT_SECRET_ARGS
    env_vars: tuple[str, ...] = ()
    values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "arg_names", frozenset(_norm_name(n) for n in self.arg_names))
        short = [v for v in self.values if len(v) < MIN_SECRET_CHARS]
        if short:
            raise CassetteError(f"secret values must have at least {MIN_SECRET_CHARS} characters")

    def secret_values(self) -> list[str]:
        found = list(self.values)
        for var in self.env_vars:
            value = os.environ.get(var, "")
            if len(value) >= MIN_SECRET_CHARS:
                found.append(value)
            elif value:
                raise CassetteError(
                    f"environment variable {var} is configured as a secret but its value is shorter "
                    f"than {MIN_SECRET_CHARS} characters; it cannot be scrubbed safely"
                )
        # longest first, so a secret that contains another is removed whole
        return sorted(set(found), key=len, reverse=True)

    def scrub(self, value: Any, values: Sequence[str] | None = None) -> Any:
        """`value` (JSON) with secret arguments redacted and secret values cut out of strings."""
        secrets = self.secret_values() if values is None else values
        return self._scrub(value, secrets)

    def _scrub(self, value: Any, secrets: Sequence[str]) -> Any:
        if isinstance(value, str):
            for s in secrets:
                if s in value:
                    value = value.replace(s, REDACTED)
            return value
        if isinstance(value, Mapping):
            return {
                k: REDACTED
                if isinstance(k, str) and _norm_name(k) in self.arg_names and v is not None
                else self._scrub(v, secrets)
                for k, v in value.items()
            }
        if isinstance(value, (list, tuple)):
            return [self._scrub(v, secrets) for v in value]
        return value


# ---- state -----------------------------------------------------------------------------------------
def effects_for(world: World | None) -> StateEffects | None:
    """The world itself where it can capture and replay its changes (MockWorld does), else None."""
    return world if isinstance(world, StateEffects) else None


@dataclass
class StateBinding:
    """The stateful part of a tool set: which tools read/write the state, and how to hash it."""

    tools: frozenset[str] = frozenset()
    state_hash: Callable[[], str] | None = None
    effects: StateEffects | None = None

    @classmethod
    def of_world(cls, world: World | None) -> StateBinding:
        if world is None:
            return cls()
        return cls(frozenset(world.tools.names), world.state_hash, effects_for(world))


# ---- bookkeeping -----------------------------------------------------------------------------------
@dataclass
class CassetteStats:
    """Counts since the cassette was opened. `live_calls` counts every call that reached a real
    tool; in replay mode nothing can reach one, so it stays 0."""

    live_calls: int = 0
    hits: int = 0
    recorded: int = 0
    misses: int = 0
    not_recorded: int = 0  # infra errors and calls whose key cannot be built

    def as_dict(self) -> dict[str, int]:
        return {
            "live_calls": self.live_calls,
            "hits": self.hits,
            "recorded": self.recorded,
            "misses": self.misses,
            "not_recorded": self.not_recorded,
        }


@dataclass(frozen=True)
class NearKey:
    key: dict[str, Any]
    differs: list[str]


@dataclass(frozen=True)
class CassetteMiss:
    key: dict[str, Any]
    nearest: list[NearKey] = field(default_factory=list)

    def describe(self) -> str:
        lines = [f"no recording for {self.key['tool']} v{self.key['version']}: {canonical_json(self.key)}"]
        if not self.nearest:
            lines.append("nearest recorded keys: none (nothing recorded for this tool)")
        else:
            lines.append("nearest recorded keys:")
            for near in self.nearest:
                lines.append(
                    f"  differs in {', '.join(near.differs) or 'nothing'}: {canonical_json(near.key)}"
                )
        return "\n".join(lines)


KEY_FIELDS = ("tool", "version", "arguments", "files", "state", "ordinal", "seed")


def _key_distance(wanted: Mapping[str, Any], other: Mapping[str, Any]) -> tuple[int, float, list[str]]:
    differs = [f for f in KEY_FIELDS if wanted.get(f) != other.get(f)]
    similarity = difflib.SequenceMatcher(
        None, canonical_json(wanted.get("arguments")), canonical_json(other.get("arguments"))
    ).ratio()
    return len(differs), -similarity, differs


# ---- the cassette ----------------------------------------------------------------------------------
class Cassette:
    """Tool responses in one SQLite file. See the module docstring for keys and modes."""

    def __init__(
        self,
        path: Path | str | None,
        mode: CassetteMode = "replay",
        *,
        secrets: Secrets | None = None,
        seeded_tools: Iterable[str] = (),
        seeded_categories: Iterable[str] = GENERATIVE_CATEGORIES,
        nearest: int = 3,
    ) -> None:
        if mode not in MODES:
            raise CassetteError(f"unknown cassette mode {mode!r}; modes: {', '.join(MODES)}")
        self.mode: CassetteMode = mode
        self.path = Path(path) if path is not None else None
        self.secrets = secrets or Secrets()
        self.seeded_tools = frozenset(seeded_tools)
        self.seeded_categories = frozenset(seeded_categories)
        self.nearest = nearest
        self.stats = CassetteStats()
        self.misses: list[CassetteMiss] = []
        self._ordinals: dict[str, int] = {}
        self._entries: dict[str, tuple[Observation, dict[str, Any]] | None] = {}
        self._blobs: dict[str, bytes] = {}
        self._conn: sqlite3.Connection | None = None
        # envs in threads may share a cassette: the connection is used under this lock only
        self._lock = threading.Lock()
        if mode == "live":
            return
        if self.path is None:
            raise CassetteError(f"mode {mode!r} needs a cassette file")
        if mode == "replay":
            if not self.path.is_file():
                raise CassetteError(f"cassette {self.path} does not exist (strict replay needs it)")
            # read-only: replay cannot change the recording, not even by accident
            self._conn = sqlite3.connect(
                f"{self.path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False
            )
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            # WAL: a commit per entry without an fsync, and a crash keeps what was recorded
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)
            self._conn.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES('format', ?)", (CASSETTE_FORMAT,)
            )
        self._check_format()

    def _check_format(self) -> None:
        assert self._conn is not None
        try:
            row = self._conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise CassetteError(f"{self.path} is not a readable toolgym cassette: {exc}") from None
        if row is None or row[0] != CASSETTE_FORMAT:
            raise CassetteError(
                f"{self.path}: cassette format {row[0] if row else 'unknown'}, this toolgym reads {CASSETTE_FORMAT}"
            )

    # ---- life cycle ---------------------------------------------------------------------------
    def start_episode(self) -> None:
        """Ordinals of stateful tools without a state hash count per episode (ToolEnv.reset calls this)."""
        self._ordinals.clear()

    def close(self) -> None:
        if self._conn is None:
            return
        if self.mode != "replay":
            # fold the WAL back: the cassette is one self-contained file again (unless another
            # process has it open; then the WAL stays and SQLite folds it later)
            with contextlib.suppress(sqlite3.OperationalError):
                self._conn.execute("PRAGMA journal_mode=DELETE")
        self._conn.close()
        self._conn = None

    def __enter__(self) -> Cassette:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def wrap(self, tools: ToolSet, world: World | None = None) -> CassetteToolSet:
        """`tools` with every call going through this cassette; `world` makes its tools stateful."""
        return CassetteToolSet(tools, self, StateBinding.of_world(world))

    # ---- keys ---------------------------------------------------------------------------------
    def request_key(
        self,
        t: BaseTool,
        call: ToolCall,
        ctx: ToolContext,
        binding: StateBinding,
        secrets: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """The canonical request key of `call` (a JSON object). Arguments that have no canonical
        JSON (NaN, infinities) make `key_hash` raise ValueError: such a call is never recorded."""
        files: dict[str, str | None] = {}
        for pname in t.file_params:
            ref = call.arguments.get(pname)
            if isinstance(ref, str):
                try:
                    files[pname] = ctx.files.resolve(ref).handle.sha256
                except UnknownFileError:
                    files[pname] = None
        arguments = self.secrets.scrub(call.arguments, secrets)
        key: dict[str, Any] = {
            "tool": t.name,
            "version": t.version,
            "arguments": arguments,
            "files": files,
            "state": None,
            "ordinal": None,
            "seed": None,
        }
        if t.name in self.seeded_tools or t.category in self.seeded_categories:
            key["seed"] = ctx.seed
        stateful = t.name in binding.tools or t.mutates_state
        if stateful and binding.state_hash is not None and t.name in binding.tools:
            key["state"] = binding.state_hash()
        elif stateful:
            base = canonical_json(key)
            key["ordinal"] = self._ordinals.get(base, 0)
        return key

    @staticmethod
    def key_hash(key: Mapping[str, Any]) -> str:
        return hashlib.sha256(canonical_json(key).encode("utf-8")).hexdigest()

    def _count_ordinal(self, key: Mapping[str, Any]) -> None:
        if key["ordinal"] is not None:
            base = canonical_json({**key, "ordinal": None})
            self._ordinals[base] = self._ordinals.get(base, 0) + 1

    # ---- storage ------------------------------------------------------------------------------
    def _lookup(self, key_hash: str) -> tuple[Observation, dict[str, Any]] | None:
        if key_hash in self._entries:
            return self._entries[key_hash]
        assert self._conn is not None
        with self._lock:
            row = self._conn.execute(
                "SELECT response_json FROM entries WHERE key_hash = ?", (key_hash,)
            ).fetchone()
        entry = None
        if row is not None:
            response = json.loads(row[0])
            entry = (Observation.model_validate(response["observation"]), response)
        self._entries[key_hash] = entry  # _store drops it when the row changes
        return entry

    def blob(self, sha: str) -> bytes:
        """The bytes of a recorded output file."""
        data = self._blobs.get(sha)
        if data is None:
            assert self._conn is not None
            with self._lock:
                row = self._conn.execute("SELECT data FROM blobs WHERE sha256 = ?", (sha,)).fetchone()
            if row is None:
                raise CassetteError(f"cassette {self.path} lacks the file blob {sha}")
            data = bytes(row[0])
            if self.mode == "replay":
                self._blobs[sha] = data
        return data

    def _store(
        self,
        key: dict[str, Any],
        key_hash: str,
        obs: Observation,
        ctx: ToolContext,
        extra: dict[str, Any],
        secrets: Sequence[str],
    ) -> None:
        assert self._conn is not None
        payload = self.secrets.scrub(obs.model_dump(mode="json", exclude={"call_id"}), secrets)
        response = {"observation": payload, "files": [h.sha256 for h in obs.files], **extra}
        blobs = []
        for handle in obs.files:
            stored = ctx.files.get(handle)
            blobs.append((handle.sha256, handle.media_type, stored.read_bytes()))
        self._write(key, key_hash, response, blobs)

    def _write(
        self,
        key: dict[str, Any],
        key_hash: str,
        response: dict[str, Any],
        blobs: Sequence[tuple[str, str, bytes]] = (),
    ) -> None:
        assert self._conn is not None
        with self._lock, self._conn:
            self._conn.execute("BEGIN")
            self._conn.executemany(
                "INSERT OR IGNORE INTO blobs(sha256, media_type, data) VALUES(?, ?, ?)", blobs
            )
            self._conn.execute(
                "INSERT OR REPLACE INTO entries(key_hash, tool, version, key_json, response_json)"
                " VALUES(?, ?, ?, ?, ?)",
                (key_hash, key["tool"], key["version"], canonical_json(key), canonical_json(response)),
            )
        self._entries.pop(key_hash, None)

    def recorded_keys(self, tool: str | None = None) -> Iterator[dict[str, Any]]:
        """The recorded request keys (of one tool)."""
        assert self._conn is not None, "a live cassette stores nothing"
        with self._lock:
            rows = (
                self._conn.execute("SELECT key_json FROM entries ORDER BY key_hash")
                if tool is None
                else self._conn.execute(
                    "SELECT key_json FROM entries WHERE tool = ? ORDER BY key_hash", (tool,)
                )
            ).fetchall()
        for (text,) in rows:
            yield json.loads(text)

    def __len__(self) -> int:
        if self._conn is None:
            return 0
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM entries").fetchone()[0])

    def nearest_keys(self, key: Mapping[str, Any], limit: int | None = None) -> list[NearKey]:
        """Recorded keys closest to `key`: fewest differing fields, then the most similar arguments."""
        limit = self.nearest if limit is None else limit
        candidates = list(self.recorded_keys(str(key["tool"])))
        ranked = sorted(((*_key_distance(key, other), canonical_json(other)), other) for other in candidates)
        return [NearKey(key=other, differs=dist[2]) for dist, other in ranked[:limit]]

    # ---- simulated users ----------------------------------------------------------------------
    def wrap_user_llm(self, llm: UserLLM) -> CassetteUserLLM:
        """`llm` (a `toolgym.envs.users.UserLLM`) with every chat call going through this cassette."""
        return CassetteUserLLM(llm, self)

    def user_chat(
        self,
        live: Callable[[], str],
        model: str,
        messages: Sequence[Mapping[str, str]],
        seed: int | None,
    ) -> str:
        """One chat call of a simulated user through the cassette; `live` makes it for real."""
        return self.chat_call(
            live,
            tool=USER_LLM_TOOL,
            version=USER_LLM_VERSION,
            request={"model": model, "messages": [dict(m) for m in messages]},
            seed=seed,
        )

    def chat_call(
        self,
        live: Callable[[], str],
        *,
        tool: str,
        version: str,
        request: Mapping[str, Any],
        seed: int | None,
    ) -> str:
        """One LLM chat call (a simulated user's, a judge's) through the cassette, keyed by `tool`,
        `version`, the `request` as sent and `seed`; `live` makes it for real and returns the
        reply text. A strict-replay miss raises InfraError; failed calls are not recorded."""
        if self.mode == "live":
            self.stats.live_calls += 1
            return live()
        secrets = self.secrets.secret_values()
        key: dict[str, Any] = {
            "tool": tool,
            "version": version,
            "arguments": self.secrets.scrub(dict(request), secrets),
            "files": {},
            "state": None,
            "ordinal": None,
            "seed": seed,
        }
        try:
            key_hash = self.key_hash(key)
        except ValueError as exc:  # text canonical JSON cannot hold: never recorded, never replayed
            self.stats.not_recorded += 1
            if self.mode == "replay":
                self.stats.misses += 1
                raise InfraError(
                    f"cassette: this {tool} request has no canonical JSON ({exc})",
                    data={"cassette_miss": {"key": None, "nearest": []}},  # a miss, not an outage
                ) from None
            self.stats.live_calls += 1
            return live()
        if self.mode in ("replay", "record_missing"):
            entry = self._lookup(key_hash)
            if entry is not None:
                self.stats.hits += 1
                return entry[0].text
            if self.mode == "replay":
                self.stats.misses += 1
                miss = CassetteMiss(key=key, nearest=self.nearest_keys(key))
                self.misses.append(miss)
                raise InfraError(
                    "cassette miss in strict replay: " + miss.describe(),
                    data={
                        "cassette_miss": {
                            "key": key,
                            "nearest": [{"key": n.key, "differs": n.differs} for n in miss.nearest],
                        }
                    },
                )
        self.stats.live_calls += 1
        try:
            text = live()
        except InfraError:  # the endpoint failed: not an answer, nothing is recorded
            self.stats.not_recorded += 1
            raise
        obs = Observation(type="user", text=text)
        payload = self.secrets.scrub(obs.model_dump(mode="json"), secrets)
        self._write(key, key_hash, {"observation": payload, "files": [], "seed": seed})
        self.stats.recorded += 1
        return text

    # ---- the call path ------------------------------------------------------------------------
    def call(
        self,
        live: Callable[[ToolCall, ToolContext], Observation],
        t: BaseTool,
        call: ToolCall,
        ctx: ToolContext,
        binding: StateBinding,
    ) -> Observation:
        """One tool call through the cassette; `live` runs it for real (ToolSet.call). The env's
        own tools (a timeline's `wait`) act on the episode, not a backend: run, never recorded."""
        if t.backend == ENV_BACKEND:
            return live(call, ctx)
        if self.mode == "live":
            self.stats.live_calls += 1
            return live(call, ctx)
        secrets = self.secrets.secret_values()
        try:
            key = self.request_key(t, call, ctx, binding, secrets)
            key_hash = self.key_hash(key)  # canonical JSON refuses NaN and infinities
        except ValueError as exc:
            return self._unkeyable(live, call, ctx, exc)
        stateful = key["state"] is not None and binding.effects is not None
        if self.mode in ("replay", "record_missing"):
            entry = self._lookup(key_hash)
            if entry is not None:
                self.stats.hits += 1
                self._count_ordinal(key)
                return self._restore(entry, call, ctx, binding if stateful else None)
            if self.mode == "replay":
                return self._miss(key, call)
        mark = binding.effects.effects_mark() if stateful and binding.effects is not None else 0
        obs = live(call, ctx)
        self.stats.live_calls += 1
        self._count_ordinal(key)
        if obs.error_kind is ErrorKind.INFRA_ERROR:
            self.stats.not_recorded += 1
            return obs
        extra: dict[str, Any] = {"seed": ctx.seed}
        if stateful and binding.effects is not None and binding.state_hash is not None:
            extra["effect"] = binding.effects.effects_since(mark)
            extra["state_after"] = binding.state_hash()
        self._store(key, key_hash, obs, ctx, extra, secrets)
        self.stats.recorded += 1
        return obs

    def _unkeyable(
        self,
        live: Callable[[ToolCall, ToolContext], Observation],
        call: ToolCall,
        ctx: ToolContext,
        exc: Exception,
    ) -> Observation:
        self.stats.not_recorded += 1
        if self.mode == "replay":
            self.stats.misses += 1
            return Observation.from_error(
                ErrorKind.INFRA_ERROR,
                f"cassette: the arguments of this call have no canonical JSON ({exc}); nothing can match",
                tool=call.name,
                call_id=call.call_id,
            )
        self.stats.live_calls += 1
        return live(call, ctx)

    def _miss(self, key: dict[str, Any], call: ToolCall) -> Observation:
        self.stats.misses += 1
        miss = CassetteMiss(key=key, nearest=self.nearest_keys(key))
        self.misses.append(miss)
        return Observation.from_error(
            ErrorKind.INFRA_ERROR,
            "cassette miss in strict replay: " + miss.describe(),
            tool=call.name,
            call_id=call.call_id,
            content={
                "cassette_miss": {
                    "key": key,
                    "nearest": [{"key": n.key, "differs": n.differs} for n in miss.nearest],
                }
            },
        )

    @staticmethod
    def _holds(ctx: ToolContext, handle: FileHandle) -> bool:
        try:
            return ctx.files.resolve(handle.ref).handle.sha256 == handle.sha256
        except UnknownFileError:
            return False

    def _restore(
        self,
        entry: tuple[Observation, dict[str, Any]],
        call: ToolCall,
        ctx: ToolContext,
        binding: StateBinding | None,
    ) -> Observation:
        obs, response = entry
        for handle in obs.files:
            if self._holds(ctx, handle):  # the bytes are there already: only the name must point at them
                if handle.name:
                    ctx.files.alias(handle.name, handle)
            else:
                ctx.files.put_bytes(self.blob(handle.sha256), name=handle.name, media_type=handle.media_type)
        if binding is not None and binding.effects is not None and "effect" in response:
            try:
                binding.effects.apply_effects(response["effect"])
            except Exception as exc:  # the world is not where the recording was: loud, not a crash
                return Observation.from_error(
                    ErrorKind.INFRA_ERROR,
                    f"cassette: cannot put back the recorded state change of {call.name}: {exc}",
                    tool=call.name,
                    call_id=call.call_id,
                )
            if binding.state_hash is not None and binding.state_hash() != response.get("state_after"):
                return Observation.from_error(
                    ErrorKind.INFRA_ERROR,
                    f"cassette: replaying {call.name} did not reach the recorded state hash",
                    tool=call.name,
                    call_id=call.call_id,
                )
        if obs.call_id != call.call_id:
            obs = obs.model_copy(update={"call_id": call.call_id})
        return obs


# ---- the wrapped tool set --------------------------------------------------------------------------
class CassetteToolSet(ToolSet):
    """A ToolSet whose calls go through a cassette. Same tools, same schemas and exports; only
    `call` differs. `subset` and `merged` keep the wrapping."""

    def __init__(
        self, inner: Iterable[BaseTool], cassette: Cassette, binding: StateBinding | None = None
    ) -> None:
        super().__init__(inner)
        self.cassette = cassette
        self.binding = binding or StateBinding()

    def call(self, call: ToolCall, ctx: ToolContext) -> Observation:
        try:
            t = self.get(call.name)
        except UnknownToolError:
            return super().call(call, ctx)  # the typed unknown_tool observation; nothing runs
        return self.cassette.call(super().call, t, call, ctx, self.binding)

    def subset(self, names: Iterable[str] | None) -> ToolSet:
        return CassetteToolSet(super().subset(names), self.cassette, self.binding)

    def merged(self, other: ToolSet) -> ToolSet:
        return CassetteToolSet(super().merged(other), self.cassette, self.binding)


# ---- simulated users' LLM calls --------------------------------------------------------------------
class CassetteUserLLM:
    """A user LLM whose calls go through a cassette (record, replay, record_missing, live)."""

    def __init__(self, inner: UserLLM, cassette: Cassette) -> None:
        self.inner = inner
        self.cassette = cassette
        self.model = inner.model

    def chat(self, messages: Sequence[Mapping[str, str]], *, seed: int | None) -> str:
        return self.cassette.user_chat(
            lambda: self.inner.chat(messages, seed=seed), self.model, messages, seed
        )
