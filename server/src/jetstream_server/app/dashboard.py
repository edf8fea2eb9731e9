"""The dashboard on the monitoring port: ``/dashboard/`` (a page for people) and ``/``'s index.

Paths (GET and HEAD only, like the rest of the monitoring port):
- ``/dashboard`` redirects to ``/dashboard/``, which serves the page; ``dashboard.js`` and
  ``dashboard.css`` beside it; all three ship as package data (`dashboard_page/`, the
  same files `jetstream dashboard` serves: a test keeps the copies identical);
- ``/dashboard/data.json?offset=&limit=&subject=&stream=``: one refresh's data
  (app/dashboard_snapshot.py), computed at most once a second per identity and query;
- ``/`` for a browser (``Accept: text/html``): nats-server's index of links, with the
  dashboard first; programs still get the JSON list of endpoints (app/monitoring.py).

Authentication: the nats-server endpoints of this port stay as nats-server has them
(no credentials; the port's bind address is the protection: ``http: host:port``, else
the client host). The dashboard shows streams and consumers, so on a server with
authentication data.json needs the credentials of a user (HTTP ``Authorization:
Basic user:password``, or ``Bearer <token>``), checked by the server's own
`Authenticator` as a CONNECT's would be, and shows only what that user may see. Without
credentials it answers 401 with the reason, and the page asks for them. Users who sign
in with NKeys or JWTs cannot sign in here (no nonce to sign): the reason says to use
`jetstream dashboard` with their credentials instead.

Every answer carries a restrictive Content-Security-Policy (the page's own script and
style only), ``nosniff``, ``no-referrer`` and ``DENY`` framing; data.json is ``no-store``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import html
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Mapping
from importlib import resources
from typing import Any, Final, Protocol
from urllib.parse import urlsplit

from jetstream_server.app.dashboard_snapshot import (
    DashboardQuery,
    DashboardQueryError,
    ServerState,
    build_snapshot,
)
from jetstream_server.core.auth import Authenticator, Identity, Refusal

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
CACHE_SECONDS: Final = 1.0
CACHE_ENTRIES: Final = 64
CONCURRENT_SNAPSHOTS: Final = 2
_REASONS: Final = {200: "OK", 301: "Moved Permanently", 304: "Not Modified", 400: "Bad Request",
                   401: "Unauthorized", 404: "Not Found"}
# nats-server's index page: (label, path) in its order; the dashboard comes first.
INDEX_LINKS: Final = (
    ("Dashboard", "/dashboard/"),
    ("General", "/varz"),
    ("JetStream", "/jsz"),
    ("Connections", "/connz"),
    ("Accounts", "/accountz"),
    ("Health Probe", "/healthz"),
)


class DashboardServer(ServerState, Protocol):
    """The server as the dashboard sees it: its state and its authenticator."""

    auth: Authenticator


class Dashboard:
    """Answers the dashboard's paths on the monitoring listener (see module docstring)."""

    paths: Final = ("/dashboard",)  # what the monitoring port's `/` lists

    def __init__(self, server: DashboardServer) -> None:
        self.server = server
        self._assets: dict[str, tuple[bytes, str, str]] = {}
        self._cache: OrderedDict[tuple[Any, ...], tuple[float, bytes]] = OrderedDict()
        self._running: dict[tuple[Any, ...], asyncio.Task[bytes]] = {}
        self._slots: asyncio.Semaphore | None = None

    async def respond(self, method: str, target: str, head: bytes) -> bytes | None:
        """The whole HTTP response for a dashboard path; None for any other path."""
        url = urlsplit(target)
        path = url.path
        headers = _headers(head)
        if path == "/" and "text/html" in headers.get("accept", ""):
            return _response(method, 200, "text/html; charset=utf-8", _index_page())
        if path == PREFIX:
            return _response(method, 301, "text/plain; charset=utf-8", b"", [("Location", PREFIX + "/")])
        if not path.startswith(PREFIX + "/"):
            return None
        name = path[len(PREFIX) + 1:]
        if name == "data.json":
            status, body = await self._data(url.query, headers)
            return _response(method, status, "application/json", body, [("Cache-Control", "no-store")])
        if name in ASSETS:
            payload, content_type, etag = self._asset(name)
            if headers.get("if-none-match") == etag:
                return _response(method, 304, content_type, b"", [("ETag", etag)])
            return _response(method, 200, content_type, payload,
                             [("ETag", etag), ("Cache-Control", "no-cache")])
        return _response(method, 404, "application/json", _json({"error": f"not found: {path}"}))

    # -- data.json ---------------------------------------------------------------------
    async def _data(self, query_string: str, headers: Mapping[str, str]) -> tuple[int, bytes]:
        signed_in = self._identify(headers.get("authorization", ""))
        if isinstance(signed_in, str):
            return 401, _json({"error": signed_in})
        identity, system = signed_in
        try:
            query = DashboardQuery.from_query_string(query_string)
        except DashboardQueryError as exc:
            return 400, _json({"error": str(exc)})
        key = (identity, system, query)
        cached = self._cache.get(key)
        if cached is not None and time.monotonic() - cached[0] < CACHE_SECONDS:
            return 200, cached[1]
        task = self._running.get(key)
        if task is None:  # one computation per identity and query at a time
            task = asyncio.ensure_future(self._compute(identity, system, query))
            self._running[key] = task
            task.add_done_callback(lambda _t: self._running.pop(key, None))
        body = await asyncio.shield(task)
        self._cache[key] = (time.monotonic(), body)
        self._cache.move_to_end(key)
        while len(self._cache) > CACHE_ENTRIES:
            self._cache.popitem(last=False)
        return 200, body

    async def _compute(self, identity: Identity | None, system: bool, query: DashboardQuery) -> bytes:
        if self._slots is None:
            self._slots = asyncio.Semaphore(CONCURRENT_SNAPSHOTS)
        async with self._slots:
            return _json(await build_snapshot(self.server, identity, query, system=system))

    def _identify(self, authorization: str) -> tuple[Identity | None, bool] | str:
        """(identity, is it the system account's) or why the request is refused."""
        auth = self.server.auth
        if not auth.required:
            return None, True
        system = next((a.name for a in self.server.accounts.values() if a.is_system), None)
        if not authorization:
            if auth.anonymous is not None:
                return auth.anonymous, auth.anonymous.account == system
            return "This server requires credentials: sign in as a user of the server."
        options = _credentials(authorization)
        if options is None:
            return "Unsupported Authorization header: use Basic (user and password) or Bearer (token)."
        result = auth.authenticate(options, b"")
        if isinstance(result, Refusal):
            log.debug("dashboard sign-in refused: %s", result.reason)
            if auth.nonce_required:
                return ("The credentials were refused. Users with NKeys or JWTs cannot sign in here: "
                        "run `jetstream dashboard --creds FILE` instead.")
            return "The credentials were refused."
        return result, result.account == system

    # -- files ---------------------------------------------------------------------------
    def _asset(self, name: str) -> tuple[bytes, str, str]:
        found = self._assets.get(name)
        if found is None:
            filename, content_type = ASSETS[name]
            payload = resources.files(__package__).joinpath("dashboard_page").joinpath(filename).read_bytes()
            etag = '"' + hashlib.sha256(payload).hexdigest()[:32] + '"'
            found = self._assets[name] = (payload, content_type, etag)
        return found


