"""State store of the mock apps: one in-memory SQLite database per world, with an undo log kept by
triggers so that reset, restore, the state hash and the per-step diff cost O(changes), not O(rows).

How it works
------------
* Every table gets AFTER INSERT/UPDATE/DELETE triggers that append to `_tg_undo` the row's rowid,
  its old values (updates and deletes) and its new values (inserts and updates). The value columns of the log are untyped, so every
  value (REAL, INTEGER, TEXT, BLOB, NULL) comes back exactly: no JSON, no rounding.
* A *position* is the highest `seq` of the log. `rollback_to(pos)` puts every row changed since
  back as it was at `pos`, once per row however often it changed (delete what was inserted, set
  back only the columns that differ, insert what was deleted), and truncates the log.
* Episodes run inside one open transaction, begun when the world is at its template state (the
  *episode transaction*; API calls are savepoints inside it). `reset()` discards it: ROLLBACK puts
  back the original of every page the episode changed, from the pager's in-memory journal, then
  BEGIN starts the next one. O(pages changed), no statement is prepared again, and the size of the
  database does not matter (a copy of a 50 MiB template costs 37–53 ms; see bench/RESULTS.md).
  World connections refuse BEGIN, COMMIT and ROLLBACK from any code but the store's, so nothing
  can commit an episode into the base state. After a fork (the backup API needs the transaction
  committed) the base is no longer the template: until the next reset, `reset()` replays the log
  or copies the template, whichever its estimates say is cheaper (`reset_path`).
* A read runs unguarded by SQLite: the connection's change counter must not move during it; if it
  does, the read's changes are undone from the log and ReadOnlyError raised. World connections
  refuse DDL (an authorizer, consulted only when a statement is prepared).
* The log since a position tells which rows changed; the first record of a row after the position
  holds the row as it was at that position, and the last one the row as it is now, so one query
  on the log gives both (no lookup in the tables: it saved a query per table touched). The
  state hash and the diffs are built from that, never from a table scan.
* State hash: a multiset hash, the sum modulo 2**256 of sha256(canonical_json([table, row])) over
  every row (volatile tables and columns left out), `_tg_meta` included: the simulated clock and
  the id counters decide what the next call answers, so two worlds that differ there must not hash
  the same. It is computed by a full scan once per seeded template; after that every world updates
  it from its changes (a changed counter or clock is one more changed row).
* Templates: seeding happens once per (apps, seed, clock); the seeded database, triggers included,
  is kept as a serialized image and every new world deserializes it (a memcpy, O(size), paid once
  per world and per change of seed, never per reset).

Rules for tables (checked when a template is built): a declared PRIMARY KEY, a rowid (no WITHOUT
ROWID, no virtual tables), no generated columns, no AUTOINCREMENT (sqlite_sequence cannot carry
triggers, so it would not roll back). Foreign keys are not enforced. Tables whose name starts with
`_tg_` are the framework's own: they roll back like the others and stay out of diffs; the hash
covers them (`_tg_meta`; the undo log itself is no tracked table).
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from types import TracebackType
from typing import Any, Final

INTERNAL_PREFIX: Final = "_tg_"
UNDO_TABLE: Final = "_tg_undo"
META_TABLE: Final = "_tg_meta"
BASE_POS: Final = 0  # the log of a freshly loaded template is empty
HASH_BITS: Final = 256
HASH_MODULUS: Final = 1 << HASH_BITS
# Templates use 1 KiB pages, not SQLite's 4 KiB: a reset puts back every page the episode changed,
# and a changed row costs a page; at 1M rows, 1000 writes on random rows are rolled back 2.4x
# faster (bench/HISTORY.md), while writes cost the same. Table rows up to 989 bytes still fit on
# one page.
PAGE_SIZE: int = 1024  # read when a template is built: bench/profile_step.py --page-size sets it

# row digests a table remembers (`TableInfo.digest`); about 0.5 MB at most for a table of 10 columns
DIGESTS_PER_TABLE: Final = 4096
# row digests a store remembers as they are at its hash's position (`Store._hashed_rows`): few
# enough that a reset frees them in microseconds
HASHED_ROWS_KEPT: Final = 1024

Row = dict[str, Any]
Values = tuple[Any, ...]
RowKey = tuple[str, int]  # (table, rowid)
Change = tuple[Values | None, Values | None]  # (row then, row now); None = absent
Changes = dict[RowKey, Change]
TableDiff = dict[str, list[Any]]
Diff = dict[str, TableDiff]
# {table: "*"} leaves a whole table out of the hash; {table: ["col", ...]} leaves columns out.
VolatileSpec = Mapping[str, str | Sequence[str]]

# The same bytes as toolgym.canonical.canonical_json, without building an encoder per call.
_ENCODE: Final = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
).encode


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _quote_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def jsonable(value: Any) -> Any:
    """SQLite values that JSON cannot hold, as tagged objects: BLOBs and infinities."""
    if isinstance(value, bytes):
        return {"$blob": value.hex()}
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return {"$float": repr(value)}
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def from_jsonable(value: Any) -> Any:
    """The SQLite value behind a tagged object of `jsonable` (one level: a column value)."""
    if isinstance(value, dict) and len(value) == 1:
        if "$blob" in value:
            return bytes.fromhex(str(value["$blob"]))
        if "$float" in value:
            return float(str(value["$float"]))
    return value


def row_digest(table: str, row: Mapping[str, Any]) -> int:
    """sha256(canonical_json([table, row])) as an integer: one element of the multiset hash."""
    obj = [table, row]
    try:
        text = _ENCODE(obj)
    except (TypeError, ValueError):  # a BLOB or an infinity: rare, so the fast path stays unchecked
        text = _ENCODE(jsonable(obj))
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest(), "big")


_ENCODE_STR: Final = json.encoder.encode_basestring  # what the encoder uses with ensure_ascii=False
_INT_REPR: Final = int.__repr__
_FLOAT_REPR: Final = float.__repr__


def _encode_fields(head: str, fields: tuple[tuple[int, str], ...], values: Values) -> str | None:
    """canonical_json([table, row]) built straight from a value tuple: the keys are sorted once per
    table, not per row. None when a value needs the general encoder (BLOB, infinity)."""
    parts = [head]
    for i, key in fields:
        v = values[i]
        t = type(v)
        if t is str:
            parts.append(key + _ENCODE_STR(v))
        elif t is int:
            parts.append(key + _INT_REPR(v))
        elif v is None:
            parts.append(key + "null")
        elif t is float and v - v == 0.0:  # finite
            parts.append(key + _FLOAT_REPR(v))
        else:
            return None
    parts.append("}]")
    return "".join(parts)


def format_hash(acc: int) -> str:
    return format(acc % HASH_MODULUS, "064x")


def _same(a: Values, b: Values) -> bool:
    # 1 == 1.0 in Python, but canonical JSON tells them apart, so the types must match too
    return a == b and tuple(map(type, a)) == tuple(map(type, b))


class StoreError(RuntimeError):
    """Misuse of the store: a schema it cannot track, a hash asked for inside a call, ..."""


class ReadOnlyError(StoreError):
    """A read API changed the database: what it changed is undone and the call fails."""


class TableInfo:
    """What the store knows about one table: columns, key, what the hash covers, its undo SQL."""

    __slots__ = (
        "_digests",
        "_fields",
        "_fields_scan",
        "_head",
        "_sql_restore",
        "columns",
        "hashed",
        "hashed_idx",
        "in_hash",
        "internal",
        "name",
        "pk",
        "sql_delete",
        "sql_insert",
        "sql_scan_hashed",
        "sql_update",
    )

    def __init__(
        self, name: str, columns: Sequence[str], pk: Sequence[str], volatile: str | Sequence[str]
    ) -> None:
        self.name = name
        self.columns = tuple(columns)
        self.pk = tuple(pk)
        self.internal = name.startswith(INTERNAL_PREFIX)
        whole = volatile == "*"
        dropped = set() if whole else ({volatile} if isinstance(volatile, str) else set(volatile))
        unknown = dropped - set(self.columns)
        if unknown:
            raise StoreError(f"table {name!r}: volatile columns {sorted(unknown)} do not exist")
        # the framework's tables too: the clock and id counters in _tg_meta are state
        self.in_hash = not whole
        self.hashed = tuple(c for c in self.columns if c not in dropped)
        self.hashed_idx = tuple(self.columns.index(c) for c in self.hashed)
        # canonical JSON sorts keys: do it once here; "_fields" index full rows, "_fields_scan"
        # rows of sql_scan_hashed (the hashed columns only)
        self._head = "[" + _ENCODE_STR(name) + ",{"
        ordered = sorted(zip(self.hashed, self.hashed_idx, range(len(self.hashed)), strict=True))
        keys = [("," if k else "") + _ENCODE_STR(col) + ":" for k, (col, _, _) in enumerate(ordered)]
        self._fields = tuple((idx, key) for (_, idx, _), key in zip(ordered, keys, strict=True))
        self._fields_scan = tuple((pos, key) for (_, _, pos), key in zip(ordered, keys, strict=True))
        q = quote_ident(name)
        cols = ", ".join(quote_ident(c) for c in self.columns)
        marks = ", ".join("?" for _ in self.columns)
        self.sql_delete = f"DELETE FROM {q} WHERE rowid = ?"
        self.sql_update = (
            f"UPDATE {q} SET {', '.join(f'{quote_ident(c)} = ?' for c in self.columns)} WHERE rowid = ?"
        )
        self.sql_insert = f"INSERT INTO {q}(rowid, {cols}) VALUES(?, {marks})"
        self.sql_scan_hashed = f"SELECT {', '.join(quote_ident(c) for c in self.hashed)} FROM {q}"
        self._sql_restore: dict[tuple[int, ...], str] = {}
        self._digests: dict[Values, tuple[tuple[type, ...], int]] = {}  # values -> (their types, digest)

    def sql_restore(self, changed: tuple[int, ...]) -> str:
        """UPDATE of only the columns at `changed` (by rowid): setting a key or an indexed column
        that did not change would rewrite its index entries for nothing (10x slower at 1M rows)."""
        sql = self._sql_restore.get(changed)
        if sql is None:
            sets = ", ".join(f"{quote_ident(self.columns[i])} = ?" for i in changed)
            sql = self._sql_restore[changed] = f"UPDATE {quote_ident(self.name)} SET {sets} WHERE rowid = ?"
        return sql

    def as_row(self, values: Values) -> Row:
        """A row as a JSON-ready dict of all its columns."""
        row = dict(zip(self.columns, values, strict=True))
        for v in values:  # SQLite gives exact types: a BLOB is bytes, a REAL a float
            kind = type(v)
            if kind is bytes or (kind is float and not math.isfinite(v)):
                tagged: Row = jsonable(row)
                return tagged
        return row

    def digest(self, values: Values) -> int:
        """row_digest of the row's hashed columns, from a full row tuple. Remembered per table
        (the template's, shared by its worlds): episodes of one task change the same rows from
        the same values to the same values, so most digests a step needs were computed before."""
        found = self._digests.get(values)
        # a key equal to `values` was found; 1 == 1.0, but their JSON differs: the types must match
        if found is not None and found[0] == tuple(map(type, values)):
            return found[1]
        text = _encode_fields(self._head, self._fields, values)
        if text is None:
            return row_digest(
                self.name, {c: values[i] for c, i in zip(self.hashed, self.hashed_idx, strict=True)}
            )
        digest = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest(), "big")
        if len(self._digests) >= DIGESTS_PER_TABLE:
            self._digests.clear()  # bounded: start again rather than track recency
        self._digests[values] = (tuple(map(type, values)), digest)
        return digest

    def digest_scanned(self, values: Values) -> int:
        """The same, from a row of sql_scan_hashed."""
        text = _encode_fields(self._head, self._fields_scan, values)
        if text is None:
            return row_digest(self.name, dict(zip(self.hashed, values, strict=True)))
        return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest(), "big")

    def key_of(self, values: Values) -> tuple[Any, ...]:
        return tuple(values[self.columns.index(c)] for c in self.pk)

    def __repr__(self) -> str:
        return f"TableInfo({self.name!r}, columns={self.columns}, pk={self.pk})"


@dataclass(eq=False)
class Template:
    """A seeded database image, shared read-only by every world built from it."""

    key: Hashable
    image: bytes
    tables: Mapping[str, TableInfo]
    undo_width: int
    base_acc: int | None = None  # hash accumulator of the seeded state, filled once, lazily


def connect() -> sqlite3.Connection:
    """An in-memory connection as the store wants it: autocommit (we manage transactions) and
    recursive triggers on, so that rows deleted by REPLACE conflict resolution are logged too."""
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False, cached_statements=512)
    conn.execute("PRAGMA recursive_triggers = ON")
    return conn


# schema changes a world's connection refuses: a table made after the template would not roll back
_SCHEMA_ACTIONS: Final = frozenset(
    getattr(sqlite3, name)
    for name in dir(sqlite3)
    if name.startswith(("SQLITE_CREATE_", "SQLITE_DROP_"))
    or name in ("SQLITE_ALTER_TABLE", "SQLITE_ATTACH", "SQLITE_DETACH")
)


# The store's own transaction statements. SQLite consults the authorizer only when it prepares a
# statement, and the connection caches prepared statements by their text: texts no API would
# write keep an API's plain "COMMIT" from reusing a statement the store had authorized.
_BEGIN_EPISODE: Final = "BEGIN /* toolgym: episode */"
_COMMIT_EPISODE: Final = "COMMIT /* toolgym: episode */"
_ROLLBACK_EPISODE: Final = "ROLLBACK /* toolgym: episode */"


class WorldAuthorizer:
    """A world connection's authorizer. It refuses DDL: the store tracks only the template's
    tables, and a read's guard counts row changes only. It refuses transaction control (BEGIN,
    COMMIT, ROLLBACK; savepoints stay allowed) unless `own_transactions` is set while the store
    runs its own: a COMMIT would make an episode's changes the state a reset goes back to."""

    __slots__ = ("own_transactions",)

    def __init__(self) -> None:
        self.own_transactions = False

    def __call__(self, action: int, *_: str | None) -> int:
        if action in _SCHEMA_ACTIONS:
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_TRANSACTION and not self.own_transactions:
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK


