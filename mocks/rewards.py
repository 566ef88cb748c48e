"""State-based rewards for mock worlds.

* Golden state: replay the task's golden tool calls on a fresh world (same apps, seed, clock) and
  compare its state hash with the episode's final hash (tau-bench style). Volatile columns are
  outside the hash, so bookkeeping timestamps do not matter; the clock and the id counters are
  inside it, so the episode must have used as many ids as the golden chain.
* State assertions: a short list of checks on the final state (a row exists, is absent, a field
  has a value, a count), written in task files as JSON.
* Collateral damage: the rows where the episode's final state differs from the golden replay,
  classified as unexpected (the episode changed a row the golden run left alone), missing (the
  golden run changed it, the episode did not) or mismatch (both changed it, differently).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from toolgym.actions import Observation, ToolCall
from toolgym.canonical import canonical_json
from toolgym.errors import ErrorKind
from toolgym.mocks.store import BASE_POS, TableInfo, Values, jsonable, quote_ident
from toolgym.mocks.world import AppLike, MockWorld
from toolgym.tasks import STATE_ASSERTIONS as STATE_ASSERTIONS
from toolgym.tasks import FieldEquals as FieldEquals
from toolgym.tasks import GoldenStep, suggestion
from toolgym.tasks import RowAbsent as RowAbsent
from toolgym.tasks import RowCount as RowCount
from toolgym.tasks import RowExists as RowExists
from toolgym.tasks import StateAssertion as StateAssertion
from toolgym.tools import DEFAULT_CLOCK

GoldenCall = ToolCall | GoldenStep | Mapping[str, Any]


class GoldenReplayError(RuntimeError):
    """A golden call that did not do what the task says on the fresh world: it failed and was not
    meant to, failed with another kind than `expected`, or was meant to fail (`expect_error`) and
    did not. The task or the app is wrong, not the agent. `index` is the step's place in the chain."""

    def __init__(
        self, index: int, call: ToolCall, obs: Observation, expected: ErrorKind | None = None
    ) -> None:
        super().__init__(
            f"golden call #{index} {call.name}({canonical_json(call.arguments)}) {_outcome(obs, expected)}"
        )
        self.index, self.call, self.observation, self.expected = index, call, obs, expected


def _outcome(obs: Observation, expected: ErrorKind | None) -> str:
    """What went wrong with a golden call, in words, on one line."""
    text = " ".join(obs.text.split())
    if obs.error is None:
        return f"was expected to fail with {expected} (expect_error) but succeeded: {text}"
    text = text.removeprefix(f"{obs.error.kind}: ")  # the line names the kind already
    if expected is None:
        return f"failed ({obs.error.kind}): {text}"
    return f"failed with {obs.error.kind}, expected {expected} (expect_error): {text}"


def golden_expectations(calls: Iterable[GoldenCall]) -> list[tuple[int, ToolCall, ErrorKind | None]]:
    """The tool calls of a golden chain with their places in it and the error kind each must fail
    with (None: it must succeed): ToolCalls, GoldenSteps (other actions skipped; `expect_error`) or
    {"name": ..., "arguments": {...}, "expect_error"?: ...} dicts."""
    out: list[tuple[int, ToolCall, ErrorKind | None]] = []
    for i, c in enumerate(calls):
        if isinstance(c, ToolCall):
            out.append((i, c, None))
        elif isinstance(c, GoldenStep):
            if isinstance(c.action, ToolCall):
                out.append((i, c.action, c.expect_error))
        else:
            expected = c.get("expect_error")
            call = ToolCall(name=str(c["name"]), arguments=dict(c.get("arguments", {})))
            out.append((i, call, None if expected is None else ErrorKind(expected)))
    return out


def golden_tool_calls(calls: Iterable[GoldenCall]) -> list[ToolCall]:
    """The tool calls of a golden chain: ToolCalls, GoldenSteps (other actions skipped) or
    {"name": ..., "arguments": {...}} dicts."""
    return [call for _, call, _ in golden_expectations(calls)]


def replay_calls(
    world: MockWorld, golden_calls: Iterable[GoldenCall], *, strict: bool = True
) -> list[Observation]:
    """The golden calls of `world`'s tools run on it as it is, and what each answered. With
    strict, a call that does not do what the chain says raises GoldenReplayError: a call that
    fails unless it is expected to fail with that kind (a GoldenStep's `expect_error`), and a call
    expected to fail that succeeds. A call of a tool the world does not have (a registered tool a
    task uses beside its apps: a converter, OCR) is skipped: it cannot touch the world's state."""
    observations: list[Observation] = []
    tools = world.tools
    for i, call, expected in golden_expectations(golden_calls):
        if call.name not in tools:
            continue
        obs = world.step(call)
        if strict and (obs.error.kind if obs.error is not None else None) != expected:
            raise GoldenReplayError(i, call, obs, expected)
        observations.append(obs)
    return observations


