"""What the tests of every template module share: generate a module's templates through the real
engine (every task checked by `toolgym check`'s checker where it is drafted), check the tasks again
from scratch, hold each task to the promises of its shape, read the worlds for ids no user knows,
and compare two runs byte for byte."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from toolgym.authoring.check import check_tasks
from toolgym.authoring.generate import Generated, Template, dump, generate
from toolgym.mocks.world import MockWorld

PER_TEMPLATE = 2


def generated(
    templates: Sequence[Template], per_template: int = PER_TEMPLATE, seed: int = 0, jobs: int = 1
) -> Generated:
    return generate([], per_template * len(templates), seed, templates=list(templates), jobs=jobs)


def assert_every_template_passes(
    templates: Sequence[Template], per_template: int = PER_TEMPLATE, group: str | None = None
) -> Generated:
    """Each template gives its tasks, none dropped, every task passes `toolgym check` again, and
    each shape has what makes it that shape; with `group`, templates and apps are the group's."""
    result = generated(templates, per_template)
    assert not result.dropped, result.dropped
    made = Counter(t.metadata["template"] for t in result.all_tasks)
    assert {t.name for t in templates} == set(made), sorted({t.name for t in templates} - set(made))
    tasks = result.all_tasks
    assert len({t.query for t in tasks}) == len(tasks)
    problems = check_tasks(tasks)
    assert problems == [], problems[:5]
    for task in tasks:
        meta = task.metadata
        assert meta["shape"] in ("read", "write", "ask", "refuse")
        if group is not None:
            assert meta["template"].startswith(f"{group}.")
            assert all(app.startswith(f"{group}_") for app in meta["apps"])
        if meta["shape"] == "write":
            assert task.expected_state
        if meta["shape"] == "ask":
            assert task.user is not None and task.user.known
            assert task.user.must_not_volunteer == list(task.user.known)
            assert not any(v in task.query for v in task.user.known.values())
        if meta["shape"] == "refuse":  # the answer, after lookups at most
            assert task.golden[-1].action.type == "final_answer"
            assert all(s.action.type == "tool_call" for s in task.golden[:-1])
            assert task.answer is not None and not task.expected_state
    return result


def world_ids(result: Generated, columns: Sequence[tuple[str, str]]) -> set[str]:
    """The values of `columns` ((table, column) pairs) in every world the tasks use."""
    found: set[str] = set()
    for apps, seed in sorted({(tuple(t.apps or ()), t.seed) for t in result.all_tasks}):
        with MockWorld(list(apps), seed=seed) as world:
            for table, column in columns:
                if table in world.table_names:
                    found.update(
                        str(r[0]) for r in world.store.conn.execute(f'SELECT "{column}" FROM "{table}"')
                    )
    return found


def assert_no_query_names(result: Generated, columns: Sequence[tuple[str, str]]) -> None:
    """No query names a value of `columns`: ids a user finds through a call, never knows. Words are
    read with and without dots (an arXiv id has them; a sentence's full stop must not hide an id)."""
    secrets = world_ids(result, columns)
    assert secrets
    for task in result.all_tasks:
        words = set(re.findall(r"[\w-]+", task.query)) | set(re.findall(r"[\w.-]+", task.query))
        assert not words & secrets, (task.id, task.query, words & secrets)


def assert_deterministic(templates: Sequence[Template], seed: int = 5) -> None:
    """The same arguments give byte-identical tasks, in one process or two."""
    one = dump(generated(templates, 1, seed=seed, jobs=1).all_tasks)
    two = dump(generated(templates, 1, seed=seed, jobs=2).all_tasks)
    assert one == two
    assert len(one.splitlines()) == len(templates)
