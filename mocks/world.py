"""MockWorld: one or more mock apps sharing one state store; implements toolgym.world.World.

    world = MockWorld(["shopping", "banking"], seed=0, clock=datetime(2024, 5, 1, tzinfo=UTC))
    obs = world.step(ToolCall(name="get_balance", arguments={"account_id": "ACC-10001"}))
    world.state_hash(); world.take_diff()
    world.checkpoint("before"); ...; world.restore("before")
    other = world.fork()

Costs: reset with the seed and clock already loaded, restore and the hash are O(changes); a new
world, a fork and a reset to another seed or clock copy the whole database (O(size): a memcpy of
the template image, or the backup API for a fork);
the first world of an (apps, seed, clock) runs the seeders once and keeps the result as a template.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import random
import sqlite3
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Final

import toolgym.cache
from toolgym.actions import Observation, ToolCall
from toolgym.cache import DiskCache, cache_enabled, cache_key, hash_files
from toolgym.files import FileStore
from toolgym.mocks.app import App, validate_app
from toolgym.mocks.clock import SimClock, init_clock
from toolgym.mocks.store import (
    TEMPLATES,
    Diff,
    Store,
    StoreError,
    Template,
    TemplateCache,
    build_template,
    quote_ident,
    template_from_bytes,
    template_to_bytes,
)
from toolgym.tools import DEFAULT_CLOCK, BaseTool, ToolContext, ToolSet

AppLike = type[App] | str

_FILES: FileStore | None = None


def _shared_files() -> FileStore:
    # mock APIs take no files; one lazily made store serves every world's ToolContext
    global _FILES
    if _FILES is None:
        _FILES = FileStore()
    return _FILES


def resolve_apps(apps: Iterable[AppLike]) -> tuple[type[App], ...]:
    from toolgym.mocks.apps import get_app

    classes = tuple(get_app(a) if isinstance(a, str) else a for a in apps)
    if not classes:
        raise ValueError("a MockWorld needs at least one app")
    names = [c.name for c in classes]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"apps given twice: {dupes}")
    return classes


def _seed_database(conn: sqlite3.Connection, apps: Sequence[type[App]], seed: int, clock: datetime) -> None:
    init_clock(conn, clock)
    owner: dict[str, str] = {}
    for cls in apps:
        before = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        try:
            conn.executescript(cls.schema)
        except sqlite3.OperationalError as exc:
            if "already exists" in str(exc):
                raise ValueError(
                    f"app {cls.name!r}: {exc} (tables of {sorted(set(owner.values()))}); "
                    "name tables <app>_<thing> so apps can share a world"
                ) from exc
            raise
        after = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        owner.update(dict.fromkeys(after - before, cls.name))
    from sqlite_utils import Database  # here, not at import: it imports pandas where installed

    db = Database(conn)
    for cls in apps:
        # one RNG per app, keyed by its name: adding an app to a world leaves the others' data alone
        rng = random.Random(f"{seed}:{cls.name}")
        conn.execute("BEGIN")
        cls().seed(db, rng, clock)
        if conn.in_transaction:  # sqlite-utils may have committed already
            conn.execute("COMMIT")


# templates kept across processes (toolgym.cache): seeding the demo's 39 app sets costs seconds
_TEMPLATE_FORMAT: Final = 1
# bounded: a rollout over many seeds stores a template per seed
_templates_on_disk = DiskCache("mock-templates", max_bytes=1024 * 2**20)
# what seeds a world besides the code of toolgym.mocks and the core modules
_SEEDING_PACKAGES: Final = ("sqlite-utils", "faker")


@functools.cache
def _seeding_code_digest() -> str:
    """sha256 of the source of toolgym.mocks (apps, seeding, store) and of the core modules, and of
    what else decides a seeded image: a change to any of them invalidates every stored template."""
    digest = hashlib.sha256()
    mocks_dir = Path(__file__).resolve().parent
    core_dir = Path(toolgym.cache.__file__).resolve().parent
    hash_files(digest, mocks_dir, sorted(mocks_dir.rglob("*.py")))
    hash_files(digest, core_dir, sorted(core_dir.glob("*.py")))
    for name in _SEEDING_PACKAGES:
        try:
            digest.update(f"{name}={importlib.metadata.version(name)}".encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(f"{name}=none".encode())
    digest.update(f"sqlite={sqlite3.sqlite_version};python={sys.version_info[:2]}".encode())
    return digest.hexdigest()


def _disk_key(apps: Sequence[type[App]], seed: int, clock: datetime) -> str | None:
    """The disk cache key of a template, or None when it must not be stored: caches off, or an app
    that is not one of the bundled apps (a simulated library's data comes from documents, a
    user's or a plug-in's app from code outside toolgym.mocks, and neither is in the digest)."""
    if not cache_enabled():
        return None
    from toolgym.mocks.apps import ALL_APPS
    from toolgym.plugins import OWN_PACKAGE

    if any(
        ALL_APPS.get(cls.name) is not cls or ALL_APPS.owner(cls.name).package != OWN_PACKAGE for cls in apps
    ):
        return None
    names = [cls.name for cls in apps]
    return cache_key(
        "mock-template", _TEMPLATE_FORMAT, _seeding_code_digest(), names, seed, clock.isoformat()
    )


def _load_or_build(
    key: tuple[Any, ...], apps: Sequence[type[App]], seed: int, clock: datetime, volatile: dict[str, Any]
) -> Template:
    disk_key = _disk_key(apps, seed, clock)
    if disk_key is not None:
        data = _templates_on_disk.get(disk_key)
        if data is not None:
            try:
                return template_from_bytes(key, data, volatile)
            except (ValueError, KeyError, TypeError, StoreError):
                _templates_on_disk.discard(disk_key)  # not one of ours: build it again
    template = build_template(key, lambda conn: _seed_database(conn, apps, seed, clock), volatile)
    if disk_key is not None:
        _templates_on_disk.put(disk_key, template_to_bytes(template))
    return template


def world_template(
    apps: Sequence[type[App]], seed: int, clock: datetime, cache: TemplateCache = TEMPLATES
) -> Template:
    """The seeded template of (apps, seed, clock), built on first use and cached in the process,
    and for the bundled apps on disk too (`toolgym.cache`; `TOOLGYM_CACHE=0` turns that off)."""
    key = ("mockworld", tuple(apps), seed, clock.isoformat())
    volatile: dict[str, str | Sequence[str]] = {}
    for cls in apps:
        volatile.update(cls.volatile)
    return cache.get(key, lambda: _load_or_build(key, apps, seed, clock, volatile))


class MockWorld:
    """Mock apps on one SQLite store, with reset, checkpoints, fork, a state hash and diffs."""

    def __init__(
        self,
        apps: Iterable[AppLike],
        *,
        seed: int = 0,
        clock: datetime = DEFAULT_CLOCK,
        prefixes: Mapping[str, str] | None = None,
        cache: TemplateCache = TEMPLATES,
    ) -> None:
        self.app_classes = resolve_apps(apps)
        self.prefixes = dict(prefixes or {})
        unknown = set(self.prefixes) - {c.name for c in self.app_classes}
        if unknown:
            raise ValueError(f"prefixes for apps not in this world: {sorted(unknown)}")
        self._cache = cache
        self.seed, self.start = seed, clock
        self.store = Store(world_template(self.app_classes, seed, clock, cache))
        self._bind()

    def _bind(self) -> None:
        self.clock = SimClock(self.store)
        self.apps: dict[str, App] = {}
        for cls in self.app_classes:
            app = cls()
            app.bind(self.store, self.clock)
            self.apps[cls.name] = app
        tools: list[BaseTool] = []
        owner: dict[str, str] = {}
        for name, app in self.apps.items():
            for t in app.bound_tools(self.prefixes.get(name, "")):
                if t.name in owner:
                    raise ValueError(
                        f"API {t.name!r} is published by both {owner[t.name]!r} and {name!r};"
                        f" pass prefixes={{{name!r}: {name + '_'!r}}}"
                    )
                owner[t.name] = name
                tools.append(t)
        self._tools = ToolSet(tools)
        self._ctx: ToolContext | None = None

    # ---- the World protocol -------------------------------------------------------------------
    def reset(self, *, seed: int, clock: datetime) -> None:
        if seed == self.seed and clock.isoformat() == self.start.isoformat():
            self.store.reset()
        else:
            self.store.load(world_template(self.app_classes, seed, clock, self._cache))
            self.seed, self.start = seed, clock
        self._ctx = None

    @property
    def tools(self) -> ToolSet:
        return self._tools

    def state_hash(self) -> str:
        return self.store.state_hash()

    def take_diff(self) -> Diff:
        return self.store.take_diff()

    def checkpoint(self, name: str) -> None:
        self.store.checkpoint(name)

    def restore(self, name: str) -> None:
        self.store.restore(name)

    def fork(self) -> MockWorld:
        other = MockWorld.__new__(MockWorld)
        other.app_classes, other.prefixes, other._cache = self.app_classes, dict(self.prefixes), self._cache
        other.seed, other.start = self.seed, self.start
        other.store = self.store.fork()
        other._bind()
        return other

    def close(self) -> None:
        self.store.close()

    # ---- StateEffects (toolgym.world): what cassettes record and replay --------------------------
    def effects_mark(self) -> int:
        return self.store.top()

    def effects_since(self, mark: int) -> list[Any]:
        return self.store.effects_since(mark)

    def apply_effects(self, effects: list[Any]) -> None:
        self.store.apply_effects(effects)

    # ---- conveniences ---------------------------------------------------------------------------
    @property
    def context(self) -> ToolContext:
        """The ToolContext used by step()/call(): the world's seed and its current clock."""
        if self._ctx is None:
            self._ctx = ToolContext(files=_shared_files(), seed=self.seed, clock=self.start)
        return self._ctx

    def step(self, call: ToolCall) -> Observation:
        """Run one tool call as ToolEnv would: every failure becomes a typed error observation."""
        return self._tools.call(call, self.context)

    def call(self, name: str, /, **arguments: Any) -> Any:
        """Run an API directly (validated); raises AppError / ArgumentError on failure."""
        return self._tools.get(name).invoke(arguments, self.context)

    def advance_clock(self, delta: timedelta | float) -> datetime:
        return self.clock.advance(delta)

    @property
    def table_names(self) -> list[str]:
        return self.store.user_tables

    def rows(self, table: str, where: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """The rows of a table (optionally where col = value ...), in rowid order."""
        info = self.store.tables.get(table)
        if info is None or info.internal:
            raise KeyError(f"no table {table!r}; have {self.table_names}")
        clauses, params = [], []
        for col, value in (where or {}).items():
            if col not in info.columns:
                raise KeyError(f"table {table!r} has no column {col!r}")
            clauses.append(f"{quote_ident(col)} IS ?")
            params.append(value)
        sql = f"SELECT * FROM {quote_ident(table)}" + (f" WHERE {' AND '.join(clauses)}" if clauses else "")
        cursor = self.store.conn.execute(sql + " ORDER BY rowid", params)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, r, strict=True)) for r in cursor]

    def __enter__(self) -> MockWorld:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        names = [c.name for c in self.app_classes]
        return f"MockWorld({names}, seed={self.seed}, clock={self.start.isoformat()})"


def check_app(app: type[App] | str, *, seed: int = 0, clock: datetime = DEFAULT_CLOCK) -> list[str]:
    """What is wrong with an app (a class, or a registered app's name), as messages (empty =
    fine): validate_app's checks, then a world built twice from scratch must have the same rows
    (deterministic seeding), seed() must insert rows, and the incremental hash must equal a full
    scan. App tests call it."""
    from toolgym.mocks.apps import get_app

    cls = get_app(app) if isinstance(app, str) else app
    problems = validate_app(cls)
    if problems:
        return problems
    worlds = [MockWorld([cls], seed=seed, clock=clock, cache=TemplateCache()) for _ in range(2)]
    try:
        if worlds[0].store.full_hash() != worlds[1].store.full_hash():
            problems.append("seeding is not deterministic: use only `rng` and `clock` in seed()")
        if not any(worlds[0].rows(t) for t in worlds[0].table_names):
            problems.append("seed() inserts no rows")
        if worlds[0].state_hash() != worlds[0].store.full_hash():
            problems.append("incremental and full state hash differ (report this: a framework bug)")
    finally:
        for w in worlds:
            w.close()
    return problems
