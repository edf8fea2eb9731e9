"""Monitoring HTTP: `/healthz`, `/varz`, `/connz`, `/jsz`, `/accountz` as nats-server serves them.

A tiny HTTP/1.1 server on asyncio streams: GET only, one request per
connection (``Connection: close``), JSON bodies (a plain-text 400 where
nats-server answers one, as for an unknown ``/accountz?acc=``). The data
comes from a `MonitorSource` (the `NatsServer`: `varz()`, `connz()`,
`jsz()`, `accountz()`); this module
only serves it and never imports the server. Paths of `pages` (the dashboard,
app/dashboard.py) are answered by it, whole.
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

    def jsz(self, accounts: bool = False) -> dict[str, Any]: ...

    def accountz(self, account: str = "") -> dict[str, Any] | None:
        """The account names, or one account's detail; None: no such account."""
        ...


class PageSource(Protocol):
    """Pages for people on the same port: the whole HTTP response, or None (not theirs)."""

    async def respond(self, method: str, target: str, head: bytes) -> bytes | None: ...


class MonitorServer:
    def __init__(self, server: MonitorSource, pages: PageSource | None = None) -> None:
        self.server = server
        self.pages = pages
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

    def route(self, path: str, query: str = "") -> tuple[int, dict[str, Any] | str]:
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
            accounts = params.get("accounts", ["false"])[-1].lower() in ("1", "true", "t")
            return 200, self.server.jsz(accounts=accounts)
        if path == "/accountz":
            name = params.get("acc", [""])[-1]
            detail = self.server.accountz(name)
            if detail is None:
                return 400, f"Account {name} does not exist"
            return 200, detail
        if path == "/":
            return 200, {"endpoints": ["/varz", "/connz", "/healthz", "/jsz", "/accountz", "/dashboard"]}
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
        if len(parts) == 3 and len(head) <= _MAX_REQUEST and parts[0] in ("GET", "HEAD") and (
            page := await self.pages.respond(parts[0], parts[1], head) if self.pages else None
        ):
            await _send(writer, page)
            return
        body_type = "application/json"
        body: dict[str, Any] | str
        if len(parts) != 3 or len(head) > _MAX_REQUEST:
            status, body = 400, {"error": "bad request"}
        elif parts[0] not in ("GET", "HEAD"):
            status, body = 405, {"error": f"method {parts[0]} not allowed"}
        else:
            url = urlsplit(parts[1])
            status, body = self.route(url.path, url.query)
        if isinstance(body, str):
            payload, body_type = body.encode(), "text/plain; charset=utf-8"
        else:
            payload = json.dumps(body, indent=2).encode()
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}
        await _send(
            writer,
            (
                f"HTTP/1.1 {status} {reason.get(status, 'Error')}\r\n"
                f"Content-Type: {body_type}\r\n"
                f"Content-Length: {len(payload)}\r\n"
                "Connection: close\r\n\r\n"
            ).encode()
            + (payload if parts[:1] != ["HEAD"] else b""),
        )


async def _send(writer: asyncio.StreamWriter, response: bytes) -> None:
    writer.write(response)
    try:
        await writer.drain()
    except ConnectionError:
        pass
    writer.close()
