"""Real failures of writes, for the tests of what they leave: a full disk (a small tmpfs mounted
for one test: root only, the test is skipped, saying why, where mounting is not permitted) and a
writer of toolgym's killed with SIGKILL in the middle of a write."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def small_disk(where: Path, size: str = "1m") -> Iterator[Path]:
    """A tmpfs of `size` mounted at `where` (made if missing), unmounted afterwards."""
    where.mkdir(parents=True, exist_ok=True)
    mount = shutil.which("mount")
    if mount is None:
        pytest.skip("no mount command: the full-disk tests mount a small tmpfs")
    done = subprocess.run(
        [mount, "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (the full-disk tests need root): {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "--lazy", str(where)], check=False, capture_output=True)


def fill(disk: Path, leave: int) -> Path:
    """A file that takes all but about `leave` bytes of the disk's free space."""
    stat = os.statvfs(disk)
    free = stat.f_bavail * stat.f_frsize
    filler = disk / "filler"
    filler.write_bytes(b"\0" * max(0, free - leave))
    return filler


# a real writer of toolgym's: it stops in the middle of a write until it is killed
WRITER = """
import sys
from toolgym.files import atomic_file
with atomic_file(sys.argv[1]) as fh:
    fh.write(b'{"episodes": [')
    fh.flush()
    print("writing", flush=True)
    sys.stdin.read()
"""


def start_writer(target: Path) -> subprocess.Popen[bytes]:
    """A process in the middle of writing `target` (atomically), until it is killed."""
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(target)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stdout.readline() == b"writing\n"
    return proc


def killed_writer(target: Path) -> None:
    """What a writer of `target` killed with SIGKILL mid-write leaves (no cleanup of its runs)."""
    proc = start_writer(target)
    proc.kill()
    proc.wait()


def temps(folder: Path) -> list[Path]:
    """The temporary files of atomic writes in and below `folder`."""
    return sorted(folder.rglob(".*.tmp"))
