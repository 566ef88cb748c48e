"""T-Eval’s FileOperation (toolgym.mocks.apps.teval.file_operation) on its seeded data (real SQLite)."""

from __future__ import annotations

from tests.mocks.apps.teval import call, fails, make_world
from toolgym.errors import ErrorKind


def test_files_write_read_and_overwrite() -> None:
    world = make_world("teval_file")
    call(world, "write_file", file_path="/home/user/notes/new.txt", text="first")
    assert call(world, "read_file", file_path="notes/new.txt")["text"] == "first"  # relative to home
    call(world, "write_file", file_path="~/notes/new.txt", text="second")
    assert call(world, "read_file", file_path="/home/user/notes/../notes/new.txt")["text"] == "second"
    assert len(world.rows("teval_file_files", {"path": "/home/user/notes/new.txt"})) == 1
    seeded = world.rows("teval_file_files", {"path": "/home/user/documents/reports/report_2023-12.md"})[0]
    assert call(world, "read_file", file_path=seeded["path"])["text"] == seeded["text"]


def test_files_errors_change_nothing() -> None:
    world = make_world("teval_file")
    fails(world, "read_file", 404, file_path="/home/user/nothing.txt")
    fails(world, "read_file", 409, file_path="/home/user/documents")
    fails(world, "write_file", 404, file_path="/home/user/no/such/dir/a.txt", text="x")
    fails(world, "write_file", 409, file_path="/home/user/notes", text="x")
    fails(world, "write_file", 400, file_path="/home/user/notes/", text="x")
    fails(world, "write_file", kind=ErrorKind.ARGUMENT_ERROR, file_path="/tmp/a.txt")
