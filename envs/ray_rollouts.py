"""Rollouts on Ray: episodes spread over actors that each hold an `EpisodeWorker` (its envs live as
long as the actor), and tool servers that need a GPU placed as actors with `num_gpus`.

Ray is an optional extra (`pip install 'toolgym[ray]'`) and is imported only when a rollout runs.

The driver keeps every actor at most `per_actor` batches ahead and the whole run at most
`max_in_flight` episodes ahead (back-pressure: results and specs never pile up in the object
store). An actor that dies takes its unfinished batches with it; their episodes go back to the
queue one by one, to run alone on an idle actor (so an episode that kills its worker takes down
nobody else's), a fresh actor replaces the dead one, and an episode whose actor died
`max_attempts` times while it ran alone is recorded as aborted with a `WorkerLost` error.

An actor gets episodes only once it is placed and started (its `ready` call answered), and the
driver waits `ready_timeout_s` for it to be placed (counted from its start, or from the last actor
that came up while it waited): a replacement that the cluster has no room for (its node was lost)
is given up, its episodes go to the actors left, and when none is left they are recorded as
aborted (`NoActorLeft`), never waited for. One that is placed (Ray's actor table gives it a worker
process) and still starting (its imports and envs, slow on a loaded node) is waited for, up to
`STARTING_BOUND_S` after its start; on the run's own instance, so is every actor while they all fit
its CPUs (nothing else takes the room; a worker process may be slow to start). Each outcome names
the node, actor and process that ran it (`worker`, kept in run.json).

Actors return the bytes of each trace and of the files its observations carry, and the driver
writes them once (`rollout`), so a re-run never leaves a duplicate or a half-written file.

Kept actors (`keep_actors_s`, on a cluster the run joins): instead of being killed at the end of a
run, the actors stay (detached, named by the digest of the code they run: toolgym's files, those of
every plug-in package that toolgym's entry points load, every installed distribution's name and
version, Ray's and Python's versions and their CPU request; `code_digest`) for the next run on the
cluster, which leases them with their imports done, and with their envs and worlds too when it runs
the same context (task sets, env, agents). An actor serves one run at a time (its lease); one left
unused `keep_actors_s` exits by itself, and a lease whose run went silent that long is taken over.
Changed code, a plug-in's included, has another digest, so it never runs on an actor of the old
code; a run whose context names code outside toolgym (an agent, user, world or toolset builder of
its own, which a kept process would keep as first imported) gets fresh actors, as does every actor
of a cancelled or failed run at its end: those are killed.

Where the actors run: with no address (and no `RAY_ADDRESS`), a Ray instance of the run's own
(`private_instance`: never a cluster found on the machine), on loopback and with token
authentication on; with one, the cluster it names.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import logging
import os
import secrets
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from toolgym import plugins
from toolgym.cache import hash_files
from toolgym.envs.rollouts import (
    Cancel,
    Deliver,
    EpisodeBytes,
    EpisodeOutcome,
    EpisodeSpec,
    EpisodeWorker,
    RolloutError,
    WorkerContext,
    batches,
    load_object,
    requeue_lost,
    unrun_outcome,
)

INSTALL_HINT = "pip install 'toolgym[ray]'"


DEFAULT_READY_TIMEOUT_S = 60.0
# how long an actor that is placed (it has a worker process) may take to start, at most: a placed
# actor is not waiting for room, only for its process's imports and envs on a loaded node
STARTING_BOUND_S = 600.0


CANCEL_GROUP = "cancel"  # the rollout actors' concurrency group of `cancel`, `lease` and `release`
KEPT_NAMESPACE = "toolgym"  # the Ray namespace of kept actors
KEPT_PREFIX = "toolgym-rollout-"  # their names: prefix, code digest, index

RAY_ADDRESS_ENV = "RAY_ADDRESS"  # the cluster to join, where the run is given no address
AUTH_MODE_ENV = "RAY_AUTH_MODE"  # Ray's token authentication: `token` or `disabled`
CLUSTER_MODE_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # 0: Ray takes loopback as the node's address


class NoActorLeft(RolloutError):
    """No rollout actor was left to run an episode: those the run asked for died, or the cluster
    could not place them in time (a lost node, no free CPUs)."""


class RayAccessRefused(RolloutError):
    """The Ray cluster refused this client's authentication token (Ray's token authentication)."""


class RayAuthRequired(RolloutError):
    """`RAY_AUTH_MODE=disabled` would start the run's own Ray instance without token authentication,
    and the caller did not opt in (`allow_no_auth`)."""


log = logging.getLogger(__name__)


def import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise RolloutError(f"Ray rollouts need Ray, which is not installed: {INSTALL_HINT}") from exc
    return ray


def auth_disabled() -> bool:
    """Whether the environment turns Ray's token authentication off (`RAY_AUTH_MODE=disabled`)."""
    return os.environ.get(AUTH_MODE_ENV, "").strip().lower() == "disabled"