def _credentials(authorization: str) -> dict[str, Any] | None:
    """CONNECT options from an Authorization header (Basic user:password, Bearer token)."""
    scheme, _, value = authorization.strip().partition(" ")
    value = value.strip()
    if scheme.lower() == "bearer" and value:
        return {"auth_token": value}
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, sep, password = decoded.partition(":")
    if not sep:
        return None
    return {"user": user, "pass": password} if user else {"auth_token": password}


def _headers(head: bytes) -> dict[str, str]:
    headers: dict[str, str] = {}
    for line in head.split(b"\r\n")[1:]:
        name, sep, value = line.partition(b":")
        if sep:
            headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
    return headers


def _index_page() -> bytes:
    links = "\n".join(
        f'  <li><a href=".{path}">{html.escape(label)}</a> <code>{path}</code></li>'
        for label, path in INDEX_LINKS
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>NATS monitoring'
        "</title></head>\n<body>\n<h1>NATS monitoring</h1>\n<ul>\n"
        f"{links}\n</ul>\n</body>\n</html>\n"
    ).encode()


def _json(body: Any) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


def _response(
    method: str, status: int, content_type: str, payload: bytes,
    extra: list[tuple[str, str]] | None = None,
) -> bytes:
    lines = [
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}",
        f"Content-Type: {content_type}",
        f"Content-Length: {len(payload)}",
        *(f"{name}: {value}" for name, value in (*SECURITY_HEADERS, *(extra or ()))),
        "Connection: close",
    ]
    if status == 401:
        # not Basic: the page asks for the credentials itself (no browser pop-up)
        lines.append('WWW-Authenticate: NATS realm="dashboard"')
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head + (payload if method != "HEAD" else b"")
