"""`toolgym check` as a user runs it (issue 36, item 2): the real command in a subprocess over
every registered set and the pantry example (which must pass), and over a file of broken variants
of a real task, each caught on one line that names its file:line and task id.

Apps of a package are registered the way an installed package registers them: a `*.dist-info`
folder with an `entry_points.txt` on the subprocess's PYTHONPATH (what pip writes, without the
build): the pantry example's own entry points, and a test-only package of apps that break the
seeding rules (`random` and the wall clock)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from toolgym.envs.demo import bundled_task_sets

REPO = Path(__file__).resolve().parents[3]
PANTRY = REPO / "examples" / "pantry"
PANTRY_TASKS = PANTRY / "pantry_env" / "tasks.jsonl"


def _entry_points(section: str) -> str:
    """The `[project.entry-points."toolgym.*"]` tables of a pyproject.toml as entry_points.txt."""
    import tomllib

    groups = tomllib.loads(section)["project"]["entry-points"]
    return "".join(
        f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in entries.items()) + "\n"
        for group, entries in groups.items()
    )


def _install(site: Path, name: str, version: str, entry_points: str) -> None:
    """`name`'s metadata on `site`, as an installed distribution's (its code is on the path too)."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(entry_points)


FLAKY_APPS = '''
"""Apps that break the seeding rules, for `toolgym check`'s tests."""
import random
import time
from typing import Any

from toolgym.mocks import App, insert_rows, ok, read, write


class FlakyApp(App):
    name = "flaky"
    description = "Draws numbers from `random` and reads the wall clock."
    version = "1"
    schema = "CREATE TABLE flaky_draws (draw_id INTEGER PRIMARY KEY, value REAL NOT NULL);"

    def seed(self, db: Any, rng: random.Random, clock: Any) -> None:
        insert_rows(db, "flaky_draws", [{"draw_id": 1, "value": rng.random()}])

    @write
    def draw(self) -> dict[str, Any]:
        """Draw a number and keep it."""
        value = random.random()  # not the world's rng: another number every replay
        self.execute("INSERT INTO flaky_draws (value) VALUES (?)", (value,))
        return ok(value=value)

    @read
    def now(self) -> dict[str, Any]:
        """The time."""
        return ok(time=time.time_ns())  # the wall clock, not the world's


class TimeSeededApp(App):
    name = "flaky_seed"
    description = "Seeds from the wall clock."
    version = "1"
    schema = "CREATE TABLE flaky_seed_rows (row_id INTEGER PRIMARY KEY, value INTEGER NOT NULL);"

    def seed(self, db: Any, rng: random.Random, clock: Any) -> None:
        insert_rows(db, "flaky_seed_rows", [{"row_id": 1, "value": time.time_ns()}])

    @read
    def peek(self) -> dict[str, Any]:
        """The row."""
        return ok(rows=self.rows("SELECT * FROM flaky_seed_rows"))
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of installed packages: pantry-env (the example) and flaky-apps (test-only apps)."""
    site = tmp_path_factory.mktemp("site")
    pyproject = (PANTRY / "pyproject.toml").read_text(encoding="utf-8")
    _install(site, "pantry-env", "0.1.0", _entry_points(pyproject))
    (site / "flaky_apps.py").write_text(textwrap.dedent(FLAKY_APPS))
    flaky = "[toolgym.apps]\nflaky = flaky_apps:FlakyApp\nflaky_seed = flaky_apps:TimeSeededApp\n"
    _install(site, "flaky-apps", "0.1", flaky)
    return site


def check(*args: str, site: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`toolgym check ARGS` with the packages of `site` installed."""
    env: Mapping[str, str] = {
        **{k: v for k, v in os.environ.items() if k != "COLUMNS"},
        "PYTHONPATH": os.pathsep.join([str(site), str(PANTRY), str(REPO)]),
    }
    return subprocess.run(
        [sys.executable, "-m", "toolgym.cli", "check", *args],
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def test_every_registered_set_and_the_pantry_example_pass(site: Path, tmp_path: Path) -> None:
    names = list(bundled_task_sets())  # toolgym's own: this process has no pantry-env
    result = check(*names, str(PANTRY_TASKS), site=site, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    summary = result.stdout.splitlines()[-1]
    assert summary.startswith(f"toolgym check: {len(names) + 1} sets, ") and summary.endswith(" 0 problems")
    # ToolEyes' tasks have no golden chain: what is skipped for them is said, not left out
    assert "tooleyes/tasks.jsonl: note: 382 of 382 tasks have no golden chain" in result.stdout


def test_a_package_name_checks_every_set_it_registers(site: Path, tmp_path: Path) -> None:
    result = check("pantry_env", "--no-oracle", site=site, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "toolgym check: 1 set, 4 tasks, 0 problems"


def test_a_name_that_is_nothing_is_a_users_mistake(site: Path, tmp_path: Path) -> None:
    result = check("no-such-set", site=site, cwd=tmp_path)
    assert result.returncode == 2
    assert "no-such-set: no such task file, registered set or package with task sets" in result.stderr
    assert "pantry" in result.stderr and "ctool" in result.stderr  # what there is, to choose from


# ---- broken variants of a real task -------------------------------------------------------------
def _base() -> dict[str, Any]:
    """mtu-transfer-011 as the bundled set has it: a transfer, its answer, two balances after."""
    for line in bundled_task_sets()["mtu"].read_text(encoding="utf-8").splitlines():
        task: dict[str, Any] = json.loads(line)
        if task["id"] == "mtu-transfer-011":
            return task
    raise AssertionError("mtu-transfer-011 is gone from the mtu set")


def _variant(task_id: str, change: Any) -> dict[str, Any]:
    task = copy.deepcopy(_base())
    task["id"] = task_id
    change(task)
    return task


def _set(path: list[Any], value: Any) -> Any:
    def change(task: dict[str, Any]) -> None:
        target = task
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


def _call(name: str, expect_error: str | None = None, **arguments: Any) -> dict[str, Any]:
    step: dict[str, Any] = {"action": {"type": "tool_call", "name": name, "arguments": arguments}}
    if expect_error is not None:
        step["expect_error"] = expect_error
    return step


def _answer(text: str) -> dict[str, Any]:
    return {"action": {"type": "final_answer", "text": text}}


def _flaky(task_id: str, app: str, tool: str) -> dict[str, Any]:
    return {
        "id": task_id,
        "query": "Draw a number." if tool == "draw" else "What is there?",
        "apps": [app],
        "golden": [_call(tool), _answer("Done.")],
        "answer": {"whitelist": [["done"]]},
    }


BALANCE = _call("get_account_balance", account_number="123456")
FAILING_TRANSFER = _call(
    "transfer_funds",
    account_number="999999",
    source_account="checking",
    destination_account="savings",
    amount=500,
    transfer_speed="now",
)

# (task, what its one line says): each a real task with one mistake an author makes
BROKEN: list[tuple[dict[str, Any] | str, str]] = [
    (
        _variant("typo-key", lambda t: t.update(expected_sate=t.pop("expected_state"))),
        "unknown field 'expected_sate' (did you mean 'expected_state'?)",
    ),
    ('{"id": "not-json", "query": "x",', "not JSON"),
    (
        _variant("unknown-app", _set(["apps"], ["mtu_bankin"])),
        "unknown app 'mtu_bankin' (did you mean 'mtu_banking'?)",
    ),
    (_variant("unknown-tool", _set(["tools", 0], "transfer_fundz")), "unknown tool 'transfer_fundz'"),
    (
        _variant("golden-unknown-tool", _set(["golden", 0, "action", "name"], "transfer_fund")),
        "golden step #0 calls unknown tool 'transfer_fund'",
    ),
    (
        _variant("unknown-table", _set(["expected_state", 0, "table"], "mtu_banking_acounts")),
        "expected_state[0]: unknown table 'mtu_banking_acounts' (did you mean 'mtu_banking_accounts'?)",
    ),
    (
        _variant("unknown-column", _set(["expected_state", 1, "field"], "balance")),
        "expected_state[1]: table 'mtu_banking_accounts' has no column 'balance'",
    ),
    (
        _variant("unknown-where-column", _set(["expected_state", 0, "where"], {"account": "123456"})),
        "expected_state[0]: table 'mtu_banking_accounts' has no column 'account'",
    ),
    (
        _variant("bad-kind", _set(["expected_state", 0, "kind"], "field_equal")),
        "unknown kind 'field_equal'",
    ),
    (
        _variant("golden-fails", _set(["golden"], [FAILING_TRANSFER, _answer("Done: $500 moved.")])),
        "the golden chain fails on a fresh world: golden call #0 transfer_funds(",
    ),
    (
        _variant(
            "expected-error-missing",
            lambda t: t["golden"].insert(0, {**BALANCE, "expect_error": "tool_error"}),
        ),
        'golden call #0 get_account_balance({"account_number":"123456"}) was expected to fail with tool_error',
    ),
    (
        _variant("assertion-false-after", _set(["expected_state", 0, "value"], 999)),
        "expected_state[0] (field_equals mtu_banking_accounts where account_number='123456') does not hold "
        "after the golden chain",
    ),
    (
        _variant(
            "assertion-cannot-fail",
            lambda t: t["expected_state"].append(
                {"kind": "row_exists", "table": "mtu_banking_accounts", "where": {"account_number": "123456"}}
            ),
        ),
        "expected_state[2] (row_exists mtu_banking_accounts where account_number='123456') cannot fail",
    ),
    (
        _variant("whitelist-not-in-golden", _set(["answer", "whitelist", 0], ["700"])),
        "answer.whitelist[0] ['700'] is not found in the golden final answer",
    ),
    (_variant("empty-whitelist-group", _set(["answer", "whitelist", 1], [])), "whitelist[1]"),
    (
        _variant("blacklisted-golden-answer", _set(["answer", "blacklist"], [["4,325.50"]])),
        "answer.blacklist alias '4,325.50' is found in the golden final answer",
    ),
    (
        _variant(
            "nothing-to-score",
            lambda t: t.update(golden=[BALANCE, _answer("$4,825.50")], answer=None, expected_state=[]),
        ),
        "the oracle scores 0.00",
    ),
    (
        _flaky("flaky-write", "flaky", "draw"),
        "the golden chain is not deterministic: two replays from the seeded state give different end states",
    ),
    (
        _flaky("flaky-read", "flaky", "now"),
        "the golden chain is not deterministic: two replays from the seeded state give different results",
    ),
    (_flaky("time-seeded", "flaky_seed", "peek"), "app 'flaky_seed': seeding is not deterministic"),
]


def _write(path: Path, tasks: list[dict[str, Any] | str]) -> Path:
    lines = [
        t if isinstance(t, str) else json.dumps({k: v for k, v in t.items() if v is not None}) for t in tasks
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_every_broken_variant_is_one_line_naming_its_file_line_and_task(site: Path, tmp_path: Path) -> None:
    path = _write(tmp_path / "broken.jsonl", [task for task, _ in BROKEN])
    result = check(str(path), site=site, cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    for line_no, (task, says) in enumerate(BROKEN, 1):
        task_id = "" if isinstance(task, str) else f" {task['id']}:"
        place = f"{path}:{line_no}:{task_id} "
        found = [line for line in lines if line.startswith(place)]
        assert len(found) == 1, (place, found)
        assert says in found[0], (says, found[0])
    problems = [line for line in lines if line.startswith(f"{path}:") and ": note: " not in line]
    assert len(problems) == len(BROKEN)
    assert lines[-1] == f"toolgym check: 1 set, {len(BROKEN)} tasks, {len(BROKEN)} problems"


def test_a_clean_file_passes(site: Path, tmp_path: Path) -> None:
    """The real task; a chain that tries, meets the 404 it expects and explains; a tool task with a
    file (no apps); an app of an installed package: exit 0."""
    explained = _variant(
        "try-then-explain",
        lambda t: t.update(
            golden=[
                {**FAILING_TRANSFER, "expect_error": "tool_error"},
                _answer("Account 999999 does not exist."),
            ],
            answer={"whitelist": [["999999"], ["not exist", "does not exist"]]},
            expected_state=[],
        ),
    )
    (tmp_path / "sum.txt").write_text("2 + 3\n")
    calculator = {
        "id": "sum-file",
        "query": "What is the sum in the file?",
        "files": [{"name": "sum.txt", "path": "sum.txt", "type": "file"}],
        "tools": ["Calculator"],
        "golden": [_call("Calculator", expression="2 + 3"), _answer("The sum is 5.")],
        "answer": {"whitelist": [["5"]]},
    }
    pantry = json.loads(PANTRY_TASKS.read_text(encoding="utf-8").splitlines()[1])
    path = _write(tmp_path / "clean.jsonl", [_base(), explained, calculator, pantry])
    result = check(str(path), site=site, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == ["toolgym check: 1 set, 4 tasks, 0 problems"]


def test_a_missing_file_is_named(site: Path, tmp_path: Path) -> None:
    task = {
        "id": "no-receipt",
        "query": "What is on the receipt?",
        "files": [{"name": "image/receipt.png", "path": "receipt.png", "type": "image"}],
        "tools": ["OCR"],
        "golden": [_call("OCR", image="image/receipt.png"), _answer("Nothing.")],
        "answer": {"whitelist": [["nothing"]]},
    }
    path = _write(tmp_path / "files.jsonl", [task])
    result = check(str(path), site=site, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.splitlines()[0] == (
        f"{path}:1: no-receipt: file 'image/receipt.png' not found: {tmp_path / 'receipt.png'}"
    )
