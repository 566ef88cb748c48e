"""The state store on its own: undo log, rollback, checkpoints, fork, hash, diff (real SQLite)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from toolgym.canonical import canonical_json, sha256_hex
from toolgym.mocks.store import (
    BASE_POS,
    ReadOnlyError,
    Store,
    StoreError,
    TableInfo,
    Template,
    TemplateCache,
    VolatileSpec,
    build_template,
    jsonable,
    row_digest,
)

SCHEMA = """
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, price REAL, data BLOB, note TEXT);
CREATE TABLE tags (item TEXT NOT NULL, tag TEXT NOT NULL, stamp TEXT, PRIMARY KEY (item, tag));
CREATE TABLE log (k TEXT PRIMARY KEY, v INTEGER);
"""


def _setup(conn: sqlite3.Connection, rows: int = 5) -> None:
    conn.executescript(SCHEMA)
    conn.executemany(
        "INSERT INTO items VALUES (?, ?, ?, ?, ?)",
        [(i, f"item{i}", i * 1.5, bytes([i % 256]), None) for i in range(1, rows + 1)],
    )
    conn.executemany("INSERT INTO tags VALUES (?, ?, ?)", [("item1", "red", "t0"), ("item2", "blue", "t0")])


def make_template(volatile: VolatileSpec | None = None, rows: int = 5, key: str = "t") -> Template:
    return build_template(key, lambda conn: _setup(conn, rows), volatile or {"tags": ["stamp"], "log": "*"})


def snapshot(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    """Every user table, with rowids and exact value types."""
    out = {}
    for name in store.user_tables:
        rows = store.conn.execute(f'SELECT rowid, * FROM "{name}" ORDER BY rowid').fetchall()
        out[name] = [tuple((type(v).__name__, v) for v in r) for r in rows]
    return out


def assert_no_savepoint_left(store: Store) -> None:
    """Only the episode transaction is open: no call's or read's savepoint stayed behind."""
    assert store.in_episode and store.conn.in_transaction
    for name in ("tg_call", "tg_read", "tg_replay"):
        with pytest.raises(sqlite3.OperationalError, match="no such savepoint"):
            store.conn.execute(f"RELEASE {name}")


@pytest.fixture
def store() -> Store:
    return Store(make_template())


def test_row_digest_is_sha256_of_canonical_json() -> None:
    row = {"b": 1.5, "a": "x", "c": None}
    assert row_digest("t", row) == int(sha256_hex(canonical_json(["t", row])), 16)


sqlite_values = st.one_of(
    st.none(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),  # infinities included: they take the general encoder
    st.text(),
    st.binary(max_size=4),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=6, unique=True),
    st.data(),
)
def test_fast_row_encoding_equals_canonical_json(columns: list[str], data: st.DataObject) -> None:
    volatile = data.draw(st.lists(st.sampled_from(columns), unique=True, max_size=len(columns) - 1))
    info = TableInfo(data.draw(st.text(max_size=5)), columns, columns[:1], volatile)
    values = tuple(data.draw(sqlite_values) for _ in columns)
    row = {c: v for c, v in zip(columns, values, strict=True) if c not in volatile}
    expected = int(sha256_hex(canonical_json(jsonable([info.name, row]))), 16)
    assert info.digest(values) == row_digest(info.name, row) == expected
    assert info.digest_scanned(tuple(row.values())) == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(sqlite_values, sqlite_values), min_size=1, max_size=30))
def test_remembered_digests_are_the_digests_of_those_very_values(rows: list[tuple[Any, Any]]) -> None:
    """A table remembers row digests by values; values equal in Python but not in JSON (1, 1.0,
    True) or NaN never take another row's digest, in any order of asking, again and again."""
    info = TableInfo("t", ["a", "b"], ["a"], ())
    confusable = [(1, 1), (1.0, 1), (True, 1), (1, 1.0), (0, 0.0), (False, 0)]
    for values in [*rows, *confusable, *reversed(rows), *confusable]:
        assert info.digest(values) == row_digest("t", {"a": values[0], "b": values[1]})


