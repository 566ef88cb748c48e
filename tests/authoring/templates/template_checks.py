"""What the tests of the banking, shopping, ctool and cross-app templates share: generate a
module's templates through the real engine (every task checked by `toolgym check`'s checker where
it is drafted), check the tasks again from scratch, and read the worlds for ids no user knows."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from toolgym.authoring.check import check_tasks
from toolgym.authoring.generate import Generated, Template, generate
from toolgym.mocks.world import MockWorld

PER_TEMPLATE = 2


def assert_every_template_passes(templates: Sequence[Template], seed: int = 0) -> Generated:
    """Each template gives its tasks, none dropped, every task passes `toolgym check` again, and
    each shape has what makes it that shape."""
    result = generate([], PER_TEMPLATE * len(templates), seed, templates=templates, jobs=1)
    assert not result.dropped, result.dropped
    made = Counter(t.metadata["template"] for t in result.all_tasks)
    assert {t.name for t in templates} == set(made), sorted({t.name for t in templates} - set(made))
    tasks = result.all_tasks
    assert len({t.query for t in tasks}) == len(tasks)
    assert check_tasks(tasks) == []
    for task in tasks:
        shape = task.metadata["shape"]
        if shape == "write":
            assert task.expected_state
        if shape == "ask":
            assert task.user is not None
            assert not any(v in task.query for v in task.user.known.values())
        if shape == "refuse":
            assert len(task.golden) == 1 and task.answer is not None
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
    """No query names a value of `columns`: ids a user finds through a call, never knows."""
    secrets = world_ids(result, columns)
    assert secrets
    for task in result.all_tasks:
        words = set(re.findall(r"[\w-]+", task.query))
        assert not words & secrets, (task.id, task.query, words & secrets)
