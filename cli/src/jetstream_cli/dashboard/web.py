"""The dashboard's HTTP side, on the standard library's `ThreadingHTTPServer`.

Paths (GET and HEAD): ``/`` and ``/dashboard`` redirect to ``/dashboard/`` (the page),
``/dashboard/dashboard.js`` and ``dashboard.css`` beside it (package data:
`dashboard_page/`), ``/dashboard/data.json?offset=&limit=&subject=&stream=`` (one
refresh, from `data(query_string) -> (status, body)`, which the command runs on its event
loop). The same paths and answers as the bundled server's monitoring port.

Safety: this process holds the user's NATS credentials, so whoever reaches the port
sees what that user sees. The command binds 127.0.0.1 unless told otherwise; on a
loopback address only requests whose ``Host`` is a loopback name are answered (403
otherwise), so that a web page of another site cannot read it through DNS rebinding.
Every answer carries the bundled server's Content-Security-Policy and companions;
data.json is ``no-store``. Each connection has a socket timeout: a slow client holds
one thread for at most `SOCKET_TIMEOUT_S`.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import logging
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any, Final
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

PREFIX: Final = "/dashboard"
ASSETS: Final = {
    "": ("index.html", "text/html; charset=utf-8"),
    "dashboard.js": ("dashboard.js", "text/javascript; charset=utf-8"),
    "dashboard.css": ("dashboard.css", "text/css; charset=utf-8"),
}
SECURITY_HEADERS: Final = (
    ("Content-Security-Policy",
     "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
     "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Frame-Options", "DENY"),
)
SOCKET_TIMEOUT_S: Final = 30.0

DataSource = Callable[[str], "tuple[int, dict[str, Any]]"]


def load_assets() -> dict[str, tuple[bytes, str, str]]:
    """The page's files: name -> (bytes, content type, ETag)."""
    folder = resources.files(__package__).joinpath("dashboard_page")
    assets = {}
    for name, (filename, content_type) in ASSETS.items():
        payload = folder.joinpath(filename).read_bytes()
        assets[name] = (payload, content_type, '"' + hashlib.sha256(payload).hexdigest()[:32] + '"')
    return assets


def is_loopback(host: str) -> bool:
    """Whether a host name or address is this machine's loopback (localhost, 127.x, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_loopback_host(host_header: str) -> bool:
    """Whether a Host header names this machine's loopback."""
    return is_loopback(urlsplit("//" + host_header).hostname or "")


class DashboardHttpServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], data: DataSource) -> None:
        super().__init__(address, _Handler)
        self.data = data
        self.assets = load_assets()
        self.loopback_only = is_loopback(address[0])

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        shown = host if isinstance(host, str) else host.decode()
        if ":" in shown:
            shown = f"[{shown}]"
        elif shown in ("0.0.0.0", ""):
            shown = "127.0.0.1"
        return f"http://{shown}:{port}{PREFIX}/"


class _Handler(BaseHTTPRequestHandler):
    server: DashboardHttpServer
    timeout = SOCKET_TIMEOUT_S
    server_version = "jetstream-dashboard"

    def do_GET(self) -> None:
        self._serve(body=True)

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def _serve(self, body: bool) -> None:
        if self.server.loopback_only and not is_loopback_host(self.headers.get("Host", "")):
            self._send(403, "application/json", _json(
                {"error": "this dashboard answers only to localhost names"}), body)
            return
        url = urlsplit(self.path)
        path = url.path
        if path in ("/", PREFIX):
            self._send(301, "text/plain; charset=utf-8", b"", body, [("Location", PREFIX + "/")])
            return
        name = path[len(PREFIX) + 1:] if path.startswith(PREFIX + "/") else None
        if name == "data.json":
            status, answer = self.server.data(url.query)
            self._send(status, "application/json", _json(answer), body,
                       [("Cache-Control", "no-store")])
        elif name in self.server.assets:
            payload, content_type, etag = self.server.assets[name]
            if self.headers.get("If-None-Match") == etag:
                self._send(304, content_type, b"", body, [("ETag", etag)])
            else:
                self._send(200, content_type, payload, body,
                           [("ETag", etag), ("Cache-Control", "no-cache")])
        else:
            self._send(404, "application/json", _json({"error": f"not found: {path}"}), body)

    def _send(self, status: int, content_type: str, payload: bytes, body: bool,
              extra: list[tuple[str, str]] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (*SECURITY_HEADERS, *(extra or ())):
            self.send_header(name, value)
        self.send_header("Connection", "close")
        self.end_headers()
        if body:
            self.wfile.write(payload)


def _json(body: Any) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()
