"""toolgym.jsonl: one JSONL reader whose errors name the file and the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolgym.jsonl import JSONLError, TornLineError, iter_jsonl_lines, read_jsonl, read_jsonl_lines


def test_objects_in_file_order_with_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n\n   \n{"b": [2]}\n', encoding="utf-8")
    assert read_jsonl(path) == [{"a": 1}, {"b": [2]}]
    assert read_jsonl_lines(path) == [(1, {"a": 1}), (4, {"b": [2]})]


@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        (b'{"a": 1}\nnot json\n', 2, "row is not JSON"),
        (b'{"a": 1}\n\n[1, 2]\n', 3, "row must be a JSON object, got list"),
        (b'{"a": 1}\n{"b": "\xff"}\n', 2, "row is not UTF-8 text"),
    ],
)
def test_bad_lines_are_typed_errors_naming_file_and_line(
    tmp_path: Path, content: bytes, line: int, message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    with pytest.raises(JSONLError, match=message) as info:
        read_jsonl(path, "row")
    assert info.value.path == path and info.value.line == line
    assert str(info.value).startswith(f"{path}:{line}: ")


def test_a_missing_file_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(JSONLError, match="cannot read") as info:
        read_jsonl(tmp_path / "none.jsonl")
    assert info.value.line is None and isinstance(info.value, ValueError)


def test_a_file_cut_mid_line_is_torn_for_readers_that_ask(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n{"c": ')
    seen: list[tuple[int, dict[str, object]]] = []
    with pytest.raises(TornLineError, match="the file ends in the middle of row 3") as info:
        seen.extend(iter_jsonl_lines(path, "row", whole_lines=True))
    assert seen == [(1, {"a": 1}), (2, {"b": 2})] and info.value.line == 3
    assert str(info.value).startswith(f"{path}:3: ")
    path.write_bytes(b'{"a": 1}\n{"b": 2}')  # a last line without its newline is whole JSONL otherwise
    assert read_jsonl(path) == [{"a": 1}, {"b": 2}]
    with pytest.raises(TornLineError):
        list(iter_jsonl_lines(path, whole_lines=True))
