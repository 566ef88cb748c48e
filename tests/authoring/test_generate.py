"""The generator of verified tasks (authoring/generate.py) on real seeded worlds: determinism, no
duplicate queries, every shape, expected_state that fails initially, a holdout by template, every
task through toolgym check's own checker, and plug-in apps (a real distribution on sys.path)."""

from __future__ import annotations

import hashlib
import random
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolgym import plugins
from toolgym.actions import AskUser, FinalAnswer, ToolCall
from toolgym.authoring.check import check_tasks
from toolgym.authoring.generate import (
    SHAPES,
    Draft,
    Generated,
    Skip,
    Template,
    dump,
    generate,
    held_out,
    resolve_apps,
    templates_for,
)
from toolgym.mocks.rewards import check_assertions
from toolgym.mocks.world import MockWorld
from toolgym.tasks import Task

APPS = ["banking", "shopping", "messaging", "express"]
N = 160  # enough for every template of these apps to give a few tasks


@pytest.fixture(scope="module")
def generated() -> Generated:
    return generate(APPS, N, seed=5, jobs=2)


def test_the_same_arguments_give_the_same_bytes_whatever_the_pool(generated: Generated) -> None:
    again = generate(APPS, N, seed=5, jobs=1)
    assert dump(again.tasks) == dump(generated.tasks)
    other = generate(APPS, 40, seed=6, jobs=1)
    assert {t.query for t in other.tasks} != {t.query for t in generated.tasks[:40]}


def test_queries_and_ids_are_unique_and_tasks_are_tagged(generated: Generated) -> None:
    tasks = generated.tasks
    assert len(tasks) == N
    assert len({t.query for t in tasks}) == N
    assert len({t.id for t in tasks}) == N
    for task in tasks:
        meta = task.metadata
        assert meta["template"] in generated.templates
        assert meta["shape"] in ("read", "write", "ask", "refuse")
        assert meta["chain_length"] == sum(isinstance(s.action, ToolCall) for s in task.golden)
        assert meta["difficulty"] in ("easy", "medium", "hard")
        assert set(meta["apps"]) <= set(task.apps or [])


def _by_shape(tasks: list[Task], shape: str) -> list[Task]:
    return [t for t in tasks if t.metadata["shape"] == shape]


def test_every_shape_is_there(generated: Generated) -> None:
    tasks = generated.tasks
    lengths = {t.metadata["chain_length"] for t in tasks}
    assert {1, 2, 3} <= lengths and max(lengths) >= 4
    spans = {len(t.metadata["apps"]) for t in tasks}
    assert {1, 2, 3} <= spans
    reads = _by_shape(tasks, "read")
    assert any(t.metadata["chain_length"] >= 2 for t in reads)
    assert all(t.answer is not None and t.answer.whitelist for t in reads)
    writes = _by_shape(tasks, "write")
    assert writes and all(t.expected_state for t in writes)
    asks = _by_shape(tasks, "ask")
    assert asks
    for task in asks:
        assert task.user is not None and task.user.must_not_volunteer
        assert any(isinstance(s.action, AskUser) for s in task.golden)
        for slot in task.user.must_not_volunteer:
            assert task.user.known[slot] not in task.query
    refusals = _by_shape(tasks, "refuse")
    assert refusals
    for task in refusals:  # the answer alone, or after lookups that change nothing
        assert type(task.golden[-1].action) is FinalAnswer and not task.expected_state
        assert all(type(s.action) is ToolCall for s in task.golden[:-1])
        assert task.answer is not None and task.answer.whitelist is not None
        assert "cannot" in task.answer.whitelist[0]
    assert any(len(t.golden) == 1 for t in refusals)
    withheld = [t for t in refusals if "transfer" not in (t.tools or []) and "banking" in (t.apps or [])]
    assert withheld, "a refusal whose needed tool is not offered"


def test_expected_state_holds_after_the_chain_and_fails_on_the_initial_world(generated: Generated) -> None:
    for task in _by_shape(generated.tasks, "write")[:25]:
        with MockWorld(task.apps or [], seed=task.seed, clock=task.clock) as world:
            before = check_assertions(world, task.expected_state)
            assert not any(r.passed for r in before.results), task.id
            for step in task.golden:
                if isinstance(step.action, ToolCall):
                    assert world.step(step.action).error is None
            assert check_assertions(world, task.expected_state).passed, task.id