def world_connection(
    image: bytes | None = None,
    source: sqlite3.Connection | None = None,
    authorizer: WorldAuthorizer | None = None,
) -> sqlite3.Connection:
    """A world's connection: the template `image` deserialized, or a page copy of `source`,
    guarded by `authorizer` (checked when a statement is prepared, so the hot path pays nothing)."""
    conn = connect()
    if source is not None:
        source.backup(conn)  # one page copy; serialize + deserialize would copy three times
    elif image is not None:
        conn.deserialize(image)
    conn.set_authorizer(WorldAuthorizer() if authorizer is None else authorizer)
    return conn


def _inspect_tables(conn: sqlite3.Connection, volatile: VolatileSpec) -> dict[str, TableInfo]:
    tables: dict[str, TableInfo] = {}
    names = [
        (name, sql or "")
        for name, sql in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name"
        ).fetchall()
    ]
    for name, sql in names:
        if name == "sqlite_sequence":
            raise StoreError("AUTOINCREMENT is not supported (it cannot roll back); use INTEGER PRIMARY KEY")
        if name.startswith("sqlite_"):
            continue
        if sql.upper().startswith("CREATE VIRTUAL TABLE"):
            raise StoreError(
                f"table {name!r}: virtual tables (FTS, ...) cannot be tracked; use LIKE or instr()"
            )
        info = conn.execute(f"PRAGMA table_xinfo({quote_ident(name)})").fetchall()
        if any(hidden for *_, hidden in info):
            raise StoreError(f"table {name!r}: generated or hidden columns are not supported")
        try:
            conn.execute(f"SELECT rowid FROM {quote_ident(name)} LIMIT 0")
        except sqlite3.OperationalError:
            raise StoreError(f"table {name!r}: WITHOUT ROWID tables are not supported") from None
        columns = [row[1] for row in info]
        pk = [row[1] for row in sorted((r for r in info if r[5]), key=lambda r: r[5])]
        if not pk:
            raise StoreError(f"table {name!r} has no PRIMARY KEY; every mock table needs one")
        tables[name] = TableInfo(name, columns, pk, volatile.get(name, ()))
    unknown = set(volatile) - set(tables)
    if unknown:
        raise StoreError(f"volatile tables {sorted(unknown)} do not exist")
    return tables


