"""Monitoring HTTP: `/healthz`, `/varz`, `/connz`, `/jsz` as nats-server serves them.

A tiny HTTP/1.1 server on asyncio streams: GET only, one request per
connection (``Connection: close``), JSON bodies. The data comes from a
`MonitorSource` (the `NatsServer`: `varz()`, `connz()`, `jsz()`); this module
only serves it and never imports the server.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from jetstream_server.app.listen import bind_socket

log = logging.getLogger(__name__)

_MAX_REQUEST = 16 * 1024


class MonitorSource(Protocol):
    """Where the monitoring data comes from."""

    def varz(self) -> dict[str, Any]: ...

    def connz(self, auth: bool = False) -> dict[str, Any]: ...

    def jsz(self) -> dict[str, Any]: ...


class MonitorServer:
    def __init__(self, server: MonitorSource) -> None:
        self.server = server
        self._http: asyncio.Server | None = None

    async def start(self, host: str, port: int) -> int:
        sock = bind_socket(host, 0 if port == -1 else port)
        sock.listen(128)
        self._http = await asyncio.start_server(self._handle, sock=sock)
        return int(self._http.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        if self._http is not None:
            self._http.close()
            try:
                await asyncio.wait_for(self._http.wait_closed(), 2.0)
            except asyncio.TimeoutError:
                log.debug("monitor listener slow to close")
            self._http = None

    def route(self, path: str, query: str = "") -> tuple[int, dict[str, Any]]:
        path = path.rstrip("/") or "/"
        params = parse_qs(query)
        if path == "/healthz":
            return 200, {"status": "ok"}
        if path == "/varz":
            return 200, self.server.varz()
        if path == "/connz":
            auth = params.get("auth", ["false"])[-1].lower() in ("1", "true", "t")
            return 200, self.server.connz(auth=auth)
        if path == "/jsz":
            return 200, self.server.jsz()
        if path == "/":
            return 200, {"endpoints": ["/varz", "/connz", "/healthz", "/jsz"]}
        return 404, {"error": f"not found: {path}"}

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10.0)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError,
                ConnectionError):
            writer.close()
            return
        request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = request_line.split()
        if len(parts) != 3 or len(head) > _MAX_REQUEST:
            status, body = 400, {"error": "bad request"}
        elif parts[0] not in ("GET", "HEAD"):
            status, body = 405, {"error": f"method {parts[0]} not allowed"}
        else:
            url = urlsplit(parts[1])
            status, body = self.route(url.path, url.query)
        payload = json.dumps(body, indent=2).encode()
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}
        writer.write(
            (
                f"HTTP/1.1 {status} {reason.get(status, 'Error')}\r\n"
                "Content-Type: application/json\r\n"
                f"Content-Length: {len(payload)}\r\n"
                "Connection: close\r\n\r\n"
            ).encode()
            + (payload if parts[:1] != ["HEAD"] else b"")
        )
        try:
            await writer.drain()
        except ConnectionError:
            pass
        writer.close()