def test_no_query_names_an_id_the_user_could_not_know(generated: Generated) -> None:
    for task in generated.tasks:
        made = {v for s in task.golden if isinstance(s.action, ToolCall) for v in s.action.arguments.values()}
        # a product, bill or friend's id is found by a call: it never appears in the query
        for word in task.query.replace(".", " ").replace("?", " ").split():
            if word.startswith(("PRD-", "BILL-", "TXN-", "TRF-")):
                pytest.fail(f"{task.id}: query names {word} ({made})")


def test_every_task_passes_toolgym_check(generated: Generated) -> None:
    assert check_tasks(generated.tasks[:60]) == []


def test_holdout_keeps_whole_templates_apart() -> None:
    result = generate(["banking", "shopping"], 90, seed=2, holdout=0.25, jobs=1)
    train = {t.metadata["template"] for t in result.tasks}
    held = {t.metadata["template"] for t in result.holdout}
    assert held and train and not held & train
    assert held <= set(result.held_out_templates)
    assert len(result.tasks) + len(result.holdout) == 90
    assert held_out(result.templates, 0.25, 2) == result.held_out_templates


def test_a_run_smaller_than_the_templates_samples_them_all() -> None:
    # 10 tasks over the templates of banking and shopping (and the cross-app ones): a seeded sample, not
    # the first ten templates registered (all banking's)
    result = generate(["banking", "shopping"], 10, seed=0, jobs=1)
    groups = {t.metadata["template"].split(".")[0] for t in result.tasks}
    assert len(result.tasks) == 10 and {"banking", "shopping"} <= groups
    assert len({t.metadata["template"] for t in result.tasks}) == 10


def test_app_groups_and_bad_names() -> None:
    assert "express_zh" in resolve_apps(["ctool_zh"])
    assert resolve_apps(["banking", "banking"]) == ["banking"]
    with pytest.raises(ValueError, match="no app or app group 'bankng'"):
        resolve_apps(["bankng"])
    with pytest.raises(ValueError, match="--holdout"):
        held_out(["a", "b"], 1.5, 0)
    names = [t.name for t in templates_for(["express_zh", "messaging_zh"])]
    assert "ctool_zh.express.track" in names and all(n.startswith("ctool_zh.") for n in names)


def test_chinese_templates_phrase_in_chinese() -> None:
    result = generate(["express_zh"], 12, seed=0, jobs=1)
    assert all(any("\u4e00" <= c <= "\u9fff" for c in t.query) for t in result.tasks)
    assert {t.metadata["lang"] for t in result.tasks} == {"zh"}


def _leaky(d: Draft) -> None:
    bill = d.pick("SELECT bill_id FROM bank_bills ORDER BY bill_id")["bill_id"]
    d.query(["Pay bill {b}."], b=bill)  # the user could not know a bill id: never a task
    d.answer("ok", "ok")


def _nothing_changes(d: Draft) -> None:
    account = d.pick("SELECT account_id FROM bank_accounts WHERE status = 'frozen' ORDER BY account_id")
    d.knows(account["account_id"])
    d.query(["Deposit into {a}."], a=account["account_id"])
    d.call("deposit", account_id=account["account_id"], amount=5.0)  # a frozen account: 409, a Skip
    d.answer("done", "done")


def _refuses_after_a_write(d: Draft) -> None:
    d.query(["Close my account ACC-10001."])
    d.knows("ACC-10001")
    d.call("deposit", account_id="ACC-10001", amount=5.0)  # a refusal changes nothing: never a task
    d.refuse((), "I cannot close accounts.")


def _fails_that_succeeds(d: Draft) -> None:
    d.query(["What's in ACC-10001?"])
    d.knows("ACC-10001")
    d.fail("get_balance", account_id="ACC-10001")  # it exists: no evidence of anything missing
    d.refuse((), "I cannot find it.")


def _blocked_that_is_not(d: Draft) -> None:
    d.query(["Put $5 into ACC-10001."])
    d.knows("ACC-10001")
    d.blocked("deposit", account_id="ACC-10001", amount=5.0)  # nothing blocks it: no precondition
    d.call("deposit", account_id="ACC-10001", amount=5.0)
    d.answer("Done.")


