"""What the robustness tests of both servers send: malformed bodies (hypothesis strategies) and
raw-socket clients that send too slowly."""

from __future__ import annotations

import json
import socket
import time
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# bounded fuzzing: a few seconds per test on a shared machine, no example database on disk
FUZZ = settings(
    max_examples=120,
    deadline=timedelta(seconds=5),
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# bodies every JSON endpoint must refuse with a typed 4xx: each breaks a naive `json.loads`
NASTY_BODIES: list[bytes] = [
    b"1" + b"0" * 5000,  # past Python's int-str digit limit (ValueError)
    b'{"arguments": {"x": ' + b"9" * 5000 + b"}}",
    b"[" * 100_000,  # RecursionError
    b'{"arguments": ' + b"{" * 50_000,
    b"\xff\xfe\xfd",
    b'{"arguments": {"text": "\xff"}}',
    b'{"arguments": {"text": "\\ud800"}}',
    b"NaN",
    b'{"arguments": {"scale": NaN}, "seed": Infinity}',
    b'{"arguments": {"scale": 1e400}}',
    b"-Infinity",
    b"",
    b"null",
    b"[]",
    b'"a string"',
    b"42",
    b"{",
    b'{"arguments": 1}',
    b'{"seed": "zero"}',
    b'{"seed": 1.5, "clock": 3}',
    b'{"task_id": []}',
    b'{"clock": "yesterday"}',
    b'{"clock": "2024-01-01T00:00:00"}',
]

CONTENT_TYPES = [
    "application/json",
    "application/json; charset=utf-8",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data",
    "multipart/form-data; boundary=xyz",
    "application/octet-stream",
    "",
]

json_values: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**30, max_value=10**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def json_objects(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects with some of `fields` (well- or ill-typed values) and maybe a stray one."""
    return st.fixed_dictionaries({}, optional={**fields, "stray": json_values})


def _flip(body: bytes, at: int, byte: int) -> bytes:
    return body[:at] + bytes([byte]) + body[at + 1 :]


def bodies(objects: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[bytes]:
    """Request bodies: the nasty ones, random bytes, random JSON, and objects shaped like the
    endpoint's own (with wrong field types), plain or with one byte replaced."""
    shaped = objects.map(lambda o: json.dumps(o).encode())
    return st.one_of(
        st.sampled_from(NASTY_BODIES),
        st.binary(max_size=64),
        json_values.map(lambda v: json.dumps(v).encode()),
        shaped,
        st.builds(_flip, shaped, st.integers(0, 40), st.integers(0, 255)),
    )


# generous: the servers under test use deadlines under a second; a loaded machine must not fail
CLOSE_WITHIN_S = 30.0


def _connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=CLOSE_WITHIN_S)
    return sock


def _closed(sock: socket.socket) -> bool:
    """True when the server closed the connection (EOF or reset) while we wait for it."""
    try:
        return sock.recv(65536) == b""
    except ConnectionResetError:
        return True


def _trickle(url: str, prefix: bytes, drip: bytes, every_s: float) -> tuple[bool, bytes]:
    """Send `prefix` at once, then `drip` a byte every `every_s` seconds, reading what the server
    answers, until it closes the connection or CLOSE_WITHIN_S passes. Returns (closed by the
    server, what it answered)."""
    sock = _connect(url)
    sock.sendall(prefix)
    sock.settimeout(every_s)
    answer = b""
    deadline = time.monotonic() + CLOSE_WITHIN_S
    try:
        for i in range(1_000_000):
            if time.monotonic() > deadline:
                break
            try:
                sock.send(drip[i % len(drip) : i % len(drip) + 1])
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                return True, answer
            if chunk == b"":
                return True, answer
            answer += chunk
        return False, answer
    finally:
        sock.close()


def trickle_headers(url: str, path: str, every_s: float = 0.2) -> tuple[bool, bytes]:
    """Send a request's headers one byte at a time and never finish them."""
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Pad: "
    return _trickle(url, b"", head.encode() + b"x" * 10_000, every_s)


def idle_connection(url: str) -> bool:
    """Connect and send nothing: True when the server closes the connection."""
    sock = _connect(url)
    try:
        return _closed(sock)
    except TimeoutError:
        return False
    finally:
        sock.close()


def trickle_body(url: str, path: str, headers: dict[str, str], every_s: float = 0.2) -> tuple[bool, bytes]:
    """Send complete headers announcing a 1000-byte body, then the body a byte at a time."""
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Length: 1000"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return _trickle(url, ("\r\n".join(lines) + "\r\n\r\n").encode(), b" ", every_s)
