"""What the tests of the teval templates share: generate a module's templates through the real
engine (every task checked by `toolgym check`'s checker where it is drafted) and say what came out."""

from __future__ import annotations

import json
import re
from collections import Counter

from toolgym.authoring.check import check_tasks
from toolgym.authoring.generate import Generated, Template, dump, generate

PER_TEMPLATE = 2
# an id a seeded world made that no user knows: a property, movie, author or result id
SECRET_COLUMNS = (
    ("teval_airbnb_properties", "property_id"),
    ("teval_tmdb_movies", "movie_id"),
    ("teval_scholar_authors", "author_id"),
    ("teval_scholar_papers", "organic_id"),
    ("teval_arxiv_papers", "arxiv_id"),
    ("teval_ppt_presentations", "pres_id"),
)


def generated(templates: list[Template], seed: int = 0, jobs: int = 1) -> Generated:
    return generate(["teval"], PER_TEMPLATE * len(templates), seed, templates=templates, jobs=jobs)


def assert_every_template_passes(templates: list[Template]) -> Generated:
    """Each template gives tasks, none dropped by the check, and the file they make passes
    `toolgym check` again from scratch; no query names an id a user could not know."""
    result = generated(templates)
    assert not result.dropped, result.dropped
    made = Counter(t.metadata["template"] for t in result.all_tasks)
    assert {t.name for t in templates} == set(made), sorted({t.name for t in templates} - set(made))
    tasks = result.all_tasks
    assert len({t.query for t in tasks}) == len(tasks)
    problems = check_tasks(tasks)
    assert problems == [], problems[:5]
    for task in tasks:
        meta = task.metadata
        assert meta["template"].startswith("teval.")
        assert meta["shape"] in ("read", "write", "ask", "refuse")
        assert all(app.startswith("teval_") for app in meta["apps"])
        if meta["shape"] == "write":
            assert task.expected_state
        if meta["shape"] == "ask":
            assert task.user is not None and task.user.known
            assert not any(v in task.query for v in task.user.known.values())
        if meta["shape"] == "refuse":
            assert len(task.golden) == 1
    return result


def secret_ids(result: Generated) -> set[str]:
    """The ids of the worlds' tables that a query must never name (read from the tasks' worlds)."""
    from toolgym.mocks.world import MockWorld

    found: set[str] = set()
    for apps, seed in {(tuple(t.apps or ()), t.seed) for t in result.all_tasks}:
        world = MockWorld(list(apps), seed=seed)
        try:
            for table, column in SECRET_COLUMNS:
                if table in world.table_names:
                    rows = world.store.conn.execute(f'SELECT "{column}" FROM "{table}"')
                    found.update(str(r[0]) for r in rows)
        finally:
            world.close()
    return found


def assert_no_secret_ids(result: Generated) -> None:
    secrets = secret_ids(result)
    for task in result.all_tasks:
        words = set(re.findall(r"[\w.-]+", task.query))
        assert not words & secrets, (task.query, words & secrets)


def assert_deterministic(templates: list[Template]) -> None:
    """The same arguments give byte-identical tasks, in one process or two."""
    one = dump(generated(templates, seed=3, jobs=1).all_tasks)
    two = dump(generated(templates, seed=3, jobs=2).all_tasks)
    assert one == two
    assert len(one.splitlines()) == PER_TEMPLATE * len(templates)
    assert all(json.loads(line)["seed"] is not None for line in one.splitlines())
