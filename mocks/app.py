"""Declaring a mock app: a schema, a seeded data generator and typed APIs marked read or write.

    class NotesApp(App):
        name = "notes"
        description = "A note-taking app."
        schema = '''
            CREATE TABLE notes_notes (note_id TEXT PRIMARY KEY, title TEXT NOT NULL,
                                      body TEXT NOT NULL, updated_at TEXT NOT NULL);
        '''
        volatile: ClassVar[Volatile] = {"notes_notes": ["updated_at"]}  # not in the state hash

        def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
            insert_rows(db, "notes_notes", [...])   # or sqlite-utils: db.table(...).insert_all
            set_counter(db, "NOTE", 200)             # the next next_id("NOTE") is NOTE-000201

        @read
        def get_note(self, note_id: Annotated[str, Param("the note's id")]) -> dict[str, Any]:
            "Get one note by id."
            return ok(self.get_or_404("notes_notes", "note_id", note_id, what="note"))

        @write(name="create_note")                    # the published name
        def create(self, title: str, body: str = "") -> dict[str, Any]:
            "Create a note."
            note_id = self.next_id("NOTE")
            self.execute("INSERT INTO notes_notes VALUES (?, ?, ?, ?)",
                         (note_id, title, body, self.now_iso()))
            return ok(note_id=note_id)

The full guide, with the rules every app must keep, is mocks/README.md.

Each API becomes a toolgym Tool (category "app", `mutates_state` for writes). Writes run in a
savepoint: an exception anywhere undoes the whole call. Reads run with the database read-only.
Parameters declared `Annotated[str, Param(..., enum=(...))]` are checked before the call (400);
`Literal[...]` parameters are checked by pydantic (an argument_error). The Tool objects are built
once per app class; a world only copies them and binds them to its own instance.
"""

from __future__ import annotations

import copy
import functools
import random
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeVar, overload

from toolgym.mocks.clock import SimClock
from toolgym.mocks.responses import AppError, bad_request, not_found
from toolgym.mocks.seeding import insert_rows as insert_rows  # seed() helpers; the public name stays here too
from toolgym.mocks.seeding import seed_connection
from toolgym.mocks.store import META_TABLE, Store, quote_ident
from toolgym.tools import BaseTool, Tool

if TYPE_CHECKING:
    from sqlite_utils import Database

F = TypeVar("F", bound=Callable[..., Any])

_API_ATTR: Final = "__toolgym_api__"

# {table: ["col", ...]} leaves columns out of the state hash, {table: "*"} the whole table
Volatile = Mapping[str, str | Sequence[str]]


@dataclass(frozen=True)
class ApiSpec:
    """How a method is published: its tool name, read or write, an optional description."""

    name: str | None
    write: bool
    description: str | None = None
    version: str | None = None


def _mark(fn: F | None, spec: ApiSpec) -> F | Callable[[F], F]:
    def wrap(f: F) -> F:
        setattr(f, _API_ATTR, spec)
        return f

    return wrap(fn) if fn is not None else wrap


@overload
def read(fn: F, /) -> F: ...
@overload
def read(
    *, name: str | None = None, description: str | None = None, version: str | None = None
) -> Callable[[F], F]: ...
def read(
    fn: F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    version: str | None = None,
) -> F | Callable[[F], F]:
    """Mark a method as a read API (no state change; runs on a read-only database)."""
    return _mark(fn, ApiSpec(name=name, write=False, description=description, version=version))


@overload
def write(fn: F, /) -> F: ...
@overload
def write(
    *, name: str | None = None, description: str | None = None, version: str | None = None
) -> Callable[[F], F]: ...
def write(
    fn: F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    version: str | None = None,
) -> F | Callable[[F], F]:
    """Mark a method as a write API (mutates_state=True; runs in a savepoint, all or nothing)."""
    return _mark(fn, ApiSpec(name=name, write=True, description=description, version=version))


def set_counter(db: Database | sqlite3.Connection, prefix: str, last: int) -> None:
    """In seed(): make the next `next_id(prefix)` return number `last + 1`."""
    seed_connection(db).execute(
        f"INSERT OR REPLACE INTO {META_TABLE}(key, value) VALUES(?, ?)", ("counter:" + prefix, int(last))
    )


def format_id(prefix: str, number: int, width: int = 6) -> str:
    """The id layout of next_id: format_id("ORD", 7) == "ORD-000007"."""
    return f"{prefix}-{number:0{width}d}"


def placeholders(values: Iterable[Any]) -> str:
    """ "?, ?, ?" for an IN (...) clause of as many values."""
    return ", ".join("?" for _ in values)


