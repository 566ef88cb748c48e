"""The step path's lean records stand for the models: each builds the model it stands for, and its
JSON record is that model's pydantic dump."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolgym.actions import (
    CONTENT_IN_TEXT,
    ActionRecord,
    AskUser,
    ErrorInfo,
    FinalAnswer,
    NoCall,
    Observation,
    ObservationRecord,
    ToolCall,
    as_action,
    as_observation,
)
from toolgym.canonical import canonical_json
from toolgym.errors import ErrorKind
from toolgym.files import FileHandle

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(codec=None), max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=10,
)
_TEXT = st.none() | st.text(max_size=6)
_RECORDS = (
    st.builds(
        ActionRecord,
        type=st.just("tool_call"),
        name=st.text(min_size=1, max_size=6),
        arguments=st.dictionaries(st.text(max_size=4), _JSON, max_size=3),
        call_id=_TEXT,
        thought=_TEXT,
    )
    | st.builds(
        ActionRecord, type=st.sampled_from(["final_answer", "ask_user"]), text=st.text(), thought=_TEXT
    )
    | st.builds(ActionRecord, type=st.just("no_call"), thought=st.text(max_size=6))
)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(_RECORDS)
def test_an_action_record_is_its_models_dump(record: ActionRecord) -> None:
    action = record.action()
    assert isinstance(action, (ToolCall, FinalAnswer, AskUser, NoCall))
    assert action.type == record.type
    assert record.record() == action.model_dump(mode="json")
    assert canonical_json(record.record()) == canonical_json(action.model_dump(mode="json"))
    assert as_action(record) == action
    assert as_action(action) is action  # a model stays itself


def test_an_observation_record_builds_the_model_it_stands_for() -> None:
    handle = FileHandle(sha256="a" * 64, media_type="image/png", name="x.png")
    record = ObservationRecord("tool_result", '{"a":1}', "t", "c1", {"a": 1}, (handle,))
    assert record.observation() == Observation(
        type="tool_result", text='{"a":1}', tool="t", call_id="c1", content={"a": 1}, files=(handle,)
    )
    error = ObservationRecord.from_error(ErrorKind.TOOL_ERROR, "boom", tool="t", content={"why": 1})
    assert error.observation() == Observation.from_error(
        ErrorKind.TOOL_ERROR, "boom", tool="t", content={"why": 1}
    )
    assert error.error == ErrorInfo(kind=ErrorKind.TOOL_ERROR, message="boom")
    assert error.error_kind is ErrorKind.TOOL_ERROR
    model = Observation(type="note", text="n")
    assert as_observation(model) is model


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(_JSON)
def test_a_packed_result_reads_its_content_back_from_its_text(content: Any) -> None:
    """A result whose text is its content's canonical JSON keeps the text alone; the model built
    from it has the content back, equal, whatever JSON data it was (lone surrogates included:
    content whose text escapes them is kept as it is, since a pair would read back as one
    character)."""
    text = canonical_json(content)
    record = ObservationRecord("tool_result", text, "t", None, content)
    record.pack(text)
    if "\\ud" in text:
        assert record.content is content
    else:
        assert record.content is CONTENT_IN_TEXT
    built = record.observation().content
    assert built == content
    assert canonical_json(built) == text


def test_a_result_whose_text_is_not_its_content_keeps_its_content() -> None:
    record = ObservationRecord("tool_result", "image file:abc", "t", None, {"a": 1})
    record.pack(canonical_json({"a": 1}))  # the content's JSON, but not the text the agent saw
    assert record.content == {"a": 1}
    record.pack(None)  # nothing rendered
    assert record.content == {"a": 1}


def test_two_lone_surrogates_that_would_read_back_as_one_character_are_kept() -> None:
    content = {"s": "\ud83d\ude00"}  # two code points, which JSON text reads back as one
    text = canonical_json(content)
    assert json.loads(text) != content
    record = ObservationRecord("tool_result", text, "t", None, content)
    record.pack(text)
    assert record.observation().content == content
