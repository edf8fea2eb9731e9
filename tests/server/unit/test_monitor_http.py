"""The monitoring HTTP listener (app/monitor_http.py) over a real socket: the route
table, ``/``, a 404, a page added with its own content type, HEAD, a bad method."""

from __future__ import annotations

import asyncio
import json

from jetstream_server.app.monitor_http import MonitorServer, Query, Response


async def _get(port: int, request_line: str) -> tuple[int, dict[str, str], bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"{request_line}\r\nHost: x\r\n\r\n".encode())
    await writer.drain()
    raw = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in header_lines)
    return int(status_line.split()[1]), headers, body


async def test_routes_root_404_and_an_added_page() -> None:
    seen: list[Query] = []

    def echo(query: Query) -> Response:
        seen.append(query)
        return Response(200, {"n": query.get("n", ["0"])[-1]})

    server = MonitorServer({"/echo": echo, "/text": lambda query: Response(400, "no such thing")})
    server.add_route("/page", lambda query: Response(200, "<h1>hi</h1>", "text/html; charset=utf-8"))
    port = await server.start("127.0.0.1", 0)
    try:
        status, headers, body = await _get(port, "GET /echo/?n=7&n=8 HTTP/1.1")
        assert (status, headers["Content-Type"], json.loads(body)) == (200, "application/json", {"n": "8"})
        assert seen == [{"n": ["7", "8"]}]
        status, headers, body = await _get(port, "GET / HTTP/1.1")
        assert json.loads(body) == {"endpoints": ["/echo", "/text", "/page"]}
        status, headers, body = await _get(port, "GET /text HTTP/1.1")
        assert (status, headers["Content-Type"], body) == (400, "text/plain; charset=utf-8", b"no such thing")
        status, headers, body = await _get(port, "GET /page HTTP/1.1")
        assert (status, headers["Content-Type"], body) == (200, "text/html; charset=utf-8", b"<h1>hi</h1>")
        status, headers, body = await _get(port, "HEAD /page HTTP/1.1")
        assert (status, headers["Content-Length"], body) == (200, "11", b"")
        status, _, body = await _get(port, "GET /nope HTTP/1.1")
        assert (status, json.loads(body)) == (404, {"error": "not found: /nope"})
        status, _, body = await _get(port, "POST /echo HTTP/1.1")
        assert (status, json.loads(body)) == (405, {"error": "method POST not allowed"})
        status, _, body = await _get(port, "GARBAGE")
        assert (status, json.loads(body)) == (400, {"error": "bad request"})
    finally:
        await server.stop()