def test_rollback_restores_every_kind_of_change_exactly(store: Store) -> None:
    before = snapshot(store)
    h0 = store.state_hash()
    mark = store.top()
    c = store.conn
    c.execute("INSERT INTO items(name, price, data) VALUES ('new', 0.1 + 0.2, x'00ff')")
    c.execute("UPDATE items SET price = price * 3.3, note = 'changed' WHERE id <= 3")
    c.execute("DELETE FROM items WHERE id = 4")
    c.execute("UPDATE items SET id = 100 WHERE id = 5")  # moves the rowid
    c.execute(
        "INSERT OR REPLACE INTO items(id, name, price) VALUES (7, 'item1', 9.0)"
    )  # REPLACE deletes id 1
    c.execute("INSERT INTO tags VALUES ('item3', 'green', 't1') ON CONFLICT DO NOTHING")
    c.execute(
        "INSERT INTO tags VALUES ('item1', 'red', 't2') ON CONFLICT(item, tag) DO UPDATE SET stamp = 't2'"
    )
    c.execute("INSERT INTO log VALUES ('a', 1)")
    assert snapshot(store) != before
    assert store.state_hash() == store.full_hash() != h0
    store.rollback_to(mark)
    assert snapshot(store) == before
    assert store.state_hash() == store.full_hash() == h0
    assert store.log_length() == 0


def test_rollback_keeps_float_bits(store: Store) -> None:
    store.conn.execute("UPDATE items SET price = 0.1 + 0.2 WHERE id = 1")
    mark = store.top()
    store.conn.execute("UPDATE items SET price = 1 WHERE id = 1")
    store.rollback_to(mark)
    assert store.conn.execute("SELECT price FROM items WHERE id = 1").fetchone()[0] == 0.1 + 0.2


def test_checkpoints_restore_and_invalidate_later_ones(store: Store) -> None:
    c = store.conn
    h0 = store.state_hash()
    store.checkpoint("a")
    c.execute("UPDATE items SET note = 'one' WHERE id = 1")
    h1 = store.state_hash()
    store.checkpoint("b")
    c.execute("UPDATE items SET note = 'two' WHERE id = 2")
    store.checkpoint("c")
    store.restore("b")
    assert store.state_hash() == h1 == store.full_hash()
    assert store.checkpoints == ["a", "b"]
    c.execute("DELETE FROM items WHERE id = 3")
    store.restore("b")  # a checkpoint stays usable after a restore to it
    assert store.state_hash() == h1
    store.restore("a")
    assert store.state_hash() == h0 == store.full_hash()
    assert store.checkpoints == ["a"]
    with pytest.raises(KeyError):
        store.restore("c")
    store.checkpoint("z")
    store.reset()
    assert store.checkpoints == []


def test_checkpoint_name_reused_moves_forward(store: Store) -> None:
    store.checkpoint("x")
    store.conn.execute("UPDATE items SET note = 'n' WHERE id = 1")
    store.checkpoint("y")
    store.checkpoint("x")
    assert store.checkpoints == ["y", "x"]
    store.restore("x")
    assert store.conn.execute("SELECT note FROM items WHERE id = 1").fetchone()[0] == "n"


def test_fork_is_independent_and_keeps_checkpoints(store: Store) -> None:
    store.checkpoint("start")
    store.conn.execute("UPDATE items SET note = 'parent' WHERE id = 1")
    fork = store.fork()
    assert fork.state_hash() == store.state_hash()
    fork.conn.execute("UPDATE items SET note = 'child' WHERE id = 2")
    store.conn.execute("DELETE FROM items WHERE id = 3")
    assert fork.conn.execute("SELECT count(*) FROM items").fetchone()[0] == 5
    assert store.conn.execute("SELECT note FROM items WHERE id = 2").fetchone()[0] is None
    assert fork.state_hash() == fork.full_hash()
    assert store.state_hash() == store.full_hash()
    fork.restore("start")
    store.restore("start")
    assert fork.state_hash() == store.state_hash()
    fork.close()


def test_atomic_undoes_a_failed_block_and_keeps_a_good_one(store: Store) -> None:
    h0 = store.state_hash()
    top = store.top()
    with pytest.raises(RuntimeError), store.atomic():
        store.conn.execute("DELETE FROM items")
        store.next_counter("X")
        raise RuntimeError("boom")
    assert store.state_hash() == h0 and store.top() == top
    assert store.next_counter("X") == 1
    with store.atomic(), store.atomic():
        store.conn.execute("UPDATE items SET note = 'kept' WHERE id = 1")
    assert store.conn.execute("SELECT note FROM items WHERE id = 1").fetchone()[0] == "kept"
    assert_no_savepoint_left(store)


def test_hash_and_rollback_refused_inside_atomic(store: Store) -> None:
    with store.atomic():
        with pytest.raises(StoreError):
            store.state_hash()
        with pytest.raises(StoreError):
            store.rollback_to(BASE_POS)