def _install_undo(conn: sqlite3.Connection, tables: Mapping[str, TableInfo]) -> int:
    """The undo log and its triggers. A record holds the row as it was before the change (`v*`,
    for updates and deletes) and as it is after it (`n*`, for inserts and updates), so the rows
    changed since a position come out of one query on the log, then and now, with no lookup in
    the tables themselves."""
    width = max((len(t.columns) for t in tables.values()), default=0)
    conn.execute(
        f"CREATE TABLE {UNDO_TABLE}(seq INTEGER PRIMARY KEY, tbl TEXT NOT NULL, op TEXT NOT NULL,"
        f" rid INTEGER NOT NULL{_log_columns(width)})"
    )
    for t in tables.values():
        q, lit = quote_ident(t.name), _quote_literal(t.name)
        into_old = ", ".join(f"v{i}" for i in range(len(t.columns)))
        into_new = ", ".join(f"n{i}" for i in range(len(t.columns)))
        olds = ", ".join(f"old.{quote_ident(c)}" for c in t.columns)
        news = ", ".join(f"new.{quote_ident(c)}" for c in t.columns)
        log_old = f"INSERT INTO {UNDO_TABLE}(tbl, op, rid, {into_old}) VALUES({lit}, 'D', old.rowid, {olds});"
        log_new = f"INSERT INTO {UNDO_TABLE}(tbl, op, rid, {into_new}) VALUES({lit}, 'I', new.rowid, {news});"
        log_both = (
            f"INSERT INTO {UNDO_TABLE}(tbl, op, rid, {into_old}, {into_new})"
            f" VALUES({lit}, 'U', old.rowid, {olds}, {news});"
        )

        def trig(kind: str, name: str = t.name) -> str:
            return quote_ident(f"_tg_{kind}_{name}")

        conn.execute(f"CREATE TRIGGER {trig('i')} AFTER INSERT ON {q} BEGIN {log_new} END")
        conn.execute(
            f"CREATE TRIGGER {trig('u')} AFTER UPDATE ON {q} WHEN old.rowid = new.rowid BEGIN {log_both} END"
        )
        # an update that moves the rowid (an INTEGER PRIMARY KEY changed) is a delete plus an insert
        conn.execute(
            f"CREATE TRIGGER {trig('m')} AFTER UPDATE ON {q} WHEN old.rowid <> new.rowid"
            f" BEGIN {log_old} {log_new} END"
        )
        conn.execute(f"CREATE TRIGGER {trig('d')} AFTER DELETE ON {q} BEGIN {log_old} END")
    return width


