"""Simulated tools as a mock app: a library of documented tools, answered by a simulator, with the
episode's state in the world's store.

    App = simulated_app("weather", load_docs("weather.json"))          # deterministic
    world = MockWorld([App])                                              # or a task's apps
    world.call("get_weather", city="Paris")

    register_library("my-api", docs)        # a task can then name apps=["simulated:my-api"]

Each library is an `App` class named "simulated:<library>" with one table of records. What a call
does follows the doc (`ToolDoc.action`): a create stores the answer as a record under a new id
("SIM-EVENT-000001"), a get with that id finds it, a list shows the records that match its
arguments before the simulated ones, an update changes the record, a delete removes it. So a
created record is in the world's state: the state hash, the diffs, checkpoints, forks and the
cassette's state effects cover it as they cover any mock app. Other calls (and gets of ids the
episode did not create) are the simulator's fresh answer.

Registered libraries resolve by name in any process (`get_simulated_app`): the `toolgym.simulated`
entry points (toolgym.plugins): "simulated:tooleyes/<Category>/<Tool>" (ToolEyes' 95 libraries,
fixtures/tooleyes), "simulated:mtu" (MTU-Bench's APIs that no mock app implements, fixtures/mtu)
and those of installed packages.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from importlib.resources import files as package_files
from pathlib import Path
from typing import Any, ClassVar

from toolgym.canonical import canonical_json
from toolgym.mocks.app import App
from toolgym.mocks.responses import not_found
from toolgym.mocks.simulated.docs import DocError, ToolDoc, load_docs
from toolgym.mocks.simulated.simulator import DeterministicSimulator, SimCall, Simulator
from toolgym.plugins import Plugin, PluginError, Registry, call_factory
from toolgym.tools import SCHEMA_PARAM_TYPES, BaseTool, ReturnSpec, SchemaTool, ToolContext

PREFIX = "simulated:"
HISTORY_KEY = "simulated_calls"  # ToolContext.extras: this episode's calls per simulated tool
TOOLEYES_PSEUDO_TOOLS = ("ask_to_user", "finish")  # protocol actions in toolgym, not tools
_ID_PREFIX = "SIM-"


def _table_name(library: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", library.lower()).strip("_")[:40]
    return f"sim_{slug}_{hashlib.sha256(library.encode()).hexdigest()[:8]}_records"


def _doc_version(doc: ToolDoc, backend: str) -> str:
    """A tool's version: changes when its doc or its simulator changes, so a cassette never
    replays a stale answer, nor an LLM's answer for the deterministic simulator."""
    body = canonical_json(
        {"name": doc.name, "d": doc.description, "p": doc.parameters, "r": doc.returns, "a": doc.action}
    )
    kind = backend.removeprefix(PREFIX)
    return f"sim1-{kind}-" + hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _returns(doc: ToolDoc) -> list[ReturnSpec]:
    kind = (doc.returns or {}).get("type", "object")
    return [ReturnSpec(type=SCHEMA_PARAM_TYPES.get(str(kind), "object"), description="simulated answer")]


