"""A blocking socket client speaking the NATS text protocol, for byte-exact answers.

Used by the integration tests that compare the two servers' exact bytes
(``-ERR`` texts, what is and is not delivered) where nats-py would hide them.
"""

from __future__ import annotations

import json
import socket
from typing import Any


class RawClient:
    """A blocking socket speaking the text protocol, for byte-exact answers."""

    def __init__(self, port: int, timeout: float = 3.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""
        self.info: dict[str, Any] = json.loads(self.readline()[5:])

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def readline(self) -> bytes:
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError(f"closed; buffered {self.buf!r}")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\r\n")
        return line

    def read_exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError(f"closed; buffered {len(self.buf)} of {n} bytes")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def until_pong(self) -> list[bytes]:
        """Send PING and return the lines that came before its PONG."""
        self.send(b"PING\r\n")
        lines = []
        while (line := self.readline()) != b"PONG":
            lines.append(line)
        return lines

    def read_all_until_close(self) -> bytes:
        data = self.buf
        try:
            while chunk := self.sock.recv(65536):
                data += chunk
        except (ConnectionResetError, TimeoutError):
            pass
        self.buf = b""
        return data

    def close(self) -> None:
        self.sock.close()
