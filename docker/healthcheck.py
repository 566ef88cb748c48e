"""HEALTHCHECK of the toolgym images: GET the server's health path (TOOLGYM_HEALTH_PATH, default
/health) on its port, or on its unix socket when it runs without a network (TOOLGYM_UDS).
Exit 0 when it answers 200."""

import http.client
import os
import socket
import sys


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=3)
        self.socket_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(3)
        self.sock.connect(self.socket_path)


def main() -> int:
    uds = os.environ.get("TOOLGYM_UDS")
    port = int(os.environ.get("TOOLGYM_PORT", "8000"))
    conn = UnixConnection(uds) if uds else http.client.HTTPConnection("127.0.0.1", port, timeout=3)
    try:
        conn.request("GET", os.environ.get("TOOLGYM_HEALTH_PATH", "/health"))
        return 0 if conn.getresponse().status == 200 else 1
    except OSError:
        return 1
    finally:
        conn.close()


if __name__ == "__main__":
    sys.exit(main())
