"""The monitoring HTTP listener: the paths of a route table, as nats-server serves them.

A tiny HTTP/1.1 server on asyncio streams: GET (and HEAD) only, one request
per connection (``Connection: close``). `MonitorServer` looks the path up in
its route table (path -> handler of the parsed query string -> `Response`);
a dict body goes out as JSON, a string as plain text (a 400 where
nats-server answers one, as for an unknown ``/accountz?acc=``), unless the
response names its content type. ``/`` lists the table; a path not in it is
a 404. The table comes from `app.monitoring` (`Monitoring.routes`); a new
page is one more entry (`add_route`). Paths of `pages` (the dashboard,
app/dashboard.py, which needs the request's headers and answers whole
responses of its own) are offered to it first. This module only serves: it
knows no payload and never imports the server.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

from jetstream_server.app.listen import bind_socket, join_host_port

log = logging.getLogger(__name__)

_MAX_REQUEST = 16 * 1024


Query = Mapping[str, list[str]]  # a query string as `urllib.parse.parse_qs` gives it


@dataclass(frozen=True, slots=True)
class Response:
    """One answer: a dict body is sent as JSON, a string as plain text,
    unless `content_type` says otherwise."""

    status: int
    body: dict[str, Any] | str
    content_type: str | None = None


RouteHandler = Callable[[Query], Response]


class MonitorListenError(OSError):
    """The monitoring port cannot be bound (nats-server: "can't listen to the monitor port").
    An `OSError` with the cause's errno, so callers that fall back on a bind error see one."""

    def __init__(self, host: str, port: int, cause: OSError) -> None:
        reason = cause.strerror or str(cause)
        super().__init__(cause.errno, f"can't listen to the monitor port: listen tcp "
                         f"{join_host_port(host, port)}: bind: {reason.lower()}")

    def __str__(self) -> str:
        return str(self.strerror)


class PageSource(Protocol):
    """Pages for people on the same port: the whole HTTP response, or None (not theirs)."""

    @property
    def paths(self) -> tuple[str, ...]:
        """What ``/`` lists for them."""
        ...

    async def respond(self, method: str, target: str, head: bytes) -> bytes | None: ...


class MonitorServer:
    def __init__(
        self, routes: Mapping[str, RouteHandler], pages: PageSource | None = None
    ) -> None:
        self.routes: dict[str, RouteHandler] = dict(routes)
        self.pages = pages
        self._http: asyncio.Server | None = None

    def add_route(self, path: str, handler: RouteHandler) -> None:
        """Serve `path` (``/name``, no trailing slash) with `handler`."""
        self.routes[path] = handler

    async def start(self, host: str, port: int) -> int:
        try:
            sock = bind_socket(host, 0 if port == -1 else port)
        except OSError as exc:
            raise MonitorListenError(host, port, exc) from exc
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

    def route(self, path: str, query: str = "") -> Response:
        path = path.rstrip("/") or "/"
        handler = self.routes.get(path)
        if handler is not None:
            return handler(parse_qs(query))
        if path == "/":
            pages = list(self.pages.paths) if self.pages is not None else []
            return Response(200, {"endpoints": list(self.routes) + pages})
        return Response(404, {"error": f"not found: {path}"})

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
        if len(parts) != 3 or len(head) > _MAX_REQUEST:
            response = Response(400, {"error": "bad request"})
        elif parts[0] not in ("GET", "HEAD"):
            response = Response(405, {"error": f"method {parts[0]} not allowed"})
        else:
            url = urlsplit(parts[1])
            response = self.route(url.path, url.query)
        status, body = response.status, response.body
        if isinstance(body, str):
            payload = body.encode()
            body_type = response.content_type or "text/plain; charset=utf-8"
        else:
            payload = json.dumps(body, indent=2).encode()
            body_type = response.content_type or "application/json"
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