def build_template(
    key: Hashable, setup: Callable[[sqlite3.Connection], None], volatile: VolatileSpec | None = None
) -> Template:
    """Run `setup` (schema and seed data) on a fresh database, then add the undo machinery.
    The `_tg_meta` key/value table (counters, clock) exists before `setup` runs."""
    conn = connect()
    try:
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # before the first table
        conn.execute(f"CREATE TABLE {META_TABLE}(key TEXT PRIMARY KEY, value)")
        setup(conn)
        if conn.in_transaction:
            conn.execute("COMMIT")
        tables = _inspect_tables(conn, volatile or {})
        width = _install_undo(conn, tables)
        image = conn.serialize()
    finally:
        conn.close()
    return Template(key=key, image=image, tables=tables, undo_width=width)


def template_to_bytes(template: Template) -> bytes:
    """A template as bytes for a disk cache: a JSON line (each table's name, columns and key, the
    undo width, the seeded state's hash accumulator) and the database image. The volatile parts
    are not stored: `template_from_bytes` takes them from the apps, as `build_template` did."""
    if template.base_acc is None:
        store = Store(template)
        try:
            template.base_acc = store.full_acc()
        finally:
            store.close()
    head = {
        "tables": [[t.name, list(t.columns), list(t.pk)] for t in template.tables.values()],
        "undo_width": template.undo_width,
        "base_acc": str(template.base_acc),
    }
    return json.dumps(head).encode("utf-8") + b"\n" + template.image


def template_from_bytes(key: Hashable, data: bytes, volatile: VolatileSpec | None = None) -> Template:
    """The inverse of `template_to_bytes`; ValueError (or StoreError) for bytes it did not write."""
    line, sep, image = data.partition(b"\n")
    if not sep or not image.startswith(b"SQLite format 3\x00"):
        raise ValueError("not a template image")
    head = json.loads(line)
    spec = volatile or {}
    tables = {name: TableInfo(name, columns, pk, spec.get(name, ())) for name, columns, pk in head["tables"]}
    unknown = set(spec) - set(tables)
    if unknown:
        raise StoreError(f"volatile tables {sorted(unknown)} do not exist")
    return Template(
        key=key,
        image=image,
        tables=tables,
        undo_width=int(head["undo_width"]),
        base_acc=int(head["base_acc"]),
    )


class TemplateCache:
    """Seeded templates by key, least recently used dropped first. Building is serialized per
    cache, so parallel envs asking for the same (apps, seed, clock) seed it once."""

    def __init__(self, max_entries: int = 64) -> None:
        self.max_entries = max_entries
        self._items: OrderedDict[Hashable, Template] = OrderedDict()
        self._lock = threading.RLock()

    def get(self, key: Hashable, build: Callable[[], Template]) -> Template:
        with self._lock:
            found = self._items.get(key)
            if found is None:
                found = build()
                self._items[key] = found
                while len(self._items) > self.max_entries:
                    self._items.popitem(last=False)
            else:
                self._items.move_to_end(key)
            return found

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


TEMPLATES: Final = TemplateCache()


class _Atomic:
    """SAVEPOINT around one API call: all of it happens, or none of it."""

    __slots__ = ("_store",)

    def __init__(self, store: Store) -> None:
        self._store = store

    def __enter__(self) -> None:
        self._store.conn.execute("SAVEPOINT tg_call")
        self._store._depth += 1

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        store = self._store
        store._depth -= 1
        if exc_type is None:
            store.conn.execute("RELEASE tg_call")
            return
        store.conn.execute("ROLLBACK TO tg_call")
        store.conn.execute("RELEASE tg_call")
        store._rolled_back_call()