def test_read_only_undoes_writes_and_raises(store: Store) -> None:
    store.conn.execute("UPDATE items SET note = 'before' WHERE id = 1")
    before, h0, top, diff_then = snapshot(store), store.state_hash(), store.top(), store.take_diff()
    with pytest.raises(ReadOnlyError), store.read_only():
        store.conn.execute("DELETE FROM items")
        store.next_counter("X")
        with store.read_only():  # nested: still one guard, undone as a whole
            store.conn.execute("INSERT INTO tags VALUES ('a', 'b', 'c')")
    assert snapshot(store) == before and store.top() == top
    assert store.state_hash() == h0 == store.full_hash() and store.take_diff() == {} and diff_then
    assert_no_savepoint_left(store)
    assert store.next_counter("X") == 1  # the counter's change was undone with the rest
    with store.read_only():  # a read that reads passes, and its reads see the data
        assert store.conn.execute("SELECT count(*) FROM items").fetchone()[0] == 5
    store.conn.execute("UPDATE items SET note = 'ok' WHERE id = 1")  # writes outside are fine


def test_read_only_undoes_writes_of_a_read_that_fails_too(store: Store) -> None:
    h0 = store.state_hash()
    with pytest.raises(ReadOnlyError) as caught, store.read_only():
        store.conn.execute("UPDATE items SET note = 'x'")
        raise KeyError("the read's own error")
    assert isinstance(caught.value.__cause__, KeyError)
    assert store.state_hash() == h0 == store.full_hash()


def test_world_connections_refuse_schema_changes(store: Store) -> None:
    h0, top = store.state_hash(), store.top()
    for ddl in (
        "CREATE TABLE extra (a INTEGER PRIMARY KEY)",
        "DROP TABLE tags",
        "CREATE INDEX i ON items(note)",
    ):
        with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
            store.conn.execute(ddl)
    assert store.user_tables == ["items", "log", "tags"]
    assert store.state_hash() == h0 and store.top() == top


def test_counters_roll_back(store: Store) -> None:
    assert store.next_counter("ORD") == 1
    store.checkpoint("c")
    assert store.next_counter("ORD") == 2
    store.restore("c")
    assert store.next_counter("ORD") == 2
    store.reset()
    assert store.next_counter("ORD") == 1
    assert store.next_counter("ORD", 3) == 4  # a block of three: 2, 3, 4
    assert store.next_counter("ORD") == 5


def test_counters_and_the_clock_are_in_the_hash_moved_by_the_log_alone(store: Store) -> None:
    """_tg_meta (the id counters, the clock) decides what the next call answers, so it is in the
    hash (issue 27); diffs still show user rows only, and the hash after a change is still kept
    from the undo log, O(changes): no statement reads a table."""
    h0 = store.state_hash()
    store.take_diff()
    store.checkpoint("c")
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    store.next_counter("ORD")
    h1 = store.state_hash()
    store.set_meta("clock", "2030-01-01T00:00:00")
    h2 = store.state_hash()
    store.conn.set_trace_callback(None)
    assert len({h0, h1, h2}) == 3 and h2 == store.full_hash()
    reads = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert reads and all("_tg_undo" in s for s in reads), reads
    assert store.take_diff() == {}
    store.restore("c")
    assert store.state_hash() == h0 == store.full_hash()
    store.next_counter("ORD")
    assert store.state_hash() == h1  # the same state, the same hash
    store.reset()
    assert store.state_hash() == h0 == store.full_hash()


def test_a_write_s_hash_and_diff_read_the_log_once(store: Store) -> None:
    """After a write, the state hash and the diff come from one read of the log: the top of the
    log is the last record read, not a max(seq) query of its own (issue 30)."""
    store.state_hash()
    store.take_diff()
    store.conn.execute("UPDATE items SET note = 'n' WHERE id = 1")
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    h = store.state_hash()
    diff = store.take_diff()
    store.conn.set_trace_callback(None)
    assert len(statements) == 1 and "_tg_undo" in statements[0], statements
    assert h == store.full_hash() and [c["after"]["note"] for c in diff["items"]["changed"]] == ["n"]


def test_rows_changed_again_hash_right_across_rollbacks_and_forks(store: Store) -> None:
    """The digests remembered for rows the hash moved over (`_hashed_rows`) hold only while the
    state they were taken in does: a rollback below the hash's position, a fork and a reset each
    leave the incremental hash equal to a full scan."""
    for i in range(4):  # the same rows changed step after step
        store.conn.execute("UPDATE items SET note = ? WHERE id IN (1, 2)", (f"n{i}",))
        assert store.state_hash() == store.full_hash()
        if i == 1:
            store.checkpoint("c")
    store.restore("c")  # below the hash's position: what was remembered there is gone
    store.conn.execute("UPDATE items SET note = 'after' WHERE id = 1")
    assert store.state_hash() == store.full_hash()
    other = store.fork()
    for s in (store, other):
        s.conn.execute("DELETE FROM items WHERE id = 2")
        s.conn.execute("UPDATE items SET note = 'fork' WHERE id = 1")
        assert s.state_hash() == s.full_hash()
    store.reset()
    store.conn.execute("UPDATE items SET note = 'n3' WHERE id = 1")
    assert store.state_hash() == store.full_hash()


