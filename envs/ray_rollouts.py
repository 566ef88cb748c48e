"""Rollouts on Ray: episodes spread over actors that each hold an `EpisodeWorker` (its envs live as
long as the actor), and tool servers that need a GPU placed as actors with `num_gpus`.

Ray is an optional extra (`pip install 'toolgym[ray]'`) and is imported only when a rollout runs.

The driver keeps every actor at most `per_actor` batches ahead and the whole run at most
`max_in_flight` episodes ahead (back-pressure: results and specs never pile up in the object
store). An actor that dies takes its unfinished batches with it; their episodes go back to the
queue one by one, to run alone on an idle actor (so an episode that kills its worker takes down
nobody else's), a fresh actor replaces the dead one, and an episode whose actor died
`max_attempts` times while it ran alone is recorded as aborted with a `WorkerLost` error. Actors
return the bytes of each trace and of the files its observations carry, and the driver writes
them once (`rollout`), so a re-run never leaves a duplicate or a half-written file.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

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
)

INSTALL_HINT = "pip install 'toolgym[ray]'"


def import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise RolloutError(f"Ray rollouts need Ray, which is not installed: {INSTALL_HINT}") from exc
    return ray


# ---- actors (plain classes; `ray.remote` wraps them when a run starts) -------------------------
class RolloutActor:
    """A CPU rollout worker: one EpisodeWorker, kept for the actor's life."""

    def __init__(self, context: WorkerContext) -> None:
        self.worker = EpisodeWorker(context)

    def ready(self) -> bool:
        return True

    def run_batch(self, specs: Sequence[EpisodeSpec]) -> list[tuple[EpisodeOutcome, EpisodeBytes | None]]:
        return self.worker.run_batch(specs)

    def pid(self) -> int:
        import os

        return os.getpid()


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
        from toolgym.toolservers.server.app import ServerThread, create_app
        from toolgym.toolservers.server.config import ServerConfig

        tools = load_object(spec.toolset, "toolset")()
        if spec.tools is not None:
            tools = tools.subset(spec.tools)
        config = ServerConfig(host=spec.host, token=spec.token)  # beyond loopback needs a token
        self.thread = ServerThread(create_app(tools, config), host=spec.host)
        self.thread.start()

    def url(self) -> str:
        return self.thread.url

    def accelerators(self) -> dict[str, list[str]]:
        """The accelerator ids Ray assigned to this actor (`{"GPU": ["0"]}`)."""
        import ray

        ids = ray.get_runtime_context().get_accelerator_ids().items()
        return {kind: [str(i) for i in found] for kind, found in ids if found}  # only kinds it holds

    def stop(self) -> None:
        self.thread.stop()


# ---- the executor ----------------------------------------------------------------------------
@dataclass
class RayStats:
    """What a run did, for tests and benchmarks."""

    actors_started: int = 0
    actors_lost: int = 0
    resubmitted: int = 0  # episodes sent again after their actor died
    peak_in_flight: int = 0  # episodes submitted and not yet back, at most
    server_accelerators: dict[str, list[str]] = field(default_factory=dict)  # the tool server's GPUs