class _ReadOnly:
    """A read must leave the connection's change counter (rows inserted, updated or deleted,
    triggers included) where it was; if it moved, the read's changes are undone from the undo log
    and ReadOnlyError is raised. Outside a write this costs two attribute reads: the log position
    to go back to is the store's cached top. Inside a write (a read called from a write's
    savepoint) a nested savepoint does the undoing. Not `PRAGMA query_only`: switching a flag
    pragma expires every prepared statement of the connection, so each read made the next
    statements be prepared again (+110 µs on the next write)."""

    __slots__ = ("_changes", "_pos", "_store")

    def __init__(self, store: Store) -> None:
        self._store = store
        self._changes = 0
        self._pos: int | None = None

    def __enter__(self) -> None:
        store = self._store
        if store._readonly_depth == 0:
            if store._depth:
                self._pos = None
                store.conn.execute("SAVEPOINT tg_read")
            else:
                self._pos = store.top()
            self._changes = store.conn.total_changes
        store._readonly_depth += 1

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        store = self._store
        store._readonly_depth -= 1
        if store._readonly_depth:
            return
        conn = store.conn
        wrote = conn.total_changes != self._changes
        if self._pos is None:
            if wrote:
                conn.execute("ROLLBACK TO tg_read")
            conn.execute("RELEASE tg_read")
        elif wrote:
            if conn.in_transaction and not store.in_episode:  # a read left a savepoint open
                store._transaction(_ROLLBACK_EPISODE)
            store._replay(self._pos)
        if wrote:
            store._rolled_back_call()
            raise ReadOnlyError("a read API wrote to the database; its changes were undone") from exc


def _log_columns(width: int) -> str:
    """The value columns of the undo log, old then new, as a column list tail (its DDL, its SELECT)."""
    return "".join(f", v{i}" for i in range(width)) + "".join(f", n{i}" for i in range(width))


def _log_query(width: int) -> str:
    """The records of the log after a position, in order (seq first: the last one read is the top)."""
    return f"SELECT seq, tbl, op, rid{_log_columns(width)} FROM {UNDO_TABLE} WHERE seq > ? ORDER BY seq"