class SimulatedApp(App):
    """Base of the generated library apps (`simulated_app` makes one per library)."""

    library: ClassVar[str] = ""
    docs: ClassVar[tuple[ToolDoc, ...]] = ()
    simulator: ClassVar[Simulator] = DeterministicSimulator()
    table: ClassVar[str] = ""
    prototypes: ClassVar[tuple[SchemaTool, ...]] = ()

    def bound_tools(self, prefix: str = "") -> list[BaseTool]:
        tools: list[BaseTool] = []
        for proto, doc in zip(self.prototypes, self.docs, strict=True):
            bound = copy.copy(proto)
            bound.name = prefix + proto.name
            bound.fn = self._caller(doc)
            tools.append(bound)
        return tools

    def _caller(self, doc: ToolDoc) -> Callable[[dict[str, Any], ToolContext], Any]:
        store = self.store
        if doc.mutates_state:

            def call_write(arguments: dict[str, Any], ctx: ToolContext) -> Any:
                with store.atomic():
                    return self.simulate(doc, arguments, ctx)

            return call_write

        def call_read(arguments: dict[str, Any], ctx: ToolContext) -> Any:
            with store.read_only():
                return self.simulate(doc, arguments, ctx)

        return call_read

    # ---- one call ------------------------------------------------------------------------------
    def simulate(self, doc: ToolDoc, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        # this episode's calls to the tool, for simulators that read them (the LLM's prompt);
        # the ToolContext is the episode's, so a new episode starts with none
        keep = self.simulator.history_limit
        history: list[dict[str, Any]] = (
            ctx.extras.setdefault(HISTORY_KEY, {}).setdefault(doc.name, []) if keep else []
        )
        found = self._record_named(arguments) if doc.action in ("get", "update", "delete") else None
        if found is None and doc.action in ("update", "delete") and self._names_own_id(arguments):
            raise not_found(doc.resource, self._names_own_id(arguments))
        if found is not None:
            record_id, body = found
            answer = self._on_record(doc, record_id, body, arguments)
        else:
            answer = self.simulator.answer(
                SimCall(doc=doc, arguments=arguments, seed=ctx.seed, clock=ctx.clock, history=tuple(history))
            )
            if doc.action == "create":
                answer = self._create(doc, answer)
            elif doc.action == "list":
                answer = self._with_records(doc, arguments, answer)
        if keep:
            history.append({"arguments": arguments, "answer": answer})
            del history[:-keep]
        return answer

    def _id_field(self, doc: ToolDoc) -> str:
        props = (doc.returns or {}).get("properties")
        names = list(props) if isinstance(props, Mapping) else []
        return next((n for n in (f"{doc.resource}_id", "id") if n in names), f"{doc.resource}_id")

    def _create(self, doc: ToolDoc, answer: Any) -> Any:
        record_id = self.next_id(_ID_PREFIX + re.sub(r"[^A-Z0-9]+", "", doc.resource.upper())[:16])
        body = (
            {self._id_field(doc): record_id, **answer}
            if isinstance(answer, dict)
            else {
                self._id_field(doc): record_id,
                "result": answer,
            }
        )
        body[self._id_field(doc)] = record_id
        self.execute(
            f'INSERT INTO "{self.table}"(record_id, resource, body) VALUES (?, ?, ?)',
            (record_id, doc.resource, canonical_json(body)),
        )
        return body

    @staticmethod
    def _names_own_id(arguments: Mapping[str, Any]) -> str | None:
        return next((v for v in arguments.values() if isinstance(v, str) and v.startswith(_ID_PREFIX)), None)

    def _record_named(self, arguments: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
        record_id = self._names_own_id(arguments)
        if record_id is None:
            return None
        row = self.row(f'SELECT body FROM "{self.table}" WHERE record_id = ?', (record_id,))
        return None if row is None else (record_id, json.loads(row["body"]))

    def _on_record(
        self, doc: ToolDoc, record_id: str, body: dict[str, Any], arguments: Mapping[str, Any]
    ) -> Any:
        if doc.action == "delete":
            self.execute(f'DELETE FROM "{self.table}" WHERE record_id = ?', (record_id,))
            return {"status": "success", "deleted": record_id}
        if doc.action == "update":
            body = {**body, **{k: v for k, v in arguments.items() if v != record_id}}
            self.execute(
                f'UPDATE "{self.table}" SET body = ? WHERE record_id = ?', (canonical_json(body), record_id)
            )
        return body

    def _with_records(self, doc: ToolDoc, arguments: Mapping[str, Any], answer: Any) -> Any:
        """A list answer with the episode's matching records of the resource in front."""
        rows = self.rows(
            f'SELECT body FROM "{self.table}" WHERE resource = ? ORDER BY rowid', (doc.resource,)
        )
        if not rows:
            return answer
        wanted = {k: str(v).casefold() for k, v in arguments.items() if not isinstance(v, (dict, list))}
        mine = []
        for row in rows:
            body = json.loads(row["body"])
            if all(str(body[k]).casefold() == v for k, v in wanted.items() if k in body):
                mine.append(body)
        if not mine:
            return answer
        if isinstance(answer, list):
            return [*mine, *answer]
        if isinstance(answer, dict):
            key = next((k for k, v in answer.items() if isinstance(v, list)), None)
            if key is not None:
                merged = {**answer, key: [*mine, *answer[key]]}
                if isinstance(answer.get("count"), int):
                    merged["count"] = len(merged[key])
                return merged
        return {"results": [*mine, answer]}


def simulated_app(
    library: str, docs: Sequence[ToolDoc], *, simulator: Simulator | None = None
) -> type[SimulatedApp]:
    """A mock app class serving `docs` through `simulator` (default: deterministic)."""
    if not docs:
        raise DocError(library, "a simulated library needs at least one tool")
    names = [d.name for d in docs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise DocError(docs[0].source, "two tools have this name", dupes[0])
    sim = simulator or DeterministicSimulator()
    table = _table_name(library)
    prototypes = tuple(
        SchemaTool(
            doc.name,
            doc.parameters,
            _unbound,
            description=doc.description,
            returns=_returns(doc),
            category="app",
            mutates_state=doc.mutates_state,
            version=_doc_version(doc, sim.backend),
            backend=sim.backend,
            check_schema=False,  # make_doc checked it (jsonschema-rs, ~200x faster)
        )
        for doc in docs
    )
    attrs: dict[str, Any] = {
        "name": PREFIX + library,
        "description": f"Simulated tools of {library} ({sim.backend}), from their documentation.",
        "schema": f'CREATE TABLE "{table}" (record_id TEXT PRIMARY KEY, resource TEXT NOT NULL, body TEXT NOT NULL);',
        "library": library,
        "docs": tuple(docs),
        "simulator": sim,
        "table": table,
        "prototypes": prototypes,
    }
    return type(f"Simulated_{re.sub(r'[^A-Za-z0-9]', '_', library)}", (SimulatedApp,), attrs)


_REBUILT: dict[tuple[int, int], tuple[type[SimulatedApp], Simulator, type[SimulatedApp]]] = {}


def _rebuilt(cls: type[SimulatedApp], simulator: Simulator) -> type[SimulatedApp]:
    """`cls` answered by `simulator`: one class per (library, simulator), so worlds share templates."""
    key = (id(cls), id(simulator))
    found = _REBUILT.get(key)
    if found is None:  # the entry keeps both alive, so their ids stay theirs
        found = _REBUILT[key] = (cls, simulator, simulated_app(cls.library, cls.docs, simulator=simulator))
    return found[2]


def with_simulator(apps: Iterable[type[App]], simulator: Simulator) -> list[type[App]]:
    """`apps` with every simulated library answered by `simulator` instead (mock apps as they are)."""
    return [_rebuilt(a, simulator) if issubclass(a, SimulatedApp) else a for a in apps]


def _unbound(arguments: dict[str, Any], ctx: ToolContext) -> Any:
    raise RuntimeError("a simulated tool runs bound to a world: build a MockWorld with its app")


# ---- the registry -------------------------------------------------------------------------------------
_REGISTERED: dict[str, type[SimulatedApp]] = {}


def register_library(
    library: str, docs: Sequence[ToolDoc], *, simulator: Simulator | None = None
) -> type[SimulatedApp]:
    """Make `docs` a library that tasks in this process can name: apps=["simulated:<library>"]."""
    if library in _REGISTERED or library in bundled_libraries():
        raise ValueError(f"a simulated library named {library!r} exists already")
    cls = simulated_app(library, docs, simulator=simulator)
    _REGISTERED[library] = cls
    return cls


def fixture_dir(name: str) -> Path:
    return Path(str(package_files("toolgym.fixtures"))) / name


def tooleyes_config_path(key: str) -> Path:
    """ToolEyes' config of library 'Category/Tool', as shipped in fixtures/tooleyes."""
    return fixture_dir("tooleyes") / f"config_gpt4.{key.replace('/', '__')}.json"


def tooleyes_libraries() -> dict[str, Callable[[], list[ToolDoc]]]:
    """ToolEyes' 95 libraries ("tooleyes/<Category>/<Tool>", fixtures/tooleyes), each loaded when used."""
    keys = sorted(
        p.name.removeprefix("config_gpt4.").removesuffix(".json").replace("__", "/")
        for p in fixture_dir("tooleyes").glob("config_gpt4.*.json")
    )
    # three ToolEyes libraries document one name twice (blacklist_ip, drivers,
    # classify_grocery_product): the first record is served, as docs/simulated-tools.md says
    return {
        f"tooleyes/{key}": functools.partial(
            load_docs,
            tooleyes_config_path(key),
            fmt="openai",
            exclude=TOOLEYES_PSEUDO_TOOLS,
            keep_first=True,
        )
        for key in keys
    }


def mtu_libraries() -> dict[str, Callable[[], list[ToolDoc]]]:
    """MTU-Bench's APIs that no mock app implements ("mtu", fixtures/mtu)."""
    path = fixture_dir("mtu") / "simulated_apis.json"
    return {"mtu": functools.partial(load_docs, path, fmt="mtu")} if path.is_file() else {}


def _libraries_of(plugin: Plugin, loaded: Any) -> list[tuple[str, Callable[[], Sequence[ToolDoc]]]]:
    """A `toolgym.simulated` entry point's libraries: a {library: loader} mapping, or one library
    named after the entry point (a doc file's path or a list of ToolDocs), or a callable returning
    one of them."""
    made = call_factory(loaded) if callable(loaded) else loaded
    if isinstance(made, Mapping):
        return [(str(name), loader) for name, loader in made.items()]
    if isinstance(made, str | Path):
        return [(plugin.name, functools.partial(load_docs, made))]
    if isinstance(made, Sequence) and all(isinstance(d, ToolDoc) for d in made):
        return [(plugin.name, lambda: made)]
    raise PluginError(
        f"gives {made!r}: a doc file's path, a list of ToolDocs or a {{library: loader}} mapping"
    )


# library -> loader of its docs: toolgym's (ToolEyes', MTU's) and the installed packages'
LIBRARIES: Registry[Callable[[], Sequence[ToolDoc]]] = Registry("simulated", _libraries_of)


def bundled_libraries() -> tuple[str, ...]:
    """The registered libraries' names (without the "simulated:" prefix): `toolgym.simulated`
    entry points, toolgym's and the installed packages'."""
    return tuple(LIBRARIES)


def bundled_docs(library: str) -> list[ToolDoc]:
    """The docs of a registered library."""
    try:
        loader = LIBRARIES[library]
    except KeyError:
        raise KeyError(f"no bundled simulated library {library!r}") from None
    return list(loader())


@cache
def _bundled_app(library: str) -> type[SimulatedApp]:
    return simulated_app(library, bundled_docs(library))


def is_simulated(name: str) -> bool:
    return name.startswith(PREFIX)


def get_simulated_app(name: str) -> type[SimulatedApp]:
    """The app class of "simulated:<library>": registered in this process, or bundled."""
    library = name.removeprefix(PREFIX)
    if library in _REGISTERED:
        return _REGISTERED[library]
    if library in bundled_libraries():
        return _bundled_app(library)
    raise KeyError(
        f"no simulated library {library!r}: register_library() it, or use a bundled one "
        f"(tooleyes/<Category>/<Tool>, mtu)"
    )


def library_tools(classes: Iterable[type[SimulatedApp]]) -> list[str]:
    """The tool names of simulated app classes (read from their docs: no world is built)."""
    return [d.name for cls in classes for d in cls.docs]
