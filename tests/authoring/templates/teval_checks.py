"""What the tests of the teval templates add to template_checks: the group's name and the ids its
seeded worlds make that no user knows."""

from __future__ import annotations

from collections.abc import Sequence

from tests.authoring.templates.template_checks import (
    assert_deterministic,
    assert_no_query_names,
    generated,
)
from tests.authoring.templates.template_checks import assert_every_template_passes as _passes
from toolgym.authoring.generate import Generated, Template

__all__ = ["assert_deterministic", "assert_every_template_passes", "assert_no_secret_ids", "generated"]

# an id a seeded world made that no user knows: a property, movie, author or result id
SECRET_COLUMNS = (
    ("teval_airbnb_properties", "property_id"),
    ("teval_tmdb_movies", "movie_id"),
    ("teval_scholar_authors", "author_id"),
    ("teval_scholar_papers", "organic_id"),
    ("teval_arxiv_papers", "arxiv_id"),
    ("teval_ppt_presentations", "pres_id"),
)


def assert_every_template_passes(templates: Sequence[Template], per_template: int = 2) -> Generated:
    return _passes(templates, per_template, group="teval")


def assert_no_secret_ids(result: Generated) -> None:
    assert_no_query_names(result, SECRET_COLUMNS)