def replay_golden(
    apps: Iterable[AppLike],
    seed: int = 0,
    clock: datetime = DEFAULT_CLOCK,
    golden_calls: Iterable[GoldenCall] = (),
    *,
    prefixes: Mapping[str, str] | None = None,
    strict: bool = True,
) -> MockWorld:
    """A fresh world with the golden calls applied (`replay_calls`: GoldenReplayError with strict
    for a call that does not do what the chain says). Without strict, failures are skipped (they
    changed nothing: calls are atomic)."""
    world = MockWorld(apps, seed=seed, clock=clock, prefixes=prefixes)
    try:
        replay_calls(world, golden_calls, strict=strict)
    except GoldenReplayError:
        world.close()
        raise
    return world


def replay_golden_state_hash(
    apps: Iterable[AppLike],
    seed: int = 0,
    clock: datetime = DEFAULT_CLOCK,
    golden_calls: Iterable[GoldenCall] = (),
    *,
    prefixes: Mapping[str, str] | None = None,
    strict: bool = True,
) -> str:
    """The state hash a correct episode ends with: compare it with the episode's final hash."""
    world = replay_golden(apps, seed, clock, golden_calls, prefixes=prefixes, strict=strict)
    try:
        return world.state_hash()
    finally:
        world.close()


# ---- state assertions ---------------------------------------------------------------------------
# The assertion models are part of the task format (toolgym.tasks checks a task's expected_state
# when it is read): imported above from there and re-exported, evaluated here.


class AssertionResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    assertion: StateAssertion
    passed: bool
    detail: str
    actual: Any = None


class AssertionReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    passed: bool
    results: list[AssertionResult]

    @property
    def score(self) -> float:
        """Fraction of assertions that hold (1.0 for an empty list)."""
        return sum(r.passed for r in self.results) / len(self.results) if self.results else 1.0


def _table(world: MockWorld, name: str) -> TableInfo:
    info = world.store.tables.get(name)
    if info is None or info.internal:
        raise ValueError(
            f"state assertion names unknown table {name!r}{suggestion(name, world.table_names)}; "
            f"tables: {world.table_names}"
        )
    return info


def _where_sql(info: TableInfo, where: Mapping[str, Any]) -> tuple[str, list[Any]]:
    clauses, params = [], []
    for col, value in where.items():
        if col not in info.columns:
            raise ValueError(
                f"state assertion: table {info.name!r} has no column {col!r}{suggestion(col, info.columns)}"
            )
        clauses.append(f"{quote_ident(col)} IS ?")  # IS: a None in `where` matches NULL
        params.append(value)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def _check(world: MockWorld, a: StateAssertion) -> AssertionResult:
    info = _table(world, a.table)
    where, params = _where_sql(info, a.where)
    conn, table = world.store.conn, quote_ident(a.table)
    if isinstance(a, FieldEquals):
        if a.field not in info.columns:
            raise ValueError(
                f"state assertion: table {a.table!r} has no column {a.field!r}{suggestion(a.field, info.columns)}"
            )
        values = [r[0] for r in conn.execute(f"SELECT {quote_ident(a.field)} FROM {table}{where}", params)]
        if not values:
            return AssertionResult(assertion=a, passed=False, detail="no row matches", actual=[])
        passed = all(v == a.value for v in values)
        detail = f"{a.field} == {a.value!r}" if passed else f"{a.field} is {values!r}, expected {a.value!r}"
        return AssertionResult(assertion=a, passed=passed, detail=detail, actual=jsonable(values))
    count = int(conn.execute(f"SELECT count(*) FROM {table}{where}", params).fetchone()[0])
    if isinstance(a, RowExists):
        return AssertionResult(assertion=a, passed=count > 0, detail=f"{count} matching rows", actual=count)
    if isinstance(a, RowAbsent):
        return AssertionResult(assertion=a, passed=count == 0, detail=f"{count} matching rows", actual=count)
    return AssertionResult(
        assertion=a, passed=count == a.n, detail=f"{count} rows, expected {a.n}", actual=count
    )


def check_assertions(
    world: MockWorld, assertions: Iterable[StateAssertion | Mapping[str, Any]]
) -> AssertionReport:
    """Evaluate assertions (models or their JSON dicts) on a world. An unknown table or column is
    a ValueError: a typo in a task must not read as the agent's failure."""
    parsed = STATE_ASSERTIONS.validate_python(list(assertions))
    results = [_check(world, a) for a in parsed]
    return AssertionReport(passed=all(r.passed for r in results), results=results)


# ---- collateral damage --------------------------------------------------------------------------
DifferenceKind = Literal["unexpected", "missing", "mismatch"]


class RowDifference(BaseModel):
    model_config = ConfigDict(frozen=True)

    table: str
    key: dict[str, Any]  # primary key columns
    kind: DifferenceKind
    expected: dict[str, Any] | None  # the golden replay's row (None: absent there)
    actual: dict[str, Any] | None  # the episode's row (None: absent there)


class CollateralReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    passed: bool
    differences: list[RowDifference]
    tables: list[str]  # tables with at least one difference
    method: Literal["changes", "scan"]  # O(changes) from the undo logs, or a full scan

    def counts(self) -> dict[str, int]:
        out = {"unexpected": 0, "missing": 0, "mismatch": 0}
        for d in self.differences:
            out[d.kind] += 1
        return out


def _project(info: TableInfo, values: Values | None, ignore: frozenset[str]) -> dict[str, Any] | None:
    if values is None:
        return None
    row = {c: values[i] for c, i in zip(info.hashed, info.hashed_idx, strict=True) if c not in ignore}
    return dict(jsonable(row))


def _touched(world: MockWorld) -> dict[str, dict[tuple[Any, ...], tuple[Values | None, Values | None]]]:
    """Per table and primary key: (row at the seeded state, row now), for rows changed since reset."""
    out: dict[str, dict[tuple[Any, ...], tuple[Values | None, Values | None]]] = {}
    tables = world.store.tables
    changes = world.store.changes_since(BASE_POS)
    for (tbl, _rid), (old, _new) in changes.items():
        if old is not None:
            out.setdefault(tbl, {})[tables[tbl].key_of(old)] = (old, None)
    for (tbl, _rid), (_old, new) in changes.items():
        if new is not None:
            key = tables[tbl].key_of(new)
            base = out.get(tbl, {}).get(key, (None, None))[0]
            out.setdefault(tbl, {})[key] = (base, new)
    return out


def _scan(world: MockWorld, info: TableInfo) -> dict[tuple[Any, ...], Values]:
    cols = ", ".join(quote_ident(c) for c in info.columns)
    return {
        info.key_of(tuple(r)): tuple(r)
        for r in world.store.conn.execute(f"SELECT {cols} FROM {quote_ident(info.name)}")
    }


def collateral_damage(
    golden: MockWorld,
    episode: MockWorld,
    *,
    ignore_tables: Sequence[str] = (),
    ignore_columns: Mapping[str, Sequence[str]] | None = None,
) -> CollateralReport:
    """Rows where the episode's state differs from the golden replay's, beyond volatile columns
    and whatever is ignored. O(changes) when both worlds come from the same template (same apps,
    seed and clock: the usual case), a full scan of both otherwise."""
    ignore_cols = {t: frozenset(cs) for t, cs in (ignore_columns or {}).items()}
    tables = {
        n: t
        for n, t in golden.store.tables.items()
        if t.in_hash and not t.internal and n not in ignore_tables
    }
    if set(tables) - set(episode.store.tables):
        raise ValueError("the two worlds do not have the same tables")
    differences: list[RowDifference] = []
    # equal keys: same apps, seed and clock, hence the same seeded rows (seeding is deterministic)
    same_template = golden.store.template.key == episode.store.template.key
    if same_template:
        g_touched, e_touched = _touched(golden), _touched(episode)
        for name, info in tables.items():
            g, e = g_touched.get(name, {}), e_touched.get(name, {})
            ignore = ignore_cols.get(name, frozenset())
            for key in sorted(set(g) | set(e), key=lambda k: canonical_json(jsonable(list(k)))):
                base = (g.get(key) or e.get(key) or (None, None))[0]
                g_row = _project(info, g[key][1] if key in g else base, ignore)
                e_row = _project(info, e[key][1] if key in e else base, ignore)
                if g_row == e_row:
                    continue
                base_row = _project(info, base, ignore)
                kind: DifferenceKind = (
                    "unexpected" if g_row == base_row else "missing" if e_row == base_row else "mismatch"
                )
                differences.append(_difference(info, key, kind, g_row, e_row))
    else:
        for name, info in tables.items():
            ignore = ignore_cols.get(name, frozenset())
            g_rows, e_rows = _scan(golden, info), _scan(episode, info)
            for key in sorted(set(g_rows) | set(e_rows), key=lambda k: canonical_json(jsonable(list(k)))):
                g_row = _project(info, g_rows.get(key), ignore)
                e_row = _project(info, e_rows.get(key), ignore)
                if g_row == e_row:
                    continue
                kind = "missing" if e_row is None else "unexpected" if g_row is None else "mismatch"
                differences.append(_difference(info, key, kind, g_row, e_row))
    return CollateralReport(
        passed=not differences,
        differences=differences,
        tables=sorted({d.table for d in differences}),
        method="changes" if same_template else "scan",
    )


def _difference(
    info: TableInfo,
    key: tuple[Any, ...],
    kind: DifferenceKind,
    expected: dict[str, Any] | None,
    actual: dict[str, Any] | None,
) -> RowDifference:
    return RowDifference(
        table=info.name,
        key=dict(jsonable(dict(zip(info.pk, key, strict=True)))),
        kind=kind,
        expected=expected,
        actual=actual,
    )


def state_matches(golden: MockWorld, episode: MockWorld) -> bool:
    """The tau-bench criterion: equal state hashes (volatile columns aside)."""
    return golden.state_hash() == episode.state_hash()
