"""The ctool templates on the Chinese apps: each gives tasks that pass `toolgym check`, phrased in
Chinese (queries and answers), refusals in Chinese words."""

from __future__ import annotations

from tests.authoring.templates.template_checks import assert_every_template_passes
from toolgym.actions import FinalAnswer
from toolgym.authoring.generate import REFUSAL_WORDS
from toolgym.authoring.templates.ctool_zh import TEMPLATES


def _chinese(text: str) -> bool:
    return any("\u4e00" <= c <= "\u9fff" for c in text)


def test_every_template_gives_checked_chinese_tasks() -> None:
    result = assert_every_template_passes(TEMPLATES)
    for task in result.all_tasks:
        assert task.metadata["lang"] == "zh" and all(a.endswith("_zh") for a in task.apps or [])
        assert _chinese(task.query), task.query
        final = task.golden[-1].action
        assert isinstance(final, FinalAnswer) and _chinese(final.text)
        if task.metadata["shape"] == "refuse":
            assert task.answer is not None and task.answer.whitelist == [REFUSAL_WORDS["zh"]]
