"""Reading JSONL files of objects (one JSON object per line; blank lines are skipped), and a JSON
file whose problems are an error of the caller's (`read_json_file`).

Every problem is a `JSONLError` (a ValueError) that names the file and, where there is one, the
line: a line that is not JSON, a line that is JSON but not an object, bytes that are not UTF-8, a
file that cannot be opened, and (for readers that ask) a file cut off in the middle of a line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def read_json_file(path: Path, what: str, error: type[Exception], hint: str = "") -> Any:
    """A JSON file's data (`what`: the file's role in messages); `error(message)` for a file that
    cannot be read (`hint` appended) or is not JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}{hint}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise error(f"{what} {path} is not JSON: {exc}") from None


class JSONLError(ValueError):
    """A JSONL file that cannot be read as objects; `path` and `line` (1-based, None for the file
    as a whole) say where."""

    def __init__(self, path: Path | str, line: int | None, message: str) -> None:
        self.path = Path(path)
        self.line = line
        self.message = message
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {message}")


class TornLineError(JSONLError):
    """The file ends in the middle of a line (a write cut short); the lines before it were read."""


def iter_jsonl_lines(
    path: Path | str, what: str = "line", *, whole_lines: bool = False
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line, as they are read; `what` names a line in
    error messages. With `whole_lines`, a last line without its newline (a writer cut off mid-line,
    or a copy cut short) is a TornLineError, raised after the lines before it were yielded."""
    try:
        with Path(path).open("rb") as fh:
            for lineno, raw in enumerate(fh, 1):
                if whole_lines and not raw.endswith(b"\n"):
                    raise TornLineError(path, lineno, f"the file ends in the middle of {what} {lineno}")
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise JSONLError(path, lineno, f"{what} is not UTF-8 text: {exc}") from None
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError as exc:
                    raise JSONLError(path, lineno, f"{what} is not JSON: {exc}") from None
                if not isinstance(row, dict):
                    raise JSONLError(path, lineno, f"{what} must be a JSON object, got {type(row).__name__}")
                yield lineno, row
    except OSError as exc:  # kept as the cause: a reader may hand the OS's own error on
        raise JSONLError(path, None, f"cannot read: {exc.strerror or exc}") from exc


def read_jsonl_lines(path: Path | str, what: str = "line") -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; `what` names a line in error messages."""
    return list(iter_jsonl_lines(path, what))


def read_jsonl(path: Path | str, what: str = "line") -> list[dict[str, Any]]:
    """The objects of a JSONL file, in file order."""
    return [row for _, row in read_jsonl_lines(path, what)]