def test_take_diff(store: Store) -> None:
    c = store.conn
    assert store.take_diff() == {}
    c.execute("INSERT INTO items(id, name) VALUES (10, 'ten')")
    c.execute("UPDATE items SET note = 'x' WHERE id = 1")
    c.execute("DELETE FROM tags WHERE item = 'item2'")
    c.execute("UPDATE items SET note = NULL WHERE id = 2")  # a no-op update is not a change
    diff = store.take_diff()
    assert set(diff) == {"items", "tags"}
    assert diff["items"]["added"] == [{"id": 10, "name": "ten", "price": None, "data": None, "note": None}]
    assert diff["items"]["removed"] == []
    [changed] = diff["items"]["changed"]
    assert changed["before"]["note"] is None and changed["after"]["note"] == "x"
    assert changed["after"]["data"] == {"$blob": "01"}  # BLOBs are JSON-safe in diffs
    assert diff["tags"]["removed"] == [{"item": "item2", "tag": "blue", "stamp": "t0"}]
    assert store.take_diff() == {}
    c.execute("INSERT INTO items(id, name) VALUES (11, 'tmp')")
    c.execute("DELETE FROM items WHERE id = 11")  # inserted then deleted: nothing to report
    assert store.take_diff() == {}


def test_diff_baseline_after_restore(store: Store) -> None:
    store.checkpoint("a")
    store.conn.execute("UPDATE items SET note = 'x' WHERE id = 1")
    store.restore("a")
    assert store.take_diff() == {}
    store.conn.execute("UPDATE items SET note = 'y' WHERE id = 2")
    assert list(store.take_diff()) == ["items"]


def test_volatile_columns_and_tables_stay_out_of_the_hash(store: Store) -> None:
    h0 = store.state_hash()
    store.conn.execute("UPDATE tags SET stamp = 'later'")
    store.conn.execute("INSERT INTO log VALUES ('k', 1)")
    assert store.state_hash() == h0 == store.full_hash()
    assert set(store.take_diff()) == {"tags", "log"}  # diffs still show them
    store.conn.execute("UPDATE tags SET tag = 'other' WHERE item = 'item1'")
    assert store.state_hash() != h0


def test_worlds_of_one_template_share_the_base_hash() -> None:
    template = make_template(key="shared")
    a, b = Store(template), Store(template)
    a.conn.execute("DELETE FROM items WHERE id = 1")
    ha = a.state_hash()  # computes the template's base hash by a scan, stepping back over a's change
    assert template.base_acc is not None
    assert ha == a.full_hash()
    assert b.state_hash() == b.full_hash()
    a.reset()
    assert a.state_hash() == b.state_hash()


def test_load_switches_templates(store: Store) -> None:
    other = make_template(rows=500, key="big")
    store.conn.execute("UPDATE items SET note = 'warm the statement cache' WHERE id = 1")
    store.take_diff()
    store.state_hash()
    store.checkpoint("x")
    store.load(other)
    assert store.log_length() == 0 and store.take_diff() == {}
    assert store.conn.execute("SELECT count(*) FROM items").fetchone()[0] == 500
    assert store.checkpoints == []
    store.conn.execute("DELETE FROM items WHERE id > 10")
    store.reset()
    assert store.state_hash() == store.full_hash() == Store(other).full_hash()


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ("CREATE TABLE t (a TEXT)", "no PRIMARY KEY"),
        ("CREATE TABLE t (a INTEGER PRIMARY KEY AUTOINCREMENT)", "AUTOINCREMENT"),
        ("CREATE TABLE t (a TEXT PRIMARY KEY) WITHOUT ROWID", "WITHOUT ROWID"),
        ("CREATE TABLE t (a INTEGER PRIMARY KEY, b INTEGER GENERATED ALWAYS AS (a + 1))", "generated"),
    ],
)
def test_schemas_the_store_cannot_track_are_refused(schema: str, message: str) -> None:
    def setup(conn: sqlite3.Connection) -> None:
        conn.executescript(schema)

    with pytest.raises(StoreError, match=message):
        build_template("bad", setup)


def test_volatile_spec_must_name_real_things() -> None:
    with pytest.raises(StoreError, match="volatile"):
        make_template({"items": ["nope"]})
    with pytest.raises(StoreError, match="volatile"):
        make_template({"nope": "*"})


