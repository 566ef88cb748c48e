"""The teval_office templates: each gives tasks that pass `toolgym check`, no query names an id the user
could not know, and generation is deterministic."""

from __future__ import annotations

from tests.authoring.templates.teval_checks import (
    assert_deterministic,
    assert_every_template_passes,
    assert_no_secret_ids,
)
from toolgym.authoring.templates.teval_office import TEMPLATES


def test_every_template_gives_checked_tasks_without_secret_ids() -> None:
    result = assert_every_template_passes(TEMPLATES)
    assert_no_secret_ids(result)


def test_same_arguments_same_tasks() -> None:
    assert_deterministic(TEMPLATES)
