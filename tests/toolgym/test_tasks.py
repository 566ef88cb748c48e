"""toolgym.tasks: the answer matcher (`alias_found`). The task model's round trips are in
test_files_tasks.py."""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from toolgym.tasks import _WORD, _norm, _whole_word_in, alias_found


def regex_whole_word_in(text: str, needle: str) -> bool:
    """The one-pattern-per-alias search `_whole_word_in` replaces: the reference it must equal."""
    return re.search(rf"(?<!{_WORD})" + re.escape(needle) + rf"(?!{_WORD})", text) is not None


# letters, digits and "_" (word characters), Han, kana and Thai (unspaced: no word characters),
# spaces, punctuation, a combining mark, full-width forms: every kind of boundary
ALPHABET = "ab1_ 5.,$+-C南京天のกéÀ\u0301ＡＢ１２\t"
texts = st.text(alphabet=ALPHABET, max_size=24)
needles = st.text(alphabet=ALPHABET, min_size=1, max_size=4)


@settings(max_examples=2000, deadline=None)
@given(texts, needles)
@example("a58 58", "58")  # the first occurrence is inside a word, the second is not
@example("5858", "58")
@example("aaa", "aa")  # overlapping occurrences
@example("寄往南京的包裹", "南京")
@example("c++ and C", "c++")
@example("$5.", "$5")
def test_whole_word_search_equals_the_regex(text: str, needle: str) -> None:
    assert _whole_word_in(text, needle) == regex_whole_word_in(text, needle)


@settings(max_examples=500, deadline=None)
@given(texts, needles)
def test_alias_found_keeps_the_regex_semantics(text: str, alias: str) -> None:
    a, t = _norm(alias).strip(), _norm(text)
    if a and regex_whole_word_in(t, a):
        assert alias_found(text, alias)
    elif a and not any(ch.isdigit() for ch in a):
        assert not alias_found(text, alias)  # only numeric aliases have a second way to match


def test_alias_boundaries() -> None:
    assert alias_found("It lasts 58天", "58")
    assert alias_found("The total is 23.50.", "23.50")
    assert not alias_found("It lasts 158 days", "58")
    assert not alias_found("a58", "58")
    assert alias_found("a58 then 58", "58")  # a later occurrence on word boundaries counts
    assert alias_found("Learn C++ today", "c++")
    assert not alias_found("cat", "")