def test_template_cache_builds_once_and_evicts() -> None:
    cache = TemplateCache(max_entries=2)
    built: list[str] = []

    def builder(key: str) -> Callable[[], Template]:
        def build() -> Template:
            built.append(key)
            return make_template(key=key)

        return build

    first = cache.get("a", builder("a"))
    assert cache.get("a", builder("a")) is first
    cache.get("b", builder("b"))
    cache.get("c", builder("c"))
    assert len(cache) == 2
    cache.get("a", builder("a"))
    assert built == ["a", "b", "c", "a"]


# ---- property: random changes, incremental hash == full hash, rollback is exact ----------------
values = st.one_of(
    st.none(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=5),
    st.binary(max_size=3),
)
ops = st.one_of(
    st.tuples(st.just("insert"), st.integers(1, 12), values),
    st.tuples(st.just("update"), st.integers(1, 12), values),
    st.tuples(st.just("delete"), st.integers(1, 12), st.none()),
    st.tuples(st.just("move"), st.integers(1, 12), st.integers(13, 20)),
    st.tuples(st.just("replace"), st.integers(1, 12), values),
    st.tuples(st.just("tag"), st.integers(1, 4), values),
    st.tuples(st.just("mark"), st.integers(0, 0), st.none()),
)


def _apply(store: Store, op: str, i: int, v: Any) -> None:
    c = store.conn
    if op == "insert":
        c.execute("INSERT OR IGNORE INTO items(id, name, price, note) VALUES (?, ?, 1.0, ?)", (i, f"n{i}", v))
    elif op == "update":
        c.execute("UPDATE items SET note = ?, price = price + 0.1 WHERE id = ?", (v, i))
    elif op == "delete":
        c.execute("DELETE FROM items WHERE id = ?", (i,))
    elif op == "move":
        c.execute("UPDATE OR IGNORE items SET id = ? WHERE id = ?", (v, i))
    elif op == "replace":
        c.execute(
            "INSERT OR REPLACE INTO items(id, name, note) VALUES (?, ?, ?)", (i + 30, f"item{i % 5 + 1}", v)
        )
    elif op == "tag":
        c.execute("INSERT OR REPLACE INTO tags VALUES (?, ?, ?)", (f"item{i}", "t", str(v)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ops, max_size=25), st.lists(ops, max_size=10))
def test_property_incremental_hash_and_exact_rollback(first: list[Any], second: list[Any]) -> None:
    store = Store(make_template(key="prop"))
    for op in first:
        if op[0] == "mark":
            store.state_hash()  # vary where the incremental hash starts from
        else:
            _apply(store, *op)
    assert store.state_hash() == store.full_hash()
    store.checkpoint("mid")
    mid, mid_hash = snapshot(store), store.state_hash()
    for op in second:
        if op[0] != "mark":
            _apply(store, *op)
    assert store.state_hash() == store.full_hash()
    store.restore("mid")
    assert snapshot(store) == mid
    assert store.state_hash() == mid_hash == store.full_hash()
    store.reset()
    assert store.state_hash() == store.full_hash() == Store(make_template(key="prop")).full_hash()
    store.close()


# ---- state machine: the store against a model of its rows ----------------------------------------
ModelState = dict[str, dict[int, tuple[Any, ...]]]  # table -> rowid -> values


def _initial_model() -> ModelState:
    return {
        "items": {i: (i, f"item{i}", i * 1.5, bytes([i % 256]), None) for i in range(1, 6)},
        "tags": {1: ("item1", "red", "t0"), 2: ("item2", "blue", "t0")},
        "log": {},
    }


def _model_snapshot(model: ModelState) -> dict[str, list[tuple[Any, ...]]]:
    """The model in `snapshot`'s layout (rowid first, exact value types)."""
    return {
        table: [tuple((type(v).__name__, v) for v in (rid, *vals)) for rid, vals in sorted(rows.items())]
        for table, rows in model.items()
    }


def _copy(model: ModelState) -> ModelState:
    return {table: dict(rows) for table, rows in model.items()}


def _model_changes(store: Store, then: ModelState, now: ModelState) -> dict[Any, Any]:
    """What take_diff must report, worked out from the model alone (row by row, types included)."""
    out = {}
    for table in store.user_tables:
        for rid in then[table].keys() | now[table].keys():
            old, new = then[table].get(rid), now[table].get(rid)
            same = (
                old is not None
                and new is not None
                and [(type(v), v) for v in old] == [(type(v), v) for v in new]
            )
            if old != new or not same:
                out[(table, rid)] = (old, new)
    return {k: v for k, v in out.items() if v != (None, None)}