class Query:
    """A SELECT grown by optional filters, for search APIs: each `where` adds " AND <clause>" and
    its values, so a filter left out (None, "dontcare") simply adds nothing.

        q = Query("SELECT * FROM hotels WHERE city = ?", city).flags(has_wifi=wifi)
        if stars is not None:
            q.where("star_rating >= ?", stars)
        rows = q.rows(self, "average_rating DESC, hotel_id")
    """

    def __init__(self, sql: str, *params: Any) -> None:
        self.sql = sql
        self.params: list[Any] = list(params)

    def where(self, clause: str, *values: Any) -> Query:
        self.sql += f" AND {clause}"
        self.params.extend(values)
        return self

    def where_in(self, column: str, values: Sequence[Any]) -> Query:
        """`column IN (?, ...)` over `values`."""
        return self.where(f"{column} IN ({placeholders(values)})", *values)

    def flags(self, flags: Mapping[str, bool | None] | None = None, /, **more: bool | None) -> Query:
        """`column = 0/1` for each flag that is not None (None: either)."""
        for column, wanted in {**(flags or {}), **more}.items():
            if wanted is not None:
                self.where(f"{column} = ?", int(wanted))
        return self

    def rows(self, app: App, order_by: str) -> list[dict[str, Any]]:
        """The matching rows, in `order_by` order (end it with a unique key: results must be stable)."""
        return app.rows(f"{self.sql} ORDER BY {order_by}", self.params)


@functools.lru_cache(maxsize=1024)
def _select_by(table: str, column: str) -> str:
    return f"SELECT * FROM {quote_ident(table)} WHERE {quote_ident(column)} = ?"