class Store:
    """One world's database plus its positions: checkpoints, where the hash and the diff stand."""

    # Without an episode transaction (after a fork), reset picks the cheaper of undo replay and a
    # fresh copy of the template by these estimates
    # (nanoseconds; measured with bench/profile_step.py on the 2-core machine, bench/HISTORY.md, "Where a mock-app step...").
    # A copy is a new connection, so the statements it had prepared are prepared again on the next
    # steps: COPY_NS_FIXED counts that too.
    UNDO_NS_PER_RECORD: int = 5000
    COPY_NS_FIXED: int = 250_000
    COPY_NS_PER_BYTE: float = 0.65

    def __init__(self, template: Template, *, source: sqlite3.Connection | None = None) -> None:
        self._authorizer = WorldAuthorizer()
        self.conn = world_connection(template.image if source is None else None, source, self._authorizer)
        self.template = template
        self.last_reset_path: str | None = None  # "discard", "undo" or "copy": the latest reset's
        # True while the episode transaction is open: ROLLBACK then goes back to the template
        self.in_episode = False
        self.epoch = 0  # bumped by every rollback: anything cached from the database is stale
        self._checkpoints: dict[str, int] = {}
        self._acc: int | None = None  # hash accumulator at _hash_pos, None = not known yet
        # (table, rowid) -> the row's digest as it is at _hash_pos, for rows the hash moved over
        # since _acc was last set afresh: a row a step changes was most often changed before
        self._hashed_rows: dict[RowKey, int] = {}
        self._hash_pos = BASE_POS
        self._diff_pos = BASE_POS
        self._depth = 0  # open atomic() blocks
        self._readonly_depth = 0
        self._top_cache = (-1, BASE_POS)  # (conn.total_changes, top) when top was last read
        # (pos, total changes, epoch) -> (every table's changes, the user tables' part): a step asks for
        # the hash and then the diff from the same position, and the log is read once for both
        self._memo: tuple[tuple[int, int, int], tuple[Changes, Changes]] | None = None
        self._sql_log = _log_query(template.undo_width)
        if source is None:  # at the template state; a fork starts at its parent's state
            self._begin_episode()

    # ---- basics ---------------------------------------------------------------------------
    @property
    def tables(self) -> Mapping[str, TableInfo]:
        return self.template.tables

    @property
    def user_tables(self) -> list[str]:
        return [name for name, t in self.tables.items() if not t.internal]

    def top(self) -> int:
        """The current log position. Cached by the connection's change counter: the log grows
        only by changes, which move the counter; rollbacks, which do not, drop the cache."""
        changes = self.conn.total_changes
        if self._top_cache[0] == changes:
            return self._top_cache[1]
        value = self.conn.execute(f"SELECT max(seq) FROM {UNDO_TABLE}").fetchone()[0]
        top = int(value or 0)
        self._top_cache = (changes, top)
        return top

    def _rolled_back_call(self) -> None:
        """After a call's changes were rolled back: caches may hold values of the undone changes."""
        self.epoch += 1  # the clock's and changes_since's caches
        self._memo = None
        self._top_cache = (-1, BASE_POS)

    def log_length(self, since: int = BASE_POS) -> int:
        return int(
            self.conn.execute(f"SELECT count(*) FROM {UNDO_TABLE} WHERE seq > ?", (since,)).fetchone()[0]
        )

    def _require_idle(self, what: str) -> None:
        if self._depth:
            raise StoreError(f"{what} is not allowed inside an API call (an open savepoint)")

    def atomic(self) -> _Atomic:
        """`with store.atomic(): ...` runs the block in a savepoint; an exception undoes it all."""
        return _Atomic(self)

    def read_only(self) -> _ReadOnly:
        """`with store.read_only(): ...`: a block that changes rows is undone and raises
        ReadOnlyError, so a read API that writes by mistake cannot corrupt an episode."""
        return _ReadOnly(self)

    # ---- counters and meta ------------------------------------------------------------------
    def next_counter(self, name: str, count: int = 1) -> int:
        """Advance a named counter by `count` and return its new value (the first call gives
        `count`). Stored in the database, so it rolls back with everything else."""
        row = self.conn.execute(
            f"INSERT INTO {META_TABLE}(key, value) VALUES(?, ?)"
            " ON CONFLICT(key) DO UPDATE SET value = value + excluded.value RETURNING value",
            ("counter:" + name, count),
        ).fetchone()
        return int(row[0])

    def get_meta(self, key: str, default: Any = None) -> Any:
        row = self.conn.execute(f"SELECT value FROM {META_TABLE} WHERE key = ?", (key,)).fetchone()
        return default if row is None else row[0]

    def set_meta(self, key: str, value: Any) -> None:
        self.conn.execute(
            f"INSERT INTO {META_TABLE}(key, value) VALUES(?, ?)"
            " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    # ---- rollback ----------------------------------------------------------------------------
    def _changed_rows(self, pos: int) -> Changes:
        """Every row changed after `pos` (the framework's tables too) as it was then and as it is
        now (None: absent), from the log alone: the first record of a row after `pos` holds it as
        it was (an insert: absent), the last one as it is (a delete: absent). Rows absent at both
        ends, or put back as they were, are included; callers drop what they must."""
        tables = self.tables
        width = self.template.undo_width
        out: Changes = {}
        record = None
        for record in self.conn.execute(self._sql_log, (pos,)):
            t = tables[record[1]]
            key = (record[1], record[3])
            op = record[2]
            n = len(t.columns)
            now = None if op == "D" else record[4 + width : 4 + width + n]
            found = out.get(key)
            if found is None:
                out[key] = (None if op == "I" else record[4 : 4 + n], now)
            else:
                out[key] = (found[0], now)
        if record is not None:  # the last record read is the top of the log: no max(seq) query
            self._top_cache = (self.conn.total_changes, record[0])
        return out

    def rollback_to(self, pos: int) -> None:
        """Undo every change logged after `pos`: O(rows changed since pos), each row once however
        often it changed. Rows absent at `pos` are deleted, rows changed get back only the columns
        that differ, rows deleted are inserted again, in that order: every state on the way is a
        subset of the state at `pos` plus rows being put back, so constraints hold (a cycle of
        unique values between changed rows falls back to deleting and inserting them)."""
        self._require_idle("rollback")
        self._replay(pos)
        self._rolled_back(pos)

    def _replay(self, pos: int) -> None:
        """The database part of rollback_to: the rows back as they were at `pos`, the log cut."""
        changes = self._changed_rows(pos) if self.top() > pos else {}
        if changes:
            deletes: dict[str, list[tuple[int]]] = {}
            inserts: dict[str, list[Values]] = {}
            updates: dict[tuple[str, tuple[int, ...]], list[Values]] = {}
            # in rowid order: neighbouring rows share B-tree pages (2x faster at 1M rows)
            for (tbl, rid), (old, new) in sorted(changes.items(), key=itemgetter(0)):
                if old is None:
                    if new is not None:
                        deletes.setdefault(tbl, []).append((rid,))
                elif new is None:
                    inserts.setdefault(tbl, []).append((rid, *old))
                elif not _same(old, new):
                    changed = tuple(
                        i
                        for i, (x, y) in enumerate(zip(old, new, strict=True))
                        if x != y or type(x) is not type(y)
                    )
                    updates.setdefault((tbl, changed), []).append((*(old[i] for i in changed), rid))
            conn = self.conn
            # a savepoint, not BEGIN: inside the episode transaction as well as outside it
            conn.execute("SAVEPOINT tg_replay")
            try:
                for tbl, rows in deletes.items():
                    conn.executemany(self.tables[tbl].sql_delete, rows)
                if updates:
                    self._restore_changed(updates, changes, inserts)
                for tbl, vals in inserts.items():
                    conn.executemany(self.tables[tbl].sql_insert, vals)
                # the replay logged itself too: everything after pos goes
                conn.execute(f"DELETE FROM {UNDO_TABLE} WHERE seq > ?", (pos,))
                conn.execute("RELEASE tg_replay")
            except BaseException:
                conn.execute("ROLLBACK TO tg_replay")
                conn.execute("RELEASE tg_replay")
                self._top_cache = (-1, BASE_POS)
                raise

    def _restore_changed(
        self,
        updates: Mapping[tuple[str, tuple[int, ...]], list[Values]],
        changes: Changes,
        inserts: dict[str, list[Values]],
    ) -> None:
        """UPDATE the changed rows back; if two of them swapped a unique value, delete them all
        instead and leave them to the inserts (any order of inserts of the old rows fits)."""
        conn = self.conn
        conn.execute("SAVEPOINT tg_restore")
        try:
            for (tbl, changed), rows in updates.items():
                conn.executemany(self.tables[tbl].sql_restore(changed), rows)
        except sqlite3.IntegrityError:
            conn.execute("ROLLBACK TO tg_restore")
            for (tbl, _), rows in updates.items():
                rids = [r[-1] for r in rows]
                conn.executemany(self.tables[tbl].sql_delete, [(rid,) for rid in rids])
                for rid in rids:
                    old = changes[(tbl, rid)][0]
                    assert old is not None  # only rows present at pos are updated
                    inserts.setdefault(tbl, []).append((rid, *old))
        conn.execute("RELEASE tg_restore")

    def _rolled_back(self, pos: int) -> None:
        """Forget what the database no longer holds: caches, later checkpoints, a later hash."""
        self.epoch += 1
        self._memo = None
        self._checkpoints = {n: p for n, p in self._checkpoints.items() if p <= pos}
        if self._hash_pos > pos:  # the hash was taken in a state that no longer exists
            self._acc, self._hash_pos = None, BASE_POS
            self._hashed_rows = {}
        self._diff_pos = pos

    def reset_path(self) -> str:
        """What `reset()` would do now: "discard" (roll the episode transaction back) while one is
        open and the log is not empty, else "undo" (replay the log) or "copy" (a fresh copy of the
        template), whichever the estimates say is cheaper for this log and this database."""
        if self.in_episode:  # it restores only the pages the episode changed: always the cheapest,
            # but for an empty log: then the rows are the template's and the undo is a no-op
            return "discard" if self.top() > BASE_POS else "undo"
        undo_ns = (self.top() - BASE_POS) * self.UNDO_NS_PER_RECORD  # seq has no gaps after BASE_POS
        copy_ns = self.COPY_NS_FIXED + len(self.template.image) * self.COPY_NS_PER_BYTE
        return "copy" if copy_ns < undo_ns else "undo"

    def reset(self, how: str = "auto") -> None:
        """Back to the seeded state; drops every checkpoint. `how`: "auto" (the cheapest, see
        reset_path), "discard", "undo" or "copy" (tests and benchmarks force one)."""
        self._require_idle("reset")
        path = self.reset_path() if how == "auto" else how
        if path not in ("discard", "undo", "copy"):
            raise ValueError(f"reset how={how!r}: expected 'auto', 'discard', 'undo' or 'copy'")
        if path == "discard" and not self.in_episode:
            raise StoreError("reset how='discard': no episode transaction (a fork committed it)")
        self._checkpoints.clear()
        if path == "discard":
            self._transaction(_ROLLBACK_EPISODE)
            self.in_episode = False
            self._begin_episode()
            self._at_base()
        elif path == "copy":
            self._replace_connection(self.template)
        else:
            self.rollback_to(BASE_POS)
            if not self.in_episode:  # the database is at the template state again
                self._begin_episode()
        self.last_reset_path = path

    def _transaction(self, sql: str) -> None:
        """Run one of the store's own transaction statements (the authorizer refuses others')."""
        self._authorizer.own_transactions = True
        try:
            self.conn.execute(sql)
        finally:
            self._authorizer.own_transactions = False

    def _begin_episode(self) -> None:
        """Open the episode transaction; the database must be at the template state."""
        self._transaction(_BEGIN_EPISODE)
        self.in_episode = True

    def _at_base(self) -> None:
        """The database holds the template state and an empty log: every position starts again."""
        self._checkpoints.clear()
        self._acc, self._hash_pos, self._diff_pos = None, BASE_POS, BASE_POS
        self._hashed_rows = {}
        self._memo = None
        self._top_cache = (-1, BASE_POS)  # the change counter did not move (rollback) or restarted
        self.epoch += 1

    def checkpoint(self, name: str) -> None:
        self._require_idle("checkpoint")
        self._checkpoints.pop(name, None)  # a re-used name moves to the end: it is the newest now
        self._checkpoints[name] = self.top()

    def restore(self, name: str) -> None:
        """Back to a checkpoint; checkpoints taken after it are dropped, it stays usable."""
        if name not in self._checkpoints:
            raise KeyError(f"no checkpoint {name!r}; have {list(self._checkpoints)}")
        names = list(self._checkpoints)
        for later in names[names.index(name) + 1 :]:
            del self._checkpoints[later]
        self.rollback_to(self._checkpoints[name])

    @property
    def checkpoints(self) -> list[str]:
        return list(self._checkpoints)

    def _replace_connection(self, template: Template) -> None:
        """A new connection on a copy of `template`'s image: O(size), the log empty.
        A fresh connection, not deserialize() in place: deserializing drops the schema objects
        that statements the connection has prepared still point to."""
        self._require_idle("load")
        conn = world_connection(template.image, authorizer=self._authorizer)
        self.conn.close()
        self.conn = conn
        self.template = template
        self._sql_log = _log_query(template.undo_width)
        self.in_episode = False
        self._begin_episode()
        self._at_base()

    def load(self, template: Template) -> None:
        """Replace the whole database with another template's (another seed): O(size)."""
        self._replace_connection(template)

    def fork(self) -> Store:
        """An independent copy, checkpoints and log included: O(size) (the backup API). The
        backup API copies only committed pages, so the episode transaction is committed first:
        until their next reset, this store and the copy reset by undo or copy, not discard."""
        self._require_idle("fork")
        if self.in_episode:
            self._transaction(_COMMIT_EPISODE)
            self.in_episode = False
        other = Store(self.template, source=self.conn)
        other._checkpoints = dict(self._checkpoints)
        other._acc, other._hash_pos, other._diff_pos = self._acc, self._hash_pos, self._diff_pos
        other._hashed_rows = dict(self._hashed_rows)
        return other

    def close(self) -> None:
        self.conn.close()

    # ---- changes, hash, diff -----------------------------------------------------------------
    def changes_since(self, pos: int) -> Changes:
        """Rows of the user tables that differ between position `pos` and now: O(changes)."""
        return self._changes(pos)[1]

    def _changes(self, pos: int) -> tuple[Changes, Changes]:
        """Rows that differ between position `pos` and now, O(changes): those of every table
        (what the hash moves by) and those of the user tables (what diffs show)."""
        self._require_idle("changes_since")
        # the change counter, not the top: reading the top after a write is a query of its own
        memo_key = (pos, self.conn.total_changes, self.epoch)
        if self._memo is not None and self._memo[0] == memo_key:
            return self._memo[1]
        top = self._top_cache
        changed = {} if top[0] == memo_key[1] and top[1] <= pos else self._changed_rows(pos)
        tables = self.tables
        every: Changes = {}
        user: Changes = {}
        for key, (old, new) in changed.items():
            if old is None and new is None:
                continue
            if old is not None and new is not None and _same(old, new):
                continue
            every[key] = (old, new)
            if not tables[key[0]].internal:
                user[key] = (old, new)
        self._memo = (memo_key, (every, user))
        return every, user

    def effects_since(self, pos: int) -> list[Any]:
        """Every row (internal tables included: counters, the clock) that changed after `pos`, as
        JSON `[table, rowid, old values or None, new values or None]`, exact SQLite values: what a
        cassette records so that replay can make the same change without running the API."""
        out: list[Any] = []
        for key, (old, new) in sorted(self._changed_rows(pos).items()):
            if old is None and new is None:
                continue
            out.append(
                [key[0], key[1], jsonable(list(old)) if old else None, jsonable(list(new)) if new else None]
            )
        return out

    def apply_effects(self, effects: list[Any]) -> None:
        """Make the changes `effects_since` listed, in one transaction through the logged
        connection, so the undo log, diff and state hash see them as if the API had made them."""
        deletes, updates, inserts = [], [], []
        for tbl, rid, old, new in effects:
            t = self.tables[tbl]
            if new is None:
                deletes.append((t.sql_delete, (rid,)))
                continue
            values = [from_jsonable(v) for v in new]
            if old is None:
                inserts.append((t.sql_insert, (rid, *values)))
            else:
                updates.append((t.sql_update, (*values, rid)))
        with self.atomic():
            # deletes first, inserts last: a row replaced under the same unique key fits
            for sql, params in (*deletes, *updates, *inserts):
                self.conn.execute(sql, params)
        self.epoch += 1  # cached reads (the clock) may predate the rows just written

    def _apply(self, acc: int, changes: Changes, sign: int = 1) -> int:
        """Move an accumulator along `changes` (sign=-1: backwards)."""
        tables = self.tables
        for (tbl, _rid), (old, new) in changes.items():
            t = tables[tbl]
            if not t.in_hash:
                continue
            if old is not None:
                acc -= sign * t.digest(old)
            if new is not None:
                acc += sign * t.digest(new)
        return acc % HASH_MODULUS

    def _move_acc(self, acc: int, changes: Changes) -> int:
        """`_apply` from _hash_pos forwards, remembering each row's new digest in `_hashed_rows`,
        where a row's digest as it was at _hash_pos is found without encoding or looking up its
        old values (bounded: forgotten all at once, as the tables' digests are)."""
        tables = self.tables
        known = self._hashed_rows
        if len(known) >= HASHED_ROWS_KEPT:
            known.clear()  # then every old row's digest comes from `TableInfo.digest`, as before
        for key, (old, new) in changes.items():
            t = tables[key[0]]
            if not t.in_hash:
                continue
            if old is not None:
                before = known.get(key)
                acc -= t.digest(old) if before is None else before
            if new is None:
                known.pop(key, None)
            else:
                after = t.digest(new)
                acc += after
                known[key] = after
        return acc % HASH_MODULUS

    def full_acc(self) -> int:
        """The hash accumulator by a full scan: O(rows). Used once per template, and by tests."""
        self._require_idle("full_acc")
        acc = 0
        for t in self.tables.values():
            if t.in_hash:
                acc += sum(map(t.digest_scanned, self.conn.execute(t.sql_scan_hashed)))
        return acc % HASH_MODULUS

    def full_hash(self) -> str:
        return format_hash(self.full_acc())

    def state_acc(self) -> int:
        self._require_idle("state_hash")
        if self._acc is None:
            base = self.template.base_acc
            if base is None:
                # first hash ever asked of this template: scan once, then step back to the seeded state
                base = self._apply(self.full_acc(), self._changes(BASE_POS)[0], sign=-1)
                self.template.base_acc = base
            self._acc, self._hash_pos = base, BASE_POS
            self._hashed_rows = {}
        cached = self._top_cache
        if cached[0] != self.conn.total_changes or cached[1] != self._hash_pos:  # the log moved
            every = self._changes(self._hash_pos)[0]  # reads the top too, where anything changed
            self._acc = self._move_acc(self._acc, every)
            self._hash_pos = self.top()
        return self._acc

    def state_hash(self) -> str:
        """Canonical hash of all tables (user rows, the clock and the id counters), volatile
        parts left out: 64 hex digits."""
        return format_hash(self.state_acc())

    def format_diff(self, changes: Changes) -> Diff:
        out: Diff = {}
        tables = self.tables
        for tbl, rid in sorted(changes):
            old, new = changes[(tbl, rid)]
            t = tables[tbl]
            entry = out.setdefault(tbl, {"added": [], "removed": [], "changed": []})
            if old is None:
                assert new is not None  # changes_since drops rows absent at both ends
                entry["added"].append(t.as_row(new))
            elif new is None:
                entry["removed"].append(t.as_row(old))
            else:
                entry["changed"].append({"before": t.as_row(old), "after": t.as_row(new)})
        return out

    def diff_since(self, pos: int = BASE_POS) -> Diff:
        return self.format_diff(self.changes_since(pos))

    def take_diff(self) -> Diff:
        """Rows added, removed and changed since the previous take_diff, reset or restore."""
        changes = self.changes_since(self._diff_pos)
        self._diff_pos = self.top()
        return self.format_diff(changes)