class RayExecutor:
    """Episodes over `actors` Ray actors (each `actor_cpus` CPUs; default: as many as the cluster
    has CPUs free when the run starts).

    With no `address` and no Ray running, a local Ray instance is started for the run and shut
    down after it; with an address (`auto`, `ray://host:10001`) the executor joins that cluster.
    `tool_server` places a tool server actor (with its `num_gpus`) whose tools the rollout actors
    use instead of their local ones."""

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
    ) -> None:
        if (actors is not None and actors < 1) or per_actor < 1 or max_attempts < 1:
            raise ValueError("actors, per_actor and max_attempts must be at least 1")
        self.actors = actors
        self.address = address
        self.actor_cpus = actor_cpus
        self.batch_size = batch_size
        self.per_actor = per_actor
        self.max_in_flight = max_in_flight
        self.max_attempts = max_attempts
        self.tool_server = tool_server
        self.init_options = dict(init_options or {})
        self.stats = RayStats()
        self.live: list[Any] = []  # the rollout actors' handles while a run goes on
        self.server: Any = None  # the tool server actor's handle while a run goes on

    def run(
        self,
        specs: Sequence[EpisodeSpec],
        context: WorkerContext,
        deliver: Deliver,
        cancel: Cancel | None = None,
    ) -> None:
        ray = import_ray()
        started = False
        if not ray.is_initialized():
            options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if self.address is None:
                options["_node_ip_address"] = "127.0.0.1"  # a local instance stays on loopback
            options.update(self.init_options)
            ray.init(address=self.address, **options)
            started = True
        self.stats = RayStats()
        try:
            if self.tool_server is not None:
                spec = self.tool_server
                server_cls = ray.remote(ToolServerActor)
                self.server = server_cls.options(
                    num_gpus=spec.num_gpus, num_cpus=spec.num_cpus, resources=dict(spec.resources) or None
                ).remote(spec)
                url = ray.get(self.server.url.remote())
                self.stats.server_accelerators = ray.get(self.server.accelerators.remote())
                tools_env = replace(context.env, tool_url=url, tool_token=spec.token)
                context = replace(context, env=tools_env)
            self._drive(ray, specs, context, deliver, cancel)
        finally:
            for actor in self.live:
                ray.kill(actor)
            self.live = []
            if self.server is not None:
                ray.kill(self.server)
                self.server = None
            if started:
                ray.shutdown()

    def _drive(
        self,
        ray: Any,
        specs: Sequence[EpisodeSpec],
        context: WorkerContext,
        deliver: Deliver,
        cancel: Cancel | None = None,
    ) -> None:
        from ray.exceptions import RayActorError, RayTaskError

        actor_cls = ray.remote(RolloutActor).options(num_cpus=self.actor_cpus)
        context_ref = ray.put(context)  # once in the object store, not once per actor
        slots: list[_Slot] = []
        actors = self.actors or max(1, int(ray.available_resources().get("CPU", 1) // self.actor_cpus))

        def start_actor() -> None:
            self.stats.actors_started += 1
            slot = _Slot(actor_cls.remote(context_ref))
            slots.append(slot)
            self.live.append(slot.handle)

        # (batch, alone): a batch whose actor died comes back as single episodes that run alone on
        # an idle actor with nothing queued behind them, so a death is pinned on the one episode
        queue: deque[tuple[list[EpisodeSpec], bool]] = deque(
            (batch, False) for batch in batches(specs, actors, self.batch_size)
        )
        size = max((len(b) for b, _ in queue), default=1)
        limit = self.max_in_flight or actors * self.per_actor * size
        deaths: dict[int, int] = {}  # episode index -> its actor died while it ran alone
        in_flight: dict[Any, tuple[_Slot, list[EpisodeSpec], bool]] = {}  # ObjectRef -> ...
        episodes_in_flight = 0
        for _ in range(actors):
            start_actor()
        max_started = actors * (self.max_attempts + 1) + len(specs)  # no endless replacement loop

        while queue or in_flight:
            if cancel is not None and cancel.is_set():
                return  # `run` kills the actors, and the episodes in flight with them
            while queue and slots:
                batch, alone = queue[0]
                if in_flight and episodes_in_flight + len(batch) > limit:
                    break  # back-pressure: wait for results before sending more
                open_slots = [s for s in slots if not s.alone and s.load < (1 if alone else self.per_actor)]
                if not open_slots:
                    break
                slot = min(open_slots, key=lambda s: s.load)
                queue.popleft()
                in_flight[slot.handle.run_batch.remote(batch)] = (slot, batch, alone)
                if cancel is not None:
                    cancel.started.update(spec.index for spec in batch)
                slot.load += 1
                slot.alone = alone
                episodes_in_flight += len(batch)
                self.stats.peak_in_flight = max(self.stats.peak_in_flight, episodes_in_flight)
            if not in_flight:
                raise RolloutError("no rollout actor is left to run the remaining episodes")
            # a short wait when cancellable: the cancel is noticed within a tenth of a second
            ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=None if cancel is None else 0.1)
            for ref in ready:
                slot, batch, alone = in_flight.pop(ref)
                episodes_in_flight -= len(batch)
                try:
                    results = ray.get(ref)
                except RayTaskError as exc:
                    cause: BaseException = exc.as_instanceof_cause()  # type: ignore[no-untyped-call]
                    raise cause from None  # the episode's own bug stops the run
                except RayActorError as exc:
                    if slot in slots:  # the first of its batches to report the death
                        self.stats.actors_lost += 1
                        slots.remove(slot)
                        self.live.remove(slot.handle)
                        ray.kill(slot.handle)  # one that is only unreachable must not run on
                        if self.stats.actors_started < max_started:
                            start_actor()
                    self.stats.resubmitted += requeue_lost(
                        batch, alone, exc, deaths, self.max_attempts, queue, deliver
                    )
                    continue
                slot.load -= 1
                slot.alone = False
                for outcome, data in results:
                    deliver(outcome, data)


@dataclass(eq=False)
class _Slot:
    handle: Any
    load: int = 0  # batches in flight on this actor
    alone: bool = False  # it runs a suspect episode: nothing else goes to it meanwhile