class App:
    """Base of every mock app. Subclasses set the class attributes and write `seed` and the APIs.

    Class attributes:
        name         the app's registry name (also the default API prefix when one is asked for)
        description  one paragraph for humans and agents
        schema       SQL DDL; every table needs a PRIMARY KEY; name tables `<app>_<thing>` so
                     that apps can share a world without clashing
        volatile     {table: ["col", ...]} or {table: "*"}: left out of the state hash
        version      goes into every tool's version (cassette keys): bump it when behaviour changes
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    # published API name -> its description in place of the docstring (a locale's apps, zh.py)
    api_descriptions: ClassVar[Mapping[str, str]] = {}
    schema: ClassVar[str] = ""
    volatile: ClassVar[Volatile] = {}
    version: ClassVar[str] = "1"

    # bound per world by MockWorld; not available inside seed()
    store: Store
    clock: SimClock

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        """Fill the tables. Use only `rng` for randomness and `clock` for dates: the same seed
        must give the same rows. `db` is a sqlite-utils Database on the template being built."""

    # ---- binding --------------------------------------------------------------------------
    def bind(self, store: Store, clock: SimClock) -> None:
        self.store, self.clock = store, clock

    def bound_tools(self, prefix: str = "") -> list[BaseTool]:
        """The app's tools bound to this instance (after `bind`); apps whose tools are not
        methods (simulated libraries) override it."""
        return list(bind_tools(self, prefix))

    @property
    def db(self) -> sqlite3.Connection:
        """The world's connection (looked up per use: loading another seed swaps it)."""
        return self.store.conn

    # ---- helpers for API code ---------------------------------------------------------------
    def now(self) -> datetime:
        return self.clock.now()

    def now_iso(self) -> str:
        return self.clock.now_iso()

    def next_id(self, prefix: str, width: int = 6) -> str:
        """A deterministic id, "ORD-000123": a counter stored in the database (it rolls back)."""
        return format_id(prefix, self.store.next_counter(prefix), width)

    def next_ids(self, prefix: str, n: int, width: int = 6) -> list[str]:
        """n consecutive ids in one database write (cheaper than n next_id calls)."""
        last = self.store.next_counter(prefix, n)
        return [format_id(prefix, k, width) for k in range(last - n + 1, last + 1)]

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> sqlite3.Cursor:
        return self.db.execute(sql, params)

    def rows(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[dict[str, Any]]:
        cursor = self.db.execute(sql, params)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, r, strict=True)) for r in cursor]

    def row(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> dict[str, Any] | None:
        cursor = self.db.execute(sql, params)
        found = cursor.fetchone()
        if found is None:
            return None
        return dict(zip([d[0] for d in cursor.description], found, strict=True))

    def scalar(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> Any:
        found = self.db.execute(sql, params).fetchone()
        return None if found is None else found[0]

    def get_or_404(self, table: str, column: str, value: Any, *, what: str | None = None) -> dict[str, Any]:
        """The row whose `column` equals `value`, or a 404 naming `what` (default: the table)."""
        found = self.row(_select_by(table, column), (value,))
        if found is None:
            raise not_found(what or table, value)
        return found


# ---- tools, built once per app class ------------------------------------------------------------
@dataclass(frozen=True)
class AppApi:
    attr: str  # the method's name on the class
    spec: ApiSpec
    tool: Tool  # prototype; worlds copy it and swap in a bound caller
    enums: tuple[tuple[str, tuple[Any, ...]], ...]  # params checked for a 400 before the call

    @property
    def name(self) -> str:
        assert self.spec.name is not None
        return self.spec.name

    @property
    def write(self) -> bool:
        return self.spec.write


_CLASS_APIS: dict[type[App], tuple[AppApi, ...]] = {}


def app_apis(cls: type[App]) -> tuple[AppApi, ...]:
    """The APIs of an app class, in definition order (base classes first). Cached per class."""
    found = _CLASS_APIS.get(cls)
    if found is not None:
        return found
    if not cls.name:
        raise TypeError(f"{cls.__qualname__}: an App needs a name")
    methods: dict[str, ApiSpec] = {}
    for klass in reversed(cls.__mro__):
        for attr, value in vars(klass).items():
            spec = getattr(value, _API_ATTR, None)
            if isinstance(spec, ApiSpec):
                methods[attr] = spec
    proto = cls.__new__(cls)  # only for bound-method signatures: self is not in the schema
    apis: list[AppApi] = []
    seen: dict[str, str] = {}
    for attr, spec in methods.items():
        published = spec.name or attr
        if published in seen:
            raise TypeError(
                f"{cls.__qualname__}: API name {published!r} used by {seen[published]} and {attr}"
            )
        seen[published] = attr
        tool = Tool(
            getattr(proto, attr),
            name=published,
            description=cls.api_descriptions.get(published, spec.description),
            category="app",
            mutates_state=spec.write,
            version=f"{cls.name}-{cls.version}" + (f"/{spec.version}" if spec.version else ""),
            backend="mock",
        )
        enums = tuple((p.name, tuple(p.enum)) for p in tool.params if p.enum is not None)
        apis.append(
            AppApi(
                attr=attr,
                spec=ApiSpec(published, spec.write, spec.description, spec.version),
                tool=tool,
                enums=enums,
            )
        )
    result = tuple(apis)
    _CLASS_APIS[cls] = result
    return result


def _check_enums(api: AppApi, kwargs: Mapping[str, Any]) -> None:
    for pname, allowed in api.enums:
        value = kwargs.get(pname)
        if value is None or isinstance(value, (list, tuple, dict)):
            continue
        if value not in allowed:
            raise bad_request(
                f"invalid value {value!r} for {pname!r}; expected one of {list(allowed)}", param=pname
            )


_INTEGRITY_CODES: Final = (
    ("UNIQUE", 409),
    ("PRIMARY KEY", 409),
    ("CHECK", 422),
    ("NOT NULL", 400),
    ("FOREIGN", 404),
)


def integrity_error(exc: sqlite3.IntegrityError) -> AppError:
    """A constraint the schema enforces, as an API error: the schema is the last line of defence."""
    text = str(exc)
    code = next((c for marker, c in _INTEGRITY_CODES if marker in text.upper()), 409)
    return AppError(code, f"constraint failed: {text}")


def _caller(app: App, api: AppApi) -> Callable[..., Any]:
    method: Callable[..., Any] = getattr(app, api.attr)
    store = app.store
    needs_check = bool(api.enums)
    if api.write:

        def call_write(**kwargs: Any) -> Any:
            if needs_check:
                _check_enums(api, kwargs)
            with store.atomic():
                try:
                    return method(**kwargs)
                except sqlite3.IntegrityError as exc:
                    raise integrity_error(exc) from exc

        return call_write

    def call_read(**kwargs: Any) -> Any:
        if needs_check:
            _check_enums(api, kwargs)
        with store.read_only():
            return method(**kwargs)

    return call_read


def bind_tools(app: App, prefix: str = "") -> list[Tool]:
    """The app's tools bound to `app` (already bound to a world): shallow copies, no schema work."""
    tools = []
    for api in app_apis(type(app)):
        t = copy.copy(api.tool)
        t.name = prefix + api.name
        t.fn = _caller(app, api)
        tools.append(t)
    return tools


def validate_app(cls: type[App]) -> list[str]:
    """Problems a new app commonly has, as messages (empty = fine). Cheap; tests call it."""
    problems: list[str] = []
    if not cls.name:
        problems.append("no name")
    if not cls.schema.strip():
        problems.append("no schema")
    try:
        apis = app_apis(cls)
    except TypeError as exc:
        return [*problems, str(exc)]
    if not apis:
        problems.append("no APIs (decorate methods with @read / @write)")
    for a in apis:
        if not a.tool.description:
            problems.append(f"{a.name}: no description (write a docstring)")
    return problems


# ---- argument coercion -------------------------------------------------------------------------------
# Some apps take a JSON number or boolean for a string parameter ("5", "True") because their
# benchmark's own data writes them so (MTU: `people: 5`, `has_wifi: true`). A benchmark that scores
# argument types turns that off for what runs inside `strict_arguments()`: `1` is then no string,
# and the call an `argument_error`.
_STRICT_ARGUMENTS: ContextVar[bool] = ContextVar("toolgym_strict_arguments", default=False)


@contextmanager
def strict_arguments(on: bool = True) -> Iterator[None]:
    """Within it (this thread or task), app tools take arguments of their declared types only."""
    token = _STRICT_ARGUMENTS.set(on)
    try:
        yield
    finally:
        _STRICT_ARGUMENTS.reset(token)


def arguments_strict() -> bool:
    """Whether the calls made now are under `strict_arguments()`."""
    return _STRICT_ARGUMENTS.get()
