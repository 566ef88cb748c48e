"""The episode runner's file keeping: content-addressed, whole or not at all, refused when the
bytes are not those of the hash (the rollout driver keeps files workers send through it too)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from toolgym.envs.runner import FileHashMismatch, keep_file


def test_a_file_is_kept_once_under_its_sha256(tmp_path: Path) -> None:
    data = b"\x89PNG a drawn box"
    sha = hashlib.sha256(data).hexdigest()
    folder = tmp_path / "files"
    keep_file(folder, sha, data)
    kept = folder / sha
    assert kept.read_bytes() == data
    inode = kept.stat().st_ino
    keep_file(folder, sha, data)  # a second episode (or a resumed run) with the same image
    assert kept.stat().st_ino == inode and sorted(p.name for p in folder.iterdir()) == [sha]


@pytest.mark.parametrize("name", ["0" * 64, "../escape", ""])
def test_bytes_that_are_not_the_named_hash_are_refused_and_nothing_is_written(
    tmp_path: Path, name: str
) -> None:
    folder = tmp_path / "files"
    with pytest.raises(FileHashMismatch, match="do not hash to"):
        keep_file(folder, name, b"something else")
    assert not tmp_path.joinpath("escape").exists() and not folder.exists()