model_values = st.one_of(
    st.none(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False),
    st.text(max_size=4),
    st.binary(max_size=3),
)


class StoreMachine(RuleBasedStateMachine):
    """Random writes, checkpoints, restores, resets by both paths, forks and guarded reads; after
    every rule the rows equal the model's, the incremental hash a full scan, and take_diff the
    changes the model saw since the last diff."""

    def __init__(self) -> None:
        super().__init__()
        self.store = Store(make_template(key="machine"))
        self.model = _initial_model()
        self.diff_base = _copy(self.model)
        self.saved: dict[str, ModelState] = {}  # checkpoints, oldest first
        self.initial_hash = self.store.state_hash()

    def teardown(self) -> None:
        self.store.close()

    # -- writes: each runs on SQLite and on the model -------------------------------------------
    @rule(i=st.integers(1, 14), v=model_values)
    def insert_item(self, i: int, v: Any) -> None:
        self.store.conn.execute(
            "INSERT OR IGNORE INTO items(id, name, price, data) VALUES (?, ?, 1.0, ?)", (i, f"n{i}", v)
        )
        items = self.model["items"]
        if i not in items and f"n{i}" not in {r[1] for r in items.values()}:
            items[i] = (i, f"n{i}", 1.0, v, None)

    @rule(i=st.integers(1, 14), v=model_values)
    def update_item(self, i: int, v: Any) -> None:
        self.store.conn.execute("UPDATE items SET data = ?, price = price + 0.5 WHERE id = ?", (v, i))
        row = self.model["items"].get(i)
        if row is not None:
            self.model["items"][i] = (row[0], row[1], row[2] + 0.5, v, row[4])

    @rule(i=st.integers(1, 14))
    def delete_item(self, i: int) -> None:
        self.store.conn.execute("DELETE FROM items WHERE id = ?", (i,))
        self.model["items"].pop(i, None)

    @rule(i=st.integers(1, 14), j=st.integers(1, 20))
    def move_item(self, i: int, j: int) -> None:
        self.store.conn.execute("UPDATE OR IGNORE items SET id = ? WHERE id = ?", (j, i))
        items = self.model["items"]
        if i in items and j not in items:
            row = items.pop(i)
            items[j] = (j, *row[1:])

    @rule(i=st.integers(1, 14), j=st.integers(1, 14))
    def swap_names(self, i: int, j: int) -> None:
        """Two rows trade a UNIQUE value: undoing it in place would collide (the restore's fallback)."""
        items = self.model["items"]
        if i == j or i not in items or j not in items:
            return
        a, b = items[i][1], items[j][1]
        c = self.store.conn
        c.execute("UPDATE items SET name = '~swap' WHERE id = ?", (i,))
        c.execute("UPDATE items SET name = ? WHERE id = ?", (a, j))
        c.execute("UPDATE items SET name = ? WHERE id = ?", (b, i))
        items[i], items[j] = (*items[i][:1], b, *items[i][2:]), (*items[j][:1], a, *items[j][2:])

    @rule(i=st.integers(1, 6), stamp=st.text(max_size=3))
    def tag(self, i: int, stamp: str) -> None:
        self.store.conn.execute("INSERT OR IGNORE INTO tags VALUES (?, 't', ?)", (f"item{i}", stamp))
        tags = self.model["tags"]
        if (f"item{i}", "t") not in {r[:2] for r in tags.values()}:
            tags[max(tags, default=0) + 1] = (f"item{i}", "t", stamp)

    @rule(i=st.integers(1, 6))
    def untag(self, i: int) -> None:
        self.store.conn.execute("DELETE FROM tags WHERE item = ?", (f"item{i}",))
        self.model["tags"] = {k: r for k, r in self.model["tags"].items() if r[0] != f"item{i}"}

    @rule(n=st.integers(1, 300), start=st.integers(100, 400))
    def bulk_insert(self, n: int, start: int) -> None:
        """A large episode: enough rows changed that a reset may rather copy the template."""
        rows = [(k, f"bulk{k}", 0.25, k) for k in range(start, start + n)]
        self.store.conn.executemany(
            "INSERT OR IGNORE INTO items(id, name, price, data) VALUES (?, ?, ?, ?)", rows
        )
        items = self.model["items"]
        names = {r[1] for r in items.values()}
        for k, name, price, data in rows:
            if k not in items and name not in names:
                items[k] = (k, name, price, data, None)
                names.add(name)

    @rule()
    def double_prices(self) -> None:
        self.store.conn.execute("UPDATE items SET price = price * 2")
        self.model["items"] = {k: (r[0], r[1], r[2] * 2, *r[3:]) for k, r in self.model["items"].items()}

    @rule(i=st.integers(1, 14))
    def read_that_writes(self, i: int) -> None:
        with pytest.raises(ReadOnlyError), self.store.read_only():
            self.store.conn.execute("SELECT * FROM items").fetchall()
            self.store.conn.execute("DELETE FROM items WHERE id = ?", (i,))
            self.store.conn.execute("INSERT INTO items(id, name) VALUES (999, 'sneaky')")

    # -- positions -----------------------------------------------------------------------------
    @rule(name=st.sampled_from(["a", "b", "c"]))
    def checkpoint(self, name: str) -> None:
        self.store.checkpoint(name)
        self.saved.pop(name, None)
        self.saved[name] = _copy(self.model)

    @rule(name=st.sampled_from(["a", "b", "c"]))
    def restore(self, name: str) -> None:
        if name not in self.saved:
            with pytest.raises(KeyError):
                self.store.restore(name)
            return
        self.store.restore(name)
        names = list(self.saved)
        for later in names[names.index(name) + 1 :]:
            del self.saved[later]
        self.model = _copy(self.saved[name])
        self.diff_base = _copy(self.model)
        assert self.store.checkpoints == list(self.saved)

    @rule(how=st.sampled_from(["auto", "discard", "undo", "copy"]))
    def reset(self, how: str) -> None:
        if how == "discard" and not self.store.in_episode:  # a fork committed the episode
            with pytest.raises(StoreError, match="no episode transaction"):
                self.store.reset(how)
            return
        expected = self.store.reset_path() if how == "auto" else how
        self.store.reset(how)
        assert self.store.last_reset_path == expected and self.store.in_episode
        self.model, self.saved = _initial_model(), {}
        self.diff_base = _copy(self.model)
        assert self.store.state_hash() == self.initial_hash and self.store.checkpoints == []

    @rule()
    def take_diff(self) -> None:
        expected = self.store.format_diff(_model_changes(self.store, self.diff_base, self.model))
        assert self.store.take_diff() == expected
        self.diff_base = _copy(self.model)

    @rule(how=st.sampled_from(["auto", "undo", "copy"]))
    def fork(self, how: str) -> None:
        """The fork commits the episode: this store and the copy then reset by undo or copy."""
        other = self.store.fork()
        try:
            assert not self.store.in_episode and not other.in_episode
            assert snapshot(other) == _model_snapshot(self.model)
            assert (
                other.state_hash() == self.store.state_hash() and other.checkpoints == self.store.checkpoints
            )
            other.conn.execute("DELETE FROM items")
            other.reset(how)
            assert other.state_hash() == self.initial_hash == other.full_hash()
            assert snapshot(other) == _model_snapshot(_initial_model())
        finally:
            other.close()

    @invariant()
    def rows_hash_and_diff_agree_with_the_model(self) -> None:
        assert self.store.conn.in_transaction == self.store.in_episode
        assert snapshot(self.store) == _model_snapshot(self.model)
        assert self.store.state_hash() == self.store.full_hash()
        changes = _model_changes(self.store, self.diff_base, self.model)
        assert self.store.changes_since(self.store._diff_pos) == {k: (v[0], v[1]) for k, v in changes.items()}