@contextmanager
def private_instance(ray: Any, options: Mapping[str, Any], allow_no_auth: bool = False) -> Iterator[Path]:
    """A Ray instance of the caller's own (`ray.init(address="local", **options)`), shut down and
    its folder removed on exit; yields that folder.

    - Never another instance: `address="local"` reads neither `RAY_ADDRESS` nor the cluster that a
      `ray start` left in Ray's temp folder (`ray_current_cluster`, live or stale), and its temp
      folder (`_temp_dir`) is new: `r` in a folder of mode 0700 (Ray opens its own to everyone).
    - Every port on loopback: Ray binds its GCS, raylet, workers and agents to the node's address,
      and turns a loopback `_node_ip_address` into the machine's outward one unless its cluster
      mode is off (`RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`, which this process's Ray read at import,
      hence its constant too, meanwhile).
    - Token authentication on (`RAY_AUTH_MODE=token`: every local user reaches loopback) with a
      token of its own, in a 0600 file of that folder (`RAY_AUTH_TOKEN_PATH`), never
      `~/.ray/auth_token`; off only for `RAY_AUTH_MODE=disabled` with `allow_no_auth`."""
    folder = _private_folder()
    env: dict[str, str | None] = {CLUSTER_MODE_ENV: "0"}
    if not (allow_no_auth and auth_disabled()):
        token = folder / "auth_token"
        with os.fdopen(os.open(token, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as fh:
            fh.write(secrets.token_hex(32))
        env |= {AUTH_MODE_ENV: "token", "RAY_AUTH_TOKEN_PATH": str(token), "RAY_AUTH_TOKEN": None}
    own = {"_temp_dir": str(folder / "r"), "_node_ip_address": "127.0.0.1"}
    try:
        with _ray_environ(env):
            try:
                ray.init(address="local", **{**options, **own})
                yield folder
            finally:
                ray.shutdown()
    finally:
        _remove(folder)


def _remove(folder: Path, bound_s: float = 10.0) -> None:
    """Remove a private instance's folder, again while its processes, exiting after
    `ray.shutdown()`, still write their last logs into it (for `bound_s` at most)."""
    deadline = time.monotonic() + bound_s
    shutil.rmtree(folder, ignore_errors=True)
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
        shutil.rmtree(folder, ignore_errors=True)


# A Unix socket's path has 107 bytes at most, and Ray's below a private instance's folder take up to
# this many ("/r/session_<date>_<time>_<microseconds>_<pid>/sockets/plasma_store")
_RAY_SOCKET_TAIL = 66


def _private_folder() -> Path:
    """A new folder for a private instance, under Ray's parent of temp folders (`RAY_TMPDIR`, else
    the system's), or under /tmp where that is too long a path for Ray's sockets."""
    parent = os.environ.get("RAY_TMPDIR") or tempfile.gettempdir()
    if len(os.fsencode(parent)) + len("/tg-ray-12345678") + _RAY_SOCKET_TAIL > 107:
        parent = "/tmp"
    return Path(tempfile.mkdtemp(prefix="tg-ray-", dir=parent))


@contextmanager
def _ray_environ(env: Mapping[str, str | None]) -> Iterator[None]:
    """`env` in os.environ meanwhile (None: unset), for this process's Ray and the processes it
    starts, with Ray's cluster mode off; Ray's cached settings (its config, whose auth mode is read
    from the environment, and its token) read again on entry and on exit."""
    from ray._private import ray_constants

    saved = {key: os.environ.get(key) for key in env}
    cluster_mode = ray_constants.ENABLE_RAY_CLUSTER
    _set_environ(env)
    ray_constants.ENABLE_RAY_CLUSTER = False
    _reload_ray_settings()
    try:
        yield
    finally:
        _set_environ(saved)
        ray_constants.ENABLE_RAY_CLUSTER = cluster_mode
        _reload_ray_settings()


def _set_environ(env: Mapping[str, str | None]) -> None:
    for key, value in env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def _reload_ray_settings() -> None:
    from ray._raylet import AuthenticationTokenLoader, Config  # type: ignore[attr-defined]

    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


# ---- actors (plain classes; `ray.remote` wraps them when a run starts) -------------------------
class RolloutActor:
    """A CPU rollout worker: one EpisodeWorker, kept for the actor's life (or, for a kept actor,
    for as long as the runs that lease it bring the same context)."""

    def __init__(self, context: WorkerContext | None, keep_s: float | None = None) -> None:
        self.worker = EpisodeWorker(context) if context is not None else None
        self.key: str | None = None  # the digest of the context `worker` was built for
        self.keep_s = keep_s
        self.holder: str | None = None  # the run that leases this kept actor
        self.busy = False  # a batch runs
        self.last_used = time.monotonic()
        self.lock = threading.Lock()
        if keep_s is not None:
            threading.Thread(target=self._exit_when_idle, name="toolgym-keep", daemon=True).start()

    def ready(self) -> dict[str, str | int]:
        """Where this actor runs (its answer also says it is placed and started)."""
        import ray

        context = ray.get_runtime_context()
        return {"node": context.get_node_id(), "actor": str(context.get_actor_id()), "pid": os.getpid()}

    def lease(self, run: str) -> bool:
        """A kept actor for `run` (in the `cancel` group, so it answers beside a batch): False
        while another run holds it, unless that run was silent for `keep_s` (its driver is gone)."""
        with self.lock:
            stale = self.keep_s is not None and time.monotonic() - self.last_used > self.keep_s
            if self.holder not in (None, run) and (self.busy or not stale):
                return False
            self.holder, self.last_used = run, time.monotonic()
            return True

    def start_run(self, context: WorkerContext, key: str) -> tuple[dict[str, str | int], bool, bool]:
        """The leased run's context: the worker of the last run when it had the same one (its envs
        and worlds built), else a new one. Where it runs, whether it served a run before, and
        whether its worker was reused."""
        served = self.worker is not None
        reused = self.worker is not None and self.key == key and not self.worker.cancelled
        if not reused:
            if self.worker is not None:
                self.worker.close()
            self.worker, self.key = EpisodeWorker(context), key
        self.last_used = time.monotonic()
        return self.ready(), served, reused

    def release(self, run: str) -> None:
        with self.lock:
            if self.holder == run:
                self.holder, self.last_used = None, time.monotonic()

    def run_batch(self, specs: Sequence[EpisodeSpec]) -> list[tuple[EpisodeOutcome, EpisodeBytes | None]]:
        assert self.worker is not None, "a batch before start_run"
        self.busy, self.last_used = True, time.monotonic()
        try:
            return self.worker.run_batch(specs)
        finally:
            self.busy, self.last_used = False, time.monotonic()

    def cancel(self) -> None:
        """The run stopped (called in the `cancel` concurrency group, beside the batch running):
        the worker's model clients stop, its episode in flight ends with what it spent."""
        if self.worker is not None:
            self.worker.cancel()

    def _exit_when_idle(self) -> None:
        """A kept actor nobody leased for `keep_s` ends its process (Ray frees its CPUs and name)."""
        assert self.keep_s is not None
        while True:
            time.sleep(min(self.keep_s / 4, 5.0))
            with self.lock:
                idle = time.monotonic() - self.last_used > self.keep_s and not self.busy
                if idle:  # no run leases it, or the one that does went silent
                    if self.worker is not None:
                        self.worker.close()
                    os._exit(0)


@dataclass(frozen=True)
class ToolServerSpec:
    """A tool server to place as its own actor, e.g. on a lab node's GPU. `toolset` names a
    `package.module:factory` returning the ToolSet to serve (all of it, or `tools`); `num_gpus` is
    the actor's GPU request (0 on a CPU-only machine). The server binds `host` (loopback by
    default; on a cluster, the node's address with a `token`)."""

    toolset: str = "toolgym.toolservers.registry:default_toolset"
    tools: tuple[str, ...] | None = None
    num_gpus: float = 1.0
    num_cpus: float = 1.0
    host: str = "127.0.0.1"
    token: str | None = None
    resources: Mapping[str, float] = field(default_factory=dict)


class ToolServerActor:
    """Hosts a toolgym tool server (the HTTP server the lab uses) inside the actor; rollout actors
    reach it through `RemoteToolSet`, as any agent reaches a lab node."""

    def __init__(self, spec: ToolServerSpec) -> None:
        # nothing slow here: the driver's bounded wait for a placed actor must not count model loads
        self.spec = spec
        self.thread: Any = None

    def placed(self) -> bool:
        return True

    def url(self) -> str:
        """Start the server (tools load here, models included) once; its URL."""
        if self.thread is None:
            from toolgym.toolservers.server.app import ServerThread, create_app
            from toolgym.toolservers.server.config import ServerConfig

            spec = self.spec
            tools = load_object(spec.toolset, "toolset")()
            if spec.tools is not None:
                tools = tools.subset(spec.tools)
            config = ServerConfig(host=spec.host, token=spec.token)  # beyond loopback needs a token
            thread = ServerThread(create_app(tools, config), host=spec.host)
            thread.start()
            self.thread = thread
        return str(self.thread.url)

    def accelerators(self) -> dict[str, list[str]]:
        """The accelerator ids Ray assigned to this actor (`{"GPU": ["0"]}`)."""
        import ray

        ids = ray.get_runtime_context().get_accelerator_ids().items()
        return {kind: [str(i) for i in found] for kind, found in ids if found}  # only kinds it holds

    def stop(self) -> None:
        if self.thread is not None:
            self.thread.stop()


# ---- the executor ----------------------------------------------------------------------------
@dataclass
class RayStats:
    """What a run did, for tests and benchmarks."""

    actors_started: int = 0
    actors_lost: int = 0
    actors_unplaced: int = 0  # given up: not placed within `ready_timeout_s` (or not started in the bound)
    actors_reused: int = 0  # kept actors leased from an earlier run (their process and imports)
    workers_reused: int = 0  # ... whose envs and worlds served the same context before
    resubmitted: int = 0  # episodes sent again after their actor died
    peak_in_flight: int = 0  # episodes submitted and not yet back, at most
    server_accelerators: dict[str, list[str]] = field(default_factory=dict)  # the tool server's GPUs


class RayExecutor:
    """Episodes over `actors` Ray actors (each `actor_cpus` CPUs; default: as many as the cluster
    has CPUs free when the run starts).

    With an address (`auto`, `host:6379`, `ray://host:10001`), or else the one `RAY_ADDRESS`
    names (`address_from_env`; `check_access` says so in one line), the executor joins that
    cluster. With neither, and no Ray connected in this process, it starts a Ray instance of the
    run's own (`private_instance`), whatever other Ray instance runs on the machine, and shuts it
    down after the run; `allow_no_auth` lets `RAY_AUTH_MODE=disabled` turn its token
    authentication off. `tool_server` places a tool server actor (with its `num_gpus`) whose tools
    the rollout actors use instead of their local ones. An actor not placed within `ready_timeout_s`
    (or placed and not started within `STARTING_BOUND_S`) is given up (module docstring).
    `keep_actors_s` keeps the actors for the next run, on a cluster the run joins (module
    docstring); a Ray instance the run starts ends with it."""

    def __init__(
        self,
        actors: int | None = None,
        *,
        address: str | None = None,
        actor_cpus: float = 1.0,
        batch_size: int | None = None,
        per_actor: int = 2,
        max_in_flight: int | None = None,
        max_attempts: int = 2,
        tool_server: ToolServerSpec | None = None,
        init_options: Mapping[str, Any] | None = None,
        ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S,
        keep_actors_s: float | None = None,
        allow_no_auth: bool = False,
    ) -> None:
        if (actors is not None and actors < 1) or per_actor < 1 or max_attempts < 1:
            raise ValueError("actors, per_actor and max_attempts must be at least 1")
        if not ready_timeout_s > 0 or (keep_actors_s is not None and not keep_actors_s > 0):
            raise ValueError("ready_timeout_s and keep_actors_s must be more than 0")
        self.keep_actors_s = keep_actors_s
        self.actors = actors
        # Ray's own rule: RAY_ADDRESS names the cluster to join; no cluster found on the machine does
        self.address_from_env = address is None and bool(os.environ.get(RAY_ADDRESS_ENV))
        if self.address_from_env:
            address = os.environ[RAY_ADDRESS_ENV]
        self.address = None if address == "local" else address  # None: an instance of the run's own
        self.allow_no_auth = allow_no_auth
        self.actor_cpus = actor_cpus
        self.batch_size = batch_size
        self.per_actor = per_actor
        self.max_in_flight = max_in_flight
        self.max_attempts = max_attempts
        self.tool_server = tool_server
        self.init_options = dict(init_options or {})
        self.ready_timeout_s = ready_timeout_s
        self._access_checked = False
        self.stats = RayStats()
        self.live: list[Any] = []  # the rollout actors' handles while a run goes on
        self.run_id = ""  # this run's name in its kept actors' leases
        self.kept: set[str] = set()  # runs whose actors are kept (a one-element set, or empty)
        self.server: Any = None  # the tool server actor's handle while a run goes on

    def run(
        self,
        specs: Sequence[EpisodeSpec],
        context: WorkerContext,
        deliver: Deliver,
        cancel: Cancel | None = None,
    ) -> None:
        ray = import_ray()
        with ExitStack() as instance:  # a Ray instance or connection of this run's: shut down last
            started = not ray.is_initialized()
            if started:
                self.check_access()
                options = {"include_dashboard": False, "log_to_driver": False, **self.init_options}
                if self.address is None:
                    instance.enter_context(private_instance(ray, options, self.allow_no_auth))
                else:
                    ray.init(address=self.address, **options)
                    instance.callback(ray.shutdown)
            self._run_on(ray, started and self.address is None, specs, context, deliver, cancel)

    def _run_on(
        self,
        ray: Any,
        private: bool,
        specs: Sequence[EpisodeSpec],
        context: WorkerContext,
        deliver: Deliver,
        cancel: Cancel | None,
    ) -> None:
        """The run on the Ray this process is connected to (`private`: an instance of this run's)."""
        self.stats = RayStats()
        keep = None if private else self.keep_actors_s  # kept actors outlive the driver, not the instance
        finished = False
        try:
            if self.tool_server is not None:
                spec = self.tool_server
                server_cls = ray.remote(ToolServerActor)
                self.server = server_cls.options(
                    num_gpus=spec.num_gpus, num_cpus=spec.num_cpus, resources=dict(spec.resources) or None
                ).remote(spec)
                try:  # placed within the bound; then its tools load as long as they take
                    self._await_start(ray, self.server, self.server.placed.remote())
                except ray.exceptions.GetTimeoutError:
                    raise RolloutError(
                        f"the tool-server actor (num_gpus={spec.num_gpus:g}, num_cpus={spec.num_cpus:g}) was not "
                        f"placed and started within {self.ready_timeout_s:g} s: the cluster has no room for it "
                        "(`ray status` shows pending demands)"
                    ) from None
                url = ray.get(self.server.url.remote())
                self.stats.server_accelerators = ray.get(self.server.accelerators.remote())
                tools_env = replace(context.env, tool_url=url, tool_token=spec.token)
                context = replace(context, env=tools_env)
            room = None
            if private:  # the run's own instance: its CPUs are the rollout actors' (and the server's)
                server_cpus = self.tool_server.num_cpus if self.tool_server is not None else 0.0
                room = float(ray.cluster_resources().get("CPU", 0.0)) - server_cpus
            self._drive(ray, specs, context, deliver, cancel, keep, room)
            finished = cancel is None or not cancel.is_set()
        finally:
            released = []
            for actor in self.live:
                if finished and self.run_id in self.kept:
                    released.append(actor.release.options(concurrency_group=CANCEL_GROUP).remote(self.run_id))
                else:  # a cancelled or failed run's workers are spent: no other run gets them
                    ray.kill(actor)
            if released:  # answered before this driver may exit (a call in flight dies with it)
                ray.wait(released, num_returns=len(released), timeout=5)
            self.live = []
            if self.server is not None:
                ray.kill(self.server)
                self.server = None

    @property
    def starting_bound_s(self) -> float:
        """How long after its start an actor that is placed (or sure to be) may still be starting."""
        return max(STARTING_BOUND_S, self.ready_timeout_s)

    def _await_start(self, ray: Any, handle: Any, ref: Any) -> Any:
        """`ref`'s answer from the actor `handle`, waited for `ready_timeout_s` while it is not
        placed, and up to `STARTING_BOUND_S` while it is placed and starting (GetTimeoutError)."""
        bound = time.monotonic() + self.starting_bound_s
        while True:
            try:
                return ray.get(ref, timeout=self.ready_timeout_s)
            except ray.exceptions.GetTimeoutError:
                if time.monotonic() >= bound or not has_process(handle):
                    raise

    def check_access(self) -> None:
        """Before a run: without an address, RayAuthRequired where `RAY_AUTH_MODE=disabled` would
        start the run's own instance without token authentication (unless `allow_no_auth`); with
        one, one line when it comes from `RAY_ADDRESS`, and a connection to the cluster (not for a
        `ray://` client address) that raises RayAccessRefused if it refuses this client's token.
        `ray.init` would retry a refused token for 20 s, with a warning each second, then fail
        without saying why."""
        if self._access_checked:
            return
        if self.address is None:
            if auth_disabled() and not self.allow_no_auth and not import_ray().is_initialized():
                raise RayAuthRequired(
                    f"{AUTH_MODE_ENV}=disabled would start this run's own Ray instance without token "
                    "authentication, open to every process on this machine: unset it, or opt in with "
                    "--ray-allow-no-auth (RayExecutor(allow_no_auth=True)); docs/scaling.md"
                )
            self._access_checked = True
            return
        if self.address_from_env:
            log.warning(
                "toolgym: joining the Ray cluster at %s, which %s names (unset it for a Ray instance of "
                "this run's own)",
                self.address,
                RAY_ADDRESS_ENV,
            )
        if not self.address.startswith("ray://"):
            self._check_token()
        self._access_checked = True

    def _check_token(self) -> None:
        assert self.address is not None
        import_ray()
        from ray._private.authentication.authentication_token_setup import (
            ensure_token_if_auth_enabled,
            maybe_enable_token_auth_if_token_available,
        )
        from ray._private.services import canonicalize_bootstrap_address_or_die
        from ray._raylet import GcsClient  # type: ignore[attr-defined]
        from ray.exceptions import AuthenticationError

        with tempfile.TemporaryFile() as said:
            try:
                with _stderr_to(said):  # Ray's C++ client warns on stderr
                    if self.address == "auto":  # as ray.init: a token file turns token auth on
                        maybe_enable_token_auth_if_token_available(warn_if_disabled=False)
                    ensure_token_if_auth_enabled(None, create_token_if_missing=False)
                    GcsClient(address=canonicalize_bootstrap_address_or_die(self.address))
            except AuthenticationError as exc:
                raise RayAccessRefused(
                    f"the Ray cluster at {self.address} refused this client's token ({exc.message}): "
                    "give the cluster's token in RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token, "
                    "with RAY_AUTH_MODE=token (docs/scaling.md, token authentication)"
                ) from None
            except Exception:
                said.seek(0)
                sys.stderr.write(said.read().decode(errors="replace"))  # ray.init reports it

    def _drive(
        self,
        ray: Any,
        specs: Sequence[EpisodeSpec],
        context: WorkerContext,
        deliver: Deliver,
        cancel: Cancel | None = None,
        keep: float | None = None,
        room: float | None = None,
    ) -> None:
        self.run_id = uuid.uuid4().hex
        self.kept = {self.run_id} if keep is not None and keepable(context) else set()
        run = _Round(self, ray, ray.put(context), deliver, keep if self.kept else None, room)
        free = int(ray.available_resources().get("CPU", 1) // self.actor_cpus)
        if self.kept:  # idle kept actors hold CPUs that are this run's to take
            free += len(run.kept_names()) + run.retire_stale()
        actors = self.actors or max(1, free)
        # (batch, alone): a batch whose actor died comes back as single episodes that run alone on
        # an idle actor with nothing queued behind them, so a death is pinned on the one episode
        run.queue.extend((batch, False) for batch in batches(specs, actors, self.batch_size))
        size = max((len(b) for b, _ in run.queue), default=1)
        run.limit = self.max_in_flight or actors * self.per_actor * size
        for _ in range(actors):
            run.start_actor()
        run.max_started = actors * (self.max_attempts + 1) + len(specs)  # no endless replacement loop
        relay = _CancelRelay(run, cancel) if cancel is not None else None
        try:
            self._loop(run, cancel)
        finally:
            if relay is not None:
                relay.close()

    @staticmethod
    def _loop(run: _Round, cancel: Cancel | None) -> None:
        ray = run.ray
        while run.queue or run.in_flight:
            if cancel is not None and cancel.is_set():
                run.cut_short(cancel.grace_s / 2)
                return  # `run` kills the actors, and the episodes still in flight with them
            for batch in run.dispatch():
                if cancel is not None:
                    cancel.started.update(spec.index for spec in batch)
            if not run.in_flight and not run.starting:
                run.abort_the_rest()
                return
            # wake up for the next actor's deadline, and within a tenth of a second for a cancel
            bounds = [s.deadline - time.monotonic() for s in run.starting.values()]
            bounds += [0.1] if cancel is not None else []
            timeout = max(0.0, min(bounds)) if bounds else None
            ready, _ = ray.wait([*run.in_flight, *run.starting], num_returns=1, timeout=timeout)
            for ref in ready:
                if ref in run.starting:
                    run.placed(ref)
                else:
                    run.returned(ref)
            run.give_up_unplaced()


class _CancelRelay:
    """Tells the placed actors of a cancel the moment it is set, from a thread of the driver that
    the signal handler's flag wakes, not at the driver loop's next wake-up (up to 0.1 s later, in
    which an actor could still start a model request). Closed with the run, it tells nobody: no Ray
    call leaves the driver after the run."""

    def __init__(self, run: _Round, cancel: Cancel) -> None:
        self._run = run
        self._wake = threading.Event()
        self._closed = False
        cancel.on_set(self._wake.set)  # only a flag: it may run in the signal handler
        self._thread = threading.Thread(target=self._relay, name="toolgym-ray-cancel", daemon=True)
        self._thread.start()

    def _relay(self) -> None:
        self._wake.wait()
        if not self._closed:
            self._run.tell_actors()

    def close(self) -> None:
        self._closed = True
        self._wake.set()
        self._thread.join(timeout=10)


class _Round:
    """The driver's state in one `RayExecutor` run: actors starting and placed, the queue of
    batches, and the batches in flight."""

    def __init__(
        self,
        executor: RayExecutor,
        ray: Any,
        context_ref: Any,
        deliver: Deliver,
        keep: float | None = None,
        room: float | None = None,
    ) -> None:
        self.executor, self.ray, self.context_ref, self.deliver = executor, ray, context_ref, deliver
        self.stats = executor.stats
        self.keep = keep
        self.room = room  # the CPUs of the run's own instance for its actors (None: a joined cluster)
        if keep is not None:
            self.prefix = f"{KEPT_PREFIX}{code_digest(executor.actor_cpus)[:16]}-"
            self.context_key = context_key(ray.get(context_ref))
            self.next_index = 0
        # `cancel` runs on a thread of its own group, so it reaches an actor busy with a batch
        self.remote_cls = ray.remote(concurrency_groups={CANCEL_GROUP: 1})(RolloutActor)
        self.actor_cls = self.remote_cls.options(num_cpus=executor.actor_cpus)
        self.slots: list[_Slot] = []  # placed and started: they take episodes
        self.told: set[int] = set()  # the slots whose actor knows of a cancel
        self.told_lock = threading.Lock()
        self.starting: dict[Any, _Slot] = {}  # their `ready` ObjectRef -> actors not placed yet
        self.queue: deque[tuple[list[EpisodeSpec], bool]] = deque()
        self.in_flight: dict[Any, tuple[_Slot, list[EpisodeSpec], bool]] = {}  # ObjectRef -> ...
        self.episodes_in_flight = 0
        self.deaths: dict[int, int] = {}  # episode index -> its actor died while it ran alone
        self.limit = 1
        self.max_started = 0

    def start_actor(self) -> None:
        self.stats.actors_started += 1
        started = time.monotonic()
        deadline = started + self.executor.ready_timeout_s
        if self.keep is None:
            slot = _Slot(self.actor_cls.remote(self.context_ref), deadline, started)
            self.starting[slot.handle.ready.remote()] = slot
        else:  # the next kept actor's name: an idle one is leased, a missing one started
            name = f"{self.prefix}{self.next_index}"
            self.next_index += 1
            handle = self.remote_cls.options(
                num_cpus=self.executor.actor_cpus,
                name=name,
                namespace=KEPT_NAMESPACE,
                lifetime="detached",
                get_if_exists=True,
            ).remote(None, self.keep)
            slot = _Slot(handle, deadline, started, leasing=True)
            self.starting[
                handle.lease.options(concurrency_group=CANCEL_GROUP).remote(self.executor.run_id)
            ] = slot
        self.executor.live.append(slot.handle)

    def kept_names(self) -> list[str]:
        """The kept actors of this code on the cluster, leased or not."""
        from ray.util import list_named_actors

        return [
            a["name"] for a in list_named_actors(all_namespaces=True) if a["name"].startswith(self.prefix)
        ]

    def retire_stale(self) -> int:
        """Kill the idle kept actors of other code (an earlier version: their CPUs are this run's);
        those another run leases are left alone. The number killed."""
        from ray.util import list_named_actors

        retired = 0
        for entry in list_named_actors(all_namespaces=True):
            name = entry["name"]
            if not name.startswith(KEPT_PREFIX) or name.startswith(self.prefix):
                continue
            try:
                handle = self.ray.get_actor(name, namespace=KEPT_NAMESPACE)
                leased = handle.lease.options(concurrency_group=CANCEL_GROUP).remote(self.executor.run_id)
                if self.ray.get(leased, timeout=5):
                    self.ray.kill(handle)
                    retired += 1
            except Exception:  # gone meanwhile, or too slow to answer: not ours to wait for
                continue
        return retired

    def _leased(self, slot: _Slot, ref: Any) -> None:
        """A kept actor answered `lease`: when it is ours, it gets this run's context (the answer
        to that is its `ready`); another run's is left alone, and the next name is tried."""
        if not self.ray.get(ref):
            self.executor.live.remove(slot.handle)  # not ours to kill
            self.stats.actors_started -= 1
            if self.next_index < self.max_started:
                self.start_actor()
            return
        slot.leasing = False
        self.starting[slot.handle.start_run.remote(self.context_ref, self.context_key)] = slot

    def dispatch(self) -> list[list[EpisodeSpec]]:
        """Send queued batches to placed actors with room, under back-pressure; returns them."""
        sent: list[list[EpisodeSpec]] = []
        while self.queue and self.slots:
            batch, alone = self.queue[0]
            if self.in_flight and self.episodes_in_flight + len(batch) > self.limit:
                break  # back-pressure: wait for results before sending more
            per_actor = 1 if alone else self.executor.per_actor
            open_slots = [s for s in self.slots if not s.alone and s.load < per_actor]
            if not open_slots:
                break
            slot = min(open_slots, key=lambda s: s.load)
            self.queue.popleft()
            self.in_flight[slot.handle.run_batch.remote(batch)] = (slot, batch, alone)
            slot.load += 1
            slot.alone = alone
            self.episodes_in_flight += len(batch)
            self.stats.peak_in_flight = max(self.stats.peak_in_flight, self.episodes_in_flight)
            sent.append(batch)
        return sent

    def placed(self, ref: Any) -> None:
        """An actor answered `ready`: it takes episodes from now on (or it died starting)."""
        from ray.exceptions import RayActorError

        slot = self.starting.pop(ref)
        try:
            if slot.leasing:
                return self._leased(slot, ref)
            answer = self.ray.get(ref)
            if self.keep is not None:  # (where it runs, its worker reused); a kept actor's ready
                answer, served, reused = answer
                self.stats.actors_reused += served
                self.stats.workers_reused += reused
            slot.worker = answer
        except RayActorError as exc:
            if exc.actor_init_failed:  # its constructor raised: a bug every actor would hit
                raise RolloutError(f"a rollout actor failed to start: {_what_failed(exc)}") from None
            self.stats.actors_lost += 1
            self._drop(slot)
            if self.stats.actors_started < self.max_started:
                self.start_actor()
            return
        self.slots.append(slot)
        # the cluster is bringing actors up (slowly, on a loaded node): the others get their time
        renewed = time.monotonic() + self.executor.ready_timeout_s
        for other in self.starting.values():
            other.deadline = max(other.deadline, renewed)

    def returned(self, ref: Any) -> None:
        """A batch came back: deliver its outcomes, or requeue its episodes if its actor died."""
        from ray.exceptions import RayActorError, RayTaskError

        slot, batch, alone = self.in_flight.pop(ref)
        self.episodes_in_flight -= len(batch)

        def deliver(outcome: EpisodeOutcome, data: EpisodeBytes | None) -> None:
            self.deliver(replace(outcome, worker=slot.worker), data)  # where it ran

        try:
            results = self.ray.get(ref)
        except RayTaskError as exc:
            cause: BaseException = exc.as_instanceof_cause()  # type: ignore[no-untyped-call]
            raise cause from None  # the episode's own bug stops the run
        except RayActorError as exc:
            if slot in self.slots:  # the first of its batches to report the death
                self.stats.actors_lost += 1
                self.slots.remove(slot)
                self._drop(slot)  # one that is only unreachable must not run on
                if self.stats.actors_started < self.max_started:
                    self.start_actor()
            self.stats.resubmitted += requeue_lost(
                batch, alone, exc, self.deaths, self.executor.max_attempts, self.queue, deliver
            )
            return
        slot.load -= 1
        slot.alone = False
        for outcome, data in results:
            deliver(outcome, data)

    def tell_actors(self) -> None:
        """`cancel` on every placed actor not told yet (from the relay's thread, then the driver's
        loop for an actor placed since)."""
        with self.told_lock:
            slots = [slot for slot in self.slots if id(slot) not in self.told]
            self.told.update(id(slot) for slot in slots)
        for slot in slots:
            slot.handle.cancel.options(concurrency_group=CANCEL_GROUP).remote()

    def cut_short(self, timeout: float) -> None:
        """A cancelled run: every actor is told at once (its model clients stop, so the episode
        it runs ends), and the batches back within `timeout` are delivered: the episodes they
        finished and those cut short, with the tokens they spent."""
        self.tell_actors()
        deadline = time.monotonic() + timeout
        while self.in_flight and (left := deadline - time.monotonic()) > 0:
            ready, _ = self.ray.wait(list(self.in_flight), num_returns=1, timeout=left)
            for ref in ready:
                try:
                    self.returned(ref)
                except Exception:  # an episode's bug: the run is stopping, its episodes are cancelled
                    continue

    def give_up_unplaced(self) -> None:
        """Actors not placed by their deadline (`ready_timeout_s` after their start or after the
        last actor that came up, whichever is later) are given up: the cluster has no room for them
        (a lost node, no free CPUs). The episodes go to the actors left. One that is placed and still
        starting gets another `ready_timeout_s`, up to `STARTING_BOUND_S` after its start; so does
        every actor on the run's own instance while all of them fit its CPUs (its worker process
        may be slow to start: nothing else takes the room)."""
        now = time.monotonic()
        bound = self.executor.starting_bound_s
        for ref, slot in list(self.starting.items()):
            if slot.deadline > now:
                continue
            if now < slot.started + bound and (has_process(slot.handle) or self._all_fit()):
                slot.deadline = min(now + self.executor.ready_timeout_s, slot.started + bound)
                continue
            del self.starting[ref]
            self.stats.actors_unplaced += 1
            self._drop(slot)

    def _all_fit(self) -> bool:
        """On the run's own instance, whether its actors (placed and starting) fit its CPUs: then
        every one will be placed, its worker process only slow to start on a loaded machine."""
        actors = len(self.slots) + len(self.starting)
        return self.room is not None and actors * self.executor.actor_cpus <= self.room

    def abort_the_rest(self) -> None:
        """No actor is placed or starting: the queued episodes are aborted (infra), not waited for."""
        stats, timeout = self.stats, self.executor.ready_timeout_s
        error = NoActorLeft(
            f"no Ray actor was left to run this episode: {stats.actors_lost} died and "
            f"{stats.actors_unplaced} could not be placed within {timeout:g} s (a lost node or no "
            "free CPUs; `ray status` shows pending demands)"
        )
        for batch, _ in self.queue:
            for spec in batch:
                self.deliver(unrun_outcome(spec, error), None)
        self.queue.clear()

    def _drop(self, slot: _Slot) -> None:
        self.executor.live.remove(slot.handle)
        self.ray.kill(slot.handle)


def keepable(context: WorkerContext) -> bool:
    """Only toolgym's own code runs on a kept actor: the digest in its name covers that code, not
    a builder of the user's, which a kept process would keep as it first imported it."""
    env = context.env
    named = [
        env.toolset,
        context.agent.builder,
        *(a.builder for a in context.agents.values()),
        *context.abort_on,
    ]
    named += [spec.builder for spec in (env.user, env.worlds) if spec is not None]
    return all(name == "oracle" or name.startswith("toolgym.") for name in named)


def context_key(context: WorkerContext) -> str:
    """A digest of what a worker is built from (a kept actor reuses its worker, envs and worlds
    for the same): each task as its JSON, and the reprs of the rest. Pickles are no key: their
    bytes differ from one process to the next. A repr that names an object's address only costs
    the reuse."""
    digest = hashlib.sha256()
    for name, task_set in context.task_sets:
        digest.update(f"{name}\0{task_set.base_dir}\0".encode())
        for task in task_set.tasks:
            digest.update(task.model_dump_json().encode() + b"\0")
    rest = (context.env, context.agent, context.abort_on, sorted(context.agents.items()))
    digest.update(repr(rest).encode())
    return digest.hexdigest()


def code_digest(actor_cpus: float) -> str:
    """sha256 of what a kept actor runs, which its name says: every Python file of the toolgym
    package (through its folder links) and of the packages that each plug-in distribution's
    `toolgym.*` entry points name (an editable install's source included: its edit changes the
    digest), the name and version of every installed distribution, Ray's and Python's versions and
    the actors' CPU request. Taken again for each run: a long-lived driver may see code change."""
    import ray

    import toolgym

    digest = hashlib.sha256(f"{sys.version}|{ray.__version__}|{actor_cpus!r}".encode())
    root = Path(toolgym.__file__).parent
    hash_files(digest, root, _python_files(root, follow_links=True))  # the package's folder links too
    installed = {(d.metadata["Name"] or "?", d.version or "?") for d in importlib.metadata.distributions()}
    digest.update(repr(sorted(installed)).encode())
    for package, modules in sorted(_plugin_modules().items()):
        digest.update(f"\0plug-in {package}\0".encode())
        for module in modules:
            for base, files in _module_sources(module):
                hash_files(digest, base, files)
    return digest.hexdigest()


def _plugin_modules() -> dict[str, list[str]]:
    """Each plug-in distribution (not toolgym) -> the top-level modules its entry points name."""
    found: dict[str, set[str]] = {}
    for kind in plugins.KINDS:
        for plugin in plugins.entry_points(kind):
            if plugin.package.lower() != plugins.OWN_PACKAGE:
                top = plugin.value.split(":")[0].strip().split(".")[0]
                found.setdefault(plugin.package, set()).add(top)
    return {package: sorted(modules) for package, modules in found.items()}


def _module_sources(module: str) -> list[tuple[Path, list[Path]]]:
    """A top-level module's Python files, each list with the folder its paths are named from: a
    package's folders (a namespace package has several), or a module's own file. Found without
    importing it; none for a module that cannot be found (its plug-in is skipped where it loads)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    if spec.submodule_search_locations:
        folders = [Path(f) for f in spec.submodule_search_locations]
        return [(folder.parent, _python_files(folder)) for folder in folders]
    if spec.origin and Path(spec.origin).is_file():
        return [(Path(spec.origin).parent, [Path(spec.origin)])]
    return []


def _python_files(root: Path, *, follow_links: bool = False) -> list[Path]:
    sources: list[Path] = []
    for folder, dirs, files in os.walk(root, followlinks=follow_links):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        sources += (Path(folder, name) for name in sorted(files) if name.endswith(".py"))
    return sources


def stop_kept_actors() -> int:
    """Kill every kept rollout actor of the cluster this driver is connected to (any code, leased
    or not); the number killed."""
    ray = import_ray()
    from ray.util import list_named_actors

    names = [a["name"] for a in list_named_actors(all_namespaces=True) if a["name"].startswith(KEPT_PREFIX)]
    for name in names:
        with suppress(ValueError):  # gone meanwhile (it exited idle)
            ray.kill(ray.get_actor(name, namespace=KEPT_NAMESPACE))
    return len(names)


@contextmanager
def _stderr_to(file: IO[bytes]) -> Iterator[None]:
    """File descriptor 2 (what C++ code writes to) goes to `file` meanwhile."""
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(file.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def has_process(handle: Any) -> bool:
    """Whether Ray placed an actor: its entry in the GCS actor table names a worker process (a pid)
    while it is created or alive. Ray's public state API needs the dashboard, which our instances
    run without, so this reads the table as `ray._private.state.actors` does; where that fails (a
    Ray whose internals moved) the actor counts as unplaced, as before."""
    try:
        from ray._private import state

        entry = state.actors(actor_id=handle._actor_id.hex())
        return bool(entry) and entry["State"] in ("PENDING_CREATION", "ALIVE") and int(entry["Pid"]) > 0
    except Exception:
        return False


def _what_failed(exc: BaseException) -> str:
    """The last line of an error (an actor's creation error ends with the exception itself)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[-1][:300] if lines else type(exc).__name__


@dataclass(eq=False)
class _Slot:
    handle: Any
    deadline: float  # placed by then (time.monotonic()), or given up
    started: float  # when it was asked for (time.monotonic())
    load: int = 0  # batches in flight on this actor
    alone: bool = False  # it runs a suspect episode: nothing else goes to it meanwhile
    worker: dict[str, str | int] | None = None  # where it runs (node, actor, pid), once placed
    leasing: bool = False  # a kept actor asked for its lease (its `ready` comes after)