def test_drafts_that_leak_or_fail_give_no_task() -> None:
    for fn in (_leaky, _nothing_changes, _refuses_after_a_write, _fails_that_succeeds, _blocked_that_is_not):
        result = generate([], 3, templates=[Template(f"t.{fn.__name__}", ("banking",), fn)], jobs=1)
        assert result.tasks == []
        assert result.skipped
    skipped = generate(
        [], 1, templates=[Template("t.w", ("banking",), _refuses_after_a_write)], jobs=1
    ).skipped
    assert any("a refusal's golden chain is reads" in reason for reason in skipped), skipped


def test_blocked_tries_the_write_on_a_fork_and_records_nothing() -> None:
    with MockWorld(["banking"], seed=0) as world:
        before = world.state_hash()
        d = Draft(Template("t.blocked", ("banking",), _leaky), world, random.Random(0))
        message = d.blocked("transfer", from_account_id="ACC-10001", to_account_id="ACC-10002", amount=10**7)
        assert message.startswith("422 Unprocessable Entity: insufficient funds in ACC-10001")
        assert d.steps == [] and d.blocked_by == message and world.state_hash() == before


PLUGIN = '''
from typing import Annotated, Any
from toolgym.mocks.app import App, format_id, insert_rows, read, write
from toolgym.mocks.responses import ok
from toolgym.authoring.generate import Draft, Template
from toolgym.tools import Param


class ShelfApp(App):
    name = "shelf"
    description = "A bookshelf."
    version = "1"
    schema = """
    CREATE TABLE shelf_books (book_id TEXT PRIMARY KEY, title TEXT NOT NULL, pages INTEGER NOT NULL,
                              lent_to TEXT);
    """

    def seed(self, db, rng, clock):
        insert_rows(db, "shelf_books", [
            {"book_id": format_id("BK", i, 4), "title": f"Book {i}", "pages": rng.randint(80, 900),
             "lent_to": None} for i in range(1, 41)
        ])

    @read
    def get_book(self, book_id: Annotated[str, Param("book id")]) -> dict[str, Any]:
        """How long a book is."""
        b = self.get_or_404("shelf_books", "book_id", book_id, what="book")
        return ok(title=b["title"], pages=b["pages"])

    @write
    def lend_book(self, book_id: Annotated[str, Param("book id")], friend: Annotated[str, Param("who")]) -> dict[str, Any]:
        """Lend a book to a friend."""
        self.get_or_404("shelf_books", "book_id", book_id, what="book")
        self.execute("UPDATE shelf_books SET lent_to = ? WHERE book_id = ?", (friend, book_id))
        return ok(book_id=book_id, lent_to=friend)


def lend(d: Draft) -> None:
    book = d.pick("SELECT * FROM shelf_books ORDER BY book_id")
    friend = d.choice(["Ana", "Bo", "Cy", "Di"])
    d.knows(book["book_id"])
    d.query(["Lend my book {b} to {f}.", "{f} may borrow {b}."], b=book["book_id"], f=friend)
    d.call("lend_book", book_id=book["book_id"], friend=friend)
    d.answer(f"{book['title']} is lent to {friend}.", friend)


TEMPLATES = [Template("shelf.lend", ("shelf",), lend)]
'''


@pytest.fixture
def shelf_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A package `shelf-plugin` laid out as an installed one: an app, and (entry point `lend`) a
    template; `with_templates` decides whether the template's entry point is there."""
    root = tmp_path / "site"
    root.mkdir()
    (root / "shelf_plugin.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    info = root / "shelf_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: shelf-plugin\nVersion: 0.1\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(root))
    yield info
    monkeypatch.undo()
    sys.modules.pop("shelf_plugin", None)
    plugins.refresh()


def _entry_points(info: Path, text: str) -> None:
    (info / "entry_points.txt").write_text(textwrap.dedent(text), encoding="utf-8")
    plugins.refresh()


def test_a_plugin_app_without_templates_gets_generic_read_tasks(shelf_plugin: Path) -> None:
    _entry_points(shelf_plugin, "[toolgym.apps]\nshelf = shelf_plugin:ShelfApp\n")
    result = generate(["shelf"], 6, seed=0, jobs=1)
    assert len(result.tasks) == 6
    assert {t.metadata["template"] for t in result.tasks} == {"shelf.generic.get_book"}
    assert all(t.metadata["shape"] == "read" and t.answer is not None for t in result.tasks)
    assert check_tasks(result.tasks) == []