TestStoreMachine = StoreMachine.TestCase
TestStoreMachine.settings = settings(
    max_examples=60, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def test_reset_path_follows_the_estimates() -> None:
    """With the episode transaction open a reset discards it; after a fork committed it, the
    estimates pick undo replay or a copy, and that reset opens an episode again."""
    store = Store(make_template(key="paths"))
    assert store.reset_path() == "undo"  # nothing logged: nothing to undo, nothing to discard
    store.reset()
    assert store.last_reset_path == "undo" and store.in_episode
    store.conn.execute("UPDATE items SET note = 'one change' WHERE id = 1")
    assert store.reset_path() == "discard"
    store.reset()
    assert store.last_reset_path == "discard" and store.in_episode
    store.conn.execute("UPDATE items SET note = 'one change' WHERE id = 1")
    store.fork().close()
    assert not store.in_episode and store.reset_path() == "undo"  # one record: beats any copy
    with pytest.raises(StoreError, match="no episode transaction"):
        store.reset("discard")
    store.reset()
    assert store.last_reset_path == "undo" and store.in_episode
    store.conn.execute("UPDATE items SET note = 'one change' WHERE id = 1")
    assert store.reset_path() == "discard"
    records = store.COPY_NS_FIXED // store.UNDO_NS_PER_RECORD + len(store.template.image)  # surely past
    store.conn.executemany("INSERT INTO log VALUES (?, ?)", [(f"k{i}", i) for i in range(records)])
    store.fork().close()
    assert store.reset_path() == "copy"
    store.reset()
    assert store.last_reset_path == "copy" and store.log_length() == 0 and store.in_episode
    assert snapshot(store) == _model_snapshot(_initial_model())
    with pytest.raises(ValueError, match="expected"):
        store.reset("sideways")
    store.close()


def test_rollback_of_rows_that_traded_unique_values(store: Store) -> None:
    """Putting the names back in place one row at a time would collide: the restore deletes and
    inserts those rows instead, and the result is exact."""
    before, h0 = snapshot(store), store.state_hash()
    store.checkpoint("start")
    c = store.conn
    c.execute("UPDATE items SET name = '~swap' WHERE id = 1")
    c.execute("UPDATE items SET name = 'item1' WHERE id = 2")
    c.execute("UPDATE items SET name = 'item2', note = 'kept apart' WHERE id = 1")
    c.execute("UPDATE items SET price = 0 WHERE id = 3")  # an ordinary change beside them
    store.restore("start")
    assert snapshot(store) == before and store.state_hash() == h0 == store.full_hash()
    assert store.log_length() == 0


def test_read_inside_a_write_is_guarded_by_its_own_savepoint(store: Store) -> None:
    """A read called from a write: the read's changes go, the write's stay."""
    with store.atomic():
        store.conn.execute("UPDATE items SET note = 'by the write' WHERE id = 1")
        with pytest.raises(ReadOnlyError), store.read_only():
            store.conn.execute("UPDATE items SET note = 'by the read' WHERE id = 2")
        with store.read_only():
            assert store.conn.execute("SELECT note FROM items WHERE id = 1").fetchone()[0] == "by the write"
    notes = dict(store.conn.execute("SELECT id, note FROM items WHERE id IN (1, 2)").fetchall())
    assert notes == {1: "by the write", 2: None}
    assert store.state_hash() == store.full_hash()
    assert [key for key in store.changes_since(BASE_POS)] == [("items", 1)]


def test_reset_by_discard_returns_exactly_the_template_state(store: Store) -> None:
    """Updates, inserts, deletes, a moved key, counters, checkpoints and a restore, then a reset
    that discards the episode: the rows, the hash (against a full scan) and the log are the
    template's, and the connection's prepared statements keep working in the next episode."""
    before, h0 = snapshot(store), store.state_hash()
    for episode in range(3):
        c = store.conn
        with store.atomic():
            c.execute("UPDATE items SET price = price * 3, note = ? WHERE id <= 3", (f"ep{episode}",))
            c.execute("INSERT INTO items(id, name, data) VALUES (50, 'new', x'00ff')")
        store.checkpoint("mid")
        c.execute("DELETE FROM tags WHERE item = 'item1'")
        c.execute("UPDATE items SET id = 70 WHERE id = 4")
        assert store.next_counter("ORD") == 1
        store.restore("mid")
        c.execute("DELETE FROM items WHERE id = 5")
        store.checkpoint("late")
        assert store.state_hash() != h0 and store.take_diff()
        store.reset("discard")
        assert store.last_reset_path == "discard" and store.checkpoints == []
        assert snapshot(store) == before and store.log_length() == 0
        assert store.state_hash() == h0 == store.full_hash() and store.take_diff() == {}
        assert store.get_meta("counter:ORD") is None  # the counter went back with the rest
        assert_no_savepoint_left(store)


@pytest.mark.parametrize("sql", ["COMMIT", "END", "ROLLBACK", "BEGIN", "BEGIN IMMEDIATE"])
def test_world_connections_refuse_transaction_control(store: Store, sql: str) -> None:
    """A COMMIT from an API would make its episode the state a reset goes back to: refused, in a
    write, in a read and outside both, and the store's own statements stay unaffected."""
    h0 = store.state_hash()
    store.conn.execute("UPDATE items SET note = 'episode' WHERE id = 1")
    with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
        store.conn.execute(sql)
    with pytest.raises(sqlite3.DatabaseError, match="not authorized"), store.atomic():
        store.conn.execute(sql)
    with pytest.raises(sqlite3.DatabaseError, match="not authorized"), store.read_only():
        store.conn.execute(sql)
    with pytest.raises(sqlite3.DatabaseError, match="not authorized"):
        store.conn.commit()  # the driver's own COMMIT goes through the authorizer too
    assert store.conn.execute("SELECT note FROM items WHERE id = 1").fetchone()[0] == "episode"
    store.reset()
    assert store.last_reset_path == "discard" and store.state_hash() == h0 == store.full_hash()
    assert_no_savepoint_left(store)
