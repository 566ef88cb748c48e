"""MockWorld: the World contract, determinism, atomic calls, tools, rewards (real SQLite)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlite_utils import Database

from toolgym.actions import ToolCall
from toolgym.cache import DiskCache
from toolgym.errors import ArgumentError, ErrorKind
from toolgym.mocks.app import App, Volatile, app_apis, insert_rows, read, set_counter, validate_app, write
from toolgym.mocks.apps import ALL_APPS, get_app, load_apps
from toolgym.mocks.apps.banking import BankingApp
from toolgym.mocks.apps.shopping import ShoppingApp
from toolgym.mocks.responses import AppError, check_enum, conflict, from_cents, ok, paginate, to_cents
from toolgym.mocks.rewards import (
    FieldEquals,
    GoldenReplayError,
    RowExists,
    check_assertions,
    collateral_damage,
    replay_golden,
    replay_golden_state_hash,
    state_matches,
)
from toolgym.mocks.store import ReadOnlyError, TemplateCache
from toolgym.mocks.world import AppLike, MockWorld, check_app
from toolgym.tasks import GoldenStep
from toolgym.tools import Param, Tool
from toolgym.world import World

CLOCK = datetime(2024, 5, 1, 9, 30, tzinfo=UTC)


class NotesApp(App):
    """A tiny app for framework tests, including deliberately broken APIs."""

    name = "notes"
    description = "Notes for tests."
    schema = """
    CREATE TABLE notes_notes (note_id TEXT PRIMARY KEY, title TEXT NOT NULL UNIQUE, body TEXT NOT NULL,
                              color TEXT NOT NULL, updated_at TEXT NOT NULL);
    """
    volatile: ClassVar[Volatile] = {"notes_notes": ["updated_at"]}

    def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
        rows = [
            {"note_id": f"NOTE-{i:06d}", "title": f"note {i}", "body": str(rng.random()), "color": "white",
             "updated_at": clock.isoformat()}
            for i in range(1, 21)
        ]  # fmt: skip
        db.table("notes_notes").insert_all(rows)
        set_counter(db, "NOTE", 20)

    @read
    def get_note(self, note_id: Annotated[str, Param("note id")]) -> dict[str, Any]:
        """Get a note."""
        return ok(self.get_or_404("notes_notes", "note_id", note_id, what="note"))

    @write(name="create_note")
    def create(
        self,
        title: str,
        body: str = "",
        color: Annotated[str, Param("note color", enum=("white", "yellow"))] = "white",
    ) -> dict[str, Any]:
        """Create a note."""
        note_id = self.next_id("NOTE")
        self.execute(
            "INSERT INTO notes_notes VALUES (?, ?, ?, ?, ?)", (note_id, title, body, color, self.now_iso())
        )
        return ok(note_id=note_id, created_at=self.now_iso())

    @write
    def touch_all_then_fail(self) -> dict[str, Any]:
        """Change every note, then fail with a 409."""
        self.execute("UPDATE notes_notes SET body = 'clobbered'")
        self.next_id("NOTE")
        raise conflict("changed my mind")

    @write
    def crash(self) -> dict[str, Any]:
        """Delete everything and then hit a bug."""
        self.execute("DELETE FROM notes_notes")
        self.clock.advance(3600)
        return {"value": 1 // 0}

    @read
    def sneaky_read(self) -> dict[str, Any]:
        """A read API that tries to write."""
        self.execute("DELETE FROM notes_notes")
        return ok()

    @write
    def wait(self, hours: int) -> dict[str, Any]:
        """Let time pass."""
        return ok(now=self.clock.advance(timedelta(hours=hours)).isoformat())


class ClashingApp(App):
    name = "clash"
    schema = "CREATE TABLE clash_things (id INTEGER PRIMARY KEY);"

    @read
    def get_note(self) -> dict[str, Any]:
        """Same published name as NotesApp.get_note."""
        return ok()


def notes() -> MockWorld:
    return MockWorld([NotesApp], clock=CLOCK)


# ---- the World contract -------------------------------------------------------------------------
def test_mock_world_is_a_world() -> None:
    with MockWorld(["shopping", "banking"]) as world:
        assert isinstance(world, World)


def test_same_seed_same_hash_other_seed_other_hash() -> None:
    a = MockWorld(["shopping", "banking"], seed=1, clock=CLOCK)
    b = MockWorld([ShoppingApp, BankingApp], seed=1, clock=CLOCK)
    c = MockWorld(["shopping", "banking"], seed=2, clock=CLOCK)
    assert a.state_hash() == b.state_hash() == a.store.full_hash()
    assert c.state_hash() != a.state_hash()
    assert c.state_hash() == c.store.full_hash()
    later = MockWorld(["shopping", "banking"], seed=1, clock=CLOCK + timedelta(days=1))
    assert later.state_hash() != a.state_hash()  # seeded dates follow the clock


def test_each_app_seeds_on_its_own_rng() -> None:
    alone = MockWorld(["banking"], seed=3, clock=CLOCK)
    together = MockWorld(["shopping", "banking"], seed=3, clock=CLOCK)
    assert alone.rows("bank_accounts") == together.rows("bank_accounts")


def test_reset_is_back_to_the_seeded_state() -> None:
    world = MockWorld(["shopping", "banking"], seed=5, clock=CLOCK)
    h0 = world.state_hash()
    world.call("transfer", from_account_id="ACC-10001", to_account_id="ACC-10003", amount=1.0)
    world.call("add_to_cart", customer_id="CUS-00001", product_id="PRD-00002")
    assert world.state_hash() != h0
    world.reset(seed=5, clock=CLOCK)
    assert world.state_hash() == h0 == world.store.full_hash()
    assert world.take_diff() == {}
    world.reset(seed=6, clock=CLOCK)  # another seed: another template, loaded in place
    assert world.state_hash() == MockWorld(["shopping", "banking"], seed=6, clock=CLOCK).state_hash()
    world.reset(seed=5, clock=CLOCK)
    assert world.state_hash() == h0


def test_tools_survive_reset_to_another_seed() -> None:
    world = notes()
    tools = world.tools
    world.reset(seed=9, clock=CLOCK)
    assert world.tools is tools
    obs = tools.call(ToolCall(name="get_note", arguments={"note_id": "NOTE-000001"}), world.context)
    assert obs.error is None


def test_checkpoint_restore_and_fork() -> None:
    world = notes()
    world.call("create_note", title="a")
    world.checkpoint("one")
    h1 = world.state_hash()
    world.call("create_note", title="b")
    fork = world.fork()
    assert fork.state_hash() == world.state_hash()
    fork.call("create_note", title="only in fork")
    world.restore("one")
    assert world.state_hash() == h1
    assert len(world.rows("notes_notes")) == 21
    assert len(fork.rows("notes_notes")) == 23
    fork.restore("one")  # checkpoints travel with the fork
    assert fork.state_hash() == h1
    h0 = notes().state_hash()
    for w in (world, fork):  # the fork committed the episode: one reset by undo or copy, then discard
        for path in ("undo", "discard"):
            w.call("create_note", title="later")
            w.reset(seed=0, clock=CLOCK)
            assert w.store.last_reset_path == path and w.state_hash() == h0 == w.store.full_hash()
    fork.close()


def test_take_diff_reports_one_step() -> None:
    world = notes()
    world.take_diff()
    world.call("create_note", title="fresh", body="hello")
    diff = world.take_diff()
    assert list(diff) == ["notes_notes"]
    [row] = diff["notes_notes"]["added"]
    assert row["note_id"] == "NOTE-000021" and row["body"] == "hello"
    assert world.take_diff() == {}


# ---- atomic calls, errors -----------------------------------------------------------------------
def _state(world: MockWorld) -> tuple[str, int, str]:
    return world.state_hash(), world.store.log_length(), world.clock.now_iso()


def test_failed_calls_change_nothing() -> None:
    world = notes()
    before = _state(world)
    for call in (
        ToolCall(name="touch_all_then_fail"),
        ToolCall(name="crash"),
        ToolCall(name="sneaky_read"),
        ToolCall(name="create_note", arguments={"title": "note 1"}),  # UNIQUE -> 409
        ToolCall(name="create_note", arguments={"title": "x", "color": "purple"}),  # enum -> 400
        ToolCall(name="create_note", arguments={"title": 5}),  # wrong type -> argument_error
        ToolCall(name="create_note", arguments={}),  # missing -> argument_error
        ToolCall(name="create_note", arguments={"title": "x", "extra": 1}),
        ToolCall(name="get_note", arguments={"note_id": "NOTE-999999"}),
        ToolCall(name="no_such_tool"),
    ):
        obs = world.step(call)
        assert obs.error is not None, call
        assert _state(world) == before, call
    assert world.call("create_note", title="after")["note_id"] == "NOTE-000021"  # the counter rolled back too


def test_error_observations_are_typed() -> None:
    world = notes()
    conflict_obs = world.step(ToolCall(name="touch_all_then_fail"))
    assert conflict_obs.error_kind == ErrorKind.TOOL_ERROR
    assert conflict_obs.content == {"status": "error", "code": 409, "message": "changed my mind"}
    unique = world.step(ToolCall(name="create_note", arguments={"title": "note 1"}))
    assert unique.content["code"] == 409 and "UNIQUE" in unique.content["message"]
    enum = world.step(ToolCall(name="create_note", arguments={"title": "x", "color": "purple"}))
    assert enum.content["code"] == 400 and "purple" in enum.content["message"]
    missing = world.step(ToolCall(name="get_note", arguments={"note_id": "NOTE-999999"}))
    assert missing.content["code"] == 404
    assert (
        world.step(ToolCall(name="create_note", arguments={"title": 5})).error_kind
        == ErrorKind.ARGUMENT_ERROR
    )
    assert world.step(ToolCall(name="no_such_tool")).error_kind == ErrorKind.UNKNOWN_TOOL
    assert world.step(ToolCall(name="crash")).error_kind == ErrorKind.TOOL_ERROR
    sneaky = world.step(ToolCall(name="sneaky_read"))  # a read that writes: undone, typed error
    assert sneaky.error_kind == ErrorKind.TOOL_ERROR and sneaky.error is not None
    assert sneaky.error.message.startswith("ReadOnlyError")
    with pytest.raises(ReadOnlyError):
        world.call("sneaky_read")
    assert len(world.rows("notes_notes")) == 20
    with pytest.raises(AppError) as info:
        world.call("get_note", note_id="nope")
    assert info.value.code == 404
    with pytest.raises(ArgumentError):
        world.call("get_note")


def test_response_helpers() -> None:
    assert ok() == {"status": "success", "data": None}
    assert ok([1, 2]) == {"status": "success", "data": [1, 2]}
    assert ok(order_id="ORD-1", total=2.5) == {"status": "success", "order_id": "ORD-1", "total": 2.5}
    err = AppError(404, "order 'x' not found")
    assert err.data == {"status": "error", "code": 404, "message": "order 'x' not found"}
    assert err.message == "404 Not Found: order 'x' not found" and err.code == 404
    assert to_cents("amount", 12.34) == 1234 and from_cents(1234) == 12.34
    with pytest.raises(AppError):
        to_cents("amount", 0.001)
    assert paginate(list(range(10)), 2, 3) == [3, 4, 5] and paginate([1], 5, 3) == []
    with pytest.raises(AppError):
        paginate([1], 0, 3)
    assert check_enum("x", "a", ("a", "b")) == "a"
    with pytest.raises(AppError, match="expected one of"):
        check_enum("x", "c", ("a", "b"))


# ---- clock --------------------------------------------------------------------------------------
def test_clock_is_simulated_and_rolls_back() -> None:
    world = notes()
    assert world.clock.now() == CLOCK
    assert world.call("create_note", title="t")["created_at"] == CLOCK.isoformat()
    world.checkpoint("c")
    world.call("wait", hours=5)
    assert world.clock.now() == CLOCK + timedelta(hours=5)
    assert world.call("create_note", title="u")["created_at"] == (CLOCK + timedelta(hours=5)).isoformat()
    world.restore("c")
    assert world.clock.now() == CLOCK
    world.advance_clock(60)
    fork = world.fork()
    assert fork.clock.now() == CLOCK + timedelta(minutes=1)
    world.reset(seed=0, clock=CLOCK + timedelta(days=2))
    assert world.clock.now() == CLOCK + timedelta(days=2)
    with pytest.raises(ValueError):
        world.advance_clock(-1)


def test_the_clock_and_the_id_counters_are_in_the_hash_volatile_columns_are_not() -> None:
    """Two worlds that will answer the next call differently never hash the same (issue 27)."""
    world = notes()
    h0 = world.state_hash()
    world.checkpoint("start")
    world.advance_clock(3600)  # the next note is stamped an hour later
    assert world.state_hash() != h0 and world.state_hash() == world.store.full_hash()
    world.restore("start")
    assert world.state_hash() == h0
    world.store.next_counter("NOTE")  # an id used, no row written: the next note's id moves on
    assert world.state_hash() != h0 and world.state_hash() == world.store.full_hash()
    assert world.take_diff() == {}  # diffs show rows only
    assert world.call("create_note", title="x")["note_id"] == "NOTE-000022"
    assert notes().call("create_note", title="x")["note_id"] == "NOTE-000021"
    world.reset(seed=0, clock=CLOCK)
    assert world.state_hash() == h0
    # seeded again from scratch, the same seed and clock hash the same; a later start does not,
    # though the rows it hashes are the same (their only time is the volatile updated_at)
    assert MockWorld([NotesApp], clock=CLOCK, cache=TemplateCache()).state_hash() == h0
    later = MockWorld([NotesApp], clock=CLOCK + timedelta(hours=1), cache=TemplateCache())
    assert later.rows("notes_notes")[0]["body"] == world.rows("notes_notes")[0]["body"]
    assert later.state_hash() != h0
    world.store.conn.execute("UPDATE notes_notes SET updated_at = 'later'")  # volatile column
    assert world.state_hash() == h0


# ---- tools --------------------------------------------------------------------------------------
def test_tools_are_app_tools_with_published_names() -> None:
    world = notes()
    assert world.tools.names == [
        "get_note",
        "create_note",
        "touch_all_then_fail",
        "crash",
        "sneaky_read",
        "wait",
    ]
    get_note, create = world.tools.get("get_note"), world.tools.get("create_note")
    assert get_note.category == create.category == "app"
    assert not get_note.mutates_state and create.mutates_state
    assert create.parameters_schema()["properties"]["color"]["enum"] == ["white", "yellow"]
    assert "self" not in create.parameters_schema()["properties"]
    assert world.tools.to_openai()[0]["function"]["name"] == "get_note"
    assert validate_app(NotesApp) == []


def test_tool_models_are_built_once_per_class() -> None:
    a, b = notes(), notes()
    fork = a.fork()
    for world in (b, fork):
        for mine, theirs in zip(a.tools, world.tools, strict=True):
            assert isinstance(mine, Tool) and isinstance(theirs, Tool)
            assert mine is not theirs and mine.fn is not theirs.fn
            assert mine.args_model is theirs.args_model
    assert [api.tool.args_model for api in app_apis(NotesApp)] == [
        t.args_model for t in a.tools if isinstance(t, Tool)
    ]


def test_tools_are_bound_to_their_own_world() -> None:
    a, b = notes(), notes()
    a.call("create_note", title="only in a")
    assert len(a.rows("notes_notes")) == 21 and len(b.rows("notes_notes")) == 20


def test_name_clashes_need_prefixes() -> None:
    with pytest.raises(ValueError, match="prefixes"):
        MockWorld([NotesApp, ClashingApp])
    world = MockWorld([NotesApp, ClashingApp], prefixes={"clash": "clash_"})
    assert "clash_get_note" in world.tools and "get_note" in world.tools
    with pytest.raises(ValueError):
        MockWorld([NotesApp], prefixes={"nope": "x_"})


def test_registry() -> None:
    assert {"shopping", "banking"} <= set(ALL_APPS)
    assert get_app("banking") is BankingApp
    assert load_apps(["shopping"]) == [ShoppingApp]
    with pytest.raises(KeyError, match="known"):
        get_app("nope")
    for cls in ALL_APPS.values():
        assert check_app(cls) == [], cls.name


def test_check_app_catches_nondeterministic_seeding() -> None:
    class Flaky(NotesApp):
        name = "flaky"

        def seed(self, db: Database, rng: random.Random, clock: datetime) -> None:
            insert_rows(
                db,
                "notes_notes",
                [
                    {
                        "note_id": "N",
                        "title": "t",
                        "body": str(random.random()),
                        "color": "w",
                        "updated_at": "",
                    }
                ],
            )

    assert check_app(NotesApp) == []
    assert any("deterministic" in p for p in check_app(Flaky))


# ---- rewards ------------------------------------------------------------------------------------
GOLDEN: list[dict[str, Any]] = [
    {
        "name": "transfer",
        "arguments": {"from_account_id": "ACC-10001", "to_account_id": "ACC-10002", "amount": 25},
    },
    {"name": "add_to_cart", "arguments": {"customer_id": "CUS-00003", "product_id": "PRD-00010"}},
]


def _episode(extra: list[ToolCall] | None = None) -> MockWorld:
    world = MockWorld(["shopping", "banking"], seed=0, clock=CLOCK)
    world.step(ToolCall(name="get_balance", arguments={"account_id": "ACC-10001"}))  # reads change nothing
    world.step(
        ToolCall(
            name="transfer", arguments={"from_account_id": "ACC-10001", "to_account_id": "nope", "amount": 1}
        )
    )
    for call in [ToolCall(name=c["name"], arguments=c["arguments"]) for c in GOLDEN] + (extra or []):
        world.step(call)
    return world


def test_golden_replay_hash_matches_a_correct_episode() -> None:
    golden = replay_golden_state_hash(["shopping", "banking"], 0, CLOCK, GOLDEN)
    assert _episode().state_hash() == golden
    steps = [GoldenStep(action=ToolCall(name=c["name"], arguments=c["arguments"])) for c in GOLDEN]
    assert replay_golden_state_hash(["shopping", "banking"], 0, CLOCK, steps) == golden
    wrong = _episode([ToolCall(name="deposit", arguments={"account_id": "ACC-10004", "amount": 5})])
    assert wrong.state_hash() != golden
    with pytest.raises(GoldenReplayError, match="golden call #0"):
        replay_golden_state_hash(
            ["banking"], 0, CLOCK, [{"name": "get_balance", "arguments": {"account_id": "x"}}]
        )


def test_state_assertions() -> None:
    world = _episode()
    report = check_assertions(
        world,
        [
            RowExists(table="shop_cart_items", where={"customer_id": "CUS-00003", "product_id": "PRD-00010"}),
            {"kind": "row_absent", "table": "bank_transactions", "where": {"memo": "never"}},
            {"kind": "count", "table": "bank_transactions", "where": {"reference": "TRF-000001"}, "n": 2},
            FieldEquals(table="bank_bills", where={"bill_id": "BILL-00001"}, field="status", value="paid"),
        ],
    )
    assert [r.passed for r in report.results] == [
        True,
        True,
        True,
        world.rows("bank_bills")[0]["status"] == "paid",
    ]
    failing = check_assertions(world, [{"kind": "count", "table": "shop_orders", "where": {}, "n": 0}])
    assert not failing.passed and failing.results[0].actual == len(world.rows("shop_orders"))
    with pytest.raises(ValueError, match="unknown table"):
        check_assertions(world, [{"kind": "row_exists", "table": "nope"}])
    with pytest.raises(ValueError, match="no column"):
        check_assertions(world, [{"kind": "row_exists", "table": "shop_orders", "where": {"nope": 1}}])


def test_collateral_damage() -> None:
    golden = replay_golden(["shopping", "banking"], 0, CLOCK, GOLDEN)
    clean = collateral_damage(golden, _episode())
    assert clean.passed and clean.method == "changes" and state_matches(golden, _episode())

    episode = MockWorld(["shopping", "banking"], seed=0, clock=CLOCK)
    episode.call(
        "transfer", from_account_id="ACC-10001", to_account_id="ACC-10002", amount=30
    )  # wrong amount
    episode.call("deposit", account_id="ACC-10005", amount=1)  # collateral
    report = collateral_damage(golden, episode)
    assert not report.passed
    counts = report.counts()
    kinds = {(d.table, d.kind) for d in report.differences}
    assert ("bank_accounts", "mismatch") in kinds  # both moved ACC-10001, by different amounts
    assert ("bank_accounts", "unexpected") in kinds  # ACC-10005 was not to be touched
    assert ("shop_cart_items", "missing") in kinds  # the episode never added to the cart
    assert counts["unexpected"] >= 2 and counts["missing"] >= 1
    assert report.tables == ["bank_accounts", "bank_transactions", "shop_cart_items"]
    narrowed = collateral_damage(golden, episode, ignore_tables=["bank_transactions", "shop_cart_items"])
    assert narrowed.tables == ["bank_accounts"]

    other = MockWorld(["shopping", "banking"], seed=0, clock=CLOCK + timedelta(seconds=1))
    scanned = collateral_damage(golden, other)  # not the same template: full scan
    assert scanned.method == "scan" and not scanned.passed


# ---- property: random API calls, incremental hash == full hash, rollback exact --------------------
ids = {
    "account": st.sampled_from(["ACC-10001", "ACC-10002", "ACC-10003", "ACC-10004", "ACC-99999"]),
    "customer": st.sampled_from(["CUS-00001", "CUS-00002", "CUS-00003", "CUS-99999"]),
    "bank_customer": st.sampled_from(["CUST-0001", "CUST-0002", "CUST-9999"]),
    "product": st.sampled_from(["PRD-00001", "PRD-00002", "PRD-00003", "PRD-00004", "PRD-99999"]),
    "order": st.sampled_from(["ORD-000001", "ORD-000002", "ORD-000150", "ORD-000151", "ORD-000152", "ORD-9"]),
    "bill": st.sampled_from(["BILL-00001", "BILL-00002", "BILL-00003", "BILL-99999"]),
}
amounts = st.one_of(st.integers(-5, 5000), st.floats(-10, 100000, allow_nan=False), st.just(0.001))
calls = st.one_of(
    st.builds(
        lambda a, b, x: ToolCall(
            name="transfer", arguments={"from_account_id": a, "to_account_id": b, "amount": x}
        ),
        ids["account"],
        ids["account"],
        amounts,
    ),
    st.builds(
        lambda a, x: ToolCall(name="deposit", arguments={"account_id": a, "amount": x}),
        ids["account"],
        amounts,
    ),
    st.builds(
        lambda b, a: ToolCall(name="pay_bill", arguments={"bill_id": b, "from_account_id": a}),
        ids["bill"],
        ids["account"],
    ),
    st.builds(
        lambda c, p, q: ToolCall(
            name="add_to_cart", arguments={"customer_id": c, "product_id": p, "quantity": q}
        ),
        ids["customer"],
        ids["product"],
        st.integers(-1, 70),
    ),
    st.builds(
        lambda c, p: ToolCall(name="remove_from_cart", arguments={"customer_id": c, "product_id": p}),
        ids["customer"],
        ids["product"],
    ),
    st.builds(
        lambda c, m: ToolCall(name="place_order", arguments={"customer_id": c, "payment_method": m}),
        ids["customer"],
        st.sampled_from(["wallet", "pay_on_delivery", "bitcoin"]),
    ),
    st.builds(lambda o: ToolCall(name="cancel_order", arguments={"order_id": o}), ids["order"]),
    st.builds(lambda o: ToolCall(name="ship_order", arguments={"order_id": o}), ids["order"]),
    st.builds(lambda c: ToolCall(name="list_bills", arguments={"customer_id": c}), ids["bank_customer"]),
    st.builds(lambda o: ToolCall(name="track_order", arguments={"order_id": o}), ids["order"]),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(calls, max_size=12), st.lists(calls, max_size=12), st.booleans())
def test_property_random_api_calls(
    first: list[ToolCall], second: list[ToolCall], hash_each_step: bool
) -> None:
    world = MockWorld(["shopping", "banking"], seed=0, clock=CLOCK)
    h0 = world.state_hash()
    for call in first:
        world.step(call)
        if hash_each_step:
            assert world.state_hash() == world.store.full_hash()
    world.checkpoint("mid")
    h_mid = world.state_hash()
    assert h_mid == world.store.full_hash()
    for call in second:
        world.step(call)
        world.take_diff()
    assert world.state_hash() == world.store.full_hash()
    balances = [r["balance_cents"] for r in world.rows("bank_accounts")]
    assert min(balances) >= 0
    stock = [r["stock"] for r in world.rows("shop_products")]
    assert min(stock) >= 0
    world.restore("mid")
    assert world.state_hash() == h_mid == world.store.full_hash()
    world.reset(seed=0, clock=CLOCK)
    assert world.state_hash() == h0 == world.store.full_hash()
    world.close()


# ---- seeded templates kept on disk (toolgym.cache) -------------------------------------------------
@pytest.fixture
def template_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOOLGYM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TOOLGYM_CACHE", raising=False)
    return tmp_path / "cache" / "mock-templates"


def template_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []


def fresh_world(apps: list[AppLike], seed: int = 3, clock: datetime = CLOCK) -> MockWorld:
    """A world as a new process builds it: nothing in memory, so the template comes from disk or seeding."""
    return MockWorld(apps, seed=seed, clock=clock, cache=TemplateCache())


TRANSFER = ToolCall(
    name="transfer", arguments={"from_account_id": "ACC-10001", "to_account_id": "ACC-10002", "amount": 5}
)


def test_a_template_read_from_disk_equals_the_seeded_one(template_dir: Path) -> None:
    built = fresh_world(["banking"])
    (entry,) = template_files(template_dir)
    loaded = fresh_world(["banking"])
    assert loaded.store.template is not built.store.template
    assert loaded.store.template.image == built.store.template.image
    assert loaded.store.template.base_acc == built.store.template.base_acc is not None
    assert {n: (t.columns, t.pk, t.hashed, t.in_hash) for n, t in loaded.store.tables.items()} == {
        n: (t.columns, t.pk, t.hashed, t.in_hash) for n, t in built.store.tables.items()
    }
    assert loaded.state_hash() == built.state_hash() == built.store.full_hash()
    assert loaded.step(TRANSFER) == built.step(TRANSFER)
    assert loaded.take_diff() == built.take_diff()
    assert loaded.state_hash() == built.state_hash() == loaded.store.full_hash()
    loaded.reset(seed=3, clock=CLOCK)
    built.reset(seed=3, clock=CLOCK)
    assert loaded.state_hash() == built.state_hash() == loaded.store.full_hash()
    # the entry really is what a new world reads: put seed 4's template under seed 3's key
    other = fresh_world(["banking"], seed=4)
    other_entry = next(p for p in template_files(template_dir) if p != entry)
    entry.write_bytes(other_entry.read_bytes())
    assert fresh_world(["banking"]).state_hash() == other.state_hash() != built.state_hash()


def test_another_seed_clock_or_app_set_misses(template_dir: Path) -> None:
    fresh_world(["banking"])
    fresh_world(["banking"], seed=4)
    fresh_world(["banking"], clock=CLOCK + timedelta(days=1))
    fresh_world(["banking", "shopping"])
    fresh_world(["banking"])  # a hit
    assert len(template_files(template_dir)) == 4


def test_disabled_cache_seeds_every_time(template_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLGYM_CACHE", "0")
    assert fresh_world(["banking"]).state_hash() == fresh_world(["banking"]).state_hash()
    assert template_files(template_dir) == []


@pytest.mark.parametrize("damage", ["garbage", "truncated", "checksum-right-not-a-template"])
def test_a_damaged_template_is_rebuilt(template_dir: Path, damage: str) -> None:
    expected = fresh_world(["banking"]).state_hash()
    (entry,) = template_files(template_dir)
    good = entry.read_bytes()
    if damage == "garbage":
        entry.write_bytes(b"\x00" * 100)
    elif damage == "truncated":
        entry.write_bytes(good[: len(good) // 2])
    else:
        DiskCache("mock-templates").put(entry.name, b'{"tables": []}\nnot an image')
    world = fresh_world(["banking"])
    assert world.state_hash() == expected == world.store.full_hash()
    assert entry.read_bytes() == good  # stored again, whole


def test_apps_outside_the_bundled_set_are_not_stored(template_dir: Path) -> None:
    world = fresh_world([NotesApp])  # its code is not in the key's digest
    assert world.state_hash() == world.store.full_hash()
    assert template_files(template_dir) == []
