from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from toolgym.actions import FinalAnswer, ToolCall
from toolgym.canonical import canonical_hash, canonical_json
from toolgym.files import FileStore, UnknownFileError
from toolgym.tasks import AnswerSpec, GoldenStep, Task, TaskFile, TaskSet


def test_file_store_is_content_addressed(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    a = store.put_bytes(b"same bytes", name="one.png")
    b = store.put_bytes(b"same bytes", name="two.png")
    assert a.sha256 == b.sha256 == hashlib.sha256(b"same bytes").hexdigest()
    assert a.media_type == "image/png" and a.ref == f"file:{a.sha256}"
    assert len(list(tmp_path.rglob("*"))) == 2  # one directory, one blob
    assert store.resolve("two.png").read_bytes() == b"same bytes"
    assert store.resolve(a.sha256).handle == a
    assert "one.png" in store and "zzz" not in store and 3 not in store
    with pytest.raises(UnknownFileError):
        store.resolve("../../etc/passwd")


def test_canonical_json() -> None:
    assert canonical_json({"b": 1, "a": [1, "é"]}) == '{"a":[1,"é"],"b":1}'
    assert canonical_hash({"a": 1, "b": 2}) == canonical_hash({"b": 2, "a": 1})
    with pytest.raises(ValueError):
        canonical_json(float("nan"))


def test_task_set_round_trip(tmp_path: Path) -> None:
    task = Task(
        id="t1",
        query="q",
        files=[TaskFile(name="image/x.png", path="x.png")],
        tools=["OCR"],
        golden=[
            GoldenStep(action=ToolCall(name="OCR", arguments={"image": "image/x.png"}), expected="text"),
            GoldenStep(action=FinalAnswer(text="done")),
        ],
        answer=AnswerSpec(whitelist=[["done"]]),
    )
    path = tmp_path / "tasks.jsonl"
    TaskSet([task]).dump(path)
    loaded = TaskSet.load(path)
    assert loaded["t1"] == task and loaded[0] == task and "t1" in loaded and len(loaded) == 1
    assert loaded.file_path(task.files[0]) == tmp_path / "x.png"


def test_task_set_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl:1"):
        TaskSet.load(bad)
    with pytest.raises(ValueError, match="duplicate"):
        TaskSet([Task(id="a", query="q"), Task(id="a", query="r")])


def test_forget_all_resolves_nothing_until_stored_again() -> None:
    store = FileStore()
    handle = store.put_bytes(b"png bytes", name="image/a.png")
    store.forget_all()
    for ref in (handle.ref, "image/a.png", "elsewhere/a.png"):
        assert ref not in store
    with pytest.raises(UnknownFileError, match=r"known files: \[\]"):
        store.resolve("image/a.png")
    again = store.put_bytes(b"png bytes", name="image/a.png")  # the blob on disk is reused
    assert again == handle and store.resolve("a.png").read_bytes() == b"png bytes"
    store.close()