def test_a_plugin_registers_its_own_templates(shelf_plugin: Path) -> None:
    _entry_points(
        shelf_plugin,
        "[toolgym.apps]\nshelf = shelf_plugin:ShelfApp\n[toolgym.templates]\nshelf = shelf_plugin:TEMPLATES\n",
    )
    result = generate(["shelf"], 8, seed=0, jobs=1)
    assert {t.metadata["template"] for t in result.tasks} == {"shelf.lend"}
    task = result.tasks[0]
    assert task.metadata["shape"] == "write"
    assert [a["kind"] for a in task.expected_state] == ["field_equals"]
    assert check_tasks(result.tasks) == []


def test_an_unknown_skip_reason_is_counted_not_raised() -> None:
    def never(d: Draft) -> None:
        raise Skip("the world never fits")

    result = generate([], 2, templates=[Template("t.never", ("banking",), never)], jobs=1)
    assert result.tasks == [] and result.skipped["the world never fits"] > 0


HELD_LOCK = """
import sys, threading, time
from toolgym.authoring.generate import Template, generate
from toolgym.authoring.templates.banking import TEMPLATES

LOCK = threading.Lock()  # what a worker takes while it drafts (a log handler's, a pool's, a client's)


def draft_under_the_lock(d):
    with LOCK:
        TEMPLATES[0].draft(d)


if __name__ == "__main__":
    threading.Thread(target=lambda: LOCK.acquire() and time.sleep(3600), daemon=True).start()
    time.sleep(0.2)  # the other thread holds the lock now, as a busy thread may when the pool starts
    held = Template("held." + TEMPLATES[0].name, TEMPLATES[0].apps, draft_under_the_lock)
    tasks = generate([], 4, seed=1, jobs=2, templates=[held]).tasks
    print(f"generated {len(tasks)}")
"""


def test_a_process_with_other_threads_generates_on_workers_without_hanging(tmp_path: Path) -> None:
    """A process that runs other threads (a test runner's, a server's, a Ray client's) is never
    forked for the generator's workers: a fork copies a lock another thread holds, and the worker
    that takes it waits forever while the pool waits on the worker (stop 42's CI hung for an hour
    with pytest-xdist's workers forking theirs)."""
    script = tmp_path / "held.py"
    script.write_text(HELD_LOCK, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "generated 4"


def test_the_workers_end_with_a_generator_killed_with_sigkill(tmp_path: Path) -> None:
    """`toolgym generate` killed with SIGKILL mid-run leaves no worker behind: they exit when its
    end of their lifeline closes (an orphan waited for good on a result queue no one read)."""
    import psutil  # type: ignore[import-untyped]  # in the dev install

    command = [sys.executable, "-m", "toolgym.cli", "generate", "--apps", "banking,shopping,mtu"]
    command += ["--n", "50000", "--jobs", "2", "--out", str(tmp_path / "tasks.jsonl")]
    driver = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        parent = psutil.Process(driver.pid)
        workers: list[psutil.Process] = []
        deadline = time.monotonic() + 120  # the workers start once the templates are read
        while len(workers) < 2 and time.monotonic() < deadline:
            workers = parent.children()
            time.sleep(0.2)
        assert len(workers) == 2, "the generator started no workers"
        time.sleep(2)  # at work: drafting, or waiting to hand results back
    finally:
        driver.kill()
        driver.wait()
    _, alive = psutil.wait_procs(workers, timeout=60)
    assert not alive, f"workers outlived their driver: {[p.pid for p in alive]}"


# `scripts/finetune.py`'s data: `toolgym generate --apps banking,shopping,ctool,ctool_zh,mtu,teval
# --n 400 --seed 0 --holdout 0.1`, whose training file the fine-tune was made from (docs/finetune.md)
FINETUNE_APPS = ["banking", "shopping", "ctool", "ctool_zh", "mtu", "teval"]
FINETUNE_SHA256 = "44f4997724be9b154db1e01ea6fcff69d274bc67376af7d99d82bd638c825d69"


def test_the_default_output_is_the_fine_tunes_data_byte_for_byte() -> None:
    """Templates that come only when asked for (a behaviour category's, the dynamic ones) leave the
    default run as it was: the same 358 training tasks, to the byte."""
    result = generate(FINETUNE_APPS, 400, seed=0, holdout=0.1, jobs=2)
    assert not any(t.dynamic or t.category not in SHAPES for t in result.all_tasks)
    assert hashlib.sha256(dump(result.tasks).encode()).hexdigest() == FINETUNE_SHA256
