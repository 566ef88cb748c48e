"""The tool server's own file store: removed at a clean shutdown of `toolgym serve`, and at the next
start when a killed server left it; a live server's store and a user's folder are never touched."""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from PIL import Image

from toolgym.toolservers.gta.drawing import drawbox
from toolgym.toolservers.server.app import ServerThread, create_app
from toolgym.toolservers.server.config import ServerConfig
from toolgym.toolservers.server.store import PREFIX, OwnedStore, remove_stale

# a process that makes a store under argv[1], stores a file, says where, and waits to be killed
HOLDER = """
import sys
from pathlib import Path
from toolgym.toolservers.server.store import OwnedStore
store = OwnedStore(Path(sys.argv[1]))
store.files.put_bytes(b"held", name="held.txt")
print(store.root, flush=True)
sys.stdin.read()
"""


def _holders(parent: Path, n: int) -> list[tuple[subprocess.Popen[str], Path]]:
    """`n` processes (started together) that each hold a store under `parent`, with its folder."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(parent)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(n)
    ]
    return [(p, Path(p.stdout.readline().strip())) for p in procs if p.stdout is not None]


def _stores(parent: Path) -> list[Path]:
    return sorted(parent.glob(PREFIX + "*"))


def test_a_killed_owners_store_goes_at_the_next_start_a_live_owners_stays(tmp_path: Path) -> None:
    (dead, dead_root), (live, live_root) = _holders(tmp_path, 2)
    try:
        dead.send_signal(signal.SIGKILL)
        dead.wait(30)
        assert dead_root.is_dir()  # nobody cleaned up after the kill
        assert remove_stale(tmp_path) == [dead_root]
        assert not dead_root.exists()
        store = OwnedStore(tmp_path)
        assert (live_root / ".owner.lock").is_file()  # its owner still holds the lock
        assert _stores(tmp_path) == sorted([live_root, store.root])
        store.remove()
        assert _stores(tmp_path) == [live_root]
    finally:
        live.kill()
        live.wait(30)
    assert remove_stale(tmp_path) == [live_root]


def test_folders_that_are_no_store_of_a_dead_server_stay(tmp_path: Path) -> None:
    unlocked = tmp_path / f"{PREFIX}making"  # no lock file yet: its server may still be making it
    unlocked.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / ".owner.lock").write_text("1\n")
    (tmp_path / f"{PREFIX}link").symlink_to(elsewhere)
    assert remove_stale(tmp_path) == []
    assert unlocked.is_dir() and (elsewhere / ".owner.lock").is_file()


SERVE_ARGS = ("--tools", "DrawBox", "--lazy", "--no-mcp", "--log-level", "warning")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (64, 48), "white").save(buf, format="PNG")
    return buf.getvalue()


def _serve(temp: Path) -> tuple[subprocess.Popen[str], str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolgym.cli", "serve", "--port", str(port), *SERVE_ARGS],
        env={**os.environ, "TMPDIR": str(temp)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{url}/v1/health").status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        assert time.monotonic() < deadline, "the server did not come up"
        time.sleep(0.1)


def _draw(url: str) -> None:
    """Draw a box on an uploaded image (AgentLego's multipart face): the server stores the upload
    and the image it makes."""
    call = httpx.post(
        f"{url}/DrawBox", files={"image": ("in.png", _png(), "image/png")}, data={"bbox": "(2, 2, 30, 20)"}
    )
    assert call.status_code == 200, call.text


def _blobs(store: Path) -> list[Path]:
    return [p for p in store.glob("??/*") if p.is_file()]


def test_serve_removes_its_store_at_sigterm(tmp_path: Path) -> None:
    proc, url = _serve(tmp_path)
    try:
        _draw(url)
        (store,) = _stores(tmp_path)
        assert len(_blobs(store)) == 2  # the upload and the generated image
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode in (0, -signal.SIGTERM), out  # uvicorn re-raises the signal
    assert _stores(tmp_path) == []


def test_serve_sweeps_a_killed_servers_store_and_removes_its_own_at_sigint(tmp_path: Path) -> None:
    killed, url = _serve(tmp_path)
    _draw(url)
    killed.kill()
    killed.communicate(timeout=30)
    (left,) = _stores(tmp_path)
    proc, url = _serve(tmp_path)
    try:
        _draw(url)
        assert left not in _stores(tmp_path)  # swept at this start
        assert len(_stores(tmp_path)) == 1
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode in (0, 130, -signal.SIGINT), out
    assert _stores(tmp_path) == []


def test_a_files_dir_the_user_gave_stays(tmp_path: Path) -> None:
    given = tmp_path / "files"
    with ServerThread(create_app([drawbox], ServerConfig(mcp=False, files_dir=given))) as url:
        _draw(url)
    assert len(_blobs(given)) == 2
