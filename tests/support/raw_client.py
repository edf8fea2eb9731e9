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
        # what was received and not yet read: `_buf[_pos:]` (read in place, no copy of the rest
        # per line: a reader of megabytes keeps up with the server)
        self._buf = bytearray()
        self._pos = 0
        self.info: dict[str, Any] = json.loads(self.readline()[5:])

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _receive(self) -> bool:
        """Append what the socket has; False when the server closed it."""
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            return False
        if self._pos:
            del self._buf[: self._pos]
            self._pos = 0
        self._buf += chunk
        return True

    def readline(self) -> bytes:
        while (end := self._buf.find(b"\r\n", self._pos)) < 0:
            if not self._receive():
                raise ConnectionError(f"closed; buffered {bytes(self._buf[self._pos:])!r}")
        line = bytes(self._buf[self._pos : end])
        self._pos = end + 2
        return line

    def read_exact(self, n: int) -> bytes:
        while len(self._buf) - self._pos < n:
            if not self._receive():
                raise ConnectionError(f"closed; buffered {len(self._buf) - self._pos} of {n} bytes")
        out = bytes(self._buf[self._pos : self._pos + n])
        self._pos += n
        return out

    def until_pong(self) -> list[bytes]:
        """Send PING and return the lines that came before its PONG."""
        self.send(b"PING\r\n")
        lines = []
        while (line := self.readline()) != b"PONG":
            lines.append(line)
        return lines

    def read_all_until_close(self) -> bytes:
        data = bytes(self._buf[self._pos :])
        try:
            while chunk := self.sock.recv(65536):
                data += chunk
        except (ConnectionResetError, TimeoutError):
            pass
        self._buf, self._pos = bytearray(), 0
        return data

    def close(self) -> None:
        self.sock.close()
